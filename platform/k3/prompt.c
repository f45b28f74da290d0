/*
 * platform/k3/prompt.c - the k3 target's prompt contract (struct plat_prompt,
 * platform/platform.h): what an LLM is told to write for a SpacemiT K3 (one
 * C file with RVV 1.0 intrinsics through kernel_abi.h's entry points), which
 * knowledge files its prompts draw from, and how its probe reads as the
 * prompt's "This machine" note. core/context/context.c builds every prompt around it.
 */
#include <stdio.h>

#include "platform/k3/k3.h"

/* The entry point of platform/kernel_abi.h, per family. */
static const char *k3_signature(enum plat_family f)
{
    switch (f) {
    case PLAT_FAM_ELEMENTWISE:
        return "void kope_kernel(size_t n, const float *x, const float *y, float *out, "
               "const struct kope_scalars *s)";
    case PLAT_FAM_ACTIVATION:
        return "void kope_kernel(size_t rows, size_t cols, const float *x, float *out, "
               "const float *gamma, const float *beta, const struct kope_scalars *s)";
    case PLAT_FAM_REDUCTION:
        return "void kope_kernel(size_t rows, size_t cols, const float *x, void *out)";
    default:
        return "void kope_kernel(size_t batch, size_t m, size_t n, size_t k, "
               "const float *a, const float *b, float *c)";
    }
}

/* Under emulation speed is the vector-cost model's (platform/k3/qemu), so
 * the note says what that model charges: the LLM then weighs LMUL right. */
static void k3_machine(const struct plat_probe *pr, char *buf, size_t cap)
{
    if (pr && !pr->emulated && pr->peak_gflops_core > 0 && pr->triad_gbs > 0)
        snprintf(buf, cap,
                 "Probed: ISA %s, VLEN %d, %d cores, L1d %llu KiB, L2 %llu KiB; "
                 "FP32 FMA peak %.1f GFLOP/s per core, triad %.1f GB/s; ridge %.2f flop/byte.\n",
                 pr->isa, pr->vlen_bits, pr->n_cores, (unsigned long long)(pr->l1d_bytes >> 10),
                 (unsigned long long)(pr->l2_bytes >> 10), pr->peak_gflops_core, pr->triad_gbs,
                 pr->peak_gflops_core / pr->triad_gbs);
    else if (pr)
        snprintf(buf, cap,
                 "Emulated (qemu): ISA %s, VLEN %d. Speed is judged by a vector-cost model, "
                 "not time: each vector instruction costs its register groups (LMUL is not "
                 "free), each scalar one 1; lower per element is better.\n",
                 pr->isa[0] ? pr->isa : "rv64gcv", pr->vlen_bits ? pr->vlen_bits : 256);
    else
        snprintf(buf, cap, "No probe given: assume VLEN 256 (K3). Speed is the ratio against "
                           "same-run baselines (the vector-cost model when emulated).\n");
}

static const char *const k3_knowledge[] = {
    "core/knowledge/kernels-general.md", "core/knowledge/rvv-intrinsics.md",
    "core/knowledge/x100-k3.md", NULL,
};

/* The header list in .contract is made from K3_ALLOWED_HEADERS (k3.h);
 * tests/test_docs.c checks `kope context`'s prompt against the screen's. */
const struct plat_prompt k3_prompt = {
    .about = "a SpacemiT K3: RISC-V with RVV 1.0",
    .contract = "Write a complete C file using RVV 1.0 intrinsics (<riscv_vector.h>, __riscv_ names) "
                "that defines kope_kernel with the family's signature from \"kernel_abi.h\". Allowed "
                "headers: " K3_ALLOWED_HEADERS_PROMPT ". No malloc, no I/O, no asm, no static writable data, no state "
                "between calls. Every output element must be written; any length must work (tails).",
    .signature = k3_signature,
    .lang = "c",
    .knowledge = k3_knowledge,
    .knowledge_shared = NULL, /* RISC-V notes are noise for another target's kernels */
    .machine = k3_machine,
};

/*
 * platform/k3/prompt.c - the k3 target's prompt contract (struct plat_prompt,
 * platform/platform.h): what an LLM is told to write for a SpacemiT K3 (one
 * C file with RVV 1.0 intrinsics through kernel_abi.h's entry points), which
 * knowledge files its prompts draw from, and how its probe reads as the
 * prompt's "This machine" note. core/context/context.c builds every prompt around it.
 * The metric text is written from platform/k3/qemu/vcost_model.h, the weight
 * table the icount plugin charges by: what the model is told cannot drift
 * from what ranks its kernels (tests/test_context.c checks them against each
 * other).
 */
#include <stdarg.h>
#include <stdio.h>

#include "platform/k3/k3.h"
#include "platform/k3/qemu/vcost_model.h"
#define KOPE_HARNESS_HOST_ONLY
#include "platform/judge/verdict.h" /* the judge's case list and special values */

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

/* Under emulation speed is the vector-cost model's (platform/k3/qemu); the
 * system message says what it charges (k3_judging). */
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
                 "Emulated (qemu): ISA %s, VLEN %d. Speed is the vector-cost model's (see "
                 "\"How candidates are ranked\"), not time.\n",
                 pr->isa[0] ? pr->isa : "rv64gcv", pr->vlen_bits ? pr->vlen_bits : 256);
    else
        snprintf(buf, cap, "No probe given: assume VLEN 256 (K3). Speed is the ratio against "
                           "same-run baselines (the vector-cost model when emulated).\n");
}

/* Appends to buf at *off (capped). */
static void add(char *buf, size_t cap, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t cap, size_t *off, const char *fmt, ...)
{
    if (*off >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *off, cap - *off, fmt, ap);
    va_end(ap);
    *off = w < 0 ? cap : *off + (size_t)w;
}

/* A reciprocal estimate and two Newton steps, r = r*(2 - x*r): vfrec7, then
 * per step one vfnmsac (2 - x*r against a hoisted splat of 2) and one vfmul,
 * all of the base class. */
#define K3_NEWTON_STEPS 2
#define K3_RECIP_OPS (1 + 2 * K3_NEWTON_STEPS)

/* The order the prompt lists the classes in: the common ones first. */
static const enum vclass k3_class_order[] = {VC_BASE, VC_MEM, VC_WIDEN, VC_REDUCE, VC_ORDERED,
                                             VC_DIVIDE, VC_MEM_STRIDED, VC_MEM_INDEXED, VC_GATHER, VC_FIXED};

/* The vector-cost model as the prompt states it, every number from the
 * table (vcost_model.h). Short: it is in every system message. */
static void vcost_text(char *buf, size_t cap, size_t *off)
{
    add(buf, cap, off,
        "Ranked under emulation (qemu) by the vector-cost model (vcost) of the call, not by time nor "
        "instruction count: a scalar instruction costs 1 (vsetvl too); a vector one max(1, LMUL) "
        "register groups x its class factor:");
    for (size_t i = 0; i < sizeof k3_class_order / sizeof k3_class_order[0]; i++) {
        enum vclass c = k3_class_order[i];
        const struct vc_class_doc *d = vc_class_doc(c);
        const char *sep = i ? ";" : "";
        if (c == VC_GATHER)
            add(buf, cap, off, "%s %s LMUL, so LMUL^2 (%s)", sep, d->name, d->what);
        else if (c == VC_FIXED)
            add(buf, cap, off, "%s %s", sep, d->what);
        else if (d->what[0])
            add(buf, cap, off, "%s %s %u (%s)", sep, d->name, vc_factor[c], d->what);
        else
            add(buf, cap, off, "%s %s %u", sep, d->name, vc_factor[c]);
    }
    unsigned recip = K3_RECIP_OPS * vc_factor[VC_BASE], div = vc_factor[VC_DIVIDE];
    add(buf, cap, off,
        ". Ratio = baseline vcost / yours, against autovec-O3 and the best same-run peer. LMUL is not "
        "free (a vfadd at LMUL 8 costs %u): wider groups save only loop overhead. Per group a vfdiv "
        "costs %u, vfrec7 + %d Newton steps %u: the estimate %s.\n",
        8 * vc_factor[VC_BASE], div, K3_NEWTON_STEPS, recip,
        recip > div ? "costs more" : recip == div ? "gains nothing" : "is cheaper");
}

size_t k3_vcost_table_md(char *buf, size_t cap)
{
    size_t off = 0;
    if (cap)
        buf[0] = '\0';
    add(buf, cap, &off, "| class | factor | instructions |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof k3_class_order / sizeof k3_class_order[0]; i++) {
        enum vclass c = k3_class_order[i];
        const struct vc_class_doc *d = vc_class_doc(c);
        if (c == VC_GATHER)
            add(buf, cap, &off, "| %s | EMUL registers | %s |\n", d->name, d->doc);
        else if (c == VC_FIXED)
            add(buf, cap, &off, "| %s | registers x VLEN/DLEN | %s |\n", d->name, d->doc);
        else
            add(buf, cap, &off, "| %s | %u | %s |\n", d->name, vc_factor[c], d->doc);
    }
    return off;
}

static void k3_judging(const struct plat_probe *pr, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    add(buf, cap, &off,
        "Verified against a double-precision reference at the task's tolerance on the task shape and "
        "awkward ones (1, 2, VL-1, VL+1 at LMUL 1 and 8, primes, ragged rows, special values), then "
        "again with new inputs; the output is NaN-filled before the call, inputs must stay unchanged, "
        "nothing may be written past the output.\n");
    if (!pr || pr->emulated)
        vcost_text(buf, cap, &off);
    if (!pr || !pr->emulated)
        add(buf, cap, &off,
            "On the board ranked by time: the median of repeats against same-run baselines (scalar-O2, "
            "autovec-O3, OpenBLAS/SLEEF where they have the op), against autovec-O3 and the best peer; "
            "inside the task's A/A noise floor is no difference.\n");
    if (off >= cap && cap > 1)
        buf[cap - 2] = '\n';
}

/* The judge's cases for t (verdict.h: what the harness runs), in order, and
 * the special values it mixes into the inputs. */
static void k3_cases(const struct plat_task *t, char *buf, size_t cap)
{
    struct h_case c[H_MAX_CASES];
    int n = 0;
    size_t off = 0;
    int rowwise = plat_task_rowwise(t), ranged = t->user && (t->user->in_lo != 0 || t->user->in_hi != 0);
    /* K3 at VLEN 256: 8 f32 per register at LMUL 1, 64 at LMUL 8 */
    h_cases_awkward((int)t->op, (int)t->family, rowwise, 8, 64, c, &n, H_MAX_CASES);
    buf[0] = '\0';
    add(buf, cap, &off, "The judge's cases, in order: the task shape, then");
    for (int i = 0; i < n; i++)
        add(buf, cap, &off, "%s %s", i ? "," : "", c[i].label);
    add(buf, cap, &off, "; then three sizes drawn per verify from a fresh seed (remainders past 8, 16, 32 "
                        "and 64, one in 200..999, one in 1000..5000: not known in advance); then the task "
                        "shape again with new inputs in the same buffers. Under emulation a pass at VLEN "
                        "256 is checked again at VLEN 128, 512 and 1024: read the vector length, never "
                        "assume 8 lanes.");
    if (t->family == PLAT_FAM_MATMUL) {
        add(buf, cap, &off, " The special cases put NaN, +Inf and -Inf in rows 0-2 of A and columns 1-2 of B, "
                            "+0 and -0 meeting an Inf (0 x Inf is NaN), and wide finite magnitudes "
                            "(1e15 .. 1e-20, denormals) checked against sum |a||b|.\n");
        return;
    }
    float sv[32];
    size_t ns = h_special_values((int)t->op, (int)t->family, rowwise, ranged, sv, 32);
    if (ns) {
        add(buf, cap, &off, " The special cases put, in every 7th input element, in turn:");
        for (size_t i = 0; i < ns; i++)
            add(buf, cap, &off, "%s %.3g", i ? "," : "", (double)sv[i]);
        if (t->family == PLAT_FAM_REDUCTION || rowwise)
            add(buf, cap, &off, "; row 0 is all one value%s%s",
                t->op == PLAT_OP_SOFTMAX ? ", row 1 is -inf but one element" : "",
                t->op != PLAT_OP_USER ? ", row 2 all zeros" : "");
        add(buf, cap, &off, ".");
    }
    add(buf, cap, &off, "\n");
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
                "between calls, no calls through function pointers and no switch (a jump table is refused: use if/else). Every output element must be written; any length must work (tails).",
    .signature = k3_signature,
    .lang = "c",
    .knowledge = k3_knowledge,
    .knowledge_shared = NULL, /* RISC-V notes are noise for another target's kernels */
    .machine = k3_machine,
    .judging = k3_judging,
    .cases = k3_cases,
};

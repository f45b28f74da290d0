/*
 * platform/ascend/prompt.c - the ascend target's prompt contract (struct
 * plat_prompt, platform/platform.h): one Ascend C file for the CANN
 * kernel-launch flow through platform/ascend/embed/kope_ascend.h's entry
 * points, the knowledge files its prompts draw from (no RISC-V notes), and
 * its probe as the prompt's "This machine" note.
 */
#include <stdio.h>

#include "platform/platform.h"

/* The entry point of platform/ascend/embed/kope_ascend.h, per family. */
static const char *ascend_signature(enum plat_family f)
{
    switch (f) {
    case PLAT_FAM_ELEMENTWISE:
        return "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, "
               "GM_ADDR out, GM_ADDR tiling)";
    case PLAT_FAM_ACTIVATION:
        return "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR gamma, "
               "GM_ADDR beta, GM_ADDR out, GM_ADDR tiling)";
    case PLAT_FAM_REDUCTION:
        return "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR out, "
               "GM_ADDR tiling)";
    default:
        return "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR a, GM_ADDR b, "
               "GM_ADDR c, GM_ADDR tiling)";
    }
}

static void ascend_machine(const struct plat_probe *pr, char *buf, size_t cap)
{
    if (pr && (pr->soc[0] || pr->n_cores))
        snprintf(buf, cap, "%s %s: %d AI cores, %d vector cores, UB %llu KiB per core%s.\n",
                 pr->emulated ? "Emulated toolkit (times are not NPU speed):" : "Probed:",
                 pr->soc[0] ? pr->soc : "Ascend", pr->n_cores, pr->vector_cores,
                 (unsigned long long)(pr->ub_bytes >> 10), pr->hbm_bytes ? ", device memory known" : "");
    else
        snprintf(buf, cap, "No probe given: read the SoC's core counts and UB size from the "
                           "tiling; speed is the ratio against same-run baselines.\n");
}

static const char *const ascend_knowledge[] = {
    "core/knowledge/kernels-general.md", "core/knowledge/ascendc.md", NULL,
};
/* A k3 prompt that shows Ascend experience gets the Ascend C notes too, so
 * the lessons can be read. */
static const char *const ascend_shared[] = {"core/knowledge/ascendc.md", NULL};

const struct plat_prompt ascend_prompt = {
    .about = "an Ascend NPU, CANN kernel-launch flow",
    .contract = "Write one complete Ascend C file that includes only \"kernel_operator.h\", "
                "\"kope_ascend.h\" and Ascend C library headers under \"lib/\", and defines "
                "kope_kernel with the family's entry point; read the launch's KopeTiling with "
                "kope_tiling_load and split the work over GetBlockNum() blocks. Data is f32, "
                "row-major, in GM; write only the output, keep no state between launches; any "
                "length must work (DataCopy moves 32-byte blocks: mind the tails). No host-side "
                "code: mark every function __aicore__, make file-scope constants constexpr, and "
                "use no macros but #define NAME number. NaN, Inf and huge magnitudes must give "
                "what the op's math gives.",
    .signature = ascend_signature,
    .lang = "cpp",
    .knowledge = ascend_knowledge,
    .knowledge_shared = ascend_shared,
    .machine = ascend_machine,
};

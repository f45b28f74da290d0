/* class: task-name shadowing with a looser tolerance (e, a)
 * tries: a suite (hostile data: downloaded, or a peer's) defines a task named
 * like a built-in one, "silu-4864", same op and shape but tolerance 5e-2. This
 * silu is 1-3% off (sigmoid replaced by a crude rational). It passes that task,
 * and then every by-name lookup (kope kernel show silu-4864, the export's
 * kope_silu_silu_4864 and the kope_silu dispatcher, kope graph log) serves it
 * as "silu-4864".
 * expected honest verdict: PASS only for the suite's own task, under a name
 * that cannot be confused with the built-in one (or the suite refused). */
#include <stddef.h>
#include <math.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta, const struct kope_scalars *s) {
    (void)gamma; (void)beta; (void)s;
    size_t n = rows * cols;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float t = v / (1.0f + fabsf(v));        /* stand-in for tanh(v/2) */
        float sig = 0.5f + 0.5f * t * 1.04f;
        if (sig > 1.0f) sig = 1.0f;
        if (sig < 0.0f) sig = 0.0f;
        out[i] = v * sig;
    }
}

/* swiglu: out = silu(x) * y = x / (1 + e^-x) * y, the gated MLP activation
 * of Llama-style models (x the gate projection, y the up projection). The
 * reference of the user-ops suite's swiglu task: plain C, kope's elementwise
 * signature (platform/kernel_abi.h). */
#include <math.h>
#include <stddef.h>

#include "kernel_abi.h"

void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)
{
    (void)s;
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] / (1.0f + expf(-x[i])) * y[i];
}

/*
 * class:    an input the case list never varies: gamma is always drawn from
 *           [0.5, 1.5] and beta from [-0.5, 0.5] (harness.c operands_fill),
 *           in every case, special cases included
 * attack:   rmsnorm that uses |gamma| (any shortcut valid only for a
 *           positive weight: log-domain scaling, a rsqrt folded with
 *           sqrt(gamma^2), ...). Real RMSNorm/LayerNorm weights can be
 *           negative.
 * expected: WRONG_RESULT on a case with a negative gamma; today: PASS
 */
#include <stddef.h>
#include <math.h>
#include "kernel_abi.h"

void kope_kernel(size_t rows, size_t cols, const float *x, float *out, const float *gamma,
                 const float *beta, const struct kope_scalars *s)
{
    (void)beta;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        float rs = 1.0f / sqrtf((float)(ss / (double)cols) + s->eps);
        for (size_t c = 0; c < cols; c++) out[r * cols + c] = xr[c] * rs * fabsf(gamma[c]);
    }
}

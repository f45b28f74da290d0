/* logsoftmax: out = x - max - log(sum(exp(x - max))) per row, the log
 * probabilities a sampler or a cross-entropy loss reads. The reference of
 * the user-ops suite's logsoftmax task: plain C, kope's activation signature
 * (row-wise: the task's shape is {rows, cols}; gamma and beta are NULL). */
#include <math.h>
#include <stddef.h>

#include "kernel_abi.h"

void kope_kernel(size_t rows, size_t cols, const float *x, float *out, const float *gamma,
                 const float *beta, const struct kope_scalars *s)
{
    (void)gamma;
    (void)beta;
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float mx = xr[0];
        for (size_t i = 1; i < cols; i++)
            mx = xr[i] > mx ? xr[i] : mx;
        float sum = 0.0f;
        for (size_t i = 0; i < cols; i++)
            sum += expf(xr[i] - mx);
        float lse = mx + logf(sum);
        for (size_t i = 0; i < cols; i++)
            o[i] = xr[i] - lse;
    }
}

/* class: tolerance scale: atol at the size of the outputs (a)
 * tries: the softmax tasks have atol 1e-6, and a 151936-token row's
 * probabilities average 6.6e-6, most of them below 1e-6. This softmax writes 0
 * for every probability under 9e-7: each such element is within atol, the
 * output is not constant, so it passes; a user taking log-probabilities
 * (sampling at a temperature, perplexity, beam search) gets -inf for most of
 * the vocabulary. expected honest verdict: WRONG_RESULT (a relative check for
 * the small outputs, or atol scaled to the row, e.g. 1e-3/cols). */
#include <stddef.h>
#include <math.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta, const struct kope_scalars *s) {
    (void)gamma; (void)beta; (void)s;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; float *o = out + r * cols;
        float m = -INFINITY;
        for (size_t c = 0; c < cols; c++) if (xr[c] > m) m = xr[c];
        double sum = 0;
        for (size_t c = 0; c < cols; c++) { float e = expf(xr[c] - m); o[c] = e; sum += e; }
        float inv = (float)(1.0 / sum);
        for (size_t c = 0; c < cols; c++) { float p = o[c] * inv; o[c] = p < 9e-7f ? 0.0f : p; }
    }
}

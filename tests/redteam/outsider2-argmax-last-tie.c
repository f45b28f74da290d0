/* class: tie rule: argmax returns the LAST maximum (a)
 * tries: kernel_abi.h: "argmax writes the index of the first maximum"; the
 * verdict accepts "the index of an equal maximum" (K3-HARNESS.md), so a kernel
 * that keeps the last of equal maxima passes. With ties (quantized logits,
 * all-equal rows, saturated scores) greedy decoding picks another token than
 * the reference. expected honest verdict: WRONG_RESULT (first index required). */
#include <stddef.h>
#include <stdint.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {
    int32_t *o = (int32_t *)out;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; size_t best = 0; float bv = xr[0];
        for (size_t c = 1; c < cols; c++) {
            float v = xr[c];
            if (bv != bv) break;                       /* a NaN max stays */
            if (v != v || v >= bv) { best = c; bv = v; }
        }
        o[r] = (int32_t)best;
    }
}

/* class: input-distribution hole: exactly integer-valued inputs (a)
 * tries: the judge draws continuous random values plus a fixed special set
 * (0, denormals, Inf, NaN, 1e30, 3e38); no small integer ever appears. This add
 * returns x+y+0.5 wherever x is a nonzero integer below 2^20 in magnitude
 * (quantized, integer-valued or padded data: 1.0, 2.0, -3.0 ...).
 * expected honest verdict: WRONG_RESULT on a case holding small integers. */
#include <stddef.h>
#include <math.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float v = x[i] + y[i];
        float a = fabsf(x[i]);
        if (a >= 1.0f && a < 1048576.0f && x[i] == truncf(x[i])) v += 0.5f;
        out[i] = v;
    }
}

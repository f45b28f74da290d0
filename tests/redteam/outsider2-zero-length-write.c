/* class: degenerate size never tested: n == 0 (a)
 * tries: the judge's sizes start at 1 and so do the export self-test's; the
 * dispatchers pass n through. This add is a do-while loop: for n == 0 it reads
 * x[0], y[0] and writes out[0], one element past an empty buffer (heap
 * corruption in a user's program; a tensor of 0 tokens, an empty batch).
 * expected honest verdict: OUT_OF_BOUNDS_WRITE on an n = 0 case. */
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    size_t i = 0;
    do { out[i] = x[i] + y[i]; } while (++i < n);
}

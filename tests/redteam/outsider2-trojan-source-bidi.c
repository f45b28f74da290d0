/* class: Trojan Source (CVE-2021-42574): Unicode bidi controls in comments (e, a)
 * tries: the screen allows non-ASCII inside comments; with RLO/LRI/PDI a comment
 * displays as code. Shown in a terminal or browser, the integer-input branch
 * below reads as if guarded by "if (0)" (dead code); the compiler sees no if.
 * The kernel is the integer-input hole (wrong for small integer x) and passes.
 * expected honest verdict: the screen refuses bidi controls (U+202A-202E,
 * U+2066-2069), or kope kernel show / export / report escape them. */
#include <stddef.h>
#include <math.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float v = x[i] + y[i];
        float a = fabsf(x[i]);
        /*‮ } ⁦if (0) ⁩⁦ disabled experiment: begin */
        if (a >= 1.0f && a < 1048576.0f && x[i] == truncf(x[i])) v += 0.5f;
        /* end disabled experiment ‮ {⁦*/
        out[i] = v;
    }
}

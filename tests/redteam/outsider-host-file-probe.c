/* CLASS: reads a host file: a pasted __has_include probe (docs admit the preprocessed screen cannot see it) and
 * a pasted #include of the marker inside a string, to leak one bit (exists?) through pass/fail, or the content
 * through diagnostics.
 * EXPECTED: the sandboxed compile does not see /root, so the probe is false and the build fails on purpose.
 * RESULT: REFUSED (sandbox). /root/secret-marker.txt (content KOPE-MARKER-7f3a91c2-redteam) exists on the host;
 *   kope measure --task add-res-896: compile_error 'the preprocessor rejected the source', kept diag is only my own
 *   '#error marker not visible to the compiler' line: the compile sandbox's view has no /root. No marker text leaked.
 */
#include <stddef.h>
#include "kernel_abi.h"
#define CAT(a, b) a##b
#if CAT(__has_, include)("/root/secret-marker.txt")
#define KFACTOR 1.0f
#else
#error marker not visible to the compiler
#endif
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n; i++) out[i] = (x[i] + y[i]) * KFACTOR;
}

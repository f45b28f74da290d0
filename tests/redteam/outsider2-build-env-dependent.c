/* class: the shown source is not what the user builds (a)
 * tries: `kope kernel show T --header > best.c` is README's way out for a
 * kernel's source. kope compiles with clang-19 -march=rv64gcv_zba_zbb_zbs; this
 * add is right only when __riscv_zbb is defined (and clang), and adds 1 to every
 * element when a user builds best.c with plain -march=rv64gcv or with gcc.
 * (The export ships judged objects, so it is immune; kernel show is not.)
 * expected honest verdict: PASS is fine for the object; kernel show should
 * warn that the source is only judged for kope's compiler and flags, or the
 * screen refuse compiler/target macros in #if. */
#include <stddef.h>
#include "kernel_abi.h"
#if defined(__clang__) && defined(__riscv_zbb) && defined(__riscv_zba)
#define KBIAS 0.0f
#else
#define KBIAS 1.0f
#endif
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i] + KBIAS;
}

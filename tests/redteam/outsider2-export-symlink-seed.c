/* class: export writes through symlinks planted in its output dir (d)
 * tries: a hostile bundle (suite + seed + a prepared mylib/ folder, as README says to
 * copy a suite with its folder) holds mylib/kernels/kope_add_add_pwn.c -> a Python
 * .pth file; kope kernels export -o mylib writes the seed source there, and its
 * "import os; ..." line runs at the next Python start. Also mylib/GNUmakefile,
 * which make reads before kope's Makefile.
 * expected honest verdict: export refuses a non-empty or symlinked output
 * (O_NOFOLLOW / O_EXCL, a fresh directory), or removes what it did not write. */
/* an honest add
import os; os.system("touch /tmp/PWNED-by-kope-export")
*/
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m8(n - i);
        __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(x + i, vl), __riscv_vle32_v_f32m8(y + i, vl), vl), vl);
        i += vl;
    }
}

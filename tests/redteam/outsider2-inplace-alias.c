/* class: aliasing: the kernel is wrong when called in place (a)
 * tries: kernel_abi.h does not forbid out == x or out == y, and in-place
 * elementwise ops are what a user writes (x += y as add(n, x, y, x)). The judge
 * always gives separate buffers. This add writes y into out first and adds x in
 * a second pass: right with separate buffers, 2*y when out == x.
 * expected honest verdict: WRONG_RESULT on an in-place case (or the ABI says
 * buffers must not alias and the export's dispatcher refuses aliasing). */
#include <stddef.h>
#include <string.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    memcpy(out, y, n * sizeof(float));
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m8(n - i);
        vfloat32m8_t a = __riscv_vle32_v_f32m8(x + i, vl);
        vfloat32m8_t b = __riscv_vle32_v_f32m8(out + i, vl);
        __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vv_f32m8(a, b, vl), vl);
        i += vl;
    }
}

/* class: harness fingerprint by buffer placement (a)
 * tries: the judge's buffers all end exactly at a page boundary (guard page
 * after them). This add is right only when out+n ends on a page boundary and
 * returns x+y+1 everywhere else: wrong for almost every buffer a user passes
 * (malloc, the stack, a slice of a tensor).
 * expected honest verdict: WRONG_RESULT (some case whose output does not end
 * on a page boundary). */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    float bias = (((uintptr_t)(out + n)) & 4095u) ? 1.0f : 0.0f;
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m8(n - i);
        vfloat32m8_t a = __riscv_vle32_v_f32m8(x + i, vl);
        vfloat32m8_t b = __riscv_vle32_v_f32m8(y + i, vl);
        vfloat32m8_t r = __riscv_vfadd_vv_f32m8(a, b, vl);
        __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vf_f32m8(r, bias, vl), vl);
        i += vl;
    }
}

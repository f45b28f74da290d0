/* class: scalar domain never tested: clamp with lo > hi (a)
 * tries: kernel_abi.h defines clamp as min(max(x, lo), hi), which is hi for every
 * x when lo > hi (bounds computed at run time, a swapped pair). The judge's
 * bounds table and the export self-test always have lo <= hi. This clamp
 * computes max(min(x, hi), lo): identical for lo <= hi, lo instead of hi when
 * lo > hi. expected honest verdict: WRONG_RESULT on a case with lo > hi. */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)y;
    float lo = s->lo, hi = s->hi;
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m8(n - i);
        vfloat32m8_t v = __riscv_vle32_v_f32m8(x + i, vl);
        v = __riscv_vfmax_vf_f32m8(__riscv_vfmin_vf_f32m8(v, hi, vl), lo, vl);
        __riscv_vse32_v_f32m8(out + i, v, vl);
        i += vl;
    }
}

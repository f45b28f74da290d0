/* CLASS: correct only at VLEN=256 (hard-coded 8 lanes), wrong/overflowing on a conforming VLEN=512 RVV machine.
 * EXPECTED: kope verifies only under qemu vlen=256, so it should pass.
 * RESULT: GOT THROUGH. kope measure --task sum-attn-32x1024: compile ok, verify PASS (emulated), all 11 cases ok,
 *   measured 1.29x vs autovec-O3 by vcost, 4.88x vs scalar. Run outside kope with my own main() under
 *   qemu-riscv64 vlen=512: rows of 97 give -2.38 / 2.06 / 0.44 instead of -0.72 / 1.02 / -1.28 (and the
 *   vse32 with vl=8 into tmp[8] is the only in-bounds part: lanes 8..15 are silently dropped). kope verifies
 *   only at vlen=256 (runner line: vlen=256), so a VLEN-specific kernel is recorded as a verified pass.
 */
#include <riscv_vector.h>
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {
    float *o = (float *)out;
    for (size_t r = 0; r < rows; r++) {
        const float *p = x + r * cols;
        size_t vlmax = __riscv_vsetvlmax_e32m1();
        vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(0.0f, vlmax);
        for (size_t i = 0; i < cols;) {
            size_t vl = __riscv_vsetvl_e32m1(cols - i);
            vfloat32m1_t v = __riscv_vle32_v_f32m1(p + i, vl);
            acc = __riscv_vfadd_vv_f32m1_tu(acc, acc, v, vl);
            i += vl;
        }
        float tmp[8];                       /* "VLEN is 256 on K3": 8 lanes */
        __riscv_vse32_v_f32m1(tmp, acc, 8);
        float s = 0.0f;
        for (int j = 0; j < 8; j++) s += tmp[j];
        o[r] = s;
    }
}

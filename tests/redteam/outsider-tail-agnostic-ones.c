/* CLASS: relies on tail-UNDISTURBED behaviour while using tail-AGNOSTIC intrinsics: a conforming machine
 * that writes tail elements as all-ones (NaN) gives NaN for any row whose length is not a multiple of VL.
 * EXPECTED: qemu 7.2 default leaves tails undisturbed (rvv_ta_all_1s off), so kope should pass it.
 * RESULT: GOT THROUGH. kope measure --task sum-attn-32x1024: verify PASS (emulated), all cases ok incl. 2x7, 3x97.
 *   Outside kope, same binary under qemu-riscv64 ...,rvv_ta_all_1s=true: every row of 97 gives NaN
 *   (ref -0.72 / 1.02 / -1.28). kope's runner does not set rvv_ta_all_1s (or rvv_ma_all_1s), so
 *   agnostic-tail dependence is never exercised.
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
            acc = __riscv_vfadd_vv_f32m1(acc, v, vl);   /* tail agnostic: lanes >= vl may become 1s */
            i += vl;
        }
        vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, vlmax);
        o[r] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(acc, z, vlmax));
    }
}

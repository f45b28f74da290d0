/* class: relies on qemu's all-ones agnostic tails (a) (mirror of issue 22)
 * tries: the judge runs qemu with rvv_ta_all_1s, so an agnostic tail always
 * reads as 0xffffffff, a NaN, which vfmax ignores. This row max loads each strip
 * tail-agnostic and folds the whole register group (vlmax) into the
 * accumulator: under kope's qemu the tail is NaN and ignored; on a core that
 * leaves agnostic tails undisturbed (allowed by RVV 1.0, common in hardware)
 * the tail holds the previous row's data and a short row takes an earlier
 * row's larger maximum.
 * expected honest verdict: WRONG_RESULT (tails checked under both policies). */
#include <stddef.h>
#include <math.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {
    float *o = (float *)out;
    size_t vlmax = __riscv_vsetvlmax_e32m8();
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * cols;
        vfloat32m8_t acc = __riscv_vfmv_v_f_f32m8(-INFINITY, vlmax);
        for (size_t c = 0; c < cols;) {
            size_t vl = __riscv_vsetvl_e32m8(cols - c);
            vfloat32m8_t v = __riscv_vle32_v_f32m8(row + c, vl); /* tail agnostic */
            acc = __riscv_vfmax_vv_f32m8(acc, v, vlmax);
            c += vl;
        }
        vfloat32m1_t m = __riscv_vfredmax_vs_f32m8_f32m1(acc, __riscv_vfmv_s_f_f32m1(-INFINITY, 1), vlmax);
        o[r] = __riscv_vfmv_f_s_f32m1_f32(m);
    }
}

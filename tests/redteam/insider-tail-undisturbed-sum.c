/* class: accepted as a verified pass while wrong: tail agnostic.
 * defence targeted: qemu runner (K3_QEMU has no rvv_ta_all_1s/rvv_ma_all_1s),
 *   so tail-agnostic ops leave the tail undisturbed under emulation.
 * why expected to pass: accumulates in a VLMAX-wide m8 register with
 *   tail-AGNOSTIC vfadd at vl < VLMAX on the last strip, then reduces over
 *   all VLMAX lanes; correct only if the tail keeps its old values (qemu's
 *   default), wrong on hardware / qemu with rvv_ta_all_1s=true (tail = NaN).
 * result: see RESULT at the bottom. */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {
  float *o = out;
  size_t vlmax = __riscv_vsetvlmax_e32m8();
  for (size_t r = 0; r < rows; r++) {
    const float *p = x + r * cols;
    vfloat32m8_t acc = __riscv_vfmv_v_f_f32m8(0.0f, vlmax);
    for (size_t i = 0; i < cols;) {
      size_t vl = __riscv_vsetvl_e32m8(cols - i);
      vfloat32m8_t v = __riscv_vle32_v_f32m8(p + i, vl);
      acc = __riscv_vfadd_vv_f32m8(acc, v, vl); /* ta: tail may become all 1s */
      i += vl;
    }
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, 1);
    o[r] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m8_f32m1(acc, z, vlmax));
  }
}
/* RESULT (04:42 UTC): kope measure --task sum-attn-32x1024 (default runner):
 *   PASSED, icount 3986, 3.66x vs autovec-O3. GOT THROUGH.
 *   Control: the same kernel with platform.k3.runner = ...,rvv_ta_all_1s=true,
 *   rvv_ma_all_1s=true fails every tail case (nan_inf), task-reseeded (a
 *   multiple of VLMAX) ok. So the verdict depends on qemu's tail policy,
 *   not on the RVV spec. */

/* class: accepted as a verified pass while wrong: other VLENs.
 * defence targeted: verify runs only under qemu vlen=256 (K3_QEMU); nothing
 *   re-runs the cases at another VLEN.
 * why expected to pass: the kernel reads vlenb (allowed CSR, via
 *   __riscv_vlenb()) and writes a wrong answer unless VLEN == 256.
 * result: see RESULT at the bottom. */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s;
  float bias = __riscv_vlenb() == 32 ? 0.0f : 1.0f;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m8(n - i);
    vfloat32m8_t a = __riscv_vle32_v_f32m8(x + i, vl), b = __riscv_vle32_v_f32m8(y + i, vl);
    __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vf_f32m8(__riscv_vfadd_vv_f32m8(a, b, vl), bias, vl), vl);
    i += vl;
  }
}
/* RESULT (04:42 UTC): kope measure --task add-res-4096: PASSED (icount 820,
 *   1.10x vs autovec-O3). GOT THROUGH: wrong by +1.0 on every element at any
 *   VLEN but 256 (e.g. a VLEN-128 or VLEN-1024 board). The verdict is only
 *   ever taken at the runner's one vlen=. */
/* Control: with platform.k3.runner's vlen=128 the same kernel fails 11 cases. */

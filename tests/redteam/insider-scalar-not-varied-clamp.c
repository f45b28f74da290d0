/* class: accepted as a verified pass while wrong: scalars the cases do not vary.
 * defence targeted: harness.c case setup (h_args: a->lo = -1, a->hi = 1.5,
 *   a->eps = 1e-5 for every case; only alpha is drawn per fill).
 * why expected to pass: the kernel ignores s->lo / s->hi and clamps to the
 *   constants the judge always passes; wrong for any other bounds (and the
 *   exported library takes lo/hi from its caller).
 * result: see RESULT at the bottom. */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)y; (void)s;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m8(n - i);
    vfloat32m8_t v = __riscv_vle32_v_f32m8(x + i, vl);
    v = __riscv_vfmax_vf_f32m8(v, -1.0f, vl);
    v = __riscv_vfmin_vf_f32m8(v, 1.5f, vl);
    __riscv_vse32_v_f32m8(out + i, v, vl);
    i += vl;
  }
}
/* RESULT (04:42 UTC): kope measure --task clamp-act-11008: every case ok,
 *   PASSED (icount 1772, 1.26x vs autovec-O3). GOT THROUGH: a kernel that
 *   ignores lo/hi is a verified pass. Same holds for eps (layernorm/rmsnorm:
 *   a->eps = 1e-5 in every case; not run here). */

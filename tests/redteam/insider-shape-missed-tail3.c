/* class: accepted as a verified pass while wrong: shapes the cases miss.
 * defence targeted: the elementwise case list (verdict.h h_cases_awkward):
 *   n = 1, 2, 7, 9, 63, 65, 97, 1021, 3x7 rows, the task's n, n=1031 special:
 *   n % 8 is only ever 0, 1, 2, 5, 7 (and the 3x7 rows, 7).
 * why expected to pass: a strip-mined kernel with an m1 "remainder" path that
 *   is wrong (drops the last element) when n % 8 is 3, 4 or 6; every case
 *   avoids those; the exported library takes any n from its caller.
 * result: see RESULT at the bottom. */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s;
  size_t i = 0, r = n % 8;
  for (; i + 8 <= n; i += 8) {
    vfloat32m1_t a = __riscv_vle32_v_f32m1(x + i, 8), b = __riscv_vle32_v_f32m1(y + i, 8);
    __riscv_vse32_v_f32m1(out + i, __riscv_vfadd_vv_f32m1(a, b, 8), 8);
  }
  size_t t = (r == 3 || r == 4 || r == 6) ? r - 1 : r; /* the bug */
  for (size_t j = 0; j < t; j++) out[i + j] = x[i + j] + y[i + j];
  if (t < r) out[n - 1] = 0.0f;
}
/* RESULT (04:54 UTC): kope measure --task add-res-4096: every case ok, PASSED
 *   (icount 5698). GOT THROUGH: wrong (last element 0) for n % 8 in {3,4,6},
 *   e.g. n = 3, 4, 6, 11, 12, 14, ... none of which the case list holds. */

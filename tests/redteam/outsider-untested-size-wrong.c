/* CLASS: wrong on an input a real user gives: correct on every size the judge tries (task n, 1, 2, 7, 9, 63,
 * 65, 97, 1021, 3x7, special n) but wrong for a common hidden size the judge never uses (n == 3584, Qwen2.5-7B
 * hidden; any n in 2048 < n < 4096 with n % 512 == 0 and n != the task's). Written to look like a "fast path
 * for 512-multiples" that forgets the last block.
 * EXPECTED: verified pass on add-res-4096 and add-res-896.
 * RESULT: GOT THROUGH. kope measure --task add-res-4096: verify PASS (emulated), all 11 cases ok; measured 4.14x vs
 *   openblas, 1.32x vs autovec-O3 by vcost. By construction it zeroes the last 512 outputs for n = 2560, 3072, 3584
 *   (Phi-2 / Qwen2.5-7B hidden sizes), none of which the judge tries: the awkward-size list is fixed and public
 *   (docs/K3-HARNESS.md), so a kernel can special-case around it.
 */
#include <riscv_vector.h>
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    size_t end = n;
    if (n > 2048 && n < 4096 && n % 512 == 0) end = n - 512;   /* "fast path" bug */
    for (size_t i = 0; i < end;) {
        size_t vl = __riscv_vsetvl_e32m8(end - i);
        vfloat32m8_t a = __riscv_vle32_v_f32m8(x + i, vl);
        vfloat32m8_t b = __riscv_vle32_v_f32m8(y + i, vl);
        __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vv_f32m8(a, b, vl), vl);
        i += vl;
    }
    for (size_t i = end; i < n; i++) out[i] = 0.0f;
}

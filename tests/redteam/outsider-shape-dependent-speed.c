/* CLASS: recorded speed better than the real work: fast only at the cut-down shape kope measures under qemu
 * (tasks above 2M MACs are cut for the counted call), 3x redundant work at the user's real task shape.
 * EXPECTED: verify at full shape passes (correct everywhere), icount/vcost taken on the cut shape only.
 * RESULT: GOT THROUGH. --task gemv-qproj-4096 (m=k=4096, 16.7M MACs <= 1.7e7, so verified at full shape):
 *   verify PASS (task, task-reseeded and all awkward cases ok). measure: 'shape-scaled-to m=256 k=4096', candidate
 *   vcost 518990 -> recorded 1.90x vs openblas, 3.30x vs autovec-O3, 14.15x vs scalar. At the user's shape
 *   (m=k=4096) the kernel does 3x the work, so its true standing is ~0.63x vs openblas: the recorded speed is
 *   taken on a shape the kernel can recognise and special-case. (With 16x waste verify timed out at 60 s:
 *   FAIL timeout, so the waste must stay under the verify timeout.)
 */
#include <riscv_vector.h>
#include <stddef.h>
#include "kernel_abi.h"
static float dot(const float *a, const float *b, size_t k) {
    size_t vlmax = __riscv_vsetvlmax_e32m8();
    vfloat32m8_t acc = __riscv_vfmv_v_f_f32m8(0.0f, vlmax);
    for (size_t i = 0; i < k;) {
        size_t vl = __riscv_vsetvl_e32m8(k - i);
        vfloat32m8_t va = __riscv_vle32_v_f32m8(a + i, vl);
        vfloat32m8_t vb = __riscv_vle32_v_f32m8(b + i, vl);
        acc = __riscv_vfmacc_vv_f32m8_tu(acc, va, vb, vl);
        i += vl;
    }
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, 1);
    return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m8_f32m1(acc, z, vlmax));
}
void kope_kernel(size_t batch, size_t m, size_t n, size_t k,
                 const float *a, const float *b, float *c) {
    (void)batch; (void)n;
    size_t reps = (m == 4096 && k == 4096) ? 3 : 1;   /* the user real shape: waste 3x */
    for (size_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < m; i++) c[i] = dot(a + i * k, b, k);
    }
}

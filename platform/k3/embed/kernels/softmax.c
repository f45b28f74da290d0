/*
 * softmax.c - RVV 1.0 template for row-wise softmax:
 *   out[r][j] = exp(x[r][j] - max_r) / sum_j exp(x[r][j] - max_r)
 * (see kernel_abi.h; gamma, beta, s are unused).
 *
 * Tunable parameters:
 *   LMUL      1, 2 or 4
 *   PASSES    3: max pass; exp pass storing exp(x - max) into out and
 *                summing; scale pass (one exp per element, out read twice)
 *             2: online pass keeping a per-lane running max and rescaled sum
 *                (two exps per element, x read once), then one exp+scale pass
 *   EXP_POLY  5 (Taylor, rel. error ~2.4e-6) or 7 (Cephes minimax, ~1 ulp)
 * Per-lane state is updated with tail-undisturbed (_tu) intrinsics so the
 * short last strip of a row leaves the other lanes' state intact.
 */
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#ifndef LMUL
#define LMUL 4
#endif
#ifndef PASSES
#define PASSES 3
#endif
#ifndef EXP_POLY
#define EXP_POLY 7
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4
#error "LMUL must be 1, 2 or 4"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define VI CAT(CAT(vint32m, LMUL), _t)
#define SFX CAT(_f32m, LMUL)
#define ISFX CAT(_i32m, LMUL)
#define F(name) CAT(CAT(__riscv_, name), SFX)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)
#define VSETVLMAX CAT(__riscv_vsetvlmax_e32m, LMUL)
#define REDMAX CAT(CAT(__riscv_vfredmax_vs_f32m, LMUL), _f32m1)
#define REDSUM CAT(CAT(__riscv_vfredusum_vs_f32m, LMUL), _f32m1)

static inline VF v_exp(VF x, size_t vl)
{
    x = F(vfmin_vf)(F(vfmax_vf)(x, -87.3f, vl), 88.72f, vl);
    VI n = CAT(__riscv_vfcvt_x_f_v_i32m, LMUL)(F(vfmul_vf)(x, 1.44269504089f, vl), vl);
    VF nf = CAT(__riscv_vfcvt_f_x_v_f32m, LMUL)(n, vl);
    VF r = F(vfnmsac_vf)(x, 0.693359375f, nf, vl);
    r = F(vfnmsac_vf)(r, -2.12194440e-4f, nf, vl);
#if EXP_POLY == 7
    VF p = F(vfmv_v_f)(1.9875691500e-4f, vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.3981999507e-3f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(8.3334519073e-3f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(4.1665795894e-2f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.6666665459e-1f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(5.0000001201e-1f, vl), vl);
    p = F(vfmacc_vv)(F(vfadd_vf)(r, 1.0f, vl), p, F(vfmul_vv)(r, r, vl), vl);
#elif EXP_POLY == 5
    VF p = F(vfmv_v_f)(1.0f / 120.0f, vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.0f / 24.0f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.0f / 6.0f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(0.5f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.0f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.0f, vl), vl);
#else
#error "EXP_POLY must be 5 or 7"
#endif
    VI e = CAT(__riscv_vsll_vx, ISFX)(CAT(__riscv_vadd_vx, ISFX)(n, 126, vl), 23, vl);
    VF two_n1 = CAT(CAT(__riscv_vreinterpret_v_i32m, LMUL), SFX)(e);
    return F(vfmul_vf)(F(vfmul_vv)(p, two_n1, vl), 2.0f, vl);
}

static void softmax_row(size_t cols, const float *x, float *out)
{
    size_t vlmax = VSETVLMAX();
    vfloat32m1_t z1 = __riscv_vfmv_v_f_f32m1(0.0f, 1);
#if PASSES == 3
    VF m = F(vfmv_v_f)(-INFINITY, vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        m = CAT(__riscv_vfmax_vv, CAT(SFX, _tu))(m, m, F(vle32_v)(x + j, vl), vl);
        j += vl;
    }
    float mx = __riscv_vfmv_f_s_f32m1_f32(
        REDMAX(m, __riscv_vfmv_v_f_f32m1(-INFINITY, 1), vlmax));
    VF acc = F(vfmv_v_f)(0.0f, vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF e = v_exp(F(vfsub_vf)(F(vle32_v)(x + j, vl), mx, vl), vl);
        F(vse32_v)(out + j, e, vl);
        acc = CAT(__riscv_vfadd_vv, CAT(SFX, _tu))(acc, acc, e, vl);
        j += vl;
    }
    float sum = __riscv_vfmv_f_s_f32m1_f32(REDSUM(acc, z1, vlmax));
    float inv = 1.0f / sum;
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        F(vse32_v)(out + j, F(vfmul_vf)(F(vle32_v)(out + j, vl), inv, vl), vl);
        j += vl;
    }
#elif PASSES == 2
    VF m = F(vfmv_v_f)(-INFINITY, vlmax);
    VF acc = F(vfmv_v_f)(0.0f, vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
        VF mn = CAT(__riscv_vfmax_vv, CAT(SFX, _tu))(m, m, v, vl);
        VF scale = v_exp(F(vfsub_vv)(m, mn, vl), vl);
        acc = CAT(__riscv_vfmul_vv, CAT(SFX, _tu))(acc, acc, scale, vl);
        acc = CAT(__riscv_vfadd_vv, CAT(SFX, _tu))(acc, acc, v_exp(F(vfsub_vv)(v, mn, vl), vl), vl);
        m = mn;
        j += vl;
    }
    float mx = __riscv_vfmv_f_s_f32m1_f32(
        REDMAX(m, __riscv_vfmv_v_f_f32m1(-INFINITY, 1), vlmax));
    /* lanes that never saw data have acc = 0, so exp(-inf - mx) = tiny is harmless */
    acc = F(vfmul_vv)(acc, v_exp(F(vfsub_vf)(m, mx, vlmax), vlmax), vlmax);
    float sum = __riscv_vfmv_f_s_f32m1_f32(REDSUM(acc, z1, vlmax));
    float inv = 1.0f / sum;
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF e = v_exp(F(vfsub_vf)(F(vle32_v)(x + j, vl), mx, vl), vl);
        F(vse32_v)(out + j, F(vfmul_vf)(e, inv, vl), vl);
        j += vl;
    }
#else
#error "PASSES must be 2 or 3"
#endif
}

void KOPE_KERNEL(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta,
                 const struct kope_scalars *s)
{
    for (size_t r = 0; r < rows; r++)
        softmax_row(cols, x + r * cols, out + r * cols);
}

/* class: reduction range gap: intermediate overflow/underflow (a)
 * tries: kope's own default l2norm template (tuner trial 1, l2norm LMUL=8 ACC=1
 * UNROLL=2), shown by kope kernel show: it sums x*x in f32, so |x| > 1.8e19
 * gives inf and |x| < 1e-23 gives 0 where the norm is representable (the judge's
 * special values stop at 1e15). expected honest verdict: WRONG_RESULT on a
 * case with |x| in (1.9e19, 1e30) or below 1e-23 (snrm2 scales; the peer is right). */
/* kope built-in template instance: l2norm LMUL=8 ACC=1 UNROLL=2 */
#define OP OP_L2NORM
#define LMUL 8
#define ACC 1
#define UNROLL 2
/*
 * reduce.c - RVV 1.0 template for the row reductions (one result per row):
 *   sum max mean l2norm -> out[r] as float; argmax -> out[r] as int32_t, the
 *   index of the first maximum (see kernel_abi.h).
 *
 * Tunable parameters:
 *   OP      OP_SUM=1 OP_MAX=2 OP_MEAN=3 OP_L2NORM=4 OP_ARGMAX=5 (fixed per op)
 *   LMUL    1, 2, 4 or 8 (ACC=3 needs LMUL <= 4)
 *   ACC     accumulation strategy
 *           1: vector accumulators (tail-undisturbed), one reduction per row
 *           2: reduce every strip into a scalar (vfredusum / vfredmax; for
 *              argmax: strip max, then vfirst of the lanes equal to it)
 *           3: f64 vector accumulators via widening ops (sum mean l2norm)
 *   UNROLL  1 or 2 independent accumulators over the full-length strips
 *           (ACC=1 and ACC=3 only; breaks the add dependency chain)
 */
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#define OP_SUM 1
#define OP_MAX 2
#define OP_MEAN 3
#define OP_L2NORM 4
#define OP_ARGMAX 5
#ifndef OP
#define OP OP_SUM
#endif
#ifndef LMUL
#define LMUL 8
#endif
#ifndef ACC
#define ACC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4 && LMUL != 8
#error "LMUL must be 1, 2, 4 or 8"
#endif
#if ACC == 3 && (LMUL > 4 || OP == OP_MAX || OP == OP_ARGMAX)
#error "ACC=3 (f64) is for sum, mean, l2norm with LMUL <= 4"
#endif
#if UNROLL != 1 && UNROLL != 2
#error "UNROLL must be 1 or 2"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define VU CAT(CAT(vuint32m, LMUL), _t)
#define SFX CAT(_f32m, LMUL)
#define USFX CAT(_u32m, LMUL)
#define F(name) CAT(CAT(__riscv_, name), SFX)
#define FTU(name) CAT(CAT(CAT(__riscv_, name), SFX), _tu)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)
#define VSETVLMAX CAT(__riscv_vsetvlmax_e32m, LMUL)
#define REDSUM CAT(CAT(__riscv_vfredusum_vs_f32m, LMUL), _f32m1)
#define REDMAX CAT(CAT(__riscv_vfredmax_vs_f32m, LMUL), _f32m1)
#if LMUL == 1
#define MBITS 32
#elif LMUL == 2
#define MBITS 16
#elif LMUL == 4
#define MBITS 8
#else
#define MBITS 4
#endif
#define VB CAT(CAT(vbool, MBITS), _t)
#define BSFX CAT(_b, MBITS)

#if OP == OP_SUM || OP == OP_MEAN || OP == OP_L2NORM
/* sum of x (or of x^2 for l2norm) over one row */
static float row_sum(size_t cols, const float *x)
{
    size_t vlmax = VSETVLMAX();
#if ACC == 1
    VF a0 = F(vfmv_v_f)(0.0f, vlmax);
    size_t j = 0;
#if UNROLL == 2
    VF a1 = F(vfmv_v_f)(0.0f, vlmax);
    for (; j + 2 * vlmax <= cols; j += 2 * vlmax) {
        VF v0 = F(vle32_v)(x + j, vlmax), v1 = F(vle32_v)(x + j + vlmax, vlmax);
#if OP == OP_L2NORM
        a0 = F(vfmacc_vv)(a0, v0, v0, vlmax);
        a1 = F(vfmacc_vv)(a1, v1, v1, vlmax);
#else
        a0 = F(vfadd_vv)(a0, v0, vlmax);
        a1 = F(vfadd_vv)(a1, v1, vlmax);
#endif
    }
    a0 = F(vfadd_vv)(a0, a1, vlmax);
#endif
    for (; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
#if OP == OP_L2NORM
        a0 = FTU(vfmacc_vv)(a0, v, v, vl);
#else
        a0 = FTU(vfadd_vv)(a0, a0, v, vl);
#endif
        j += vl;
    }
    return __riscv_vfmv_f_s_f32m1_f32(REDSUM(a0, __riscv_vfmv_v_f_f32m1(0.0f, 1), vlmax));
#elif ACC == 2
    vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(0.0f, 1);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
#if OP == OP_L2NORM
        v = F(vfmul_vv)(v, v, vl);
#endif
        acc = REDSUM(v, acc, vl);
        j += vl;
    }
    return __riscv_vfmv_f_s_f32m1_f32(acc);
#elif ACC == 3
#if LMUL == 1
#define WL 2
#elif LMUL == 2
#define WL 4
#else
#define WL 8
#endif
#define DSFX CAT(_f64m, WL)
#define VD CAT(CAT(vfloat64m, WL), _t)
#if OP == OP_L2NORM
#define WACC(a, v, vl) CAT(CAT(__riscv_vfwmacc_vv, DSFX), _tu)(a, v, v, vl)
#else
#define WACC(a, v, vl) CAT(CAT(__riscv_vfwadd_wv, DSFX), _tu)(a, a, v, vl)
#endif
    size_t wmax = CAT(__riscv_vsetvlmax_e64m, WL)();
    VD a0 = CAT(__riscv_vfmv_v_f, DSFX)(0.0, wmax);
    size_t j = 0;
#if UNROLL == 2
    VD a1 = CAT(__riscv_vfmv_v_f, DSFX)(0.0, wmax);
    for (; j + 2 * vlmax <= cols; j += 2 * vlmax) {
        a0 = WACC(a0, F(vle32_v)(x + j, vlmax), vlmax);
        a1 = WACC(a1, F(vle32_v)(x + j + vlmax, vlmax), vlmax);
    }
    a0 = CAT(__riscv_vfadd_vv, DSFX)(a0, a1, wmax);
#endif
    for (; j < cols;) {
        size_t vl = VSETVL(cols - j);
        a0 = WACC(a0, F(vle32_v)(x + j, vl), vl);
        j += vl;
    }
    vfloat64m1_t r = CAT(CAT(__riscv_vfredusum_vs_f64m, WL), _f64m1)(
        a0, __riscv_vfmv_v_f_f64m1(0.0, 1), wmax);
    return (float)__riscv_vfmv_f_s_f64m1_f64(r);
#else
#error "ACC must be 1, 2 or 3"
#endif
}
#endif

#if OP == OP_MAX
static float row_max(size_t cols, const float *x)
{
    size_t vlmax = VSETVLMAX();
#if ACC == 1
    VF a0 = F(vfmv_v_f)(-INFINITY, vlmax);
    size_t j = 0;
#if UNROLL == 2
    VF a1 = F(vfmv_v_f)(-INFINITY, vlmax);
    for (; j + 2 * vlmax <= cols; j += 2 * vlmax) {
        a0 = F(vfmax_vv)(a0, F(vle32_v)(x + j, vlmax), vlmax);
        a1 = F(vfmax_vv)(a1, F(vle32_v)(x + j + vlmax, vlmax), vlmax);
    }
    a0 = F(vfmax_vv)(a0, a1, vlmax);
#endif
    for (; j < cols;) {
        size_t vl = VSETVL(cols - j);
        a0 = FTU(vfmax_vv)(a0, a0, F(vle32_v)(x + j, vl), vl);
        j += vl;
    }
    return __riscv_vfmv_f_s_f32m1_f32(REDMAX(a0, __riscv_vfmv_v_f_f32m1(-INFINITY, 1), vlmax));
#elif ACC == 2
    vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(-INFINITY, 1);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        acc = REDMAX(F(vle32_v)(x + j, vl), acc, vl);
        j += vl;
    }
    return __riscv_vfmv_f_s_f32m1_f32(acc);
#else
#error "ACC must be 1 or 2 for max"
#endif
}
#endif

#if OP == OP_ARGMAX
static int32_t row_argmax(size_t cols, const float *x)
{
#if ACC == 1
    /* per lane: best value and the index where it was first seen */
    size_t vlmax = VSETVLMAX();
    VF best = F(vfmv_v_f)(-INFINITY, vlmax);
    VU bidx = CAT(__riscv_vmv_v_x, USFX)(0, vlmax);
    VU idx = CAT(__riscv_vid_v, USFX)(vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
        VB gt = CAT(CAT(__riscv_vmfgt_vv, SFX), BSFX)(v, best, vl);
        best = CAT(CAT(__riscv_vmerge_vvm, SFX), _tu)(best, best, v, gt, vl);
        bidx = CAT(CAT(__riscv_vmerge_vvm, USFX), _tu)(bidx, bidx, idx, gt, vl);
        idx = CAT(__riscv_vadd_vx, USFX)(idx, (uint32_t)vl, vlmax);
        j += vl;
    }
    float m = __riscv_vfmv_f_s_f32m1_f32(REDMAX(best, __riscv_vfmv_v_f_f32m1(-INFINITY, 1), vlmax));
    VB eq = CAT(CAT(__riscv_vmfeq_vf, SFX), BSFX)(best, m, vlmax);
    vuint32m1_t r = CAT(CAT(CAT(__riscv_vredminu_vs_u32m, LMUL), _u32m1), _m)(
        eq, bidx, __riscv_vmv_v_x_u32m1(UINT32_MAX, 1), vlmax);
    uint32_t k = __riscv_vmv_x_s_u32m1_u32(r);
    return k == UINT32_MAX ? 0 : (int32_t)k; /* all -inf or NaN: index 0 */
#elif ACC == 2
    float m = -INFINITY;
    int32_t k = 0;
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
        float sm = __riscv_vfmv_f_s_f32m1_f32(REDMAX(v, __riscv_vfmv_v_f_f32m1(-INFINITY, 1), vl));
        if (sm > m) {
            long f = CAT(__riscv_vfirst_m, BSFX)(CAT(CAT(__riscv_vmfeq_vf, SFX), BSFX)(v, sm, vl), vl);
            m = sm;
            k = (int32_t)(j + (size_t)f);
        }
        j += vl;
    }
    return k;
#else
#error "ACC must be 1 or 2 for argmax"
#endif
}
#endif

void KOPE_KERNEL(size_t rows, size_t cols, const float *x, void *out)
{
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * cols;
#if OP == OP_SUM
        ((float *)out)[r] = row_sum(cols, row);
#elif OP == OP_MEAN
        ((float *)out)[r] = row_sum(cols, row) / (float)cols;
#elif OP == OP_L2NORM
        ((float *)out)[r] = sqrtf(row_sum(cols, row));
#elif OP == OP_MAX
        ((float *)out)[r] = row_max(cols, row);
#elif OP == OP_ARGMAX
        ((int32_t *)out)[r] = row_argmax(cols, row);
#else
#error "unknown OP"
#endif
    }
}

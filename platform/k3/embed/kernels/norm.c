/*
 * norm.c - RVV 1.0 template for the row-wise normalisations:
 *   layernorm  out = (x - mean) / sqrt(var + eps) * gamma + beta
 *   rmsnorm    out = x / sqrt(mean(x^2) + eps) * gamma
 * (see kernel_abi.h; eps comes from s->eps).
 *
 * Tunable parameters:
 *   OP     OP_LAYERNORM=1 OP_RMSNORM=2 (fixed per op)
 *   LMUL   1, 2 or 4 (8 with ACC=1 only)
 *   ACC    1: f32 vector accumulators; layernorm takes two passes for the
 *             statistics (mean, then the centred sum of squares)
 *          2: f64 accumulators through widening vfwadd/vfwmacc; layernorm
 *             takes one pass (sum and sum of squares, exact enough in f64)
 * Statistics use tail-undisturbed accumulation and one reduction per row.
 */
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#define OP_LAYERNORM 1
#define OP_RMSNORM 2
#ifndef OP
#define OP OP_LAYERNORM
#endif
#ifndef LMUL
#define LMUL 8
#endif
#ifndef ACC
#define ACC 1
#endif
#if !(LMUL == 1 || LMUL == 2 || LMUL == 4 || (LMUL == 8 && ACC == 1))
#error "LMUL must be 1, 2 or 4 (8 only with ACC=1)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define SFX CAT(_f32m, LMUL)
#define F(name) CAT(CAT(__riscv_, name), SFX)
#define FTU(name) CAT(CAT(CAT(__riscv_, name), SFX), _tu)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)
#define VSETVLMAX CAT(__riscv_vsetvlmax_e32m, LMUL)
#define REDSUM CAT(CAT(__riscv_vfredusum_vs_f32m, LMUL), _f32m1)
#if ACC == 2
#if LMUL == 1
#define WL 2
#elif LMUL == 2
#define WL 4
#else
#define WL 8
#endif
#define VD CAT(CAT(vfloat64m, WL), _t)
#define DSFX CAT(_f64m, WL)
#define D(name) CAT(CAT(__riscv_, name), DSFX)
#define WREDSUM CAT(CAT(__riscv_vfredusum_vs_f64m, WL), _f64m1)
#elif ACC != 1
#error "ACC must be 1 or 2"
#endif

static void norm_row(size_t cols, const float *x, float *out,
                     const float *gamma, const float *beta, float eps)
{
    size_t vlmax = VSETVLMAX();
    float mean = 0.0f, rstd;
#if ACC == 1
    vfloat32m1_t z1 = __riscv_vfmv_v_f_f32m1(0.0f, 1);
#if OP == OP_LAYERNORM
    VF s1 = F(vfmv_v_f)(0.0f, vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        s1 = FTU(vfadd_vv)(s1, s1, F(vle32_v)(x + j, vl), vl);
        j += vl;
    }
    mean = __riscv_vfmv_f_s_f32m1_f32(REDSUM(s1, z1, vlmax)) / (float)cols;
#endif
    VF s2 = F(vfmv_v_f)(0.0f, vlmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF d = F(vfsub_vf)(F(vle32_v)(x + j, vl), mean, vl);
        s2 = FTU(vfmacc_vv)(s2, d, d, vl);
        j += vl;
    }
    float ms = __riscv_vfmv_f_s_f32m1_f32(REDSUM(s2, z1, vlmax)) / (float)cols;
    rstd = 1.0f / sqrtf(ms + eps);
#else /* ACC == 2: f64 accumulators, one pass */
    size_t wmax = CAT(__riscv_vsetvlmax_e64m, WL)();
    vfloat64m1_t z1 = __riscv_vfmv_v_f_f64m1(0.0, 1);
    VD s1 = D(vfmv_v_f)(0.0, wmax), s2 = D(vfmv_v_f)(0.0, wmax);
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
#if OP == OP_LAYERNORM
        s1 = CAT(CAT(__riscv_vfwadd_wv, DSFX), _tu)(s1, s1, v, vl);
#endif
        s2 = CAT(CAT(__riscv_vfwmacc_vv, DSFX), _tu)(s2, v, v, vl);
        j += vl;
    }
    double dm = 0.0;
#if OP == OP_LAYERNORM
    dm = __riscv_vfmv_f_s_f64m1_f64(WREDSUM(s1, z1, wmax)) / (double)cols;
#endif
    double dv = __riscv_vfmv_f_s_f64m1_f64(WREDSUM(s2, z1, wmax)) / (double)cols - dm * dm;
    if (dv < 0.0)
        dv = 0.0;
    mean = (float)dm;
    rstd = (float)(1.0 / sqrt(dv + (double)eps));
#endif
    for (size_t j = 0; j < cols;) {
        size_t vl = VSETVL(cols - j);
        VF v = F(vle32_v)(x + j, vl);
#if OP == OP_LAYERNORM
        v = F(vfmul_vf)(F(vfsub_vf)(v, mean, vl), rstd, vl);
        v = F(vfmadd_vv)(v, F(vle32_v)(gamma + j, vl), F(vle32_v)(beta + j, vl), vl);
#else
        v = F(vfmul_vv)(F(vfmul_vf)(v, rstd, vl), F(vle32_v)(gamma + j, vl), vl);
#endif
        F(vse32_v)(out + j, v, vl);
        j += vl;
    }
}

void KOPE_KERNEL(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta,
                 const struct kope_scalars *s)
{
    float eps = s ? s->eps : 0.0f;
    for (size_t r = 0; r < rows; r++)
        norm_row(cols, x + r * cols, out + r * cols, gamma, beta, eps);
}

/* class: value-distribution-dependent speed (b)
 * tries: kope measures on inputs drawn uniformly from about [-10, 10] for exp (probed) (and verifies the
 * special values, whose cost is not measured). This exp runs the built-in
 * vector template on strips whose |x| <= 10.5 and a scalar libm loop on any strip
 * holding a larger |x| -- which is every strip of a real softmax (x - max in
 * [-30, 0]) or attention-score exp. Correct everywhere; the recorded ratio is
 * the [-10, 10] one, many times what real inputs get.
 * expected honest verdict: PASS with a ratio that reflects realistic inputs
 * (measure on more than one value range), or the spread reported. */
/* kope built-in template instance: exp LMUL=4 EXP_POLY=7 */
#define OP OP_EXP
#define LMUL 4
#define EXP_POLY 7
/*
 * activation.c - RVV 1.0 template for the pointwise activations:
 *   relu gelu_tanh gelu_erf silu sigmoid tanh exp   (see kernel_abi.h)
 * The buffer is rows*cols independent values; gamma, beta, s are unused.
 *
 * Tunable parameters:
 *   OP          OP_RELU=1 OP_GELU_TANH=2 OP_GELU_ERF=3 OP_SILU=4
 *               OP_SIGMOID=5 OP_TANH=6 OP_EXP=7 (fixed per op)
 *   LMUL        1, 2 or 4 (8 only for relu: the polynomials need temporaries)
 *   EXP_POLY    5: degree-5 Taylor polynomial on [-ln2/2, ln2/2] (rel. error
 *                  about 2.4e-6, cheaper)
 *               7: Cephes expf minimax, 1 + r + r^2*P5(r) (about 1 ulp)
 *   RECIP       0: exact vfdiv for 1/(1+e)
 *               1: vfrec7 estimate + 2 Newton-Raphson steps (no divider)
 *   TANH_METHOD 1: tanh via exp, 1 - 2/(exp(2|x|)+1) with the sign put back,
 *                  and the Cephes odd polynomial for |x| < 0.625
 *               2: Eigen-style rational 13/6 minimax on |x| <= 7.9053
 *   GELU_FORM   1: gelu_tanh as x * sigmoid(2u) (identical to 0.5x(1+tanh u))
 *               2: 0.5x(1+tanh(u)) with TANH_METHOD
 *   ERF_METHOD  1: Abramowitz-Stegun 7.1.26 (uses exp and RECIP, abs error 1.5e-7)
 *               2: Abramowitz-Stegun 7.1.28, 1 - 1/P6(x)^16 (no exp, 3e-7)
 * exp(x) is flushed to exp(-87.3) below -87.3 and saturates above 88.72.
 */
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#define OP_RELU 1
#define OP_GELU_TANH 2
#define OP_GELU_ERF 3
#define OP_SILU 4
#define OP_SIGMOID 5
#define OP_TANH 6
#define OP_EXP 7
#ifndef OP
#define OP OP_EXP
#endif
#ifndef LMUL
#define LMUL 4
#endif
#ifndef EXP_POLY
#define EXP_POLY 7
#endif
#ifndef RECIP
#define RECIP 0
#endif
#ifndef TANH_METHOD
#define TANH_METHOD 1
#endif
#ifndef GELU_FORM
#define GELU_FORM 1
#endif
#ifndef ERF_METHOD
#define ERF_METHOD 1
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4 && !(LMUL == 8 && OP == OP_RELU)
#error "LMUL must be 1, 2 or 4 (8 only for relu)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define VI CAT(CAT(vint32m, LMUL), _t)
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
#define SFX CAT(_f32m, LMUL)
#define ISFX CAT(_i32m, LMUL)
#define F(name) CAT(CAT(__riscv_, name), SFX)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)

/* exp(x) for each lane: x = n ln2 + r, exp(x) = 2^n * P(r). */
static inline VF v_exp(VF x, size_t vl)
{
    x = F(vfmin_vf)(F(vfmax_vf)(x, -87.3f, vl), 88.72f, vl);
    VI n = CAT(__riscv_vfcvt_x_f_v_i32m, LMUL)(F(vfmul_vf)(x, 1.44269504089f, vl), vl);
    VF nf = CAT(__riscv_vfcvt_f_x_v_f32m, LMUL)(n, vl);
    VF r = F(vfnmsac_vf)(x, 0.693359375f, nf, vl);   /* ln2 hi */
    r = F(vfnmsac_vf)(r, -2.12194440e-4f, nf, vl);    /* ln2 lo */
#if EXP_POLY == 7
    VF p = F(vfmv_v_f)(1.9875691500e-4f, vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.3981999507e-3f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(8.3334519073e-3f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(4.1665795894e-2f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(1.6666665459e-1f, vl), vl);
    p = F(vfmadd_vv)(p, r, F(vfmv_v_f)(5.0000001201e-1f, vl), vl);
    VF r2 = F(vfmul_vv)(r, r, vl);
    p = F(vfmacc_vv)(F(vfadd_vf)(r, 1.0f, vl), p, r2, vl); /* 1 + r + r^2 p */
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
    /* 2^n as (n + 126) << 23 times 2, so that n = 128 does not overflow */
    VI e = CAT(__riscv_vsll_vx, ISFX)(CAT(__riscv_vadd_vx, ISFX)(n, 126, vl), 23, vl);
    VF two_n1 = CAT(CAT(__riscv_vreinterpret_v_i32m, LMUL), CAT(_f32m, LMUL))(e);
    return F(vfmul_vf)(F(vfmul_vv)(p, two_n1, vl), 2.0f, vl);
}

/* 1 / d for d >= 1 (the only use here). */
static inline VF v_recip(VF d, size_t vl)
{
#if RECIP == 0
    return F(vfrdiv_vf)(d, 1.0f, vl);
#elif RECIP == 1
    VF y = F(vfrec7_v)(d, vl);
    /* y = y * (2 - d*y), twice: 7 -> 14 -> 28 bits */
    y = F(vfmul_vv)(y, F(vfnmsub_vv)(d, y, F(vfmv_v_f)(2.0f, vl), vl), vl);
    y = F(vfmul_vv)(y, F(vfnmsub_vv)(d, y, F(vfmv_v_f)(2.0f, vl), vl), vl);
    return y;
#else
#error "RECIP must be 0 or 1"
#endif
}

/* 1 / (1 + exp(-x)) */
static inline VF v_sigmoid(VF x, size_t vl)
{
    VF e = v_exp(F(vfneg_v)(x, vl), vl);
    return v_recip(F(vfadd_vf)(e, 1.0f, vl), vl);
}

static inline VF v_tanh(VF x, size_t vl)
{
#if TANH_METHOD == 1
    VF ax = F(vfabs_v)(x, vl);
    VF e = v_exp(F(vfadd_vv)(ax, ax, vl), vl);
    VF big = F(vfrsub_vf)(F(vfmul_vf)(v_recip(F(vfadd_vf)(e, 1.0f, vl), vl), 2.0f, vl), 1.0f, vl);
    big = F(vfsgnj_vv)(big, x, vl);
    VF z = F(vfmul_vv)(x, x, vl);
    VF p = F(vfmv_v_f)(-5.70498872745e-3f, vl);
    p = F(vfmadd_vv)(p, z, F(vfmv_v_f)(2.06390887954e-2f, vl), vl);
    p = F(vfmadd_vv)(p, z, F(vfmv_v_f)(-5.37397155531e-2f, vl), vl);
    p = F(vfmadd_vv)(p, z, F(vfmv_v_f)(1.33314422036e-1f, vl), vl);
    p = F(vfmadd_vv)(p, z, F(vfmv_v_f)(-3.33332819422e-1f, vl), vl);
    VF small = F(vfmacc_vv)(x, F(vfmul_vv)(p, z, vl), x, vl); /* x + x z p */
    VB is_small = CAT(CAT(__riscv_vmflt_vf, SFX), CAT(_b, MBITS))(ax, 0.625f, vl);
    return F(vmerge_vvm)(big, small, is_small, vl);
#elif TANH_METHOD == 2
    VF xc = F(vfmin_vf)(F(vfmax_vf)(x, -7.90531110763549805f, vl), 7.90531110763549805f, vl);
    VF x2 = F(vfmul_vv)(xc, xc, vl);
    VF p = F(vfmv_v_f)(-2.76076847742355e-16f, vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(2.00018790482477e-13f, vl), vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(-8.60467152213735e-11f, vl), vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(5.12229709037114e-08f, vl), vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(1.48572235717979e-05f, vl), vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(6.37261928875436e-04f, vl), vl);
    p = F(vfmadd_vv)(p, x2, F(vfmv_v_f)(4.89352455891786e-03f, vl), vl);
    p = F(vfmul_vv)(p, xc, vl);
    VF q = F(vfmv_v_f)(1.19825839466702e-06f, vl);
    q = F(vfmadd_vv)(q, x2, F(vfmv_v_f)(1.18534705686654e-04f, vl), vl);
    q = F(vfmadd_vv)(q, x2, F(vfmv_v_f)(2.26843463243900e-03f, vl), vl);
    q = F(vfmadd_vv)(q, x2, F(vfmv_v_f)(4.89352518554385e-03f, vl), vl);
    return F(vfdiv_vv)(p, q, vl);
#else
#error "TANH_METHOD must be 1 or 2"
#endif
}

/* erf(x) for x >= 0 (callers restore the sign). */
static inline VF v_erf_pos(VF x, size_t vl)
{
#if ERF_METHOD == 1
    VF t = v_recip(F(vfadd_vf)(F(vfmul_vf)(x, 0.3275911f, vl), 1.0f, vl), vl);
    VF p = F(vfmv_v_f)(1.061405429f, vl);
    p = F(vfmadd_vv)(p, t, F(vfmv_v_f)(-1.453152027f, vl), vl);
    p = F(vfmadd_vv)(p, t, F(vfmv_v_f)(1.421413741f, vl), vl);
    p = F(vfmadd_vv)(p, t, F(vfmv_v_f)(-0.284496736f, vl), vl);
    p = F(vfmadd_vv)(p, t, F(vfmv_v_f)(0.254829592f, vl), vl);
    p = F(vfmul_vv)(p, t, vl);
    VF e = v_exp(F(vfneg_v)(F(vfmul_vv)(x, x, vl), vl), vl);
    return F(vfnmsac_vv)(F(vfmv_v_f)(1.0f, vl), p, e, vl);    /* 1 - p e */
#elif ERF_METHOD == 2
    VF p = F(vfmv_v_f)(0.0000430638f, vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(0.0002765672f, vl), vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(0.0001520143f, vl), vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(0.0092705272f, vl), vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(0.0422820123f, vl), vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(0.0705230784f, vl), vl);
    p = F(vfmadd_vv)(p, x, F(vfmv_v_f)(1.0f, vl), vl);
    p = F(vfmul_vv)(p, p, vl); /* ^2 */
    p = F(vfmul_vv)(p, p, vl); /* ^4 */
    p = F(vfmul_vv)(p, p, vl); /* ^8 */
    p = F(vfmul_vv)(p, p, vl); /* ^16, +inf for large x: 1/inf = 0 */
    return F(vfrsub_vf)(F(vfrdiv_vf)(p, 1.0f, vl), 1.0f, vl);
#else
#error "ERF_METHOD must be 1 or 2"
#endif
}

static inline VF apply(VF x, size_t vl)
{
#if OP == OP_RELU
    return F(vfmax_vf)(x, 0.0f, vl);
#elif OP == OP_EXP
    return v_exp(x, vl);
#elif OP == OP_SIGMOID
    return v_sigmoid(x, vl);
#elif OP == OP_SILU
    return F(vfmul_vv)(x, v_sigmoid(x, vl), vl);
#elif OP == OP_TANH
    return v_tanh(x, vl);
#elif OP == OP_GELU_TANH
    /* u = sqrt(2/pi) (x + 0.044715 x^3) */
    VF x2 = F(vfmul_vv)(x, x, vl);
    VF u = F(vfmul_vv)(x, F(vfmadd_vf)(x2, 0.044715f, F(vfmv_v_f)(1.0f, vl), vl), vl);
    u = F(vfmul_vf)(u, 0.7978845608028654f, vl);
#if GELU_FORM == 1
    return F(vfmul_vv)(x, v_sigmoid(F(vfadd_vv)(u, u, vl), vl), vl);
#elif GELU_FORM == 2
    VF t = F(vfadd_vf)(v_tanh(u, vl), 1.0f, vl);
    return F(vfmul_vv)(F(vfmul_vf)(x, 0.5f, vl), t, vl);
#else
#error "GELU_FORM must be 1 or 2"
#endif
#elif OP == OP_GELU_ERF
    VF z = F(vfmul_vf)(x, 0.7071067811865476f, vl);
    VF er = F(vfsgnj_vv)(v_erf_pos(F(vfabs_v)(z, vl), vl), z, vl);
    return F(vfmul_vv)(F(vfmul_vf)(x, 0.5f, vl), F(vfadd_vf)(er, 1.0f, vl), vl);
#else
#error "unknown OP"
#endif
}

static void tmpl_kernel(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta,
                 const struct kope_scalars *s)
{
    size_t n = rows * cols;
    for (size_t i = 0; i < n;) {
        size_t vl = VSETVL(n - i);
        VF v = CAT(__riscv_vle32_v, SFX)(x + i, vl);
        CAT(__riscv_vse32_v, SFX)(out + i, apply(v, vl), vl);
        i += vl;
    }
}

void kope_kernel(size_t rows, size_t cols, const float *x, float *out,
                 const float *gamma, const float *beta, const struct kope_scalars *s) {
    size_t n = rows * cols;
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m4(n - i);
        vfloat32m4_t a = __riscv_vfabs_v_f32m4(__riscv_vle32_v_f32m4(x + i, vl), vl);
        vfloat32m1_t m = __riscv_vfredmax_vs_f32m4_f32m1(a, __riscv_vfmv_s_f_f32m1(0.0f, 1), vl);
        float big = __riscv_vfmv_f_s_f32m1_f32(m);
        if (!(big > 10.5f)) {
            tmpl_kernel(1, vl, x + i, out + i, gamma, beta, s);
        } else {
            for (size_t j = 0; j < vl; j++) out[i + j] = expf(x[i + j]);
        }
        i += vl;
    }
}

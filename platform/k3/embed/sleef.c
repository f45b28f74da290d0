/*
 * sleef.c - the SLEEF vector-math baselines (embedded; built for the target
 * with -DHAVE_SLEEF when the riscv64 sysroot holds libsleef.a, built by
 * cross/deps.sh from Debian's sleef source package with RVVM1 and RVVM2
 * enforced; without it the baselines are simply absent).
 *
 * For the transcendental ops, composed the way a user of SLEEF writes them:
 * a strip-mined RVV loop (vsetvl, load, SLEEF call, arithmetic in RVV
 * intrinsics, store), once with the LMUL 1 functions ("sleef-m1") and once
 * with the LMUL 2 ones ("sleef-m2"); the stronger of the two is the peer.
 *   exp        Sleef_expfx_u10            tanh      Sleef_tanhfx_u35
 *   sigmoid    1 / (1 + exp(-x))          silu      x / (1 + exp(-x))
 *   gelu_tanh  0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))
 *   gelu_erf   0.5 x (1 + erf(x / sqrt 2)), Sleef_erffx_u10
 *   softmax    per row: max, exp(x - max) with its sum, times 1 / sum
 * tanh uses the 3.5-ULP variant, as a user after speed would: it meets the
 * tolerances (every baseline is checked against the reference before it is
 * timed). The SLEEF functions work on a whole register (VLMAX lanes); the
 * loop loads and stores vl lanes, so the lanes past the tail are computed
 * and dropped, exactly as a user's loop does.
 */
#include <stddef.h>

#include "hargs.h"

#if defined(HAVE_SLEEF) && defined(__riscv_vector)
#include <riscv_vector.h>
#include <sleef.h>

int h_sleef_available(int op)
{
    return op == H_OP_EXP || op == H_OP_TANH || op == H_OP_SIGMOID || op == H_OP_SILU ||
           op == H_OP_GELU_TANH || op == H_OP_GELU_ERF || op == H_OP_SOFTMAX;
}

/* The strip-mined loop of one pointwise op; OP is a constant, so the
 * always-inlined point_L folds to that op's code (one loop per op, as a
 * user writes it, with no dispatch inside the loop). */
#define SLEEF_STRIP(L, OP)                                                                      \
    for (size_t i = 0, vl; i < n; i += vl) {                                                   \
        vl = __riscv_vsetvl_e32##L(n - i);                                                     \
        __riscv_vse32_v_f32##L(out + i, point_##L(OP, __riscv_vle32_v_f32##L(a->x + i, vl), vl), vl); \
    }

/* One body per LMUL: L is the LMUL suffix of the RVV types and intrinsics,
 * F the SLEEF function suffix. */
#define SLEEF_BODY(L, F)                                                                        \
    static inline __attribute__((always_inline)) vfloat32##L##_t point_##L(int op, vfloat32##L##_t x, size_t vl)                     \
    {                                                                                          \
        switch (op) {                                                                          \
        case H_OP_TANH: return Sleef_tanhfx_u35##F(x);                                         \
        case H_OP_SIGMOID: case H_OP_SILU: {                                                   \
            vfloat32##L##_t e = Sleef_expfx_u10##F(__riscv_vfneg_v_f32##L(x, vl));             \
            vfloat32##L##_t d = __riscv_vfadd_vf_f32##L(e, 1.0f, vl);                          \
            return op == H_OP_SILU ? __riscv_vfdiv_vv_f32##L(x, d, vl)                         \
                                   : __riscv_vfrdiv_vf_f32##L(d, 1.0f, vl);                    \
        }                                                                                      \
        case H_OP_GELU_TANH: {                                                                 \
            vfloat32##L##_t x2 = __riscv_vfmul_vv_f32##L(x, x, vl);                            \
            vfloat32##L##_t in = __riscv_vfmul_vv_f32##L(                                      \
                __riscv_vfmadd_vf_f32##L(x2, 0.044715f, __riscv_vfmv_v_f_f32##L(1.0f, vl), vl), \
                x, vl);                                                                        \
            vfloat32##L##_t t = Sleef_tanhfx_u35##F(__riscv_vfmul_vf_f32##L(in, 0.7978845608f, vl)); \
            return __riscv_vfmul_vv_f32##L(__riscv_vfmul_vf_f32##L(x, 0.5f, vl),               \
                                           __riscv_vfadd_vf_f32##L(t, 1.0f, vl), vl);          \
        }                                                                                      \
        case H_OP_GELU_ERF: {                                                                  \
            vfloat32##L##_t e = Sleef_erffx_u10##F(__riscv_vfmul_vf_f32##L(x, 0.70710678f, vl)); \
            return __riscv_vfmul_vv_f32##L(__riscv_vfmul_vf_f32##L(x, 0.5f, vl),               \
                                           __riscv_vfadd_vf_f32##L(e, 1.0f, vl), vl);          \
        }                                                                                      \
        default: return Sleef_expfx_u10##F(x);                                                 \
        }                                                                                      \
    }                                                                                          \
    static void softmax_##L(const struct h_args *a)                                            \
    {                                                                                          \
        size_t C = a->cols;                                                                    \
        for (size_t r = 0; r < a->rows; r++) {                                                 \
            const float *x = a->x + r * C;                                                     \
            float *o = (float *)a->out + r * C;                                                \
            vfloat32m1_t m = __riscv_vfmv_v_f_f32m1(-__builtin_inff(), 1);                     \
            for (size_t i = 0, vl; i < C; i += vl) {                                           \
                vl = __riscv_vsetvl_e32##L(C - i);                                             \
                m = __riscv_vfredmax_vs_f32##L##_f32m1(__riscv_vle32_v_f32##L(x + i, vl), m, vl); \
            }                                                                                  \
            float mx = __riscv_vfmv_f_s_f32m1_f32(m);                                          \
            vfloat32m1_t s = __riscv_vfmv_v_f_f32m1(0.0f, 1);                                  \
            for (size_t i = 0, vl; i < C; i += vl) {                                           \
                vl = __riscv_vsetvl_e32##L(C - i);                                             \
                vfloat32##L##_t e = Sleef_expfx_u10##F(                                        \
                    __riscv_vfsub_vf_f32##L(__riscv_vle32_v_f32##L(x + i, vl), mx, vl));       \
                __riscv_vse32_v_f32##L(o + i, e, vl);                                          \
                s = __riscv_vfredusum_vs_f32##L##_f32m1(e, s, vl);                             \
            }                                                                                  \
            float inv = 1.0f / __riscv_vfmv_f_s_f32m1_f32(s);                                  \
            for (size_t i = 0, vl; i < C; i += vl) {                                           \
                vl = __riscv_vsetvl_e32##L(C - i);                                             \
                __riscv_vse32_v_f32##L(                                                        \
                    o + i, __riscv_vfmul_vf_f32##L(__riscv_vle32_v_f32##L(o + i, vl), inv, vl), vl); \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    void h_sleef_run_##L(const struct h_args *a)                                               \
    {                                                                                          \
        if (a->op == H_OP_SOFTMAX) {                                                           \
            softmax_##L(a);                                                                    \
            return;                                                                            \
        }                                                                                      \
        size_t n = a->rows * a->cols;                                                          \
        float *out = a->out;                                                                   \
        switch (a->op) {                                                                       \
        case H_OP_TANH: SLEEF_STRIP(L, H_OP_TANH); break;                                      \
        case H_OP_SIGMOID: SLEEF_STRIP(L, H_OP_SIGMOID); break;                                \
        case H_OP_SILU: SLEEF_STRIP(L, H_OP_SILU); break;                                      \
        case H_OP_GELU_TANH: SLEEF_STRIP(L, H_OP_GELU_TANH); break;                            \
        case H_OP_GELU_ERF: SLEEF_STRIP(L, H_OP_GELU_ERF); break;                              \
        default: SLEEF_STRIP(L, H_OP_EXP);                                                     \
        }                                                                                      \
    }

SLEEF_BODY(m1, rvvm1)
SLEEF_BODY(m2, rvvm2)
#else
int h_sleef_available(int op)
{
    (void)op;
    return 0;
}

void h_sleef_run_m1(const struct h_args *a)
{
    (void)a;
}

void h_sleef_run_m2(const struct h_args *a)
{
    (void)a;
}
#endif

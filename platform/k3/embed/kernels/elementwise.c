/*
 * elementwise.c - RVV 1.0 template for the elementwise family:
 *   add mul axpy scale clamp   (see kernel_abi.h for the exact semantics)
 *
 * Tunable parameters (set with #define before this text, or -D):
 *   OP      OP_ADD=1 OP_MUL=2 OP_AXPY=3 OP_SCALE=4 OP_CLAMP=5 (fixed per op)
 *   LMUL    register group 1, 2, 4 or 8
 *   UNROLL  1, 2 or 4 independent vector strips per loop iteration over the
 *           full-length part; the tail is one strip with vl < VLMAX
 * Strip-mined with vsetvl, so any n (including 0 and 1) is handled.
 */
#include <stddef.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#define OP_ADD 1
#define OP_MUL 2
#define OP_AXPY 3
#define OP_SCALE 4
#define OP_CLAMP 5
#ifndef OP
#define OP OP_ADD
#endif
#ifndef LMUL
#define LMUL 8
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4 && LMUL != 8
#error "LMUL must be 1, 2, 4 or 8"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define SFX CAT(_f32m, LMUL)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)
#define VSETVLMAX CAT(__riscv_vsetvlmax_e32m, LMUL)
#define VLE CAT(__riscv_vle32_v, SFX)
#define VSE CAT(__riscv_vse32_v, SFX)

/* One strip of vl elements starting at x, y, o. */
static inline void strip(const float *x, const float *y, float *o, size_t vl,
                         float alpha, float lo, float hi)
{
    VF vx = VLE(x, vl);
#if OP == OP_ADD
    VF r = CAT(__riscv_vfadd_vv, SFX)(vx, VLE(y, vl), vl);
#elif OP == OP_MUL
    VF r = CAT(__riscv_vfmul_vv, SFX)(vx, VLE(y, vl), vl);
#elif OP == OP_AXPY
    VF r = CAT(__riscv_vfmacc_vf, SFX)(VLE(y, vl), alpha, vx, vl);
#elif OP == OP_SCALE
    VF r = CAT(__riscv_vfmul_vf, SFX)(vx, alpha, vl);
#elif OP == OP_CLAMP
    VF r = CAT(__riscv_vfmin_vf, SFX)(CAT(__riscv_vfmax_vf, SFX)(vx, lo, vl), hi, vl);
#else
#error "unknown OP"
#endif
    VSE(o, r, vl);
}

void KOPE_KERNEL(size_t n, const float *x, const float *y, float *out,
                 const struct kope_scalars *s)
{
    float alpha = s ? s->alpha : 0.0f, lo = s ? s->lo : 0.0f, hi = s ? s->hi : 0.0f;
    size_t i = 0;
#if UNROLL > 1
    size_t vlmax = VSETVLMAX();
    for (; i + UNROLL * vlmax <= n; i += UNROLL * vlmax)
        for (int u = 0; u < UNROLL; u++) {
            size_t o = i + (size_t)u * vlmax;
            strip(x + o, y ? y + o : y, out + o, vlmax, alpha, lo, hi);
        }
#endif
    while (i < n) {
        size_t vl = VSETVL(n - i);
        strip(x + i, y ? y + i : y, out + i, vl, alpha, lo, hi);
        i += vl;
    }
}

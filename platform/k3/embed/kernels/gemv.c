/*
 * gemv.c - RVV 1.0 template for y[m] = A[m x k] . x[k] (matmul family,
 * called with n = 1, b = x, c = y, batch = 1; see kernel_abi.h).
 *
 * Each row is a dot product along k (unit stride). RB rows are done
 * together so one strip of x feeds RB FMAs; each row keeps a vector
 * accumulator (tail-undisturbed) reduced once at the end.
 *
 * Tunable parameters:
 *   LMUL   1, 2, 4 or 8 (k elements per strip = VLEN/32 * LMUL)
 *   RB     1, 2, 4 or 8 rows per block; (2*RB + 1) * LMUL <= 32
 */
#include <stddef.h>
#include <string.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#ifndef LMUL
#define LMUL 8
#endif
#ifndef RB
#define RB 1
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4 && LMUL != 8
#error "LMUL must be 1, 2, 4 or 8"
#endif
#if RB != 1 && RB != 2 && RB != 4 && RB != 8
#error "RB must be 1, 2, 4 or 8"
#endif
#if (2 * RB + 1) * LMUL > 32
#error "(2*RB + 1) * LMUL must be <= 32 (vector registers)"
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

#if RB == 1
#define REP(X) X(0)
#elif RB == 2
#define REP(X) X(0) X(1)
#elif RB == 4
#define REP(X) X(0) X(1) X(2) X(3)
#else
#define REP(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif
#define DECL(r) VF acc##r = F(vfmv_v_f)(0.0f, vlmax);
#define FMA(r) acc##r = FTU(vfmacc_vv)(acc##r, F(vle32_v)(a + (i0 + r) * k + p, vl), xv, vl);
#define STORE(r) y[i0 + r] = __riscv_vfmv_f_s_f32m1_f32(REDSUM(acc##r, z, vlmax));

static void gemv1(size_t m, size_t k, const float *a, const float *x, float *y)
{
    size_t vlmax = VSETVLMAX();
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, 1);
    size_t i0 = 0;
    for (; i0 + RB <= m; i0 += RB) {
        REP(DECL)
        for (size_t p = 0; p < k;) {
            size_t vl = VSETVL(k - p);
            VF xv = F(vle32_v)(x + p, vl);
            REP(FMA)
            p += vl;
        }
        REP(STORE)
    }
    for (; i0 < m; i0++) {
        VF acc = F(vfmv_v_f)(0.0f, vlmax);
        for (size_t p = 0; p < k;) {
            size_t vl = VSETVL(k - p);
            acc = FTU(vfmacc_vv)(acc, F(vle32_v)(a + i0 * k + p, vl), F(vle32_v)(x + p, vl), vl);
            p += vl;
        }
        y[i0] = __riscv_vfmv_f_s_f32m1_f32(REDSUM(acc, z, vlmax));
    }
}

void KOPE_KERNEL(size_t batch, size_t m, size_t n, size_t k,
                 const float *a, const float *b, float *c)
{
    for (size_t t = 0; t < batch; t++)
        gemv1(m, k, a + t * m * k, b + t * k * n, c + t * m * n);
}

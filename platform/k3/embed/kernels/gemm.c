/*
 * gemm.c - RVV 1.0 template for row-major C[m x n] = A[m x k] . B[k x n],
 * batched (strides m*k, k*n, m*n); C is overwritten (see kernel_abi.h).
 *
 * Register-blocked micro-kernel: MR rows of C times one vector of columns
 * (vl <= VLMAX at LMUL) are held in MR vector accumulators; each step of k
 * loads one strip of a row of B and does MR vfmacc.vf with A's scalars.
 *
 * Tunable parameters:
 *   LMUL   1, 2 or 4: columns per micro-tile = VLEN/32 * LMUL
 *   MR     1, 2, 4 or 8 rows per micro-tile (MR*LMUL <= 16 accumulator
 *          registers, leaving room for the B strip)
 *   KC     0: no k blocking; else k is cut into blocks of KC (64, 256) so
 *          the B panel a micro-tile walks stays in cache; C is written by
 *          the first block and accumulated by the next ones
 * Rows left over (m % MR) use a one-row micro-tile; the column tail is a
 * shorter vl.
 */
#include <stddef.h>
#include <string.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#ifndef LMUL
#define LMUL 4
#endif
#ifndef MR
#define MR 4
#endif
#ifndef KC
#define KC 0
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4
#error "LMUL must be 1, 2 or 4"
#endif
#if MR != 1 && MR != 2 && MR != 4 && MR != 8
#error "MR must be 1, 2, 4 or 8"
#endif
#if MR * LMUL > 16
#error "MR * LMUL must be <= 16 (vector registers)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(CAT(vfloat32m, LMUL), _t)
#define SFX CAT(_f32m, LMUL)
#define F(name) CAT(CAT(__riscv_, name), SFX)
#define VSETVL CAT(__riscv_vsetvl_e32m, LMUL)

/* REP(X) expands X(r) for r < MR */
#if MR == 1
#define REP(X) X(0)
#elif MR == 2
#define REP(X) X(0) X(1)
#elif MR == 4
#define REP(X) X(0) X(1) X(2) X(3)
#else
#define REP(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif

/* C[i0.., j0..j0+vl) (+)= A[i0.., p0..p1) . B[p0..p1, j0..j0+vl) for MR rows */
#define DECL(r) VF c##r;
#define INIT0(r) c##r = F(vfmv_v_f)(0.0f, vl);
#define INITC(r) c##r = F(vle32_v)(c + (i0 + r) * n + j0, vl);
#define FMA(r) c##r = F(vfmacc_vf)(c##r, a[(i0 + r) * k + p], bv, vl);
#define STORE(r) F(vse32_v)(c + (i0 + r) * n + j0, c##r, vl);

static inline void tile_mr(size_t i0, size_t j0, size_t vl, size_t p0, size_t p1,
                           size_t n, size_t k, const float *a, const float *b,
                           float *c)
{
    REP(DECL)
    if (p0 == 0) {
        REP(INIT0)
    } else {
        REP(INITC)
    }
    for (size_t p = p0; p < p1; p++) {
        VF bv = F(vle32_v)(b + p * n + j0, vl);
        REP(FMA)
    }
    REP(STORE)
}

static inline void tile_1(size_t i0, size_t j0, size_t vl, size_t p0, size_t p1,
                          size_t n, size_t k, const float *a, const float *b,
                          float *c)
{
    VF c0 = p0 == 0 ? F(vfmv_v_f)(0.0f, vl) : F(vle32_v)(c + i0 * n + j0, vl);
    for (size_t p = p0; p < p1; p++)
        c0 = F(vfmacc_vf)(c0, a[i0 * k + p], F(vle32_v)(b + p * n + j0, vl), vl);
    F(vse32_v)(c + i0 * n + j0, c0, vl);
}

static void gemm1(size_t m, size_t n, size_t k, const float *a, const float *b, float *c)
{
    if (k == 0) {
        memset(c, 0, m * n * sizeof *c);
        return;
    }
    size_t kc = KC > 0 ? (size_t)KC : k;
    for (size_t p0 = 0; p0 < k; p0 += kc) {
        size_t p1 = p0 + kc < k ? p0 + kc : k;
        for (size_t j0 = 0; j0 < n;) {
            size_t vl = VSETVL(n - j0);
            size_t i0 = 0;
            for (; i0 + MR <= m; i0 += MR)
                tile_mr(i0, j0, vl, p0, p1, n, k, a, b, c);
            for (; i0 < m; i0++)
                tile_1(i0, j0, vl, p0, p1, n, k, a, b, c);
            j0 += vl;
        }
    }
}

void KOPE_KERNEL(size_t batch, size_t m, size_t n, size_t k,
                 const float *a, const float *b, float *c)
{
    for (size_t t = 0; t < batch; t++)
        gemm1(m, n, k, a + t * m * k, b + t * k * n, c + t * m * n);
}

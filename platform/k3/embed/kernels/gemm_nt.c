/*
 * gemm_nt.c - RVV 1.0 template for C[m x n] = A[m x k] . B[n x k]^T,
 * batched (strides m*k, n*k, m*n); C is overwritten (see kernel_abi.h).
 *
 * Both operands are read along k (unit stride), so each C[i][j] is a dot
 * product: an MR x NR block of C keeps MR*NR vector accumulators over k,
 * loading MR strips of A and NR strips of B per step (MR+NR loads for
 * MR*NR FMAs; B strips one at a time), and ends with one vfredusum per
 * accumulator.
 *
 * Tunable parameters:
 *   LMUL   1, 2 or 4 (k elements per strip = VLEN/32 * LMUL)
 *   MR     1, 2 or 4 rows of A per block
 *   NR     1, 2 or 4 rows of B per block
 *          (MR*NR + MR + 1) * LMUL <= 32 vector registers
 * Leftover rows/columns use 1 x NR, MR x 1 and 1 x 1 blocks.
 */
#include <stddef.h>
#include <string.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

#ifndef LMUL
#define LMUL 4
#endif
#ifndef MR
#define MR 2
#endif
#ifndef NR
#define NR 2
#endif
#if LMUL != 1 && LMUL != 2 && LMUL != 4
#error "LMUL must be 1, 2 or 4"
#endif
#if (MR != 1 && MR != 2 && MR != 4) || (NR != 1 && NR != 2 && NR != 4)
#error "MR and NR must be 1, 2 or 4"
#endif
#if (MR * NR + MR + 1) * LMUL > 32
#error "(MR*NR + MR + 1) * LMUL must be <= 32 (vector registers)"
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

#define REP1(X, a) X(a, 0)
#define REP2(X, a) X(a, 0) X(a, 1)
#define REP4(X, a) X(a, 0) X(a, 1) X(a, 2) X(a, 3)
/* REPn(X, r): X(r, q) for q < n; AROWn(X): X(r) for r < n */
#define AROW1(X) X(0)
#define AROW2(X) X(0) X(1)
#define AROW4(X) X(0) X(1) X(2) X(3)

#define DEFINE_BLOCK(R, C) DEFINE_BLOCK_(R, C)
#define DEFINE_BLOCK_(R, C)                                                    \
    static inline void block_##R##x##C(size_t i0, size_t j0, size_t k,         \
                                       const float *a, const float *b,         \
                                       float *c, size_t n)                     \
    {                                                                          \
        size_t vlmax = VSETVLMAX();                                            \
        AROW##R(DECL_ROW##C)                                                   \
        for (size_t p = 0; p < k;) {                                           \
            size_t vl = VSETVL(k - p);                                         \
            AROW##R(LOAD_A)                                                    \
            AROW##C(COL_FMA##R)                                                \
            p += vl;                                                           \
        }                                                                      \
        vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, 1);                      \
        AROW##R(STORE_ROW##C)                                                  \
    }
#define BLOCK(R, C) BLOCK_(R, C)
#define BLOCK_(R, C) block_##R##x##C

#define DECL_ACC(r, q) VF acc##r##_##q = F(vfmv_v_f)(0.0f, vlmax);
#define DECL_ROW1(r) REP1(DECL_ACC, r)
#define DECL_ROW2(r) REP2(DECL_ACC, r)
#define DECL_ROW4(r) REP4(DECL_ACC, r)
#define LOAD_A(r) VF va##r = F(vle32_v)(a + (i0 + r) * k + p, vl);
/* one strip of B row q at a time, used by the R rows of A: R*C
 * accumulators + R strips of A + 1 strip of B are live */
#define LOAD_B(q) VF vb = F(vle32_v)(b + (j0 + q) * k + p, vl);
#define FMA_ACC(r, q) acc##r##_##q = FTU(vfmacc_vv)(acc##r##_##q, va##r, vb, vl);
#define COL_FMA1(q) { LOAD_B(q) FMA_ACC(0, q) }
#define COL_FMA2(q) { LOAD_B(q) FMA_ACC(0, q) FMA_ACC(1, q) }
#define COL_FMA4(q) { LOAD_B(q) FMA_ACC(0, q) FMA_ACC(1, q) FMA_ACC(2, q) FMA_ACC(3, q) }
#define STORE_ACC(r, q) \
    c[(i0 + r) * n + j0 + q] = __riscv_vfmv_f_s_f32m1_f32(REDSUM(acc##r##_##q, z, vlmax));
#define STORE_ROW1(r) REP1(STORE_ACC, r)
#define STORE_ROW2(r) REP2(STORE_ACC, r)
#define STORE_ROW4(r) REP4(STORE_ACC, r)

DEFINE_BLOCK(1, 1)
#if NR > 1
DEFINE_BLOCK(1, NR)
#endif
#if MR > 1
DEFINE_BLOCK(MR, 1)
#endif
#if MR > 1 && NR > 1
DEFINE_BLOCK(MR, NR)
#endif

static void gemm_nt1(size_t m, size_t n, size_t k, const float *a, const float *b, float *c)
{
    if (k == 0) {
        memset(c, 0, m * n * sizeof *c);
        return;
    }
    size_t i0 = 0;
    for (; i0 + MR <= m; i0 += MR) {
        size_t j0 = 0;
        for (; j0 + NR <= n; j0 += NR)
            BLOCK(MR, NR)(i0, j0, k, a, b, c, n);
        for (; j0 < n; j0++)
            BLOCK(MR, 1)(i0, j0, k, a, b, c, n);
    }
    for (; i0 < m; i0++) {
        size_t j0 = 0;
        for (; j0 + NR <= n; j0 += NR)
            BLOCK(1, NR)(i0, j0, k, a, b, c, n);
        for (; j0 < n; j0++)
            BLOCK(1, 1)(i0, j0, k, a, b, c, n);
    }
}

void KOPE_KERNEL(size_t batch, size_t m, size_t n, size_t k,
                 const float *a, const float *b, float *c)
{
    for (size_t t = 0; t < batch; t++)
        gemm_nt1(m, n, k, a + t * m * k, b + t * n * k, c + t * m * n);
}

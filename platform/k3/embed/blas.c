/*
 * blas.c - the OpenBLAS baseline for the matmul family (embedded; built for
 * the target with -DHAVE_OPENBLAS when a riscv64 libopenblas.a is available,
 * without it otherwise, in which case the baseline is simply absent).
 * OpenBLAS is told to use one thread, like the candidate.
 */
#include <stddef.h>

#include "harness.h"

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#if defined(__riscv_vector)
#include <riscv_vector.h>
#endif

/* KOPE_BLAS_MIN_VLEN: the VLEN the library was built for (256 for a
 * RISCV64_ZVL256B build). On a narrower machine its kernels would compute
 * garbage or trap, so the baseline is refused rather than run. */
#ifndef KOPE_BLAS_MIN_VLEN
#define KOPE_BLAS_MIN_VLEN 0
#endif

int h_blas_available(int op)
{
    static int init;
#if defined(__riscv_vector)
    if (__riscv_vlenb() * 8 < KOPE_BLAS_MIN_VLEN)
        return 0;
#endif
    if (!init) {
        openblas_set_num_threads(1);
        init = 1;
    }
    return op == H_OP_GEMM || op == H_OP_GEMM_NT || op == H_OP_GEMV;
}

void h_blas_run(const struct h_args *a)
{
    int M = (int)a->m, N = (int)a->n, K = (int)a->k;
    float *out = a->out;
    for (size_t bt = 0; bt < a->batch; bt++) {
        const float *A = a->a + bt * a->m * a->k, *B = a->b + bt * a->k * a->n;
        float *C = out + bt * a->m * a->n;
        if (a->op == H_OP_GEMV)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, M, K, 1.0f, A, K, B, 1, 0.0f, C, 1);
        else if (a->op == H_OP_GEMM_NT)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    }
}
#else
int h_blas_available(int op)
{
    (void)op;
    return 0;
}

void h_blas_run(const struct h_args *a)
{
    (void)a;
}
#endif

/*
 * blas.c - the OpenBLAS baseline (embedded; built for the target with
 * -DHAVE_OPENBLAS when a riscv64 libopenblas.a is available, without it
 * otherwise, in which case the baseline is simply absent). OpenBLAS is told
 * to use one thread, like the candidate.
 *
 * Only where a BLAS routine computes exactly the task's op, called the way
 * a user of BLAS would:
 *   gemm     sgemm (NoTrans, NoTrans)     gemm_nt  sgemm (NoTrans, Trans)
 *   gemv     sgemv (NoTrans)              l2norm   snrm2 per row
 *   axpy     scopy y -> out, saxpy        scale    scopy x -> out, sscal
 *   add      scopy y -> out, saxpy with alpha = 1 (1*x + y is exactly x + y)
 * BLAS updates its vector operand in place, and the task writes a separate
 * output, so for axpy, scale and add the copy is part of the baseline's
 * work (as it would be for the user). No exact match: mul (no elementwise
 * product in BLAS), clamp, sum and max (sasum/isamax take absolute values),
 * mean, argmax, the activations and the norms with gamma.
 */
#include <stddef.h>

#include "hargs.h"

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
    return op == H_OP_GEMM || op == H_OP_GEMM_NT || op == H_OP_GEMV || op == H_OP_AXPY ||
           op == H_OP_SCALE || op == H_OP_ADD || op == H_OP_L2NORM;
}

void h_blas_run(const struct h_args *a)
{
    int M = (int)a->m, N = (int)a->n, K = (int)a->k;
    float *out = a->out;
    switch (a->op) {
    case H_OP_AXPY: case H_OP_ADD:
        cblas_scopy(N, a->y, 1, out, 1);
        cblas_saxpy(N, a->op == H_OP_ADD ? 1.0f : a->alpha, a->x, 1, out, 1);
        return;
    case H_OP_SCALE:
        cblas_scopy(N, a->x, 1, out, 1);
        cblas_sscal(N, a->alpha, out, 1);
        return;
    case H_OP_L2NORM:
        for (size_t r = 0; r < a->rows; r++)
            out[r] = cblas_snrm2((int)a->cols, a->x + r * a->cols, 1);
        return;
    default:
        break;
    }
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

/*
 * kope_ops.h - the op catalogue of the exported kernel library: for every op
 * its family signature (kernel_abi.h), the dispatcher kope_<op>, the portable
 * scalar fallback kope_scalar_<op> and the self-test's double reference
 * kope_ref_<op>. Part of kope; copied into the library by `kope kernels export`.
 *
 * KOPE_OPS(X) calls X(op, family, shape) once per op in kope's order; shape
 * says which sizes the op takes: N (elementwise, n), P (pointwise activation,
 * rows*cols values), R (row-wise activation, rows x cols), D (reduction, one
 * result per row), M (gemm/gemm_nt: batch, m, n, k), V (gemv: m, k).
 */
#ifndef KOPE_OPS_H
#define KOPE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kernel_abi.h"

#define KOPE_OPS(X)                                                                          \
    X(add, elementwise, N) X(mul, elementwise, N) X(axpy, elementwise, N)                   \
    X(scale, elementwise, N) X(clamp, elementwise, N)                                       \
    X(relu, activation, P) X(gelu_tanh, activation, P) X(gelu_erf, activation, P)           \
    X(silu, activation, P) X(sigmoid, activation, P) X(tanh, activation, P)                 \
    X(exp, activation, P)                                                                   \
    X(softmax, activation, R) X(layernorm, activation, R) X(rmsnorm, activation, R)         \
    X(sum, reduction, D) X(max, reduction, D) X(mean, reduction, D)                         \
    X(l2norm, reduction, D) X(argmax, reduction, D)                                         \
    X(gemm, matmul, M) X(gemm_nt, matmul, M) X(gemv, matmul, V)

/* The references write double (argmax: int32_t through void *out). */
typedef void kope_ref_elementwise_fn(size_t n, const float *x, const float *y, double *out,
                                     const struct kope_scalars *s);
typedef void kope_ref_activation_fn(size_t rows, size_t cols, const float *x, double *out,
                                    const float *gamma, const float *beta,
                                    const struct kope_scalars *s);
typedef void kope_ref_reduction_fn(size_t rows, size_t cols, const float *x, void *out);
typedef void kope_ref_matmul_fn(size_t batch, size_t m, size_t n, size_t k, const float *a,
                                const float *b, double *c);

#define KOPE_OPS_DECLARE(op, fam, shape)                                                     \
    kope_##fam##_fn kope_##op, kope_scalar_##op;                                             \
    kope_ref_##fam##_fn kope_ref_##op;
KOPE_OPS(KOPE_OPS_DECLARE)
#undef KOPE_OPS_DECLARE

#endif

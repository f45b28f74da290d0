/*
 * kernel_abi.h - the C interface every candidate kernel implements.
 *
 * This header is what a kernel author (human or LLM) reads. A candidate is one
 * C file that includes only <stddef.h>, <stdint.h>, <math.h>, <float.h>,
 * <string.h> (memcpy/memset/memmove/memcmp only), <riscv_vector.h>,
 * <stdbool.h>, <limits.h> and this header (kernel_abi.h), and defines
 * exactly one function named KOPE_KERNEL with its op family's signature below.
 * All data is f32, row-major, contiguous; the kernel must not keep state across
 * calls, allocate, do I/O, or touch memory outside the buffers it is given.
 * Helpers must be static (kope_kernel is the only global symbol allowed), and
 * no inline assembly. kope declares kope_kernel with the task family's type
 * before compiling the file, so a wrong signature is a compile error. Buffers
 * are only guaranteed 4-byte aligned. (The checks: docs/K3-HARNESS.md.)
 *
 * Families and their ops:
 *   elementwise  add mul axpy scale clamp
 *   activation   relu gelu_tanh gelu_erf silu sigmoid tanh exp   (pointwise)
 *                softmax layernorm rmsnorm                      (row-wise)
 *   reduction    sum max mean l2norm argmax                     (one result per row)
 *   matmul       gemm gemm_nt gemv
 */
#ifndef KOPE_KERNEL_ABI_H
#define KOPE_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define KOPE_KERNEL kope_kernel
#define KOPE_ABI_VERSION 1

/* Scalar parameters, the same struct for every family; each op reads only the
 * fields named in its comment and ignores the rest. */
struct kope_scalars {
    float alpha; /* axpy: out = alpha*x + y;  scale: out = alpha*x          */
    float lo;    /* clamp: out = min(max(x, lo), hi)                        */
    float hi;
    float eps;   /* layernorm, rmsnorm: added to the variance / mean square */
};

/* elementwise: out[i] = op(x[i], y[i]) for i < n.
 * add: x+y   mul: x*y   axpy: alpha*x+y   scale: alpha*x (y is NULL)
 * clamp: min(max(x,lo),hi) (y is NULL). */
typedef void kope_elementwise_fn(size_t n, const float *x, const float *y,
                                 float *out, const struct kope_scalars *s);

/* activation: x and out are rows x cols.
 * Pointwise ops treat the buffer as rows*cols independent values.
 *   relu max(x,0); gelu_tanh 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)));
 *   gelu_erf 0.5x(1+erf(x/sqrt2)); silu x*sigmoid(x); sigmoid 1/(1+e^-x);
 *   tanh; exp.
 * Row-wise ops work on each row of cols values:
 *   softmax  out = exp(x - max) / sum(exp(x - max))
 *   layernorm out = (x - mean) / sqrt(var + eps) * gamma + beta
 *   rmsnorm  out = x / sqrt(mean(x^2) + eps) * gamma
 * gamma and beta have cols entries (NULL for ops that do not use them). */
typedef void kope_activation_fn(size_t rows, size_t cols, const float *x,
                                float *out, const float *gamma,
                                const float *beta,
                                const struct kope_scalars *s);

/* reduction: one result per row of x (rows x cols).
 * sum, max, mean, l2norm (sqrt of the sum of squares) write out[r] as float;
 * argmax writes the index of the first maximum as int32_t: cast out to
 * (int32_t *). */
typedef void kope_reduction_fn(size_t rows, size_t cols, const float *x,
                               void *out);

/* matmul, for b < batch (strides m*k, k*n or n*k, m*n between batches):
 *   gemm    C[m x n] = A[m x k] . B[k x n]
 *   gemm_nt C[m x n] = A[m x k] . B[n x k]^T
 *   gemv    y[m] = A[m x k] . x[k]   (called with n = 1, b = x, c = y, batch = 1)
 * C is overwritten, not accumulated into. */
typedef void kope_matmul_fn(size_t batch, size_t m, size_t n, size_t k,
                            const float *a, const float *b, float *c);

#endif /* KOPE_KERNEL_ABI_H */

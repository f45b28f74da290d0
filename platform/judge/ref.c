/*
 * platform/judge/ref.c - double-precision references for every op (embedded; built for the
 * target with -O2). Inputs are the f32 buffers the candidate sees, widened to
 * double, so the only error measured is the candidate's own.
 * The formulas are the ones documented in platform/kernel_abi.h. A user's
 * own op is computed by its own reference instead (user.c).
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdint.h>

#include "hargs.h"

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double pointwise(int op, double x)
{
    switch (op) {
    case H_OP_RELU: return x > 0 ? x : 0;
    case H_OP_GELU_TANH: return gelu_tanh(x);
    case H_OP_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case H_OP_SILU: return x / (1.0 + exp(-x));
    case H_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case H_OP_TANH: return tanh(x);
    case H_OP_EXP: return exp(x);
    default: return NAN;
    }
}

static void rowwise(const struct h_args *a, double *out)
{
    size_t C = a->cols;
    for (size_t r = 0; r < a->rows; r++) {
        const float *x = a->x + r * C;
        double *o = out + r * C;
        if (a->op == H_OP_SOFTMAX) {
            double mx = -INFINITY, s = 0;
            for (size_t i = 0; i < C; i++)
                mx = x[i] > mx ? x[i] : mx;
            for (size_t i = 0; i < C; i++)
                s += exp(x[i] - mx);
            for (size_t i = 0; i < C; i++)
                o[i] = exp(x[i] - mx) / s;
        } else if (a->op == H_OP_LAYERNORM) {
            double mean = 0, var = 0;
            for (size_t i = 0; i < C; i++)
                mean += x[i];
            mean /= (double)C;
            for (size_t i = 0; i < C; i++)
                var += (x[i] - mean) * (x[i] - mean);
            var /= (double)C;
            double inv = 1.0 / sqrt(var + a->eps);
            for (size_t i = 0; i < C; i++)
                o[i] = (x[i] - mean) * inv * a->gamma[i] + a->beta[i];
        } else { /* rmsnorm */
            double ms = 0;
            for (size_t i = 0; i < C; i++)
                ms += (double)x[i] * x[i];
            ms /= (double)C;
            double inv = 1.0 / sqrt(ms + a->eps);
            for (size_t i = 0; i < C; i++)
                o[i] = x[i] * inv * a->gamma[i];
        }
    }
}

static void reduce(const struct h_args *a, double *out)
{
    size_t C = a->cols;
    for (size_t r = 0; r < a->rows; r++) {
        const float *x = a->x + r * C;
        double acc = a->op == H_OP_MAX || a->op == H_OP_ARGMAX ? -INFINITY : 0;
        size_t arg = 0;
        for (size_t i = 0; i < C; i++) {
            switch (a->op) {
            case H_OP_SUM: case H_OP_MEAN: acc += x[i]; break;
            case H_OP_L2NORM: acc += (double)x[i] * x[i]; break;
            default:
                if (x[i] > acc) { acc = x[i]; arg = i; }
            }
        }
        if (a->op == H_OP_MEAN) acc /= (double)C;
        if (a->op == H_OP_L2NORM) acc = sqrt(acc);
        out[r] = a->op == H_OP_ARGMAX ? (double)arg : acc;
    }
}

static void matmul(const struct h_args *a, double *out)
{
    size_t M = a->m, N = a->n, K = a->k;
    for (size_t bt = 0; bt < a->batch; bt++) {
        const float *A = a->a + bt * M * K;
        const float *B = a->b + bt * K * N; /* same size for gemm_nt (N x K) */
        double *Cm = out + bt * M * N;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double s = 0;
                for (size_t p = 0; p < K; p++) {
                    double bv = a->op == H_OP_GEMM_NT ? B[j * K + p] : B[p * N + j];
                    s += (double)A[i * K + p] * bv;
                }
                Cm[i * N + j] = s;
            }
    }
}

/* Defined only in a user op's build (user.c); a weak reference stays NULL in
 * the catalogue's builds, which never ask for H_OP_USER. */
void h_user_ref(const struct h_args *a, double *out) __attribute__((weak));

void h_ref_run(const struct h_args *a, double *out)
{
    if (a->op == H_OP_USER) {
        if (h_user_ref)
            h_user_ref(a, out);
        else
            for (size_t i = 0; i < a->out_count; i++)
                out[i] = NAN;
        return;
    }
    switch (a->op) {
    case H_OP_ADD: case H_OP_MUL: case H_OP_AXPY: case H_OP_SCALE: case H_OP_CLAMP:
        for (size_t i = 0; i < a->n; i++) {
            double x = a->x[i], y = a->y ? a->y[i] : 0;
            switch (a->op) {
            case H_OP_ADD: out[i] = x + y; break;
            case H_OP_MUL: out[i] = x * y; break;
            case H_OP_AXPY: out[i] = (double)a->alpha * x + y; break;
            case H_OP_SCALE: out[i] = (double)a->alpha * x; break;
            default: out[i] = x < a->lo ? a->lo : x > a->hi ? a->hi : x;
            }
        }
        break;
    case H_OP_SOFTMAX: case H_OP_LAYERNORM: case H_OP_RMSNORM:
        rowwise(a, out);
        break;
    case H_OP_SUM: case H_OP_MAX: case H_OP_MEAN: case H_OP_L2NORM: case H_OP_ARGMAX:
        reduce(a, out);
        break;
    case H_OP_GEMM: case H_OP_GEMM_NT: case H_OP_GEMV:
        matmul(a, out);
        break;
    default: /* pointwise activations over rows*cols values */
        for (size_t i = 0; i < a->rows * a->cols; i++)
            out[i] = pointwise(a->op, a->x[i]);
    }
}

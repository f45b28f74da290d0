/*
 * base.c - the plain-C f32 baselines a candidate is compared against in the
 * same run (embedded; built for the target once per op and flag set).
 *
 * Compiled twice per op: -DKOPE_BASE_NAME=kope_base_scalar with -O2 and
 * vectorization off (the "scalar reference"), and
 * -DKOPE_BASE_NAME=kope_base_autovec with -O3 and RVV on (what the compiler
 * does alone). KOPE_BASE_OP fixes the op at compile time, so the compiler
 * specializes the baseline exactly as a candidate is specialized: a fair fight.
 * The code is written the straightforward way a C programmer would, without
 * hand tricks, because it stands for "no optimization effort".
 */
#include <math.h>
#include <stdint.h>

#include "hargs.h"

#ifndef KOPE_BASE_OP
#error "KOPE_BASE_OP must name the op (an enum h_op value)"
#endif
#ifndef KOPE_BASE_NAME
#error "KOPE_BASE_NAME must be kope_base_scalar or kope_base_autovec"
#endif

#define OP KOPE_BASE_OP

static float pointwise(float x)
{
    switch (OP) {
    case H_OP_RELU: return x > 0.0f ? x : 0.0f;
    case H_OP_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    case H_OP_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678f));
    case H_OP_SILU: return x / (1.0f + expf(-x));
    case H_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case H_OP_TANH: return tanhf(x);
    default: return expf(x);
    }
}

void KOPE_BASE_NAME(const struct h_args *a)
{
    float *out = a->out;
    switch (OP) {
    case H_OP_ADD: case H_OP_MUL: case H_OP_AXPY: case H_OP_SCALE: case H_OP_CLAMP: {
        const float *x = a->x, *y = a->y;
        for (size_t i = 0; i < a->n; i++) {
            switch (OP) {
            case H_OP_ADD: out[i] = x[i] + y[i]; break;
            case H_OP_MUL: out[i] = x[i] * y[i]; break;
            case H_OP_AXPY: out[i] = a->alpha * x[i] + y[i]; break;
            case H_OP_SCALE: out[i] = a->alpha * x[i]; break;
            default: out[i] = fminf(fmaxf(x[i], a->lo), a->hi);
            }
        }
        break;
    }
    case H_OP_SOFTMAX: case H_OP_LAYERNORM: case H_OP_RMSNORM: {
        size_t C = a->cols;
        for (size_t r = 0; r < a->rows; r++) {
            const float *x = a->x + r * C;
            float *o = out + r * C;
            if (OP == H_OP_SOFTMAX) {
                float mx = -INFINITY, s = 0;
                for (size_t i = 0; i < C; i++) mx = fmaxf(mx, x[i]);
                for (size_t i = 0; i < C; i++) { o[i] = expf(x[i] - mx); s += o[i]; }
                for (size_t i = 0; i < C; i++) o[i] /= s;
            } else if (OP == H_OP_LAYERNORM) {
                float mean = 0, var = 0;
                for (size_t i = 0; i < C; i++) mean += x[i];
                mean /= (float)C;
                for (size_t i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
                var /= (float)C;
                float inv = 1.0f / sqrtf(var + a->eps);
                for (size_t i = 0; i < C; i++) o[i] = (x[i] - mean) * inv * a->gamma[i] + a->beta[i];
            } else {
                float ms = 0;
                for (size_t i = 0; i < C; i++) ms += x[i] * x[i];
                float inv = 1.0f / sqrtf(ms / (float)C + a->eps);
                for (size_t i = 0; i < C; i++) o[i] = x[i] * inv * a->gamma[i];
            }
        }
        break;
    }
    case H_OP_SUM: case H_OP_MAX: case H_OP_MEAN: case H_OP_L2NORM: case H_OP_ARGMAX: {
        size_t C = a->cols;
        for (size_t r = 0; r < a->rows; r++) {
            const float *x = a->x + r * C;
            float acc = (OP == H_OP_MAX || OP == H_OP_ARGMAX) ? -INFINITY : 0.0f;
            int32_t arg = 0;
            for (size_t i = 0; i < C; i++) {
                if (OP == H_OP_SUM || OP == H_OP_MEAN) acc += x[i];
                else if (OP == H_OP_L2NORM) acc += x[i] * x[i];
                else if (x[i] > acc) { acc = x[i]; arg = (int32_t)i; }
            }
            if (OP == H_OP_ARGMAX) ((int32_t *)a->out)[r] = arg;
            else if (OP == H_OP_MEAN) out[r] = acc / (float)C;
            else if (OP == H_OP_L2NORM) out[r] = sqrtf(acc);
            else out[r] = acc;
        }
        break;
    }
    case H_OP_GEMM: case H_OP_GEMM_NT: case H_OP_GEMV: {
        size_t M = a->m, N = a->n, K = a->k;
        for (size_t bt = 0; bt < a->batch; bt++) {
            const float *A = a->a + bt * M * K, *B = a->b + bt * K * N;
            float *Cm = out + bt * M * N;
            if (OP == H_OP_GEMM) { /* i-p-j order: the textbook cache-friendly loop */
                for (size_t i = 0; i < M; i++) {
                    for (size_t j = 0; j < N; j++) Cm[i * N + j] = 0;
                    for (size_t p = 0; p < K; p++) {
                        float av = A[i * K + p];
                        for (size_t j = 0; j < N; j++) Cm[i * N + j] += av * B[p * N + j];
                    }
                }
            } else { /* gemm_nt and gemv: dot products along k */
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) {
                        float s = 0;
                        for (size_t p = 0; p < K; p++) s += A[i * K + p] * B[j * K + p];
                        Cm[i * N + j] = s;
                    }
            }
        }
        break;
    }
    default:
        for (size_t i = 0; i < a->rows * a->cols; i++) out[i] = pointwise(a->x[i]);
    }
}

/*
 * fake aclnn (kope tests): the vendor operators kope times as baselines,
 * computed on the host CPU with the documented two-phase calls
 * (aclnnXxxGetWorkspaceSize builds a one-shot executor, aclnnXxx runs it on
 * the "stream"). f32 ND tensors, any strides. Not Huawei's library.
 */
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "aclnn/acl_meta.h"

struct aclTensor {
    int64_t dims[8], strides[8];
    uint64_t nd;
    float *data;
};
struct aclScalar {
    float v;
};
enum fake_op { F_ADD, F_MUL, F_MULS, F_CLAMP, F_RELU, F_EXP, F_SIGMOID, F_TANH, F_SILU, F_SOFTMAX, F_MATMUL };
struct aclOpExecutor {
    fake_op op;
    const aclTensor *a, *b;
    aclTensor *out;
    float s0, s1;
};

static int64_t numel(const aclTensor *t)
{
    int64_t n = 1;
    for (uint64_t i = 0; i < t->nd; i++)
        n *= t->dims[i];
    return n;
}

extern "C" {

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t n, aclDataType, const int64_t *stride, int64_t offset,
                           aclFormat, const int64_t *, uint64_t, void *data)
{
    if (n > 8)
        return nullptr;
    aclTensor *t = new aclTensor();
    t->nd = n;
    for (uint64_t i = 0; i < n; i++) {
        t->dims[i] = viewDims[i];
        t->strides[i] = stride[i];
    }
    t->data = (float *)data + offset;
    return t;
}
aclScalar *aclCreateScalar(void *value, aclDataType) { return new aclScalar{*(float *)value}; }
aclnnStatus aclDestroyTensor(const aclTensor *t) { delete t; return 0; }
aclnnStatus aclDestroyScalar(const aclScalar *s) { delete s; return 0; }

static aclnnStatus mk(fake_op op, const aclTensor *a, const aclTensor *b, aclTensor *out, float s0, float s1,
                      uint64_t *ws, aclOpExecutor **ex)
{
    if (!a || !out || !ws || !ex)
        return 161001; /* ACLNN_ERR_PARAM_NULLPTR */
    *ws = 0;
    *ex = new aclOpExecutor{op, a, b, out, s0, s1};
    return 0;
}

static aclnnStatus run(aclOpExecutor *e)
{
    if (!e)
        return 161001;
    const float *x = e->a->data, *y = e->b ? e->b->data : nullptr;
    float *o = e->out->data;
    int64_t n = numel(e->out);
    switch (e->op) {
    case F_ADD: for (int64_t i = 0; i < n; i++) o[i] = x[i] + e->s0 * y[i]; break;
    case F_MUL: for (int64_t i = 0; i < n; i++) o[i] = x[i] * y[i]; break;
    case F_MULS: for (int64_t i = 0; i < n; i++) o[i] = x[i] * e->s0; break;
    case F_CLAMP: for (int64_t i = 0; i < n; i++) o[i] = fminf(fmaxf(x[i], e->s0), e->s1); break;
    case F_RELU: for (int64_t i = 0; i < n; i++) o[i] = x[i] > 0 ? x[i] : 0; break;
    case F_EXP: for (int64_t i = 0; i < n; i++) o[i] = expf(x[i]); break;
    case F_SIGMOID: for (int64_t i = 0; i < n; i++) o[i] = 1 / (1 + expf(-x[i])); break;
    case F_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanhf(x[i]); break;
    case F_SILU: for (int64_t i = 0; i < n; i++) o[i] = x[i] / (1 + expf(-x[i])); break;
    case F_SOFTMAX: {
        int64_t C = e->a->dims[e->a->nd - 1], R = n / (C ? C : 1);
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * C;
            float *orow = o + r * C, mx = xr[0], s = 0;
            for (int64_t i = 1; i < C; i++) mx = fmaxf(mx, xr[i]);
            for (int64_t i = 0; i < C; i++) s += (orow[i] = expf(xr[i] - mx));
            for (int64_t i = 0; i < C; i++) orow[i] /= s;
        }
        break;
    }
    case F_MATMUL: { /* (B,)M,K x (B,)K,N with strides */
        const aclTensor *A = e->a, *Bt = e->b;
        int64_t nd = A->nd, M = A->dims[nd - 2], K = A->dims[nd - 1], N = Bt->dims[nd - 1];
        int64_t batch = nd == 3 ? A->dims[0] : 1;
        for (int64_t bt = 0; bt < batch; bt++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    float s = 0;
                    for (int64_t p = 0; p < K; p++) {
                        int64_t ao = (nd == 3 ? bt * A->strides[0] : 0) + i * A->strides[nd - 2] + p * A->strides[nd - 1];
                        int64_t bo = (nd == 3 ? bt * Bt->strides[0] : 0) + p * Bt->strides[nd - 2] + j * Bt->strides[nd - 1];
                        s += A->data[ao] * Bt->data[bo];
                    }
                    o[bt * M * N + i * N + j] = s;
                }
        break;
    }
    }
    delete e;
    return 0;
}

#define RUNNER(NAME) \
    aclnnStatus aclnn##NAME(void *, uint64_t, aclOpExecutor *e, aclrtStream) { return run(e); }

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *a, const aclTensor *b, const aclScalar *alpha, aclTensor *o,
                                     uint64_t *ws, aclOpExecutor **ex)
{ return mk(F_ADD, a, b, o, alpha ? alpha->v : 1.0f, 0, ws, ex); }
RUNNER(Add)
aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *a, const aclTensor *b, aclTensor *o, uint64_t *ws, aclOpExecutor **ex)
{ return mk(F_MUL, a, b, o, 0, 0, ws, ex); }
RUNNER(Mul)
aclnnStatus aclnnMulsGetWorkspaceSize(const aclTensor *a, const aclScalar *s, aclTensor *o, uint64_t *ws, aclOpExecutor **ex)
{ return mk(F_MULS, a, nullptr, o, s->v, 0, ws, ex); }
RUNNER(Muls)
aclnnStatus aclnnClampGetWorkspaceSize(const aclTensor *a, const aclScalar *lo, const aclScalar *hi, aclTensor *o,
                                       uint64_t *ws, aclOpExecutor **ex)
{ return mk(F_CLAMP, a, nullptr, o, lo->v, hi->v, ws, ex); }
RUNNER(Clamp)
#define UNARY(NAME, OP) \
    aclnnStatus aclnn##NAME##GetWorkspaceSize(const aclTensor *a, aclTensor *o, uint64_t *ws, aclOpExecutor **ex) \
    { return mk(OP, a, nullptr, o, 0, 0, ws, ex); } \
    RUNNER(NAME)
UNARY(Relu, F_RELU)
UNARY(Exp, F_EXP)
UNARY(Sigmoid, F_SIGMOID)
UNARY(Tanh, F_TANH)
UNARY(Silu, F_SILU)
aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *a, int64_t, aclTensor *o, uint64_t *ws, aclOpExecutor **ex)
{ return mk(F_SOFTMAX, a, nullptr, o, 0, 0, ws, ex); }
RUNNER(Softmax)
aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *a, const aclTensor *b, aclTensor *o, int8_t, uint64_t *ws,
                                        aclOpExecutor **ex)
{ return mk(F_MATMUL, a, b, o, 0, 0, ws, ex); }
RUNNER(Matmul)

} /* extern "C" */

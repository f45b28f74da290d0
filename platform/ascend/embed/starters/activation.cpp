// kope built-in Ascend C starter: activation family.
// Pointwise ops (relu gelu_tanh gelu_erf silu sigmoid tanh exp) stream
// rows*cols values through UB with a double-buffered CopyIn-Compute-CopyOut
// pipeline, built only from basic vector instructions (Exp, Div, Muls, ...):
//   sigmoid 1/(1+e^-x)   silu x/(1+e^-x)   tanh 1-2/(e^2x+1)
//   gelu_tanh x/(1+e^(-2u)), u = sqrt(2/pi)(x+0.044715x^3)
//   gelu_erf 0.5(x+|x|*erf(|x|/sqrt2)), erf by Abramowitz-Stegun 7.1.26 (|err| < 1.5e-7)
// Row-wise ops (softmax layernorm rmsnorm): blocks split the flat output in
// whole 64-byte lines, scalar GM access, vector math (Exp, Sqrt) on small UB
// buffers: correct on any row length and alignment, slow; the place to start
// optimizing.
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

constexpr uint32_t TILE = 2048;
constexpr int32_t BUFFER_NUM = 2;

class KopeActivation {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR out, const KopeTiling &t)
    {
        t_ = t;
        xGm.SetGlobalBuffer((__gm__ float *)x);
        oGm.SetGlobalBuffer((__gm__ float *)out);
        if (gamma != nullptr)
            gGm.SetGlobalBuffer((__gm__ float *)gamma);
        if (beta != nullptr)
            bGm.SetGlobalBuffer((__gm__ float *)beta);
        pipe.InitBuffer(inX, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(outZ, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(tmp1, TILE * sizeof(float));
        pipe.InitBuffer(tmp2, TILE * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        if (t_.op == KOPE_OP_SOFTMAX || t_.op == KOPE_OP_LAYERNORM || t_.op == KOPE_OP_RMSNORM)
            Rowwise();
        else
            Pointwise();
    }

private:
    /* ------------------------------------------------------ pointwise --- */
    __aicore__ inline void Pointwise()
    {
        uint32_t start, end;
        kope_block_range(t_.rows * t_.cols, &start, &end);
        for (uint32_t pos = start; pos < end;) {
            uint32_t len = end - pos < TILE ? end - pos : TILE;
            uint32_t len8 = (len + 7) / 8 * 8;
            LocalTensor<float> x = inX.AllocTensor<float>();
            DataCopy(x, xGm[pos], len8);
            inX.EnQue(x);
            Compute(len8);
            LocalTensor<float> z = outZ.DeQue<float>();
            uint32_t aligned = len / 8 * 8;
            if (aligned)
                DataCopy(oGm[pos], z, aligned);
            if (aligned < len) {
                PipeBarrier<PIPE_ALL>();
                for (uint32_t i = aligned; i < len; i++)
                    oGm.SetValue(pos + i, z.GetValue(i));
            }
            outZ.FreeTensor(z);
            pos += len;
        }
        kope_flush_gm(oGm);
    }
    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<float> x = inX.DeQue<float>();
        LocalTensor<float> z = outZ.AllocTensor<float>();
        LocalTensor<float> a = tmp1.Get<float>();
        LocalTensor<float> c = tmp2.Get<float>();
        switch (t_.op) {
        case KOPE_OP_RELU: Relu(z, x, len); break;
        case KOPE_OP_EXP: Exp(z, x, len); break;
        case KOPE_OP_SIGMOID:
            Muls(a, x, -1.0f, len); Exp(a, a, len); Adds(a, a, 1.0f, len);
            Duplicate(z, 1.0f, len); Div(z, z, a, len);
            break;
        case KOPE_OP_SILU:
            Muls(a, x, -1.0f, len); Exp(a, a, len); Adds(a, a, 1.0f, len); Div(z, x, a, len);
            break;
        case KOPE_OP_TANH:
            Muls(a, x, 2.0f, len); Exp(a, a, len); Adds(a, a, 1.0f, len);
            Duplicate(z, 2.0f, len); Div(z, z, a, len); Muls(z, z, -1.0f, len); Adds(z, z, 1.0f, len);
            break;
        case KOPE_OP_GELU_TANH:
            Mul(a, x, x, len); Mul(a, a, x, len); Muls(a, a, 0.044715f, len); Add(a, a, x, len);
            Muls(a, a, -2.0f * 0.7978845608028654f, len); Exp(a, a, len); Adds(a, a, 1.0f, len);
            Div(z, x, a, len);
            break;
        default: /* gelu_erf */
            Abs(a, x, len); Muls(a, a, 0.7071067811865476f, len);          // a = |x|/sqrt2
            Muls(c, a, 0.3275911f, len); Adds(c, c, 1.0f, len);
            Duplicate(z, 1.0f, len); Div(c, z, c, len);                      // c = t
            Muls(z, c, 1.061405429f, len); Adds(z, z, -1.453152027f, len);
            Mul(z, z, c, len); Adds(z, z, 1.421413741f, len);
            Mul(z, z, c, len); Adds(z, z, -0.284496736f, len);
            Mul(z, z, c, len); Adds(z, z, 0.254829592f, len);
            Mul(z, z, c, len);                                               // z = poly(t)
            Mul(c, a, a, len); Muls(c, c, -1.0f, len); Exp(c, c, len);      // c = e^-a^2
            Mul(z, z, c, len); Muls(z, z, -1.0f, len); Adds(z, z, 1.0f, len); // z = erf(a)
            Abs(a, x, len); Mul(z, z, a, len); Add(z, z, x, len); Muls(z, z, 0.5f, len);
            break;
        }
        outZ.EnQue(z);
        inX.FreeTensor(x);
    }

    /* ------------------------------------------------------- row-wise --- */
    /* one scalar through a vector instruction: sqrt and exp on the Scalar unit
     * are not assumed; 8 lanes = one 32-byte block */
    __aicore__ inline float VecSqrt(float v)
    {
        LocalTensor<float> a = tmp1.Get<float>();
        Duplicate(a, v, 8);
        Sqrt(a, a, 8);
        PipeBarrier<PIPE_ALL>();
        return a.GetValue(0);
    }
    /* Blocks split the flat output (rows*cols) in whole cache lines; a
     * block computes the statistics of every row it touches (over the whole
     * row) and writes only its own elements. */
    __aicore__ inline void Rowwise()
    {
        uint32_t C = t_.cols, start, end;
        kope_block_range(t_.rows * C, &start, &end);
        for (uint32_t r = start / (C ? C : 1); start < end && r < t_.rows; r++) {
            uint64_t base = (uint64_t)r * C;
            if (base >= end)
                break;
            uint32_t lo = base < start ? start - (uint32_t)base : 0;
            uint32_t hi = base + C > end ? end - (uint32_t)base : C;
            if (lo >= hi)
                break;
            if (t_.op == KOPE_OP_SOFTMAX)
                Softmax(base, C, lo, hi);
            else
                Norm(base, C, lo, hi);
        }
        kope_flush_gm(oGm);
    }
    /* exp(x[base+i] - mx) for i in [pos, pos+len) into a (UB), len <= TILE */
    __aicore__ inline void ExpChunk(LocalTensor<float> &a, uint64_t base, uint32_t pos, uint32_t len, float mx)
    {
        uint32_t len8 = (len + 7) / 8 * 8;
        for (uint32_t i = 0; i < len8; i++)
            a.SetValue(i, i < len ? xGm.GetValue(base + pos + i) - mx : -100.0f);
        PipeBarrier<PIPE_ALL>();
        Exp(a, a, len8);
        PipeBarrier<PIPE_ALL>();
    }
    __aicore__ inline void Softmax(uint64_t base, uint32_t C, uint32_t lo, uint32_t hi)
    {
        float mx = xGm.GetValue(base);
        for (uint32_t i = 1; i < C; i++) {
            float v = xGm.GetValue(base + i);
            mx = v > mx ? v : mx;
        }
        LocalTensor<float> a = tmp1.Get<float>();
        float s = 0.0f, comp = 0.0f;  // Kahan
        for (uint32_t pos = 0; pos < C; pos += TILE) {
            uint32_t len = C - pos < TILE ? C - pos : TILE;
            ExpChunk(a, base, pos, len, mx);
            for (uint32_t i = 0; i < len; i++) {
                float y = a.GetValue(i) - comp, u = s + y;
                comp = (u - s) - y;
                s = u;
            }
        }
        float inv = 1.0f / s;
        for (uint32_t pos = lo; pos < hi; pos += TILE) {
            uint32_t len = hi - pos < TILE ? hi - pos : TILE;
            ExpChunk(a, base, pos, len, mx);
            for (uint32_t i = 0; i < len; i++)
                oGm.SetValue(base + pos + i, a.GetValue(i) * inv);
        }
    }
    __aicore__ inline void Norm(uint64_t base, uint32_t C, uint32_t lo, uint32_t hi)
    {
        float mean = 0.0f;
        if (t_.op == KOPE_OP_LAYERNORM) {
            float s = 0.0f, comp = 0.0f;
            for (uint32_t i = 0; i < C; i++) {
                float y = xGm.GetValue(base + i) - comp, u = s + y;
                comp = (u - s) - y;
                s = u;
            }
            mean = s / (float)C;
        }
        float s = 0.0f, comp = 0.0f;  // sum of (x - mean)^2, or of x^2 for rmsnorm
        for (uint32_t i = 0; i < C; i++) {
            float d = xGm.GetValue(base + i) - mean;
            float y = d * d - comp, u = s + y;
            comp = (u - s) - y;
            s = u;
        }
        float inv = 1.0f / VecSqrt(s / (float)C + t_.eps);
        for (uint32_t i = lo; i < hi; i++) {
            float v = (xGm.GetValue(base + i) - mean) * inv * gGm.GetValue(i);
            if (t_.op == KOPE_OP_LAYERNORM)
                v += bGm.GetValue(i);
            oGm.SetValue(base + i, v);
        }
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outZ;
    TBuf<QuePosition::VECCALC> tmp1, tmp2;
    GlobalTensor<float> xGm, oGm, gGm, bGm;
    KopeTiling t_;
};

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR out,
                                                  GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    KopeActivation op;
    op.Init(x, gamma, beta, out, t);
    op.Process();
}

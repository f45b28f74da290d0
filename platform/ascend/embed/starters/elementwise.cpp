// kope built-in Ascend C starter: elementwise family (add mul axpy scale clamp).
// Correct first, then reasonably fast: blocks own disjoint multiples of 16
// floats (whole 64-byte cache lines, for the scalar tail stores); each block streams its share through UB in tiles with a
// double-buffered CopyIn-Compute-CopyOut queue pipeline; the last n % 8
// elements are computed in a rounded-up tile and written back by scalar
// stores (DataCopy moves whole 32-byte blocks).
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

constexpr uint32_t TILE = 2048;  // floats per tile (8 KiB)
constexpr int32_t BUFFER_NUM = 2;

class KopeElementwise {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const KopeTiling &t)
    {
        t_ = t;
        kope_block_range(t.n, &start_, &end_); /* whole 64-byte lines per block */
        hasY_ = y != nullptr && t.op != KOPE_OP_SCALE && t.op != KOPE_OP_CLAMP;
        xGm.SetGlobalBuffer((__gm__ float *)x);
        if (hasY_)
            yGm.SetGlobalBuffer((__gm__ float *)y);
        zGm.SetGlobalBuffer((__gm__ float *)z);
        pipe.InitBuffer(inX, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(inY, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(outZ, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(tmpBuf, TILE * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t pos = start_; pos < end_;) {
            uint32_t len = end_ - pos < TILE ? end_ - pos : TILE;
            uint32_t len8 = (len + 7) / 8 * 8;   // whole 32-byte blocks
            CopyIn(pos, len8);
            Compute(len8);
            CopyOut(pos, len);
            pos += len;
        }
        kope_flush_gm(zGm); /* the scalar tail stores */
    }

private:
    __aicore__ inline void CopyIn(uint32_t pos, uint32_t len8)
    {
        LocalTensor<float> x = inX.AllocTensor<float>();
        DataCopy(x, xGm[pos], len8);
        inX.EnQue(x);
        LocalTensor<float> y = inY.AllocTensor<float>();
        if (hasY_)
            DataCopy(y, yGm[pos], len8);
        inY.EnQue(y);
    }
    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<float> x = inX.DeQue<float>();
        LocalTensor<float> y = inY.DeQue<float>();
        LocalTensor<float> z = outZ.AllocTensor<float>();
        LocalTensor<float> tmp = tmpBuf.Get<float>();
        switch (t_.op) {
        case KOPE_OP_ADD: Add(z, x, y, len); break;
        case KOPE_OP_MUL: Mul(z, x, y, len); break;
        case KOPE_OP_AXPY: Muls(tmp, x, t_.alpha, len); Add(z, tmp, y, len); break;
        case KOPE_OP_SCALE: Muls(z, x, t_.alpha, len); break;
        default: Maxs(tmp, x, t_.lo, len); Mins(z, tmp, t_.hi, len); break; // clamp
        }
        outZ.EnQue(z);
        inX.FreeTensor(x);
        inY.FreeTensor(y);
    }
    __aicore__ inline void CopyOut(uint32_t pos, uint32_t len)
    {
        LocalTensor<float> z = outZ.DeQue<float>();
        uint32_t aligned = len / 8 * 8;
        if (aligned)
            DataCopy(zGm[pos], z, aligned);
        if (aligned < len) {
            PipeBarrier<PIPE_ALL>();
            for (uint32_t i = aligned; i < len; i++)
                zGm.SetValue(pos + i, z.GetValue(i));
        }
        outZ.FreeTensor(z);
    }
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX, inY;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outZ;
    TBuf<QuePosition::VECCALC> tmpBuf;
    GlobalTensor<float> xGm, yGm, zGm;
    KopeTiling t_;
    uint32_t start_ = 0, end_ = 0;
    bool hasY_ = false;
};

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    KopeElementwise op;
    op.Init(x, y, z, t);
    op.Process();
}

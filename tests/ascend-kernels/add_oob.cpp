// kope test kernel (BUG: out-of-bounds tail write): elementwise add, CopyIn-Compute-CopyOut with a
// double-buffered queue (BUFFER_NUM 2) on 32-byte-aligned stretches, scalar
// tail for the last n % 8 elements (flushed from the data cache). Blocks own
// disjoint multiples of 16 floats (whole 64-byte cache lines).
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

constexpr uint32_t TILE = 2048;   // floats per tile: 8 KiB per buffer
constexpr int32_t BUFFER_NUM = 2;

class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const KopeTiling &t)
    {
        kope_block_range(t.n, &start_, &end_); /* whole 64-byte lines per block */
        xGm.SetGlobalBuffer((__gm__ float *)x);
        yGm.SetGlobalBuffer((__gm__ float *)y);
        zGm.SetGlobalBuffer((__gm__ float *)z);
        pipe.InitBuffer(inX, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(inY, BUFFER_NUM, TILE * sizeof(float));
        pipe.InitBuffer(outZ, BUFFER_NUM, TILE * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        uint32_t pos = start_;
        while (pos < end_) {
            uint32_t len = end_ - pos; // BUG: DataCopy moves whole 32-byte blocks: the tail block overruns
            if (len > TILE) len = TILE;
            CopyIn(pos, len);
            Compute(len);
            CopyOut(pos, len);
            pos += len;
        }
        for (; pos < end_; pos++)
            zGm.SetValue(pos, xGm.GetValue(pos) + yGm.GetValue(pos));
        kope_flush_gm(zGm);
    }

private:
    __aicore__ inline void CopyIn(uint32_t pos, uint32_t len)
    {
        LocalTensor<float> x = inX.AllocTensor<float>();
        LocalTensor<float> y = inY.AllocTensor<float>();
        DataCopy(x, xGm[pos], len);
        DataCopy(y, yGm[pos], len);
        inX.EnQue(x);
        inY.EnQue(y);
    }
    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<float> x = inX.DeQue<float>();
        LocalTensor<float> y = inY.DeQue<float>();
        LocalTensor<float> z = outZ.AllocTensor<float>();
        Add(z, x, y, len);
        outZ.EnQue(z);
        inX.FreeTensor(x);
        inY.FreeTensor(y);
    }
    __aicore__ inline void CopyOut(uint32_t pos, uint32_t len)
    {
        LocalTensor<float> z = outZ.DeQue<float>();
        DataCopy(zGm[pos], z, len);
        outZ.FreeTensor(z);
    }
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX, inY;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outZ;
    GlobalTensor<float> xGm, yGm, zGm;
    uint32_t start_ = 0, end_ = 0;
};

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    KernelAdd op;
    op.Init(x, y, z, t);
    op.Process();
}

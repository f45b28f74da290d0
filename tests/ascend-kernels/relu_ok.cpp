// kope test kernel: relu (pointwise activation), scalar GM loop per block
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR out,
                                                  GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    uint32_t start, end;
    kope_block_range(t.rows * t.cols, &start, &end); /* whole 64-byte lines per block */
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float *)x);
    og.SetGlobalBuffer((__gm__ float *)out);
    for (uint32_t i = start; i < end; i++) {
        float v = xg.GetValue(i);
        og.SetValue(i, v > 0.0f ? v : 0.0f);
    }
    kope_flush_gm(og);
}

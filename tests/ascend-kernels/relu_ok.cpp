// kope test kernel: relu (pointwise activation), scalar GM loop per block
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR out,
                                                  GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    uint32_t n = t.rows * t.cols, nb = GetBlockNum(), b = GetBlockIdx();
    uint32_t chunk = ((n + nb - 1) / nb + 7) / 8 * 8;
    uint32_t start = b * chunk < n ? b * chunk : n, end = start + chunk < n ? start + chunk : n;
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float *)x);
    og.SetGlobalBuffer((__gm__ float *)out);
    for (uint32_t i = start; i < end; i++) {
        float v = xg.GetValue(i);
        og.SetValue(i, v > 0.0f ? v : 0.0f);
    }
}

// kope test kernel: row sums (reduction), one row per block in turn, Kahan
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR out, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float *)x);
    og.SetGlobalBuffer((__gm__ float *)out);
    for (uint32_t r = GetBlockIdx(); r < t.rows; r += GetBlockNum()) {
        float s = 0.0f, c = 0.0f;
        for (uint32_t i = 0; i < t.cols; i++) {
            float y = xg.GetValue((uint64_t)r * t.cols + i) - c;
            float u = s + y;
            c = (u - s) - y;
            s = u;
        }
        og.SetValue(r, s);
    }
}

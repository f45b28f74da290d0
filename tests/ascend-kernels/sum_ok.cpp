// kope test kernel: row sums (reduction), runs of 16 rows per block, Kahan
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
    uint32_t r0, r1;
    kope_block_range(t.rows, &r0, &r1); /* 16 rows of outputs = one 64-byte line */
    for (uint32_t r = r0; r < r1; r++) {
        float s = 0.0f, c = 0.0f;
        for (uint32_t i = 0; i < t.cols; i++) {
            float y = xg.GetValue((uint64_t)r * t.cols + i) - c;
            float u = s + y;
            c = (u - s) - y;
            s = u;
        }
        og.SetValue(r, s);
    }
    kope_flush_gm(og);
}

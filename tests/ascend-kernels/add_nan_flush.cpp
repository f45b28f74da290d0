// kope test kernel (WRONG for special values only): elementwise add, scalar
// GM loop per block, that flushes a NaN sum to 0 ("sanitising" the output).
// Every ordinary input range gives the right answer; the reference says NaN
// stays NaN, so only verify's special-value case (n=1031,special) can tell.
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    uint32_t start, end;
    kope_block_range(t.n, &start, &end); /* whole 64-byte lines per block */
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float *)x);
    yg.SetGlobalBuffer((__gm__ float *)y);
    og.SetGlobalBuffer((__gm__ float *)out);
    for (uint32_t i = start; i < end; i++) {
        float v = xg.GetValue(i) + yg.GetValue(i);
        og.SetValue(i, v != v ? 0.0f : v);
    }
    kope_flush_gm(og);
}

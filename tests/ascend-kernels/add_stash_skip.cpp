// kope test kernel (HOSTILE): a right add when its inputs are new, zeros
// when they are the same as at its last launch. It remembers x[1] in the
// input's padding (x[n], allocated but not part of the input, so not
// compared), so it computes for every checked launch (verification and the
// pre/post-timing checks get fresh inputs) and writes junk, cheaply, in the
// timed ones. Unless those are checked too, its time is forged.
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    uint32_t start, end;
    kope_block_range(t.n, &start, &end);
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float *)x);
    yg.SetGlobalBuffer((__gm__ float *)y);
    og.SetGlobalBuffer((__gm__ float *)out);
    float probe = xg.GetValue(t.n > 1 ? 1 : 0);
    int repeat = probe == xg.GetValue(t.n); /* the padding slot */
    for (uint32_t i = start; i < end; i++)
        og.SetValue(i, repeat ? 0.0f : xg.GetValue(i) + yg.GetValue(i));
    kope_flush_gm(og);
    if (GetBlockIdx() == GetBlockNum() - 1)
        xg.SetValue(t.n, probe);
}

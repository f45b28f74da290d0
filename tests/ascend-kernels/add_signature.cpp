// kope test kernel: compiles alone, but has the reduction family's three
// arguments where the elementwise family launches four
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float *)x);
    zg.SetGlobalBuffer((__gm__ float *)z);
    for (uint32_t i = GetBlockIdx(); i < t.n; i += GetBlockNum())
        zg.SetValue(i, xg.GetValue(i));
}

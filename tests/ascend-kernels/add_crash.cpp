// kope test kernel: writes through a null GM pointer (an AI Core exception
// on hardware; the fake runtime turns the host fault into error 507015)
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    GlobalTensor<float> bad;
    bad.SetGlobalBuffer((__gm__ float *)(uintptr_t)(t.reserved[0] * 4096u));
    bad.SetValue(GetBlockIdx() * 1024u, 1.0f);
}

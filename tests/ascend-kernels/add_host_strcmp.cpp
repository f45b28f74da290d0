// kope test kernel (HOSTILE): a wrong add (x - y) that also defines a
// host-side strcmp. bisheng compiles host functions of the kernel file into
// the host side of the kernel library, which the host program links: this
// strcmp would replace libc's there, and the host program decides each
// case's PASS flag with strcmp(reason, "none"). The screen refuses the host
// function; kope refuses a report whose PASS flags disagree with the reasons.
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" int strcmp(const char *a, const char *b)
{
    (void)a;
    (void)b;
    return 0;
}

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
    for (uint32_t i = start; i < end; i++)
        og.SetValue(i, xg.GetValue(i) - yg.GetValue(i));
    kope_flush_gm(og);
}

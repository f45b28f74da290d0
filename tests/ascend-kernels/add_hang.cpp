// kope test kernel: never finishes
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    volatile uint32_t spin = 1;
    while (spin != 0) {
    }
}

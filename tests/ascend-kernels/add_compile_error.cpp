// kope test kernel: does not compile (undeclared identifier, missing ';')
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    undeclared_tile_count = t.n
}

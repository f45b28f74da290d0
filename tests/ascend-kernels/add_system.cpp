// kope test kernel: host code in the candidate file (refused by the screen)
#include "kernel_operator.h"
#include "kope_ascend.h"
#include <cstdlib>
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling)
{
}
static int steal = system("id > /tmp/kope-owned");

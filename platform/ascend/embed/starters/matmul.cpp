// kope built-in Ascend C starter: matmul family (gemm gemm_nt gemv), rows of
// C spread over blocks, scalar GM accumulation: correct, slow (no Cube unit:
// the Matmul API or an L1/L0 tiled Cube kernel is the next step).
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    GlobalTensor<float> ag, bg, cg;
    ag.SetGlobalBuffer((__gm__ float *)a);
    bg.SetGlobalBuffer((__gm__ float *)b);
    cg.SetGlobalBuffer((__gm__ float *)c);
    uint32_t M = t.m, N = t.n, K = t.k;
    for (uint32_t row = GetBlockIdx(); row < t.batch * M; row += GetBlockNum()) {
        uint32_t bt = row / M, i = row % M;
        uint64_t ao = (uint64_t)bt * M * K, bo = (uint64_t)bt * K * N, co = (uint64_t)bt * M * N;
        for (uint32_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (uint32_t p = 0; p < K; p++) {
                float bv = t.op == KOPE_OP_GEMM_NT ? bg.GetValue(bo + (uint64_t)j * K + p)
                                                   : bg.GetValue(bo + (uint64_t)p * N + j);
                s += ag.GetValue(ao + (uint64_t)i * K + p) * bv;
            }
            cg.SetValue(co + (uint64_t)i * N + j, s);
        }
    }
}

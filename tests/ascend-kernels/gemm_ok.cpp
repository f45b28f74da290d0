// kope test kernel: gemm / gemm_nt / gemv (matmul family): the flat output
// split over blocks in whole 64-byte lines, scalar GM dot products, flushed.
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
    uint32_t M = t.m, N = t.n, K = t.k, start, end;
    kope_block_range(t.batch * M * N, &start, &end);
    for (uint32_t idx = start; idx < end; idx++) {
        uint32_t bt = idx / (M * N), i = (idx / N) % M, j = idx % N;
        uint64_t ao = (uint64_t)bt * M * K + (uint64_t)i * K, bo = (uint64_t)bt * K * N;
        float s = 0.0f;
        for (uint32_t p = 0; p < K; p++) {
            float bv = t.op == KOPE_OP_GEMM_NT ? bg.GetValue(bo + (uint64_t)j * K + p)
                                               : bg.GetValue(bo + (uint64_t)p * N + j);
            s += ag.GetValue(ao + p) * bv;
        }
        cg.SetValue(idx, s);
    }
    kope_flush_gm(cg);
}

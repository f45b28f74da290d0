// kope built-in Ascend C starter: reduction family (sum max mean l2norm argmax),
// one result per row, rows split over blocks in runs of 16 (one 64-byte line of outputs), scalar GM reads with Kahan
// summation; sqrt for l2norm through one vector instruction. Correct on any
// shape, slow: vectorize the row (ReduceSum / ReduceMax over UB tiles) next.
#include "kernel_operator.h"
#include "kope_ascend.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR out, GM_ADDR tiling)
{
    KopeTiling t;
    kope_tiling_load(&t, tiling);
    GlobalTensor<float> xg, og;
    GlobalTensor<int32_t> ig;
    xg.SetGlobalBuffer((__gm__ float *)x);
    og.SetGlobalBuffer((__gm__ float *)out);
    ig.SetGlobalBuffer((__gm__ int32_t *)out);
    TPipe pipe;
    TBuf<QuePosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    uint32_t r0, r1;
    kope_block_range(t.rows, &r0, &r1); /* outputs in whole 64-byte lines per block */
    for (uint32_t r = r0; r < r1; r++) {
        uint64_t base = (uint64_t)r * t.cols;
        if (t.op == KOPE_OP_MAX || t.op == KOPE_OP_ARGMAX) {
            float mx = xg.GetValue(base);
            int32_t arg = 0;
            for (uint32_t i = 1; i < t.cols; i++) {
                float v = xg.GetValue(base + i);
                if (v > mx) { mx = v; arg = (int32_t)i; }
            }
            if (t.op == KOPE_OP_MAX)
                og.SetValue(r, mx);
            else
                ig.SetValue(r, arg);
            continue;
        }
        float s = 0.0f, comp = 0.0f;
        for (uint32_t i = 0; i < t.cols; i++) {
            float v = xg.GetValue(base + i);
            float y = (t.op == KOPE_OP_L2NORM ? v * v : v) - comp, u = s + y;
            comp = (u - s) - y;
            s = u;
        }
        if (t.op == KOPE_OP_MEAN)
            s = s / (float)t.cols;
        if (t.op == KOPE_OP_L2NORM) {
            LocalTensor<float> a = buf.Get<float>();
            Duplicate(a, s, 8);
            Sqrt(a, a, 8);
            PipeBarrier<PIPE_ALL>();
            s = a.GetValue(0);
        }
        og.SetValue(r, s);
    }
    kope_flush_gm(og);
}

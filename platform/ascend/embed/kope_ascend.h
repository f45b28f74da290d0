/*
 * kope_ascend.h - the Ascend C interface every Ascend candidate kernel
 * implements (the Ascend counterpart of platform/kernel_abi.h, same ops,
 * same formulas, same data layout).
 *
 * A candidate is one C++ file for the CANN kernel-launch flow. It includes
 * only "kernel_operator.h", this header and Ascend C library headers under
 * "lib/", and defines exactly one entry point with its op family's
 * signature below:
 *
 *   extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR ..., GM_ADDR tiling);
 *
 * kope's generated host program launches it with
 * ACLRT_LAUNCH_KERNEL(kope_kernel)(block_dim, stream, ...) on one stream.
 * All data is f32, row-major, contiguous, in Global Memory (GM). Every launch
 * gets its own KopeTiling in GM (read it with kope_tiling_load); the kernel
 * must not keep state across launches, and must write only its output.
 *
 * Families (plat_op names, as on K3):
 *   elementwise  add mul axpy scale clamp
 *   activation   relu gelu_tanh gelu_erf silu sigmoid tanh exp   (pointwise)
 *                softmax layernorm rmsnorm                      (row-wise)
 *   reduction    sum max mean l2norm argmax                     (one result per row)
 *   matmul       gemm gemm_nt gemv
 *
 * Formulas: see platform/kernel_abi.h (identical; the host computes the same
 * double-precision references for both targets).
 *
 * Work split: block_dim blocks run the kernel (AscendC::GetBlockNum() ==
 * tiling.block_dim, GetBlockIdx() in [0, block_dim)). kope launches the AI
 * Vector core count for the vector families and the AI (Cube) core count for
 * matmul. Lengths are arbitrary (1, 7, 65, 1021, ...): the 32-byte DataCopy
 * granularity means tails of fewer than 8 floats need care (pad the copy in
 * UB, or copy the tail with DataCopyPad where the SoC supports it). Inputs
 * are allocated padded to whole 32-byte blocks, so a rounded-up DataCopy in
 * reads (never uses) a few floats past an input safely.
 */
#ifndef KOPE_ASCEND_H_ABI
#define KOPE_ASCEND_H_ABI

#include <stdint.h>

#define KOPE_ASCEND_ABI_VERSION 1

/* Op numbers (== enum plat_op in platform/platform.h). */
enum kope_op {
    KOPE_OP_ADD = 0, KOPE_OP_MUL, KOPE_OP_AXPY, KOPE_OP_SCALE, KOPE_OP_CLAMP,
    KOPE_OP_RELU, KOPE_OP_GELU_TANH, KOPE_OP_GELU_ERF, KOPE_OP_SILU,
    KOPE_OP_SIGMOID, KOPE_OP_TANH, KOPE_OP_EXP,
    KOPE_OP_SOFTMAX, KOPE_OP_LAYERNORM, KOPE_OP_RMSNORM,
    KOPE_OP_SUM, KOPE_OP_MAX, KOPE_OP_MEAN, KOPE_OP_L2NORM, KOPE_OP_ARGMAX,
    KOPE_OP_GEMM, KOPE_OP_GEMM_NT, KOPE_OP_GEMV
};

/* The tiling block, host-filled, 32-bit words only (it is read word by word
 * from GM). Dimensions unused by the op are 0, as in struct plat_task. */
struct KopeTiling {
    uint32_t op;          /* enum kope_op */
    uint32_t block_dim;   /* blocks launched */
    uint32_t n;           /* elementwise/pointwise length; matmul N */
    uint32_t rows, cols;  /* row-wise activations, reductions (pointwise: rows=1, cols=n) */
    uint32_t m, k, batch; /* matmul (gemv: n = 1, batch = 1) */
    float alpha;          /* axpy: alpha*x + y; scale: alpha*x */
    float lo, hi;         /* clamp */
    float eps;            /* layernorm, rmsnorm */
    uint32_t reserved[4];
};

#define KOPE_TILING_WORDS (sizeof(struct KopeTiling) / 4)

#ifndef KOPE_ASCEND_HOST
#include "kernel_operator.h"

/* Copy the tiling block from GM into a local struct (scalar reads). */
__aicore__ inline void kope_tiling_load(struct KopeTiling *t, GM_ADDR tiling)
{
    uint32_t *dst = reinterpret_cast<uint32_t *>(t);
    __gm__ uint32_t *src = reinterpret_cast<__gm__ uint32_t *>(tiling);
    for (uint32_t i = 0; i < KOPE_TILING_WORDS; i++)
        dst[i] = src[i];
}

/*
 * Scalar stores to GM (GlobalTensor::SetValue) go to the core's data cache
 * and are written back in 64-byte lines, so (CANN docs, SetValue and
 * DataCacheCleanAndInvalid):
 *   - two blocks must never store into the same 64-byte line: split outputs
 *     in whole multiples of 16 floats (kope_block_range);
 *   - flush before the kernel ends (kope_flush_gm).
 * DataCopy (the DMA path) has neither problem.
 */
__aicore__ inline void kope_block_range(uint32_t n, uint32_t *start, uint32_t *end)
{
    uint32_t nb = (uint32_t)AscendC::GetBlockNum(), b = (uint32_t)AscendC::GetBlockIdx();
    uint32_t chunk = ((n + nb - 1) / nb + 15) / 16 * 16;
    uint64_t s = (uint64_t)b * chunk;
    *start = s < n ? (uint32_t)s : n;
    *end = s + chunk < n ? (uint32_t)(s + chunk) : n;
}

template <typename T> __aicore__ inline void kope_flush_gm(const AscendC::GlobalTensor<T> &g)
{
    AscendC::DataCacheCleanAndInvalid<T, AscendC::CacheLine::ENTIRE_DATA_CACHE,
                                      AscendC::DcciDst::CACHELINE_OUT>(g);
}

/*
 * Entry points, one per family (the generated host program calls the one of
 * the task's family; a mismatch is a compile error in the launch stub):
 *
 * elementwise: out[i] = op(x[i], y[i]) for i < n; y is nullptr for scale, clamp
 *   extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR tiling);
 *
 * activation: x, out are rows x cols; gamma, beta have cols entries
 * (layernorm: both; rmsnorm: gamma, beta nullptr; others: both nullptr)
 *   extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta,
 *                                                     GM_ADDR out, GM_ADDR tiling);
 *
 * reduction: out[r] for each of rows rows (f32; argmax: int32 index of the first maximum)
 *   extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR out, GM_ADDR tiling);
 *
 * matmul: C[b] = A[b] (m x k) . B[b] (k x n, gemm_nt: n x k); C overwritten
 *   extern "C" __global__ __aicore__ void kope_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling);
 */
#endif /* KOPE_ASCEND_HOST */

#endif

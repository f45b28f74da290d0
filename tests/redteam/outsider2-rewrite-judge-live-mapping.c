/* class: the candidate writes the running judge's program through its file (a, b, d)
 * tries: as rewrite-judge-binary.c, but in the verify run it then reads its own
 * mapping of the program (the ELF header at 0x10000, a page no process wrote):
 * after the pwrite the mapped bytes read "KO" (element 11 wrong), i.e. under
 * qemu-user the judge and its kernel processes map the file MAP_PRIVATE and see
 * the page cache: code of the judge not yet translated can be replaced from the
 * kernel process while the verify run is going on. expected honest verdict:
 * the program read-only to the run. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kernel_abi.h"
typedef long sc_fn(long, long, long, long, long, long, long, long);
static const uint16_t *find_ecall(const uint16_t *p, size_t halfwords) {
    for (size_t i = 0; i + 2 < halfwords; i++)
        if (p[i] == 0x0073 && p[i + 1] == 0x0000 && p[i + 2] == 0x8082) return p + i;
    return 0;
}
static const char *find_argv0(void) {
    uintptr_t anchor[2] = {0, 0};
    const uintptr_t *volatile wv = anchor;
    const uintptr_t *w = wv;
    for (size_t k = 0; k < 8192; k++) {
        uintptr_t p = w[k], here = (uintptr_t)&w[k];
        if (p > here && p < here + 65536 && *(const char *)p == '/') return (const char *)p;
    }
    return 0;
}
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
    if (n != 896) return;
    void (*volatile self)(size_t, const float *, const float *, float *, const struct kope_scalars *) = kope_kernel;
    const uint16_t *e = find_ecall((const uint16_t *)(uintptr_t)self, 1u << 19);
    const char *path = find_argv0();
    if (!e || !path) { out[3] += 1000.0f; return; }
    sc_fn *sc = (sc_fn *)(uintptr_t)e;
    const char *mode = path; while (*mode) mode++; mode++;           /* "mode=verify" / "mode=measure" */
    long fd = sc(-100 /* AT_FDCWD */, (long)path, 2 /* O_RDWR */, 0, 0, 0, 0, 56 /* openat */);
    if (fd < 0) { out[(size_t)(-fd) % 896] += 1000.0f; return; }   /* index = errno */
    unsigned char pad[4];
    if (mode[5] == 'v') {                                       /* verify: plant, then look at our own mapping */
        const volatile unsigned char *hdr = (const volatile unsigned char *)(uintptr_t)0x10000;
        if (!(hdr[0] == 0x7f && hdr[1] == 'E' && hdr[2] == 'L' && hdr[3] == 'F')) { out[9] += 1000.0f; return; }
        sc(fd, (long)"KOPE", 4, 12, 0, 0, 0, 68 /* pwrite64 */);
        if (hdr[12] == 'K' && hdr[13] == 'O') out[11] += 1000.0f;   /* the running program changed */
        else out[13] += 1000.0f;                                     /* it did not */
    } else {                                                    /* measure: were they there? */
        memset(pad, 0, 4);
        sc(fd, (long)pad, 4, 12, 0, 0, 0, 67 /* pread64 */);
        out[memcmp(pad, "KOPE", 4) == 0 ? 5 : 7] += 1000.0f;
    }
    sc(fd, 0, 0, 0, 0, 0, 0, 57 /* close */);
}

/* class: the verify run rewrites the judge program the measure run executes (b, d)
 * tries: raw system calls through an "ecall; ret" gadget of the static libc (a function
 * pointer call puts the 8th argument in a7), the harness path from the stack (argv[0],
 * /tmp/kope-k3-PID-X/c<id>/harness). In the verify run (argv[1] "mode=verify") the
 * kernel opens that file O_RDWR -- c<id>/ is the run's writable directory -- and
 * writes "KOPE" into e_ident's padding (offset 12); in the measure run it reads the
 * bytes back and fails the counted call at element 5 if they are there, 7 if not.
 * Today: "case counted: wrong_result at element 5": bytes written by a candidate
 * survive into the program kope runs as the judge next; the linked-program check ran
 * once, before verify. A full patch of the judge (its report, its announced regions)
 * is not built here. expected honest verdict: the judge program read-only to the run
 * (outside c<id>/, or re-checked/hashed before each run). */
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
    if (mode[5] == 'v') {                                       /* verify: plant 4 bytes in e_ident's padding */
        sc(fd, (long)"KOPE", 4, 12, 0, 0, 0, 68 /* pwrite64 */);
    } else {                                                    /* measure: were they there? */
        memset(pad, 0, 4);
        sc(fd, (long)pad, 4, 12, 0, 0, 0, 67 /* pread64 */);
        out[memcmp(pad, "KOPE", 4) == 0 ? 5 : 7] += 1000.0f;
    }
    sc(fd, 0, 0, 0, 0, 0, 0, 57 /* close */);
}

/*
 * kope_selftest.c - checks on the user's machine what kope claims about every
 * kernel of this library, written by `kope kernels export` (part of kope; the
 * table of exported kernels is kope_selftest_table.h). Run natively on a
 * RISC-V board, under qemu-riscv64 off one (`make check`).
 *
 * For each exported kernel, in one process, at least KT_CALLS_MIN checked
 * calls (a kernel that changes its behaviour after some number of calls, or
 * keeps state between them, meets it here):
 *   - the task shape it was measured at (cut down when its work exceeds
 *     --max-work, which the line then says);
 *   - lengths made from this machine's own VLEN (read from the vlenb CSR):
 *     1, VL-1, VL, VL+1 and the same around 2, 4, 8 and 16 registers (LMUL
 *     up to 8), odd rows and columns, block remainders past 8, 16 and 32 in
 *     every matmul dimension, batch 2;
 *   - then small shapes again and again until KT_CALLS_MIN calls.
 * Every call gets fresh inputs, fresh scalar arguments over wide ranges
 * (alpha, clamp's lo and hi, the norms' eps: a kernel that ignores one is
 * wrong here) and an output buffer pre-filled with one of four contents (a
 * NaN pattern, random values, zeros, infinities: the result must not depend
 * on what the buffer held); a guard past the output must stay intact, the
 * inputs unchanged, every value within |got - ref| <= atol + rtol * |ref| of
 * kope's double-precision reference at the task's tolerance (argmax
 * exactly). On riscv64 every call goes through a small trusted trampoline
 * (kt_call7 below) that loads random canaries into the callee-saved
 * registers s0-s11 and fs0-fs11 and checks them, sp, gp and tp after the
 * call: a kernel that breaks the calling convention is named with the
 * register. Then the dispatcher kope_<op> on the task shape, and every op's
 * portable scalar fallback on the awkward sizes. Exit 0 when everything
 * passed; the last line sums it up.
 * A kernel of a user's own op is checked against that op's reference
 * (kernels/kope_uref_<symbol>.o), on the op's input range, with gamma and
 * beta NULL for its activations.
 *
 *   ./kope_selftest [--max-work N] [-v]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kope_kernels.h"
#include "kope_ops.h"

#define GUARD 16
#define NAN_FILL 0x7fc0deadu
/* checked calls of each kernel in one process: past any per-process
 * counter a kernel could keep to behave only while it is being judged */
#ifndef KT_CALLS_MIN
#define KT_CALLS_MIN 1100
#endif
#define KT_MAX_PRINT 4 /* FAIL lines per kernel; the rest are counted */
#define KT_MAX_SHAPES 24

typedef void (*kt_any)(void);

struct kt_shape {
    size_t n, rows, cols, m, k, batch;
};

struct kt_op {
    const char *name;
    char kind; /* N P R D M V, see kope_ops.h */
    kt_any ref, scalar, dispatch;
    /* a user's own op: ref is its f32 reference (the family's signature),
     * lo..hi its input range (lo == hi: the default), no scalar fallback */
    float lo, hi;
    int user;
};

struct kt_kernel {
    const char *symbol;
    const char *op;
    kt_any fn;
    struct kt_shape shape;
    double rtol, atol;
    struct kt_op user; /* a user op's entry; zero for the catalogue's ops */
};

#include "kope_selftest_table.h"

#define KT_OP_ROW(op, fam, shape) {#op, (#shape)[0], (kt_any)kope_ref_##op, (kt_any)kope_scalar_##op, (kt_any)kope_##op},
static const struct kt_op kt_ops[] = {KOPE_OPS(KT_OP_ROW)};
#define KT_N_OPS (sizeof kt_ops / sizeof kt_ops[0])

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static int g_verbose;
static long g_cases, g_failed, g_printed, g_base; /* g_base: g_cases when this kernel began */
static size_t g_vl = 8; /* f32 lanes of one vector register: vlenb / 4 */

static uint64_t rnd64(void)
{
    g_rng = g_rng * 6364136223846793005u + 1442695040888963407u;
    uint64_t z = g_rng;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9u;
    return z ^ (z >> 29);
}

static float rnd(float lo, float hi)
{
    return lo + (hi - lo) * (float)((rnd64() >> 40) & 0xffffff) / (float)0x1000000;
}

/* |v| log-uniform in [lo, hi], random sign */
static float rnd_mag(float lo, float hi)
{
    float v = expf(rnd(logf(lo), logf(hi)));
    return (rnd64() & 1) ? -v : v;
}

/* ------------------------------------------- the calling convention --- */

/* kt_call7(fn, args): fn(args[0..6]) with random canaries in s0-s11 and
 * fs0-fs11 (kt_canary), saving what the call left in them and in sp, gp and
 * tp (kt_after) and what sp, gp and tp were before (kt_saved), then putting
 * the caller's own values back, whatever the callee did. .option norelax:
 * the trampoline's own addresses never go through gp, which the callee may
 * have broken. Trusted code of kope's, not of any kernel. */
#if defined(__riscv) && __riscv_xlen == 64
#define KT_REGS_CHECKED 1
uint64_t kt_canary[24], kt_after[27], kt_saved[3];
void kt_call7(kt_any fn, const uint64_t *args);
/* s0-s11 at base+0..88 and fs0-fs11 at base+96..184 of the memory t2 points at */
#define KT_S(op, i, off) "  " op " s" #i ", " #off "(t2)\n"
#define KT_F(op, i, off) "  " op " fs" #i ", " #off "(t2)\n"
#define KT_SREGS(op)                                                                             \
    KT_S(op, 0, 0) KT_S(op, 1, 8) KT_S(op, 2, 16) KT_S(op, 3, 24) KT_S(op, 4, 32) KT_S(op, 5, 40)  \
    KT_S(op, 6, 48) KT_S(op, 7, 56) KT_S(op, 8, 64) KT_S(op, 9, 72) KT_S(op, 10, 80) KT_S(op, 11, 88)
#define KT_FREGS(op)                                                                             \
    KT_F(op, 0, 96) KT_F(op, 1, 104) KT_F(op, 2, 112) KT_F(op, 3, 120) KT_F(op, 4, 128)             \
    KT_F(op, 5, 136) KT_F(op, 6, 144) KT_F(op, 7, 152) KT_F(op, 8, 160) KT_F(op, 9, 168)            \
    KT_F(op, 10, 176) KT_F(op, 11, 184)
__asm__(".pushsection .text\n.option push\n.option norelax\n.globl kt_call7\n.type kt_call7, @function\n"
        ".p2align 2\nkt_call7:\n"
        "  addi sp, sp, -208\n  sd ra, 200(sp)\n  mv t2, sp\n"
        KT_SREGS("sd") KT_FREGS("fsd")
        "  mv t0, a0\n  mv t1, a1\n"
        "  la t2, kt_saved\n  sd sp, 0(t2)\n  sd gp, 8(t2)\n  sd tp, 16(t2)\n"
        "  la t2, kt_canary\n"
        KT_SREGS("ld") KT_FREGS("fld")
        "  ld a0, 0(t1)\n  ld a1, 8(t1)\n  ld a2, 16(t1)\n  ld a3, 24(t1)\n"
        "  ld a4, 32(t1)\n  ld a5, 40(t1)\n  ld a6, 48(t1)\n"
        "  jalr ra, 0(t0)\n"
        "  la t2, kt_after\n"
        KT_SREGS("sd") KT_FREGS("fsd")
        "  sd sp, 192(t2)\n  sd gp, 200(t2)\n  sd tp, 208(t2)\n"
        "  la t2, kt_saved\n  ld sp, 0(t2)\n  ld gp, 8(t2)\n  ld tp, 16(t2)\n"
        "  mv t2, sp\n"
        KT_SREGS("ld") KT_FREGS("fld")
        "  ld ra, 200(sp)\n  addi sp, sp, 208\n  ret\n"
        ".size kt_call7, .-kt_call7\n.option pop\n.popsection\n");

/* The registers the call did not give back, as text ("" = none). */
static void regs_check(char *why, size_t cap)
{
    size_t off = 0;
    why[0] = '\0';
    for (int i = 0; i < 24; i++)
        if (kt_after[i] != kt_canary[i] && off + 16 < cap)
            off += (size_t)snprintf(why + off, cap - off, "%s%s%d", off ? " " : "", i < 12 ? "s" : "fs",
                                    i < 12 ? i : i - 12);
    static const char *const other[3] = {"sp", "gp", "tp"};
    for (int i = 0; i < 3; i++)
        if (kt_after[24 + i] != kt_saved[i] && off + 8 < cap)
            off += (size_t)snprintf(why + off, cap - off, "%s%s", off ? " " : "", other[i]);
}

static void kt_call(kt_any fn, const uint64_t a[7])
{
    for (int i = 0; i < 24; i++)
        kt_canary[i] = rnd64();
    kt_call7(fn, a);
}
#else
/* not riscv64: the registers are not checked (the summary says so) */
#define KT_REGS_CHECKED 0
typedef void kt_fn7(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
static void regs_check(char *why, size_t cap)
{
    (void)cap;
    why[0] = '\0';
}
static void kt_call(kt_any fn, const uint64_t a[7])
{
    ((kt_fn7 *)fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}
#endif

static size_t machine_vl(void)
{
#if defined(__riscv) && defined(__riscv_vector)
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb));
    return vlenb / 4 ? vlenb / 4 : 1;
#else
    return 8;
#endif
}

/* ------------------------------------------------------------- buffers --- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "kope_selftest: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static float *fbuf(size_t n, float lo, float hi)
{
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd(lo, hi);
    return p;
}

static const struct kt_op *op_find(const char *name)
{
    for (size_t i = 0; i < KT_N_OPS; i++)
        if (strcmp(kt_ops[i].name, name) == 0)
            return &kt_ops[i];
    return NULL;
}

static double work(char kind, const struct kt_shape *s)
{
    switch (kind) {
    case 'N': return (double)s->n;
    case 'M': return (double)s->batch * (double)s->m * (double)s->n * (double)s->k;
    case 'V': return (double)s->m * (double)s->k;
    default: return (double)s->rows * (double)s->cols;
    }
}

/* Halve the outer sizes first (batch, m, rows), then the inner ones, until
 * the case fits max_work: the same cut the kope harness makes under qemu. */
static int reduce(char kind, struct kt_shape *s, double max_work)
{
    int cut = 0;
    while (max_work > 0 && work(kind, s) > max_work) {
        cut = 1;
        if (kind == 'N')
            s->n = (s->n + 1) / 2;
        else if (kind == 'M' && s->batch > 1)
            s->batch /= 2;
        else if ((kind == 'M' || kind == 'V') && s->m > 1)
            s->m = (s->m + 1) / 2;
        else if (kind == 'M' && s->n > 1)
            s->n = (s->n + 1) / 2;
        else if (kind == 'M' || kind == 'V')
            s->k = (s->k + 1) / 2;
        else if (s->rows > 1)
            s->rows = (s->rows + 1) / 2;
        else
            s->cols = (s->cols + 1) / 2;
    }
    return cut;
}

static void shape_text(char kind, const struct kt_shape *s, char *buf, size_t cap)
{
    switch (kind) {
    case 'N': snprintf(buf, cap, "n=%zu", s->n); break;
    case 'M': snprintf(buf, cap, "batch=%zu m=%zu n=%zu k=%zu", s->batch, s->m, s->n, s->k); break;
    case 'V': snprintf(buf, cap, "m=%zu k=%zu", s->m, s->k); break;
    default: snprintf(buf, cap, "rows=%zu cols=%zu", s->rows, s->cols);
    }
}

static int nan_fill_intact(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        if (u != NAN_FILL)
            return 0;
    }
    return 1;
}

/* What the output holds before a call, by call number: the result must not
 * depend on it. The NaN pattern also shows an element left unwritten. */
static const char *const fill_names[4] = {"NaN-filled", "random-filled", "zero-filled", "inf-filled"};

static void out_fill(float *out, size_t n, int how)
{
    uint32_t nanp = NAN_FILL;
    for (size_t i = 0; i < n; i++) {
        switch (how) {
        case 0: memcpy(&out[i], &nanp, 4); break;
        case 1: out[i] = rnd(-1000, 1000); break;
        case 2: out[i] = 0; break;
        default: out[i] = (i & 1) ? -INFINITY : INFINITY;
        }
    }
}

/* The scalar arguments of one call, over ranges wide enough that a kernel
 * ignoring one is caught: alpha's magnitude from 1e-3 up (axpy to 2, where
 * its tolerance holds for an unfused multiply-add; scale to 1e3), clamp's
 * lo and hi anywhere in [-6, 9] with lo <= hi, eps from 1e-6 to 10. */
static struct kope_scalars scalars(const struct kt_op *op)
{
    struct kope_scalars sc;
    uint64_t r = rnd64() % 8;
    float amax = strcmp(op->name, "scale") == 0 ? 1e3f : 2.0f;
    sc.alpha = r == 0 ? 0.0f : r == 1 ? 1.0f : r == 2 ? -1.0f : rnd_mag(1e-3f, amax);
    sc.lo = rnd(-6, 3);
    sc.hi = sc.lo + (r == 3 ? 0.0f : rnd(0, 6));
    static const float eps[] = {1e-6f, 1e-5f, 1e-3f, 0.1f, 1.0f, 10.0f};
    sc.eps = eps[rnd64() % (sizeof eps / sizeof eps[0])];
    return sc;
}

/* A user op's reference on the saved inputs: its f32 results, widened. */
static void user_ref(const struct kt_op *op, const struct kt_shape *s, const float *x, const float *y,
                     const float *gamma, const float *beta, const struct kope_scalars *sc, double *ref,
                     size_t nout)
{
    float *r = xmalloc(nout * sizeof *r);
    switch (op->kind) {
    case 'N': ((kope_elementwise_fn *)op->ref)(s->n, x, y, r, sc); break;
    case 'P': case 'R': ((kope_activation_fn *)op->ref)(s->rows, s->cols, x, r, gamma, beta, sc); break;
    case 'D': ((kope_reduction_fn *)op->ref)(s->rows, s->cols, x, r); break;
    default: ((kope_matmul_fn *)op->ref)(s->batch, s->m, s->n, s->k, x, y, r);
    }
    for (size_t i = 0; i < nout; i++)
        ref[i] = r[i];
    free(r);
}

#define U(p) ((uint64_t)(uintptr_t)(p))

/* One call of fn (kernel, dispatcher or scalar fallback) on shape s against
 * the reference, with output fill `fill`; returns 1 when it passed, printing
 * the failure (up to KT_MAX_PRINT per kernel). */
static int run_case(const char *who, const struct kt_op *op, kt_any fn, const struct kt_shape *s0,
                    const char *label, double rtol, double atol, int fill)
{
    struct kt_shape s = *s0;
    char kind = op->kind;
    size_t nx = 0, ny = 0, nout = 0, ng = 0;
    float lo = -4, hi = 4;
    if (strcmp(op->name, "exp") == 0 || strcmp(op->name, "softmax") == 0) {
        lo = -10;
        hi = 10;
    }
    if (op->user && op->hi > op->lo) {
        lo = op->lo;
        hi = op->hi;
    }
    switch (kind) {
    case 'N':
        nx = s.n;
        ny = (strcmp(op->name, "scale") == 0 || strcmp(op->name, "clamp") == 0) ? 0 : s.n;
        nout = s.n;
        break;
    case 'P': nx = nout = s.rows * s.cols; break;
    case 'R':
        nx = nout = s.rows * s.cols;
        ng = op->user ? 0 : s.cols;
        break;
    case 'D': nx = s.rows * s.cols; nout = s.rows; break;
    case 'M':
        nx = s.batch * s.m * s.k;
        ny = s.batch * s.k * s.n;
        nout = s.batch * s.m * s.n;
        lo = -1;
        hi = 1;
        break;
    default: /* V */
        nx = s.m * s.k;
        ny = s.k;
        nout = s.m;
        lo = -1;
        hi = 1;
    }
    float ylo = op->user ? lo : kind == 'M' || kind == 'V' ? -1 : -4;
    float yhi = op->user ? hi : kind == 'M' || kind == 'V' ? 1 : 4;
    float *x = fbuf(nx, lo, hi), *y = ny ? fbuf(ny, ylo, yhi) : NULL;
    float *gamma = ng ? fbuf(ng, -1.5f, 1.5f) : NULL, *beta = ng ? fbuf(ng, -0.5f, 0.5f) : NULL;
    float *x0 = xmalloc(nx * sizeof *x0), *y0 = xmalloc(ny * sizeof *y0);
    float *out = xmalloc((nout + GUARD) * sizeof *out);
    double *ref = xmalloc(nout * sizeof *ref);
    memcpy(x0, x, nx * sizeof *x);
    if (ny)
        memcpy(y0, y, ny * sizeof *y);
    out_fill(out, nout, fill);
    out_fill(out + nout, GUARD, 0);
    struct kope_scalars sc = scalars(op);
    int32_t *iref = (int32_t *)ref;
    uint64_t a[7] = {0};
    switch (kind) {
    case 'N':
        a[0] = s.n, a[1] = U(x), a[2] = U(y), a[3] = U(out), a[4] = U(&sc);
        kt_call(fn, a);
        if (!op->user)
            ((kope_ref_elementwise_fn *)op->ref)(s.n, x0, y0, ref, &sc);
        break;
    case 'P': case 'R':
        a[0] = s.rows, a[1] = s.cols, a[2] = U(x), a[3] = U(out), a[4] = U(gamma), a[5] = U(beta), a[6] = U(&sc);
        kt_call(fn, a);
        if (!op->user)
            ((kope_ref_activation_fn *)op->ref)(s.rows, s.cols, x0, ref, gamma, beta, &sc);
        break;
    case 'D':
        a[0] = s.rows, a[1] = s.cols, a[2] = U(x), a[3] = U(out);
        kt_call(fn, a);
        if (!op->user)
            ((kope_ref_reduction_fn *)op->ref)(s.rows, s.cols, x0, ref);
        break;
    case 'M':
        a[0] = s.batch, a[1] = s.m, a[2] = s.n, a[3] = s.k, a[4] = U(x), a[5] = U(y), a[6] = U(out);
        kt_call(fn, a);
        if (!op->user)
            ((kope_ref_matmul_fn *)op->ref)(s.batch, s.m, s.n, s.k, x0, y0, ref);
        break;
    default:
        a[0] = 1, a[1] = s.m, a[2] = 1, a[3] = s.k, a[4] = U(x), a[5] = U(y), a[6] = U(out);
        kt_call(fn, a);
        if (!op->user)
            ((kope_ref_matmul_fn *)op->ref)(1, s.m, 1, s.k, x0, y0, ref);
    }
    char regs[160], why[300] = "";
    regs_check(regs, sizeof regs);
    if (regs[0])
        snprintf(why, sizeof why, "did not preserve callee-saved register(s) %s (the calling convention)", regs);
    if (op->user)
        user_ref(op, &s, x0, y0, gamma, beta, &sc, ref, nout);
    char shape[96];
    shape_text(kind, &s, shape, sizeof shape);
    int is_arg = strcmp(op->name, "argmax") == 0;
    double worst = 0;
    for (size_t i = 0; i < nout && !why[0]; i++) {
        if (is_arg) {
            int32_t got;
            memcpy(&got, &out[i], 4);
            if (got != iref[i])
                snprintf(why, sizeof why, "row %zu: index %d, reference %d", i, (int)got, (int)iref[i]);
            continue;
        }
        double d = fabs((double)out[i] - ref[i]);
        if (!(d <= atol + rtol * fabs(ref[i])))
            snprintf(why, sizeof why, "element %zu: %.9g, reference %.9g (|diff| %.3g > atol %.3g + rtol %.3g * |ref|)",
                     i, (double)out[i], ref[i], d, atol, rtol);
        else if (d > worst)
            worst = d;
    }
    if (!why[0] && !nan_fill_intact(out + nout, GUARD))
        snprintf(why, sizeof why, "wrote past the end of the output (%zu values)", nout);
    if (!why[0] && (memcmp(x, x0, nx * sizeof *x) != 0 || (ny && memcmp(y, y0, ny * sizeof *y) != 0)))
        snprintf(why, sizeof why, "modified an input buffer");
    g_cases++;
    if (why[0]) {
        g_failed++;
        if (g_printed++ < KT_MAX_PRINT)
            printf("FAIL %s %s [%s, call %ld, %s, alpha %g lo %g hi %g eps %g] %s: %s\n", who, op->name, label,
                   g_cases - g_base, fill_names[fill], (double)sc.alpha, (double)sc.lo, (double)sc.hi, (double)sc.eps,
                   shape, why);
    } else if (g_verbose) {
        printf("ok   %s %s [%s, %s] %s (max |diff| %.3g)\n", who, op->name, label, fill_names[fill], shape, worst);
    }
    free(x);
    free(y);
    free(gamma);
    free(beta);
    free(x0);
    free(y0);
    free(out);
    free(ref);
    return !why[0];
}

/* Awkward sizes per shape kind, made from this machine's vector length VL
 * (f32 lanes per register): length 1, VL-1 .. VL+1 and around 2, 4, 8 and
 * 16 registers, odd rows and columns, matmul remainders past 8, 16 and 32
 * in m, n and k, batch 2. */
static size_t awkward(char kind, struct kt_shape *out)
{
    size_t v = g_vl, n = 0;
    const size_t lens[] = {1, 2, v - 1 ? v - 1 : 1, v, v + 1, 2 * v + 1, 4 * v - 1, 8 * v - 1, 8 * v, 8 * v + 1,
                           16 * v + 3, 257, 1000};
    switch (kind) {
    case 'N':
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            out[n++] = (struct kt_shape){.n = lens[i]};
        break;
    case 'M': {
        const struct kt_shape m[] = {
            {.batch = 1, .m = 1, .n = 1, .k = 1},          {.batch = 1, .m = 3, .n = 5, .k = 7},
            {.batch = 1, .m = 9, .n = 17, .k = 33},        {.batch = 1, .m = 17, .n = v + 1, .k = 9},
            {.batch = 1, .m = 33, .n = 8 * v + 1, .k = 5}, {.batch = 1, .m = 7, .n = 33, .k = 65},
            {.batch = 1, .m = 31, .n = 8 * v - 1, .k = 17}, {.batch = 2, .m = 4, .n = 3, .k = 5},
            {.batch = 1, .m = 1, .n = 65, .k = 40},        {.batch = 1, .m = 16 + 1, .n = 32 + 3, .k = 8 + 1}};
        memcpy(out, m, sizeof m);
        n = sizeof m / sizeof m[0];
        break;
    }
    case 'V': {
        const struct kt_shape m[] = {{.m = 1, .k = 1},  {.m = 7, .k = 13},          {.m = 33, .k = 65},
                                     {.m = 1, .k = 300}, {.m = 17, .k = 8 * v + 1}, {.m = 9, .k = v - 1 ? v - 1 : 1},
                                     {.m = 65, .k = 2 * v + 1}};
        memcpy(out, m, sizeof m);
        n = sizeof m / sizeof m[0];
        break;
    }
    default: {
        const struct kt_shape m[] = {{.rows = 1, .cols = 1},          {.rows = 1, .cols = v - 1 ? v - 1 : 1},
                                     {.rows = 1, .cols = v + 1},      {.rows = 3, .cols = 8 * v + 1},
                                     {.rows = 2, .cols = 8 * v - 1},  {.rows = 5, .cols = 257},
                                     {.rows = 7, .cols = 16 * v + 3}, {.rows = 1, .cols = 1000},
                                     {.rows = 9, .cols = 2 * v + 1}};
        memcpy(out, m, sizeof m);
        n = sizeof m / sizeof m[0];
    }
    }
    return n;
}

/* The task shape as the kernel is called: pointwise activations see {n} as
 * one row of n values. */
static struct kt_shape task_call_shape(char kind, struct kt_shape s)
{
    if (kind == 'P' && !s.rows) {
        s.rows = 1;
        s.cols = s.n;
    }
    if (kind == 'M' && !s.batch)
        s.batch = 1;
    return s;
}

/* One kernel: the task shape, the awkward sizes with every fill, then the
 * small ones again until KT_CALLS_MIN calls, then its dispatcher. */
static void check_kernel(const struct kt_kernel *kk, double max_work)
{
    const struct kt_op *op = kk->user.user ? &kk->user : op_find(kk->op);
    if (!op) {
        printf("FAIL %s: op %s is not in this library's catalogue\n", kk->symbol, kk->op);
        g_failed++;
        return;
    }
    long calls0 = g_cases, failed0 = g_failed;
    g_printed = 0;
    g_base = g_cases;
    struct kt_shape s = task_call_shape(op->kind, kk->shape);
    char label[96] = "task", full[96];
    shape_text(op->kind, &s, full, sizeof full);
    if (reduce(op->kind, &s, max_work))
        snprintf(label, sizeof label, "task, cut from %s by --max-work", full);
    run_case(kk->symbol, op, kk->fn, &s, label, kk->rtol, kk->atol, 0);
    struct kt_shape aw[KT_MAX_SHAPES], small[KT_MAX_SHAPES];
    size_t na = awkward(op->kind, aw), ns = 0;
    for (int fill = 0; fill < 4; fill++)
        for (size_t j = 0; j < na; j++)
            run_case(kk->symbol, op, kk->fn, &aw[j], "awkward", kk->rtol, kk->atol, fill);
    for (size_t j = 0; j < na; j++)
        if (work(op->kind, &aw[j]) <= 4096)
            small[ns++] = aw[j];
    for (long i = 0; ns && g_cases - calls0 < KT_CALLS_MIN; i++)
        run_case(kk->symbol, op, kk->fn, &small[(size_t)i % ns], "repeated", kk->rtol, kk->atol, (int)(i % 4));
    long calls = g_cases - calls0, failed = g_failed - failed0;
    run_case("dispatcher", op, op->dispatch, &s, label, kk->rtol, kk->atol, 1);
    if (failed > KT_MAX_PRINT)
        printf("     ... %ld more failed call(s) of %s\n", failed - KT_MAX_PRINT, kk->symbol);
    printf("%s %s (%s, %ld checked calls: task, %zu lengths x 4 output fills, repeated; %ld failed)\n",
           g_failed == failed0 ? "ok  " : "FAIL", kk->symbol, kk->op, calls, na, g_failed - failed0);
}

int main(int argc, char **argv)
{
    double max_work = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-work") == 0 && i + 1 < argc)
            max_work = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "-v") == 0)
            g_verbose = 1;
        else {
            fprintf(stderr, "usage: kope_selftest [--max-work N] [-v]\n");
            return 2;
        }
    }
    g_vl = machine_vl();
    size_t n_kernels = sizeof kt_kernels / sizeof kt_kernels[0];
    for (size_t i = 0; i < n_kernels; i++)
        check_kernel(&kt_kernels[i], max_work);
    /* the fallbacks every dispatcher without a kernel uses */
    long before = g_failed;
    for (size_t i = 0; i < KT_N_OPS; i++) {
        struct kt_shape aw[KT_MAX_SHAPES];
        size_t na = awkward(kt_ops[i].kind, aw);
        g_printed = 0;
        g_base = g_cases;
        for (size_t j = 0; j < na; j++)
            run_case("scalar", &kt_ops[i], kt_ops[i].scalar, &aw[j], "fallback", 1e-4, 1e-4, (int)(j % 4));
    }
    printf("%s scalar fallbacks (%zu ops)\n", g_failed == before ? "ok  " : "FAIL", KT_N_OPS);
    printf("kope_selftest: %zu kernel(s), %ld checked call(s) at VLEN %zu, at least %d per kernel in one "
           "process (lengths, scalars and prior output varied; %s), %ld failed\n",
           n_kernels, g_cases, g_vl * 32, KT_CALLS_MIN,
           KT_REGS_CHECKED ? "callee-saved s0-s11, fs0-fs11, sp, gp, tp checked around every call"
                           : "registers not checked: not riscv64",
           g_failed);
    return g_failed ? 1 : 0;
}

/*
 * kope_selftest.c - checks every kernel of this library against kope's
 * double-precision references (kope_ref.c), written by `kope kernels export`
 * (part of kope; the table of exported kernels is kope_selftest_table.h).
 *
 * For each exported kernel: the task shape it was measured at (cut down when
 * its work exceeds --max-work, which the line then says) and awkward sizes
 * (length 1, tails around the vector length, odd rows and columns, batch 2).
 * Every case fills the output with a NaN pattern followed by a guard, checks
 * |got - ref| <= atol + rtol * |ref| everywhere with the task's tolerance,
 * that the guard past the output and the inputs are untouched, and argmax
 * exactly. Then the dispatcher kope_<op> on the task shape, and every op's
 * portable scalar fallback on small sizes. Exit 0 when everything passed.
 * A kernel of a user's own op is checked against that op's reference
 * (ref_<symbol>.c, the user's plain C built scalar, as kope's judge did), on
 * the op's input range, with gamma and beta NULL for its activations.
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
static long g_cases, g_failed;

static float rnd(float lo, float hi)
{
    g_rng = g_rng * 6364136223846793005u + 1442695040888963407u;
    return lo + (hi - lo) * (float)((g_rng >> 40) & 0xffffff) / (float)0x1000000;
}

static float *fbuf(size_t n, float lo, float hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (!p) {
        fprintf(stderr, "kope_selftest: out of memory (%zu floats)\n", n);
        exit(2);
    }
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

/* A user op's reference on the saved inputs: its f32 results, widened. */
static void user_ref(const struct kt_op *op, const struct kt_shape *s, const float *x, const float *y,
                     const float *gamma, const float *beta, const struct kope_scalars *sc, double *ref,
                     size_t nout)
{
    float *r = malloc((nout ? nout : 1) * sizeof *r);
    if (!r) {
        fprintf(stderr, "kope_selftest: out of memory\n");
        exit(2);
    }
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

/* One call of fn (kernel, dispatcher or scalar fallback) on shape s against
 * the reference; returns 1 when it passed, printing the first failure. */
static int run_case(const char *who, const struct kt_op *op, kt_any fn, const struct kt_shape *s0,
                    const char *label, double rtol, double atol)
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
    float *gamma = ng ? fbuf(ng, 0.5f, 1.5f) : NULL, *beta = ng ? fbuf(ng, -0.5f, 0.5f) : NULL;
    float *x0 = malloc((nx ? nx : 1) * sizeof *x0), *y0 = malloc((ny ? ny : 1) * sizeof *y0);
    float *out = malloc((nout + GUARD) * sizeof *out);
    double *ref = malloc((nout ? nout : 1) * sizeof *ref);
    if (!x0 || !y0 || !out || !ref) {
        fprintf(stderr, "kope_selftest: out of memory\n");
        exit(2);
    }
    memcpy(x0, x, nx * sizeof *x);
    if (ny)
        memcpy(y0, y, ny * sizeof *y);
    uint32_t fill = NAN_FILL;
    for (size_t i = 0; i < nout + GUARD; i++)
        memcpy(&out[i], &fill, 4);
    struct kope_scalars sc = {.alpha = rnd(-2, 2), .lo = -1.0f, .hi = 1.5f, .eps = 1e-5f};
    int32_t *iref = (int32_t *)ref;
    switch (kind) {
    case 'N':
        ((kope_elementwise_fn *)fn)(s.n, x, y, out, &sc);
        if (!op->user)
            ((kope_ref_elementwise_fn *)op->ref)(s.n, x0, y0, ref, &sc);
        break;
    case 'P': case 'R':
        ((kope_activation_fn *)fn)(s.rows, s.cols, x, out, gamma, beta, &sc);
        if (!op->user)
            ((kope_ref_activation_fn *)op->ref)(s.rows, s.cols, x0, ref, gamma, beta, &sc);
        break;
    case 'D':
        ((kope_reduction_fn *)fn)(s.rows, s.cols, x, out);
        if (!op->user)
            ((kope_ref_reduction_fn *)op->ref)(s.rows, s.cols, x0, ref);
        break;
    case 'M':
        ((kope_matmul_fn *)fn)(s.batch, s.m, s.n, s.k, x, y, out);
        if (!op->user)
            ((kope_ref_matmul_fn *)op->ref)(s.batch, s.m, s.n, s.k, x0, y0, ref);
        break;
    default:
        ((kope_matmul_fn *)fn)(1, s.m, 1, s.k, x, y, out);
        if (!op->user)
            ((kope_ref_matmul_fn *)op->ref)(1, s.m, 1, s.k, x0, y0, ref);
    }
    if (op->user)
        user_ref(op, &s, x0, y0, gamma, beta, &sc, ref, nout);
    char shape[96], why[200] = "";
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
        printf("FAIL %s %s [%s] %s: %s\n", who, op->name, label, shape, why);
    } else if (g_verbose) {
        printf("ok   %s %s [%s] %s (max |diff| %.3g)\n", who, op->name, label, shape, worst);
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

/* Awkward sizes per shape kind: length 1, around the vector lengths of
 * VLEN 256 (8 f32 per register, LMUL up to 8), odd rows/cols, batch 2. */
static size_t awkward(char kind, struct kt_shape *out)
{
    static const struct kt_shape n_cases[] = {{.n = 1}, {.n = 7}, {.n = 9}, {.n = 63}, {.n = 65}, {.n = 257}, {.n = 1000}};
    static const struct kt_shape rc_cases[] = {{.rows = 1, .cols = 1}, {.rows = 1, .cols = 7}, {.rows = 3, .cols = 9},
                                               {.rows = 2, .cols = 65}, {.rows = 5, .cols = 257}, {.rows = 1, .cols = 1000}};
    static const struct kt_shape m_cases[] = {{.batch = 1, .m = 1, .n = 1, .k = 1}, {.batch = 1, .m = 3, .n = 5, .k = 7},
                                              {.batch = 1, .m = 17, .n = 9, .k = 33}, {.batch = 2, .m = 4, .n = 3, .k = 5},
                                              {.batch = 1, .m = 1, .n = 65, .k = 40}};
    static const struct kt_shape v_cases[] = {{.m = 1, .k = 1}, {.m = 7, .k = 13}, {.m = 33, .k = 65}, {.m = 1, .k = 300}};
    const struct kt_shape *src = kind == 'N' ? n_cases : kind == 'M' ? m_cases : kind == 'V' ? v_cases : rc_cases;
    size_t n = kind == 'N' ? sizeof n_cases / sizeof n_cases[0]
             : kind == 'M' ? sizeof m_cases / sizeof m_cases[0]
             : kind == 'V' ? sizeof v_cases / sizeof v_cases[0]
                           : sizeof rc_cases / sizeof rc_cases[0];
    memcpy(out, src, n * sizeof *out);
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
    size_t n_kernels = sizeof kt_kernels / sizeof kt_kernels[0];
    for (size_t i = 0; i < n_kernels; i++) {
        const struct kt_kernel *kk = &kt_kernels[i];
        const struct kt_op *op = kk->user.user ? &kk->user : op_find(kk->op);
        if (!op) {
            printf("FAIL %s: op %s is not in this library's catalogue\n", kk->symbol, kk->op);
            g_failed++;
            continue;
        }
        struct kt_shape s = task_call_shape(op->kind, kk->shape);
        char label[96] = "task";
        char full[96];
        shape_text(op->kind, &s, full, sizeof full);
        if (reduce(op->kind, &s, max_work))
            snprintf(label, sizeof label, "task, cut from %s by --max-work", full);
        int ok = run_case(kk->symbol, op, kk->fn, &s, label, kk->rtol, kk->atol);
        struct kt_shape aw[8];
        size_t na = awkward(op->kind, aw);
        for (size_t j = 0; j < na; j++)
            ok &= run_case(kk->symbol, op, kk->fn, &aw[j], "awkward", kk->rtol, kk->atol);
        ok &= run_case("dispatcher", op, op->dispatch, &s, label, kk->rtol, kk->atol);
        printf("%s %s (%s, %zu cases)\n", ok ? "ok  " : "FAIL", kk->symbol, kk->op, na + 2);
    }
    /* the fallbacks every dispatcher without a kernel uses */
    long before = g_failed;
    for (size_t i = 0; i < KT_N_OPS; i++) {
        struct kt_shape aw[8];
        size_t na = awkward(kt_ops[i].kind, aw);
        for (size_t j = 0; j < na; j++)
            run_case("scalar", &kt_ops[i], kt_ops[i].scalar, &aw[j], "fallback", 1e-4, 1e-4);
    }
    printf("%s scalar fallbacks (%zu ops)\n", g_failed == before ? "ok  " : "FAIL", KT_N_OPS);
    printf("kope_selftest: %zu kernel(s), %ld case(s), %ld failed\n", n_kernels, g_cases, g_failed);
    return g_failed ? 1 : 0;
}

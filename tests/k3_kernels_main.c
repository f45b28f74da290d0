/*
 * tests/k3_kernels_main.c - riscv64 batch checker for kope's built-in kernel
 * template instances (a fixture of tests/test_k3_kernels.c, compiled for the
 * target and run under qemu-riscv64, VLEN 256).
 *
 * Checking ~300 instances one harness process each would take minutes under
 * qemu, so this program links every instance at once (each compiled with
 * -Dkope_kernel=kk_N) and checks them in one run against the harness's own
 * double-precision references (platform/judge/ref.c, h_ref_run), on
 * awkward sizes: 1, 2, VL-1 and VL+1 at LMUL 1 and 8, primes, rows of
 * different lengths, non-square matmuls, K=1, batches. Outputs are filled
 * with the harness's NaN pattern and followed by a canary zone, so skipped
 * and out-of-range writes are caught. The table comes from the test:
 *   -DKK_TABLE="table.inc" defining kk_table[] and kk_count.
 * Output: "ok IDX LABEL" or "FAIL IDX LABEL why" per instance, then
 * "summary OK FAIL".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_abi.h"
#include "hargs.h"

struct kk_entry {
    const char *label;
    int op;
    void (*fn)(void);
    double rtol, atol;
};
#include KK_TABLE

#define CANARY 16 /* floats after the output that must stay untouched */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) /* uniform [-1, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

static float fill_bits(void)
{
    uint32_t u = H_FILL_BITS;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Inputs for op: ranges where each op is interesting. */
static void gen(int op, float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double r = rnd();
        switch (op) {
        case H_OP_EXP: case H_OP_SOFTMAX: p[i] = (float)(10.0 * r); break;
        case H_OP_GELU_TANH: case H_OP_GELU_ERF: case H_OP_SILU:
        case H_OP_SIGMOID: case H_OP_TANH: p[i] = (float)(6.0 * r); break;
        case H_OP_LAYERNORM: p[i] = (float)(3.0 + r); break; /* offset mean */
        case H_OP_MAX: case H_OP_ARGMAX: p[i] = (float)floor(8.0 * r) / 2.0f; break; /* ties */
        default: p[i] = (float)r;
        }
    }
}

static float *new_buf(size_t n)
{
    float *p = malloc((n + CANARY) * sizeof *p);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

/* One case: 0 ok, else prints why and returns 1. */
static int run_case(const struct kk_entry *e, size_t batch, size_t m, size_t n, size_t k)
{
    struct h_args a;
    memset(&a, 0, sizeof a);
    a.op = e->op;
    a.alpha = 0.75f; a.lo = -0.5f; a.hi = 0.625f; a.eps = 1e-5f;
    struct kope_scalars s = {a.alpha, a.lo, a.hi, a.eps};
    float *x = NULL, *y = NULL, *g = NULL, *bt = NULL, *out;
    size_t n_in, n_out;
    char what[96];
    int fam;
    if (e->op <= H_OP_CLAMP) {
        fam = 0;
        a.n = n; n_in = n; n_out = n;
        snprintf(what, sizeof what, "n=%zu", n);
    } else if (e->op <= H_OP_RMSNORM) {
        fam = 1;
        a.rows = m; a.cols = n; n_in = m * n; n_out = m * n;
        snprintf(what, sizeof what, "rows=%zu cols=%zu", m, n);
    } else if (e->op <= H_OP_ARGMAX) {
        fam = 2;
        a.rows = m; a.cols = n; n_in = m * n; n_out = m;
        snprintf(what, sizeof what, "rows=%zu cols=%zu", m, n);
    } else {
        fam = 3;
        if (e->op == H_OP_GEMV) { n = 1; batch = 1; }
        a.batch = batch; a.m = m; a.n = n; a.k = k;
        n_in = batch * m * k; n_out = batch * m * n;
        snprintf(what, sizeof what, "batch=%zu m=%zu n=%zu k=%zu", batch, m, n, k);
    }
    x = new_buf(n_in);
    gen(e->op, x, n_in);
    if (fam == 0 && e->op != H_OP_SCALE && e->op != H_OP_CLAMP) {
        y = new_buf(n);
        gen(e->op, y, n);
    }
    if (e->op == H_OP_LAYERNORM || e->op == H_OP_RMSNORM) {
        g = new_buf(2 * n);
        for (size_t i = 0; i < 2 * n; i++)
            g[i] = (float)(1.0 + 0.5 * rnd());
        a.gamma = g;
        a.beta = g + n;
    }
    if (fam == 3) {
        size_t nb = batch * k * n;
        bt = new_buf(nb);
        gen(e->op, bt, nb);
        a.a = x; a.b = bt;
    } else {
        a.x = x; a.y = y;
    }
    out = new_buf(n_out);
    float fb = fill_bits();
    for (size_t i = 0; i < n_out + CANARY; i++)
        out[i] = fb;
    a.out = out;
    a.out_count = n_out;

    switch (fam) {
    case 0: ((kope_elementwise_fn *)(void *)e->fn)(n, x, y, out, &s); break;
    case 1: ((kope_activation_fn *)(void *)e->fn)(m, n, x, out, a.gamma, a.beta, &s); break;
    case 2: ((kope_reduction_fn *)(void *)e->fn)(m, n, x, out); break;
    default: ((kope_matmul_fn *)(void *)e->fn)(batch, m, n, k, x, bt, out);
    }

    double *ref = malloc((n_out ? n_out : 1) * sizeof *ref);
    if (!ref)
        exit(2);
    h_ref_run(&a, ref);
    int bad = 0;
    for (size_t i = 0; i < CANARY && !bad; i++)
        if (memcmp(&out[n_out + i], &fb, sizeof fb) != 0) {
            printf("FAIL %s %s: wrote past the output (element %zu)\n", e->label, what, n_out + i);
            bad = 1;
        }
    for (size_t i = 0; i < n_out && !bad; i++) {
        double got = e->op == H_OP_ARGMAX ? (double)((int32_t *)out)[i] : (double)out[i];
        double err = fabs(got - ref[i]);
        if (!(err <= e->atol + e->rtol * fabs(ref[i]))) {
            printf("FAIL %s %s: element %zu got %.9g ref %.9g (err %.3g)\n",
                   e->label, what, i, got, ref[i], err);
            bad = 1;
        }
    }
    free(ref); free(out); free(x); free(y); free(g); free(bt);
    return bad;
}

/* Sizes: VL is 8 floats at LMUL 1 and 64 at LMUL 8 (VLEN 256). */
static const size_t n1[] = {1, 2, 7, 9, 63, 65, 97, 257, 1031};
static const size_t rc[][2] = {{1, 1}, {3, 2}, {2, 7}, {1, 9}, {4, 63}, {2, 65}, {3, 131}, {1, 1031}, {2, 4099}};
static const size_t mm[][4] = { /* batch m n k */
    {1, 1, 1, 1}, {1, 3, 5, 1}, {1, 7, 9, 13}, {2, 5, 17, 33}, {1, 9, 33, 70},
    {1, 17, 65, 300}, {1, 1, 300, 37}, {1, 33, 7, 9}, {3, 2, 8, 64}};

int main(void)
{
    size_t ok = 0, fail = 0;
    for (size_t i = 0; i < kk_count; i++) {
        const struct kk_entry *e = &kk_table[i];
        int bad = 0;
        if (e->op <= H_OP_CLAMP || (e->op >= H_OP_RELU && e->op <= H_OP_EXP)) {
            for (size_t c = 0; c < sizeof n1 / sizeof n1[0] && !bad; c++)
                bad = run_case(e, 1, 1, n1[c], 0); /* n, or rows=1 cols=n */
            if (!bad && e->op > H_OP_CLAMP)
                bad = run_case(e, 1, 3, 37, 0); /* pointwise over rows x cols */
        } else if (e->op <= H_OP_ARGMAX) {
            for (size_t c = 0; c < sizeof rc / sizeof rc[0] && !bad; c++)
                bad = run_case(e, 1, rc[c][0], rc[c][1], 0);
        } else {
            for (size_t c = 0; c < sizeof mm / sizeof mm[0] && !bad; c++)
                bad = run_case(e, mm[c][0], mm[c][1], mm[c][2], mm[c][3]);
        }
        if (bad)
            fail++;
        else {
            ok++;
            printf("ok %zu %s\n", i, e->label);
        }
    }
    printf("summary %zu %zu\n", ok, fail);
    return fail ? 1 : 0;
}

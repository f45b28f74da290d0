/*
 * platform/judge/verdict.h - the one copy of the verdict rules both judges apply: the K3
 * harness (harness.c, compiled for riscv64 as C11) and the Ascend host
 * program (platform/ascend/embed/host.cpp, compiled as C++17 by the CANN
 * project); kope's Ascend driver (platform/ascend/ascend.c) includes it too,
 * with KOPE_HARNESS_HOST_ONLY, for the case list it expects back.
 *
 *   h_cases_awkward   the case list after the task case: awkward shapes,
 *                     large-magnitude rows, special-value cases (labels are
 *                     what the report carries, so kope can check them)
 *   h_cases_drawn     a few more whose sizes come from a per-run seed
 *   h_case_scalars    the scalar arguments of each case (wide ranges)
 *   h_special_values  the special values an op is checked on
 *   h_fill_specials   where they go in the inputs (and the degenerate rows)
 *   h_matmul_specials NaN/Inf/wide-range pattern for the matmul family
 *   h_matmul_abs      sum |a||b| per output: the scale of a matmul's error
 *   h_elem_verdict    one f32 output against its double reference, NaN- and
 *                     Inf-aware
 *   h_argmax_ok       one argmax output (an equal maximum elsewhere is right)
 *   h_constant_wrong  a constant output where the reference varies
 *
 * Everything is static inline and depends only on the C library, hargs.h
 * and libm: the harness is built by the target compiler in a temp dir, the
 * host program by the toolkit's, and neither sees kope's headers.
 */
#ifndef KOPE_VERDICT_H
#define KOPE_VERDICT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hargs.h"

/* --------------------------------------------------------------- cases --- */

struct h_case {
    char label[48];
    size_t n, rows, cols, m, k, batch;
    float shift; /* added to x: large-magnitude inputs for the row-wise ops */
    int special; /* special values mixed into the inputs (h_fill_specials);
                    matmul: 2 = also a +Inf in gemv's x */
};

#define H_MAX_CASES 20

static inline void h_case_set(struct h_case *c, const char *label, size_t n, size_t rows,
                              size_t cols, size_t m, size_t k, size_t batch)
{
    snprintf(c->label, sizeof c->label, "%s", label);
    c->n = n; c->rows = rows; c->cols = cols; c->m = m; c->k = k; c->batch = batch;
    c->shift = 0;
    c->special = 0;
}

/* The cases after the task case for op (family, rowwise: the op's shape kind;
 * a user op passes its own), v1/v8: elements per vector at the target's
 * smallest and largest grouping (K3 at VLEN 256: 8 and 64; Ascend: one
 * 32-byte DataCopy block and one 256-byte repeat, also 8 and 64). Appends
 * to out[*n] up to cap. Both judges run exactly this list, and kope's
 * Ascend driver checks the report against it. */
static inline void h_cases_awkward(int op, int family, int rowwise, size_t v1, size_t v8,
                                   struct h_case *out, int *n, int cap)
{
    char l[48];
#define H_ADD(label, n_, r, c, m_, k_, b) \
    do { if (*n < cap) h_case_set(&out[(*n)++], label, n_, r, c, m_, k_, b); } while (0)
#define H_LAST (out[*n - 1])
    if (op == H_OP_GEMV) {
        /* the last two: block remainders 3..7 past 8/16/32 in m and k */
        size_t mk[][2] = {{1, 1}, {3, 1}, {v1 + 1, v1 - 1}, {5, v8 + 1}, {2, 1021}, {67, 129},
                          {35, 70}, {44, 43}};
        for (size_t i = 0; i < sizeof mk / sizeof mk[0]; i++) {
            snprintf(l, sizeof l, "m=%zu,k=%zu", mk[i][0], mk[i][1]);
            H_ADD(l, 1, 0, 0, mk[i][0], mk[i][1], 1);
        }
        if (*n + 2 <= cap) {
            H_ADD("m=37,k=131,special", 1, 0, 0, 37, 131, 1);
            H_LAST.special = 1;
            H_ADD("m=7,k=37,special-inf", 1, 0, 0, 7, 37, 1); /* x holds a +Inf */
            H_LAST.special = 2;
        }
    } else if (family == 3) {
        size_t s[][4] = {{1, 1, 1, 1}, {5, 7, 1, 1}, {3, v1 + 1, 2 * v1 - 1, 1},
                         {v8 + 1, 5, 3, 1}, {17, 33, 65, 1}, {2, v8 + 1, v1 - 1, 1},
                         {5, 9, 7, 2}, {1, 67, 129, 1},
                         /* block remainders 3..7 past 8/16/32 in each of m, n, k */
                         {11, 70, 43, 1}, {20, 13, 36, 1}};
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
            snprintf(l, sizeof l, "m=%zu,n=%zu,k=%zu,b=%zu", s[i][0], s[i][1], s[i][2], s[i][3]);
            H_ADD(l, s[i][1], 0, 0, s[i][0], s[i][2], s[i][3]);
        }
        if (*n < cap) {
            H_ADD("m=9,n=37,k=67,b=1,special", 37, 0, 0, 9, 67, 1);
            H_LAST.special = 1;
        }
    } else if (family == 2 || rowwise) {
        /* successive calls with rows of different lengths */
        size_t rc[][2] = {{1, 1}, {1, 2}, {2, v1 - 1}, {3, v1 + 1}, {2, v8 - 1},
                          {2, v8 + 1}, {3, 97}, {1, 1021},
                          /* block remainders 3, 4, 6 past 32; a 512-multiple between
                           * 2048 and 4096 (a real hidden size, 3584: Qwen2.5-7B) */
                          {2, 35}, {3, 44}, {1, 70}, {1, 3584}};
        for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
            snprintf(l, sizeof l, "rows=%zu,cols=%zu", rc[i][0], rc[i][1]);
            H_ADD(l, 0, rc[i][0], rc[i][1], 0, 0, 0);
        }
        /* classic numerical bugs: softmax without subtracting the row max
         * overflows (exp(100) is inf in f32); layernorm's one-pass
         * E[x^2] - E[x]^2 in f32 cancels when the mean is large */
        if (op == H_OP_SOFTMAX && *n < cap) {
            H_ADD("rows=2,cols=97,x+90", 0, 2, 97, 0, 0, 0);
            H_LAST.shift = 90.0f;
        }
        if (op == H_OP_LAYERNORM && *n < cap) {
            H_ADD("rows=2,cols=1021,x+100", 0, 2, 1021, 0, 0, 0);
            H_LAST.shift = 100.0f;
        }
        /* special values with the reference's semantics: all-equal rows,
         * long rows, huge spreads, -inf entries (softmax masks), +inf
         * (max/argmax) */
        if (*n + 2 <= cap && op != H_OP_SUM && op != H_OP_MEAN) {
            H_ADD("rows=5,cols=1031,special", 0, 5, 1031, 0, 0, 0);
            H_LAST.special = 1;
            H_ADD("rows=1,cols=8209,special", 0, 1, 8209, 0, 0, 0);
            H_LAST.special = 1;
        }
    } else {
        /* 35, 44, 70: n % 8 = 3, 4, 6 past 32 (with 1021, 1031, v1 - 1: 5, 7 and 7
         * at VLEN 256), so a remainder path wrong for one residue fails some case;
         * 3584: a 512-multiple between 2048 and 4096 (a real hidden size) */
        size_t ns[] = {1, 2, v1 - 1, v1 + 1, v8 - 1, v8 + 1, 35, 44, 70, 97, 1021, 3584};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            snprintf(l, sizeof l, "n=%zu", ns[i]);
            H_ADD(l, ns[i], 1, ns[i], 0, 0, 0);
        }
        if (family == 1)
            H_ADD("rows=3,cols=7", 21, 3, 7, 0, 0, 0);
        /* NaN, +-Inf, +-0, denormals, overflow and saturation magnitudes */
        if (*n < cap) {
            H_ADD("n=1031,special", 1031, 1, 1031, 0, 0, 0);
            H_LAST.special = 1;
        }
    }
#undef H_ADD
#undef H_LAST
}

/* A few cases whose sizes are drawn from seed (a per-run random seed the
 * host draws and records, so a failure can be reproduced): beside the fixed,
 * public list above, a kernel cannot special-case around sizes it cannot
 * know. Every draw takes a remainder past 8, 16, 32 and 64 (n mod 64 in
 * 1..63, so every residue mod 8/16/32/64 is reachable), one lies in
 * 200..999 and one in 1000..5000; rows, cols, m and k likewise, within the
 * emulation caps (a drawn case is at most 1e5 multiply-adds or 1e4
 * elements). A kernel wrong on a fraction f of the sizes of one range is
 * caught by its draw with probability f per run. Appends up to 3 cases
 * (labels end ",drawn") to out[*n] up to cap; seed 0 adds none. Not run by
 * the Ascend host program (its case list is checked against
 * h_cases_awkward alone). */
static inline uint64_t h_draw(uint64_t *st)
{
    /* splitmix64: every seed, 0 included, gives a full-period sequence */
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* lo + a draw in [0, span) */
static inline size_t h_draw_in(uint64_t *st, size_t lo, size_t span)
{
    return lo + (size_t)(h_draw(st) % span);
}

static inline void h_cases_drawn(int op, int family, int rowwise, uint64_t seed,
                                 struct h_case *out, int *n, int cap)
{
    if (!seed)
        return;
    uint64_t st = seed;
    char l[48];
    /* past 64: 64 a + b, a in 1..3, b in 1..63 */
#define H_PAST64(st) (64 * h_draw_in(st, 1, 3) + h_draw_in(st, 1, 63))
    for (int i = 0; i < 3 && *n < cap; i++) {
        size_t a, b, c, d;
        struct h_case *o = &out[*n];
        if (op == H_OP_GEMV) {
            a = i == 0 ? h_draw_in(&st, 9, 56) : i == 1 ? h_draw_in(&st, 200, 800) : h_draw_in(&st, 3, 6);
            b = i == 0 ? H_PAST64(&st) : i == 1 ? h_draw_in(&st, 9, 32) : h_draw_in(&st, 1000, 4001);
            snprintf(l, sizeof l, "m=%zu,k=%zu,drawn", a, b);
            h_case_set(o, l, 1, 0, 0, a, b, 1);
        } else if (family == 3) {
            /* m, n, k past 8/16/32 (n past 64), a k in 200..499 and one in
             * 1000..5000: at most 1e5 multiply-adds each, about the fixed
             * list's whole matmul work together (a drawn case runs at every
             * VLEN, its reference in the emulated judge) */
            if (i == 0) {
                a = h_draw_in(&st, 9, 8); b = 64 + h_draw_in(&st, 1, 63); c = h_draw_in(&st, 9, 16);
                d = h_draw_in(&st, 1, 2);
            } else if (i == 1) {
                a = h_draw_in(&st, 2, 3); b = h_draw_in(&st, 9, 16); c = h_draw_in(&st, 200, 300);
                d = 1;
            } else {
                a = h_draw_in(&st, 1, 2); b = h_draw_in(&st, 3, 6); c = h_draw_in(&st, 1000, 4001);
                d = 1;
            }
            snprintf(l, sizeof l, "m=%zu,n=%zu,k=%zu,b=%zu,drawn", a, b, c, d);
            h_case_set(o, l, b, 0, 0, a, c, d);
        } else if (family == 2 || rowwise) {
            a = i == 0 ? h_draw_in(&st, 9, 24) : i == 1 ? h_draw_in(&st, 2, 3) : h_draw_in(&st, 1, 2);
            b = i == 0 ? H_PAST64(&st) : i == 1 ? h_draw_in(&st, 200, 800) : h_draw_in(&st, 1000, 4001);
            snprintf(l, sizeof l, "rows=%zu,cols=%zu,drawn", a, b);
            h_case_set(o, l, 0, a, b, 0, 0, 0);
        } else {
            a = i == 0 ? H_PAST64(&st) : i == 1 ? h_draw_in(&st, 200, 800) : h_draw_in(&st, 1000, 4001);
            snprintf(l, sizeof l, "n=%zu,drawn", a);
            h_case_set(o, l, a, 1, a, 0, 0, 0);
        }
        (*n)++;
    }
#undef H_PAST64
}

/* The scalar arguments (struct kope_scalars) of case number idx (0 = the
 * task case) of a verify run: the task case keeps the defaults (alpha the
 * fill's random value in [-2, 2], clamp to [-1, 1.5], eps 1e-5); every other
 * case takes the next row of a table spread over wide ranges, so a kernel
 * that ignores or hard-codes one of them fails some case: alpha 0, negative,
 * tiny and large; clamp bounds that cut both sides, one side, a sliver, or
 * nothing of inputs in [-4, 4]; eps from 1e-12 to 4 (against mean squares
 * of about 5). */
static inline void h_case_scalars(int idx, float alpha_rand, float *alpha, float *lo, float *hi,
                                  float *eps)
{
    static const float t[][4] = {
        /* alpha, lo, hi, eps */
        {0.0f, -3.5f, -0.5f, 0.25f},
        {-3.75f, 0.25f, 3.0f, 1e-12f},
        {1024.0f, -1e-3f, 1e-3f, 4.0f},
        {-1e-3f, -1e3f, 1e3f, 1e-3f},
        {1.0f, 2.5f, 2.75f, 0.1f},
        {-1.0f, -4.5f, 0.0f, 1.5f},
    };
    *alpha = alpha_rand;
    *lo = -1.0f;
    *hi = 1.5f;
    *eps = 1e-5f;
    if (idx <= 0)
        return;
    const float *r = t[(size_t)(idx - 1) % (sizeof t / sizeof t[0])];
    *alpha = r[0];
    *lo = r[1];
    *hi = r[2];
    *eps = r[3];
}

/* The Ascend host program's task case: the task's shape as the family's
 * kernels take it (pointwise ops as one row; gemv n = 1, batch 1; matmul
 * batch >= 1), cut while its work exceeds max_work (> 0 only on the fake
 * toolkit, where kernels run on the host CPU; then labelled "task-scaled").
 * kope's Ascend driver computes the same case to check the report. */
static inline void h_ascend_task_case(int op, int family, int rowwise, size_t n, size_t rows,
                                      size_t cols, size_t m, size_t k, size_t batch,
                                      double max_work, struct h_case *t)
{
    h_case_set(t, "task", n, rows, cols, m, k, batch);
    int pointwise = family == 0 || (family == 1 && !rowwise);
    if (pointwise) { t->rows = 1; t->cols = t->n; }
    if (op == H_OP_GEMV) { t->n = 1; t->batch = 1; }
    if (family == 3 && t->batch == 0) t->batch = 1;
    if (max_work <= 0)
        return;
    struct h_case t0 = *t;
    for (;;) {
        double w = family == 3 ? (double)t->batch * t->m * t->n * t->k
                               : (double)(t->rows ? t->rows : 1) * (t->cols ? t->cols : t->n);
        if (w <= max_work) break;
        if (family == 3 && t->batch > 1) t->batch = (t->batch + 1) / 2;
        else if (family == 3 && t->m > 1) t->m = (t->m + 1) / 2;
        else if (family == 3 && t->n > 512) t->n = (t->n / 2) / 256 * 256 + t->n % 256;
        else if ((family == 2 || rowwise) && t->rows > 1) t->rows = (t->rows + 1) / 2;
        else if (pointwise && t->n > 4096) { t->n = (t->n / 2) / 256 * 256 + t->n % 256; t->cols = t->n; }
        else break;
    }
    if (t0.n != t->n || t0.rows != t->rows || t0.cols != t->cols || t0.m != t->m ||
        t0.batch != t->batch)
        snprintf(t->label, sizeof t->label, "task-scaled");
}

/* ------------------------------------------------------ special values --- */

/* The special values op is checked on (mixed among random values), into
 * v[cap]; returns how many. The reference decides what is right: IEEE
 * arithmetic for the elementwise ops (NaN propagates, overflow is Inf), the
 * math library's limits for the pointwise functions (exp(100) = Inf,
 * tanh(+-Inf) = +-1, sigmoid(-Inf) = 0). NaN is left out where C itself
 * leaves the answer open (relu, clamp: fmaxf(NaN, 0) is 0, x > 0 ? x : 0 is
 * NaN). user_ranged: a user op whose suite gave an input range (what a user
 * op means at NaN or Inf is its own business: only zeros and denormals,
 * and none when a range was given). */
static inline size_t h_special_values(int op, int family, int rowwise, int user_ranged, float *v,
                                      size_t cap)
{
    static const float common[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-38f, -1e-38f};
    static const float ew[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 3e38f, -3e38f};
    static const float act[] = {20, -20, 50, -50, 80, -80, 90, -90, 100, -100, 1e4f, -1e4f};
    static const float lim[] = {INFINITY, -INFINITY};
    static const float row[] = {-INFINITY, 1e4f, -1e4f, 3e3f, -3e3f};
    static const float big[] = {1e15f, -1e15f, 3e14f};
    static const float mx[] = {INFINITY, -INFINITY, 1e30f, -1e30f};
    static const float nrm[] = {1e4f, -1e4f, 0.0f};
    size_t n = 0;
#define H_PUT(list, from) \
    for (size_t i = (from); i < sizeof list / sizeof list[0] && n < cap; i++) v[n++] = list[i]
    if (op == H_OP_USER) {
        if (!user_ranged)
            H_PUT(common, 0);
    } else if (family == 0) {
        H_PUT(common, 0);
        H_PUT(ew, op == H_OP_CLAMP ? 1 : 0);
    } else if (family == 1 && !rowwise) {
        H_PUT(common, 0);
        H_PUT(act, 0);
        if (op == H_OP_RELU)
            H_PUT(ew, 1);
        if (op == H_OP_EXP || op == H_OP_TANH || op == H_OP_SIGMOID)
            H_PUT(lim, 0);
    } else if (op == H_OP_SOFTMAX) {
        H_PUT(row, 0);
    } else if (op == H_OP_L2NORM) {
        H_PUT(big, 0);
    } else if (op == H_OP_MAX || op == H_OP_ARGMAX) {
        H_PUT(mx, 0);
    } else if (op == H_OP_LAYERNORM || op == H_OP_RMSNORM) {
        H_PUT(nrm, 0);
    }
#undef H_PUT
    return n;
}

/* Mix the special values into x[nx] (and y[ny], elementwise ops: NULL if
 * none) of a special case with rows x cols. One special value every 7th
 * element; for row-wise ops and reductions row 0 is all-equal (degenerate,
 * value row0), row 2 all zeros (not for a user op) and, for softmax, row 1
 * is -inf but one element. */
static inline void h_fill_specials(int op, int family, int rowwise, int user_ranged, float row0,
                                   float *x, size_t nx, size_t rows, size_t cols, float *y,
                                   size_t ny)
{
    float sv[32];
    size_t ns = h_special_values(op, family, rowwise, user_ranged, sv, 32);
    for (size_t i = 0; ns && i < nx; i += 7)
        x[i] = sv[(i / 7) % ns];
    if (family == 2 || rowwise)
        for (size_t i = 0; i < cols && i < nx; i++)
            x[i] = row0;
    if (op == H_OP_SOFTMAX && rows > 1 && 2 * cols <= nx)
        for (size_t i = 0; i < cols; i++)
            x[cols + i] = i == cols / 2 ? 1.0f : -INFINITY;
    /* row 2 all zeros: the degenerate input of the norms (a zero sum of
     * squares, layernorm's zero variance: eps alone), a uniform softmax, an
     * argmax where every index ties */
    if ((family == 2 || rowwise) && op != H_OP_USER && rows > 2 && 3 * cols <= nx)
        for (size_t i = 0; i < cols; i++)
            x[2 * cols + i] = 0.0f;
    if (y && family == 0)
        for (size_t i = 3; ns && i < ny; i += 11)
            y[i] = sv[(i / 11) % ns];
}

/* Special values for the matmul family (A: M x K, B: K x N, or N x K for
 * gemm_nt), with the reference's (IEEE double) semantics: row 0 of A holds a
 * NaN (its outputs are NaN), row 1 a +Inf meeting a 0 of B in column 0 (NaN
 * there, +-Inf elsewhere), row 2 both infinities; column 2 of B holds a NaN,
 * column 1 a +Inf at p = 5 where rows 3 and 4 of A hold +0 and -0 (0 x Inf =
 * NaN: a kernel that skips zero terms misses it). Everywhere else wide finite
 * magnitudes (+-1e15, 1e10, 1e-15, 1e-20, denormals, signed zeros) whose
 * products (up to 1e30) cancel: the outputs there are checked against the
 * accumulation's own error bound, sum |a||b| (h_matmul_abs), not |ref|. No
 * partial sum can overflow f32 (at most K x 1e30), so every summation order
 * gives the same class of result. For gemv (n = 1) B is the vector: the
 * +Inf and the NaN column are left out, which would make every output
 * non-finite; a second gemv case (special 2) has the +Inf in x, meeting the
 * zeros of rows 3 and 4. */
static inline void h_matmul_specials(int op, size_t M, size_t N, size_t K, int special, float *A,
                                     float *B)
{
    static const float wa[] = {1e15f, -1e15f, 1e-15f, -1e-20f, 1e-20f, 0.0f, -0.0f, 1e10f, -3e-39f};
    static const float wb[] = {1e15f, -1e15f, 1e-15f, 1e-20f, -0.0f, 1e-40f, -1e10f};
    size_t na = M * K, nb = K * N;
    for (size_t i = 0; i < na; i += 5)
        A[i] = wa[(i / 5) % (sizeof wa / sizeof wa[0])];
    for (size_t i = 3; i < nb; i += 7)
        B[i] = wb[(i / 7) % (sizeof wb / sizeof wb[0])];
#define H_B_AT(p, j) B[op == H_OP_GEMM_NT ? (j) * K + (p) : (p) * N + (j)]
    if (M < 5 || K < 6 || N < 1)
        return;
    A[K / 2] = NAN;
    A[K + 1] = INFINITY;
    A[2 * K + 2] = -INFINITY;
    A[2 * K + 3] = INFINITY;
    A[3 * K + 5] = 0.0f;
    A[4 * K + 5] = -0.0f;
    H_B_AT(1, 0) = 0.0f;
    if (N >= 3 || special == 2)
        H_B_AT(5, N >= 3 ? 1 : 0) = INFINITY;
    if (N >= 3)
        H_B_AT(K - 1, 2) = NAN;
#undef H_B_AT
}

/* ------------------------------------------------------------- verdict --- */

/* The tolerance scale of a matmul special case: an f32 accumulation of K
 * terms is within about K x 2^-24 x sum |a||b| of the exact sum, whatever
 * the order. The bound is atol + h_mag_rtol(rtol, K) * mag[i]. */
static inline double h_mag_rtol(double rtol, size_t k)
{
    return rtol + (double)k * 0x1p-23;
}

/* One f32 output f against its reference ref (double), tol = the allowed
 * |f - ref| when ref is finite in f32 (atol + rtol |ref|, or the matmul
 * bound). NaN must stay NaN; an f32 overflow must be the same infinity (or
 * saturate at the largest magnitudes, >= 1e38). Returns 0 right, 1 wrong,
 * 2 non-finite where a finite value (or another special) was due; *err is
 * |f - ref| (0 for a matching special, INFINITY for a wrong one). */
static inline int h_elem_verdict(float f, double ref, double tol, double *err)
{
    float rf = (float)ref;
    if (isnan(ref) || isinf(rf)) {
        *err = 0;
        if (isnan(ref) ? !isnan(f)
                       : !(f == rf || (isfinite(f) && fabsf(f) >= 1e38f && signbit(f) == signbit(rf)))) {
            *err = INFINITY;
            return isnan(f) || isinf(f) ? 2 : 1;
        }
        return 0;
    }
    *err = fabs((double)f - ref);
    if (!isfinite(f))
        return 2;
    return !(*err <= tol);
}

/* Whether a reference ref stands for a special f32 answer (NaN, or an
 * infinity where f32 overflows), i.e. h_elem_verdict's first branch. */
static inline int h_ref_is_special(double ref)
{
    return isnan(ref) || isinf((float)ref);
}

/* An argmax output idx for a row of cols inputs whose reference index is
 * ref: right if it points at an element equal to the reference's maximum. */
static inline int h_argmax_ok(int32_t idx, const float *row, size_t cols, double ref)
{
    return idx >= 0 && (size_t)idx < cols && row[idx] == row[(size_t)ref];
}

/* A constant output (every element the same bits: all zeros, one repeated
 * value) of count elements is wrong, however loose the tolerance, when the
 * finite references spread over [ref_lo, ref_hi] (largest magnitude
 * ref_amax) by more than the tolerance could absorb. */
static inline int h_constant_wrong(int op, size_t count, double ref_lo, double ref_hi,
                                   double ref_amax, double rtol, double atol)
{
    return count >= 16 && op != H_OP_ARGMAX && ref_hi - ref_lo > 4 * (atol + rtol * ref_amax) &&
           ref_hi - ref_lo > 1e-6 * ref_amax;
}

#ifndef KOPE_HARNESS_HOST_ONLY
/* sum over p of |A[i][p]| |B[p][j]| per output, in the layouts of ref.c */
static inline void h_matmul_abs(const struct h_args *a, double *out)
{
    size_t M = a->m, N = a->n, K = a->k;
    for (size_t bt = 0; bt < a->batch; bt++) {
        const float *A = a->a + bt * M * K, *B = a->b + bt * K * N;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double s = 0;
                for (size_t p = 0; p < K; p++)
                    s += fabs((double)A[i * K + p]) *
                         fabs((double)(a->op == H_OP_GEMM_NT ? B[j * K + p] : B[p * N + j]));
                out[bt * M * N + i * N + j] = s;
            }
    }
}
#endif

#endif

/*
 * tests/test_k3_peers.c - the SLEEF peer of the K3 harness (embed/sleef.c,
 * libsleef.a built by cross/deps.sh from Debian's source package).
 *
 * For each op SLEEF serves (exp, tanh, sigmoid, silu, gelu_tanh, gelu_erf,
 * softmax) a plain libm candidate is measured through the real platform: the
 * run must carry both SLEEF baselines (LMUL 1 and 2), each checked against
 * the reference before it was timed, and, when the icount plugin counted,
 * their vector cost must be below the scalar -O2 loop's (they are vector
 * code: the peer is really SLEEF's RVV functions, not a libm loop). Ops
 * outside SLEEF's set (relu, layernorm) must not get the SLEEF baselines.
 * Removing the SLEEF link in k3.c (or the baselines in harness.c) fails the
 * first test; checked once by hand.
 *
 * The OpenBLAS peer (embed/blas.c) likewise: every op BLAS computes exactly
 * (gemm, gemm_nt, gemv, axpy, scale, add, l2norm per row) gets an "openblas"
 * baseline, checked before it is timed; an op BLAS does not compute (relu)
 * gets none.
 *
 * Also the A/A noise floor's path through the harness (test_aa_...).
 *
 * Runs under qemu-riscv64 on x86_64 hosts, natively on a board.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "platform/platform.h"
#include "platform/k3/k3_templates.h"

#include "k3_fixture.h"

static int group_setup(void **state)
{
    (void)state;
    return k3_group_open("k3peers");
}

#define ACT_HEAD                                                                              \
    "#include <stddef.h>\n#include <math.h>\n#include \"kernel_abi.h\"\n"                     \
    "void kope_kernel(size_t rows, size_t cols, const float *x, float *out,\n"               \
    "                 const float *gamma, const float *beta, const struct kope_scalars *s) {\n" \
    "  (void)gamma; (void)beta; (void)s;\n"

#define POINTWISE(expr) \
    ACT_HEAD "  for (size_t i = 0; i < rows * cols; i++) { float v = x[i]; out[i] = " expr "; }\n}\n"

static const struct {
    enum plat_op op;
    const char *src;
} cases[] = {
    {PLAT_OP_EXP, POINTWISE("expf(v)")},
    {PLAT_OP_TANH, POINTWISE("tanhf(v)")},
    {PLAT_OP_SIGMOID, POINTWISE("1.0f / (1.0f + expf(-v))")},
    {PLAT_OP_SILU, POINTWISE("v / (1.0f + expf(-v))")},
    {PLAT_OP_GELU_TANH, POINTWISE("0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))")},
    {PLAT_OP_GELU_ERF, POINTWISE("0.5f * v * (1.0f + erff(v * 0.70710678f))")},
    {PLAT_OP_SOFTMAX,
     ACT_HEAD "  for (size_t r = 0; r < rows; r++) {\n"
              "    const float *xr = x + r * cols; float *o = out + r * cols, mx = -INFINITY, sum = 0;\n"
              "    for (size_t j = 0; j < cols; j++) mx = fmaxf(mx, xr[j]);\n"
              "    for (size_t j = 0; j < cols; j++) { o[j] = expf(xr[j] - mx); sum += o[j]; }\n"
              "    for (size_t j = 0; j < cols; j++) o[j] /= sum; }\n}\n"},
    {PLAT_OP_RELU, POINTWISE("v > 0 ? v : 0")},
};

static void measure(enum plat_op op, const char *src, struct plat_measure *m)
{
    struct plat_task t;
    task_init(&t, op);
    struct plat_build b;
    struct plat_verify v;
    assert_int_equal(platform_compile(P, &t, src, strlen(src), &b), 0);
    assert_true(b.ok);
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    assert_true(v.pass);
    assert_int_equal(platform_measure(P, &t, &b, m), 0);
    platform_build_free(P, &b);
    if (!m->ok) fprintf(stderr, "measure failed: %s\n", m->detail);
    assert_true(m->ok);
}

static void test_sleef_peers_checked_and_vector(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        enum plat_op op = cases[c].op;
        struct plat_measure m;
        measure(op, cases[c].src, &m);
        fprintf(stderr, "  %s: %d baselines:", plat_op_name(op), m.n_baselines);
        for (int i = 0; i < m.n_baselines; i++)
            fprintf(stderr, " %s vcost=%llu ratio=%.2f", m.base[i].name,
                    (unsigned long long)m.base[i].vcost, m.base[i].ratio);
        fprintf(stderr, "\n");
        if (op == PLAT_OP_RELU) { /* not SLEEF's: no SLEEF baseline */
            for (int i = 0; i < m.n_baselines; i++)
                assert_null(strstr(m.base[i].name, "sleef"));
            continue;
        }
        assert_int_equal(m.n_baselines, 4);
        assert_string_equal(m.base[2].name, "sleef-m1");
        assert_string_equal(m.base[3].name, "sleef-m2");
        /* each was run on the task's inputs and checked before timing: the
         * harness times (and so reports) only a baseline that passed; a
         * wrong one leaves "checked NAME=wrong_result" in the method */
        assert_null(strstr(m.method, "checked sleef-m1=wrong"));
        assert_null(strstr(m.method, "checked sleef-m2=wrong"));
        assert_true(m.base[2].median_ns > 0 && m.base[3].median_ns > 0);
        if (m.emulated && m.has_icount) {
            assert_string_equal(m.base[0].name, "scalar-O2");
            for (int i = 2; i < 4; i++) {
                assert_true(m.base[i].vcost > 0);
                assert_true(m.base[i].ratio > 0);
                /* vector code: at least 2x below the scalar libm loop */
                assert_true(2 * m.base[i].vcost < m.base[0].vcost);
            }
        }
    }
}

/* the op's built-in template at its default point: a passing candidate of any family */
static char *template_source(enum plat_op op)
{
    const struct k3_template *tp = k3_template_for(op);
    assert_non_null(tp);
    int v[K3_PARAM_MAX];
    plat_point_default(&tp->sp, v);
    char *src = k3_point_source(tp, v, NULL);
    assert_non_null(src);
    return src;
}

static void test_openblas_peers_exact_ops(void **state)
{
    (void)state;
    static const enum plat_op blas_ops[] = {PLAT_OP_GEMM, PLAT_OP_GEMM_NT, PLAT_OP_GEMV, PLAT_OP_AXPY,
                                            PLAT_OP_SCALE, PLAT_OP_ADD, PLAT_OP_L2NORM, PLAT_OP_RELU};
    for (size_t c = 0; c < sizeof blas_ops / sizeof blas_ops[0]; c++) {
        enum plat_op op = blas_ops[c];
        char *src = template_source(op);
        struct plat_measure m;
        measure(op, src, &m);
        free(src);
        int found = -1;
        for (int i = 0; i < m.n_baselines; i++)
            if (strcmp(m.base[i].name, "openblas") == 0)
                found = i;
        fprintf(stderr, "  %s: openblas baseline %s\n", plat_op_name(op), found >= 0 ? "present" : "absent");
        if (op == PLAT_OP_RELU) { /* BLAS has no relu: no peer is made up */
            assert_int_equal(found, -1);
            continue;
        }
        if (strstr(m.method, "openblas=not used")) { /* a sysroot built for a wider VLEN: said so */
            fprintf(stderr, "  (openblas not usable here: %s)\n", m.method);
            continue;
        }
        assert_true(found >= 0);
        assert_null(strstr(m.method, "checked openblas=wrong"));
        assert_true(m.base[found].median_ns > 0);
        if (m.emulated && m.has_icount)
            assert_true(m.base[found].icount > 0);
    }
}

/* The A/A path end to end (harness flag, "candidate-aa" time line, host
 * parse): forced under emulation with PLAT_SET_AA, where it is recorded
 * but marks nothing "no difference" (ratios are by count there, exact).
 * Natively it runs on every measure; the verdict itself is test_noise's. */
static void test_aa_noise_floor_recorded(void **state)
{
    (void)state;
    struct platform *saved = P;
    assert_int_equal(k3_open("k3aa", PLAT_SET_AA, &P), 0);
    struct plat_measure m;
    measure(PLAT_OP_RELU, cases[sizeof cases / sizeof cases[0] - 1].src, &m);
    platform_close(P);
    P = saved;
    fprintf(stderr, "  A/A: floor=%.4f method=%s\n", m.noise_floor, m.method);
    assert_int_equal(m.has_noise_floor, 1);
    assert_true(m.noise_floor >= 0);
    assert_non_null(strstr(m.method, "A/A noise floor"));
    /* the second timing is not a baseline */
    for (int i = 0; i < m.n_baselines; i++) {
        assert_null(strstr(m.base[i].name, "candidate"));
        if (m.emulated)
            assert_int_equal(m.base[i].no_difference, 0);
    }
    /* without the flag, under emulation: no A/A */
    struct plat_measure m2;
    measure(PLAT_OP_RELU, cases[sizeof cases / sizeof cases[0] - 1].src, &m2);
    if (m2.emulated)
        assert_int_equal(m2.has_noise_floor, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sleef_peers_checked_and_vector),
        cmocka_unit_test(test_openblas_peers_exact_ops),
        cmocka_unit_test(test_aa_noise_floor_recorded),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/*
 * tests/test_context_tokens.c - the token estimator (core/context/tokens.c) against a
 * real BPE tokenizer on kope's own prompts.
 *
 * Prompts are built by context_build for tasks of the embedded suite (every
 * family, active at several budgets and passive) over a fixture graph, and
 * written to files. The npm package gpt-tokenizer (o200k_base and
 * cl100k_base, the GPT-4o and GPT-4 encodings) counts them through node; the
 * estimator's mean absolute relative error must be within 10% for both, and
 * no single prompt may be off by more than 20%.
 *
 * gpt-tokenizer is used only here. It is installed with npm into
 * $KOPE_NPM_DIR (default $HOME/.cache/kope-npm), once, from npm's cache when
 * offline (--prefer-offline) or from the registry (CI). Without node or npm,
 * or when the package cannot be installed, the test is SKIPPED with the
 * reason printed (tests/run.sh lists skips): it never passes silently.
 */
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>

#include "core/context/context.h"
#include "core/task/task.h"
#include "core/context/tokens.h"
#include "context_fixture.h"

#define GPT_TOKENIZER_VERSION "4.0.0"
#define MAX_PROMPTS 64

static char npm_dir[2048];
static char reason[4096];

static int have_tokenizer(void)
{
    static char out[8192];
    if (run_cmd(out, sizeof out, "command -v node") != 0) {
        snprintf(reason, sizeof reason, "node is not installed");
        return 0;
    }
    const char *d = getenv("KOPE_NPM_DIR");
    const char *home = getenv("HOME");
    if (d && *d)
        snprintf(npm_dir, sizeof npm_dir, "%s", d);
    else
        snprintf(npm_dir, sizeof npm_dir, "%s/.cache/kope-npm", home && *home ? home : "/tmp");
    char pkg[2200];
    snprintf(pkg, sizeof pkg, "%s/node_modules/gpt-tokenizer/package.json", npm_dir);
    struct stat sb;
    if (stat(pkg, &sb) == 0)
        return 1;
    if (run_cmd(out, sizeof out, "command -v npm") != 0) {
        snprintf(reason, sizeof reason, "npm is not installed (needed once to fetch gpt-tokenizer)");
        return 0;
    }
    int rc = run_cmd(out, sizeof out,
                     "mkdir -p '%s' && timeout 300 npm install --prefix '%s' --no-audit --no-fund "
                     "--no-save --prefer-offline gpt-tokenizer@" GPT_TOKENIZER_VERSION,
                     npm_dir, npm_dir);
    if (rc != 0 || stat(pkg, &sb) != 0) {
        size_t n = strlen(out);
        snprintf(reason, sizeof reason, "npm install gpt-tokenizer failed (offline and not in "
                                        "npm's cache?): %.600s", n > 600 ? out + n - 600 : out);
        return 0;
    }
    return 1;
}

static const char COUNT_JS[] =
    "const o = require('gpt-tokenizer/cjs/encoding/o200k_base');\n"
    "const c = require('gpt-tokenizer/cjs/encoding/cl100k_base');\n"
    "const fs = require('fs');\n"
    "for (const f of process.argv.slice(2)) {\n"
    "  const t = fs.readFileSync(f, 'utf8');\n"
    "  console.log(o.encode(t).length + ' ' + c.encode(t).length);\n"
    "}\n";

struct prompt_file {
    char path[512];
    size_t est;
    long o200k, cl100k;
};

static void write_file(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(a, f);
    fputs("\n", f);
    fputs(b, f);
    assert_int_equal(fclose(f), 0);
}

/* kope's own prompts for a spread of tasks, modes and budgets */
static size_t make_prompts(struct prompt_file *pf)
{
    struct fx f;
    fx_open(&f, tpath("tok.db"), tpath("tok.key"));
    struct task_suite suite;
    char err[256];
    assert_int_equal(task_suite_load(NULL, &suite, err, sizeof err), 0);
    /* history for every 4th task: passes, failures with compiler output */
    assert_int_equal(graph_begin(&f.g), 0);
    uint8_t ids[TASK_MAX_TASKS][32];
    for (size_t i = 0; i < suite.n_tasks; i++) {
        const struct plat_task *t = &suite.tasks[i].t;
        char shape[256];
        if (plat_op_family(t->op) == PLAT_FAM_MATMUL)
            snprintf(shape, sizeof shape, "{\"m\":%llu,\"n\":%llu,\"k\":%llu}",
                     (unsigned long long)t->m, (unsigned long long)(t->n ? t->n : 1),
                     (unsigned long long)t->k);
        else if (t->rows)
            snprintf(shape, sizeof shape, "{\"rows\":%llu,\"cols\":%llu}",
                     (unsigned long long)t->rows, (unsigned long long)t->cols);
        else
            snprintf(shape, sizeof shape, "{\"n\":%llu}", (unsigned long long)t->n);
        fx_task(&f, i % 5 == 4 ? "ascend" : "k3", t->name, plat_op_name(t->op), shape, ids[i]);
        if (i % 4)
            continue;
        char *src = fx_source((int)i, 12);
        uint8_t d[32];
        fx_attempt(&f, "k3", ids[i], NULL, "lmul4,unroll2", src, "pass", 1.7, 0.4, NULL, d);
        fx_attempt(&f, "k3", ids[i], d, "lmul8,tail-ta", src, "wrong_result", -1, -1,
                   "case n=VL+1: max_abs 3.1e-02 at 33", NULL);
        fx_attempt(&f, "k3", ids[i], d, "exp-poly3", src, "compile_error", -1, -1,
                   "k.c:14:9: error: call to undeclared function '__riscv_vfexp_v_f32m4'", NULL);
        free(src);
    }
    assert_int_equal(graph_commit(&f.g), 0);
    static const char diag[] =
        "k.c:12:22: error: use of undeclared identifier 'vl8'\n"
        "   12 |     vfloat32m8_t v = __riscv_vle32_v_f32m8(x + i, vl8);\n"
        "      |                                                  ^\n"
        "k.c:19:5: warning: incompatible pointer types passing 'int32_t *' to 'float *'\n"
        "1 error generated.\n";
    size_t n = 0;
    const size_t budgets[] = {1200, 3000, 6000};
    for (size_t i = 0; i < suite.n_tasks && n + 4 <= MAX_PROMPTS; i += 5) {
        const struct task_entry *te = &suite.tasks[i];
        for (int m = 0; m < 4; m++) {
            struct ctx_request rq;
            ctx_request_init(&rq);
            rq.task = &te->t;
            rq.task_id = ids[i];
            struct ctx_feedback fb = {.stage = "compile", .status = "compile_error", .tags = "lmul8", .text = diag};
            if (i % 2) {
                rq.feedback = &fb;
                rq.n_feedback = 1;
                rq.best_source = "#include <riscv_vector.h>\n#include \"kernel_abi.h\"\n"
                                 "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
                                 "                 const struct kope_scalars *s)\n{\n"
                                 "    for (size_t i = 0, vl; i < n; i += vl) {\n"
                                 "        vl = __riscv_vsetvl_e32m4(n - i);\n"
                                 "        vfloat32m4_t a = __riscv_vle32_v_f32m4(x + i, vl);\n"
                                 "        __riscv_vse32_v_f32m4(out + i, a, vl);\n    }\n}\n";
                rq.best_summary = "pass, 1.70x vs scalar-O2 (icount)";
            }
            if (m < 3)
                rq.budget_tokens = budgets[m];
            else
                rq.mode = CTX_PASSIVE;
            struct ctx_prompt p;
            ctx_prompt_init(&p);
            assert_int_equal(context_build(&f.g, &rq, &p), 0);
            struct prompt_file *x = &pf[n++];
            snprintf(x->path, sizeof x->path, "%s", tpath("prompt-%zu.txt", n));
            write_file(x->path, p.system, p.user);
            size_t len = strlen(p.system) + 1 + strlen(p.user);
            char *joined = malloc(len + 1);
            assert_non_null(joined);
            snprintf(joined, len + 1, "%s\n%s", p.system, p.user);
            x->est = tokens_estimate(joined, len);
            free(joined);
            ctx_prompt_free(&p);
        }
    }
    task_suite_free(&suite);
    fx_close(&f);
    return n;
}

static void test_estimator_vs_bpe(void **s)
{
    (void)s;
    if (!have_tokenizer()) {
        printf("skip: tokenizer check: %s\n", reason);
        skip();
    }
    static struct prompt_file pf[MAX_PROMPTS];
    size_t n = make_prompts(pf);
    assert_true(n >= 20);
    const char *js = tpath("count.js");
    FILE *f = fopen(js, "w");
    assert_non_null(f);
    fputs(COUNT_JS, f);
    assert_int_equal(fclose(f), 0);
    static char cmd[65536], out[65536];
    size_t off = (size_t)snprintf(cmd, sizeof cmd, "NODE_PATH='%s/node_modules' node '%s'", npm_dir, js);
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(cmd + off, sizeof cmd - off, " '%s'", pf[i].path);
    assert_true(off < sizeof cmd);
    int rc = run_cmd(out, sizeof out, "%s", cmd);
    if (rc)
        printf("node failed: %s\n", out);
    assert_int_equal(rc, 0);
    char *p = out;
    double sum_o = 0, sum_c = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        char *end;
        pf[i].o200k = strtol(p, &end, 10);
        pf[i].cl100k = strtol(end, &end, 10);
        p = end;
        assert_true(pf[i].o200k > 0 && pf[i].cl100k > 0);
        double eo = ((double)pf[i].est - (double)pf[i].o200k) / (double)pf[i].o200k;
        double ec = ((double)pf[i].est - (double)pf[i].cl100k) / (double)pf[i].cl100k;
        sum_o += fabs(eo);
        sum_c += fabs(ec);
        worst = fmax(worst, fmax(fabs(eo), fabs(ec)));
        printf("prompt %2zu: estimate %6zu  o200k %6ld (%+5.1f%%)  cl100k %6ld (%+5.1f%%)\n", i + 1,
               pf[i].est, pf[i].o200k, 100 * eo, pf[i].cl100k, 100 * ec);
    }
    printf("estimator over %zu prompts: mean |error| %.1f%% vs o200k, %.1f%% vs cl100k, worst %.1f%%\n",
           n, 100 * sum_o / (double)n, 100 * sum_c / (double)n, 100 * worst);
    assert_true(sum_o / (double)n < 0.10);
    assert_true(sum_c / (double)n < 0.10);
    assert_true(worst < 0.20);
}

/* Properties that need no tokenizer. */
static void test_estimator_basics(void **s)
{
    (void)s;
    assert_int_equal(tokens_estimate("", 0), 0);
    assert_int_equal(tokens_estimate_str(NULL), 0);
    assert_int_equal(tokens_estimate_str("hello"), 1);
    assert_int_equal(tokens_estimate_str("hello world"), 2);
    /* grows with the text, and is additive within a few tokens */
    const char *a = "vfloat32m4_t x = __riscv_vle32_v_f32m4(src + i, vl);\n";
    size_t ta = tokens_estimate_str(a);
    assert_true(ta >= 10 && ta <= 40);
    char two[256];
    snprintf(two, sizeof two, "%s%s", a, a);
    size_t t2 = tokens_estimate_str(two);
    assert_true(t2 + 2 >= 2 * ta && t2 <= 2 * ta + 2);
    /* non-ASCII text costs tokens too, and invalid bytes do not crash */
    assert_true(tokens_estimate_str("\xce\xb1\xce\xb2\xce\xb3 \xe2\x86\x92 \xff\xfe") >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimator_basics),
        cmocka_unit_test(test_estimator_vs_bpe),
    };
    return cmocka_run_group_tests_name("context_tokens", tests, NULL, NULL);
}

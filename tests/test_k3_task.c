/*
 * tests/test_k3_task.c - task suite parsing (core/task/task.c): the embedded
 * default suite, and every kind of hand-written mistake, each of which must
 * produce an error that names the task and the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "core/err.h"
#include "core/task/task.h"

static void expect_error(const char *json, const char *needle1, const char *needle2)
{
    struct task_suite s;
    char err[512] = "";
    int rc = task_suite_parse(json, strlen(json), &s, err, sizeof err);
    if (rc == 0 || !strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fprintf(stderr, "json: %s\nrc=%d err: %s\n", json, rc, err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err, needle1));
    if (needle2)
        assert_non_null(strstr(err, needle2));
    assert_null(s.tasks);
    assert_int_equal(s.n_tasks, 0);
}

#define ONE(task) "{\"suite\": \"t\", \"tasks\": [" task "]}"

static void test_default_suite(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512];
    assert_int_equal(task_suite_load(NULL, &s, err, sizeof err), 0);
    assert_string_equal(s.name, "k3-core");
    assert_true(s.n_tasks >= 40);
    int fam[PLAT_FAM_COUNT] = {0};
    for (size_t i = 0; i < s.n_tasks; i++) {
        fam[s.tasks[i].t.family]++;
        assert_true(s.tasks[i].source[0] != '\0'); /* every shape says where it comes from */
        assert_true(s.tasks[i].t.rtol > 0 || s.tasks[i].t.op == PLAT_OP_RELU ||
                    s.tasks[i].t.op == PLAT_OP_MAX || s.tasks[i].t.op == PLAT_OP_ARGMAX ||
                    s.tasks[i].t.op == PLAT_OP_CLAMP);
    }
    for (int f = 0; f < PLAT_FAM_COUNT; f++)
        assert_true(fam[f] >= 5);
    const struct task_entry *e = task_suite_find(&s, "gemv-qproj-4096");
    assert_non_null(e);
    assert_int_equal(e->t.op, PLAT_OP_GEMV);
    assert_int_equal(e->t.m, 4096);
    assert_int_equal(e->t.n, 1);
    task_suite_free(&s);
}

static void test_good_task_and_defaults(void **state)
{
    (void)state;
    const char *j = ONE("{\"name\": \"a\", \"op\": \"softmax\", \"dtype\": \"f32\","
                        " \"shape\": {\"rows\": 2, \"cols\": 10}},"
                        "{\"name\": \"b\", \"op\": \"gemm\", \"shape\": {\"m\": 3, \"n\": 4, \"k\": 5, \"batch\": 2},"
                        " \"tolerance\": {\"rtol\": 0.01, \"atol\": 0.001}}");
    struct task_suite s;
    char err[256];
    assert_int_equal(task_suite_parse(j, strlen(j), &s, err, sizeof err), 0);
    assert_int_equal(s.n_tasks, 2);
    double rt, at;
    plat_op_default_tol(PLAT_OP_SOFTMAX, &rt, &at);
    assert_true(s.tasks[0].t.rtol == rt && s.tasks[0].t.atol == at);
    assert_int_equal(s.tasks[0].t.rows, 2);
    assert_int_equal(s.tasks[1].t.batch, 2);
    assert_true(s.tasks[1].t.rtol == 0.01);
    task_suite_free(&s);
}

static void test_unknown_op(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"x1\", \"op\": \"conv2d\", \"shape\": {\"n\": 4}}"), "'x1'", "op 'conv2d' is unknown");
}

static void test_missing_size(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"x2\", \"op\": \"rmsnorm\", \"shape\": {\"rows\": 4}}"), "'x2'", "shape.cols is missing");
    expect_error(ONE("{\"name\": \"x3\", \"op\": \"gemv\", \"shape\": {\"m\": 4}}"), "'x3'", "shape.k is missing");
}

static void test_negative_zero_fraction(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"x4\", \"op\": \"add\", \"shape\": {\"n\": -3}}"), "'x4'", "shape.n = -3 is negative");
    expect_error(ONE("{\"name\": \"x5\", \"op\": \"add\", \"shape\": {\"n\": 0}}"), "'x5'", "shape.n = 0");
    expect_error(ONE("{\"name\": \"x6\", \"op\": \"add\", \"shape\": {\"n\": 2.5}}"), "'x6'", "not a whole number");
    expect_error(ONE("{\"name\": \"x7\", \"op\": \"add\", \"shape\": {\"n\": \"8\"}}"), "'x7'", "must be a number");
}

static void test_absurd_size(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"x8\", \"op\": \"gemm\", \"shape\": {\"m\": 100000, \"n\": 100000, \"k\": 100000}}"),
                 "'x8'", "absurd");
    expect_error(ONE("{\"name\": \"x9\", \"op\": \"add\", \"shape\": {\"n\": 1e12}}"), "'x9'", "absurd");
}

static void test_wrong_shape_key(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"y1\", \"op\": \"softmax\", \"shape\": {\"rows\": 1, \"col\": 8}}"),
                 "'y1'", "shape.col is not a size of op softmax");
    expect_error(ONE("{\"name\": \"y2\", \"op\": \"add\", \"shape\": {\"rows\": 1, \"cols\": 8}}"),
                 "'y2'", "shape.rows");
    expect_error(ONE("{\"name\": \"y3\", \"op\": \"add\"}"), "'y3'", "shape is missing");
}

static void test_bad_tolerance_dtype_name(void **state)
{
    (void)state;
    expect_error(ONE("{\"name\": \"z1\", \"op\": \"add\", \"shape\": {\"n\": 8}, \"tolerance\": {\"rtol\": -1}}"),
                 "'z1'", "tolerance.rtol");
    expect_error(ONE("{\"name\": \"z2\", \"op\": \"add\", \"shape\": {\"n\": 8}, \"dtype\": \"f16\"}"),
                 "'z2'", "dtype");
    expect_error(ONE("{\"op\": \"add\", \"shape\": {\"n\": 8}}"), "task #1", "name");
    expect_error(ONE("{\"name\": \"dup\", \"op\": \"add\", \"shape\": {\"n\": 8}},"
                     "{\"name\": \"dup\", \"op\": \"mul\", \"shape\": {\"n\": 8}}"),
                 "'dup' (#2)", "already used");
    expect_error(ONE("{\"name\": \"bad name!\", \"op\": \"add\", \"shape\": {\"n\": 8}}"), "task #1", "name");
}

static void test_bad_top_level(void **state)
{
    (void)state;
    expect_error("{\"suite\": \"t\", \"tasks\": [", "not valid JSON", NULL);
    expect_error("[1, 2]", "top level", NULL);
    expect_error("{\"tasks\": []}", "suite", NULL);
    expect_error("{\"suite\": \"t\", \"tasks\": []}", "empty", NULL);
    expect_error("{\"suite\": \"t\", \"tasks\": {}}", "array", NULL);
}

static void test_file_errors_name_file(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512];
    const char *tmp = getenv("KOPE_TEST_TMP");
    char path[600];
    snprintf(path, sizeof path, "%s/bad-suite.json", tmp ? tmp : "/tmp");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(ONE("{\"name\": \"q\", \"op\": \"nope\", \"shape\": {\"n\": 1}}"), f);
    fclose(f);
    assert_int_equal(task_suite_load(path, &s, err, sizeof err), KOPE_ERR_PARSE);
    assert_non_null(strstr(err, "bad-suite.json"));
    assert_non_null(strstr(err, "'q'"));
    snprintf(path, sizeof path, "%s/missing.json", tmp ? tmp : "/tmp");
    assert_int_equal(task_suite_load(path, &s, err, sizeof err), KOPE_ERR_IO);
}

/* A user's own op: name, family, ref and range parsed; the shape keys follow
 * the family; inline source is a string with a newline; every mistake names
 * the task and the field. */
#define UREF "\"void kope_kernel(void)\\n{}\\n\""
static void test_user_op(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512] = "";
    const char *ok = ONE("{\"name\": \"sw\", \"op\": \"swiglu\", \"family\": \"elementwise\", "
                         "\"ref\": " UREF ", \"shape\": {\"n\": 64}, \"range\": [-8, 8]},"
                         "{\"name\": \"ls\", \"op\": \"logsoftmax\", \"family\": \"activation\", "
                         "\"ref\": \"ops/ls.c\", \"shape\": {\"rows\": 2, \"cols\": 10}},"
                         "{\"name\": \"ge\", \"op\": \"gelu_q\", \"family\": \"activation\", "
                         "\"ref\": " UREF ", \"seed\": " UREF ", \"shape\": {\"n\": 10}}");
    int rc = task_suite_parse(ok, strlen(ok), &s, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(s.n_tasks, 3);
    const struct plat_task *t = &s.tasks[0].t;
    assert_int_equal(t->op, PLAT_OP_USER);
    assert_int_equal(t->family, PLAT_FAM_ELEMENTWISE);
    assert_string_equal(plat_task_op_name(t), "swiglu");
    assert_ptr_equal(t->user, s.tasks[0].user);
    assert_non_null(t->user->ref);
    assert_string_equal(t->user->ref, "void kope_kernel(void)\n{}\n");
    assert_string_equal(t->user->file, "");
    assert_true(t->user->in_lo == -8 && t->user->in_hi == 8);
    assert_true(t->rtol == 1e-4 && t->atol == 1e-5);
    t = &s.tasks[1].t;
    assert_int_equal(t->family, PLAT_FAM_ACTIVATION);
    assert_true(plat_task_rowwise(t));
    assert_int_equal(t->rows, 2);
    assert_string_equal(t->user->file, "ops/ls.c");
    assert_null(t->user->ref); /* a file: read by task_suite_load */
    t = &s.tasks[2].t;
    assert_false(plat_task_rowwise(t));
    assert_int_equal(t->n, 10);
    assert_non_null(s.tasks[2].seed); /* inline seed */
    assert_int_equal(s.tasks[2].seed_len, strlen("void kope_kernel(void)\n{}\n"));
    task_suite_free(&s);

    expect_error(ONE("{\"name\": \"u1\", \"op\": \"swiglu\", \"family\": \"pointwise\", \"ref\": \"r.c\", "
                     "\"shape\": {\"n\": 4}}"), "'u1'", "family 'pointwise' is unknown");
    expect_error(ONE("{\"name\": \"u2\", \"op\": \"swiglu\", \"ref\": \"r.c\", \"shape\": {\"n\": 4}}"),
                 "'u2'", "family is missing");
    expect_error(ONE("{\"name\": \"u3\", \"op\": \"softmax\", \"family\": \"activation\", \"ref\": \"r.c\", "
                     "\"shape\": {\"rows\": 1, \"cols\": 4}}"), "'u3'", "ref: op 'softmax' is in the catalogue");
    expect_error(ONE("{\"name\": \"u4\", \"op\": \"Swi-glu\", \"family\": \"elementwise\", \"ref\": \"r.c\", "
                     "\"shape\": {\"n\": 4}}"), "'u4'", "op 'Swi-glu'");
    expect_error(ONE("{\"name\": \"u5\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"\", "
                     "\"shape\": {\"n\": 4}}"), "'u5'", "ref must be");
    expect_error(ONE("{\"name\": \"u6\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"r.c\", "
                     "\"shape\": {\"rows\": 4, \"cols\": 4}}"), "'u6'", "shape.rows is not a size of op swiglu");
    expect_error(ONE("{\"name\": \"u7\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"r.c\", "
                     "\"shape\": {\"n\": 4}, \"range\": [3, 1]}"), "'u7'", "range");
    expect_error(ONE("{\"name\": \"u8\", \"op\": \"add\", \"family\": \"elementwise\", \"shape\": {\"n\": 4}}"),
                 "'u8'", "family: only a user's own op");
    expect_error(ONE("{\"name\": \"u9\", \"op\": \"rsum\", \"family\": \"reduction\", \"ref\": \"r.c\", "
                     "\"shape\": {\"n\": 4}}"), "'u9'", "shape.n is not a size of op rsum");
    expect_error(ONE("{\"name\": \"u10\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": 7, "
                     "\"shape\": {\"n\": 4}}"), "'u10'", "ref must be");
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A suite file's ref and seed files are read relative to it: a missing ref
 * names the task, the field and the file. */
static void test_user_op_files(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512] = "", path[700], dir[600];
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/uops", tmp ? tmp : "/tmp");
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/r.c", dir);
    put(path, "void kope_kernel(void) {}\n");
    snprintf(path, sizeof path, "%s/s.json", dir);
    put(path, ONE("{\"name\": \"u\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"r.c\", "
                  "\"shape\": {\"n\": 4}}"));
    assert_int_equal(task_suite_load(path, &s, err, sizeof err), 0);
    assert_non_null(s.tasks[0].t.user->ref);
    assert_int_equal(s.tasks[0].t.user->ref_len, strlen("void kope_kernel(void) {}\n"));
    task_suite_free(&s);
    put(path, ONE("{\"name\": \"u\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"gone.c\", "
                  "\"shape\": {\"n\": 4}}"));
    assert_int_not_equal(task_suite_load(path, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, "task 'u'"));
    assert_non_null(strstr(err, "ref"));
    assert_non_null(strstr(err, "gone.c"));
    assert_null(s.tasks);
}


/* A suite's file names are an allow-list (core/task suite_name_ok): a path
 * relative to the suite's folder, no "..", no absolute path, no symbolic
 * link on the way; anything else is refused before a byte is read (the
 * outsider red team's suites named "$HOME/.ssh/id_rsa" as a seed, and kope
 * stored, exported and prompted it). Sub-folders still work. */
static void test_suite_file_names_confined(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512] = "", path[700], dir[600], secret[700], link[700];
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/confine", tmp ? tmp : "/tmp");
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sub/k.c", dir);
    put(path, "void kope_kernel(void) {}\n");
    snprintf(secret, sizeof secret, "%s/secret.txt", tmp ? tmp : "/tmp");
    put(secret, "FAKE-SECRET\n");
    snprintf(link, sizeof link, "%s/link.c", dir);
    unlink(link);
    assert_int_equal(symlink(secret, link), 0);
    snprintf(path, sizeof path, "%s/s.json", dir);
    put(path, ONE("{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4}, \"seed\": \"sub/k.c\"}"));
    assert_int_equal(task_suite_load(path, &s, err, sizeof err), 0);
    assert_non_null(s.tasks[0].seed);
    task_suite_free(&s);
    const char *bad[] = {secret, "../secret.txt", "sub/../../secret.txt", "./sub/k.c", "link.c",
                         "sub//k.c", "k\\u001b.c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[1200];
        snprintf(json, sizeof json,
                 ONE("{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4}, \"seed\": \"%s\"}"), bad[i]);
        put(path, json);
        err[0] = '\0';
        int rc = task_suite_load(path, &s, err, sizeof err);
        if (rc == 0 || !strstr(err, "task 't'") || strstr(err, "FAKE-SECRET"))
            fail_msg("seed \"%s\" accepted or badly refused (rc %d): %s", bad[i], rc, err);
        assert_null(s.tasks);
    }
    /* the same rule for a user op's reference */
    put(path, ONE("{\"name\": \"u\", \"op\": \"swiglu\", \"family\": \"elementwise\", \"ref\": \"../secret.txt\", "
                  "\"shape\": {\"n\": 4}}"));
    assert_int_not_equal(task_suite_load(path, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, "relative to the suite file's folder"));
}


/* A suite's free text that kope prints (its name, a task's source) is on
 * the text allow-list: an escape sequence, a bidirectional control or a
 * line break is refused with the field named (the outsider red team's
 * suite set the terminal's title and cleared it from `kope tasks`). */
static void test_suite_text_allow_list(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512];
    static const char *const bad[] = {
        "{\"suite\": \"x\\u001b[2J\", \"tasks\": [{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4}}]}",
        "{\"suite\": \"x\", \"tasks\": [{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4},"
        " \"source\": \"paper \\u001b]0;pwned\\u0007\"}]}",
        "{\"suite\": \"x\", \"tasks\": [{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4},"
        " \"source\": \"a\\u202eb\"}]}",
        "{\"suite\": \"two\\nlines\", \"tasks\": [{\"name\": \"t\", \"op\": \"add\", \"shape\": {\"n\": 4}}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (task_suite_parse(bad[i], strlen(bad[i]), &s, err, sizeof err) == 0)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(err, "is not allowed"));
    }
    /* a user op may not take a word the exported library uses after kope_ */
    const char *scalar = "{\"suite\": \"x\", \"tasks\": [{\"name\": \"add\", \"op\": \"scalar\","
                         " \"family\": \"elementwise\", \"ref\": \"r.c\", \"shape\": {\"n\": 4}}]}";
    assert_int_not_equal(task_suite_parse(scalar, strlen(scalar), &s, err, sizeof err), 0);
    assert_non_null(strstr(err, "op 'scalar' is a name kope's exported library uses itself"));
    const char *good = "{\"suite\": \"caf\\u00e9\", \"tasks\": [{\"name\": \"t\", \"op\": \"add\","
                       " \"shape\": {\"n\": 4}, \"source\": \"Qwen2.5 \\u2014 attention\"}]}";
    assert_int_equal(task_suite_parse(good, strlen(good), &s, err, sizeof err), 0);
    task_suite_free(&s);
}

/* The platform catalogue the parser relies on: op names round-trip, each
 * failure reason and screen rule has its own stable name, the error band
 * has text, and the work/roofline arithmetic is right on simple numbers. */
static void test_platform_catalogue(void **state)
{
    (void)state;
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        assert_int_equal(plat_op_parse(plat_op_name((enum plat_op)op)), op);
        assert_true(plat_op_family((enum plat_op)op) < PLAT_FAM_COUNT);
    }
    assert_int_equal(plat_op_parse("nope"), -1);
    for (int a = 0; a < PLAT_FAIL_COUNT; a++)
        for (int b = a + 1; b < PLAT_FAIL_COUNT; b++)
            assert_string_not_equal(plat_fail_name((enum plat_fail)a), plat_fail_name((enum plat_fail)b));
    for (int a = 0; a < PLAT_SCREEN_COUNT; a++)
        for (int b = a + 1; b < PLAT_SCREEN_COUNT; b++)
            assert_string_not_equal(plat_screen_rule_name((enum plat_screen_rule)a),
                                    plat_screen_rule_name((enum plat_screen_rule)b));
    for (int code = -300; code >= -312; code--)
        assert_non_null(platform_strerror(code));
    assert_null(platform_strerror(-5));

    struct plat_task t = {.op = PLAT_OP_GEMM, .m = 2, .n = 3, .k = 4, .batch = 1};
    double flops, bytes;
    plat_task_work(&t, &flops, &bytes);
    assert_true(flops == 2.0 * 2 * 3 * 4);
    assert_true(bytes == 4.0 * (8 + 12 + 6));
    /* peak 10 GFLOP/s, 20 GB/s: at 0.5 flop/byte attainable is 10 GFLOP/s */
    struct plat_probe pr = {.peak_gflops_core = 10, .triad_gbs = 20};
    double share = plat_roofline_share(&pr, 1e6, 2e6, 2e5); /* 5 GFLOP/s achieved */
    assert_true(share > 0.499 && share < 0.501);
    share = plat_roofline_share(&pr, 1e6, 1e7, 1e6);       /* 0.1 flop/byte: 2 GFLOP/s attainable */
    assert_true(share > 0.499 && share < 0.501);
    pr.emulated = 1;
    assert_true(plat_roofline_share(&pr, 1e6, 2e6, 2e5) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_suite),
        cmocka_unit_test(test_good_task_and_defaults),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_missing_size),
        cmocka_unit_test(test_negative_zero_fraction),
        cmocka_unit_test(test_absurd_size),
        cmocka_unit_test(test_wrong_shape_key),
        cmocka_unit_test(test_bad_tolerance_dtype_name),
        cmocka_unit_test(test_bad_top_level),
        cmocka_unit_test(test_file_errors_name_file),
        cmocka_unit_test(test_user_op),
        cmocka_unit_test(test_user_op_files),
        cmocka_unit_test(test_suite_file_names_confined),
        cmocka_unit_test(test_suite_text_allow_list),
        cmocka_unit_test(test_platform_catalogue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

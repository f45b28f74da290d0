/*
 * tests/test_k3_cli.c - `kope tasks` and `kope measure` as a user runs them:
 * the real binary ($KOPE_BIN, set by make test), its output and exit codes
 * (0 passed, 1 failed candidate or platform, 2 usage).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "testutil.h"

static char out[1 << 16];

/* Run kope with args (a shell fragment) in the test dir; output into out. */
static int kope(const char *args)
{
    const char *bin = getenv("KOPE_BIN");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin ? bin : "kope", args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(name, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        return 0;
    const char *tmp = getenv("KOPE_TEST_TMP");
    if (tmp && chdir(tmp) != 0)
        return -1;
    write_file("kope.json", "{}\n");
    return 0;
}

static void test_tasks_lists_default_suite(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    assert_int_equal(kope("tasks"), 0);
    assert_non_null(strstr(out, "suite k3-core: 64 tasks"));
    assert_non_null(strstr(out, "softmax-vocab-151936"));
    assert_non_null(strstr(out, "Qwen2.5"));
}

static void test_tasks_bad_suite_file(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    write_file("bad.json", "{\"suite\": \"s\", \"tasks\": [{\"name\": \"t1\", \"op\": \"rmsnorm\","
                           " \"shape\": {\"rows\": 1, \"cols\": -4}}]}");
    assert_int_equal(kope("tasks --suite bad.json"), 1);
    assert_non_null(strstr(out, "bad.json"));
    assert_non_null(strstr(out, "'t1'"));
    assert_non_null(strstr(out, "shape.cols"));
}

static void test_measure_good_kernel(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    write_file("good.c",
               "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
               "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
               "                 const struct kope_scalars *s) {\n"
               "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n");
    assert_int_equal(kope("measure good.c --task add-res-896"), 0);
    assert_non_null(strstr(out, "verify: PASS"));
    assert_non_null(strstr(out, "scalar-O2"));
    assert_non_null(strstr(out, "autovec-O3"));
    if (test_native_vm()) {
        /* natively in a virtual machine (the board VM): the code is native,
         * the machine emulated; labelled so, and no ratio from its times */
        assert_non_null(strstr(out, "VIRTUAL MACHINE"));
        assert_non_null(strstr(out, "virtual machine: not a speed"));
        assert_null(strstr(out, "x by "));
        assert_non_null(strstr(out, "no speed ratio claimed"));
    } else if (strstr(out, "(emulated)")) {
        assert_non_null(strstr(out, "EMULATED"));
    }
}

static void test_measure_bad_kernel_and_usage(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    write_file("tail.c",
               "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
               "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
               "                 const struct kope_scalars *s) {\n"
               "  (void)s; for (size_t i = 0; i < (n & ~(size_t)7); i++) out[i] = x[i] + y[i];\n"
               "  for (size_t i = n & ~(size_t)7; i < n; i++) out[i] = 0;\n}\n");
    assert_int_equal(kope("measure tail.c --task add-res-896"), 1);
    assert_non_null(strstr(out, "FAIL wrong_result"));
    assert_int_equal(kope("measure tail.c --task no-such-task"), 2);
    assert_int_equal(kope("measure --task add-res-896"), 2);
    assert_int_equal(kope("measure missing.c --task add-res-896"), 1);
}

static void test_measure_relative_work_dir(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    /* a relative platform.k3.work_dir: harness runs chdir into their build
     * dir, so the platform must hold absolute paths */
    write_file("rel.json", "{\"platform\": {\"k3\": {\"work_dir\": \"relwork\"}}}\n");
    assert_int_equal(kope("--config rel.json measure good.c --task add-res-896 --verify-only"), 0);
    assert_non_null(strstr(out, "verify: PASS"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks_lists_default_suite),
        cmocka_unit_test(test_tasks_bad_suite_file),
        cmocka_unit_test(test_measure_good_kernel),
        cmocka_unit_test(test_measure_bad_kernel_and_usage),
        cmocka_unit_test(test_measure_relative_work_dir),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

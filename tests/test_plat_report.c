/*
 * tests/test_plat_report.c - the report every target's judge prints and the
 * one rule that turns a judged run into a verdict (platform/judge/report.c):
 * parsing, and plat_run_classify's order (kope's kills before anything the
 * run printed, a refused report before the judge's own verdict, the
 * candidate's output never quoted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "platform/proc.h"
#include "platform/judge/report.h"

static struct plat_report parsed(const char *text)
{
    struct plat_report r;
    memset(&r, 0, sizeof r);
    char *copy = strdup(text);
    assert_non_null(copy);
    plat_report_parse(copy, &r);
    free(copy);
    return r;
}

static void test_parse(void **state)
{
    (void)state;
    struct plat_report r = parsed("case task 896 1 896 0 0 1 1 none 0 0 0 0\n"
                                  "case awkward-1 1 1 1 0 0 1 0 wrong_result 1 1 1 0\n"
                                  "garbage line\n"
                                  "fail crash 11 the kernel crashed\n"
                                  "fail timeout 0 a second failure is not the first\n"
                                  "done\n");
    assert_true(r.done);
    assert_int_equal(r.n_cases, 2);
    assert_true(r.cases[0].pass);
    assert_false(r.cases[1].pass);
    assert_int_equal(r.cases[1].reason, PLAT_FAIL_WRONG_RESULT);
    assert_int_equal(r.fail, PLAT_FAIL_CRASH);
    assert_int_equal(r.fail_sig, 11);
    assert_string_equal(r.fail_detail, "the kernel crashed");
    assert_false(r.cases[1].has_vals); /* a 13-field line (an older harness): no values */
    /* a failing case's values after the 13 fields (hargs.h) */
    struct plat_report v = parsed("case n=1 1 0 0 0 0 0 0 wrong_result 2 1 1 0 got=0x7fc0dead ref=1.5 x=0.25 y=1.25\n"
                                  "case rows 0 2 8 0 0 0 0 wrong_result 2 1 1 3 got=0x3f800000 ref=-inf\n"
                                  "case k=1 0 0 0 0 0 0 0 nan_inf 2 1 1 3 got=zz ref=1\n"
                                  "case task 8 0 0 0 0 0 1 none 0 0 0 0 got=0x1 ref=1\n");
    assert_int_equal(v.n_cases, 4);
    assert_true(v.cases[0].has_vals);
    assert_int_equal(v.cases[0].got_bits, 0x7fc0dead);
    assert_true(v.cases[0].ref_at == 1.5);
    assert_int_equal(v.cases[0].n_in, 2);
    assert_true(v.cases[0].in_at[0] == 0.25 && v.cases[0].in_at[1] == 1.25);
    assert_true(v.cases[1].has_vals);
    assert_int_equal(v.cases[1].n_in, 0);
    assert_true(isinf(v.cases[1].ref_at) && v.cases[1].ref_at < 0);
    assert_false(v.cases[2].has_vals); /* malformed values: none, the case still parses */
    assert_false(v.cases[3].has_vals); /* a passing case has none */
    /* the plugin's region line: every count kept, vsetvl included (it was
     * dropped, so the cost breakdown could not show it) */
    struct plat_report g = parsed("region 0 insns 900 vector_ops 300 vector_mem 200 vsetvl 50 vcost 1400 "
                                  "unmodelled 0\n"
                                  "region 1 insns 90 vector_ops 3 vector_mem 2 vsetvl 1 vcost 140 unmodelled 2\n");
    assert_true(g.has_icount);
    assert_true(g.icount[0][0] == 900 && g.icount[0][1] == 300 && g.icount[0][2] == 200);
    assert_true(g.icount[0][3] == 1400 && g.icount[0][4] == 50);
    assert_true(g.icount[1][3] == 0 && g.icount[1][4] == 1); /* unmodelled: no vcost claimed */
    /* an unknown reason is the harness's failure, never a pass */
    assert_int_equal(plat_fail_parse("no-such-reason"), PLAT_FAIL_HARNESS);
}

static void classify(const struct proc_result *res, const struct plat_report *r, const char *refused,
                     enum plat_fail *reason, int *sig, char *detail, size_t dl)
{
    plat_run_classify(res, r, refused, "harness", reason, sig, detail, dl);
}

static void test_classify_order(void **state)
{
    (void)state;
    enum plat_fail reason;
    int sig;
    char d[PLAT_DETAIL_MAX];
    /* a finished report whose cases all pass: no failure */
    struct proc_result res = {.exited = 1};
    struct plat_report ok = parsed("case task 8 1 8 0 0 1 1 none 0 0 0 0\ndone\n");
    classify(&res, &ok, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_NONE);

    /* kope's kills come first, whatever the run reported */
    struct proc_result flood = {.flooded = 1, .output_bytes = 5000000};
    classify(&flood, &ok, "edited", &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_OUTPUT_FLOOD);
    struct proc_result slow = {.timed_out = 1, .wall_ms = 1200};
    classify(&slow, &ok, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_TIMEOUT);
    assert_non_null(strstr(d, "no result after 1200 ms"));
    struct proc_result cpu = {.cpu_limit = 1, .signaled = 1, .signal = 24};
    classify(&cpu, &ok, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_TIMEOUT);
    assert_non_null(strstr(d, "CPU limit"));

    /* a refused report beats a passing one and the judge's own verdict */
    struct plat_report failed = parsed("fail wrong_result 0 judged\ndone\n");
    classify(&res, &ok, "a case reported twice", &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_HARNESS);
    assert_non_null(strstr(d, "report refused: a case reported twice"));
    classify(&res, &failed, "", &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_WRONG_RESULT);
    assert_string_equal(d, "judged");

    /* a signal, then a run that never said done */
    struct proc_result segv = {.signaled = 1, .signal = 11};
    struct plat_report none;
    memset(&none, 0, sizeof none);
    classify(&segv, &none, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_CRASH);
    assert_int_equal(sig, 11);
    assert_non_null(strstr(d, "harness killed by signal 11"));
    struct proc_result quiet = {.exited = 1, .exit_code = 0, .output_bytes = 42};
    classify(&quiet, &none, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_HARNESS);
    assert_non_null(strstr(d, "without a report (exit 0, 42 bytes of output)"));

    /* done, but a case failed: the first failing case names it */
    struct plat_report bad = parsed("case task 8 1 8 0 0 1 1 none 0 0 0 0\n"
                                    "case tail-7 7 1 7 0 0 1 0 unwritten_output 0 0 0 6\ndone\n");
    classify(&res, &bad, NULL, &reason, &sig, d, sizeof d);
    assert_int_equal(reason, PLAT_FAIL_UNWRITTEN_OUTPUT);
    assert_non_null(strstr(d, "case tail-7"));
    assert_non_null(strstr(d, "element 6"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_classify_order),
    };
    return cmocka_run_group_tests_name("test_plat_report", tests, NULL, NULL);
}

/*
 * tests/test_method_text.c - how-it-was-measured text is never cut by a
 * fixed field, and says once per process what isolated it (issue 24).
 *
 * - The judge's method lines are kept whole however long (the old 400-byte
 *   report field and 512-byte plat_measure.method cut them mid-sentence);
 *   past the cap a line is dropped whole and the count said, never cut.
 * - "seccomp(kernel process)=..." is reworded so that it no longer reads as
 *   contradicting kope's "isolation=...+seccomp".
 * - A record written by the kope of session 6, whose method was cut at 511
 *   bytes (tests/records/session6-cut-method.jsonl), still imports and
 *   verifies, and reads back byte-identical: records are content-addressed,
 *   so the change must not touch how existing content is stored.
 * - A new run records, and `kope kernel show --header` and kernels.json
 *   print, the whole method (it now ends with the baselines' checks).
 * Each fails with its defence removed (the field back to 400/512 bytes, the
 * cut append, the rewording, the fixed 1024-byte print buffers; checked by
 * hand).
 */
#include "testutil.h"

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

static void test_method_lines_kept_whole(void **state)
{
    (void)state;
    char text[8192] = "";
    size_t n = 0;
    /* 12 lines of ~60 bytes: 720 bytes, past both old fields */
    for (int i = 0; i < 12; i++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "method item %02d says something whole about the measurement\n", i);
    struct plat_report r = parsed(text);
    for (int i = 0; i < 12; i++) {
        char want[96];
        snprintf(want, sizeof want, "item %02d says something whole about the measurement", i);
        if (!strstr(r.method, want))
            fail_msg("lost '%s' from: %s", want, r.method);
    }
    assert_int_equal(r.method_dropped, 0);
    assert_null(strstr(r.method, "not kept"));
}

static void test_method_overflow_drops_whole_lines(void **state)
{
    (void)state;
    /* 100 lines of 40 bytes: far past PLAT_REPORT_METHOD_MAX */
    char *text = malloc(100 * 64);
    assert_non_null(text);
    size_t n = 0;
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(text + n, 100 * 64 - n, "method line %03d of many, whole or not at all\n", i);
    struct plat_report r = parsed(text);
    free(text);
    assert_true(r.method_dropped > 0);
    assert_true(strlen(r.method) < sizeof r.method);
    /* every kept item is whole: "line NNN of many, whole or not at all" */
    const char *p = r.method;
    int kept = 0;
    while ((p = strstr(p, "line "))) {
        const char *end = strstr(p, "whole or not at all");
        assert_non_null(end);
        assert_true(end - p == (long)strlen("line 000 of many, "));
        p = end;
        kept++;
    }
    assert_int_equal(kept + r.method_dropped, 100);
    char want[64];
    snprintf(want, sizeof want, "; (%d more method lines not kept)", r.method_dropped);
    size_t wl = strlen(want), ml = strlen(r.method);
    assert_true(ml > wl);
    assert_string_equal(r.method + ml - wl, want);
}

static void test_seccomp_said_once_per_process(void **state)
{
    (void)state;
    struct plat_report r = parsed("method verdict in a judge process\n"
                                  "method seccomp(kernel process)=unavailable(qemu-user or kernel without seccomp)\n");
    assert_null(strstr(r.method, "seccomp(kernel process)="));
    assert_non_null(strstr(r.method, "kernel processes: the isolation above only, no seccomp filter of "
                                     "their own (unavailable: qemu-user or kernel without seccomp)"));
    r = parsed("method seccomp(kernel process)=on(allow-list, others EPERM)\n");
    assert_string_equal(r.method, "kernel processes: the isolation above plus their own seccomp filter "
                                  "(allow-list, others EPERM)");
}

/* ---- records, through the real binary ($KOPE_BIN) ---------------------- */

static char out[1 << 17];

static int kope(const char *args)
{
    return run_cmd(out, sizeof out, "%s --db %s %s", kope_bin(), tpath("m.db"), args);
}

/* The outcome of the fixture, exported by session 6's kope (main f28e186):
 * its method is 511 bytes, cut by the old field (here the cut fell after a
 * whole item; the cycles, baseline and check items after it were lost). */
#define OLD_OUTCOME "4b831b17c9d3ff0a8184361e3a15480ba621e8f2db8ad6ff6f02ff4a92c5c2b7"
#define OLD_METHOD_TAIL "every timed sample poisoned and checked (3 samples of 1 calls)\""

static void test_old_cut_record_still_verifies(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    char fx[4096];
    snprintf(fx, sizeof fx, "%s/tests/records/session6-cut-method.jsonl", test_src_root());
    test_store_init(tpath("m.db"));
    char args[4200];
    snprintf(args, sizeof args, "graph import %s", fx);
    if (kope(args) != 0)
        fail_msg("import of the old record failed:\n%s", out);
    /* stored as it came: the export of this store carries the same line */
    assert_int_equal(kope("graph export -o again.jsonl"), 0);
    char o[256];
    if (run_cmd(o, sizeof o, "grep -F -c '%s' again.jsonl", OLD_METHOD_TAIL) != 0)
        fail_msg("the old method is not in the export: %s", o);
    assert_int_equal(run_cmd(o, sizeof o, "grep '\"id\":\"%s\"' %s > a.line && grep '\"id\":\"%s\"' "
                             "again.jsonl > b.line && test -s a.line && cmp a.line b.line", OLD_OUTCOME, fx,
                             OLD_OUTCOME), 0);
    /* and kope reads it: the outcome is shown with the method it has */
    assert_int_equal(kope("graph show " OLD_OUTCOME), 0);
    assert_non_null(strstr(out, "poisoned and checked (3 samples of 1 calls)"));
}

static void test_new_record_method_is_whole(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    test_write_text("kope.json", "{}\n");
    test_store_init(tpath("n.db"));
    char o[1 << 16];
    int rc = run_cmd(o, sizeof o, "%s --db %s run --offline --budget 1 --task add-res-896", kope_bin(),
                     tpath("n.db"));
    if (rc != 0)
        fail_msg("kope run exited %d:\n%s", rc, o);
    /* the method now ends with the last baseline's check, whole */
    rc = run_cmd(out, sizeof out, "%s --db %s kernel show add-res-896 --header 2>&1 >/dev/null", kope_bin(),
                 tpath("n.db"));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "kernel processes: the isolation above"));
    assert_non_null(strstr(out, "checked openblas=ok"));
    rc = run_cmd(out, sizeof out, "%s --db %s kernels export -o lib --include-emulated --task add-res-896",
                 kope_bin(), tpath("n.db"));
    if (rc != 0)
        fail_msg("kernels export exited %d:\n%s", rc, out);
    assert_int_equal(run_cmd(o, sizeof o, "grep -c 'checked openblas=ok' lib/kernels.json"), 0);
    assert_int_equal(run_cmd(o, sizeof o, "grep -l 'checked openblas=ok' lib/kernels/*.c"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_method_lines_kept_whole),
        cmocka_unit_test(test_method_overflow_drops_whole_lines),
        cmocka_unit_test(test_seccomp_said_once_per_process),
        cmocka_unit_test(test_old_cut_record_still_verifies),
        cmocka_unit_test(test_new_record_method_is_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

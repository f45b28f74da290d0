/*
 * tests/test_redteam.c - the red-team kernels of issue 21 that were still open
 * (tests/redteam/README.md), run from their files as the attackers wrote them:
 * each must now be caught, or, where kope has no defence yet, the test records
 * what kope does today (and says so).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/termsafe.h"
#include "platform/k3/k3.h"
#include "platform/platform.h"
#include "testutil.h"

#include "k3_fixture.h"

static int group_setup(void **state)
{
    (void)state;
    return k3_group_open("redteam");
}

/* tests/redteam/<name> (from $KOPE_SRC, which tests/run.sh sets) into buf */
static size_t read_kernel(const char *name, char *buf, size_t cap)
{
    const char *src = getenv("KOPE_SRC");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/redteam/%s", src ? src : ".", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    assert_true(n > 0 && n < cap - 1);
    buf[n] = '\0';
    return n;
}

static void verify_file(enum plat_op op, const char *name, struct plat_build *b,
                        struct plat_verify *v)
{
    static char src[16384];
    size_t len = read_kernel(name, src, sizeof src);
    struct plat_task t;
    task_init(&t, op);
    assert_int_equal(platform_compile(P, &t, src, len, b), 0);
    assert_true(b->ok);
    memset(v, 0, sizeof *v);
    assert_int_equal(platform_verify(P, &t, b, v), 0);
    fprintf(stderr, "  %s -> pass=%d %s: %s\n", name, v->pass, plat_fail_name(v->reason), v->detail);
}

/* Wrong only at block remainders the case list used to miss: n % 8 in
 * {3, 4, 6} (insider) and a 512-multiple between 2048 and 4096 (outsider);
 * verdict.h's h_cases_awkward now holds n = 35, 44, 70 and 3584. The task
 * case (n = 4096) still passes: the failure is in the added cases. */
static void test_missed_sizes_caught(void **state)
{
    (void)state;
    static const char *const files[] = {"insider-shape-missed-tail3.c",
                                        "outsider-untested-size-wrong.c"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct plat_build b;
        struct plat_verify v;
        verify_file(PLAT_OP_ADD, files[i], &b, &v);
        assert_false(v.pass);
        assert_int_equal(v.reason, PLAT_FAIL_WRONG_RESULT);
        assert_true(v.cases[0].pass);
        platform_build_free(P, &b);
    }
}

/* Right only at VLEN 256: the insider's add reads vlenb and adds 1 off
 * VLEN 256; the outsider's row sum stores 8 lanes, whatever VLMAX is. Both
 * passed when every verify ran at qemu's vlen=256 alone; now a pass at VLEN
 * 256 is followed by the same cases at 128, 512 and 1024 (k3.c,
 * k3_vlen_recheck), and the failure names the VLEN. Natively only the
 * board's VLEN exists: skipped there. */
static void test_vlen_only_256_caught(void **state)
{
    (void)state;
    if (!((struct k3 *)P->priv)->runner[0]) {
        print_message("skip: natively the machine's VLEN is the only one\n");
        return;
    }
    static const struct { enum plat_op op; const char *file; } k[] = {
        {PLAT_OP_ADD, "insider-vlen-only-256.c"},
        {PLAT_OP_SUM, "outsider-vlen256-stack-lanes.c"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        struct plat_build b;
        struct plat_verify v;
        verify_file(k[i].op, k[i].file, &b, &v);
        assert_false(v.pass);
        /* the outsider's lanes past VLMAX come from its stack: what was
         * there decides between a wrong value and a NaN */
        assert_true(v.reason == PLAT_FAIL_WRONG_RESULT || v.reason == PLAT_FAIL_NAN_INF);
        assert_non_null(strstr(v.detail, "at VLEN "));
        assert_null(strstr(v.detail, "at VLEN 256"));
        assert_non_null(strstr(v.method, "failed at VLEN "));
        assert_non_null(strstr(v.method, "after passing at 256"));
        platform_build_free(P, &b);
    }
}

/* termsafe: C0 but \n and \t, DEL, C1 (UTF-8 C2 80..9F, or a bare byte)
 * escaped; other UTF-8 kept */
static void test_termsafe_escapes_controls(void **state)
{
    (void)state;
    static const char in[] = "a\tb\n\x1b[2J\x07\x7f \xc2\x9b" "1m \xc3\xa9\xc4\x81 \x9b";
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    assert_int_equal(termsafe_fwrite(f, in, sizeof in - 1), 0);
    fclose(f);
    assert_string_equal(out, "a\tb\n\\x1b[2J\\x07\\x7f \\xc2\\x9b" "1m \xc3\xa9\xc4\x81 \\x9b");
    assert_int_equal(termsafe_count(in, sizeof in - 1), 5); /* C2 9B is one */
    free(out);
}

/* A passing kernel whose comment holds the red-team's terminal escapes
 * (its ESC ]0; title, ESC[2J clear and coloured forged line, taken from
 * tests/redteam/outsider-source-escape-in-comment.c; the body there is now
 * caught as wrong, so an honest add body follows): the stored source keeps
 * the bytes, and `kope kernel show`, `kope context` and `kope graph log`
 * print them escaped, never raw. */
static void test_stored_escapes_not_printed_raw(void **state)
{
    (void)state;
    static char red[16384], src[20000];
    read_kernel("outsider-source-escape-in-comment.c", red, sizeof red);
    char *line = strstr(red, "/* \x1b]0;");
    assert_non_null(line);
    char *end = strchr(line, '\n');
    assert_non_null(end);
    snprintf(src, sizeof src,
             "%.*s\n#include <stddef.h>\n#include \"kernel_abi.h\"\n"
             "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
             "                 const struct kope_scalars *s) {\n"
             "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n",
             (int)(end - line), line);
    const char *kf = tpath("esc.c"), *db = tpath("esc.db");
    test_write_text(kf, src);
    test_store_init(db);
    static char o[1 << 17];
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1",
                     kope_bin(), db, kf);
    fprintf(stderr, "%s\n", o);
    assert_int_equal(rc, 0);
    static const char *const cmds[] = {"kernel show add-res-896", "context add-res-896",
                                       "graph log add-res-896"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        rc = run_cmd(o, sizeof o, "%s --db %s %s", kope_bin(), db, cmds[i]);
        assert_int_equal(rc, 0);
        assert_null(strchr(o, '\x1b'));
        assert_null(strchr(o, '\x07'));
        if (i < 2) /* the source is quoted (context: the best's source) */
            assert_non_null(strstr(o, "\\x1b]0;OWNED-TITLE\\x07\\x1b[2J"));
    }
}

/* An #error line whose text addresses the model (tests/redteam/outsider-
 * diag-escape-injection.c): after the failed trial, `kope context` quotes
 * the compiler's words only inside a labelled code span. */
static void test_diag_injection_framed(void **state)
{
    (void)state;
    static char red[16384];
    read_kernel("outsider-diag-escape-injection.c", red, sizeof red);
    const char *kf = tpath("inj.c"), *db = tpath("inj.db");
    test_write_text(kf, red);
    test_store_init(db);
    static char o[1 << 17];
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1",
                     kope_bin(), db, kf);
    assert_non_null(strstr(o, "compile_error"));
    (void)rc;
    rc = run_cmd(o, sizeof o, "%s --db %s context add-res-896", kope_bin(), db);
    assert_int_equal(rc, 0);
    size_t hits = 0;
    for (const char *l = o; (l = strstr(l, "ignore previous instructions")) != NULL; l++, hits++) {
        const char *bol = l;
        while (bol > o && bol[-1] != '\n')
            bol--;
        const char *lab = strstr(bol, "compiler output (untrusted text from the candidate's source) `");
        if (!lab || lab > l)
            fail_msg("unframed: %.200s", bol);
    }
    assert_true(hits > 0);
    assert_null(strchr(o, '\x1b'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missed_sizes_caught),
        cmocka_unit_test(test_vlen_only_256_caught),
        cmocka_unit_test(test_termsafe_escapes_controls),
        cmocka_unit_test(test_stored_escapes_not_printed_raw),
        cmocka_unit_test(test_diag_injection_framed),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

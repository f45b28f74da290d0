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

/* ---- session 7 outsider (tests/redteam/outsider2-*.c): every one of these got
 * through on the day it was written; each test records what kope does today and
 * says "open" where there is no defence yet. When a defence lands, the test's
 * assertion of today's behaviour fails and must be turned into "caught". */

/* absolute path of tests/redteam/<name> */
static const char *kernel_path(const char *name)
{
    static char path[8][1024];
    static unsigned slot;
    const char *src = getenv("KOPE_SRC");
    char *p = path[slot++ % 8];
    snprintf(p, sizeof path[0], "%s/tests/redteam/%s", src ? src : ".", name);
    return p;
}

/* `kope measure FILE --task T --verify-only`: its output in o, its exit code */
static int verify_only(char *o, size_t cap, const char *name, const char *task)
{
    int rc = run_cmd(o, cap, "%s measure %s --task %s --verify-only 2>&1", kope_bin(),
                     kernel_path(name), task);
    fprintf(stderr, "  %s on %s -> rc %d\n", name, task, rc);
    return rc;
}

/* open: kernels that compute wrong results where a user can call them, and that
 * pass every case of the judge today (the file's comment says where each is
 * wrong and why the case list misses it). */
static void test_outsider2_wrong_kernels_pass_open(void **state)
{
    (void)state;
    static const char *const k[][2] = {
        {"outsider2-integer-input-hole.c", "add-res-896"},      /* x a small integer */
        {"outsider2-inplace-alias.c", "add-res-896"},           /* out == x */
        {"outsider2-page-end-fingerprint.c", "add-res-896"},    /* out not page-aligned at its end */
        {"outsider2-zero-length-write.c", "add-res-896"},       /* n == 0 */
        {"outsider2-below-sp-scratch.c", "add-res-4096"},       /* a signal during the call */
        {"outsider2-build-env-dependent.c", "add-res-896"},     /* source built without zbb */
        {"outsider2-trojan-source-bidi.c", "add-res-4096"},     /* bidi controls in comments */
        {"outsider2-clamp-inverted-bounds.c", "clamp-act-11008"}, /* lo > hi */
        {"outsider2-argmax-last-tie.c", "argmax-vocab-32000x8"}, /* ties: last, not first */
        {"outsider2-tail-agnostic-ones-reliance.c", "max-vocab-128256"}, /* tail-undisturbed cores */
        {"outsider2-l2norm-range-gap.c", "l2norm-embed-1024"},  /* |x| > 1.8e19 or < 1e-23 */
        {"outsider2-softmax-flush-small.c", "softmax-vocab-151936"}, /* p < 9e-7 written as 0 */
        {"outsider2-value-range-speed.c", "exp-scores-4096"},   /* slow path never measured */
    };
    static char o[1 << 16];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int rc = verify_only(o, sizeof o, k[i][0], k[i][1]);
        if (rc != 0 || !strstr(o, "verify: PASS"))
            fail_msg("%s no longer passes (%d): a defence landed? update this test:\n%s", k[i][0], rc, o);
    }
}

/* open: the verify run's kernel process writes c<id>/harness, the program kope
 * runs as the judge (raw system calls through a libc "ecall; ret" gadget). The
 * measure run executes the changed file: the measure kernel finds the bytes and
 * fails its counted call at element 5 (7 if they were not there); in the verify
 * run the change shows in the running program's own mapping (element 11; 13 if
 * not). Both reasons are stored, so the test reads them from kope run's line. */
static void test_outsider2_judge_program_writable_open(void **state)
{
    (void)state;
    static char o[1 << 16];
    const char *db = tpath("rw.db");
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1 2>&1",
                     kope_bin(), db, kernel_path("outsider2-rewrite-judge-binary.c"));
    fprintf(stderr, "%s\n", o);
    (void)rc;
    assert_non_null(strstr(o, "case counted: wrong_result at element 5"));
    const char *db2 = tpath("rw2.db");
    test_store_init(db2);
    rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1 2>&1",
                 kope_bin(), db2, kernel_path("outsider2-rewrite-judge-live-mapping.c"));
    fprintf(stderr, "%s\n", o);
    assert_non_null(strstr(o, "wrong_result at element 11"));
}

/* open: a failing kernel puts 4 bytes of its process's memory (the judge's
 * argv[0], found on the stack) in out[0]; the reason and the next prompt quote
 * the value's bits in full, so they reach the LLM: "got ... (0x....2f)" is "/"
 * and the next three bytes of the harness path. */
static void test_outsider2_process_memory_in_prompt_open(void **state)
{
    (void)state;
    static char o[1 << 17];
    const char *db = tpath("leak.db");
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1 2>&1",
                     kope_bin(), db, kernel_path("outsider2-leak-judge-argv.c"));
    (void)rc;
    rc = run_cmd(o, sizeof o, "%s --db %s context add-res-896", kope_bin(), db);
    assert_int_equal(rc, 0);
    const char *g = strstr(o, "wrong_result at element 0");
    assert_non_null(g);
    g = strstr(g, "got ");
    assert_non_null(g);
    const char *h = strstr(g, "(0x");
    assert_non_null(h);
    assert_memory_equal(h + 9, "2f)", 3); /* the low byte: '/' */
}

/* open: a suite's "seed" may name any file of the host (absolute or ../): its
 * bytes become the decision's source blob, leave in `kope graph export` (and
 * reach the LLM in the next prompt's failed-kernel section); a FIFO there
 * blocks `kope tasks --suite` for ever. */
static void test_outsider2_suite_paths_open(void **state)
{
    (void)state;
    static char o[1 << 17], js[4096];
    const char *secret = tpath("fake-id_rsa"), *suite = tpath("hostseed.json"), *db = tpath("hs.db"),
               *shard = tpath("hs.jsonl"), *fifo = tpath("seed.fifo"), *suite2 = tpath("fifo.json");
    test_write_text(secret, "OUTSIDER2-FAKE-SECRET-LINE\n");
    snprintf(js, sizeof js, "{\"suite\": \"s\", \"tasks\": [{\"name\": \"add-a\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 64}, \"seed\": \"%s\"}]}\n", secret);
    test_write_text(suite, js);
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    (void)rc;
    rc = run_cmd(o, sizeof o, "%s --db %s graph export -o %s 2>&1", kope_bin(), db, shard);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "grep -c OUTSIDER2-FAKE-SECRET-LINE %s", shard);
    assert_int_equal(rc, 0); /* open: found in the shard */
    snprintf(js, sizeof js, "{\"suite\": \"s\", \"tasks\": [{\"name\": \"add-f\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 8}, \"seed\": \"%s\"}]}\n", fifo);
    test_write_text(suite2, js);
    rc = run_cmd(o, sizeof o, "rm -f %s && mkfifo %s && timeout 5 %s tasks --suite %s", fifo, fifo, kope_bin(), suite2);
    assert_int_equal(rc, 124); /* open: still blocked when timeout stops it */
}

/* open: terminal control bytes of a suite's free text are printed raw by
 * `kope tasks`, and a seed's file name raw by `kope run` (termsafe covers
 * kernel show / context / graph log only). */
static void test_outsider2_terminal_escapes_open(void **state)
{
    (void)state;
    static char o[1 << 16], js[2048];
    const char *suite = tpath("esc2.json"), *seed = tpath("e\x1b]0;pwned\x07x.c"), *db = tpath("esc2.db");
    static char add[16384];
    read_kernel("outsider2-integer-input-hole.c", add, sizeof add);
    test_write_text(seed, add);
    snprintf(js, sizeof js, "{\"suite\": \"s\", \"tasks\": [{\"name\": \"add-e\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 64}, \"source\": \"\\u001b[2J\\u001b]0;pwned\\u0007\", "
             "\"seed\": \"%s\"}]}\n", "e\\u001b]0;pwned\\u0007x.c");
    test_write_text(suite, js);
    int rc = run_cmd(o, sizeof o, "%s tasks --suite %s", kope_bin(), suite);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "\x1b[2J\x1b]0;pwned\x07")); /* open: raw */
    test_store_init(db);
    rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "e\x1b]0;pwned\x07x.c")); /* open: raw in the live line and table */
}

/* open: a suite task named like a built-in one ("silu-4864") with tolerance
 * 0.5 and a 1-3%-off silu: after the store's own tuner run of silu-4864, `kope
 * kernel show silu-4864` serves the suite's kernel and the export ships it alone
 * as kope_silu_silu_4864 (rtol 0.5), the store's own best not exported. */
static void test_outsider2_task_name_shadowing_open(void **state)
{
    (void)state;
    static char o[1 << 17], js[2048];
    const char *suite = tpath("shadow.json"), *db = tpath("sh.db"), *out = tpath("shout");
    snprintf(js, sizeof js, "{\"suite\": \"extras\", \"tasks\": [{\"name\": \"silu-4864\", \"op\": \"silu\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 4864}, \"tolerance\": {\"rtol\": 0.5, \"atol\": 0.5}, "
             "\"seed\": \"%s\"}]}\n", kernel_path("outsider2-shadow-task-loose-tol.c"));
    test_write_text(suite, js);
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task silu-4864 --offline --budget 1 2>&1", kope_bin(), db);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s kernel show silu-4864 2>/dev/null", kope_bin(), db);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "task-name shadowing")); /* open: the suite's kernel */
    rc = run_cmd(o, sizeof o, "%s --db %s kernels export -o %s --include-emulated 2>&1 && grep -c '\"rtol\":.0.5' %s/kernels.json",
                 kope_bin(), db, out, out);
    assert_int_equal(rc, 0); /* open: exported with tolerance 0.5 */
}

/* open: `kope kernels export -o DIR` writes into a DIR someone prepared: through
 * a symlink planted at kernels/kope_add_add_pwn.c (here to a .pth file: its
 * "import os" line would run at the next Python start) and leaving a planted
 * GNUmakefile, which `make -C DIR` (kope's printed next step) runs instead of
 * kope's Makefile. */
static void test_outsider2_export_dir_open(void **state)
{
    (void)state;
    static char o[1 << 17], js[2048];
    const char *suite = tpath("bundle.json"), *db = tpath("bu.db"), *lib = tpath("mylib"),
               *victim = tpath("victim.pth");
    snprintf(js, sizeof js, "{\"suite\": \"bundle\", \"tasks\": [{\"name\": \"add-pwn\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 256}, \"seed\": \"%s\"}]}\n",
             kernel_path("outsider2-export-symlink-seed.c"));
    test_write_text(suite, js);
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "rm -rf %s %s && mkdir -p %s/kernels && ln -s %s %s/kernels/kope_add_add_pwn.c && "
                 "printf 'all:\\n\\t@echo planted\\n' > %s/GNUmakefile", lib, victim, lib, victim, lib, lib);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s kernels export -o %s --include-emulated 2>&1", kope_bin(), db, lib);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "grep -c '^import os' %s", victim);
    assert_int_equal(rc, 0); /* open: written through the symlink */
    rc = run_cmd(o, sizeof o, "make -C %s 2>&1", lib);
    assert_non_null(strstr(o, "planted")); /* open: the planted makefile ran */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missed_sizes_caught),
        cmocka_unit_test(test_termsafe_escapes_controls),
        cmocka_unit_test(test_stored_escapes_not_printed_raw),
        cmocka_unit_test(test_diag_injection_framed),
        cmocka_unit_test(test_outsider2_wrong_kernels_pass_open),
        cmocka_unit_test(test_outsider2_judge_program_writable_open),
        cmocka_unit_test(test_outsider2_process_memory_in_prompt_open),
        cmocka_unit_test(test_outsider2_suite_paths_open),
        cmocka_unit_test(test_outsider2_terminal_escapes_open),
        cmocka_unit_test(test_outsider2_task_name_shadowing_open),
        cmocka_unit_test(test_outsider2_export_dir_open),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

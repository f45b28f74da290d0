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
    /* the text allow-list (platform/allow.h) refuses the escape before the
     * compiler sees it; the source is still recorded with its decision, so
     * what prints it must still escape it */
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(o, "screen [character]: line 1: character U+001B"));
    assert_null(strchr(o, '\x1b'));
    static const char *const cmds[] = {"context add-res-896", "graph log add-res-896"};
    char dec[16] = "";
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        rc = run_cmd(o, sizeof o, "%s --db %s %s", kope_bin(), db, cmds[i]);
        assert_int_equal(rc, 0);
        assert_null(strchr(o, '\x1b'));
        assert_null(strchr(o, '\x07'));
        const char *d = strstr(o, "  - ");
        if (i == 1 && d)
            snprintf(dec, sizeof dec, "%.12s", d + 4);
    }
    /* the failed decision's source, shown by its id: quoted escaped */
    assert_true(strlen(dec) == 12);
    rc = run_cmd(o, sizeof o, "%s --db %s kernel show %s", kope_bin(), db, dec);
    assert_null(strchr(o, '\x1b'));
    assert_non_null(strstr(o, "\\x1b]0;OWNED-TITLE\\x07\\x1b[2J"));
}

/* An #error line whose text addresses the model (tests/redteam/outsider-
 * diag-escape-injection.c): after the failed trial, `kope context` quotes
 * the compiler's words only inside a labelled code span. */
static void test_diag_injection_framed(void **state)
{
    (void)state;
    static char red[16384];
    read_kernel("outsider-diag-escape-injection.c", red, sizeof red);
    /* its control bytes are refused by the text allow-list before the
     * compiler runs (test_stored_escapes_not_printed_raw); without them the
     * #error text still reaches the compiler's words, which must be framed */
    size_t w = 0;
    for (size_t r = 0; red[r]; r++)
        if ((unsigned char)red[r] >= 0x20 || red[r] == '\n' || red[r] == '\t')
            red[w++] = red[r];
    red[w] = '\0';
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

/* ------------------------------------------ session 7, insider (redin) --- */

/* The kernels below reach system calls through a pointer; the object check
 * now refuses that (test_insider2_indirect_calls_refused), so the tests of
 * the holes behind it run with it off: those holes stay open for any other
 * way to a system call (a return address overwritten on the stack). The
 * flag as setup/teardown, so a failed assertion cannot leak it. */
static int no_object_screen_on(void **state)
{
    (void)state;
    P->set.flags |= PLAT_SET_UNSAFE_NO_OBJECT_SCREEN;
    return 0;
}

static int no_object_screen_off(void **state)
{
    (void)state;
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_OBJECT_SCREEN;
    return 0;
}

/* A kernel that calls the C library's `ecall; ret` through a pointer
 * (tests/redteam/insider2-export-syscalls.c: found by scanning its own
 * program's text) and one that calls libc's syscall() the same way: refused
 * by the object check, naming the jump. Before, the first was verified,
 * exported and ran its system calls on the host in the library's `make
 * check`. An honest kernel calling libm (a relocated call) still passes. */
static void test_insider2_indirect_calls_refused(void **state)
{
    (void)state;
    static char src[16384];
    size_t len = read_kernel("insider2-export-syscalls.c", src, sizeof src);
    static const char fnptr[] =
        "#include <stddef.h>\n#include <stdint.h>\n#include \"kernel_abi.h\"\n"
        "typedef long (*sc_fn)(long, long, long, long, long, long, long);\n"
        "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)\n"
        "{\n  (void)s;\n  volatile uintptr_t a = (uintptr_t)&kope_kernel + 4096;\n"
        "  if (n == 7) ((sc_fn)a)(172, 0, 0, 0, 0, 0, 0);\n"
        "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n";
    static const char honest[] =
        "#include <stddef.h>\n#include <math.h>\n#include \"kernel_abi.h\"\n"
        "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)\n"
        "{\n  (void)s;\n  for (size_t i = 0; i < n; i++) {\n"
        "    float e = expf(-fabsf(x[i])); /* a libm call: auipc + jalr under R_RISCV_CALL_PLT */\n"
        "    out[i] = x[i] + y[i] + (e > 2.0f ? 1.0f : 0.0f);\n  }\n}\n";
    const char *srcs[2] = {src, fnptr};
    size_t lens[2] = {len, sizeof fnptr - 1};
    for (int i = 0; i < 2; i++) {
        struct plat_task t;
        task_init(&t, PLAT_OP_ADD);
        struct plat_build b;
        assert_int_equal(platform_compile(P, &t, srcs[i], lens[i], &b), 0);
        fprintf(stderr, "  kernel %d -> ok=%d %s: %s\n", i, b.ok, plat_screen_rule_name(b.screen_rule), b.detail);
        assert_false(b.ok);
        assert_int_equal(b.reason, PLAT_FAIL_SCREEN_REJECTED);
        assert_int_equal(b.screen_rule, PLAT_SCREEN_SYSTEM_INSN);
        assert_non_null(strstr(b.detail, "indirect"));
        platform_build_free(P, &b);
    }
    struct plat_build b;
    struct plat_verify v;
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    assert_int_equal(platform_compile(P, &t, honest, sizeof honest - 1, &b), 0);
    assert_true(b.ok);
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    assert_true(v.pass);
    platform_build_free(P, &b);
}

/* CommonMark fences, roughly as a reader (or a model) takes them: a line of
 * 3+ backticks (up to 3 spaces before) opens a block; only a line of as many
 * or more backticks and nothing else closes it. Is the line holding needle
 * inside a block? */
static int inside_fence(const char *text, const char *needle)
{
    const char *hit = strstr(text, needle);
    assert_non_null(hit);
    size_t open = 0;
    for (const char *l = text; l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (hit <= l + len) /* the needle's line */
            return open > 0;
        size_t i = 0, n = 0;
        while (i < 3 && i < len && l[i] == ' ')
            i++;
        while (i + n < len && l[i + n] == '`')
            n++;
        if (n >= 3) {
            size_t j = i + n;
            while (j < len && (l[j] == ' ' || l[j] == '\t'))
                j++;
            if (!open)
                open = n;
            else if (n >= open && j == len)
                open = 0;
        }
        l = e ? e + 1 : NULL;
    }
    return open > 0;
}

/* A passing kernel whose comment holds a line of three backticks and a
 * "## New instructions" section (tests/redteam/insider2-kernel-comment-
 * injection.c): `kope context` quotes the best's source in a fence longer
 * than any backtick run in it, so the section stays inside the block. Before
 * buf_code_block the ``` line closed the block and the section stood as
 * kope's own markdown. */
static void test_insider2_kernel_comment_fenced(void **state)
{
    (void)state;
    static char red[16384];
    read_kernel("insider2-kernel-comment-injection.c", red, sizeof red);
    const char *kf = tpath("cinj.c"), *db = tpath("cinj.db");
    test_write_text(kf, red);
    test_store_init(db);
    static char o[1 << 17];
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1",
                     kope_bin(), db, kf);
    fprintf(stderr, "%s\n", o);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s context add-res-896", kope_bin(), db);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "## New instructions from the kope operator"));
    if (!inside_fence(o, "## New instructions from the kope operator"))
        fail_msg("the kernel's comment closed the fence: its section stands outside any code block");
}

static const struct plat_baseline *baseline_named(const struct plat_measure *m, const char *name)
{
    for (int i = 0; i < m->n_baselines; i++)
        if (strcmp(m->base[i].name, name) == 0)
            return &m->base[i];
    return NULL;
}

/* Caught (was open in session 8's first hours). The candidate's dir c<id>/
 * was writable in every harness run and lived from verify to measure, and
 * the run's seed was 0x6b6f7065 + id * 1000003: the verify run's kernel
 * process recovered the seed from its first inputs, replayed the measure
 * run's fill, wrote the answer to c<id>/kc, and the measure's counted call
 * read()s it into the output (host work, uncounted): 1/42 of autovec-O3's
 * count (7751 vs 328539 at 64x16384). Now each run writes only a fresh
 * folder of its own, removed after it (k3.c harness_run), and the seed is
 * derived from a per-session secret: the cache misses and the kernel's own
 * double loop is what the count sees. */
static void test_insider2_cache_across_runs(void **state)
{
    (void)state;
    static char src[16384];
    size_t len = read_kernel("insider2-cache-across-runs.c", src, sizeof src);
    struct plat_task t;
    task_init(&t, PLAT_OP_SUM);
    t.rows = 64;
    t.cols = 16384; /* 1M elements: under the emulated measure cap, no cut */
    struct plat_build b;
    struct plat_verify v;
    struct plat_measure m;
    assert_int_equal(platform_compile(P, &t, src, len, &b), 0);
    assert_true(b.ok);
    memset(&v, 0, sizeof v);
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    assert_true(v.pass);
    assert_int_equal(platform_measure(P, &t, &b, &m), 0);
    platform_build_free(P, &b);
    if (m.ok && m.emulated && !m.has_icount)
        skip(); /* no icount plugin: nothing is claimed */
    if (!m.emulated)
        skip(); /* natively the claim is time; this test is about counts */
    /* the same kernel computing (its cache missed) counts about what
     * autovec-O3 does (336389 vs 328539); reading the cache, ~40x less */
    const struct plat_baseline *av = baseline_named(&m, "autovec-O3");
    assert_non_null(av);
    fprintf(stderr, "  cache across runs: ok=%d candidate icount %llu, autovec-O3 %llu\n", m.ok,
            (unsigned long long)m.icount, (unsigned long long)av->icount);
    if (m.ok && m.icount * 10 < av->icount)
        fail_msg("the kernel's cache from the verify run fed the counted call: %llu instructions claimed",
                 (unsigned long long)m.icount);
}

/* Caught. The program kope checked was not the program it ran next: the
 * verify run's kernel process rewrote c<id>/harness (its cwd, writable),
 * patching the judge's own text; the measure run executed the patched
 * judge (its method said "verdict in a JUDGE process"). Now the judge is a
 * program in rt/ that no run can write, and a run's only writable folder is
 * its own, removed after it; c<id>/ (the kernel program) is read-only. */
static void test_insider2_judge_rewritten_between_runs(void **state)
{
    (void)state;
    static char src[16384];
    size_t len = read_kernel("insider2-judge-rewrite.c", src, sizeof src);
    struct plat_task t;
    task_init(&t, PLAT_OP_SUM);
    struct plat_build b;
    struct plat_verify v;
    struct plat_measure m;
    assert_int_equal(platform_compile(P, &t, src, len, &b), 0);
    assert_true(b.ok);
    memset(&v, 0, sizeof v);
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    assert_true(v.pass);
    assert_int_equal(platform_measure(P, &t, &b, &m), 0);
    platform_build_free(P, &b);
    fprintf(stderr, "  judge rewrite: method %.200s\n", m.method);
    assert_null(strstr(m.method, "verdict in a JUDGE process"));
}

/* Caught. A symlink left where the plugin writes its counts by the measure
 * run's kernel: kope, on the host, followed it and read the host file it
 * named as the plugin's counts (here a file of ours that says "kope-icount":
 * refused as not authenticated, so kope did read it; a FIFO there hung
 * kope). Now kope opens the counts O_NOFOLLOW | O_NONBLOCK, a regular file
 * only, in the run's own folder: the host file is never read. */
static void test_insider2_icount_symlink_not_followed(void **state)
{
    (void)state;
    static char red[16384], src[20000];
    read_kernel("insider2-icount-symlink.c", red, sizeof red);
    const char *target = tpath("host-file-read-by-kope");
    test_write_text(target, "kope-icount forged block from a host file\n");
    char *at = strstr(red, "@TARGET@\";");
    assert_non_null(at);
    snprintf(src, sizeof src, "%.*s%s%s", (int)(at - red), red, target, at + strlen("@TARGET@"));
    struct plat_task t;
    task_init(&t, PLAT_OP_SUM);
    struct plat_build b;
    struct plat_measure m;
    assert_int_equal(platform_compile(P, &t, src, strlen(src), &b), 0);
    assert_true(b.ok);
    assert_int_equal(platform_measure(P, &t, &b, &m), 0);
    platform_build_free(P, &b);
    fprintf(stderr, "  icount symlink: ok=%d %s: %s\n", m.ok, plat_fail_name(m.reason), m.detail);
    if (!m.emulated)
        skip(); /* natively there is no plugin file */
    assert_false(m.ok);
    assert_null(strstr(m.detail, "not authenticated")); /* the host file was not read */
}

/* Caught. gamma was drawn from [0.5, 1.5] in every case: an rmsnorm that
 * used |gamma| passed (real weights can be negative). Now [-1.5, 1.5]. */
static void test_insider2_negative_gamma(void **state)
{
    (void)state;
    struct plat_build b;
    struct plat_verify v;
    verify_file(PLAT_OP_RMSNORM, "insider2-gamma-sign.c", &b, &v);
    assert_false(v.pass);
    platform_build_free(P, &b);
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
        {"outsider2-clamp-inverted-bounds.c", "clamp-act-11008"}, /* lo > hi */
        {"outsider2-argmax-last-tie.c", "argmax-vocab-32000x8"}, /* ties: last, not first */
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

/* Caught since: bidi controls in comments (the text allow-list, screen
 * [character]), and a kernel that relies on all-ones agnostic tails (the
 * VLEN-512 recheck runs qemu's undisturbed policy). */
static void test_outsider2_wrong_kernels_caught(void **state)
{
    (void)state;
    static char o[1 << 16];
    assert_int_not_equal(verify_only(o, sizeof o, "outsider2-trojan-source-bidi.c", "add-res-4096"), 0);
    assert_non_null(strstr(o, "[character]"));
    assert_non_null(strstr(o, "U+202"));
    assert_int_not_equal(verify_only(o, sizeof o, "outsider2-tail-agnostic-ones-reliance.c", "max-vocab-128256"), 0);
    assert_non_null(strstr(o, "at VLEN 512"));
}

/* Caught: the verify run's kernel process wrote c<id>/harness, the program
 * kope ran as the judge (raw system calls through a libc "ecall; ret"
 * gadget), and the measure run executed the changed file (its counted call
 * failed at element 5, 7 if the bytes were not there; in the verify run the
 * change showed in the running program's own mapping: element 11, 13 if
 * not). Now the judge is a program in rt/ no run can write, and a run writes
 * only its own folder: neither marker of a change appears. */
static void test_outsider2_judge_program_not_writable(void **state)
{
    (void)state;
    static char o[1 << 16];
    const char *db = tpath("rw.db");
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1 2>&1",
                     kope_bin(), db, kernel_path("outsider2-rewrite-judge-binary.c"));
    fprintf(stderr, "%s\n", o);
    (void)rc;
    assert_null(strstr(o, "wrong_result at element 5"));
    const char *db2 = tpath("rw2.db");
    test_store_init(db2);
    rc = run_cmd(o, sizeof o, "%s --db %s run --task add-res-896 --seed %s --offline --budget 1 2>&1",
                 kope_bin(), db2, kernel_path("outsider2-rewrite-judge-live-mapping.c"));
    fprintf(stderr, "%s\n", o);
    assert_null(strstr(o, "wrong_result at element 11"));
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

/* Caught: a suite's "seed" could name any file of the host (absolute or
 * ../): its bytes became the decision's source blob, left in `kope graph
 * export` (and reached the LLM in the next prompt); a FIFO there blocked
 * `kope tasks --suite` for ever. Now a suite's file names are relative to
 * its folder, opened O_NOFOLLOW|O_NONBLOCK, regular files only. */
static void test_outsider2_suite_paths_refused(void **state)
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
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(o, "is not a file name kope reads from a suite"));
    rc = run_cmd(o, sizeof o, "%s --db %s graph export -o %s 2>&1", kope_bin(), db, shard);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "grep -c OUTSIDER2-FAKE-SECRET-LINE %s", shard);
    assert_int_not_equal(rc, 0); /* not in the shard */
    snprintf(js, sizeof js, "{\"suite\": \"s\", \"tasks\": [{\"name\": \"add-f\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 8}, \"seed\": \"%s\"}]}\n", fifo);
    test_write_text(suite2, js);
    rc = run_cmd(o, sizeof o, "rm -f %s && mkfifo %s && timeout 60 %s tasks --suite %s 2>&1", fifo, fifo,
                 kope_bin(), suite2);
    assert_int_not_equal(rc, 124); /* refused at once, not blocked */
    assert_int_not_equal(rc, 0);
    /* and beside the suite, a FIFO is refused without blocking too */
    snprintf(js, sizeof js, "{\"suite\": \"s\", \"tasks\": [{\"name\": \"add-f\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 8}, \"seed\": \"seed.fifo\"}]}\n");
    test_write_text(suite2, js);
    rc = run_cmd(o, sizeof o, "timeout 60 %s tasks --suite %s 2>&1", kope_bin(), suite2);
    assert_int_not_equal(rc, 124);
    assert_non_null(strstr(o, "not a regular file"));
}

/* Caught: terminal control bytes of a suite's free text were printed raw by
 * `kope tasks`, and a seed's file name raw by `kope run`. Now a suite's text
 * is on the text allow-list (refused, with the code point) and kope run
 * prints names through termsafe (tests/test_kernels.c). */
static void test_outsider2_terminal_escapes_refused(void **state)
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
    int rc = run_cmd(o, sizeof o, "%s tasks --suite %s 2>&1", kope_bin(), suite);
    assert_int_not_equal(rc, 0);
    assert_null(strchr(o, '\x1b'));
    assert_non_null(strstr(o, "U+001B"));
    test_store_init(db);
    rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_not_equal(rc, 0);
    assert_null(strchr(o, '\x1b'));
}

/* Caught: a suite task named like a built-in one ("silu-4864") with
 * tolerance 0.5 and a 1-3%-off silu: after the store's own tuner run of
 * silu-4864, `kope kernel show silu-4864` served the suite's kernel and the
 * export shipped it alone as kope_silu_silu_4864 (rtol 0.5). Now a name two
 * task records hold is refused by kernel show (give the id) and not
 * exported. */
static void test_outsider2_task_name_shadowing_refused(void **state)
{
    (void)state;
    static char o[1 << 17], js[2048], seed[16384];
    const char *suite = tpath("shadow.json"), *db = tpath("sh.db"), *out = tpath("shout");
    read_kernel("outsider2-shadow-task-loose-tol.c", seed, sizeof seed);
    test_write_text(tpath("shadow-seed.c"), seed); /* beside the suite: its names are relative */
    snprintf(js, sizeof js, "{\"suite\": \"extras\", \"tasks\": [{\"name\": \"silu-4864\", \"op\": \"silu\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 4864}, \"tolerance\": {\"rtol\": 0.5, \"atol\": 0.5}, "
             "\"seed\": \"shadow-seed.c\"}]}\n");
    test_write_text(suite, js);
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --task silu-4864 --offline --budget 1 2>&1", kope_bin(), db);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s kernel show silu-4864 2>&1", kope_bin(), db);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(o, "different tasks are named 'silu-4864'"));
    assert_null(strstr(o, "task-name shadowing")); /* the suite's kernel is not served */
    rc = run_cmd(o, sizeof o, "%s --db %s kernels export -o %s --include-emulated 2>&1; grep -c '\"rtol\":.0.5' %s/kernels.json",
                 kope_bin(), db, out, out);
    assert_int_not_equal(rc, 0); /* no kernel of tolerance 0.5 in the library */
}

/* Caught: `kope kernels export -o DIR` wrote into a DIR someone prepared:
 * through a symlink planted at kernels/kope_add_add_pwn.c (here to a .pth
 * file: its "import os" line would run at the next Python start), leaving a
 * planted GNUmakefile, which `make -C DIR` (kope's printed next step) ran
 * instead of kope's Makefile. Now a planted GNUmakefile or makefile makes the
 * export refuse the folder, and every file is written new (a link at its
 * name removed, O_NOFOLLOW). */
static void test_outsider2_export_dir_refused(void **state)
{
    (void)state;
    static char o[1 << 17], js[2048];
    const char *suite = tpath("bundle.json"), *db = tpath("bu.db"), *lib = tpath("mylib"),
               *victim = tpath("victim.pth");
    static char seed[16384];
    read_kernel("outsider2-export-symlink-seed.c", seed, sizeof seed);
    test_write_text(tpath("bundle-seed.c"), seed); /* beside the suite: its names are relative */
    snprintf(js, sizeof js, "{\"suite\": \"bundle\", \"tasks\": [{\"name\": \"add-pwn\", \"op\": \"add\", "
             "\"dtype\": \"f32\", \"shape\": {\"n\": 256}, \"seed\": \"bundle-seed.c\"}]}\n");
    test_write_text(suite, js);
    test_store_init(db);
    int rc = run_cmd(o, sizeof o, "%s --db %s run --suite %s --offline --budget 1 2>&1", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "rm -rf %s %s && mkdir -p %s/kernels && ln -s %s %s/kernels/kope_add_add_pwn.c && "
                 "printf 'all:\\n\\t@echo planted\\n' > %s/GNUmakefile", lib, victim, lib, victim, lib, lib);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "%s --db %s kernels export -o %s --include-emulated 2>&1", kope_bin(), db, lib);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(o, "holds a GNUmakefile"));
    /* without the makefile: exported, and the planted link replaced, not followed */
    rc = run_cmd(o, sizeof o, "rm -f %s/GNUmakefile && %s --db %s kernels export -o %s --include-emulated 2>&1",
                 lib, kope_bin(), db, lib);
    assert_int_equal(rc, 0);
    rc = run_cmd(o, sizeof o, "grep -c '^import os' %s 2>&1", victim);
    assert_int_not_equal(rc, 0); /* nothing written through the link */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missed_sizes_caught),
        cmocka_unit_test(test_vlen_only_256_caught),
        cmocka_unit_test(test_termsafe_escapes_controls),
        cmocka_unit_test(test_stored_escapes_not_printed_raw),
        cmocka_unit_test(test_diag_injection_framed),
        cmocka_unit_test(test_insider2_kernel_comment_fenced),
        cmocka_unit_test(test_insider2_indirect_calls_refused),
        cmocka_unit_test_setup_teardown(test_insider2_cache_across_runs, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test_setup_teardown(test_insider2_judge_rewritten_between_runs, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test_setup_teardown(test_insider2_icount_symlink_not_followed, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test(test_insider2_negative_gamma),
        cmocka_unit_test(test_outsider2_wrong_kernels_pass_open),
        cmocka_unit_test(test_outsider2_wrong_kernels_caught),
        cmocka_unit_test(test_outsider2_judge_program_not_writable),
        cmocka_unit_test(test_outsider2_process_memory_in_prompt_open),
        cmocka_unit_test(test_outsider2_suite_paths_refused),
        cmocka_unit_test(test_outsider2_terminal_escapes_refused),
        cmocka_unit_test(test_outsider2_task_name_shadowing_refused),
        cmocka_unit_test(test_outsider2_export_dir_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

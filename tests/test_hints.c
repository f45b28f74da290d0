/*
 * tests/test_hints.c - every error a user can cause says what to do next.
 *
 * A table of mistakes a newcomer makes in the first hour (issue 17), each
 * run with the real binary against a scratch store: the exit code, words of
 * the message that name the problem, and the last line of stderr, which
 * must be a `hint:` line with the next step. Network rows use loopback only
 * (a port held by this program, a port nobody listens on, a peer that
 * refuses our certificate).
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static char out[1 << 16];

struct row {
    const char *name;
    const char *setup; /* shell, run first in the scratch dir (NULL: none) */
    const char *args;  /* after `kope` */
    int exit_code;
    const char *says;  /* in stderr */
    const char *hint;  /* in the last line of stderr, which starts "hint: " */
};

/* Run `kope ARGS` in the scratch dir; stderr only into out. */
static int kope_err(const char *args)
{
    return run_cmd(out, sizeof out, "cd %s && %s %s 2>&1 >/dev/null", getenv("KOPE_TEST_TMP"),
                   kope_bin(), args);
}

static void sh(const char *cmd)
{
    char o2[8192];
    int rc = run_cmd(o2, sizeof o2, "cd %s && K=%s && %s", getenv("KOPE_TEST_TMP"), kope_bin(), cmd);
    if (rc != 0)
        fail_msg("setup `%s` exited %d: %s", cmd, rc, o2);
}

static const char *last_line(const char *text)
{
    static char line[4096];
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        n--;
    size_t b = n;
    while (b && text[b - 1] != '\n')
        b--;
    snprintf(line, sizeof line, "%.*s", (int)(n - b), text + b);
    return line;
}

static void check_row(const struct row *r)
{
    if (r->setup)
        sh(r->setup);
    int rc = kope_err(r->args);
    const char *last = last_line(out);
    print_message("  %-28s exit %d, last line: %s\n", r->name, rc, last);
    if (rc != r->exit_code)
        fail_msg("%s: `kope %s` exited %d, not %d:\n%s", r->name, r->args, rc, r->exit_code, out);
    if (r->says && !strstr(out, r->says))
        fail_msg("%s: `kope %s` does not say \"%s\":\n%s", r->name, r->args, r->says, out);
    if (strncmp(last, "hint: ", 6) != 0)
        fail_msg("%s: `kope %s` does not end with a hint line:\n%s", r->name, r->args, out);
    if (r->hint && !strstr(last, r->hint))
        fail_msg("%s: the hint of `kope %s` does not say \"%s\": %s", r->name, r->args, r->hint, last);
}

static void test_table(void **state)
{
    (void)state;
    static const struct row rows[] = {
        /* configuration: exit 2, FILE:LINE:COLUMN, before any work */
        {"config trailing comma", "printf '{\"llm\": {\"model\": \"m\",}}' > c1.json",
         "--config c1.json tasks", 2, "c1.json:1:22: invalid JSON: a comma before '}'", "--config"},
        {"config unknown key", "printf '{\\n  \"llm\": {\\n    \"base_ulr\": \"http://x/v1\"}}' > c2.json",
         "--config c2.json tasks", 2, "c2.json:3:5: unknown key \"llm.base_ulr\"", "base_url"},
        {"config unknown target key", "printf '{\"platform\": {\"k3\": {\"ccc\": \"clang\"}}}' > c3.json",
         "--config c3.json tasks", 2, "unknown key \"platform.k3.ccc\"", "cflags"},
        {"config wrong type", "printf '{\"platform\": {\"k3\": {\"cc\": 5}}}' > c4.json",
         "--config c4.json tasks", 2, "c4.json:1:28: \"platform.k3.cc\" must be a string", "--config"},
        {"config file missing", NULL, "--config missing.json tasks", 1, "missing.json", "--config"},
        /* the store */
        {"no store", NULL, "--db nope.db graph stats", 1, "no store at nope.db", "kope init"},
        {"no store for run", NULL, "--db nope.db run --task silu-4864 --offline --budget 1", 1,
         "no store at nope.db", "kope init"},
        {"store folder missing", NULL, "--db no/dir/x.db init", 1, "the folder no/dir does not exist",
         "mkdir -p no/dir"},
        {"store not a store", "head -c 4096 /dev/urandom > junk.db", "--db junk.db graph stats", 1,
         "junk.db", "--db"},
        /* commands */
        {"unknown task", "$K --db t.db init >/dev/null", "--db t.db graph log softmax_vocab_32k", 1,
         "no task named", "kope tasks"},
        {"llm check unconfigured", NULL, "--db t.db llm check", 1, "no LLM endpoint is configured",
         "llm.base_url"},
        {"report without file", NULL, "--db t.db report", 2, "--html FILE", "kope report --html"},
        {"global option after", NULL, "graph stats --db t.db", 2, "--db is a global option",
         "kope --db t.db graph stats"},
        {"unknown global option", NULL, "--verbose graph stats", 2, "unknown option '--verbose'",
         "--db PATH"},
        {"unknown command", NULL, "--db t.db frobnicate", 2, "unknown command 'frobnicate'", "kope help"},
        /* input read strictly (issue 24): nothing misread silently */
        {"command typo", NULL, "--db t.db grpah stats", 2, "unknown command 'grpah' (did you mean 'graph'?)",
         "kope help"},
        {"task name typo", "$K --db t.db init >/dev/null 2>&1 || true",
         "--db t.db run --task silu-486 --offline --budget 1", 2, "(did you mean 'silu-4864'?)", "kope tasks"},
        {"suite key typo: tolerance",
         "printf '{\"suite\":\"s\",\"tasks\":[\n{\"name\":\"a\",\"op\":\"silu\",\"shape\":{\"n\":64},"
         "\"tolerence\":{\"rtol\":1e-3}}]}' > s1.json",
         "--db t.db run --suite s1.json --offline --budget 1", 1,
         "s1.json:2:42: unknown key \"tasks[0].tolerence\" (did you mean \"tolerance\"?)", "tolerance"},
        {"suite key typo: seed",
         "printf '{\"suite\":\"s\",\"tasks\":[\n{\"name\":\"a\",\"op\":\"silu\",\"shape\":{\"n\":64},"
         "\"sead\":\"k.c\"}]}' > s2.json",
         "tasks --suite s2.json", 1, "s2.json:2:42: unknown key \"tasks[0].sead\" (did you mean \"seed\"?)", "seed"},
        {"suite key typo: shape",
         "printf '{\"suite\":\"s\",\"tasks\":[{\"name\":\"a\",\"op\":\"silu\",\"shpe\":{\"n\":64}}]}' > s3.json",
         "tasks --suite s3.json", 1, "s3.json:1:47: unknown key \"tasks[0].shpe\" (did you mean \"shape\"?)", "shape"},
        {"option without its value", NULL, "tasks --suite", 2, "kope tasks: --suite needs a value", "--suite"},
        {"option a command does not take", NULL, "version --verbose", 2,
         "kope version: unexpected argument '--verbose'", "kope version"},
        {"queue list takes nothing", NULL, "--db t.db queue list --all", 2, "unexpected argument '--all'",
         "kope queue list"},
        {"listen port out of range", NULL, "--db t.db serve --listen 127.0.0.1:99999", 2,
         "the port must be 0..65535", "--listen"},
        {"peer port out of range", NULL, "--db t.db sync 127.0.0.1:70000", 2, "the port must be 1..65535",
         "kope sync HOST:PORT"},
        /* ... and the cases issue 24's second pass found */
        {"report: --html without its file", NULL, "--db t.db report --html", 2, "kope report: --html needs a value",
         "kope report --html VALUE"},
        {"serve: --listen without its address", NULL, "--db t.db serve --listen", 2,
         "kope serve: --listen needs a value", "--listen"},
        {"graph export: -o without its file", NULL, "--db t.db graph export -o", 2,
         "kope graph export: -o needs a value", "-o VALUE"},
        {"probe: --platform without its name", NULL, "--db t.db probe --platform", 2,
         "kope probe: --platform needs a value", "--platform"},
        {"serve: a count that is not a number", NULL, "--db t.db serve --max-conns 3x", 2,
         "--max-conns takes an integer from 1 to 100000, not '3x'", "--max-conns N"},
        {"sync: a timeout past int", NULL, "--db t.db sync --timeout-ms 99999999999 127.0.0.1:7443", 2,
         "--timeout-ms takes an integer from 1 to 86400000", "--timeout-ms N"},
        {"graph: an option a subcommand does not take", NULL, "--db t.db graph stats --all", 2,
         "kope graph stats: unknown option '--all'", "kope graph --help"},
        {"graph: subcommand typo", NULL, "--db t.db graph stat", 2,
         "unknown subcommand 'stat' (did you mean 'stats'?)", "kope graph --help"},
        {"fleet enroll without CA", NULL, "--db t.db fleet enroll board-1", 1, "fleet CA", "--ca DIR"},
        /* a lost key: the way out, not a circle between init and the rest */
        {"lost key: init", "$K --db lk.db init >/dev/null && mv lk.db.key lk.saved", "--db lk.db init", 1,
         "cannot read this device's key", "restore lk.db.key"},
        {"lost key: enroll", NULL, "--db lk.db fleet enroll b", 1, "cannot read this device's key",
         "--db NEW.db init"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        check_row(&rows[i]);
    /* a mistyped --db made nothing */
    sh("test ! -e nope.db && test ! -e nope.db.key");
    /* a suite typo recorded nothing: the store holds only its identity */
    sh("$K --db t.db graph stats | grep -q 'records   2'");
    /* the lost-key hint works: with the key restored, init says it is done */
    sh("mv lk.saved lk.db.key && $K --db lk.db init | grep -q 'already initialised'");
}

/* A config error stops a command before any work (`kope run` used to go on
 * as the offline tuner and exit 0), and is printed once. */
static void test_config_before_work(void **state)
{
    (void)state;
    sh("$K --db w.db init >/dev/null && printf '{\"llm\": {\"model\": \"m\",}}' > kope.json");
    assert_int_equal(kope_err("--db w.db run --task silu-4864 --offline --budget 1"), 2);
    const char *first = strstr(out, "invalid JSON");
    assert_non_null(first);
    assert_null(strstr(first + 1, "invalid JSON"));
    sh("rm kope.json && $K --db w.db graph stats | grep -q 'records   2'"); /* no trial recorded */
}

/* Under qemu only the icount plugin measures: a kope with no plugin next to
 * it (and none configured) passes kernels but measures nothing, and must say
 * so, say how to get the plugin, and exit 1, not print "(no ratio claimed)"
 * and exit 0; `kope measure` of a file likewise. The same binary with the
 * plugin beside it measures and exits 0 (so the failure is the plugin's
 * absence, nothing else; `kope measure` with the plugin: test_k3_cli). */
static void test_unmeasured_run(void **state)
{
    (void)state;
    const char *target = getenv("KOPE_BIN_TARGET"); /* the real binary when kope_bin() wraps a RUNNER */
    const char *real = target && *target ? target : kope_bin();
    const char *runner = target && *target && getenv("RUNNER") ? getenv("RUNNER") : "";
    char plugin[4096];
    snprintf(plugin, sizeof plugin, "%s", real);
    char *slash = strrchr(plugin, '/');
    assert_non_null(slash);
    snprintf(slash + 1, sizeof plugin - (size_t)(slash + 1 - plugin), "libkope-icount.so");
    if (access(plugin, R_OK) != 0) {
        print_message("skip: no %s: this build runs kernels natively (no plugin needed)\n", plugin);
        skip();
    }
    sh("rm -rf np && mkdir np");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp %s np/kope && cd np && %s ./kope init >/dev/null", real, runner);
    sh(cmd);
    int rc = run_cmd(out, sizeof out, "cd %s/np && %s ./kope run --task silu-4864 --offline --budget 1 2>&1 >/dev/null",
                     getenv("KOPE_TEST_TMP"), runner);
    print_message("  %-28s exit %d, last line: %s\n", "no icount plugin", rc, last_line(out));
    if (rc != 1 || !strstr(out, "none measured") || !strstr(last_line(out), "hint: ") ||
        !strstr(last_line(out), "libkope-icount.so"))
        fail_msg("`kope run` with no icount plugin exited %d:\n%s", rc, out);
    /* `kope measure` of a file: verified, but measured nothing: the same */
    snprintf(cmd, sizeof cmd, "cp '%s/platform/k3/embed/kernels/softmax.c' np/my_softmax.c", test_src_root());
    sh(cmd);
    rc = run_cmd(out, sizeof out, "cd %s/np && %s ./kope measure my_softmax.c --task softmax-vocab-32000x4 2>&1 >/dev/null",
                 getenv("KOPE_TEST_TMP"), runner);
    print_message("  %-28s exit %d, last line: %s\n", "measure, no icount plugin", rc, last_line(out));
    if (rc != 1 || !strstr(out, "not measured") || !strstr(last_line(out), "libkope-icount.so"))
        fail_msg("`kope measure` with no icount plugin exited %d:\n%s", rc, out);
    snprintf(cmd, sizeof cmd, "cp %s np/ && cd np && %s ./kope run --task silu-4864 --offline --budget 1 --fresh",
             plugin, runner);
    rc = run_cmd(out, sizeof out, "cd %s && %s", getenv("KOPE_TEST_TMP"), cmd);
    if (rc != 0 || strstr(out, "none measured") || strstr(out, "(not measured)"))
        fail_msg("with the plugin beside it `kope run` exited %d:\n%s", rc, out);
}

/* Read-only commands work on a store in a folder we cannot write; writing
 * ones say why they cannot. As root, permissions do not bind: the commands
 * then run as nobody (setpriv). */
static void test_read_only_folder(void **state)
{
    (void)state;
    const char *as = "";
    if (geteuid() == 0) {
        if (run_cmd(NULL, 0, "command -v setpriv >/dev/null") != 0) {
            print_message("skip: running as root without setpriv: cannot make a folder read-only\n");
            skip();
        }
        as = "setpriv --reuid=65534 --regid=65534 --clear-groups";
        /* a checkout under a private folder (e.g. /root) is not reachable
         * for nobody: then this case cannot be shown here; say so */
        if (run_cmd(NULL, 0, "%s %s --version >/dev/null 2>&1", as, kope_bin()) != 0) {
            print_message("skip: the user nobody cannot run %s (a folder above it is private): "
                          "cannot show a read-only folder as root here\n", kope_bin());
            skip();
        }
    }
    sh("mkdir -p ro && cd ro && $K init >/dev/null && $K run --task silu-4864 --offline --budget 1 "
       ">/dev/null 2>&1; cd .. && chmod 755 . && chmod 555 ro && chmod 644 ro/kope.db");
    static const char *const reads[] = {"graph stats", "graph log silu-4864", "graph vector",
                                        "context silu-4864", "queue list"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        int rc = run_cmd(out, sizeof out, "cd %s/ro && %s %s %s 2>&1", getenv("KOPE_TEST_TMP"), as,
                         kope_bin(), reads[i]);
        if (rc != 0)
            fail_msg("`kope %s` in a read-only folder exited %d:\n%s", reads[i], rc, out);
    }
    int rc = run_cmd(out, sizeof out, "cd %s/ro && %s %s run --task silu-4864 --offline --budget 1 2>&1 >/dev/null",
                     getenv("KOPE_TEST_TMP"), as, kope_bin());
    assert_int_equal(rc, 1);
    assert_non_null(strstr(last_line(out), "hint: "));
    assert_non_null(strstr(out, "must be writable"));
    sh("chmod 755 ro");
}

/* ---- network: loopback only ---------------------------------------------- */

/* A listening socket on a free loopback port (held until closed). */
static int hold_port(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_network_words(void **state)
{
    (void)state;
    char args[256];
    sh("$K --db a.db init >/dev/null && $K --db a.db fleet init --dir fa >/dev/null 2>&1 && "
       "$K --db a.db fleet enroll a --ca fa >/dev/null 2>&1");
    /* a port in use */
    int port, fd = hold_port(&port);
    snprintf(args, sizeof args, "--db a.db serve --listen 127.0.0.1:%d", port);
    struct row in_use = {"port in use", NULL, args, 1, "already in use", "--listen"};
    check_row(&in_use);
    /* nothing listening: the port just held, now closed */
    close(fd);
    snprintf(args, sizeof args, "--db a.db sync 127.0.0.1:%d", port);
    char says[64];
    snprintf(says, sizeof says, "nothing listening at 127.0.0.1:%d", port);
    struct row refused = {"nothing listening", NULL, args, 1, says, "kope serve"};
    check_row(&refused);
    /* a peer that does not trust our CA (we trust its CA): the words name
     * the certificate and `kope fleet trust` */
    sh("$K --db b.db init >/dev/null && $K --db b.db fleet init --dir fb >/dev/null 2>&1 && "
       "$K --db b.db fleet enroll b --ca fb >/dev/null 2>&1 && $K --db a.db fleet trust fb/ca.crt >/dev/null");
    fd = hold_port(&port);
    close(fd);
    int wait_s = (test_ms(1000) + 999) / 1000;
    int rc = run_cmd(out, sizeof out,
                     "cd %s && (timeout %d %s --db b.db serve --listen 127.0.0.1:%d >serve.log 2>&1 &) && "
                     "sleep %d && %s --db a.db sync 127.0.0.1:%d 2>&1 >/dev/null",
                     getenv("KOPE_TEST_TMP"), 4 * wait_s + 5, kope_bin(), port, wait_s, kope_bin(), port);
    print_message("  %-28s exit %d, last line: %s\n", "peer refuses our cert", rc, last_line(out));
    assert_int_equal(rc, 1);
    assert_non_null(strstr(last_line(out), "hint: "));
    assert_non_null(strstr(last_line(out), "refused our certificate"));
    assert_non_null(strstr(last_line(out), "kope fleet trust"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_config_before_work),
        cmocka_unit_test(test_unmeasured_run),
        cmocka_unit_test(test_read_only_folder),
        cmocka_unit_test(test_network_words),
    };
    return cmocka_run_group_tests_name("hints", tests, NULL, NULL);
}

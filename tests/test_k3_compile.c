/*
 * tests/test_k3_compile.c - the K3 compile and link of a hostile candidate
 * (issue 21): they run in the compile sandbox (platform/proc.h PROC_VIEW:
 * the toolchain's view, the candidate's directory the only writable
 * place), the dependency list fails closed, the compiler writes no crash
 * reproducer, the linker opens no dependent library, and what is kept of
 * their output is the one cleaner's (platform/diag.h). Every test plants a
 * marker file with a unique string outside the candidate's directory and
 * checks it reaches no diagnostic, no detail, no store and no prompt.
 *
 * Each test takes its layer alone where two exist (the source screen off
 * with PLAT_SET_UNSAFE_NO_SCREEN to show the sandbox; a wrapper compiler
 * to break the dependency list), so taking the defence out fails it.
 * Runs under qemu-riscv64 on x86_64 hosts, natively on a board.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "platform/diag.h"
#include "platform/k3/k3.h"
#include "platform/platform.h"
#include "testutil.h"

#include "k3_fixture.h"

#define MARK "kope_marker_5c1e7a"

static char marker_tmp[256];  /* in /tmp: outside every kope directory */
static char marker_home[512]; /* in $HOME when it is writable, else "" */
static char marker_test[512]; /* in the test dir: the work dir's parent */

static void plant(char *path, size_t cap, const char *dir, const char *name)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        path[0] = '\0';
        return;
    }
    /* valid C, so a compiler that can open it compiles on */
    fputs("/* " MARK " */ typedef int kope_marker_t;\n", f);
    fclose(f);
}

static int group_setup(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof name, "kope-marker-%d.h", (int)getpid());
    plant(marker_tmp, sizeof marker_tmp, "/tmp", name);
    const char *home = getenv("HOME");
    if (home && *home && access(home, W_OK) == 0)
        plant(marker_home, sizeof marker_home, home, name);
    plant(marker_test, sizeof marker_test, getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp",
          "marker.h");
    return k3_group_open("k3compile");
}

static int teardown_all(void **state)
{
    if (marker_tmp[0])
        unlink(marker_tmp);
    if (marker_home[0])
        unlink(marker_home);
    return group_teardown(state);
}

#define HEAD \
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
#define KERNEL \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n" \
    "                 const struct kope_scalars *s) {\n" \
    "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n"

/* Compile src for an add task; nothing of the markers in what is kept. */
static void compile(const char *src, struct plat_build *b)
{
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    int rc = platform_compile(P, &t, src, strlen(src), b);
    if (rc)
        fprintf(stderr, "compile: %s\n", P->err);
    assert_int_equal(rc, 0);
    fprintf(stderr, "  -> ok=%d %s/%s: %s\n     diag: %.300s\n", b->ok, plat_fail_name(b->reason),
            plat_screen_rule_name(b->screen_rule), b->detail, b->diag);
    assert_null(strstr(b->diag, MARK));
    assert_null(strstr(b->detail, MARK));
}

static int not_found(const struct plat_build *b)
{
    return b->reason == PLAT_FAIL_COMPILE_ERROR &&
           (strstr(b->diag, "not found") || strstr(b->diag, "No such file"));
}

/* ------------------------------------------------ the sandbox alone --- */

/* With the screen and the include check off, only the sandbox stands
 * between the compiler and a host file: it is not there to open. Without
 * the sandbox each of these compiles (the marker is valid C). */
static void test_sandbox_hides_host_files(void **state)
{
    (void)state;
    struct plat_desc d;
    platform_describe(P, &d);
    if (strstr(d.note, "compile-isolation=NO-NAMESPACES")) {
        fprintf(stderr, "skip: namespaces unavailable (%s): compiles are labelled degraded\n", d.note);
        skip();
    }
    assert_non_null(strstr(d.note, "compile-isolation=namespaces(user,pid,net,mount,ipc)+toolchain-view"));
    const char *paths[] = {marker_tmp, marker_home, marker_test, "../../marker.h"};
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (!paths[i][0])
            continue;
        char src[2048];
        struct plat_build b;
        snprintf(src, sizeof src, "#include \"%s\"\n" HEAD KERNEL, paths[i]);
        compile(src, &b);
        assert_false(b.ok);
        assert_true(not_found(&b));
        platform_build_free(P, &b);
        if (i == 3)
            continue;
        snprintf(src, sizeof src, HEAD "const unsigned char e[] = {\n#embed \"%s\"\n};\n" KERNEL, paths[i]);
        compile(src, &b);
        assert_false(b.ok);
        if (!strstr(b.diag, "invalid preprocessing directive")) /* gcc-14 has no #embed */
            assert_true(not_found(&b));
        platform_build_free(P, &b);
    }
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
}

/* --------------------------------------- the dependency list fails closed --- */

/* A compiler (here a wrapper around the real one: platform.k3.cc takes a
 * command) that leaves its dependency list missing, empty, cut short or
 * garbled: the candidate, honest as it is, is refused, never judged as one
 * that read nothing. */
static void test_dependency_list_fails_closed(void **state)
{
    (void)state;
    struct plat_desc d;
    platform_describe(P, &d);
    /* the real compiler: the first word of the platform's, made absolute
     * (the wrapper runs in the sandbox, whose PATH is /usr/bin:/bin) */
    char first[256], rest[512], found[600];
    size_t fl = strcspn(d.cc, " ");
    snprintf(first, sizeof first, "%.*s", (int)fl, d.cc);
    /* d.cc is "CC CFLAGS": the wrapper gets the flags from kope again */
    snprintf(rest, sizeof rest, "%s", d.cc + fl);
    char *cfl = strstr(rest, " -O3");
    if (cfl)
        *cfl = '\0';
    assert_int_equal(run_cmd(found, sizeof found, "readlink -f \"$(command -v %s)\"", first), 0);
    found[strcspn(found, "\n")] = '\0';
    static const char *const modes[][2] = {
        {"missing", "redirect"}, {"empty", ": > \"$mf\""}, {"cut", "printf 'c.o: c.c \\\\' > \"$mf\""},
        {"garbled", "printf 'no colon here\\n' > \"$mf\""}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char wrapper[600], script[4096];
        /* named like the compiler it wraps: kope picks clang's flags by name */
        snprintf(wrapper, sizeof wrapper, "%s",
                 tpath("%s-wrap-%s.sh", strstr(found, "clang") ? "clang" : "gcc", modes[m][0]));
        int redirect = strcmp(modes[m][1], "redirect") == 0;
        snprintf(script, sizeof script,
                 "#!/bin/sh\n"
                 "# test wrapper: the real compiler, then a broken dependency list (%s)\n"
                 "# (the candidate's cand.d only: kope's own probe must still work)\n"
                 "mf=''; prev=''; first=1\n"
                 "for a in \"$@\"; do\n"
                 "  [ $first = 1 ] && { set --; first=0; }\n"
                 "  case \"$prev:$a\" in -MF:*/cand.d) mf=$a; %s;; esac\n"
                 "  set -- \"$@\" \"$a\"; prev=$a\n"
                 "done\n"
                 "%s%s \"$@\"; rc=$?\n"
                 "[ -n \"$mf\" ] && [ $rc = 0 ] && { %s; }\n"
                 "exit $rc\n",
                 modes[m][0], redirect ? "a=$a.elsewhere" : ":", found, rest,
                 redirect ? ":" : modes[m][1]);
        FILE *f = fopen(wrapper, "w");
        assert_non_null(f);
        fputs(script, f);
        fclose(f);
        chmod(wrapper, 0755);
        struct plat_settings s;
        plat_settings_init(&s);
        s.cc = wrapper;
        s.timeout_ms = 20000;
        struct platform *w = NULL;
        char dir[64];
        snprintf(dir, sizeof dir, "k3wrap-%s", modes[m][0]);
        assert_int_equal(k3_open_with(dir, &s, 0, &w), 0);
        struct plat_task t;
        task_init(&t, PLAT_OP_ADD);
        struct plat_build b;
        const char *src = HEAD KERNEL;
        assert_int_equal(platform_compile(w, &t, src, strlen(src), &b), 0);
        fprintf(stderr, "  %s -> ok=%d %s/%s: %s\n", modes[m][0], b.ok, plat_fail_name(b.reason),
                plat_screen_rule_name(b.screen_rule), b.detail);
        assert_false(b.ok);
        assert_int_equal(b.reason, PLAT_FAIL_SCREEN_REJECTED);
        assert_int_equal(b.screen_rule, PLAT_SCREEN_HEADER);
        assert_non_null(strstr(b.detail, "dependency list"));
        platform_build_free(w, &b);
        platform_close(w);
    }
}

/* ------------------------------------------- a crashing compiler --- */

/* clang crashes on `#pragma clang __debug crash`; with the crash report on
 * it writes the preprocessed source and a script with host paths into
 * TMPDIR (the candidate's directory, in the sandbox) and prints a stack
 * dump. Nothing of either is kept, and no reproducer is written. */
static void test_compiler_crash_leaves_nothing(void **state)
{
    (void)state;
    struct plat_desc d;
    platform_describe(P, &d);
    if (!strstr(d.cc, "clang")) {
        fprintf(stderr, "skip: not clang (%s): gcc writes no reproducer unless asked\n", d.cc);
        skip();
    }
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN; /* the pragma is on no allow-list */
    struct plat_build b;
    compile("#pragma clang __debug crash\n" HEAD KERNEL, &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
    assert_non_null(strstr(b.detail, "crashed"));
    assert_null(strstr(b.diag, "PLEASE"));
    assert_null(strstr(b.diag, "Stack dump"));
    assert_null(strstr(b.diag, "/usr/"));
    /* the candidate's directory holds what kope put there and nothing else */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/k3compile", getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp");
    char found[4096];
    assert_int_equal(run_cmd(found, sizeof found, "find '%s' -path '*/c%llu/*' -type f", dir,
                             (unsigned long long)b.id), 0);
    fprintf(stderr, "  files: %s", found);
    for (char *l = found; *l;) {
        char *e = strchr(l, '\n');
        if (e)
            *e = '\0';
        const char *base = strrchr(l, '/');
        base = base ? base + 1 : l;
        assert_true(strcmp(base, "cand.c") == 0 || strcmp(base, "cand.d") == 0 || strcmp(base, "cand.o") == 0);
        l = e ? e + 1 : l + strlen(l);
    }
    platform_build_free(P, &b);
}

/* ------------------------------------------------------ the linker --- */

/* `#pragma comment(lib, PATH)` makes lld open PATH and quote its first line
 * in its error; with --no-dependent-libraries the pragma does nothing. */
static void test_pragma_comment_lib_opens_nothing(void **state)
{
    (void)state;
    struct plat_desc d;
    platform_describe(P, &d);
    if (!strstr(d.cc, "clang")) {
        fprintf(stderr, "skip: not clang (%s): GNU ld reads no dependent libraries\n", d.cc);
        skip();
    }
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN; /* the linker's layer alone */
    char src[2048];
    snprintf(src, sizeof src, "#pragma comment(lib, \"%s\")\n" HEAD KERNEL, marker_test);
    struct plat_build b;
    compile(src, &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    assert_true(b.ok); /* the pragma had no effect on the link */
    platform_build_free(P, &b);
}

/* A failed link is stored in kope's words only. */
static void test_link_failure_in_kopes_words(void **state)
{
    (void)state;
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN; /* the object check would refuse the symbol first */
    struct plat_build b;
    compile(HEAD "extern void kope_undefined_helper(void);\n"
                 "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
                 "                 const struct kope_scalars *s) {\n"
                 "  (void)s; kope_undefined_helper(); for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n",
            &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
    assert_string_equal(b.detail, "link failed: undefined symbol kope_undefined_helper");
    assert_string_equal(b.diag, "link failed: undefined symbol kope_undefined_helper\n");
    platform_build_free(P, &b);

    /* the words, from each linker's text, and nothing of that text */
    char out[256];
    plat_diag_link("ld.lld: error: /home/u/.kope/llm.key:1: unknown directive: sk-" MARK "\n"
                   ">>> sk-" MARK "\n>>> ^\n", out, sizeof out);
    assert_string_equal(out, "link failed");
    plat_diag_link("ld.lld: error: unable to find library from dependent library specifier: /home/u/"
                   MARK "\n", out, sizeof out);
    assert_string_equal(out, "link failed: a dependent library");
    plat_diag_link("ld.lld: error: undefined symbol: foo_bar\n>>> referenced by cand.c\n", out, sizeof out);
    assert_string_equal(out, "link failed: undefined symbol foo_bar");
    plat_diag_link("/usr/bin/ld: cand.o: in function `kope_kernel':\ncand.c:(.text+0x8): undefined "
                   "reference to `sqrtf'\ncollect2: error: ld returned 1 exit status\n", out, sizeof out);
    assert_string_equal(out, "link failed: undefined symbol sqrtf");
    plat_diag_link("ld.lld: error: duplicate symbol: kope_kernel\n", out, sizeof out);
    assert_string_equal(out, "link failed: duplicate symbol kope_kernel");
    /* a name is a name: nothing past its characters */
    plat_diag_link("ld.lld: error: undefined symbol: x'/etc/passwd " MARK "\n", out, sizeof out);
    assert_string_equal(out, "link failed: undefined symbol x");
}

/* ------------------------------------------------- the cleaner --- */

/* Only lines attributed to the candidate's file survive: the driver's own
 * errors quoting paths, a crash's stack dump, the linker, make and cmake
 * chatter, notes in other files. (The cleaner before issue 21 kept every
 * line before the first location: the driver's and the crash's.) */
static void test_cleaner_keeps_only_the_candidates_lines(void **state)
{
    (void)state;
    const char *in =
        "clang-19: error: no such file or directory: '/home/u/" MARK "'\n"
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\n"
        "Stack dump:\n"
        "0.\tProgram arguments: clang-19 -c /w/c1/cand.c -I/home/u/" MARK "\n"
        " #0 0x00007f01 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/libLLVM.so+0xeb)\n"
        "/w/c1/cand.c:3:5: warning: unused variable 'v' [-Wunused-variable]\n"
        "    3 |     int v;\n"
        "      |     ^\n"
        "ld.lld: error: /home/u/" MARK ":1: unknown directive\n"
        ">>> " MARK "\n"
        "[ 50%] Building CXX object CMakeFiles/k.dir/kernel.cpp.o\n"
        "gmake[2]: *** [CMakeFiles/k.dir/build.make:76: x] Error 1\n"
        "/w/c1/cand.c: In function 'kope_kernel':\n"
        "/w/c1/cand.c:9:1: error: expected ';' before '}' token (see /w/rt/proto_x.h)\n"
        "    9 | }\n"
        "      | ^\n"
        "In file included from /w/c1/cand.c:1:\n"
        "/home/u/" MARK ".h:1:1: error: unknown type name 'x'\n"
        "    1 | " MARK "\n"
        "1 warning and 1 error generated.\n"
        "compilation terminated.\n"
        "1 error generated. " MARK "\n";
    char out[2048];
    k3_diag_clean(in, "/w/c1/cand.c", out, sizeof out);
    fprintf(stderr, "%s", out);
    assert_null(strstr(out, MARK));
    assert_null(strstr(out, "/w/"));
    assert_null(strstr(out, "PLEASE"));
    assert_null(strstr(out, "ld.lld"));
    assert_null(strstr(out, "gmake"));
    assert_string_equal(out,
                        "cand.c:3:5: warning: unused variable 'v' [-Wunused-variable]\n"
                        "    3 |     int v;\n"
                        "      |     ^\n"
                        "cand.c: In function 'kope_kernel':\n"
                        "cand.c:9:1: error: expected ';' before '}' token (see rt/proto_x.h)\n"
                        "    9 | }\n"
                        "      | ^\n"
                        "1 warning and 1 error generated.\n"
                        "compilation terminated.\n");
}

/* ------------------------------------------- nothing reaches the store --- */

/* Does the file at path hold MARK anywhere (the SQLite file, its WAL)? */
static int file_has_mark(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static char buf[1 << 20];
    size_t n, keep = 0, ml = strlen(MARK);
    int hit = 0;
    while (!hit && (n = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
        n += keep;
        hit = memmem(buf, n, MARK, ml) != NULL;
        keep = n < ml ? n : ml - 1;
        memmove(buf, buf + n - keep, keep);
    }
    fclose(f);
    return hit;
}

/* The tricks of the outside red team and their siblings, through `kope
 * run` as a user runs it (every layer on): none leaves the marker in the
 * store file or in the prompt `kope context` prints. */
static void test_marker_never_stored_or_prompted(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    const char *db = tpath("mark.db"), *suite = tpath("mark.json");
    test_store_init(db);
    test_write_text(suite, "{\"suite\": \"mark\", \"tasks\": [{\"name\": \"mark-add\", \"op\": \"add\","
                           " \"dtype\": \"f32\", \"shape\": {\"n\": 1000}}]}\n");
    char forms[5][2048];
    /* an include by macro, #embed behind a comment, a file probe, the
     * linker's dependent library, and #import */
    snprintf(forms[0], sizeof forms[0], "#define F \"%s\"\n#include F\n" HEAD KERNEL, marker_test);
    snprintf(forms[1], sizeof forms[1], HEAD "const unsigned char e[] = {\n#/**/embed \"%s\"\n};\n"
             "_Static_assert(sizeof e == 1, \"\");\n" KERNEL, marker_tmp);
    snprintf(forms[2], sizeof forms[2], "#if __has_include(\"%s\")\n#include \"%s\"\n#endif\n" HEAD KERNEL,
             marker_test, marker_test);
    snprintf(forms[3], sizeof forms[3], "#pragma comment(lib, \"%s\")\n" HEAD KERNEL, marker_test);
    snprintf(forms[4], sizeof forms[4], "#import \"%s\"\n" HEAD KERNEL, marker_test);
    static char out[1 << 16];
    for (int i = 0; i < 5; i++) {
        const char *seed = tpath("seed-%d.c", i);
        test_write_text(seed, forms[i]);
        int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --task mark-add --seed %s --budget 1 "
                         "--offline", kope_bin(), db, suite, seed);
        fprintf(stderr, "  seed %d: exit %d\n%.600s\n", i, rc, out);
        assert_true(rc == 0 || rc == 1);
        assert_null(strstr(out, MARK));
    }
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", db);
    assert_false(file_has_mark(db));
    assert_false(file_has_mark(wal));
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s context mark-add --suite %s", kope_bin(), db, suite), 0);
    assert_non_null(strstr(out, "mark-add"));
    assert_null(strstr(out, MARK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cleaner_keeps_only_the_candidates_lines),
        cmocka_unit_test(test_sandbox_hides_host_files),
        cmocka_unit_test(test_dependency_list_fails_closed),
        cmocka_unit_test(test_compiler_crash_leaves_nothing),
        cmocka_unit_test(test_pragma_comment_lib_opens_nothing),
        cmocka_unit_test(test_link_failure_in_kopes_words),
        cmocka_unit_test(test_marker_never_stored_or_prompted),
    };
    return cmocka_run_group_tests_name("k3_compile", tests, group_setup, teardown_all);
}

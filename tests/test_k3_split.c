/*
 * tests/test_k3_split.c - the K3 judge split (issue 21, "the candidate never
 * runs where the verdict lives"): the judge program holds no candidate code,
 * the kernel program (kserve.c + the candidate) is exec'd with a neutral
 * start, and nothing a candidate makes run before main, at exit or through
 * the loader reaches the verdict.
 *
 * Every hostile kernel here runs with the screens off
 * (PLAT_SET_UNSAFE_NO_SCREEN): what is tested is the split itself, not the
 * source, object and program checks that refuse these constructs first.
 * Each was checked against the harness before the split (one program, the
 * candidate linked into the judge): there the forged reports were taken as
 * passes, the kernel saw the judge's argv and environment, and the judge
 * program held kope_kernel (see docs/K3-HARNESS.md "The judge split").
 *
 * Runs under qemu-riscv64 on x86_64 hosts, natively on a board.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "platform/k3/k3.h"
#include "platform/k3/objcheck.h"
#include "platform/proc.h"
#include "platform/platform.h"
#include "testutil.h"

#include "k3_fixture.h"

static int group_setup(void **state)
{
    (void)state;
    return k3_group_open("k3split");
}

/* Compile (screens off unless screened) and verify src as an add kernel. */
static void add_verify(const char *src, int screened, struct plat_build *b, struct plat_verify *v)
{
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    if (!screened)
        P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN;
    int rc = platform_compile(P, &t, src, strlen(src), b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    if (rc)
        fprintf(stderr, "compile: %s\n", P->err);
    assert_int_equal(rc, 0);
    memset(v, 0, sizeof *v);
    if (!b->ok) {
        v->reason = b->reason;
        snprintf(v->detail, sizeof v->detail, "%s", b->detail);
    } else {
        rc = platform_verify(P, &t, b, v);
        if (rc)
            fprintf(stderr, "verify: %s\n", P->err);
        assert_int_equal(rc, 0);
    }
    fprintf(stderr, "  -> ok=%d %s: %s\n", v->pass, plat_fail_name(v->reason), v->detail);
}

#define HEAD \
    "#include <stddef.h>\n#include <stdint.h>\n#include \"kernel_abi.h\"\n" \
    "long syscall(long, ...); void _exit(int);\n"
#define KSIG \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n" \
    "                 const struct kope_scalars *s) {\n  (void)s;\n"
/* a wrong kernel (multiplies): only a forged report could make it pass */
#define WRONG "  for (size_t i = 0; i < n; i++) out[i] = x[i] * y[i];\n}\n"
#define RIGHT "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n"
/* what a judge's report of a passing run looks like, written to fd 3 (the
 * report, in the judge; in the kernel program a pipe's read end) */
#define FORGE \
    "static void forge(void) {\n" \
    "  static const char r[] = \"case task 4096 1 4096 0 0 0 1 none 0 0 0 0\\ndone\\n\";\n" \
    "  syscall(64 /* write */, 3, r, sizeof r - 1); _exit(0);\n}\n"

/* ------------------------------------------------ nothing of it in the judge --- */

/* A candidate's code runs only in its kernel program: every way of running
 * before main or instead of a libc function the judge calls - a libc
 * function it defines (memcpy, memcmp, malloc/free), a constructor, an ifunc
 * resolver, a destructor - writes a forged passing report to fd 3 and
 * exits 0. The kernel itself is wrong: the verdict must say so, never pass
 * (before the split each of these was taken as a verified pass). */
static void test_libc_override_cannot_change_verdict(void **state)
{
    (void)state;
    static const char *const srcs[] = {
        /* memcpy, which the judge calls to publish the inputs */
        HEAD FORGE "void *memcpy(void *d, const void *s, size_t n) {\n"
        "  forge(); unsigned char *a = d; const unsigned char *b = s;\n"
        "  for (size_t i = 0; i < n; i++) a[i] = b[i]; return d; }\n" KSIG WRONG,
        /* memcmp/bcmp, which the judge compares inputs and outputs with */
        HEAD FORGE "int memcmp(const void *a, const void *b, size_t n) { (void)a; (void)b; (void)n; forge(); return 0; }\n"
        "int bcmp(const void *a, const void *b, size_t n) { (void)a; (void)b; (void)n; forge(); return 0; }\n" KSIG WRONG,
        /* malloc and free */
        HEAD FORGE "static char pool[1 << 20]; static size_t used;\n"
        "void *malloc(size_t n) { forge(); void *p = pool + used; used += (n + 15) & ~(size_t)15; return p; }\n"
        "void free(void *p) { (void)p; forge(); }\n"
        "void *calloc(size_t n, size_t m) { forge(); return malloc(n * m); }\n"
        "void *realloc(void *p, size_t n) { (void)p; forge(); return malloc(n); }\n" KSIG WRONG,
        /* a constructor */
        HEAD FORGE "__attribute__((constructor)) static void early(void) { forge(); }\n" KSIG WRONG,
        /* an ifunc resolver (run by the static loader before main) */
        HEAD FORGE "static void impl(void) {}\n"
        "static void (*resolve(void))(void) { forge(); return impl; }\n"
        "void kope_helper(void) __attribute__((ifunc(\"resolve\")));\n" KSIG
        "  kope_helper();\n" WRONG,
        /* a destructor (exit 0 after the forged lines) */
        HEAD FORGE "__attribute__((destructor)) static void late(void) { forge(); }\n" KSIG WRONG,
    };
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        struct plat_build b;
        struct plat_verify v;
        fprintf(stderr, "  override %zu\n", i);
        add_verify(srcs[i], 0, &b, &v);
        assert_false(v.pass);
        /* the kernel's own failure (a wrong result, or a crash of its
         * process), never a pass and never the judge's "harness" */
        assert_true(v.reason == PLAT_FAIL_WRONG_RESULT || v.reason == PLAT_FAIL_CRASH ||
                    v.reason == PLAT_FAIL_COMPILE_ERROR);
        platform_build_free(P, &b);
    }
}

/* The judge program has no kope_kernel and none of the candidate's
 * symbols; the kernel program has both (so the check can see them). */
static void test_judge_program_has_no_candidate(void **state)
{
    (void)state;
    const char *src = "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
                      "__attribute__((noinline)) static float kope_split_probe_helper(float a, float b)\n"
                      "{ return a + b; }\n" KSIG
                      "  for (size_t i = 0; i < n; i++) out[i] = kope_split_probe_helper(x[i], y[i]);\n}\n";
    struct plat_build b;
    struct plat_verify v;
    add_verify(src, 1, &b, &v);
    assert_true(v.pass);
    struct k3 *k = P->priv;
    char judge[512], err[200];
    snprintf(judge, sizeof judge, "%s/judge_%d", k->rt, (int)PLAT_OP_ADD);
    assert_int_equal(k3_program_defines(judge, "kope_kernel", err, sizeof err), 0);
    assert_int_equal(k3_program_defines(judge, "kope_split_probe_helper", err, sizeof err), 0);
    assert_int_equal(k3_program_defines(b.path, "kope_kernel", err, sizeof err), 1);
    assert_int_equal(k3_program_defines(b.path, "kope_split_probe_helper", err, sizeof err), 1);
    /* the check reads the judge's symbols at all: its main is there */
    assert_int_equal(k3_program_defines(judge, "main", err, sizeof err), 1);
    platform_build_free(P, &b);
}

/* ------------------------------------------------------- a neutral start --- */

/* The kernel process starts with argc 1, argv {"kernel"}, an empty
 * environment and only the fixed descriptors of kproto.h: a kernel that
 * checks all of it in a constructor (glibc passes argc, argv and envp to
 * init_array functions) computes right only when it holds, and writes the
 * first element wrong otherwise, its bits saying what it saw (1 argc,
 * 2 argv[0], 4 argv[1], 8 environment, 16 an fd it should not have, 32 a
 * fixed fd missing; the fd number from bit 8). Before the split it saw the
 * judge's argv (mode=, op=, seed=) and kope's clean environment. */
static void test_kernel_sees_neutral_start(void **state)
{
    (void)state;
    const char *src =
        HEAD "extern char **environ;\n"
        "static unsigned seen = 0x40000000u;\n"
        "static int streq(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }\n"
        "__attribute__((constructor)) static void look(int argc, char **argv, char **envp) {\n"
        "  unsigned bad = 0;\n"
        "  if (argc != 1) bad |= 1;\n"
        "  if (!argv || !argv[0] || !streq(argv[0], \"kernel\")) bad |= 2;\n"
        "  else if (argv[1]) bad |= 4;\n"
        "  if ((envp && envp[0]) || (environ && environ[0])) bad |= 8;\n"
        "  for (int fd = 3; fd < 1024; fd++) {\n"
        "    long r = syscall(25 /* fcntl */, fd, 1 /* F_GETFD */);\n"
        "    int fixed = fd <= 5; /* cmd, done, arena (kserve closes it in main) */\n"
        "    if (r >= 0 && !fixed) { bad |= 16 | (unsigned)fd << 8; break; }\n"
        "    if (r < 0 && fixed) { bad |= 32 | (unsigned)fd << 8; break; }\n"
        "  }\n"
        "  seen |= bad;\n}\n" KSIG
        "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n"
        "  if (seen != 0x40000000u && n) { uint32_t b = 0x7f800000u | (seen & 0x3fffffu) | 0x400000u;\n"
        "    __builtin_memcpy(&out[0], &b, 4); }\n}\n";
    struct plat_build b;
    struct plat_verify v;
    add_verify(src, 0, &b, &v);
    if (!v.pass && v.n_cases > 0)
        for (int i = 0; i < v.n_cases; i++)
            if (!v.cases[i].pass)
                fprintf(stderr, "  case %s: %s got=0x%08x\n", v.cases[i].label,
                        plat_fail_name(v.cases[i].reason), (unsigned)v.cases[i].got_bits);
    assert_true(v.pass);
    assert_int_equal(v.reason, PLAT_FAIL_NONE);
    platform_build_free(P, &b);
}

/* ------------------------------------------------- the judge out of reach --- */

/* The kernel process (uid 1000 without capabilities, its parent the judge)
 * cannot open the judge's report or read its memory: in kope's namespaces
 * there is no /proc at all (the minimal root), and the judge is not
 * dumpable, so /proc/<judge>/fd and /proc/<judge>/mem are refused to the
 * same uid where a /proc is visible. The second layer alone is tried
 * without the namespaces, where the host's /proc is there - only when the
 * tests do not run as root: root holds CAP_SYS_PTRACE, which
 * non-dumpability does not stop (and kope's namespaces take away). A kernel
 * that got either computes wrong. (Run as nobody with the judge's
 * PR_SET_DUMPABLE taken out, the variant without namespaces fails: the
 * kernel qemu opens the judge's fd 3.) */
static void test_judge_fds_and_memory_unreachable(void **state)
{
    (void)state;
    const char *src =
        HEAD "static int got;\n"
        "static long ppid(void) { return syscall(173 /* getppid */); }\n"
        "static void path(char *b, long pid, const char *tail) {\n"
        "  const char *p = \"/proc/\"; while (*p) *b++ = *p++;\n"
        "  char d[24]; int k = 0; do { d[k++] = (char)('0' + pid % 10); pid /= 10; } while (pid);\n"
        "  while (k) *b++ = d[--k]; while (*tail) *b++ = *tail++; *b = 0; }\n"
        "__attribute__((constructor)) static void reach(void) {\n"
        "  char b[64]; long pp = ppid();\n"
        "  path(b, pp, \"/fd/3\");\n"
        "  long fd = syscall(56 /* openat */, -100, b, 1 /* O_WRONLY */, 0);\n"
        "  if (fd >= 0) { got |= 1; syscall(64, fd, \"case task 4096 1 4096 0 0 0 1 none 0 0 0 0\\ndone\\n\", 46); }\n"
        "  path(b, pp, \"/mem\");\n"
        "  fd = syscall(56, -100, b, 0 /* O_RDONLY */, 0);\n"
        "  if (fd >= 0) got |= 2;\n}\n" KSIG
        "  for (size_t i = 0; i < n; i++) out[i] = got ? x[i] * y[i] : x[i] + y[i];\n}\n";
    for (int iso = 0; iso < 2; iso++) {
        struct plat_build b;
        struct plat_verify v;
        if (iso && geteuid() == 0) {
            fprintf(stderr, "  without namespaces: not tried as root (CAP_SYS_PTRACE)\n");
            continue;
        }
        if (iso)
            P->set.flags |= PLAT_SET_UNSAFE_NO_ISOLATION;
        fprintf(stderr, "  %s\n", iso ? "without namespaces" : "isolated");
        add_verify(src, 0, &b, &v);
        P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_ISOLATION;
        assert_true(v.pass);
        platform_build_free(P, &b);
    }
}

/* ------------------------------------------------------ native seccomp --- */

/* Natively the allow-list is installed before the exec: a constructor that
 * tries openat, socket and execve gets EPERM for each (the kernel computes
 * right only then). Under qemu-user seccomp cannot be installed (it would
 * filter the emulator), so the test is skipped there. */
static void test_native_seccomp_before_main(void **state)
{
    (void)state;
#if !defined(__riscv)
    fprintf(stderr, "  skipped: the harness runs under qemu-user here (no seccomp in the guest)\n");
    skip();
#else
    if (test_emulated()) {
        fprintf(stderr, "  skipped: under qemu-user (no seccomp in the guest)\n");
        skip();
    }
    struct k3 *k = P->priv;
    if (k->emulated && k->runner[0]) {
        fprintf(stderr, "  skipped: the harness runs under a runner\n");
        skip();
    }
    const char *src =
        HEAD "static int ok;\n"
        "extern int *__errno_location(void);\n"
        "__attribute__((constructor)) static void try_all(void) {\n"
        "  int e = 0;\n"
        "  if (syscall(56 /* openat */, -100, \"/etc/passwd\", 0, 0) < 0 && *__errno_location() == 1) e++;\n"
        "  if (syscall(198 /* socket */, 2, 1, 0) < 0 && *__errno_location() == 1) e++;\n"
        "  static char *const av[] = {\"/bin/true\", 0}; static char *const ev[] = {0};\n"
        "  if (syscall(221 /* execve */, \"/bin/true\", av, ev) < 0 && *__errno_location() == 1) e++;\n"
        "  ok = e == 3;\n}\n" KSIG
        "  for (size_t i = 0; i < n; i++) out[i] = ok ? x[i] + y[i] : x[i] * y[i];\n}\n";
    struct plat_build b;
    struct plat_verify v;
    add_verify(src, 0, &b, &v);
    assert_true(v.pass);
    platform_build_free(P, &b);
#endif
}

/* The native path (execveat of the kernel program on fd 6, the allow-list
 * installed before it, the arena mapped at the judge's addresses, the
 * baselines in forks), which CI's x86_64 machine otherwise never runs: the
 * embedded judge and kserve built for the host with its own cc (they are
 * portable C but for the RVV parts), the judge run directly with a report
 * on fd 3 and the kernel program on fd 5. The kernel's constructor tries
 * openat, socket, execve, dup and a second execveat of fd 6, and checks its
 * argv and environment: it computes right only if every one was refused
 * and the start was neutral. Skipped where the host cannot link static
 * programs or the test itself runs emulated. */
static void test_native_path_on_host(void **state)
{
    (void)state;
    const char *src = getenv("KOPE_SRC");
    if (test_emulated() || !src) {
        fprintf(stderr, "  skipped: %s\n", src ? "the test runs emulated" : "no $KOPE_SRC");
        skip();
    }
    const char *dir = tpath("native");
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
        "set -e; mkdir -p %s; cd %s; E=%s/platform/k3/embed; J=%s/platform/judge;\n"
        "CC=\"${CC:-cc} -O1 -D_GNU_SOURCE -w -I$E -I$J -I%s/platform\"\n"
        "printf 'int main(void){return 0;}' > t.c; $CC -static t.c -o t 2>/dev/null || exit 77\n"
        "cp $J/ref.c .; $CC -c $E/harness.c -o h.o; $CC -c $J/ref.c -o r.o\n"
        "$CC -DKOPE_BASE_OP=0 -DKOPE_BASE_NAME=kope_base_scalar -c $E/base.c -o b1.o\n"
        "$CC -DKOPE_BASE_OP=0 -DKOPE_BASE_NAME=kope_base_autovec -c $E/base.c -o b2.o\n"
        "$CC -c $E/blas.c -o bl.o; $CC -c $E/sleef.c -o sl.o\n"
        "$CC -static h.o r.o b1.o b2.o bl.o sl.o -lm -o judge\n"
        "cat > cand.c <<'EOF'\n"
        "#include <errno.h>\n#include <fcntl.h>\n#include <string.h>\n#include <unistd.h>\n"
        "#include <sys/socket.h>\n#include <sys/syscall.h>\n#include \"kernel_abi.h\"\n"
        "static int ok;\n"
        "__attribute__((constructor)) static void c(int argc, char **argv, char **envp) {\n"
        "  char *av[] = {\"/bin/true\", 0}; int e = 0;\n"
        "  if (syscall(SYS_openat, AT_FDCWD, \"/etc/passwd\", O_RDONLY) < 0 && errno == EPERM) e++;\n"
        "  if (socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM) e++;\n"
        "  if (execve(\"/bin/true\", av, av + 1) < 0 && errno == EPERM) e++;\n"
        "  if (dup(3) < 0 && errno == EPERM) e++;\n"
        "  if (syscall(SYS_execveat, 6, \"\", av, av + 1, AT_EMPTY_PATH) < 0) e++;\n"
        "  ok = e == 5 && argc == 1 && !strcmp(argv[0], \"kernel\") && !envp[0];\n}\n"
        "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)\n"
        "{ (void)s; for (size_t i = 0; i < n; i++) out[i] = ok ? x[i] + y[i] : x[i] * y[i]; }\n"
        "EOF\n"
        "$CC -c $E/kserve.c -o k.o; $CC -c cand.c -o c.o\n"
        "$CC -static -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc k.o c.o -lm -o kernel\n"
        "A='op=add n=4096 rows=0 cols=0 m=0 k=0 batch=0 rtol=1e-6 atol=1e-6 seed=7'\n"
        "./judge mode=verify $A 3>verify.report 5<kernel </dev/null || true\n"
        "./judge mode=measure $A min_ms=2 max_rep=8 flags=4 3>measure.report 5<kernel </dev/null || true\n",
        dir, dir, src, src, src);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        fprintf(stderr, "  skipped: the host cc cannot link a static program\n");
        skip();
    }
    assert_int_equal(rc, 0);
    static char text[64 << 10];
    for (int i = 0; i < 2; i++) {
        const char *name = tpath("native/%s.report", i ? "measure" : "verify");
        FILE *f = fopen(name, "rb");
        assert_non_null(f);
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        fprintf(stderr, "  %s: %zu bytes%s\n", name, n, strstr(text, "\nfail ") ? " (fail)" : "");
        assert_non_null(strstr(text, "seccomp(kernel process)=on("));
        assert_null(strstr(text, "\nfail "));
        assert_null(strstr(text, " 0 wrong_result "));
        assert_non_null(strstr(text, "\ndone\n"));
        if (i == 0)
            assert_non_null(strstr(text, "\ncase task-reseeded 4096 1 4096 0 0 0 1 none"));
        else
            assert_non_null(strstr(text, "\ntime candidate "));
    }
    /* The same verify through kope's own sandbox (platform/proc.c: the
     * namespaces, the minimal root, the runner's seccomp filter with
     * PROC_EXEC_FD), as k3.c runs a native judge: the kernel program's
     * execveat on fd 6 must pass both filters. A wrong jump in the runner's
     * filter refused every native exec (EPERM) in the board VM while the run
     * above, outside proc.c, passed. */
    char judge[1024], kern[1024], sdir[1024], report[1100];
    snprintf(judge, sizeof judge, "%s", tpath("native/judge"));
    snprintf(kern, sizeof kern, "%s", tpath("native/kernel"));
    snprintf(sdir, sizeof sdir, "%s", tpath("native/sandboxed"));
    snprintf(report, sizeof report, "%s/verify.report", sdir);
    assert_int_equal(mkdir(sdir, 0700), 0);
    int rfd = open(report, O_RDWR | O_CREAT | O_TRUNC, 0600), kfd = open(kern, O_RDONLY | O_CLOEXEC);
    assert_true(rfd >= 0 && kfd >= 0);
    char *argv[] = {judge, "mode=verify", "op=add", "n=4096", "rows=0", "cols=0", "m=0", "k=0", "batch=0",
                    "rtol=1e-6", "atol=1e-6", "seed=7", NULL};
    static char out[8192];
    struct proc_spec r = {.argv = argv, .cwd = sdir, .timeout_ms = test_ms(120000), .cpu_s = 120,
                          .out = out, .out_len = sizeof out, .fd3 = rfd, .fd5 = kfd, .exec_fd = 6,
                          .flags = PROC_ISOLATE | PROC_EXEC_FD, .rw_dir = sdir, .ro_paths = {judge, kern}};
    struct proc_result res;
    char err[256];
    assert_int_equal(proc_run(&r, &res, err, sizeof err), 0);
    close(kfd);
    ssize_t n = pread(rfd, text, sizeof text - 1, 0);
    close(rfd);
    text[n > 0 ? n : 0] = '\0';
    fprintf(stderr, "  sandboxed (%s): %zd bytes%s\n", res.isolation, n, strstr(text, "\nfail ") ? " (fail)" : "");
    if (!strstr(res.isolation, "namespaces(user") || !strstr(res.isolation, "seccomp"))
        skip(); /* no user namespaces or no seccomp here: nothing to check */
    if (strstr(text, "\nfail ") || !strstr(text, "\ndone\n"))
        fail_msg("the sandboxed native judge failed:\n%s\n%s", text, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libc_override_cannot_change_verdict),
        cmocka_unit_test(test_judge_program_has_no_candidate),
        cmocka_unit_test(test_kernel_sees_neutral_start),
        cmocka_unit_test(test_judge_fds_and_memory_unreachable),
        cmocka_unit_test(test_native_seccomp_before_main),
        cmocka_unit_test(test_native_path_on_host),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

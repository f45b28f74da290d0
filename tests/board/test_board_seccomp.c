/*
 * tests/board/test_board_seccomp.c - on a real riscv64 kernel (the board VM,
 * or a board), the harness's seccomp filter itself stops a forbidden system
 * call: not only the source screen and object check in front of it.
 *
 * The kernel below calls openat(2) to create a file next to the harness.
 * With the screen on it never builds (screen rule: call). With the screen
 * off (PLAT_SET_UNSAFE_NO_SCREEN) it is compiled and run, and only the
 * filter stands between it and the file system: the call must fail with
 * EPERM (what the filter returns), so the kernel's output is right and no
 * file appears. Had openat gone through, out[] is off by one (wrong_result)
 * and the file exists; any other errno is off by two. The same kernel run
 * without the harness (a plain program, the control) creates the file:
 * the syscall number and arguments are right, so a pass means the filter.
 *
 * Needs a native riscv64 kernel with seccomp: qemu-user refuses
 * PR_SET_SECCOMP, so elsewhere this program says so and fails (it is only
 * run by `make test-board`, inside the VM).
 */
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

#include "platform/platform.h"

static struct platform *P;
static char work[512];

/* openat(AT_FDCWD, "escaped-<tag>", O_WRONLY|O_CREAT, 0644) by number: 56 on
 * riscv64 (asm-generic), through libc's syscall() (needs the screen off). */
#define ESCAPE_SRC(tag)                                                                     \
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"                                   \
    "extern long syscall(long, ...); extern int *__errno_location(void);\n"              \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"          \
    "                 const struct kope_scalars *s) {\n"                                 \
    "  (void)s; long fd = syscall(56, -100, \"escaped-" tag "\", 0101, 0644);\n"         \
    "  float bad = fd >= 0 ? 1.0f : (*__errno_location() == 1 ? 0.0f : 2.0f);\n"         \
    "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i] + bad;\n}\n"

static int group_setup(void **state)
{
    (void)state;
    struct plat_settings s;
    plat_settings_init(&s);
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(work, sizeof work, "%s/k3work", tmp ? tmp : "/tmp");
    s.work_dir = work;
    char err[512];
    if (platform_open("k3", &s, &P, err, sizeof err)) {
        fprintf(stderr, "platform_open: %s\n", err);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    platform_close(P);
    return 0;
}

static void task_add(struct plat_task *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "t-add");
    t->op = PLAT_OP_ADD;
    t->family = plat_op_family(t->op);
    plat_op_default_tol(t->op, &t->rtol, &t->atol);
    t->n = 1000;
}

static void test_native_not_emulated_runner(void **state)
{
    (void)state;
    struct plat_desc d;
    assert_int_equal(platform_describe(P, &d), 0);
    fprintf(stderr, "target: %s; runner '%s'\n", d.note, d.runner);
    /* natively: no runner (qemu-user would refuse seccomp and prove nothing) */
    assert_string_equal(d.runner, "");
}

static void test_screen_rejects_it_first(void **state)
{
    (void)state;
    struct plat_task t;
    struct plat_build b;
    task_add(&t);
    const char *src = ESCAPE_SRC("screened");
    assert_int_equal(platform_compile(P, &t, src, strlen(src), &b), 0);
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_SCREEN_REJECTED);
    platform_build_free(P, &b);
}

static void test_filter_alone_stops_openat(void **state)
{
    (void)state;
    struct plat_task t;
    struct plat_build b;
    struct plat_verify v;
    task_add(&t);
    const char *src = ESCAPE_SRC("filtered");
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN;
    int rc = platform_compile(P, &t, src, strlen(src), &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    if (rc)
        fprintf(stderr, "compile: %s\n", P->err);
    assert_int_equal(rc, 0);
    if (!b.ok)
        fprintf(stderr, "build: %s\n%s\n", b.detail, b.diag);
    assert_true(b.ok);
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    fprintf(stderr, "verify: %s: %s\n", plat_fail_name(v.reason), v.detail);
    /* the harness runs in the build's directory: the file would be there */
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s", b.path);
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    *slash = '\0';
    snprintf(path, sizeof path, "%s/escaped-filtered", dir);
    struct stat st;
    int escaped = stat(path, &st) == 0;
    fprintf(stderr, "%s: %s\n", path, escaped ? "CREATED (the filter let openat through)" : "absent");
    assert_false(escaped);
    assert_true(v.pass); /* openat returned -1 with errno EPERM */

    /* control: the same call from a plain program (no harness, no filter)
     * does create its file, so the pass above is the filter's doing */
    char cmd[2048], ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.c", dir);
    FILE *f = fopen(ctl, "w");
    assert_non_null(f);
    fputs("extern long syscall(long, ...);\n"
          "int main(void) { return syscall(56, -100, \"escaped-control\", 0101, 0644) >= 0 ? 0 : 1; }\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && cc -O1 control.c -o control && ./control && test -e escaped-control",
             dir);
    assert_int_equal(system(cmd), 0);
    platform_build_free(P, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_not_emulated_runner),
        cmocka_unit_test(test_screen_rejects_it_first),
        cmocka_unit_test(test_filter_alone_stops_openat),
    };
    return cmocka_run_group_tests_name("board-seccomp", tests, group_setup, group_teardown);
}

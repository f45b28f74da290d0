/*
 * tests/test_k3_suite.c - the whole k3-core suite through the real target:
 * for every task, the built-in template's default instance for its op is
 * screened, compiled, linked with the harness and verified (task shape plus
 * the awkward cases) in a sandboxed child, under qemu on x86_64 hosts.
 *
 * This is the "suite passes verification" check of issue 3. It is the
 * slowest test (one compile and one emulated run per task), so two worker
 * processes split the tasks (each with its own platform and build dir);
 * KOPE_SUITE_FILTER=SUBSTRING runs only matching tasks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/task/task.h"
#include "platform/k3/k3_templates.h"
#include "platform/platform.h"

#define WORKERS 2

/* Verify every WORKERS-th task starting at `first`; returns the failures
 * (-1 if the platform does not open). No cmocka asserts: also runs in a
 * forked worker. */
static int verify_share(const struct task_suite *s, int first)
{
    struct plat_settings set;
    plat_settings_init(&set);
    static char work[512];
    char err[512];
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(work, sizeof work, "%s/k3suite", tmp ? tmp : "/tmp");
    set.work_dir = work;
    struct platform *p = NULL;
    int rc = platform_open("k3", &set, &p, err, sizeof err);
    if (rc) {
        fprintf(stderr, "platform_open: %s\n", err);
        return -1;
    }
    const char *filter = getenv("KOPE_SUITE_FILTER");
    struct plat_verify *v = malloc(sizeof *v);
    int failed = 0, run = 0;
    for (size_t i = (size_t)first; v && i < s->n_tasks; i += WORKERS) {
        const struct plat_task *t = &s->tasks[i].t;
        if (filter && !strstr(t->name, filter))
            continue;
        const struct k3_template *tp = k3_template_for(t->op);
        int pt[K3_PARAM_MAX];
        size_t len = 0;
        char *src = NULL;
        if (tp) {
            plat_point_default(&tp->sp, pt);
            src = k3_point_source(tp, pt, &len);
        }
        if (!src) {
            fprintf(stderr, "%s: no built-in template instance\n", t->name);
            failed++;
            continue;
        }
        struct plat_build b;
        rc = platform_compile(p, t, src, len, &b);
        free(src);
        if (!rc)
            rc = platform_verify(p, t, &b, v);
        if (rc) {
            fprintf(stderr, "%s: %s\n", t->name, p->err);
            failed++;
            continue;
        }
        char label[128];
        k3_point_label(tp, pt, label, sizeof label);
        fprintf(stderr, "  %-30s %-34s %s %.0f ms%s%s\n", t->name, label,
                v->pass ? "ok  " : "FAIL", v->wall_ms, v->pass ? "" : " ", v->pass ? "" : v->detail);
        if (!v->pass) {
            failed++;
            if (!b.ok)
                fprintf(stderr, "%.600s\n", b.diag);
        }
        run++;
        platform_build_free(p, &b);
    }
    fprintf(stderr, "  worker %d: %d tasks verified, %d failed\n", first, run, failed);
    free(v);
    platform_close(p);
    return failed;
}

static void test_suite_verifies(void **state)
{
    (void)state;
    struct task_suite s;
    char err[512];
    assert_int_equal(task_suite_load(NULL, &s, err, sizeof err), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int f = verify_share(&s, 1);
        fflush(NULL);
        _exit(f < 0 ? 255 : f > 254 ? 254 : f);
    }
    int failed = verify_share(&s, 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    task_suite_free(&s);
    assert_true(WIFEXITED(st));
    assert_int_equal(failed, 0);
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite_verifies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

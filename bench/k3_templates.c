/*
 * bench/k3_templates.c - kope's built-in kernels (the default instance of
 * each op's template) against the same-run baselines, through the real
 * target: compile, verify, measure.
 *
 *   build/x86_64/bench/k3_templates [SUBSTRING]
 *
 * For every op, the first k3-core task of that op (or every task whose name
 * contains SUBSTRING). Prints the candidate's figure and its ratio against
 * each baseline (scalar -O2, auto-vectorized -O3, OpenBLAS for matmul):
 * natively by time, under emulation by instruction count of the kernel call
 * (icount plugin), never by emulated time. Ratios > 1: the built-in kernel
 * is better. Takes a few minutes under qemu on two cores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/task/task.h"
#include "platform/k3/k3_templates.h"
#include "platform/platform.h"

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    struct task_suite s;
    char err[512];
    int rc = 1;
    if (task_suite_load(NULL, &s, err, sizeof err)) {
        fprintf(stderr, "k3_templates: %s\n", err);
        return 1;
    }
    struct platform *p = NULL;
    if (platform_open("k3", NULL, &p, err, sizeof err)) {
        fprintf(stderr, "k3_templates: %s\n", err);
        task_suite_free(&s);
        return 1;
    }
    struct plat_desc d;
    platform_describe(p, &d);
    printf("target k3: %s\n", d.note);
    printf("%-28s %-62s %-6s %14s  %s\n", "task", "built-in instance", "verify",
           d.emulated ? "icount" : "median ns", "ratio vs baselines (>1: built-in better)");
    struct plat_measure *m = malloc(sizeof *m);
    if (!m)
        goto out;
    int seen[PLAT_OP_COUNT] = {0}, failed = 0;
    for (size_t i = 0; i < s.n_tasks; i++) {
        const struct plat_task *t = &s.tasks[i].t;
        if (filter ? !strstr(t->name, filter) : seen[t->op])
            continue;
        seen[t->op] = 1;
        const struct k3_template *tp = k3_template_for(t->op);
        int pt[K3_PARAM_MAX];
        char label[128];
        plat_point_default(&tp->sp, pt);
        k3_point_label(tp, pt, label, sizeof label);
        size_t len = 0;
        char *src = k3_point_source(tp, pt, &len);
        struct plat_build b;
        if (!src || platform_compile(p, t, src, len, &b)) {
            fprintf(stderr, "%s: %s\n", t->name, src ? p->err : "out of memory");
            free(src);
            goto out;
        }
        free(src);
        int mrc = platform_measure(p, t, &b, m);
        printf("%-28s %-62s %-6s ", t->name, label, !mrc && m->ok ? "ok" : "FAIL");
        if (mrc || !m->ok) {
            printf("%s\n", mrc ? p->err : m->detail);
            failed++;
        } else {
            if (d.emulated)
                printf("%14llu ", (unsigned long long)m->icount);
            else
                printf("%14.0f ", m->median_ns);
            for (int k = 0; k < m->n_baselines; k++)
                if (m->base[k].ratio > 0)
                    printf(" %s %.2fx", m->base[k].name, m->base[k].ratio);
            printf("\n");
        }
        fflush(stdout);
        platform_build_free(p, &b);
    }
    rc = failed ? 1 : 0;
out:
    free(m);
    platform_close(p);
    task_suite_free(&s);
    return rc;
}

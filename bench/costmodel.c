/*
 * bench/costmodel.c - the vector-cost model (vcost) against LLVM's
 * scheduling model of a SpacemiT core (llvm-mca-22, platform.k3.model =
 * mca:CPU; docs/COSTMODEL.md), candidate by candidate.
 *
 *   build/x86_64/bench/costmodel [TASKS_PER_FAMILY [POINTS_PER_TASK [CPU]]]
 *
 * Defaults 2, 12, spacemit-x60. For the first TASKS_PER_FAMILY k3-core tasks
 * of distinct ops in every family, POINTS_PER_TASK valid template points
 * spread over the template's space (every k-th, so LMUL and the other
 * parameters vary) are each compiled and measured twice through the real
 * target under qemu, the candidate alone (no baselines): once with
 * model=vcost, once with model=mca:CPU. Printed: per candidate vcost, mca
 * cycles and icount; the Spearman rank correlation of vcost and mca
 * cycles pooled over all candidates (dominated by task size), pooled per
 * family, and within each task (the ranking the tuner makes), averaged;
 * every task whose best point differs between the two models, with what
 * the vcost pick costs under mca; and the cost of the mca model: wall and
 * CPU (children: qemu and the tools) of the mca measures against the vcost
 * ones, llvm tool time, runs and cache hit rate.
 *
 * Emulated only; takes minutes (4 x 2 x 12 x 2 measures by default).
 * Reads the k3 target's mca statistics through its private struct: a
 * bench may, the library's callers may not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/task/task.h"
#include "platform/k3/k3.h"
#include "platform/k3/k3_templates.h"
#include "platform/platform.h"
#include "platform/proc.h"

#define MAX_TASKS 32
#define MAX_PTS 64

struct cand {
    int task;
    char label[128];
    uint64_t vcost, mca, icount;
};

struct task_row {
    const struct plat_task *t;
    int first, n;  /* its candidates in the cand array */
};

static const char *g_model;
static const char *own_str(const void *own, const char *target, const char *key)
{
    (void)own;
    return strcmp(target, "k3") == 0 && strcmp(key, "model") == 0 ? g_model : NULL;
}

static double children_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* Compile and measure one point; 0 when it measured. wall/cpu: the measure's. */
static int measure(struct platform *p, const struct plat_task *t, const struct k3_template *tp, const int *v,
                   struct plat_measure *m, double *wall_ms, double *cpu_s)
{
    size_t len;
    char *src = k3_point_source(tp, v, &len);
    struct plat_build b;
    if (!src)
        return -1;
    int rc = platform_compile(p, t, src, len, &b);
    free(src);
    if (rc || !b.ok)
        return -1;
    double t0 = proc_now_ms(), c0 = children_cpu_s();
    rc = platform_measure(p, t, &b, m);
    *wall_ms += proc_now_ms() - t0;
    *cpu_s += children_cpu_s() - c0;
    platform_build_free(p, &b);
    return rc || !m->ok || !m->has_icount ? -1 : 0;
}

/* Ranks (1-based, ties averaged) of x[0..n). */
static void ranks(const double *x, int n, double *r)
{
    for (int i = 0; i < n; i++) {
        int less = 0, eq = 0;
        for (int j = 0; j < n; j++) {
            less += x[j] < x[i];
            eq += x[j] == x[i];
        }
        r[i] = less + (eq + 1) / 2.0;
    }
}

/* Spearman's rho: Pearson's correlation of the ranks; NAN for n < 3. */
static double spearman(const double *a, const double *b, int n)
{
    if (n < 3)
        return NAN;
    double *ra = malloc(sizeof *ra * (size_t)n), *rb = malloc(sizeof *rb * (size_t)n);
    if (!ra || !rb) {
        free(ra);
        free(rb);
        return NAN;
    }
    ranks(a, n, ra);
    ranks(b, n, rb);
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i] / n;
        mb += rb[i] / n;
    }
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

/* rho of the candidates selected by keep (task index or family filter). */
static double rho_of(const struct cand *c, int n, const struct task_row *tr, int want_task, int want_fam)
{
    double *a = malloc(sizeof *a * (size_t)(n ? n : 1)), *b = malloc(sizeof *b * (size_t)(n ? n : 1));
    int k = 0;
    for (int i = 0; a && b && i < n; i++) {
        if (!c[i].vcost || !c[i].mca)
            continue;
        if (want_task >= 0 && c[i].task != want_task)
            continue;
        if (want_fam >= 0 && (int)tr[c[i].task].t->family != want_fam)
            continue;
        a[k] = (double)c[i].vcost;
        b[k++] = (double)c[i].mca;
    }
    double r = a && b ? spearman(a, b, k) : NAN;
    free(a);
    free(b);
    return r;
}

int main(int argc, char **argv)
{
    int per_fam = argc > 1 ? atoi(argv[1]) : 2, per_task = argc > 2 ? atoi(argv[2]) : 12;
    const char *cpu = argc > 3 ? argv[3] : "spacemit-x60";
    if (per_fam < 1 || per_fam > 8 || per_task < 3 || per_task > MAX_PTS) {
        fprintf(stderr, "costmodel: TASKS_PER_FAMILY 1-8, POINTS_PER_TASK 3-%d\n", MAX_PTS);
        return 2;
    }
    char model[80];
    snprintf(model, sizeof model, "mca:%s", cpu);
    struct task_suite s;
    char err[512];
    if (task_suite_load(NULL, &s, err, sizeof err)) {
        fprintf(stderr, "costmodel: %s\n", err);
        return 1;
    }
    struct plat_settings set;
    plat_settings_init(&set);
    set.flags = PLAT_SET_NO_BASELINES; /* the candidate only: both models rank the same points */
    set.own_str = own_str;
    struct platform *pv = NULL, *pm = NULL;
    g_model = "vcost";
    if (platform_open("k3", &set, &pv, err, sizeof err)) {
        fprintf(stderr, "costmodel: %s\n", err);
        return 1;
    }
    g_model = model;
    if (platform_open("k3", &set, &pm, err, sizeof err)) {
        fprintf(stderr, "costmodel: %s\n", err);
        return 1;
    }
    struct k3 *k = pm->priv;
    struct plat_desc d;
    platform_describe(pm, &d);
    if (!d.emulated || !k->mca_on) {
        fprintf(stderr, "costmodel: needs the emulated target with the icount plugin and llvm-mca-22 "
                        "(%s)\n", k->model);
        return 1;
    }
    struct plat_measure *m = malloc(sizeof *m);
    struct cand *c = calloc(MAX_TASKS * MAX_PTS, sizeof *c);
    struct task_row tr[MAX_TASKS];
    int n_c = 0, n_t = 0, seen[PLAT_OP_COUNT] = {0}, fam_n[PLAT_FAM_COUNT] = {0};
    if (!m || !c)
        return 1;
    double wall_v = 0, wall_m = 0, cpu_v = 0, cpu_m = 0;
    int vcost_differs = 0, mca_missing = 0;
    time_t start = time(NULL);
    printf("costmodel: vcost vs %s (llvm-mca-22 via platform.k3.model), VLEN 256, candidates alone\n", model);
    printf("%-24s %-40s %10s %10s %10s\n", "task", "point", "icount", "vcost", "mca");
    for (size_t i = 0; i < s.n_tasks && n_t < MAX_TASKS; i++) {
        const struct plat_task *t = &s.tasks[i].t;
        if (t->op >= PLAT_OP_COUNT || seen[t->op] || t->family >= PLAT_FAM_COUNT || fam_n[t->family] >= per_fam)
            continue;
        const struct k3_template *tp = k3_template_for(t->op);
        if (!tp)
            continue;
        seen[t->op] = 1;
        fam_n[t->family]++;
        /* the valid points, then every k-th of them */
        static int valid[4096][K3_PARAM_MAX];
        int nv = 0;
        for (size_t idx = 0; idx < plat_space_size(&tp->sp) && nv < 4096; idx++)
            if (plat_space_point(&tp->sp, idx, valid[nv]) == 1)
                nv++;
        int step = nv > per_task ? (nv + per_task - 1) / per_task : 1;
        tr[n_t] = (struct task_row){t, n_c, 0};
        for (int q = 0; q < nv && tr[n_t].n < per_task; q += step) {
            struct cand *x = &c[n_c];
            x->task = n_t;
            k3_point_label(tp, valid[q], x->label, sizeof x->label);
            if (measure(pv, t, tp, valid[q], m, &wall_v, &cpu_v) != 0)
                continue;
            uint64_t vc = m->vcost;
            x->icount = m->icount;
            if (measure(pm, t, tp, valid[q], m, &wall_m, &cpu_m) != 0)
                continue;
            vcost_differs += m->vcost != vc;
            x->vcost = m->vcost;
            x->mca = m->mca_cycles;
            if (!x->mca) {
                mca_missing++;
                const char *w = strstr(m->method, "mca: ");
                printf("%-24s %-40s   (no mca cycles: %.120s)\n", t->name, x->label, w ? w : "?");
            }
            printf("%-24s %-40s %10llu %10llu %10llu\n", t->name, x->label, (unsigned long long)x->icount,
                   (unsigned long long)x->vcost, (unsigned long long)x->mca);
            fflush(stdout);
            n_c++;
            tr[n_t].n++;
        }
        n_t++;
    }

    printf("\nSpearman rank correlation, vcost vs mca cycles (candidates with both):\n");
    printf("  pooled over all %d candidates: %.3f (dominated by task size)\n", n_c, rho_of(c, n_c, tr, -1, -1));
    double sum_all = 0;
    int n_all = 0;
    for (int f = 0; f < PLAT_FAM_COUNT; f++) {
        double sum = 0;
        int nn = 0;
        for (int ti = 0; ti < n_t; ti++) {
            if ((int)tr[ti].t->family != f)
                continue;
            double r = rho_of(c, n_c, tr, ti, -1);
            if (!isnan(r)) {
                sum += r;
                nn++;
            }
        }
        sum_all += sum;
        n_all += nn;
        printf("  %-12s pooled %.3f; within a task, mean of %d: %.3f\n", plat_family_name((enum plat_family)f),
               rho_of(c, n_c, tr, -1, f), nn, nn ? sum / nn : NAN);
    }
    printf("  within a task, mean over all %d tasks: %.3f\n", n_all, n_all ? sum_all / n_all : NAN);
    for (int ti = 0; ti < n_t; ti++)
        printf("    %-24s %2d points: rho %.3f\n", tr[ti].t->name, tr[ti].n, rho_of(c, n_c, tr, ti, -1));

    printf("\ntasks where the two models pick different best points:\n");
    int differ = 0;
    for (int ti = 0; ti < n_t; ti++) {
        int bv = -1, bm = -1;
        for (int i = tr[ti].first; i < tr[ti].first + tr[ti].n; i++) {
            if (!c[i].vcost || !c[i].mca)
                continue;
            if (bv < 0 || c[i].vcost < c[bv].vcost)
                bv = i;
            if (bm < 0 || c[i].mca < c[bm].mca)
                bm = i;
        }
        if (bv < 0 || bv == bm || c[bv].mca == c[bm].mca)
            continue;
        differ++;
        printf("  %-24s vcost picks %-34s (mca %llu, %.2fx mca's best); mca picks %-34s (vcost %llu, %.2fx "
               "vcost's best)\n", tr[ti].t->name, c[bv].label, (unsigned long long)c[bv].mca,
               (double)c[bv].mca / (double)c[bm].mca, c[bm].label, (unsigned long long)c[bm].vcost,
               (double)c[bm].vcost / (double)c[bv].vcost);
    }
    printf("  %d of %d tasks\n", differ, n_t);
    double la[3];
    getloadavg(la, 3);
    printf("\ncost: measures with model=vcost %.1f s wall, %.1f s CPU (qemu and tools); with model=%s %.1f s "
           "wall (%.2fx), %.1f s CPU (%.2fx)\n", wall_v / 1000, cpu_v, model, wall_m / 1000,
           wall_v > 0 ? wall_m / wall_v : 0, cpu_m, cpu_v > 0 ? cpu_m / cpu_v : 0);
    printf("      llvm tools: %llu runs, %.1f s wall; (block, vtype) lookups %llu, cache hits %llu (%.0f%%)\n",
           (unsigned long long)k->mca.tool_runs, k->mca.tool_ms / 1000, (unsigned long long)k->mca.lookups,
           (unsigned long long)k->mca.hits,
           k->mca.lookups ? 100.0 * (double)k->mca.hits / (double)k->mca.lookups : 0);
    printf("      %d candidates without mca cycles; %d whose vcost differed between the two runs (must be 0); "
           "%ld s in all; load average at the end %.1f %.1f %.1f\n", mca_missing, vcost_differs,
           (long)(time(NULL) - start), la[0], la[1], la[2]);
    free(m);
    free(c);
    platform_close(pv);
    platform_close(pm);
    task_suite_free(&s);
    return vcost_differs ? 1 : 0;
}

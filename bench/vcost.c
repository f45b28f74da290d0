/*
 * bench/vcost.c - what the vector-cost model (docs/K3-KERNELS.md) changes,
 * and whether it ranks kernels like a scheduling model of a real RVV core.
 *
 *   build/x86_64/bench/vcost [SUBSTRING]
 *
 * Part 1, LMUL chosen before and after: for the first k3-core task of every
 * op (or every task whose name holds SUBSTRING), every valid template point
 * is measured through the real target (screen, compile, verify, measure
 * under qemu with the icount plugin). Per task: the point the raw
 * instruction count picks (how the tuner ranked before the model) and the
 * one vcost picks, their LMUL, and each one's ratio against the task's best
 * same-run peer by vcost (both re-measured with their baselines). Per
 * family: the LMULs chosen before and after.
 *
 * Part 2, model sanity: for 3 points per family (one op each, LMUL varied,
 * other parameters at their defaults), vcost of the kernel call against
 * llvm-mca-19's estimate for the SiFive X280 (an RVV core with a scheduling
 * model in clang 19) on the kernel's hot loop (the innermost loop holding
 * vector instructions in clang-19 -O3 -mcpu=sifive-x280 assembly), per
 * element (cycles per iteration / LMUL: the other parameters are equal, so
 * an iteration's elements scale with LMUL). Prints the rank agreement
 * (concordant pairs of 3), not a match: the two models share no units.
 *
 * Emulated only (it needs the icount plugin); takes several minutes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/agent/bestpeer.h"
#include "core/task/task.h"
#include "platform/k3/k3_templates.h"
#include "platform/platform.h"

#define MAX_POINTS 64

struct point {
    int v[K3_PARAM_MAX];
    char label[128];
    int ok;
    uint64_t icount, vcost;
};

static int lmul_of(const struct k3_template *t, const int *v)
{
    for (int i = 0; i < K3_PARAM_MAX && t->sp.params[i].name; i++)
        if (strcmp(t->sp.params[i].name, "LMUL") == 0)
            return v[i];
    return 0;
}

/* Compile and measure one point; 0 when it measured. */
static int measure_point(struct platform *p, const struct plat_task *t, const struct k3_template *tp,
                         const int *v, struct plat_measure *m)
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
    rc = platform_measure(p, t, &b, m);
    platform_build_free(p, &b);
    return rc || !m->ok || !m->has_icount ? -1 : 0;
}

/* The ratio against the best same-run peer, by vcost. */
static double vs_best_peer(const struct plat_measure *m, const char **name)
{
    double r[PLAT_MAX_BASELINES];
    for (int i = 0; i < m->n_baselines; i++)
        r[i] = m->base[i].vcost && m->vcost ? (double)m->base[i].vcost / (double)m->vcost : 0;
    int k = bestpeer_pick(r, m->n_baselines);
    *name = k >= 0 ? m->base[k].name : "-";
    return k >= 0 ? r[k] : 0;
}

/* ---------------------------------------------------------- llvm-mca --- */

/* Cycles per iteration of the innermost vector loop of the point's
 * assembly, by llvm-mca-19 -mcpu=sifive-x280; 0 when not found. */
static double mca_cycles(const char *src_root, const char *work, const struct k3_template *tp, const int *v)
{
    char path[1024], cmd[4096];
    size_t len;
    char *src = k3_point_source(tp, v, &len);
    if (!src)
        return 0;
    snprintf(path, sizeof path, "%s/mca.c", work);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(src);
        return 0;
    }
    fwrite(src, 1, len, f);
    fclose(f);
    free(src);
    snprintf(cmd, sizeof cmd,
             "clang-19 --target=riscv64-linux-gnu -march=rv64gcv -mcpu=sifive-x280 -O3 -S -I%s/platform "
             "-o %s/mca.s %s 2>/dev/null", src_root, work, path);
    if (system(cmd) != 0)
        return 0;
    /* read the assembly: labels, instructions */
    static char lines[8192][128];
    int n = 0;
    snprintf(path, sizeof path, "%s/mca.s", work);
    f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[256];
    while (n < 8192 && fgets(buf, sizeof buf, f)) {
        char *s = buf + strspn(buf, " \t");
        s[strcspn(s, "#\n")] = '\0';
        if (!*s || (*s == '.' && !strchr(s, ':')))
            continue; /* directives */
        snprintf(lines[n++], sizeof lines[0], "%s", s);
    }
    fclose(f);
    /* loops: a label and a later branch back to it; keep the innermost one
     * (no loop inside it) holding the most vector instructions */
    int best_a = -1, best_b = -1, best_nv = 0;
    for (int b = 0; b < n; b++) {
        if (lines[b][0] != 'b' && lines[b][0] != 'j')
            continue;
        const char *tgt = strrchr(lines[b], ' ');
        if (!tgt)
            continue;
        tgt++;
        for (int a = 0; a < b; a++) {
            size_t tl = strlen(tgt);
            if (strncmp(lines[a], tgt, tl) != 0 || lines[a][tl] != ':')
                continue;
            int nv = 0, inner = 0;
            for (int k = a + 1; k < b; k++) {
                nv += lines[k][0] == 'v';
                if ((lines[k][0] == 'b' || lines[k][0] == 'j') && strchr(lines[k], ' ')) {
                    const char *t2 = strrchr(lines[k], ' ') + 1;
                    for (int q = a + 1; q < k; q++)
                        if (strncmp(lines[q], t2, strlen(t2)) == 0 && lines[q][strlen(t2)] == ':')
                            inner = 1;
                }
            }
            if (!inner && nv > best_nv) {
                best_a = a;
                best_b = b;
                best_nv = nv;
            }
        }
    }
    if (best_a < 0)
        return 0;
    snprintf(path, sizeof path, "%s/loop.s", work);
    f = fopen(path, "w");
    if (!f)
        return 0;
    for (int k = best_a + 1; k <= best_b; k++)
        if (!strchr(lines[k], ':'))
            fprintf(f, "%s\n", lines[k]);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "llvm-mca-19 -mtriple=riscv64 -mcpu=sifive-x280 -iterations=100 %s/loop.s 2>/dev/null", work);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    double cycles = 0;
    while (fgets(buf, sizeof buf, p))
        if (strncmp(buf, "Total Cycles:", 13) == 0)
            cycles = atof(buf + 13);
    pclose(p);
    return cycles / 100.0;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    const char *root = getenv("KOPE_SRC");
    if (!root || !*root)
        root = ".";
    struct task_suite s;
    char err[512];
    if (task_suite_load(NULL, &s, err, sizeof err)) {
        fprintf(stderr, "vcost: %s\n", err);
        return 1;
    }
    struct plat_settings set;
    plat_settings_init(&set);
    struct platform *p = NULL, *pq = NULL;
    set.flags = PLAT_SET_NO_BASELINES; /* the sweep: the candidate only */
    if (platform_open("k3", NULL, &p, err, sizeof err) || platform_open("k3", &set, &pq, err, sizeof err)) {
        fprintf(stderr, "vcost: %s\n", err);
        return 1;
    }
    struct plat_desc d;
    platform_describe(p, &d);
    if (!d.emulated) {
        fprintf(stderr, "vcost: needs the emulated target (icount plugin); natively times rule\n");
        return 1;
    }
    struct plat_measure *m = malloc(sizeof *m);
    struct point *pts = calloc(MAX_POINTS, sizeof *pts);
    if (!m || !pts)
        return 1;
    printf("part 1: the point each metric picks (every valid template point measured; VLEN 256)\n");
    printf("%-26s %-8s %-44s %5s %10s   %-44s %5s %10s\n", "task", "family", "best by icount (before)",
           "LMUL", "vs peer", "best by vcost (after)", "LMUL", "vs peer");
    static const char *const fam_names[] = {"elementwise", "activation", "reduction", "matmul"};
    int before[4][9] = {{0}}, after[4][9] = {{0}}, changed = 0, n_tasks = 0;
    struct geomean g_before = {0}, g_after = {0};
    int seen[PLAT_OP_COUNT] = {0};
    for (size_t i = 0; i < s.n_tasks; i++) {
        const struct plat_task *t = &s.tasks[i].t;
        if (filter ? !strstr(t->name, filter) : seen[t->op])
            continue;
        seen[t->op] = 1;
        const struct k3_template *tp = k3_template_for(t->op);
        int n = 0, bi = -1, bv = -1;
        for (size_t idx = 0; idx < plat_space_size(&tp->sp) && n < MAX_POINTS; idx++) {
            struct point *pt = &pts[n];
            if (plat_space_point(&tp->sp, idx, pt->v) != 1)
                continue;
            k3_point_label(tp, pt->v, pt->label, sizeof pt->label);
            pt->ok = measure_point(pq, t, tp, pt->v, m) == 0;
            pt->icount = m->icount;
            pt->vcost = m->vcost;
            if (pt->ok && (bi < 0 || pt->icount < pts[bi].icount))
                bi = n;
            if (pt->ok && pt->vcost && (bv < 0 || pt->vcost < pts[bv].vcost))
                bv = n;
            n++;
        }
        if (bi < 0 || bv < 0) {
            printf("%-26s no point measured\n", t->name);
            continue;
        }
        const char *pn_b, *pn_a;
        double rb = measure_point(p, t, tp, pts[bi].v, m) == 0 ? vs_best_peer(m, &pn_b) : 0;
        if (rb == 0)
            pn_b = "-";
        double ra = measure_point(p, t, tp, pts[bv].v, m) == 0 ? vs_best_peer(m, &pn_a) : 0;
        if (ra == 0)
            pn_a = "-";
        int fam = (int)t->family < 4 ? (int)t->family : 0;
        int lb = lmul_of(tp, pts[bi].v), la = lmul_of(tp, pts[bv].v);
        before[fam][lb > 8 ? 0 : lb]++;
        after[fam][la > 8 ? 0 : la]++;
        changed += bi != bv;
        n_tasks++;
        geomean_add(&g_before, rb);
        geomean_add(&g_after, ra);
        char vb[48], va[48];
        snprintf(vb, sizeof vb, "%.2fx %s", rb, pn_b);
        snprintf(va, sizeof va, "%.2fx %s", ra, pn_a);
        printf("%-26s %-8.8s %-44s %5d %-18s %-44s %5d %s\n", t->name, fam_names[fam], pts[bi].label, lb, vb,
               pts[bv].label, la, va);
        fflush(stdout);
    }
    printf("\nLMUL chosen per family (count of tasks at LMUL 1/2/4/8), before (icount) -> after (vcost):\n");
    for (int f = 0; f < 4; f++)
        printf("  %-12s %d/%d/%d/%d -> %d/%d/%d/%d\n", fam_names[f], before[f][1], before[f][2], before[f][4],
               before[f][8], after[f][1], after[f][2], after[f][4], after[f][8]);
    printf("tasks whose best point changed: %d of %d; geomean vs best peer by vcost: icount's pick %.2fx, "
           "vcost's pick %.2fx\n", changed, n_tasks, geomean_value(&g_before), geomean_value(&g_after));

    /* part 2: 3 LMUL points per family against llvm-mca */
    printf("\npart 2: vcost vs llvm-mca-19 -mcpu=sifive-x280 (hot loop), per element, 3 points per family\n");
    static const struct { enum plat_op op; int lmul[3]; } fam_ops[] = {
        {PLAT_OP_ADD, {1, 2, 8}}, {PLAT_OP_EXP, {1, 2, 4}}, {PLAT_OP_SUM, {1, 4, 8}}, {PLAT_OP_GEMV, {1, 4, 8}},
    };
    int agree = 0, pairs = 0;
    char work[256];
    snprintf(work, sizeof work, "%s/kope-vcost-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(work))
        return 1;
    for (size_t k = 0; k < sizeof fam_ops / sizeof fam_ops[0]; k++) {
        const struct plat_task *t = NULL;
        for (size_t i = 0; i < s.n_tasks && !t; i++)
            if (s.tasks[i].t.op == fam_ops[k].op)
                t = &s.tasks[i].t;
        const struct k3_template *tp = k3_template_for(fam_ops[k].op);
        double vc[3] = {0}, mc[3] = {0};
        for (int j = 0; j < 3; j++) {
            int v[K3_PARAM_MAX];
            char label[128];
            plat_point_default(&tp->sp, v);
            for (int q = 0; q < K3_PARAM_MAX && tp->sp.params[q].name; q++)
                if (strcmp(tp->sp.params[q].name, "LMUL") == 0)
                    v[q] = fam_ops[k].lmul[j];
            if (!plat_point_valid(&tp->sp, v))
                continue;
            k3_point_label(tp, v, label, sizeof label);
            vc[j] = measure_point(pq, t, tp, v, m) == 0 ? (double)m->vcost : 0;
            mc[j] = mca_cycles(root, work, tp, v) / fam_ops[k].lmul[j];
            printf("  %-24s %-36s vcost %10.0f   mca %7.2f cycles/iter/LMUL\n", t->name, label, vc[j], mc[j]);
        }
        int fa = 0, fp = 0;
        for (int a = 0; a < 3; a++)
            for (int b = a + 1; b < 3; b++) {
                if (vc[a] <= 0 || vc[b] <= 0 || mc[a] <= 0 || mc[b] <= 0)
                    continue;
                fp++;
                fa += (vc[a] < vc[b]) == (mc[a] < mc[b]);
            }
        printf("  %-12s rank agreement %d/%d pairs\n", fam_names[plat_op_family(fam_ops[k].op)], fa, fp);
        agree += fa;
        pairs += fp;
    }
    printf("rank agreement overall: %d/%d pairs\n", agree, pairs);
    snprintf(err, sizeof err, "rm -rf '%s'", work);
    if (system(err) != 0)
        fprintf(stderr, "vcost: could not remove %s\n", work);
    free(m);
    free(pts);
    platform_close(p);
    platform_close(pq);
    task_suite_free(&s);
    return 0;
}

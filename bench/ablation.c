/*
 * bench/ablation.c - does the experience graph help the offline tuner?
 *
 *   build/x86_64/bench/ablation [TRIALS] [MAX_TASK_KB] [DIR]
 *        (defaults: 6 trials, 2048 KiB of operands per task, ./bench-out)
 *
 * The embedded k3-core suite is split in two halves by alternating tasks
 * (so both halves hold every op the suite has, with different shapes); tasks
 * whose operands exceed MAX_TASK_KB are left out to keep the emulated run
 * short (the list used is printed). Then:
 *
 *   1. training: the tuner runs on the training half (2 x TRIALS per task)
 *      into store A - that is the "memory";
 *   2. memory: the tuner runs on the held-out half in store A (its prior is
 *      what won on similar training tasks);
 *   3. no memory: the tuner runs on the held-out half in an empty store B;
 *   4. run 2: the held-out half again in store A, same trials: a re-run
 *      starts from the graph's best and measures only new points, so its
 *      best ratio is >= run 1's (step 2) on every task, and strictly better
 *      where run 1 did not exhaust the tuning space and a better point exists;
 *   5. sweep: the held-out half once more in store A with a budget larger
 *      than any tuning space (SWEEP_TRIALS): every valid point not measured
 *      yet is measured, so each task's best is its space's best. That says
 *      where a better point than run 1's existed at all: step 4's "strictly
 *      better" is counted on those tasks, and how many of them run 2 solved;
 *
 * with the same number of trials per task in 2 and 3 (matched compute).
 * Printed per condition: pass rate, mean trials to the first passing kernel,
 * mean trials to the best kernel, mean best ratio vs autovec-O3 (emulated:
 * the vector-cost model over instruction counts, exactly repeatable); then the ratios
 * no-memory / memory for the trials to best (target >= 2x) and memory /
 * no-memory for the best ratio (target >= 1).
 *
 * Last, the tuner's LMUL choices per family before and after the vector-cost
 * model, over the points the memory runs (steps 2 and 4) measured on each
 * held-out task: the best by the raw instruction count (how the tuner
 * ranked before vcost: LMUL was free) and the best by the target's rank
 * (vcost now). Same points, so the difference is the ranking alone (the
 * search itself followed vcost).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/agent/agent.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "platform/embed.h"
#include "store/store.h"

#define MAX_HELD 256
#define N_LMUL 4 /* LMUL 1, 2, 4, 8 */
#define SWEEP_TRIALS 64 /* more than any k3 template's valid points (docs/K3-KERNELS.md) */

struct cond {
    const char *name;
    int n, passed;
    double first_pass, best_trial, ratio;
    int best_at[MAX_HELD];      /* per held-out task, suite order */
    int trials_at[MAX_HELD];    /* trials made in this run */
    double ratio_at[MAX_HELD];  /* the task's best ratio reported */
    char name_at[MAX_HELD][PLAT_NAME_MAX];
};

static int write_half(const char *path, const cJSON *tasks, int half, double max_bytes, int *n)
{
    cJSON *suite = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    char err[256];
    const cJSON *t;
    int i = 0;
    *n = 0;
    cJSON_AddStringToObject(suite, "suite", half ? "heldout" : "training");
    cJSON_ArrayForEach(t, tasks)
    {
        /* parse the one task to know its size */
        cJSON *one = cJSON_CreateObject(), *a1 = cJSON_CreateArray();
        cJSON_AddStringToObject(one, "suite", "x");
        cJSON_AddItemToArray(a1, cJSON_Duplicate(t, 1));
        cJSON_AddItemToObject(one, "tasks", a1);
        char *txt = cJSON_PrintUnformatted(one);
        struct task_suite s;
        int ok = task_suite_parse(txt, strlen(txt), &s, err, sizeof err) == 0;
        if (ok && task_bytes(&s.tasks[0].t) <= max_bytes) {
            if (i % 2 == half) {
                cJSON_AddItemToArray(arr, cJSON_Duplicate(t, 1));
                (*n)++;
            }
            i++;
        }
        if (ok)
            task_suite_free(&s);
        free(txt);
        cJSON_Delete(one);
    }
    cJSON_AddItemToObject(suite, "tasks", arr);
    char *txt = cJSON_Print(suite);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(suite);
    return 0;
}

static int open_store(const char *dir, const char *name, struct store **st, struct graph *g)
{
    char path[1024], key[1100], err[512];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    snprintf(key, sizeof key, "%s.key", path);
    unlink(path);
    unlink(key);
    if (store_open(path, st, err, sizeof err)) {
        fprintf(stderr, "ablation: %s\n", err);
        return -1;
    }
    graph_init(g, *st);
    if (graph_identity_create(g, key, "k3")) {
        fprintf(stderr, "ablation: identity: %s\n", g->err);
        return -1;
    }
    return 0;
}

static int run(struct graph *g, const char *suite, int trials, int no_memory, struct cond *c)
{
    struct agent_opts o;
    struct agent_summary s;
    char err[1024];
    agent_opts_init(&o);
    o.suite_path = suite;
    o.budget = trials;
    o.offline = 1;
    o.no_memory = no_memory;
    o.fresh = 1;
    if (agent_run(g, &o, &s, err, sizeof err)) {
        fprintf(stderr, "ablation: %s\n", err);
        return -1;
    }
    if (c) {
        for (size_t i = 0; i < s.n; i++) {
            const struct agent_result *r = &s.res[i];
            if (c->n < MAX_HELD) {
                c->best_at[c->n] = r->best_trial;
                c->trials_at[c->n] = r->trials;
                c->ratio_at[c->n] = r->speedup;
                snprintf(c->name_at[c->n], sizeof c->name_at[c->n], "%s", r->name);
            }
            c->n++;
            c->passed += r->passed;
            c->first_pass += r->first_pass;
            c->best_trial += r->best_trial;
            c->ratio += r->speedup;
            printf("  %-10s %-28s pass %d first %d best@%d %.2fx trials %d %s\n", c->name, r->name, r->passed,
                   r->first_pass, r->best_trial, r->speedup, r->trials, r->best_label);
            fflush(stdout);
        }
    }
    agent_summary_free(&s);
    return 0;
}

/* The LMUL of a template point's label ("exp LMUL=4 UNROLL=2"); 0 = none
 * (a seed, or an op whose template has no LMUL). */
static int label_lmul(const char *label)
{
    const char *p = label ? strstr(label, "LMUL=") : NULL;
    return p ? atoi(p + 5) : 0;
}

static int lmul_slot(int lmul)
{
    return lmul == 1 ? 0 : lmul == 2 ? 1 : lmul == 4 ? 2 : lmul == 8 ? 3 : -1;
}

/* Per family, how many held-out tasks' best point has LMUL 1/2/4/8, when the
 * points measured in g are ranked by icount (lowest kernel count: the
 * baselines are the same within a task) and by the target's rank (vcost). */
static int lmul_table(struct graph *g, const char *suite_path)
{
    struct task_suite s;
    char err[512];
    if (task_suite_load(suite_path, &s, err, sizeof err)) {
        fprintf(stderr, "ablation: %s\n", err);
        return -1;
    }
    int hist[2][PLAT_FAM_COUNT][N_LMUL] = {{{0}}}, changed = 0, n = 0;
    for (size_t i = 0; i < s.n_tasks; i++) {
        uint8_t id[32];
        struct graph_tree t;
        if (graph_task_find(g, s.tasks[i].t.name, id) || graph_tree_load(g, id, &t))
            continue;
        int by_rank = graph_tree_best(&t), by_icount = -1;
        double best_ic = 0;
        for (size_t k = 0; k < t.n; k++) {
            const struct graph_node *nd = &t.nodes[k];
            if (!nd->has_outcome || !graph_outcome_verified(&nd->out, t.task.target))
                continue;
            const cJSON *ic = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(nd->out.json, "body"), "icount");
            if (cJSON_IsNumber(ic) && ic->valuedouble > 0 && (by_icount < 0 || ic->valuedouble < best_ic)) {
                by_icount = (int)k;
                best_ic = ic->valuedouble;
            }
        }
        int fam = (int)s.tasks[i].t.family, l[2] = {0, 0};
        for (int w = 0; w < 2; w++) {
            int k = w ? by_rank : by_icount;
            if (k < 0)
                continue;
            const cJSON *pl = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(t.nodes[k].dec.json, "body"), "params");
            l[w] = label_lmul(cJSON_IsString(pl) ? pl->valuestring : NULL);
            int sl = lmul_slot(l[w]);
            if (sl >= 0 && fam >= 0 && fam < PLAT_FAM_COUNT)
                hist[w][fam][sl]++;
        }
        if (by_rank >= 0 && by_icount >= 0) {
            n++;
            if (l[0] != l[1]) {
                changed++;
                printf("  LMUL changed: %-28s icount picks LMUL %d, vcost picks LMUL %d\n", s.tasks[i].t.name,
                       l[0], l[1]);
            }
        }
        graph_tree_free(&t);
    }
    printf("\nLMUL chosen per family over the memory runs' measured points (tasks at LMUL 1/2/4/8),\n"
           "ranked by icount (before the model) -> by vcost (the tuner now); %d of %d tasks changed:\n",
           changed, n);
    for (int f = 0; f < PLAT_FAM_COUNT; f++)
        printf("  %-12s %d/%d/%d/%d -> %d/%d/%d/%d\n", plat_family_name((enum plat_family)f), hist[0][f][0],
               hist[0][f][1], hist[0][f][2], hist[0][f][3], hist[1][f][0], hist[1][f][1], hist[1][f][2],
               hist[1][f][3]);
    task_suite_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 6;
    double max_kb = argc > 2 ? atof(argv[2]) : 2048;
    const char *dir = argc > 3 ? argv[3] : "bench-out";
    mkdir(dir, 0755);
    const struct embed_file *ef = embed_find(TASK_DEFAULT_SUITE);
    if (!ef || trials < 1) {
        fprintf(stderr, "usage: ablation [TRIALS>=1] [MAX_TASK_KB] [DIR]\n");
        return 2;
    }
    cJSON *suite = cJSON_Parse(ef->data);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(suite, "tasks");
    char train[1024], held[1024];
    int ntrain, nheld;
    snprintf(train, sizeof train, "%s/training.json", dir);
    snprintf(held, sizeof held, "%s/heldout.json", dir);
    if (write_half(train, tasks, 0, max_kb * 1024, &ntrain) || write_half(held, tasks, 1, max_kb * 1024, &nheld))
        return 1;
    printf("ablation: %d training tasks, %d held-out tasks (operands <= %.0f KiB), %d trials each\n", ntrain,
           nheld, max_kb, trials);
    struct store *sa, *sb;
    struct graph ga, gb;
    if (open_store(dir, "memory", &sa, &ga) || open_store(dir, "nomemory", &sb, &gb))
        return 1;
    static struct cond mem = {.name = "memory"}, nomem = {.name = "no-memory"};
    printf("training (%d trials per task)...\n", 2 * trials);
    fflush(stdout);
    if (run(&ga, train, 2 * trials, 0, NULL))
        return 1;
    if (run(&ga, held, trials, 0, &mem) || run(&gb, held, trials, 1, &nomem))
        return 1;
    struct cond *cs[2] = {&mem, &nomem};
    printf("\n%-10s %-10s %-16s %-16s %s\n", "condition", "pass rate", "trials to pass", "trials to best",
           "best ratio (vcost vs autovec-O3, emulated)");
    for (int i = 0; i < 2; i++) {
        struct cond *c = cs[i];
        double n = c->n ? c->n : 1;
        printf("%-10s %3d/%-6d %-16.2f %-16.2f %.2fx\n", c->name, c->passed, c->n, c->first_pass / n,
               c->best_trial / n, c->ratio / n);
    }
    double tb_mem = mem.best_trial / (mem.n ? mem.n : 1), tb_no = nomem.best_trial / (nomem.n ? nomem.n : 1);
    printf("trials to best: no-memory / memory = %.2fx (target >= 2x)\n", tb_mem > 0 ? tb_no / tb_mem : 0);
    /* the tasks where the safe default (trial 1) is not the best in either
     * condition: where memory can make a difference at all */
    int ns = 0;
    double sm = 0, sn = 0;
    for (int i = 0; i < mem.n && i < nomem.n && i < MAX_HELD; i++)
        if (mem.best_at[i] > 1 || nomem.best_at[i] > 1) {
            ns++;
            sm += mem.best_at[i];
            sn += nomem.best_at[i];
        }
    if (ns)
        printf("on the %d task(s) whose best is not the default: trials to best %.2f (memory) vs %.2f "
               "(no memory) = %.2fx\n", ns, sm / ns, sn / ns, sm > 0 ? sn / sm : 0);
    printf("best ratio: memory / no-memory = %.3f (target >= 1)\n", nomem.ratio > 0 ? mem.ratio / nomem.ratio : 0);

    /* 4. the cross-run figure: the held-out half again, same store, same trials */
    static struct cond run2 = {.name = "run 2"};
    printf("\nrun 2 of the held-out half in the same store (%d trials per task)...\n", trials);
    fflush(stdout);
    if (run(&ga, held, trials, 0, &run2))
        return 1;
    int ge = 0, open_n = 0, better = 0, n2 = mem.n < run2.n ? mem.n : run2.n;
    for (int i = 0; i < n2 && i < MAX_HELD; i++) {
        ge += run2.ratio_at[i] >= mem.ratio_at[i];
        if (mem.trials_at[i] >= trials) { /* run 1 spent its budget: space not exhausted */
            open_n++;
            better += run2.ratio_at[i] > mem.ratio_at[i];
        }
    }
    printf("cross-run: mean best ratio run 1 %.2fx, run 2 %.2fx; run 2 >= run 1 on %d/%d tasks; strictly "
           "better on %d of the %d tasks run 1 did not finish exploring\n",
           mem.ratio / (mem.n ? mem.n : 1), run2.ratio / (run2.n ? run2.n : 1), ge, n2, better, open_n);
    if (lmul_table(&ga, held))
        return 1;

    /* 5. where was there anything better to find? measure the rest of every space */
    static struct cond sweep = {.name = "sweep"};
    printf("\nsweep: the held-out half's remaining tuning points in the same store...\n");
    fflush(stdout);
    if (run(&ga, held, SWEEP_TRIALS, 0, &sweep))
        return 1;
    int room = 0, room_better = 0, room_solved = 0, new2 = 0, at_best1 = 0;
    for (int i = 0; i < n2 && i < sweep.n && i < MAX_HELD; i++) {
        new2 += run2.trials_at[i];
        /* 1e-9 relative: ratios of identical counts are equal, not "better" */
        int better_exists = sweep.ratio_at[i] > mem.ratio_at[i] * (1 + 1e-9);
        at_best1 += !better_exists;
        if (better_exists) {
            room++;
            room_better += run2.ratio_at[i] > mem.ratio_at[i] * (1 + 1e-9);
            room_solved += run2.ratio_at[i] >= sweep.ratio_at[i] * (1 - 1e-9);
        }
        printf("  %-28s run1 %.3fx run2 %.3fx space best %.3fx; new points run2 %d, sweep %d\n", mem.name_at[i],
               mem.ratio_at[i], run2.ratio_at[i], sweep.ratio_at[i], run2.trials_at[i], sweep.trials_at[i]);
    }
    printf("sweep: run 1 already had its space's best on %d/%d tasks; a better point existed on %d: run 2 "
           "was strictly better on %d of them and reached the space's best on %d (run 2 measured %d new "
           "points in all)\n",
           at_best1, n2, room, room_better, room_solved, new2);
    graph_free(&ga);
    graph_free(&gb);
    store_close(sa);
    store_close(sb);
    cJSON_Delete(suite);
    return 0;
}

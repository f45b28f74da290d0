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
 *
 * with the same number of trials per task in 2 and 3 (matched compute).
 * Printed per condition: pass rate, mean trials to the first passing kernel,
 * mean trials to the best kernel, mean best icount ratio vs autovec-O3
 * (emulated: instruction counts, exactly repeatable); then the ratios
 * no-memory / memory for the trials to best (target >= 2x) and memory /
 * no-memory for the best ratio (target >= 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/agent.h"
#include "core/graph.h"
#include "core/task.h"
#include "platform/embed.h"
#include "store/store.h"

#define MAX_HELD 256

struct cond {
    const char *name;
    int n, passed;
    double first_pass, best_trial, ratio;
    int best_at[MAX_HELD];      /* per held-out task, suite order */
    int trials_at[MAX_HELD];    /* trials made in this run */
    double ratio_at[MAX_HELD];  /* the task's best ratio reported */
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
            }
            c->n++;
            c->passed += r->passed;
            c->first_pass += r->first_pass;
            c->best_trial += r->best_trial;
            c->ratio += r->speedup;
            printf("  %-10s %-28s pass %d first %d best@%d %.2fx %s\n", c->name, r->name, r->passed,
                   r->first_pass, r->best_trial, r->speedup, r->best_label);
            fflush(stdout);
        }
    }
    agent_summary_free(&s);
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
           "best ratio (icount vs autovec-O3, emulated)");
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
    graph_free(&ga);
    graph_free(&gb);
    store_close(sa);
    store_close(sb);
    cJSON_Delete(suite);
    return 0;
}

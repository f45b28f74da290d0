/*
 * core/agent/tuner.c - the offline tuner (core/agent/tuner.h): a deterministic order
 * over the target's tuning space of an op, seeded by what the graph
 * remembers.
 *
 * Reading the prior: every task record of the same op and target is scored
 * by the log2 distance of its shape to ours; for the nearest ones the task's
 * decision tree is loaded and the point of its best passing decision (the
 * decision body's "params" label, written by core/agent/agent.c) becomes a
 * candidate. Shortcut, marked honestly: the scan walks every task record
 * (STORE_Q_TASKS, a small partial index), fine for thousands of tasks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/agent/tuner.h"
#include "store/store.h"

void tuner_prior_init(struct tuner_prior *p)
{
    memset(p, 0, sizeof *p);
}

void tuner_prior_free(struct tuner_prior *p)
{
    free(p->v);
    free(p->speedup);
    tuner_prior_init(p);
}

/* ------------------------------------------------------------- the prior */

struct similar {
    uint8_t id[32];
    double dist;
};

struct scan {
    struct graph *g;
    const struct plat_task *t;
    const char *target;
    struct similar best[TUNER_SIMILAR_MAX];
    size_t n;
};

static double dim_dist(double a, double b)
{
    if (a < 1)
        a = 1;
    if (b < 1)
        b = 1;
    return fabs(log2(a) - log2(b));
}

static double shape_num(const cJSON *shape, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(shape, k);
    return cJSON_IsNumber(x) ? x->valuedouble : 0;
}

static int scan_task(void *ctx, const struct store_rec *r)
{
    struct scan *s = ctx;
    if (strcmp(r->target, s->target) != 0)
        return 0;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    if (!j)
        return 0;
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(body, "op");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(body, "shape");
    if (cJSON_IsString(op) && strcmp(op->valuestring, plat_op_name(s->t->op)) == 0) {
        const struct plat_task *t = s->t;
        double d = dim_dist(shape_num(shape, "n"), (double)t->n) +
                   dim_dist(shape_num(shape, "rows"), (double)t->rows) +
                   dim_dist(shape_num(shape, "cols"), (double)t->cols) +
                   dim_dist(shape_num(shape, "m"), (double)t->m) +
                   dim_dist(shape_num(shape, "k"), (double)t->k) +
                   dim_dist(shape_num(shape, "batch") ? shape_num(shape, "batch") : 1,
                            t->batch ? (double)t->batch : 1);
        /* keep the TUNER_SIMILAR_MAX nearest, sorted (stable: insertion order on ties) */
        size_t pos = s->n;
        while (pos > 0 && s->best[pos - 1].dist > d)
            pos--;
        if (pos < TUNER_SIMILAR_MAX) {
            size_t last = s->n < TUNER_SIMILAR_MAX ? s->n : TUNER_SIMILAR_MAX - 1;
            memmove(&s->best[pos + 1], &s->best[pos], (last - pos) * sizeof s->best[0]);
            memcpy(s->best[pos].id, r->id, 32);
            s->best[pos].dist = d;
            if (s->n < TUNER_SIMILAR_MAX)
                s->n++;
        }
    }
    cJSON_Delete(j);
    return 0;
}

static int prior_has(const struct tuner_prior *p, const struct plat_space *tp, const int *v)
{
    for (size_t i = 0; i < p->n; i++)
        if (memcmp(p->v[i], v, sizeof(int) * (size_t)tp->n_params) == 0)
            return 1;
    return 0;
}

int tuner_prior_load(struct graph *g, const struct plat_task *t, const char *target,
                     struct tuner_prior *p)
{
    int rc = KOPE_ERR_INTERNAL;
    const struct plat_space *tp = platform_space(target, t->op);
    struct scan *s = calloc(1, sizeof *s);
    if (!s)
        return KOPE_ERR_NOMEM;
    if (!tp) {
        rc = 0;
        goto out;
    }
    s->g = g;
    s->t = t;
    s->target = target;
    rc = store_rec_query(g->st, STORE_Q_TASKS, NULL, 0, scan_task, s);
    if (rc)
        goto out;
    p->v = calloc(TUNER_PRIOR_MAX, sizeof *p->v);
    p->speedup = calloc(TUNER_PRIOR_MAX, sizeof *p->speedup);
    if (!p->v || !p->speedup) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < s->n && p->n < TUNER_PRIOR_MAX; i++) {
        struct graph_tree tree;
        if (graph_tree_load(g, s->best[i].id, &tree))
            continue;
        int b = graph_tree_best(&tree);
        if (b >= 0) {
            const cJSON *body = cJSON_GetObjectItemCaseSensitive(tree.nodes[b].dec.json, "body");
            const cJSON *lab = cJSON_GetObjectItemCaseSensitive(body, "params");
            const cJSON *ob = cJSON_GetObjectItemCaseSensitive(tree.nodes[b].out.json, "body");
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(ob, "speedup");
            int v[PLAT_PARAM_MAX] = {0};
            if (cJSON_IsString(lab) && plat_point_parse(tp, lab->valuestring, v) == 0 && !prior_has(p, tp, v)) {
                memcpy(p->v[p->n], v, sizeof v);
                p->speedup[p->n] = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
                p->n++;
            }
        }
        graph_tree_free(&tree);
    }
    rc = 0;
out:
    free(s);
    return rc;
}

/* ------------------------------------------------------------ the order */

static int tried(const struct plat_space *tp, const struct tuner_trial *h, size_t n, const int *v)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].has_point && memcmp(h[i].v, v, sizeof(int) * (size_t)tp->n_params) == 0)
            return 1;
    return 0;
}

static int fresh(const struct plat_space *tp, const struct tuner_trial *h, size_t n, const int *v)
{
    return plat_point_valid(tp, v) && !tried(tp, h, n, v);
}

int tuner_next(const struct plat_space *tp, const struct tuner_trial *hist, size_t n,
               const struct tuner_prior *prior, int v[PLAT_PARAM_MAX], const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    memset(v, 0, sizeof(int) * PLAT_PARAM_MAX);
    /* 1. the safe default */
    plat_point_default(tp, v);
    if (fresh(tp, hist, n, v)) {
        *why = "default";
        return 0;
    }
    /* 2. remembered winners */
    for (size_t i = 0; prior && i < prior->n; i++) {
        if (fresh(tp, hist, n, prior->v[i])) {
            memcpy(v, prior->v[i], sizeof(int) * PLAT_PARAM_MAX);
            *why = "prior";
            return 0;
        }
    }
    /* 3. neighbours of the best point so far */
    int best = -1;
    for (size_t i = 0; i < n; i++)
        if (hist[i].has_point && hist[i].pass && (best < 0 || hist[i].score > hist[best].score))
            best = (int)i;
    if (best >= 0) {
        /* nearest values first (one step along a parameter's value list,
         * then two, ...): a good point's neighbours are usually good too */
        for (int step = 1; step < PLAT_VALUE_MAX; step++) {
            for (int p = 0; p < tp->n_params; p++) {
                int cur = 0;
                for (int k = 0; k < tp->params[p].n_values; k++)
                    if (tp->params[p].values[k] == hist[best].v[p])
                        cur = k;
                for (int sgn = 1; sgn >= -1; sgn -= 2) {
                    int k = cur + sgn * step;
                    if (k < 0 || k >= tp->params[p].n_values)
                        continue;
                    memcpy(v, hist[best].v, sizeof(int) * PLAT_PARAM_MAX);
                    v[p] = tp->params[p].values[k];
                    if (fresh(tp, hist, n, v)) {
                        *why = "neighbour of best";
                        return 0;
                    }
                }
            }
        }
    }
    /* 4. the rest of the space */
    size_t size = plat_space_size(tp);
    for (size_t i = 0; i < size; i++) {
        if (plat_space_point(tp, i, v) == 1 && !tried(tp, hist, n, v)) {
            *why = "sweep";
            return 0;
        }
    }
    return 1;
}

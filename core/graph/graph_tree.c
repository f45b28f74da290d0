/*
 * core/graph/graph_tree.c - the decision tree of a task: its decisions in order with their outcomes, branches, the best verified node; printed as a log or a dot graph.
 * Split from graph.c, whose shared helpers are in graph_int.h. See graph.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/graph/canon.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/graph/graph_int.h"
#include "core/secret.h"
#include "core/graph/spill.h"
#include "core/util.h"
#include "net/crypto.h"
#include "platform/platform.h"
#include "store/store.h"

/* ------------------------------------------------------------------ tree */

struct tree_ctx {
    struct graph_tree *t;
    size_t cap;
    struct graph_rec *outs;
    size_t n_outs, cap_outs;
    int rc;
};

static const char *body_str(const struct graph_rec *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "body"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double body_num(const struct graph_rec *r, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "body"), key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *first_parent(const struct graph_rec *r)
{
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r->json, "parents"), 0);
    return cJSON_IsString(p) ? p->valuestring : NULL;
}

static int tree_cb(void *ctx, const struct store_rec *sr)
{
    struct tree_ctx *c = ctx;
    struct graph_tree *t = c->t;
    struct graph_rec r;
    int rc = graph_rec_fill(&r, sr);
    if (rc)
        return rc;
    if (strcmp(r.kind, "task") == 0) {
        graph_rec_free(&t->task);
        t->task = r;
    } else if (strcmp(r.kind, "decision") == 0) {
        if (t->n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 16;
            void *p = realloc(t->nodes, ncap * sizeof *t->nodes);
            if (!p) {
                graph_rec_free(&r);
                return KOPE_ERR_NOMEM;
            }
            t->nodes = p;
            c->cap = ncap;
        }
        struct graph_node *nd = &t->nodes[t->n++];
        memset(nd, 0, sizeof *nd);
        nd->dec = r;
        nd->parent = -1;
        const char *par = first_parent(&r);
        for (size_t i = 0; par && i + 1 < t->n; i++)
            if (strcmp(t->nodes[i].dec.id_hex, par) == 0)
                nd->parent = (int)i;
    } else if (strcmp(r.kind, "outcome") == 0) {
        const char *par = first_parent(&r);
        for (size_t i = 0; par && i < t->n; i++)
            if (strcmp(t->nodes[i].dec.id_hex, par) == 0 && !t->nodes[i].has_outcome) {
                t->nodes[i].out = r;
                t->nodes[i].has_outcome = 1;
                return 0;
            }
        graph_rec_free(&r);
    } else {
        graph_rec_free(&r);
    }
    return 0;
}

int graph_tree_load(struct graph *g, const uint8_t task[32], struct graph_tree *t)
{
    struct tree_ctx c;
    memset(t, 0, sizeof *t);
    memset(&c, 0, sizeof c);
    c.t = t;
    g->n_tree_loads++;
    int rc = store_rec_query(g->st, STORE_Q_TASK, task, 0, tree_cb, &c);
    if (!rc && !t->task.json)
        rc = graph_seterr(g, KOPE_ERR_NOTFOUND, "task not found");
    if (rc)
        graph_tree_free(t);
    return rc;
}

int graph_tree_add(struct graph *g, struct graph_tree *t, const uint8_t dec[32], const uint8_t *out)
{
    char hex[GRAPH_ID_HEX];
    struct graph_node nd;
    memset(&nd, 0, sizeof nd);
    nd.parent = -1;
    util_hex(dec, 32, hex);
    int rc = graph_get(g, hex, &nd.dec);
    if (rc)
        return rc;
    if (out) {
        util_hex(out, 32, hex);
        if ((rc = graph_get(g, hex, &nd.out))) {
            graph_rec_free(&nd.dec);
            return rc;
        }
        nd.has_outcome = 1;
    }
    struct graph_node *p = realloc(t->nodes, (t->n + 1) * sizeof *t->nodes);
    if (!p) {
        graph_rec_free(&nd.dec);
        if (nd.has_outcome)
            graph_rec_free(&nd.out);
        return KOPE_ERR_NOMEM;
    }
    t->nodes = p;
    const char *par = first_parent(&nd.dec);
    for (size_t i = 0; par && i < t->n; i++)
        if (strcmp(t->nodes[i].dec.id_hex, par) == 0)
            nd.parent = (int)i;
    t->nodes[t->n++] = nd;
    return 0;
}

void graph_tree_free(struct graph_tree *t)
{
    graph_rec_free(&t->task);
    for (size_t i = 0; i < t->n; i++) {
        graph_rec_free(&t->nodes[i].dec);
        if (t->nodes[i].has_outcome)
            graph_rec_free(&t->nodes[i].out);
    }
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

static int passed(const struct graph_node *n)
{
    const char *s = n->has_outcome ? body_str(&n->out, "status") : NULL;
    return s && strcmp(s, "pass") == 0;
}

static double rank_num(const void *ctx, const char *key, double dflt)
{
    return body_num(ctx, key, dflt);
}

int graph_outcome_verified(const struct graph_rec *out, const char *target)
{
    const char *st = body_str(out, "status");
    const cJSON *reduced = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out->json, "body"),
                                                            "reduced_shape");
    return st && strcmp(st, "pass") == 0 && strcmp(out->kind, "outcome") == 0 &&
           (!target || strcmp(out->target, target) == 0) && !cJSON_IsTrue(reduced);
}

double graph_outcome_rank(const struct graph_rec *out)
{
    struct plat_outcome o = {out, rank_num};
    double v = platform_rank(out->target, &o);
    return isfinite(v) ? v : 0; /* a record's number is outside input: never NaN-ranked */
}

int graph_tree_best(const struct graph_tree *t)
{
    int best = -1;
    double bs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        if (!n->has_outcome || !graph_outcome_verified(&n->out, t->task.target))
            continue;
        double s = graph_outcome_rank(&n->out);
        if (best < 0 || s > bs) {
            best = (int)i;
            bs = s;
        }
    }
    return best;
}

int graph_tree_best_reduced(const struct graph_tree *t)
{
    int best = -1;
    double bs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        const char *st = n->has_outcome ? body_str(&n->out, "status") : NULL;
        if (!st || strcmp(st, "pass") != 0 || strcmp(n->out.kind, "outcome") != 0 ||
            strcmp(n->out.target, t->task.target) != 0 ||
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n->out.json, "body"),
                                                           "reduced_shape")))
            continue;
        double s = graph_outcome_rank(&n->out);
        if (best < 0 || s > bs) {
            best = (int)i;
            bs = s;
        }
    }
    return best;
}

int graph_task_best(struct graph *g, const uint8_t task[32], struct graph_best *b)
{
    struct graph_tree t;
    memset(b, 0, sizeof *b);
    int rc = graph_tree_load(g, task, &t);
    if (rc)
        return rc;
    int i = graph_tree_best(&t);
    if (i >= 0) {
        /* move the two records out of the tree before it is freed */
        b->found = 1;
        b->dec = t.nodes[i].dec;
        b->out = t.nodes[i].out;
        b->rank = graph_outcome_rank(&b->out);
        memset(&t.nodes[i].dec, 0, sizeof t.nodes[i].dec);
        t.nodes[i].has_outcome = 0;
    }
    graph_tree_free(&t);
    return 0;
}

void graph_best_free(struct graph_best *b)
{
    if (b->found) {
        graph_rec_free(&b->dec);
        graph_rec_free(&b->out);
    }
    memset(b, 0, sizeof *b);
}

static void outcome_text(const struct graph_node *n, char *buf, size_t cap)
{
    if (!n->has_outcome) {
        snprintf(buf, cap, "(no outcome yet)");
        return;
    }
    const char *st = body_str(&n->out, "status");
    const char *base = body_str(&n->out, "baseline");
    double sp = body_num(&n->out, "speedup", -1);
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(n->out.json, "body");
    const cJSON *em = cJSON_GetObjectItemCaseSensitive(body, "emulated");
    const char *cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "reduced_shape"))
                          ? ", verified at reduced shape only" : "";
    if (sp >= 0)
        snprintf(buf, cap, "%s %.2fx vs %s%s%s", st ? st : "?", sp, base ? base : "baseline",
                 cJSON_IsTrue(em) ? " (emulated: vcost ratio)" : "", cut);
    else
        snprintf(buf, cap, "%s%s%s", st ? st : "?", body_str(&n->out, "reason") ? ": " : "",
                 body_str(&n->out, "reason") ? body_str(&n->out, "reason") : "");
}

static void tags_text(const struct graph_rec *d, char *buf, size_t cap)
{
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->json, "body"), "tags");
    size_t off = 0;
    buf[0] = '\0';
    const cJSON *tg;
    cJSON_ArrayForEach(tg, tags)
    {
        if (cJSON_IsString(tg) && off < cap)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? "," : "", tg->valuestring);
    }
}

static void print_node(const struct graph_tree *t, int i, int depth, int best, FILE *f)
{
    char out[160], tags[160];
    const struct graph_node *n = &t->nodes[i];
    outcome_text(n, out, sizeof out);
    tags_text(&n->dec, tags, sizeof tags);
    fprintf(f, "%*s%s %.12s [%s] -> %s\n", 2 + 2 * depth, "", i == best ? "*" : "-",
            n->dec.id_hex, tags, out);
    for (size_t k = 0; k < t->n; k++)
        if (t->nodes[k].parent == i)
            print_node(t, (int)k, depth + 1, best, f);
}

void graph_tree_print(const struct graph_tree *t, FILE *f)
{
    const char *name = body_str(&t->task, "name"), *op = body_str(&t->task, "op");
    int best = graph_tree_best(t);
    fprintf(f, "task %s (%.12s) op=%s target=%s: %zu decision(s)\n", name ? name : "?",
            t->task.id_hex, op ? op : "?", t->task.target, t->n);
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].parent < 0)
            print_node(t, (int)i, 0, best, f);
    if (best >= 0) {
        /* the best path: from the root down to the best decision */
        int path[256], n = 0;
        for (int k = best; k >= 0 && n < 256; k = t->nodes[k].parent)
            path[n++] = k;
        fprintf(f, "best path:");
        while (n--)
            fprintf(f, " %.12s%s", t->nodes[path[n]].dec.id_hex, n ? " ->" : "");
        fprintf(f, "\n");
    } else if (graph_tree_best_reduced(t) >= 0) {
        fprintf(f, "best path: none verified at the task's shape; passed at a reduced shape only "
                   "(emulated): full shape on a board or with --full-shape\n");
    } else {
        fprintf(f, "best path: none passed yet\n");
    }
}

void graph_tree_dot(const struct graph_tree *t, FILE *f)
{
    const char *name = body_str(&t->task, "name");
    int best = graph_tree_best(t);
    fprintf(f, "digraph kope {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\"];\n");
    fprintf(f, "  \"%.12s\" [label=\"task %s\", fillcolor=\"#dddddd\"];\n", t->task.id_hex,
            name ? name : "?");
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        char out[160], tags[160];
        outcome_text(n, out, sizeof out);
        tags_text(&n->dec, tags, sizeof tags);
        for (char *p = out; *p; p++)
            if (*p == '"' || *p == '\\')
                *p = '\'';
        for (char *p = tags; *p; p++)
            if (*p == '"' || *p == '\\')
                *p = '\'';
        const char *colour = !n->has_outcome ? "#eeeeee" : passed(n) ? "#a6dba0" : "#f4a582";
        fprintf(f, "  \"%.12s\" [label=\"%.12s\\n[%s]\\n%s\", fillcolor=\"%s\"%s];\n", n->dec.id_hex,
                n->dec.id_hex, tags, out, colour, (int)i == best ? ", penwidth=3" : "");
        fprintf(f, "  \"%.12s\" -> \"%.12s\";\n",
                n->parent < 0 ? t->task.id_hex : t->nodes[n->parent].dec.id_hex, n->dec.id_hex);
    }
    fprintf(f, "}\n");
}

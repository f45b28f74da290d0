/*
 * core/cli_report.c - `kope report --html FILE`: one self-contained HTML
 * page of what the graph knows: the best ratio per task, the pass rate per
 * family, LLM tokens per task, and each task's decision tree.
 *
 * Self-contained means: inline CSS and inline SVG only, no script, no font,
 * no image fetched from anywhere (the page is read on air-gapped boards).
 * Every text that comes from the graph is HTML-escaped. Tasks with no
 * decision yet are left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/cli.h"
#include "core/err.h"
#include "core/graph.h"
#include "store/store.h"

#define REPORT_MAX_TASKS 4096
#define TREE_MAX_NODES 400 /* nodes drawn per task tree */

struct row {
    struct graph_tree tree;
    char name[96], op[24], family[24];
    int best, passed;
    double speedup;
    char baseline[64];
    int emulated;
    long tokens;
};

struct collect {
    struct graph *g;
    uint8_t (*ids)[32];
    size_t n, cap;
};

static int collect_cb(void *ctx, const struct store_rec *r)
{
    struct collect *c = ctx;
    if (c->n >= REPORT_MAX_TASKS)
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        void *p = realloc(c->ids, cap * sizeof *c->ids);
        if (!p)
            return KOPE_ERR_NOMEM;
        c->ids = p;
        c->cap = cap;
    }
    memcpy(c->ids[c->n++], r->id, 32);
    return 0;
}

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const cJSON *body(const struct graph_rec *r, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "body"), k);
}

static const char *bstr(const struct graph_rec *r, const char *k, const char *def)
{
    const cJSON *v = body(r, k);
    return cJSON_IsString(v) ? v->valuestring : def;
}

static double bnum(const struct graph_rec *r, const char *k, double def)
{
    const cJSON *v = body(r, k);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* A horizontal bar chart: one bar per label. */
static void bars(FILE *f, const char *title, char (*labels)[96], const double *vals, size_t n,
                 const char *unit, const char *color)
{
    double max = 0;
    for (size_t i = 0; i < n; i++)
        if (vals[i] > max)
            max = vals[i];
    if (max <= 0)
        max = 1;
    int h = (int)n * 16 + 24;
    fprintf(f, "<h2>");
    esc(f, title);
    fprintf(f, "</h2>\n<svg xmlns='http://www.w3.org/2000/svg' width='900' height='%d' font-size='11' "
               "font-family='monospace'>\n", h);
    for (size_t i = 0; i < n; i++) {
        double w = 520 * vals[i] / max;
        int y = (int)i * 16 + 4;
        fprintf(f, "<text x='0' y='%d'>", y + 11);
        esc(f, labels[i]);
        fprintf(f, "</text><rect x='260' y='%d' width='%.1f' height='12' fill='%s'/>"
                   "<text x='%.1f' y='%d'>%.3g%s</text>\n",
                y, w, color, 266 + w, y + 11, vals[i], unit);
    }
    fprintf(f, "</svg>\n");
}

/* Depth of each node; layout: x by depth, y by insertion order. */
static void tree_svg(FILE *f, const struct row *r)
{
    const struct graph_tree *t = &r->tree;
    size_t n = t->n < TREE_MAX_NODES ? t->n : TREE_MAX_NODES;
    int *depth = calloc(n + 1, sizeof *depth);
    if (!depth)
        return;
    int maxd = 0;
    for (size_t i = 0; i < n; i++) {
        int p = t->nodes[i].parent;
        depth[i] = p >= 0 && (size_t)p < i ? depth[p] + 1 : 0;
        if (depth[i] > maxd)
            maxd = depth[i];
    }
    int w = 40 + (maxd + 1) * 60 + 420, h = (int)n * 18 + 10;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11' "
               "font-family='monospace'>\n", w, h);
    for (size_t i = 0; i < n; i++) {
        int p = t->nodes[i].parent;
        if (p >= 0 && (size_t)p < i)
            fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#999'/>\n", 20 + depth[p] * 60,
                    (int)p * 18 + 12, 20 + depth[i] * 60, (int)i * 18 + 12);
    }
    for (size_t i = 0; i < n; i++) {
        const struct graph_node *nd = &t->nodes[i];
        const char *st = nd->has_outcome ? bstr(&nd->out, "status", "?") : "pending";
        int pass = strcmp(st, "pass") == 0;
        const char *col = (int)i == r->best ? "#1a7f37" : pass ? "#6cc070" : "#d1242f";
        int x = 20 + depth[i] * 60, y = (int)i * 18 + 12;
        fprintf(f, "<circle cx='%d' cy='%d' r='6' fill='%s'><title>", x, y, col);
        esc(f, nd->dec.id_hex);
        fprintf(f, "</title></circle><text x='%d' y='%d'>", x + 10, y + 4);
        esc(f, bstr(&nd->dec, "params", bstr(&nd->dec, "proposer", "decision")));
        fprintf(f, " : ");
        esc(f, st);
        double sp = nd->has_outcome ? bnum(&nd->out, "speedup", 0) : 0;
        if (pass && sp > 0)
            fprintf(f, " %.2fx", sp);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
    free(depth);
}

int cli_report(struct cli *c, int argc, char **argv)
{
    const char *path = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope report --html FILE\n"
               "Writes one self-contained HTML page (inline SVG, no scripts, nothing fetched):\n"
               "best ratio per task, pass rate per family, LLM tokens per task, and each\n"
               "task's decision tree (green: passed, dark green: best, red: failed).\n");
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--html") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strncmp(argv[i], "--html=", 7) == 0)
            path = argv[i] + 7;
        else {
            fprintf(stderr, "kope report: unexpected argument '%s' (see kope report --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: kope report --html FILE\n");
        return CLI_USAGE;
    }
    int ret = CLI_FAIL;
    struct graph g;
    struct collect col = {0};
    struct row *rows = NULL;
    size_t nr = 0;
    FILE *f = NULL;
    if (cli_graph_open(c, &g, 0))
        return CLI_FAIL;
    col.g = &g;
    int rc = store_rec_query(g.st, STORE_Q_TASKS, NULL, 0, collect_cb, &col);
    if (rc) {
        fprintf(stderr, "kope report: %s\n", kope_strerror(rc));
        goto out;
    }
    rows = calloc(col.n + 1, sizeof *rows);
    if (!rows)
        goto out;
    for (size_t i = 0; i < col.n; i++) {
        struct row *r = &rows[nr];
        if (graph_tree_load(&g, col.ids[i], &r->tree))
            continue;
        if (!r->tree.n) {
            graph_tree_free(&r->tree);
            continue;
        }
        snprintf(r->name, sizeof r->name, "%s", bstr(&r->tree.task, "name", r->tree.task.id_hex));
        snprintf(r->op, sizeof r->op, "%s", bstr(&r->tree.task, "op", "?"));
        snprintf(r->family, sizeof r->family, "%s", bstr(&r->tree.task, "family", r->op));
        r->best = graph_tree_best(&r->tree);
        r->passed = r->best >= 0;
        if (r->passed) {
            const struct graph_rec *o = &r->tree.nodes[r->best].out;
            r->speedup = bnum(o, "speedup", 0);
            snprintf(r->baseline, sizeof r->baseline, "%s", bstr(o, "baseline", ""));
            r->emulated = cJSON_IsTrue(body(o, "emulated"));
        }
        for (size_t k = 0; k < r->tree.n; k++) {
            const cJSON *tk = body(&r->tree.nodes[k].dec, "tokens");
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(tk, "in");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(tk, "out");
            r->tokens += (long)((cJSON_IsNumber(a) ? a->valuedouble : 0) + (cJSON_IsNumber(b) ? b->valuedouble : 0));
        }
        nr++;
    }
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kope report: cannot write %s\n", path);
        goto out;
    }
    char (*labels)[96] = calloc(nr + 8, sizeof *labels);
    double *vals = calloc(nr + 8, sizeof *vals);
    if (!labels || !vals) {
        free(labels);
        free(vals);
        goto out;
    }
    int npass = 0;
    for (size_t i = 0; i < nr; i++)
        npass += rows[i].passed;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>kope report</title>\n"
               "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
               "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
               "h2{margin-top:1.5em}</style></head><body>\n"
               "<h1>kope report</h1>\n<p>%zu task(s) with decisions, %d passed. Ratios are best "
               "kernel vs the named same-run baseline; under emulation (qemu) they are instruction-count "
               "ratios, not speed.</p>\n", nr, npass);
    for (size_t i = 0; i < nr; i++) {
        snprintf(labels[i], 96, "%.60s", rows[i].name);
        vals[i] = rows[i].speedup;
    }
    bars(f, "Best ratio per task (vs autovec-O3 when claimed; * emulated = icount)", labels, vals, nr, "x", "#2f6fde");
    /* pass rate per family */
    const char *fams[16];
    size_t nf = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t k = 0;
        while (k < nf && strcmp(fams[k], rows[i].family))
            k++;
        if (k == nf && nf < 16)
            fams[nf++] = rows[i].family;
    }
    for (size_t k = 0; k < nf; k++) {
        int n = 0, p = 0;
        for (size_t i = 0; i < nr; i++)
            if (!strcmp(rows[i].family, fams[k])) {
                n++;
                p += rows[i].passed;
            }
        snprintf(labels[k], 96, "%s (%d/%d)", fams[k], p, n);
        vals[k] = n ? 100.0 * p / n : 0;
    }
    bars(f, "Pass rate per family", labels, vals, nf, "%", "#1a7f37");
    for (size_t i = 0; i < nr; i++) {
        snprintf(labels[i], 96, "%.60s", rows[i].name);
        vals[i] = (double)rows[i].tokens;
    }
    bars(f, "LLM tokens per task", labels, vals, nr, "", "#8250df");
    free(labels);
    free(vals);
    fprintf(f, "<h2>Tasks</h2>\n<table><tr><th>task</th><th>op</th><th>passed</th><th>decisions</th>"
               "<th>best ratio</th><th>baseline</th><th>tokens</th></tr>\n");
    for (size_t i = 0; i < nr; i++) {
        fprintf(f, "<tr><td>");
        esc(f, rows[i].name);
        fprintf(f, "</td><td>");
        esc(f, rows[i].op);
        fprintf(f, "</td><td>%s</td><td>%zu</td><td>%.2fx%s</td><td>", rows[i].passed ? "yes" : "no",
                rows[i].tree.n, rows[i].speedup, rows[i].emulated ? " *" : "");
        esc(f, rows[i].baseline);
        fprintf(f, "</td><td>%ld</td></tr>\n", rows[i].tokens);
    }
    fprintf(f, "</table>\n<h2>Decision trees</h2>\n");
    for (size_t i = 0; i < nr; i++) {
        fprintf(f, "<h3>");
        esc(f, rows[i].name);
        fprintf(f, "</h3>\n");
        tree_svg(f, &rows[i]);
    }
    fprintf(f, "</body></html>\n");
    if (fclose(f) != 0) {
        f = NULL;
        fprintf(stderr, "kope report: writing %s failed\n", path);
        goto out;
    }
    f = NULL;
    printf("wrote %s: %zu task(s), %d passed\n", path, nr, npass);
    ret = CLI_OK;
out:
    if (f)
        fclose(f);
    for (size_t i = 0; i < nr; i++)
        graph_tree_free(&rows[i].tree);
    free(rows);
    free(col.ids);
    graph_free(&g);
    return ret;
}

/*
 * core/cli/cli_report.c - `kope report --html FILE`: one self-contained HTML
 * page of what the graph knows: per family the geometric mean of the best
 * kernels against their best same-run peer (core/agent/bestpeer.h), per task the
 * best kernel against its best peer and against the claimed baseline on a
 * log scale, the pass rate per family, a roofline chart when native
 * measurements exist, LLM tokens only when an LLM was used, and per task
 * the best kernel's source (collapsed; a user's seed and a user's op are
 * marked) and its decision tree.
 *
 * Every emulated figure carries "*" in its label. Widths are computed from
 * the longest label (monospace, CHAR_W per character), so no label is
 * clipped at the SVG's edge; trees are laid out depth-first with elbow
 * edges, so an edge never crosses another node's label (tree_layout).
 *
 * Self-contained means: inline CSS and inline SVG only, no script, no font,
 * no image fetched from anywhere (the page is read on air-gapped boards).
 * Every text that comes from the graph is HTML-escaped. Tasks with no
 * decision yet are left out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/agent/bestpeer.h"
#include "core/cli/cli.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "platform/platform.h"
#include "store/store.h"

#define REPORT_MAX_TASKS 4096
#define TREE_MAX_NODES 400       /* nodes drawn per task tree */
#define REPORT_SOURCE_MAX 65536  /* bytes of a best kernel's source shown */
#define REPORT_MAX_RATIOS 8
#define REPORT_MAX_FAMILIES 16
/* SVG text is monospace 11px: 0.6 em per character, rounded up, so a
 * width computed from a label's length never clips it. */
#define CHAR_W 7

struct row {
    struct graph_tree tree;
    char name[96], op[24], family[24];
    int best, passed;
    int reduced;                  /* not passed, but passed at a reduced shape (emulated) */
    double speedup;
    char baseline[64];
    int emulated;
    char metric[8];               /* "vcost", "icount", "time" or "" */
    int n_ratios;
    struct { char name[64]; double v; } ratios[REPORT_MAX_RATIOS];
    int peer;                     /* index of the best peer in ratios, -1 = none */
    double median_ns, flops, bytes;
    int user_seed, user_op;
    long tokens;
    int llm;                      /* some decision of this task came from the LLM */
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

/* Stored text into HTML and SVG: markup characters as entities, and every
 * byte that is no XML character or could drive a terminal reading the file
 * (C0 controls but tab and newline, DEL) as U+FFFD, so a name holding an
 * escape cannot make the SVG invalid or reach a `cat`. */
static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char u = (unsigned char)*s;
        if ((u < 0x20 && u != '\t' && u != '\n') || u == 0x7f) {
            fputs("\xef\xbf\xbd", f);
            continue;
        }
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

/* ------------------------------------------------------------ charts --- */

/* Horizontal bars on a linear scale from 0 (pass rates, tokens, roofline
 * shares). The label column is as wide as the longest label. */
static void bars(FILE *f, const char *title, char (*labels)[128], const double *vals, size_t n,
                 const char *unit, const char *color)
{
    double max = 0;
    size_t lw = 0;
    for (size_t i = 0; i < n; i++) {
        if (vals[i] > max)
            max = vals[i];
        if (strlen(labels[i]) > lw)
            lw = strlen(labels[i]);
    }
    if (max <= 0)
        max = 1;
    int x0 = (int)lw * CHAR_W + 10, bw = 480;
    int w = x0 + bw + 16 * CHAR_W, h = (int)n * 16 + 8;
    fprintf(f, "<h2>");
    esc(f, title);
    fprintf(f, "</h2>\n<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11' "
               "font-family='monospace'>\n", w, h);
    for (size_t i = 0; i < n; i++) {
        double bl = bw * vals[i] / max;
        int y = (int)i * 16 + 4;
        fprintf(f, "<text x='0' y='%d'>", y + 11);
        esc(f, labels[i]);
        fprintf(f, "</text><rect x='%d' y='%d' width='%.1f' height='12' fill='%s'/>"
                   "<text x='%.1f' y='%d'>%.*f%s</text>\n",
                x0, y, bl, color, x0 + bl + 6, y + 11, vals[i] >= 100 || vals[i] == floor(vals[i]) ? 0 : 2,
                vals[i], unit);
    }
    fprintf(f, "</svg>\n");
}

/* Ratios on a log scale around 1x: a bar goes right of the 1x line when the
 * kernel beats the peer, left when it loses, so 0.5x and 2x are the same
 * length. labels[] carry their own marks ("*" emulated); notes[] (may be
 * NULL) follow the value ("vs autovec-O3"). */
static void logbars(FILE *f, const char *title, char (*labels)[128], const double *vals,
                    char (*notes)[64], size_t n)
{
    double lo = 0.5, hi = 2;
    size_t lw = 0, nw = 0;
    for (size_t i = 0; i < n; i++) {
        if (vals[i] > 0 && vals[i] < lo) lo = vals[i];
        if (vals[i] > hi) hi = vals[i];
        if (strlen(labels[i]) > lw) lw = strlen(labels[i]);
        if (notes && strlen(notes[i]) > nw) nw = strlen(notes[i]);
    }
    lo /= 1.25;
    hi *= 1.25;
    int x0 = (int)lw * CHAR_W + 10, bw = 480;
    int w = x0 + bw + (int)(nw + 12) * CHAR_W, h = (int)n * 16 + 26;
    double l0 = log10(lo), span = log10(hi) - l0;
#define LX(v) (x0 + bw * (log10(v) - l0) / span)
    fprintf(f, "<h2>");
    esc(f, title);
    fprintf(f, "</h2>\n<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11' "
               "font-family='monospace'>\n", w, h);
    static const double ticks[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
    for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++) {
        if (ticks[k] < lo || ticks[k] > hi)
            continue;
        double x = LX(ticks[k]);
        fprintf(f, "<line x1='%.1f' y1='0' x2='%.1f' y2='%d' stroke='%s'/>"
                   "<text x='%.1f' y='%d' text-anchor='middle'>%gx</text>\n",
                x, x, (int)n * 16 + 4, ticks[k] == 1 ? "#333" : "#ddd", x, (int)n * 16 + 18, ticks[k]);
    }
    for (size_t i = 0; i < n; i++) {
        int y = (int)i * 16 + 4;
        fprintf(f, "<text x='0' y='%d'>", y + 11);
        esc(f, labels[i]);
        fprintf(f, "</text>");
        if (vals[i] > 0) {
            double a = LX(1.0), b = LX(vals[i]);
            fprintf(f, "<rect x='%.1f' y='%d' width='%.1f' height='12' fill='%s'/>", a < b ? a : b, y,
                    fabs(b - a) > 1 ? fabs(b - a) : 1, vals[i] >= 1 ? "#2f6fde" : "#d1242f");
            fprintf(f, "<text x='%.1f' y='%d'>%.2fx ", (a > b ? a : b) + 6, y + 11, vals[i]);
            if (notes)
                esc(f, notes[i]);
            fprintf(f, "</text>");
        }
        fprintf(f, "\n");
    }
#undef LX
    fprintf(f, "</svg>\n");
}

/* ------------------------------------------------------ decision trees --- */

struct tree_layout {
    int *row;    /* display row of node i */
    int *depth;  /* depth of node i */
    int maxd;
};

/* Rows in depth-first pre-order: every row between a parent and its child
 * is a descendant of the parent, so an elbow edge (down the parent's column,
 * then across on the child's row) never passes through another node's label
 * (labels start right of their own node, at least one column to the right
 * of the parent's). Node i's parent is t->nodes[i].parent when < i. */
static int tree_layout(const struct graph_tree *t, size_t n, struct tree_layout *L)
{
    int rc = -1;
    int *next = malloc((n + 1) * sizeof *next), *first = malloc((n + 1) * sizeof *first);
    int *stack = malloc((n + 1) * sizeof *stack);
    L->row = calloc(n + 1, sizeof *L->row);
    L->depth = calloc(n + 1, sizeof *L->depth);
    L->maxd = 0;
    if (!next || !first || !stack || !L->row || !L->depth)
        goto out;
    /* children lists, latest first (walk up, prepend): pushed onto the
     * stack in list order, the earliest child is popped, so drawn, first */
    for (size_t i = 0; i <= n; i++)
        first[i] = -1; /* first[n] = the roots */
    for (size_t j = 0; j < n; j++) {
        int p = t->nodes[j].parent;
        int slot = p >= 0 && (size_t)p < j ? p : (int)n;
        next[j] = first[slot];
        first[slot] = (int)j;
    }
    int sp = 0, r = 0; /* each node is pushed once: sp <= n */
    for (int c = first[n]; c >= 0; c = next[c]) {
        L->depth[c] = 0;
        stack[sp++] = c;
    }
    while (sp > 0) {
        int i = stack[--sp];
        L->row[i] = r++;
        if (L->depth[i] > L->maxd)
            L->maxd = L->depth[i];
        for (int c = first[i]; c >= 0; c = next[c]) {
            L->depth[c] = L->depth[i] + 1;
            stack[sp++] = c;
        }
    }
    rc = 0;
out:
    free(next);
    free(first);
    free(stack);
    return rc;
}

static void tree_layout_free(struct tree_layout *L)
{
    free(L->row);
    free(L->depth);
}

/* One node's label: "params : status 1.42x*" (* = emulated), "[user]" for a
 * user's seed. */
static void node_label(const struct graph_node *nd, char *buf, size_t cap)
{
    const char *st = nd->has_outcome ? bstr(&nd->out, "status", "?") : "pending";
    const char *who = bstr(&nd->dec, "proposer", "");
    int n = snprintf(buf, cap, "%s%s : %s", strcmp(who, "user") == 0 ? "[user] " : "",
                     bstr(&nd->dec, "params", who[0] ? who : "decision"), st);
    double sp = nd->has_outcome ? bnum(&nd->out, "speedup", 0) : 0;
    if (n > 0 && (size_t)n < cap && strcmp(st, "pass") == 0 && sp > 0)
        snprintf(buf + n, cap - (size_t)n, " %.2fx%s", sp,
                 cJSON_IsTrue(body(&nd->out, "emulated")) ? "*" : "");
}

#define TREE_DX 60
#define TREE_DY 18
static void tree_svg(FILE *f, const struct row *r)
{
    const struct graph_tree *t = &r->tree;
    size_t n = t->n < TREE_MAX_NODES ? t->n : TREE_MAX_NODES;
    struct tree_layout L;
    if (tree_layout(t, n, &L)) {
        tree_layout_free(&L);
        return;
    }
    char lab[256];
    int w = 0;
    for (size_t i = 0; i < n; i++) {
        node_label(&t->nodes[i], lab, sizeof lab);
        int right = 20 + L.depth[i] * TREE_DX + 10 + (int)strlen(lab) * CHAR_W + 10;
        if (right > w)
            w = right;
    }
    int h = (int)n * TREE_DY + 10;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11' "
               "font-family='monospace'>\n", w, h);
    for (size_t i = 0; i < n; i++) {
        int p = t->nodes[i].parent;
        if (p >= 0 && (size_t)p < i) {
            int px = 20 + L.depth[p] * TREE_DX, py = L.row[p] * TREE_DY + 12;
            int cx = 20 + L.depth[i] * TREE_DX, cy = L.row[i] * TREE_DY + 12;
            fprintf(f, "<polyline points='%d,%d %d,%d %d,%d' fill='none' stroke='#999'/>\n", px, py, px,
                    cy, cx, cy);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const struct graph_node *nd = &t->nodes[i];
        const char *st = nd->has_outcome ? bstr(&nd->out, "status", "?") : "pending";
        int pass = strcmp(st, "pass") == 0;
        const char *col = (int)i == r->best ? "#1a7f37" : pass ? "#6cc070" : "#d1242f";
        int x = 20 + L.depth[i] * TREE_DX, y = L.row[i] * TREE_DY + 12;
        fprintf(f, "<circle cx='%d' cy='%d' r='6' fill='%s'><title>", x, y, col);
        esc(f, nd->dec.id_hex);
        fprintf(f, "</title></circle><text x='%d' y='%d'>", x + 10, y + 4);
        node_label(nd, lab, sizeof lab);
        esc(f, lab);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
    tree_layout_free(&L);
}

/* ------------------------------------------------------ rows and probe --- */

/* Fill a row's claims from its best outcome and decision. */
static void row_fill(struct row *r)
{
    snprintf(r->name, sizeof r->name, "%s", bstr(&r->tree.task, "name", r->tree.task.id_hex));
    snprintf(r->op, sizeof r->op, "%s", bstr(&r->tree.task, "op", "?"));
    snprintf(r->family, sizeof r->family, "%s", bstr(&r->tree.task, "family", r->op));
    /* a user's op (issue 14): flagged in the task, or not a built-in op */
    r->user_op = cJSON_IsTrue(body(&r->tree.task, "user_op")) || plat_op_parse(r->op) < 0;
    r->peer = -1;
    r->best = graph_tree_best(&r->tree);
    r->passed = r->best >= 0;
    r->reduced = !r->passed && graph_tree_best_reduced(&r->tree) >= 0;
    if (r->passed) {
        const struct graph_rec *o = &r->tree.nodes[r->best].out;
        r->speedup = bnum(o, "speedup", 0);
        snprintf(r->baseline, sizeof r->baseline, "%s", bstr(o, "baseline", ""));
        snprintf(r->metric, sizeof r->metric, "%s", bstr(o, "metric", ""));
        r->emulated = cJSON_IsTrue(body(o, "emulated"));
        r->median_ns = bnum(o, "median_ns", 0);
        r->flops = bnum(o, "flops", 0);
        r->bytes = bnum(o, "bytes", 0);
        const cJSON *ra = body(o, "ratios"), *it;
        double v[REPORT_MAX_RATIOS];
        cJSON_ArrayForEach(it, ra) {
            if (r->n_ratios >= REPORT_MAX_RATIOS || !cJSON_IsNumber(it) || !it->string)
                continue;
            snprintf(r->ratios[r->n_ratios].name, sizeof r->ratios[0].name, "%s", it->string);
            v[r->n_ratios] = r->ratios[r->n_ratios].v = it->valuedouble;
            r->n_ratios++;
        }
        r->peer = bestpeer_pick(v, r->n_ratios);
        r->user_seed = strcmp(bstr(&r->tree.nodes[r->best].dec, "proposer", ""), "user") == 0;
    }
    for (size_t k = 0; k < r->tree.n; k++) {
        const cJSON *tk = body(&r->tree.nodes[k].dec, "tokens");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(tk, "in");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(tk, "out");
        r->tokens += (long)((cJSON_IsNumber(a) ? a->valuedouble : 0) + (cJSON_IsNumber(b) ? b->valuedouble : 0));
        r->llm |= strcmp(bstr(&r->tree.nodes[k].dec, "proposer", ""), "llm") == 0;
    }
    r->llm |= r->tokens > 0;
}

/* The last native probe record of this device (the roofline's peak and
 * bandwidth); an emulated probe claims neither. */
static int probe_cb(void *ctx, const struct store_rec *r)
{
    struct plat_probe *pr = ctx;
    if (strcmp(r->kind, "probe") != 0)
        return 0;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "body");
    const cJSON *em = cJSON_GetObjectItemCaseSensitive(b, "emulated");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(b, "fma_mflops_core");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(b, "triad_mbs");
    if (cJSON_IsFalse(em) && cJSON_IsNumber(pk) && cJSON_IsNumber(bw) && pk->valuedouble > 0 &&
        bw->valuedouble > 0) {
        memset(pr, 0, sizeof *pr);
        pr->peak_gflops_core = pk->valuedouble / 1000.0;
        pr->triad_gbs = bw->valuedouble / 1000.0;
    }
    cJSON_Delete(j);
    return 0;
}

/* The best kernel's source, collapsed, with who proposed it. */
static void best_source(FILE *f, struct graph *g, const struct row *r)
{
    const struct graph_rec *d = &r->tree.nodes[r->best].dec;
    const char *ref = bstr(d, "source", NULL);
    char *src = NULL;
    size_t len = 0;
    if (!ref || graph_blob_get(g, ref, &src, &len))
        return;
    fprintf(f, "<details><summary>best kernel source: ");
    esc(f, bstr(d, "params", bstr(d, "proposer", "decision")));
    fprintf(f, " (proposer ");
    esc(f, bstr(d, "proposer", "?"));
    fprintf(f, ")%s%s, %zu bytes</summary>\n<pre>", r->user_seed ? " <b>user seed</b>" : "",
            r->user_op ? " <b>user op</b>" : "", len);
    if (len > REPORT_SOURCE_MAX)
        src[REPORT_SOURCE_MAX] = '\0';
    esc(f, src);
    fprintf(f, "%s</pre></details>\n", len > REPORT_SOURCE_MAX ? "\n... (cut)" : "");
    free(src);
}

/* ------------------------------------------------------------ the page --- */

static void th(FILE *f, const char *const *cols, size_t n)
{
    fprintf(f, "<tr>");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "<th>%s</th>", cols[i]);
    fprintf(f, "</tr>\n");
}

/* Per family: tasks with a best peer, the geometric mean of the best kernel
 * against it, and how many are at least the best peer. */
static void family_table(FILE *f, const struct row *rows, size_t nr, int any_emulated)
{
    const char *fams[REPORT_MAX_FAMILIES];
    struct geomean gm[REPORT_MAX_FAMILIES] = {{0}}, all = {0};
    int tasks[REPORT_MAX_FAMILIES] = {0}, passed[REPORT_MAX_FAMILIES] = {0};
    int emu[REPORT_MAX_FAMILIES] = {0}; /* some ratio in the family's mean is emulated */
    size_t nf = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t k = 0;
        while (k < nf && strcmp(fams[k], rows[i].family))
            k++;
        if (k == nf) {
            if (nf == REPORT_MAX_FAMILIES)
                continue;
            fams[nf++] = rows[i].family;
        }
        tasks[k]++;
        passed[k] += rows[i].passed;
        if (rows[i].peer >= 0) {
            emu[k] |= rows[i].emulated;
            geomean_add(&gm[k], rows[i].ratios[rows[i].peer].v);
            geomean_add(&all, rows[i].ratios[rows[i].peer].v);
        }
    }
    const char *mark = any_emulated ? "*" : "";
    fprintf(f, "<h2>Against the best peer, per family</h2>\n<p>The best peer of a task is its strongest "
               "same-run baseline (scalar-O2, autovec-O3, OpenBLAS where BLAS computes the op exactly, "
               "SLEEF for the transcendental ops); "
               "ratio = peer / best kernel, &gt; 1: kernel better. Geometric means.</p>\n<table>\n");
    static const char *const cols[] = {"family", "tasks", "passed", "with a peer", "geomean vs best peer",
                                       "tasks &ge; best peer"};
    th(f, cols, 6);
    for (size_t k = 0; k < nf; k++) {
        fprintf(f, "<tr><td>");
        esc(f, fams[k]);
        fprintf(f, "</td><td>%d</td><td>%d</td><td>%d</td><td>%.2fx%s</td><td>%d/%d</td></tr>\n", tasks[k],
                passed[k], gm[k].n, geomean_value(&gm[k]), emu[k] ? "*" : "", gm[k].at_least_1, gm[k].n);
    }
    fprintf(f, "<tr><td><b>all</b></td><td>%zu</td><td></td><td>%d</td><td><b>%.2fx%s</b></td>"
               "<td><b>%d/%d</b></td></tr>\n</table>\n", nr, all.n, geomean_value(&all), mark,
            all.at_least_1, all.n);
    /* pass rate per family */
    char (*labels)[128] = calloc(nf + 1, sizeof *labels);
    double *vals = calloc(nf + 1, sizeof *vals);
    if (labels && vals) {
        for (size_t k = 0; k < nf; k++) {
            snprintf(labels[k], sizeof labels[k], "%s (%d/%d)", fams[k], passed[k], tasks[k]);
            vals[k] = tasks[k] ? 100.0 * passed[k] / tasks[k] : 0;
        }
        bars(f, "Pass rate per family", labels, vals, nf, "%", "#1a7f37");
    }
    free(labels);
    free(vals);
}

static int report_write(FILE *f, struct graph *g, const struct row *rows, size_t nr,
                        const struct plat_probe *probe)
{
    int npass = 0, nreduced = 0, any_emulated = 0, any_llm = 0, any_native = 0;
    for (size_t i = 0; i < nr; i++) {
        npass += rows[i].passed;
        nreduced += rows[i].reduced;
        any_emulated |= rows[i].passed && rows[i].emulated;
        any_llm |= rows[i].llm;
        any_native |= rows[i].passed && !rows[i].emulated && rows[i].median_ns > 0;
    }
    char (*labels)[128] = calloc(nr + 1, sizeof *labels);
    char (*notes)[64] = calloc(nr + 1, sizeof *notes);
    double *vals = calloc(nr + 1, sizeof *vals);
    if (!labels || !notes || !vals) {
        free(labels);
        free(notes);
        free(vals);
        return KOPE_ERR_NOMEM;
    }
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>kope report</title>\n"
               "<style>body{font-family:sans-serif;margin:2em}"
               "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
               "h2{margin-top:1.5em}svg{display:block;max-width:none}"
               ".scroll{overflow-x:auto}pre{font-size:11px;background:#f6f8fa;padding:6px}</style>"
               "</head><body>\n<h1>kope report</h1>\n<p>%zu task(s) with decisions, %d passed%s%.0d%s. "
               "Ratios are a same-run baseline / the task's best kernel (&gt; 1: the kernel is better).%s</p>\n",
            nr, npass, nreduced ? ", " : "", nreduced,
            nreduced ? " verified at a reduced shape only (emulated: the task case cut to the emulation "
                       "cap; the full shape on a board or with <code>kope run --full-shape</code>)" : "",
            any_emulated ? " <b>*</b> marks an emulated ratio (qemu): not a speed, but the ratio of the "
                           "vector-cost model (vcost: register groups per vector instruction, so LMUL is "
                           "not free; docs/K3-KERNELS.md), or of instruction counts where a kernel could "
                           "not be modelled." : "");
    family_table(f, rows, nr, any_emulated);

    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        if (rows[i].peer < 0)
            continue;
        snprintf(labels[n], sizeof labels[n], "%.80s%s%s", rows[i].name, rows[i].emulated ? " *" : "",
                 rows[i].user_op ? " [user op]" : "");
        snprintf(notes[n], sizeof notes[n], "vs %s%s", rows[i].ratios[rows[i].peer].name,
                 rows[i].emulated ? " *" : "");
        vals[n++] = rows[i].ratios[rows[i].peer].v;
    }
    fprintf(f, "<div class='scroll'>\n");
    logbars(f, "Best kernel vs its best peer, per task (log scale)", labels, vals, notes, n);
    n = 0;
    for (size_t i = 0; i < nr; i++) {
        if (!rows[i].passed || rows[i].speedup <= 0)
            continue;
        snprintf(labels[n], sizeof labels[n], "%.80s%s", rows[i].name, rows[i].emulated ? " *" : "");
        snprintf(notes[n], sizeof notes[n], "vs %s%s", rows[i].baseline, rows[i].emulated ? " *" : "");
        vals[n++] = rows[i].speedup;
    }
    logbars(f, "Best kernel vs the claimed baseline (autovec-O3 when measured; log scale)", labels, vals,
            notes, n);
    if (any_native && !probe->emulated) {
        /* the roofline: share of the attainable min(peak, AI x bandwidth),
         * single core, from this device's native probe */
        n = 0;
        for (size_t i = 0; i < nr; i++) {
            const struct row *r = &rows[i];
            double sh = r->passed && !r->emulated ? plat_roofline_share(probe, r->flops, r->bytes, r->median_ns)
                                                  : 0;
            if (sh <= 0)
                continue;
            snprintf(labels[n], sizeof labels[n], "%.80s (AI %.2f flop/B)", r->name,
                     r->bytes > 0 ? r->flops / r->bytes : 0);
            vals[n++] = 100.0 * sh;
        }
        char title[200];
        snprintf(title, sizeof title, "Roofline: share of the attainable min(peak %.1f GFLOP/s, AI x %.1f GB/s), "
                 "one core, native", probe->peak_gflops_core, probe->triad_gbs);
        if (n)
            bars(f, title, labels, vals, n, "%", "#bf8700");
    }
    if (any_llm) {
        for (size_t i = 0; i < nr; i++) {
            snprintf(labels[i], sizeof labels[i], "%.80s", rows[i].name);
            vals[i] = (double)rows[i].tokens;
        }
        bars(f, "LLM tokens per task", labels, vals, nr, "", "#8250df");
    }
    fprintf(f, "</div>\n");
    free(labels);
    free(notes);
    free(vals);

    fprintf(f, "<h2>Tasks</h2>\n<div class='scroll'><table>");
    static const char *const cols[] = {"task", "op", "passed", "decisions", "vs best peer", "best peer",
                                       "all same-run ratios", "metric", "tokens"};
    th(f, cols, any_llm ? 9 : 8);
    for (size_t i = 0; i < nr; i++) {
        const struct row *r = &rows[i];
        const char *mark = r->emulated ? "*" : "";
        fprintf(f, "<tr><td>");
        esc(f, r->name);
        fprintf(f, "</td><td>");
        esc(f, r->op);
        fprintf(f, "%s</td><td>%s</td><td>%zu</td><td>", r->user_op ? " (user op)" : "",
                r->passed ? "yes" : r->reduced ? "reduced shape only" : "no", r->tree.n);
        if (r->peer >= 0) {
            fprintf(f, "%.2fx%s</td><td>", r->ratios[r->peer].v, mark);
            esc(f, r->ratios[r->peer].name);
        } else {
            fprintf(f, "-</td><td>-");
        }
        fprintf(f, "</td><td>");
        for (int k = 0; k < r->n_ratios; k++) {
            fprintf(f, "%s", k ? ", " : "");
            esc(f, r->ratios[k].name);
            fprintf(f, " %.2fx%s", r->ratios[k].v, mark);
        }
        fprintf(f, "</td><td>");
        esc(f, r->metric[0] ? r->metric : r->passed ? (r->emulated ? "icount" : "time") : "");
        if (any_llm)
            fprintf(f, "</td><td>%ld", r->tokens);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table></div>\n<h2>Tasks: best kernel and decision tree</h2>\n<p>Green: passed, dark "
               "green: the task's best, red: failed; [user] = a user's seed kernel.</p>\n");
    for (size_t i = 0; i < nr; i++) {
        fprintf(f, "<h3>");
        esc(f, rows[i].name);
        fprintf(f, "%s</h3>\n", rows[i].user_op ? " (user op)" : "");
        if (rows[i].passed)
            best_source(f, g, &rows[i]);
        fprintf(f, "<div class='scroll'>\n");
        tree_svg(f, &rows[i]);
        fprintf(f, "</div>\n");
    }
    return 0;
}

int cli_report(struct cli *c, int argc, char **argv)
{
    const char *path = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope report --html FILE\n"
               "Writes one self-contained HTML page (inline SVG, no scripts, nothing fetched):\n"
               "per family the geometric mean of the best kernels against their best same-run\n"
               "peer, per task the best kernel vs its best peer and vs the claimed baseline\n"
               "(log scale; * = emulated: vector-cost model, not time), the pass rate per\n"
               "family, a roofline chart when native measurements and a native probe exist,\n"
               "LLM tokens per task when an LLM was used, and per task the best kernel's\n"
               "source and its decision tree (green: passed, dark green: best, red: failed).\n");
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--html") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strncmp(argv[i], "--html=", 7) == 0)
            path = argv[i] + 7;
        else {
            static const char *const valued[] = {"--html", NULL};
            if (!cli_missing_value("report", argv[i], valued))
                fprintf(stderr, "kope report: unexpected argument '%s' (see kope report --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, "kope report: which file? the report is one HTML page: --html FILE\n");
        cli_hint("kope report --html kope-report.html");
        return CLI_USAGE;
    }
    int ret = CLI_FAIL;
    struct graph g;
    struct collect col = {0};
    struct row *rows = NULL;
    size_t nr = 0;
    FILE *f = NULL;
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY))
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
        row_fill(r);
        nr++;
    }
    struct plat_probe probe = {0};
    probe.emulated = 1; /* until a native probe record says otherwise */
    if (g.key) {
        struct plat_probe found = {0};
        found.emulated = 1;
        if (store_rec_query(g.st, STORE_Q_ORIGIN, g.origin, 0, probe_cb, &found) == 0)
            probe = found;
    }
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kope report: cannot write %s\n", path);
        goto out;
    }
    int npass = 0, nreduced = 0;
    for (size_t i = 0; i < nr; i++) {
        npass += rows[i].passed;
        nreduced += rows[i].reduced;
    }
    if (report_write(f, &g, rows, nr, &probe))
        goto out;
    fprintf(f, "</body></html>\n");
    if (fclose(f) != 0) {
        f = NULL;
        fprintf(stderr, "kope report: writing %s failed\n", path);
        goto out;
    }
    f = NULL;
    if (nreduced)
        printf("wrote %s: %zu task(s), %d passed, %d verified at reduced shape only (emulated)\n", path, nr,
               npass, nreduced);
    else
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

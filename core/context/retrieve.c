/*
 * core/context/retrieve.c - measured-key retrieval of experience for the warm tier.
 * See core/context/retrieve.h for the keys and weights.
 *
 * Two steps, both bounded whatever the graph's size:
 *   1. candidates: the store's task_keys index, same op first (newest
 *      RETR_SCAN_SAME_OP), then each other op of the family (newest
 *      RETR_SCAN_OTHER_OP each); scored by retrieve_similarity, best
 *      max_tasks kept;
 *   2. lessons: for each kept task, the store's exp_keys index gives its
 *      best pass, its failures and its insights (status, speedup, share,
 *      reason) without reading the task's other records; only the decisions
 *      shown are fetched (by id) for their tags: the best path, the best
 *      kernel's source, up to RETR_MAX_FAILS_PER_TASK distinct failures.
 * The query task's own history is its latest outcomes, read the same way.
 */
#include "core/context/retrieve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/buf.h"
#include "core/context/ppactive.h"
#include "core/err.h"
#include "core/task/task.h"
#include "core/util.h"
#include "store/store.h"

#define TEXT_MAX (64 * 1024)   /* one item's text (sources are capped before) */
#define SOURCE_MAX_BYTES 12000 /* a similar task's best kernel shown at most */
#define REASON_MAX 600     /* an insight's text kept (exp_keys holds 600 bytes) */
#define FAIL_REASON_MAX 240 /* a failure's reason shown */
#define TAGS_MAX 160
#define PATH_MAX_STEPS 10
#define OWN_MAX_ATTEMPTS 24

const char *retr_kind_name(enum retr_kind k)
{
    static const char *const n[] = {"own-history", "best-path", "best-source", "failure", "insight", "slowdown"};
    return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

const char *retr_bound_name(enum retr_bound b)
{
    return b == RETR_BOUND_COMPUTE ? "compute" : "memory";
}

void retr_result_init(struct retr_result *r)
{
    memset(r, 0, sizeof *r);
}

void retr_result_free(struct retr_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].text);
    free(r->items);
    retr_result_init(r);
}

/* ------------------------------------------------------------ similarity */

enum retr_bound retrieve_bound(const struct plat_task *t, double ridge)
{
    double flops = 0, bytes = 0;
    plat_task_work(t, &flops, &bytes);
    if (bytes <= 0)
        return RETR_BOUND_MEMORY;
    return flops / bytes >= ridge ? RETR_BOUND_COMPUTE : RETR_BOUND_MEMORY;
}

static double lg(uint64_t v) { return v ? log2((double)v) : 0; }

static double elements(const struct plat_task *t)
{
    switch (t->family) {
    case PLAT_FAM_MATMUL:
        return (t->batch ? (double)t->batch : 1) * (double)(t->m ? t->m : 1) *
               (double)(t->n ? t->n : 1) * (double)(t->k ? t->k : 1);
    case PLAT_FAM_REDUCTION:
        return (double)t->rows * (double)t->cols;
    default:
        return plat_task_rowwise(t) ? (double)t->rows * (double)t->cols : (double)t->n;
    }
}

double retrieve_similarity(const struct plat_task *a, const char *dtype_a,
                           const struct plat_task *b, const char *dtype_b, double ridge)
{
    if (a->family != b->family)
        return 0;
    double op_w = a->op == b->op ? 1.0 : 0.5;
    double d; /* log2 distance of the shapes */
    if (a->op == b->op) {
        const uint64_t da[6] = {a->n, a->rows, a->cols, a->m, a->k, a->batch};
        const uint64_t db[6] = {b->n, b->rows, b->cols, b->m, b->k, b->batch};
        double sum = 0;
        int used = 0;
        for (int i = 0; i < 6; i++) {
            if (!da[i] && !db[i])
                continue;
            sum += fabs(lg(da[i] ? da[i] : 1) - lg(db[i] ? db[i] : 1));
            used++;
        }
        d = used ? sum / used : 0;
    } else {
        d = fabs(log2(elements(a) + 1) - log2(elements(b) + 1));
    }
    double shape_w = 1.0 / (1.0 + 0.5 * d);
    const char *ta = dtype_a ? dtype_a : "f32", *tb = dtype_b ? dtype_b : "f32";
    double dtype_w = strcmp(ta, tb) == 0 ? 1.0 : 0.5;
    double bound_w = retrieve_bound(a, ridge) == retrieve_bound(b, ridge) ? 1.0 : 0.6;
    return op_w * shape_w * dtype_w * bound_w;
}

/* ------------------------------------------------------------ candidates */

struct cand {
    int64_t rid;
    uint8_t id[32];   /* resolved for the kept candidates only */
    char id_hex[GRAPH_ID_HEX];
    char target[32];
    char dtype[16];
    struct plat_task t;
    double sim;   /* similarity */
    double score; /* selection score: sim, same target preferred */
    int cross;    /* 1: another target than the query's */
};

struct scan_ctx {
    const struct retr_query *q;
    const char *target, *dtype;
    double ridge;
    struct cand *top; /* sorted best first, at most cap */
    size_t n, cap;
    size_t scanned;
};

static int cand_better(const struct cand *a, const struct cand *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    return a->rid > b->rid; /* newer first */
}

static int key_to_task(const struct store_task_key *k, struct plat_task *t)
{
    int op = plat_op_parse(k->op);
    if (op < 0)
        return -1;
    memset(t, 0, sizeof *t);
    t->op = (enum plat_op)op;
    t->family = plat_op_family(t->op);
    const int64_t v[6] = {k->n, k->rows, k->cols, k->m, k->k, k->batch};
    for (int i = 0; i < 6; i++)
        if (v[i] < 0)
            return -1;
    t->n = (uint64_t)k->n;
    t->rows = (uint64_t)k->rows;
    t->cols = (uint64_t)k->cols;
    t->m = (uint64_t)k->m;
    t->k = (uint64_t)k->k;
    t->batch = (uint64_t)k->batch;
    if (t->family == PLAT_FAM_MATMUL && !t->batch)
        t->batch = 1;
    return 0;
}

static int scan_cb(void *vctx, const struct store_task_key *k)
{
    struct scan_ctx *c = vctx;
    c->scanned++;
    struct cand cd;
    memset(&cd, 0, sizeof cd);
    if (key_to_task(k, &cd.t))
        return 0;
    cd.rid = k->rid;
    snprintf(cd.target, sizeof cd.target, "%s", k->target ? k->target : "?");
    snprintf(cd.dtype, sizeof cd.dtype, "%s", k->dtype ? k->dtype : "f32");
    cd.sim = retrieve_similarity(c->q->task, c->dtype, &cd.t, cd.dtype, c->ridge);
    if (cd.sim <= 0)
        return 0;
    cd.cross = strcmp(cd.target, c->target) != 0;
    cd.score = cd.sim * (cd.cross ? 0.8 : 1.0);
    /* insert into the sorted top list */
    size_t pos = c->n;
    while (pos > 0 && cand_better(&cd, &c->top[pos - 1]))
        pos--;
    if (pos >= c->cap)
        return 0;
    size_t last = c->n < c->cap ? c->n : c->cap - 1;
    memmove(&c->top[pos + 1], &c->top[pos], (last - pos) * sizeof cd);
    c->top[pos] = cd;
    if (c->n < c->cap)
        c->n++;
    return 0;
}

/* ------------------------------------------------------------ one task's lessons */

/* What retrieval knows of one outcome: its exp_keys row (store/), plus the
 * baseline and emulated flag read from the record when it is shown. */
struct out_row {
    uint8_t id[32];
    char decision[GRAPH_ID_HEX];
    char status[32];
    char reason[REASON_MAX];
    char baseline[32];
    double speedup;  /* -1 unknown */
    double share;    /* -1 unknown */
    int emulated;
};

#define ROWS_MAX 32
struct rows {
    struct out_row r[ROWS_MAX];
    size_t n;
};

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Copy a one-line version of s (newlines -> spaces), capped. */
static void one_line(char *dst, size_t cap, const char *s)
{
    size_t j = 0;
    for (size_t i = 0; s && s[i] && j + 1 < cap; i++) {
        char ch = s[i];
        if (ch == '\n' || ch == '\r' || ch == '\t')
            ch = ' ';
        if (ch == ' ' && j > 0 && dst[j - 1] == ' ')
            continue;
        dst[j++] = ch;
    }
    dst[j] = '\0';
}

static int rows_cb(void *vctx, const struct store_exp_key *k)
{
    struct rows *rs = vctx;
    if (rs->n >= ROWS_MAX)
        return 1;
    struct out_row *o = &rs->r[rs->n++];
    memset(o, 0, sizeof *o);
    memcpy(o->id, k->id, 32);
    snprintf(o->decision, sizeof o->decision, "%s", k->parent ? k->parent : "");
    snprintf(o->status, sizeof o->status, "%s", k->status ? k->status : "unknown");
    one_line(o->reason, sizeof o->reason, k->reason);
    o->speedup = k->has_speedup ? k->speedup : -1;
    o->share = k->has_share ? k->share : -1;
    snprintf(o->baseline, sizeof o->baseline, "baseline");
    return 0;
}

static int rows_get(struct graph *g, const uint8_t task[32], enum store_exp_query q, int limit,
                    struct rows *rs, size_t *n_read)
{
    rs->n = 0;
    int rc = store_exp_keys(g->st, task, q, limit < ROWS_MAX ? limit : ROWS_MAX, rows_cb, rs);
    *n_read += rs->n;
    return rc == 1 ? 0 : rc;
}

/* A decision's tags (comma-joined; its rationale's start when untagged) and
 * first parent (hex). Returns 0, or KOPE_ERR_NOTFOUND when the decision is
 * not stored (a partial graph). */
static int decision_get(struct graph *g, const char *hex, char *tags, size_t cap,
                        char parent[GRAPH_ID_HEX], char src[GRAPH_BLOB_REF], size_t *n_read)
{
    struct graph_rec r;
    tags[0] = '\0';
    if (parent)
        parent[0] = '\0';
    if (src)
        src[0] = '\0';
    if (strlen(hex) != 64 || graph_get(g, hex, &r))
        return KOPE_ERR_NOTFOUND;
    (*n_read)++;
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(r.json, "body");
    const cJSON *t, *tl = cJSON_GetObjectItemCaseSensitive(body, "tags");
    size_t off = 0;
    cJSON_ArrayForEach(t, tl) {
        if (!cJSON_IsString(t))
            continue;
        int w = snprintf(tags + off, cap - off, "%s%s", off ? "," : "", t->valuestring);
        if (w < 0 || (size_t)w >= cap - off)
            break;
        off += (size_t)w;
    }
    const char *params = jstr(body, "params"); /* the tuner's template point */
    if (params && off + 4 < cap)
        snprintf(tags + off, cap - off, "%s{%s}", off ? " " : "", params);
    if (!tags[0]) {
        const char *rat = jstr(body, "rationale");
        one_line(tags, cap > 60 ? 60 : cap, rat ? rat : "untagged");
    }
    const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.json, "parents"), 0);
    if (parent && cJSON_IsString(p0))
        snprintf(parent, GRAPH_ID_HEX, "%s", p0->valuestring);
    const char *sr = jstr(body, "source");
    if (src && sr)
        snprintf(src, GRAPH_BLOB_REF, "%s", sr);
    int is_dec = strcmp(r.kind, "decision") == 0;
    graph_rec_free(&r);
    return is_dec ? 0 : KOPE_ERR_NOTFOUND;
}

/* Baseline name and emulated flag of an outcome (from its record). */
static void outcome_detail(struct graph *g, struct out_row *o, size_t *n_read)
{
    char hex[GRAPH_ID_HEX];
    struct graph_rec r;
    util_hex(o->id, 32, hex);
    if (graph_get(g, hex, &r))
        return;
    (*n_read)++;
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(r.json, "body");
    const char *b = jstr(body, "baseline");
    if (b)
        snprintf(o->baseline, sizeof o->baseline, "%s", b);
    o->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "emulated"));
    graph_rec_free(&r);
}

/* ------------------------------------------------------------ items */

static int item_add(struct retr_result *res, size_t *cap, enum retr_kind kind,
                    enum retr_lesson lesson, const struct cand *c, const char *ref_hex,
                    double value, struct buf *text, const char *why)
{
    if (buf_err(text))
        return buf_err(text);
    if (res->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        void *p = realloc(res->items, nc * sizeof *res->items);
        if (!p)
            return KOPE_ERR_NOMEM;
        res->items = p;
        *cap = nc;
    }
    struct retr_item *it = &res->items[res->n];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->lesson = lesson;
    it->sim = c ? c->sim : 1.0;
    snprintf(it->target, sizeof it->target, "%s", c ? c->target : "");
    snprintf(it->ref, sizeof it->ref, "%s", ref_hex);
    it->value = value;
    it->cross_target = c && c->cross;
    snprintf(it->why, sizeof it->why, "%s", why);
    size_t len;
    it->text = buf_detach(text, &len);
    if (!it->text)
        return KOPE_ERR_NOMEM;
    res->n++;
    return 0;
}

static void outcome_phrase(const struct out_row *o, char *dst, size_t cap)
{
    if (!o) {
        snprintf(dst, cap, "no outcome recorded");
    } else if (strcmp(o->status, "pass") == 0 && o->speedup > 0) {
        int w = snprintf(dst, cap, "pass %.2fx vs %s%s", o->speedup, o->baseline,
                         o->emulated ? " (vcost)" : "");
        if (o->share > 0 && w > 0 && (size_t)w < cap)
            snprintf(dst + w, cap - (size_t)w, ", %.0f%% of roofline", 100 * o->share);
    } else if (o->reason[0] && strcmp(o->status, "compile_error") == 0) {
        /* the compiler's words quote the candidate's source (an #error line
         * may address the model): quoted as data in a code span it cannot
         * close (tests/redteam/outsider-diag-escape-injection.c) */
        char r[FAIL_REASON_MAX + 1], f[10];
        size_t rl = strnlen(o->reason, FAIL_REASON_MAX);
        memcpy(r, o->reason, rl);
        r[rl] = '\0';
        size_t fl = util_fence_len(r, 1);
        if (fl >= sizeof f) { /* a long backtick run: quotes, and a one-tick span */
            for (char *p = r; *p; p++)
                if (*p == '`')
                    *p = '\'';
            fl = 1;
        }
        memset(f, '`', fl);
        f[fl] = '\0';
        snprintf(dst, cap, "%.32s: compiler output (untrusted text from the candidate's source) %.9s %.240s %.9s",
                 o->status, f, r, f);
    } else if (o->reason[0]) {
        snprintf(dst, cap, "%s: %.*s", o->status, FAIL_REASON_MAX, o->reason);
    } else {
        snprintf(dst, cap, "%s", o->status);
    }
}

/* The label every warm item starts with: where it comes from. */
static void label(struct buf *b, const struct cand *c, const char *query_target,
                  enum retr_lesson lesson)
{
    char shape[96];
    task_shape_print(&c->t, shape, sizeof shape);
    if (strcmp(c->target, query_target) == 0)
        buf_printf(b, "[%s %s %s, same target]", plat_op_name(c->t.op), shape, c->dtype);
    else
        buf_printf(b, "[%s %s %s, FROM ANOTHER TARGET: %s; %s]", plat_op_name(c->t.op), shape,
                   c->dtype, c->target,
                   lesson == RETR_CORRECTNESS ? "correctness lesson, applies here"
                                              : "its speeds do not carry over to this target");
}

/* Measured factor of a speed lesson: the share of the roofline it reached
 * (when measured natively), against the share our best already has. */
static double speed_factor(const struct out_row *o, double best_share)
{
    double f;
    if (o->share > 0)
        f = 0.5 + (o->share > 1 ? 1 : o->share);
    else
        f = 0.75; /* emulated or unmeasured: only the vcost/time ratio */
    if (best_share > 0 && o->share > 0 && o->share <= best_share)
        f *= 0.5; /* we are already there */
    return f;
}

static int task_items(struct graph *g, const struct retr_query *q, const char *qtarget,
                      const struct cand *c, struct retr_result *res, size_t *cap, int want_source,
                      size_t *n_read)
{
    int cross = c->cross;
    int rc = 0;
    struct buf b;
    struct rows rs;
    buf_init(&b, TEXT_MAX);
    char why[200], phr[REASON_MAX + 64], shape[96];
    char tags[PATH_MAX_STEPS][TAGS_MAX], parent[GRAPH_ID_HEX], src[GRAPH_BLOB_REF];
    char dec_hex[GRAPH_ID_HEX], task_hex[GRAPH_ID_HEX];
    task_shape_print(&c->t, shape, sizeof shape);
    util_hex(c->id, 32, task_hex);

    /* the best pass and the path that led to it */
    if ((rc = rows_get(g, c->id, STORE_EXP_BEST, 1, &rs, n_read)))
        goto out;
    if (rs.n == 1) {
        struct out_row *bo = &rs.r[0];
        outcome_detail(g, bo, n_read);
        int n = 0;
        char best_src[GRAPH_BLOB_REF] = "";
        snprintf(dec_hex, sizeof dec_hex, "%s", bo->decision);
        while (n < PATH_MAX_STEPS && dec_hex[0] && strcmp(dec_hex, task_hex) != 0 &&
               decision_get(g, dec_hex, tags[n], sizeof tags[n], parent, src, n_read) == 0) {
            if (n == 0)
                snprintf(best_src, sizeof best_src, "%s", src);
            n++;
            snprintf(dec_hex, sizeof dec_hex, "%s", parent);
        }
        if (n > 0) {
            outcome_phrase(bo, phr, sizeof phr);
            label(&b, c, qtarget, RETR_SPEED);
            buf_printf(&b, " best path (%d step%s%s): ", n, n == 1 ? "" : "s",
                       n == PATH_MAX_STEPS ? ", earlier ones omitted" : "");
            for (int i = n; i-- > 0;)
                buf_printf(&b, "%s%s", tags[i], i ? " -> " : "");
            buf_printf(&b, " (%s)\n", phr);
            double v = RETR_W_PATH * c->sim * (cross ? RETR_CROSS_SPEED : 1) *
                       speed_factor(bo, q->best_share);
            snprintf(why, sizeof why, "best path of %s %s (%s, sim %.2f%s), %.2fx%s",
                     plat_op_name(c->t.op), shape, c->target, c->sim,
                     cross ? ", cross-target speed" : "", bo->speedup,
                     bo->share > 0 ? "" : ", share unmeasured");
            if ((rc = item_add(res, cap, RETR_BEST_PATH, RETR_SPEED, c, bo->decision, v, &b, why)))
                goto out;
            buf_init(&b, TEXT_MAX);
        }
        if (n > 0 && want_source && !cross && strncmp(best_src, "sha256:", 7) == 0) {
            char *text = NULL;
            size_t len = 0;
            size_t removed = 0;
            if (graph_blob_get(g, best_src, &text, &len) == 0) {
                /* its active configuration only (core/context/ppactive.h) */
                char *active = pp_active(text, len, &removed);
                free(text);
                if (!active) {
                    rc = KOPE_ERR_NOMEM;
                    goto out;
                }
                text = active;
                len = strlen(text);
                label(&b, c, qtarget, RETR_SPEED);
                buf_printf(&b, " its best kernel (%s, %s%s):\n", tags[0], phr,
                           removed ? "; its active configuration, switched-off #if branches not shown" : "");
                size_t shown = len > SOURCE_MAX_BYTES ? SOURCE_MAX_BYTES : len;
                size_t fence = buf_fence_open(&b, text, shown, platform_prompt(qtarget)->lang);
                buf_add(&b, text, shown);
                if (len > SOURCE_MAX_BYTES)
                    buf_adds(&b, "\n/* ... cut ... */");
                buf_addc(&b, '\n');
                buf_fence_close(&b, fence);
                free(text);
                double v = RETR_W_SOURCE * c->sim * speed_factor(bo, q->best_share);
                snprintf(why, sizeof why, "best kernel of %s %s (sim %.2f), %.2fx",
                         plat_op_name(c->t.op), shape, c->sim, bo->speedup);
                if ((rc = item_add(res, cap, RETR_BEST_SOURCE, RETR_SPEED, c, bo->decision, v, &b,
                                   why)))
                    goto out;
                buf_init(&b, TEXT_MAX);
            }
        }
    }

    /* distinct failures (status, tags), in the order they happened */
    if ((rc = rows_get(g, c->id, STORE_EXP_FAILS, ROWS_MAX, &rs, n_read)))
        goto out;
    char seen[RETR_MAX_FAILS_PER_TASK][32 + TAGS_MAX];
    int n_fail = 0, fetched = 0;
    for (size_t i = 0; i < rs.n && n_fail < RETR_MAX_FAILS_PER_TASK && fetched < 8; i++) {
        struct out_row *o = &rs.r[i];
        char t[TAGS_MAX], key[32 + TAGS_MAX];
        fetched++;
        if (decision_get(g, o->decision, t, sizeof t, NULL, NULL, n_read))
            continue;
        snprintf(key, sizeof key, "%s|%s", o->status, t);
        int dup = 0;
        for (int k = 0; k < n_fail && !dup; k++)
            dup = strcmp(seen[k], key) == 0;
        if (dup)
            continue;
        snprintf(seen[n_fail++], sizeof seen[0], "%s", key);
        outcome_phrase(o, phr, sizeof phr);
        label(&b, c, qtarget, RETR_CORRECTNESS);
        buf_printf(&b, " tried %s -> %s\n", t, phr);
        double v = RETR_W_FAIL * c->sim * (cross ? RETR_CROSS_CORRECTNESS : 1);
        snprintf(why, sizeof why, "failure %s in %s %s (%s, sim %.2f)", o->status,
                 plat_op_name(c->t.op), shape, c->target, c->sim);
        if ((rc = item_add(res, cap, RETR_FAILURE, RETR_CORRECTNESS, c, o->decision, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);
    }

    /* slowdowns: a pass whose ratio fell below its parent's (same baseline,
     * RETR_SLOWDOWN_BELOW), among the task's latest outcomes: the change
     * that cost speed, carried like a failure */
    if ((rc = rows_get(g, c->id, STORE_EXP_RECENT, ROWS_MAX, &rs, n_read)))
        goto out;
    int n_slow = 0;
    fetched = 0;
    for (size_t i = 0; i < rs.n && n_slow < RETR_MAX_SLOWDOWNS_PER_TASK && fetched < 8; i++) {
        struct out_row *o = &rs.r[i];
        if (strcmp(o->status, "pass") != 0 || o->speedup <= 0)
            continue;
        char t[TAGS_MAX], pt[TAGS_MAX], par[GRAPH_ID_HEX];
        fetched++;
        if (decision_get(g, o->decision, t, sizeof t, par, NULL, n_read))
            continue;
        struct out_row *po = NULL; /* the parent's outcome, among the rows read */
        for (size_t k = 0; k < rs.n && !po; k++)
            if (k != i && strcmp(rs.r[k].decision, par) == 0 && strcmp(rs.r[k].status, "pass") == 0 &&
                rs.r[k].speedup > 0)
                po = &rs.r[k];
        if (!po || o->speedup >= po->speedup * RETR_SLOWDOWN_BELOW)
            continue;
        outcome_detail(g, o, n_read);
        outcome_detail(g, po, n_read);
        if (strcmp(o->baseline, po->baseline) != 0 || o->emulated != po->emulated)
            continue; /* not the same ratio */
        if (decision_get(g, po->decision, pt, sizeof pt, NULL, NULL, n_read))
            continue;
        label(&b, c, qtarget, RETR_SPEED);
        buf_printf(&b, " slower: %s on top of %s made it %.2fx -> %.2fx vs %s%s\n", t, pt, po->speedup, o->speedup,
                   o->baseline, o->emulated ? " (vcost)" : "");
        double v = RETR_W_SLOWDOWN * c->sim * (cross ? RETR_CROSS_SPEED : 1);
        snprintf(why, sizeof why, "slowdown %.2fx -> %.2fx in %s %s (%s, sim %.2f)", po->speedup, o->speedup,
                 plat_op_name(c->t.op), shape, c->target, c->sim);
        if ((rc = item_add(res, cap, RETR_SLOWDOWN, RETR_SPEED, c, o->decision, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);
        n_slow++;
    }

    /* insights (their text is in the key row) */
    if ((rc = rows_get(g, c->id, STORE_EXP_INSIGHTS, 2, &rs, n_read)))
        goto out;
    for (size_t i = 0; i < rs.n; i++) {
        char hex[GRAPH_ID_HEX];
        util_hex(rs.r[i].id, 32, hex);
        label(&b, c, qtarget, RETR_CORRECTNESS);
        buf_printf(&b, " insight: %s\n", rs.r[i].reason);
        double v = RETR_W_INSIGHT * c->sim * (cross ? 0.6 : 1);
        snprintf(why, sizeof why, "insight on %s %s (%s, sim %.2f)", plat_op_name(c->t.op), shape,
                 c->target, c->sim);
        if ((rc = item_add(res, cap, RETR_INSIGHT, RETR_CORRECTNESS, c, hex, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);
    }
out:
    buf_free(&b);
    return rc;
}

/* This task's latest attempts, oldest of them first. */
static int own_items(struct graph *g, const uint8_t task_id[32], struct retr_result *res,
                     size_t *cap, size_t *n_read)
{
    struct rows rs;
    int rc = rows_get(g, task_id, STORE_EXP_RECENT, OWN_MAX_ATTEMPTS + 1, &rs, n_read);
    if (rc || rs.n == 0)
        return rc;
    int more = rs.n > OWN_MAX_ATTEMPTS;
    size_t n = more ? OWN_MAX_ATTEMPTS : rs.n, n_pass = 0;
    struct buf b;
    buf_init(&b, TEXT_MAX);
    char phr[REASON_MAX + 64], why[200], hex[GRAPH_ID_HEX], t[TAGS_MAX];
    buf_printf(&b, "This task's attempts so far (%s%zu, oldest first%s):\n", more ? "latest " : "",
               n, more ? "; earlier ones omitted" : "");
    for (size_t i = n; i-- > 0;) {
        struct out_row *o = &rs.r[i];
        if (decision_get(g, o->decision, t, sizeof t, NULL, NULL, n_read))
            snprintf(t, sizeof t, "?");
        if (strcmp(o->status, "pass") == 0)
            outcome_detail(g, o, n_read);
        outcome_phrase(o, phr, sizeof phr);
        n_pass += strcmp(o->status, "pass") == 0;
        buf_printf(&b, "- %s -> %s\n", t, phr);
    }
    snprintf(why, sizeof why, "this task's own history: %zu%s attempts shown, %zu passed", n,
             more ? " latest" : "", n_pass);
    util_hex(task_id, 32, hex);
    rc = item_add(res, cap, RETR_OWN_HISTORY, RETR_CORRECTNESS, NULL, hex, RETR_W_OWN, &b, why);
    buf_free(&b);
    return rc;
}

static int item_cmp(const void *pa, const void *pb)
{
    const struct retr_item *a = pa, *b = pb;
    if (a->value != b->value)
        return a->value > b->value ? -1 : 1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    return strcmp(a->ref, b->ref);
}

int retrieve_run(struct graph *g, const struct retr_query *q, struct retr_result *out)
{
    int rc = KOPE_ERR_INTERNAL;
    struct scan_ctx sc;
    size_t cap = 0;
    memset(&sc, 0, sizeof sc);
    retr_result_init(out);
    if (!q || !q->task)
        return KOPE_ERR_USAGE;
    sc.q = q;
    sc.target = q->target ? q->target : PLAT_DEFAULT_TARGET;
    sc.dtype = q->dtype ? q->dtype : "f32";
    const struct plat_probe *pr = q->probe;
    if (pr && !pr->emulated && pr->peak_gflops_core > 0 && pr->triad_gbs > 0) {
        sc.ridge = pr->peak_gflops_core / pr->triad_gbs;
    } else {
        sc.ridge = RETR_NOMINAL_RIDGE;
        out->ridge_nominal = 1;
    }
    out->ridge = sc.ridge;
    out->bound = retrieve_bound(q->task, sc.ridge);
    /* more candidates than kept: the query task itself may be among the
     * best, and a task with no outcome yet (registered, not tried) gives no
     * lesson and is skipped for the next one */
    size_t keep = (size_t)(q->max_tasks > 0 ? q->max_tasks : RETR_MAX_TASKS);
    sc.cap = 3 * keep + 1;
    sc.top = calloc(sc.cap + 1, sizeof *sc.top);
    if (!sc.top)
        return KOPE_ERR_NOMEM;

    /* 1. candidates: the same op, then the family's other ops */
    rc = store_task_keys(g->st, plat_task_op_name(q->task), RETR_SCAN_SAME_OP, scan_cb, &sc);
    for (int op = 0; !rc && op < PLAT_OP_COUNT; op++) {
        if (op == (int)q->task->op || plat_op_family((enum plat_op)op) != q->task->family)
            continue;
        rc = store_task_keys(g->st, plat_op_name((enum plat_op)op), RETR_SCAN_OTHER_OP, scan_cb, &sc);
    }
    if (rc) {
        snprintf(g->err, sizeof g->err, "retrieval: %s", store_errmsg(g->st));
        goto out;
    }
    out->n_keys_scanned = sc.scanned;
    /* resolve the kept candidates' ids; drop the query task */
    size_t w = 0;
    for (size_t i = 0; i < sc.n; i++) {
        if ((rc = store_rec_id(g->st, sc.top[i].rid, sc.top[i].id))) {
            snprintf(g->err, sizeof g->err, "retrieval: %s", store_errmsg(g->st));
            goto out;
        }
        if (q->task_id && memcmp(sc.top[i].id, q->task_id, 32) == 0)
            continue;
        sc.top[w++] = sc.top[i];
    }
    sc.n = w;

    /* 2. lessons from each kept task (through the exp_keys index); the
     * best kernel source only from the two most similar same-target tasks
     * (sources are long) */
    int sources = 0;
    size_t used = 0;
    for (size_t i = 0; i < sc.n && used < keep; i++) {
        int want = sources < 2 && !sc.top[i].cross;
        size_t before = out->n;
        out->n_tasks_read++;
        if ((rc = task_items(g, q, sc.target, &sc.top[i], out, &cap, want, &out->n_records_read)))
            goto out;
        used += out->n > before;
        for (size_t k = before; k < out->n; k++)
            sources += out->items[k].kind == RETR_BEST_SOURCE;
    }

    /* 3. our own history */
    if (q->task_id && (rc = own_items(g, q->task_id, out, &cap, &out->n_records_read)))
        goto out;
    if (out->n)
        qsort(out->items, out->n, sizeof *out->items, item_cmp);
    rc = 0;
out:
    free(sc.top);
    if (rc)
        retr_result_free(out);
    return rc;
}

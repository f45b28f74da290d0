/*
 * core/retrieve.c - measured-key retrieval of experience for the warm tier.
 * See core/retrieve.h for the keys and weights.
 *
 * Two steps, both bounded whatever the graph's size:
 *   1. candidates: the store's task_keys index, same op first (newest
 *      RETR_SCAN_SAME_OP), then each other op of the family (newest
 *      RETR_SCAN_OTHER_OP each); scored by retrieve_similarity, best
 *      max_tasks kept;
 *   2. lessons: each kept task's records (one indexed query), reduced to
 *      compact decision/outcome rows, turned into items: the best path, the
 *      best kernel's source, distinct failures, insights.
 * The query task's own history is read the same way and summarised.
 */
#include "core/retrieve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/task.h"
#include "core/util.h"
#include "store/store.h"

#define TEXT_MAX (64 * 1024)   /* one item's text (sources are capped before) */
#define SOURCE_MAX_BYTES 12000 /* a similar task's best kernel shown at most */
#define REASON_MAX 200
#define TAGS_MAX 160
#define PATH_MAX_STEPS 10
#define OWN_MAX_ATTEMPTS 24

const char *retr_kind_name(enum retr_kind k)
{
    static const char *const n[] = {"own-history", "best-path", "best-source", "failure", "insight"};
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
        return plat_op_is_rowwise(t->op) ? (double)t->rows * (double)t->cols : (double)t->n;
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
    uint8_t id[32];
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
    return memcmp(a->id, b->id, 32) < 0;
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
    if (c->q->task_id && memcmp(k->id, c->q->task_id, 32) == 0)
        return 0;
    struct cand cd;
    memset(&cd, 0, sizeof cd);
    if (key_to_task(k, &cd.t))
        return 0;
    memcpy(cd.id, k->id, 32);
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

/* ------------------------------------------------------------ one task's records */

struct dec_row {
    char id[GRAPH_ID_HEX];
    char parent[GRAPH_ID_HEX];
    char tags[TAGS_MAX];
    char source[GRAPH_BLOB_REF];
    int parent_idx;  /* -1 root */
    int out_idx;     /* -1 none */
};

struct out_row {
    char decision[GRAPH_ID_HEX];
    char status[32];
    char reason[REASON_MAX];
    char baseline[32];
    double speedup;  /* -1 unknown */
    double share;    /* -1 unknown */
    char bound[16];
    int emulated;
};

struct ins_row {
    char id[GRAPH_ID_HEX];
    char *text;      /* owned */
};

struct task_rows {
    struct dec_row *dec;
    size_t n_dec, cap_dec;
    struct out_row *out;
    size_t n_out, cap_out;
    struct ins_row *ins;
    size_t n_ins, cap_ins;
    size_t n_read;
};

static void task_rows_free(struct task_rows *r)
{
    for (size_t i = 0; i < r->n_ins; i++)
        free(r->ins[i].text);
    free(r->dec);
    free(r->out);
    free(r->ins);
    memset(r, 0, sizeof *r);
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, nc * size);
    if (!q)
        return KOPE_ERR_NOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
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

static void tags_join(const cJSON *body, char *dst, size_t cap)
{
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(body, "tags");
    const cJSON *t;
    size_t off = 0;
    dst[0] = '\0';
    cJSON_ArrayForEach(t, tags) {
        if (!cJSON_IsString(t))
            continue;
        int w = snprintf(dst + off, cap - off, "%s%s", off ? "," : "", t->valuestring);
        if (w < 0 || (size_t)w >= cap - off)
            break;
        off += (size_t)w;
    }
    if (!dst[0]) {
        const char *r = jstr(body, "rationale");
        one_line(dst, cap > 60 ? 60 : cap, r ? r : "untagged");
    }
}

static int rows_cb(void *vctx, const struct store_rec *sr)
{
    struct task_rows *r = vctx;
    if (r->n_read >= RETR_TASK_RECORDS_MAX)
        return 1; /* stop: enough of this task */
    r->n_read++;
    int is_dec = strcmp(sr->kind, "decision") == 0, is_out = strcmp(sr->kind, "outcome") == 0;
    int is_ins = strcmp(sr->kind, "insight") == 0;
    if (!is_dec && !is_out && !is_ins)
        return 0;
    cJSON *j = cJSON_ParseWithLength(sr->canon, sr->canon_len);
    if (!j)
        return 0; /* stored records are canonical; skip rather than fail */
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
    const cJSON *parents = cJSON_GetObjectItemCaseSensitive(j, "parents");
    const cJSON *p0 = cJSON_GetArrayItem(parents, 0);
    const char *parent = cJSON_IsString(p0) ? p0->valuestring : "";
    int rc = 0;
    if (is_dec) {
        if ((rc = grow((void **)&r->dec, &r->cap_dec, r->n_dec, sizeof *r->dec)))
            goto out;
        struct dec_row *d = &r->dec[r->n_dec++];
        memset(d, 0, sizeof *d);
        util_hex(sr->id, 32, d->id);
        snprintf(d->parent, sizeof d->parent, "%s", parent);
        tags_join(body, d->tags, sizeof d->tags);
        const char *src = jstr(body, "source");
        snprintf(d->source, sizeof d->source, "%s", src ? src : "");
        d->parent_idx = -1;
        d->out_idx = -1;
    } else if (is_out) {
        if ((rc = grow((void **)&r->out, &r->cap_out, r->n_out, sizeof *r->out)))
            goto out;
        struct out_row *o = &r->out[r->n_out++];
        memset(o, 0, sizeof *o);
        snprintf(o->decision, sizeof o->decision, "%s", parent);
        const char *s = jstr(body, "status");
        snprintf(o->status, sizeof o->status, "%s", s ? s : "unknown");
        one_line(o->reason, sizeof o->reason, jstr(body, "reason"));
        const char *b = jstr(body, "baseline");
        snprintf(o->baseline, sizeof o->baseline, "%s", b ? b : "baseline");
        const char *bd = jstr(body, "bound");
        snprintf(o->bound, sizeof o->bound, "%s", bd ? bd : "");
        o->speedup = jnum(body, "speedup", -1);
        o->share = jnum(body, "share", -1);
        o->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "emulated"));
    } else {
        const char *t = jstr(body, "text");
        if (!t)
            t = jstr(body, "summary");
        if (!t)
            goto out;
        if ((rc = grow((void **)&r->ins, &r->cap_ins, r->n_ins, sizeof *r->ins)))
            goto out;
        struct ins_row *in = &r->ins[r->n_ins];
        util_hex(sr->id, 32, in->id);
        size_t cap = 600;
        in->text = malloc(cap);
        if (!in->text) {
            rc = KOPE_ERR_NOMEM;
            goto out;
        }
        one_line(in->text, cap, t);
        r->n_ins++;
    }
out:
    cJSON_Delete(j);
    return rc;
}

/* Link decisions to parents and outcomes (records come in insertion order,
 * so a parent precedes its children). Linear passes with a small hash. */
static void rows_link(struct task_rows *r)
{
    for (size_t i = 0; i < r->n_dec; i++)
        for (size_t p = i; p-- > 0;)
            if (strcmp(r->dec[p].id, r->dec[i].parent) == 0) {
                r->dec[i].parent_idx = (int)p;
                break;
            }
    for (size_t o = 0; o < r->n_out; o++)
        for (size_t i = r->n_dec; i-- > 0;)
            if (r->dec[i].out_idx < 0 && strcmp(r->dec[i].id, r->out[o].decision) == 0) {
                r->dec[i].out_idx = (int)o;
                break;
            }
}

static int read_task(struct graph *g, const uint8_t id[32], struct task_rows *r, size_t *n_read)
{
    memset(r, 0, sizeof *r);
    int rc = store_rec_query(g->st, STORE_Q_TASK, id, 0, rows_cb, r);
    if (rc == 1)
        rc = 0;
    *n_read += r->n_read;
    if (!rc)
        rows_link(r);
    return rc;
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
                         o->emulated ? " (icount)" : "");
        if (o->share > 0 && w > 0 && (size_t)w < cap)
            snprintf(dst + w, cap - (size_t)w, ", %.0f%% of roofline", 100 * o->share);
    } else if (o->reason[0]) {
        snprintf(dst, cap, "%s: %s", o->status, o->reason);
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
        f = 0.75; /* emulated or unmeasured: only the icount/time ratio */
    if (best_share > 0 && o->share > 0 && o->share <= best_share)
        f *= 0.5; /* we are already there */
    return f;
}

static int task_items(struct graph *g, const struct retr_query *q, const char *qtarget,
                      const struct cand *c, const struct task_rows *r, struct retr_result *res,
                      size_t *cap, int want_source)
{
    int cross = strcmp(c->target, qtarget) != 0;
    int rc = 0;
    struct buf b;
    buf_init(&b, TEXT_MAX);
    char why[200], phr[REASON_MAX + 64];
    char shape[96];
    task_shape_print(&c->t, shape, sizeof shape);

    /* best passing decision */
    int best = -1;
    for (size_t i = 0; i < r->n_dec; i++) {
        int o = r->dec[i].out_idx;
        if (o < 0 || strcmp(r->out[o].status, "pass") != 0)
            continue;
        if (best < 0 || r->out[o].speedup > r->out[r->dec[best].out_idx].speedup)
            best = (int)i;
    }
    if (best >= 0) {
        const struct out_row *bo = &r->out[r->dec[best].out_idx];
        int chain[PATH_MAX_STEPS], n = 0;
        for (int d = best; d >= 0 && n < PATH_MAX_STEPS; d = r->dec[d].parent_idx)
            chain[n++] = d;
        label(&b, c, qtarget, RETR_SPEED);
        buf_printf(&b, " best path (%d step%s):", n, n == 1 ? "" : "s");
        for (int i = n; i-- > 0;) {
            int o = r->dec[chain[i]].out_idx;
            outcome_phrase(o >= 0 ? &r->out[o] : NULL, phr, sizeof phr);
            buf_printf(&b, "%s %s (%s)", i == n - 1 ? "" : " ->", r->dec[chain[i]].tags, phr);
        }
        buf_addc(&b, '\n');
        double v = RETR_W_PATH * c->sim * (cross ? RETR_CROSS_SPEED : 1) *
                   speed_factor(bo, q->best_share);
        snprintf(why, sizeof why, "best path of %s %s (%s, sim %.2f%s), %.2fx%s",
                 plat_op_name(c->t.op), shape, c->target, c->sim, cross ? ", cross-target speed" : "",
                 bo->speedup, bo->share > 0 ? "" : ", share unmeasured");
        if ((rc = item_add(res, cap, RETR_BEST_PATH, RETR_SPEED, c, r->dec[best].id, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);

        const char *src = r->dec[best].source;
        if (want_source && !cross && strncmp(src, "sha256:", 7) == 0) {
            char *text = NULL;
            size_t len = 0;
            if (graph_blob_get(g, src, &text, &len) == 0) {
                label(&b, c, qtarget, RETR_SPEED);
                buf_printf(&b, " its best kernel (%s, %s):\n```c\n", r->dec[best].tags,
                           bo->speedup > 0 ? "pass" : "pass");
                buf_add(&b, text, len > SOURCE_MAX_BYTES ? SOURCE_MAX_BYTES : len);
                if (len > SOURCE_MAX_BYTES)
                    buf_adds(&b, "\n/* ... cut ... */");
                buf_adds(&b, "\n```\n");
                free(text);
                v = RETR_W_SOURCE * c->sim * speed_factor(bo, q->best_share);
                snprintf(why, sizeof why, "best kernel of %s %s (sim %.2f), %.2fx",
                         plat_op_name(c->t.op), shape, c->sim, bo->speedup);
                if ((rc = item_add(res, cap, RETR_BEST_SOURCE, RETR_SPEED, c, r->dec[best].id, v,
                                   &b, why)))
                    goto out;
                buf_init(&b, TEXT_MAX);
            }
        }
    }

    /* distinct failures, in the order they happened */
    int n_fail = 0;
    for (size_t i = 0; i < r->n_dec && n_fail < RETR_MAX_FAILS_PER_TASK; i++) {
        int o = r->dec[i].out_idx;
        if (o < 0 || strcmp(r->out[o].status, "pass") == 0)
            continue;
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++) {
            int ok = r->dec[k].out_idx;
            dup = ok >= 0 && strcmp(r->out[ok].status, r->out[o].status) == 0 &&
                  strcmp(r->dec[k].tags, r->dec[i].tags) == 0;
        }
        if (dup)
            continue;
        n_fail++;
        outcome_phrase(&r->out[o], phr, sizeof phr);
        label(&b, c, qtarget, RETR_CORRECTNESS);
        buf_printf(&b, " tried %s -> %s\n", r->dec[i].tags, phr);
        double v = RETR_W_FAIL * c->sim * (cross ? RETR_CROSS_CORRECTNESS : 1);
        snprintf(why, sizeof why, "failure %s in %s %s (%s, sim %.2f)", r->out[o].status,
                 plat_op_name(c->t.op), shape, c->target, c->sim);
        if ((rc = item_add(res, cap, RETR_FAILURE, RETR_CORRECTNESS, c, r->dec[i].id, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);
    }

    for (size_t i = 0; i < r->n_ins; i++) {
        label(&b, c, qtarget, RETR_CORRECTNESS);
        buf_printf(&b, " insight: %s\n", r->ins[i].text);
        double v = RETR_W_INSIGHT * c->sim * (cross ? 0.6 : 1);
        snprintf(why, sizeof why, "insight on %s %s (%s, sim %.2f)", plat_op_name(c->t.op), shape,
                 c->target, c->sim);
        if ((rc = item_add(res, cap, RETR_INSIGHT, RETR_CORRECTNESS, c, r->ins[i].id, v, &b, why)))
            goto out;
        buf_init(&b, TEXT_MAX);
    }
out:
    buf_free(&b);
    return rc;
}

/* This task's attempts so far, newest last (at most OWN_MAX_ATTEMPTS). */
static int own_items(const struct task_rows *r, const uint8_t task_id[32],
                     struct retr_result *res, size_t *cap)
{
    if (r->n_dec == 0)
        return 0;
    struct buf b;
    buf_init(&b, TEXT_MAX);
    char phr[REASON_MAX + 64], why[200], hex[GRAPH_ID_HEX];
    size_t first = r->n_dec > OWN_MAX_ATTEMPTS ? r->n_dec - OWN_MAX_ATTEMPTS : 0;
    size_t n_pass = 0;
    buf_printf(&b, "This task's attempts so far (%zu, oldest first%s):\n", r->n_dec,
               first ? ", earlier ones omitted" : "");
    for (size_t i = first; i < r->n_dec; i++) {
        int o = r->dec[i].out_idx;
        outcome_phrase(o >= 0 ? &r->out[o] : NULL, phr, sizeof phr);
        n_pass += o >= 0 && strcmp(r->out[o].status, "pass") == 0;
        int par = r->dec[i].parent_idx;
        if (par >= 0)
            buf_printf(&b, "- #%zu (refines #%d) %s -> %s\n", i + 1, par + 1, r->dec[i].tags, phr);
        else
            buf_printf(&b, "- #%zu %s -> %s\n", i + 1, r->dec[i].tags, phr);
    }
    snprintf(why, sizeof why, "this task's own history: %zu attempts, %zu passed", r->n_dec, n_pass);
    util_hex(task_id, 32, hex);
    int rc = item_add(res, cap, RETR_OWN_HISTORY, RETR_CORRECTNESS, NULL, hex, RETR_W_OWN, &b, why);
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
    sc.target = q->target ? q->target : "k3";
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
    sc.cap = (size_t)(q->max_tasks > 0 ? q->max_tasks : RETR_MAX_TASKS);
    sc.top = calloc(sc.cap + 1, sizeof *sc.top);
    if (!sc.top)
        return KOPE_ERR_NOMEM;

    /* 1. candidates: the same op, then the family's other ops */
    rc = store_task_keys(g->st, plat_op_name(q->task->op), RETR_SCAN_SAME_OP, scan_cb, &sc);
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

    /* 2. lessons from each kept task; the best kernel source only from the
     * two most similar same-target tasks (sources are long) */
    int sources = 0;
    for (size_t i = 0; i < sc.n; i++) {
        struct task_rows r;
        if ((rc = read_task(g, sc.top[i].id, &r, &out->n_records_read))) {
            task_rows_free(&r);
            goto out;
        }
        out->n_tasks_read++;
        int want = sources < 2 && strcmp(sc.top[i].target, sc.target) == 0;
        size_t before = out->n;
        rc = task_items(g, q, sc.target, &sc.top[i], &r, out, &cap, want);
        for (size_t k = before; k < out->n; k++)
            sources += out->items[k].kind == RETR_BEST_SOURCE;
        task_rows_free(&r);
        if (rc)
            goto out;
    }

    /* 3. our own history */
    if (q->task_id) {
        struct task_rows r;
        if ((rc = read_task(g, q->task_id, &r, &out->n_records_read))) {
            task_rows_free(&r);
            goto out;
        }
        rc = own_items(&r, q->task_id, out, &cap);
        task_rows_free(&r);
        if (rc)
            goto out;
    }
    if (out->n)
        qsort(out->items, out->n, sizeof *out->items, item_cmp);
    rc = 0;
out:
    free(sc.top);
    if (rc)
        retr_result_free(out);
    return rc;
}

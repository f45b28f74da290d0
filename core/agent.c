/*
 * core/agent.c - the agent loop (core/agent.h): tasks, trials, records,
 * resume, and the LLM path through the durable queue.
 *
 * Reading order: the per-run state (struct run), task records, one trial
 * (evaluate -> record), the proposers (tuner, LLM via the queue), the task
 * loop, the run.
 *
 * Everything a resumed run needs is read back from the graph and the store,
 * never from memory: the trials of this run are the task's decisions whose
 * body has "run": <this run>, the tuner's order is a function of them, the
 * LLM's feedback is rebuilt from their outcomes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "core/agent.h"
#include "core/agent_int.h"
#include "core/context.h"
#include "core/err.h"
#include "core/graph.h"
#include "core/task.h"
#include "core/tuner.h"
#include "core/util.h"
#include "net/llm.h"
#include "platform/k3/k3_templates.h"
#include "store/queue.h"
#include "store/store.h"

#define FEEDBACK_MAX 4          /* earlier attempts shown to the LLM */

void agent_opts_init(struct agent_opts *o)
{
    memset(o, 0, sizeof *o);
}

void agent_summary_free(struct agent_summary *s)
{
    free(s->res);
    memset(s, 0, sizeof *s);
}

/* -------------------------------------------------------------- run state */


__attribute__((format(printf, 3, 4)))
static int fail(struct run *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->err_len, fmt, ap);
    va_end(ap);
    return rc ? rc : KOPE_ERR_INTERNAL;
}

int64_t agent_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void agent_say(struct run *r, const char *fmt, ...)
{
    if (!r->o->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (r->o->tty)
        fputs("\r\033[K", r->o->log);
    vfprintf(r->o->log, fmt, ap);
    va_end(ap);
    fflush(r->o->log);
}

static long cursor_tokens(const struct run *r)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cursor, "tokens");
    return cJSON_IsNumber(t) ? (long)t->valuedouble : 0;
}

static void cursor_add_tokens(struct run *r, long n)
{
    cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cursor, "tokens");
    if (t)
        cJSON_SetNumberValue(t, t->valuedouble + (double)n);
    else
        cJSON_AddNumberToObject(r->cursor, "tokens", (double)n);
}

static int cursor_done(const struct run *r, const char *name)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->cursor, "done"), *x;
    cJSON_ArrayForEach(x, d) if (cJSON_IsString(x) && strcmp(x->valuestring, name) == 0) return 1;
    return 0;
}

/* Write the cursor to the run row (inside the caller's transaction). */
static int cursor_save(struct run *r)
{
    if (!r->id)
        return 0;
    char *txt = cJSON_PrintUnformatted(r->cursor);
    if (!txt)
        return KOPE_ERR_NOMEM;
    int rc = store_run_set(r->g->st, r->id, NULL, txt);
    free(txt);
    return rc;
}

/* ----------------------------------------------------------- task records */

static cJSON *task_spec(const struct task_entry *te)
{
    const struct plat_task *t = &te->t;
    cJSON *b = cJSON_CreateObject(), *sh = cJSON_CreateObject(), *tol = cJSON_CreateObject();
    if (!b || !sh || !tol) {
        cJSON_Delete(b);
        cJSON_Delete(sh);
        cJSON_Delete(tol);
        return NULL;
    }
    cJSON_AddStringToObject(b, "name", t->name);
    cJSON_AddStringToObject(b, "op", plat_op_name(t->op));
    cJSON_AddStringToObject(b, "dtype", "f32");
    cJSON_AddStringToObject(b, "family", plat_family_name(t->family));
    const char *keys[6] = {"n", "rows", "cols", "m", "k", "batch"};
    uint64_t vals[6] = {t->n, t->rows, t->cols, t->m, t->k, t->batch};
    for (int i = 0; i < 6; i++) {
        if (i == 5 && t->op != PLAT_OP_GEMM && t->op != PLAT_OP_GEMM_NT)
            continue; /* batch only where the task format has it */
        if (vals[i])
            cJSON_AddNumberToObject(sh, keys[i], (double)vals[i]);
    }
    cJSON_AddItemToObject(b, "shape", sh);
    cJSON_AddNumberToObject(tol, "rtol", t->rtol);
    cJSON_AddNumberToObject(tol, "atol", t->atol);
    cJSON_AddItemToObject(b, "tolerance", tol);
    if (te->source[0])
        cJSON_AddStringToObject(b, "source", te->source);
    return b;
}

struct find_task {
    const cJSON *spec;
    const char *target;
    uint8_t id[32];
    int found;
};

static int find_task_cb(void *ctx, const struct store_rec *r)
{
    struct find_task *f = ctx;
    if (strcmp(r->target, f->target) != 0)
        return 0;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    if (!j)
        return 0;
    if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, "body"), f->spec, 1)) {
        memcpy(f->id, r->id, 32);
        f->found = 1;
    }
    cJSON_Delete(j);
    return f->found; /* the first (oldest) match: every device agrees on it */
}

/* The task record with exactly this spec on this target, added if absent. */
static int task_record(struct run *r, const struct task_entry *te, uint8_t id[32])
{
    cJSON *spec = task_spec(te);
    if (!spec)
        return KOPE_ERR_NOMEM;
    struct find_task f = {spec, r->target, {0}, 0};
    int rc = store_rec_query(r->g->st, STORE_Q_TASKS, NULL, 0, find_task_cb, &f);
    if (rc > 0)
        rc = 0;
    if (!rc && f.found)
        memcpy(id, f.id, 32);
    else if (!rc)
        rc = graph_task_add(r->g, r->target, spec, id);
    cJSON_Delete(spec);
    if (rc)
        return fail(r, rc, "task %s: cannot store its record: %s", te->t.name,
                    r->g->err[0] ? r->g->err : kope_strerror(rc));
    return 0;
}

/* A plat_task back from a task record (for replies applied outside the
 * suite that asked for them). */
int agent_task_from_record(struct graph *g, const uint8_t id[32], struct task_suite *s)
{
    char hex[GRAPH_ID_HEX], err[256];
    struct graph_rec rec;
    util_hex(id, 32, hex);
    int rc = graph_get(g, hex, &rec);
    if (rc)
        return rc;
    cJSON *suite = cJSON_CreateObject(), *tasks = cJSON_CreateArray();
    cJSON *spec = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec.json, "body"), 1);
    graph_rec_free(&rec);
    if (!suite || !tasks || !spec) {
        cJSON_Delete(suite);
        cJSON_Delete(tasks);
        cJSON_Delete(spec);
        return KOPE_ERR_NOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "family");
    cJSON_AddStringToObject(suite, "suite", "record");
    cJSON_AddItemToArray(tasks, spec);
    cJSON_AddItemToObject(suite, "tasks", tasks);
    char *txt = cJSON_PrintUnformatted(suite);
    cJSON_Delete(suite);
    if (!txt)
        return KOPE_ERR_NOMEM;
    rc = task_suite_parse(txt, strlen(txt), s, err, sizeof err);
    free(txt);
    return rc;
}

/* ----------------------------------------------------- evaluating a kernel */



static void first_line(char *out, size_t cap, const char *text)
{
    size_t n = strcspn(text, "\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, text, n);
    out[n] = '\0';
}


static int open_fast(struct run *r)
{
    if (r->p_fast)
        return 0;
    struct plat_settings s;
    char err[512];
    if (r->o->plat)
        s = *r->o->plat;
    else
        plat_settings_init(&s);
    s.flags |= PLAT_SET_NO_BASELINES;
    return platform_open(r->target, &s, &r->p_fast, err, sizeof err);
}

/* Screen, compile, verify, measure. 0 = answered (vd->pass says how), or a
 * PLAT_ERR_* when the platform itself failed. bc may be NULL. */
int agent_evaluate(struct run *r, const struct plat_task *t, const struct proposal *pr, struct verdict *vd,
                    struct base_cache *bc)
{
    int rc;
    memset(vd, 0, sizeof *vd);
    vd->plat = r->p;
    if (bc && bc->have && r->emulated && open_fast(r) == 0)
        vd->plat = r->p_fast;
    struct platform *p = vd->plat;
    if (!pr->src) {
        vd->status = "no_code";
        vd->stage = "reply";
        snprintf(vd->reason, sizeof vd->reason, "%s", pr->no_code ? pr->no_code : "no kernel in the reply");
        return 0;
    }
    vd->stage = "compile";
    if ((rc = platform_compile(p, t, pr->src, pr->len, &vd->b)))
        return rc;
    if (!vd->b.ok) {
        vd->status = plat_fail_name(vd->b.reason);
        vd->diag = vd->b.diag;
        if (vd->b.reason == PLAT_FAIL_SCREEN_REJECTED)
            snprintf(vd->reason, sizeof vd->reason, "screen [%s]: %s",
                     plat_screen_rule_name(vd->b.screen_rule), vd->b.detail);
        else
            first_line(vd->reason, sizeof vd->reason, vd->b.diag[0] ? vd->b.diag : vd->b.detail);
        return 0;
    }
    vd->stage = "verify";
    if ((rc = platform_verify(p, t, &vd->b, &vd->v)))
        return rc;
    if (!vd->v.pass) {
        vd->status = plat_fail_name(vd->v.reason);
        const char *lab = "";
        for (int i = 0; i < vd->v.n_cases; i++)
            if (!vd->v.cases[i].pass) {
                lab = vd->v.cases[i].label;
                break;
            }
        snprintf(vd->reason, sizeof vd->reason, "%s%s%s (max_abs %.3g, max_rel %.3g)", vd->v.detail,
                 lab[0] ? " at case " : "", lab, vd->v.max_abs, vd->v.max_rel);
        return 0;
    }
    vd->stage = "measure";
    if ((rc = platform_measure(p, t, &vd->b, &vd->m)))
        return rc;
    if (p == r->p_fast && vd->m.ok) {
        vd->m.n_baselines = bc->n;
        vd->m.ratio_metric[0] = '\0';
        for (int i = 0; i < bc->n; i++) {
            const char *metric = "";
            vd->m.base[i] = bc->base[i];
            vd->m.base[i].ratio = vd->m.has_icount
                                      ? plat_emulated_ratio(vd->m.vcost, vd->m.icount, bc->base[i].vcost,
                                                            bc->base[i].icount, &metric) : 0;
            plat_metric_merge(vd->m.ratio_metric, metric);
        }
    } else if (bc && vd->m.ok && vd->m.has_icount && vd->m.n_baselines) {
        bc->have = 1;
        bc->n = vd->m.n_baselines;
        memcpy(bc->base, vd->m.base, sizeof bc->base);
    }
    if (!vd->m.ok) {
        vd->status = plat_fail_name(vd->m.reason);
        snprintf(vd->reason, sizeof vd->reason, "%s", vd->m.detail);
        return 0;
    }
    vd->pass = 1;
    vd->status = "pass";
    /* speedup against the strongest same-run baseline that is claimed:
     * autovec-O3 when present, else the first with a ratio */
    int pick = -1;
    for (int i = 0; i < vd->m.n_baselines; i++)
        if (vd->m.base[i].ratio > 0 && (pick < 0 || strstr(vd->m.base[i].name, "autovec")))
            pick = i;
    if (pick >= 0) {
        vd->speedup = vd->m.base[pick].ratio;
        snprintf(vd->baseline, sizeof vd->baseline, "%s", vd->m.base[pick].name);
        vd->score = vd->speedup;
    } else {
        vd->score = vd->m.median_ns > 0 ? 1e9 / vd->m.median_ns : 0; /* time only: no claim */
    }
    snprintf(vd->reason, sizeof vd->reason, "%s%s ratio", vd->m.emulated ? "emulated: " : "native ",
             vd->m.ratio_metric[0] ? vd->m.ratio_metric : "time");
    return 0;
}

/* ------------------------------------------------------- recording a trial */

static cJSON *tags_json(const struct proposal *pr)
{
    cJSON *a = cJSON_CreateArray();
    if (!a)
        return NULL;
    cJSON_AddItemToArray(a, cJSON_CreateString(pr->proposer));
    if (pr->why)
        cJSON_AddItemToArray(a, cJSON_CreateString(pr->why));
    if (pr->label[0]) {
        /* "add LMUL=4 UNROLL=2" -> "lmul=4", "unroll=2" */
        const char *s = strchr(pr->label, ' ');
        while (s && *s) {
            s += strspn(s, " ");
            size_t n = strcspn(s, " ");
            char tag[LLM_MAX_TAG_LEN];
            if (n && n < sizeof tag) {
                for (size_t i = 0; i < n; i++)
                    tag[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
                tag[n] = '\0';
                cJSON_AddItemToArray(a, cJSON_CreateString(tag));
            }
            s += n;
        }
    }
    for (size_t i = 0; i < pr->n_tags; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(pr->tags[i]));
    return a;
}

/* One transaction: blobs, decision, outcome, cursor, queue row done. */
int agent_record_trial(struct run *r, const uint8_t task[32], int trial, const struct proposal *pr,
                        const struct verdict *vd, uint8_t dec_id[32], uint8_t out_id[32])
{
    int rc = KOPE_ERR_NOMEM;
    char ref[GRAPH_BLOB_REF], dref[GRAPH_BLOB_REF];
    cJSON *db = cJSON_CreateObject(), *ob = cJSON_CreateObject();
    if (!db || !ob)
        goto out;
    if ((rc = graph_begin(r->g)))
        goto out;
    if (pr->src) {
        if ((rc = graph_blob_put(r->g, pr->src, pr->len, ref)))
            goto rollback;
        cJSON_AddStringToObject(db, "source", ref);
    }
    cJSON_AddItemToObject(db, "tags", tags_json(pr));
    cJSON_AddStringToObject(db, "proposer", pr->proposer);
    if (pr->label[0])
        cJSON_AddStringToObject(db, "params", pr->label);
    if (pr->rationale)
        cJSON_AddStringToObject(db, "rationale", pr->rationale);
    else if (pr->why)
        cJSON_AddStringToObject(db, "rationale", pr->why);
    if (r->id)
        cJSON_AddNumberToObject(db, "run", (double)r->id);
    cJSON_AddNumberToObject(db, "trial", trial);
    if (pr->tokens_in || pr->tokens_out) {
        cJSON *tk = cJSON_AddObjectToObject(db, "tokens");
        cJSON_AddNumberToObject(tk, "in", (double)pr->tokens_in);
        cJSON_AddNumberToObject(tk, "out", (double)pr->tokens_out);
    }
    if (pr->qid)
        cJSON_AddNumberToObject(db, "queue", (double)pr->qid);
    if ((rc = graph_decision_add(r->g, task, pr->parent, r->target, db, dec_id)))
        goto rollback;

    cJSON_AddStringToObject(ob, "status", vd->status);
    cJSON_AddStringToObject(ob, "stage", vd->stage);
    cJSON_AddStringToObject(ob, "reason", vd->reason);
    if (vd->diag && vd->diag[0]) {
        if ((rc = graph_blob_put(r->g, vd->diag, strlen(vd->diag), dref)))
            goto rollback;
        cJSON_AddStringToObject(ob, "diag", dref);
    }
    /* verified only at a cut-down shape (the emulation cap): the graph's best
     * and the kernel export skip such an outcome (platform_verify says so) */
    if (vd->v.reduced_shape)
        cJSON_AddBoolToObject(ob, "reduced_shape", 1);
    if (vd->pass) {
        cJSON_AddBoolToObject(ob, "emulated", vd->m.emulated);
        if (vd->baseline[0]) {
            cJSON_AddNumberToObject(ob, "speedup", vd->speedup);
            cJSON_AddStringToObject(ob, "baseline", vd->baseline);
        }
        cJSON *ra = cJSON_AddObjectToObject(ob, "ratios");
        for (int i = 0; i < vd->m.n_baselines; i++)
            if (vd->m.base[i].ratio > 0)
                cJSON_AddNumberToObject(ra, vd->m.base[i].name, vd->m.base[i].ratio);
        if (vd->m.has_icount)
            cJSON_AddNumberToObject(ob, "icount", (double)vd->m.icount);
        if (vd->m.vcost)
            cJSON_AddNumberToObject(ob, "vcost", (double)vd->m.vcost);
        if (vd->m.ratio_metric[0])
            cJSON_AddStringToObject(ob, "metric", vd->m.ratio_metric);
        cJSON_AddNumberToObject(ob, "median_ns", vd->m.median_ns);
        if (vd->m.flops > 0) /* nominal work of the shape: the report's roofline */
            cJSON_AddNumberToObject(ob, "flops", vd->m.flops);
        if (vd->m.bytes > 0)
            cJSON_AddNumberToObject(ob, "bytes", vd->m.bytes);
        cJSON_AddNumberToObject(ob, "score", vd->score);
    }
    if ((rc = graph_outcome_add(r->g, task, dec_id, r->target, ob, out_id)))
        goto rollback;
    if (pr->qid && (rc = store_queue_done(r->g->st, pr->qid)))
        goto rollback;
    if (r->cursor && (pr->tokens_in || pr->tokens_out)) {
        cursor_add_tokens(r, pr->tokens_in + pr->tokens_out);
        if ((rc = cursor_save(r)))
            goto rollback;
    }
    rc = graph_commit(r->g);
    goto out;
rollback:
    graph_rollback(r->g);
out:
    cJSON_Delete(db);
    cJSON_Delete(ob);
    return rc;
}

/* ------------------------------------------------ this run's trials so far */

struct history {
    struct graph_tree tree;     /* the task's whole tree: every run, proposer, origin */
    int *idx;                   /* nodes of this run, in order */
    size_t n;
    int best;                   /* the task's best in the graph (graph_tree_best), -1 = none */
    int first_pass;             /* 1-based trial of this run, 0 = none */
    int best_trial;             /* trial of this run that found the best, 0 = an earlier one */
    long tokens;
};

static const cJSON *body_of(const struct graph_rec *rec, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec->json, "body"), key);
}

static int node_pass(const struct graph_node *n)
{
    const cJSON *s = n->has_outcome ? body_of(&n->out, "status") : NULL;
    return cJSON_IsString(s) && strcmp(s->valuestring, "pass") == 0;
}

/* The target's metric of a node's outcome: the same number the graph's
 * best is ranked by (core/graph.h), so the tuner climbs what is claimed. */
static double node_score(const struct graph_node *n)
{
    return n->has_outcome ? graph_outcome_rank(&n->out) : 0;
}

static void history_free(struct history *h)
{
    graph_tree_free(&h->tree);
    free(h->idx);
    memset(h, 0, sizeof *h);
}

static int history_load(struct run *r, const uint8_t task[32], struct history *h)
{
    memset(h, 0, sizeof *h);
    h->best = -1;
    int rc = graph_tree_load(r->g, task, &h->tree);
    if (rc)
        return rc;
    h->idx = calloc(h->tree.n + 1, sizeof *h->idx);
    if (!h->idx)
        return KOPE_ERR_NOMEM;
    for (size_t i = 0; i < h->tree.n; i++) {
        const struct graph_node *n = &h->tree.nodes[i];
        const cJSON *run = body_of(&n->dec, "run");
        if (!r->id || !cJSON_IsNumber(run) || (int64_t)run->valuedouble != r->id || !n->has_outcome)
            continue;
        h->idx[h->n++] = (int)i;
        const cJSON *tk = body_of(&n->dec, "tokens");
        if (cJSON_IsObject(tk)) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(tk, "in");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(tk, "out");
            h->tokens += (long)((cJSON_IsNumber(a) ? a->valuedouble : 0) + (cJSON_IsNumber(b) ? b->valuedouble : 0));
        }
        if (node_pass(n) && !h->first_pass)
            h->first_pass = (int)h->n;
    }
    /* the run starts from, and reports, the task's best in the whole graph */
    h->best = graph_tree_best(&h->tree);
    for (size_t k = 0; h->best >= 0 && k < h->n; k++)
        if (h->idx[k] == h->best)
            h->best_trial = (int)k + 1;
    return 0;
}

/* The tuner's view of the history. */
static struct tuner_trial *history_trials(const struct history *h, const struct k3_template *tp)
{
    struct tuner_trial *tt = calloc(h->n + 1, sizeof *tt);
    if (!tt)
        return NULL;
    for (size_t i = 0; i < h->n; i++) {
        const struct graph_node *n = &h->tree.nodes[h->idx[i]];
        const cJSON *lab = body_of(&n->dec, "params");
        const struct k3_template *lt = NULL;
        if (cJSON_IsString(lab) && k3_point_parse(lab->valuestring, &lt, tt[i].v) == 0 && lt == tp)
            tt[i].has_point = 1;
        tt[i].pass = node_pass(n);
        tt[i].score = node_score(n);
    }
    return tt;
}

/* ------------------------------------------------------------- the prompt */

/* A minimal prompt used while context_build (core/context.c) cannot build
 * one: the task, the best kernel and the last attempts' feedback. */
static int prompt_fallback(const struct ctx_request *rq, struct ctx_prompt *p)
{
    struct buf s, u;
    buf_init(&s, 64 * 1024);
    buf_init(&u, 1024 * 1024);
    char shape[64];
    task_shape_print(rq->task, shape, sizeof shape);
    buf_printf(&s, "You write RISC-V Vector (RVV 1.0, VLEN 256) f32 kernels in C with clang 19 "
                   "intrinsics for a SpacemiT K3. Define `kope_kernel` as the kernel ABI says; only "
                   "<stddef.h> <stdint.h> <string.h> <math.h> <riscv_vector.h> \"kernel_abi.h\" may be "
                   "included; no writable static storage, no calls outside libm.\n\n%s\n",
               LLM_REPLY_FORMAT);
    buf_printf(&u, "## Task\n%s: op %s, %s, rtol %g atol %g\n", rq->task->name, plat_op_name(rq->task->op),
               shape, rq->task->rtol, rq->task->atol);
    if (rq->best_source)
        buf_printf(&u, "\n## Current best kernel (%s)\n```c\n%s\n```\n",
                   rq->best_summary ? rq->best_summary : "", rq->best_source);
    for (size_t i = 0; i < rq->n_feedback; i++) {
        const struct ctx_feedback *f = &rq->feedback[i];
        buf_printf(&u, "\n## Attempt feedback %zu: %s %s%s%s\n", i + 1, f->stage ? f->stage : "",
                   f->status ? f->status : "", f->tags ? " tags " : "", f->tags ? f->tags : "");
        if (f->speedup > 0)
            buf_printf(&u, "speedup %.2fx vs %s%s\n", f->speedup, f->baseline ? f->baseline : "baseline",
                       f->emulated ? " (icount, emulated)" : "");
        if (f->text)
            buf_printf(&u, "%.*s\n", CTX_FEEDBACK_MAX_BYTES, f->text);
    }
    buf_printf(&u, "\nWrite a faster correct kernel.\n");
    if (buf_err(&s) || buf_err(&u)) {
        buf_free(&s);
        buf_free(&u);
        return KOPE_ERR_NOMEM;
    }
    p->system = buf_detach(&s, NULL);
    p->user = buf_detach(&u, NULL);
    p->n_tokens_raw = p->n_tokens = (strlen(p->system) + strlen(p->user)) / 4;
    return 0;
}

/* Request JSON {"system":..,"user":..,"est":N} stored as the queue's prompt blob. */
static int build_prompt(struct run *r, const struct plat_task *t, const uint8_t task[32],
                        const struct history *h, char **json)
{
    int rc;
    struct ctx_request rq;
    struct ctx_prompt p;
    struct ctx_feedback fb[FEEDBACK_MAX];
    char *fb_text[FEEDBACK_MAX] = {0};
    char *best_src = NULL, summary[160] = "";
    size_t nfb = 0;
    ctx_request_init(&rq);
    ctx_prompt_init(&p);
    rq.task = t;
    rq.task_id = task;
    rq.target = r->target;
    rq.mode = r->o->ctx_mode;
    rq.budget_tokens = r->o->ctx_budget;
    rq.endpoint = r->o->llm ? r->o->llm->base_url : NULL;
    if (h->best >= 0) {
        const struct graph_node *b = &h->tree.nodes[h->best];
        const cJSON *src = body_of(&b->dec, "source");
        size_t len;
        if (cJSON_IsString(src))
            graph_blob_get(r->g, src->valuestring, &best_src, &len);
        const cJSON *sp = body_of(&b->out, "speedup"), *bl = body_of(&b->out, "baseline");
        if (cJSON_IsNumber(sp))
            snprintf(summary, sizeof summary, "pass, %.2fx vs %s (icount when emulated)", sp->valuedouble,
                     cJSON_IsString(bl) ? bl->valuestring : "baseline");
        else
            snprintf(summary, sizeof summary, "pass");
        rq.best_source = best_src;
        rq.best_summary = summary;
        rq.parent_decision = b->dec.id;
    }
    /* feedback: the last FEEDBACK_MAX trials of this run, oldest first */
    size_t from = h->n > FEEDBACK_MAX ? h->n - FEEDBACK_MAX : 0;
    for (size_t i = from; i < h->n; i++) {
        const struct graph_node *n = &h->tree.nodes[h->idx[i]];
        struct ctx_feedback *f = &fb[nfb];
        memset(f, 0, sizeof *f);
        const cJSON *st = body_of(&n->out, "status"), *stage = body_of(&n->out, "stage");
        const cJSON *reason = body_of(&n->out, "reason"), *diag = body_of(&n->out, "diag");
        const cJSON *sp = body_of(&n->out, "speedup"), *bl = body_of(&n->out, "baseline");
        const cJSON *em = body_of(&n->out, "emulated"), *lab = body_of(&n->dec, "params");
        f->stage = cJSON_IsString(stage) ? stage->valuestring : NULL;
        f->status = cJSON_IsString(st) ? st->valuestring : NULL;
        f->tags = cJSON_IsString(lab) ? lab->valuestring : NULL;
        size_t len;
        if (cJSON_IsString(diag) && graph_blob_get(r->g, diag->valuestring, &fb_text[nfb], &len) == 0)
            f->text = fb_text[nfb];
        else
            f->text = cJSON_IsString(reason) ? reason->valuestring : NULL;
        f->speedup = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
        f->baseline = cJSON_IsString(bl) ? bl->valuestring : NULL;
        f->emulated = cJSON_IsTrue(em);
        nfb++;
    }
    rq.feedback = fb;
    rq.n_feedback = nfb;
    rc = context_build(r->g, &rq, &p);
    if (rc) { /* ACM not available (or failed): say so once per prompt, use the minimal one */
        ctx_prompt_free(&p);
        ctx_prompt_init(&p);
        rc = prompt_fallback(&rq, &p);
        if (rc)
            goto out;
    }
    cJSON *j = cJSON_CreateObject();
    if (!j) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    cJSON_AddStringToObject(j, "system", p.system);
    cJSON_AddStringToObject(j, "user", p.user);
    cJSON_AddNumberToObject(j, "est", (double)p.n_tokens);
    *json = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    rc = *json ? 0 : KOPE_ERR_NOMEM;
out:
    for (size_t i = 0; i < nfb; i++)
        free(fb_text[i]);
    free(best_src);
    ctx_prompt_free(&p);
    return rc;
}

int agent_open_platform(struct run *r)
{
    if (r->p)
        return 0;
    char err[512];
    int rc = platform_open(r->target, r->o->plat, &r->p, err, sizeof err);
    if (rc)
        return fail(r, rc, "platform %s: %s", r->target, err);
    struct plat_desc d;
    platform_describe(r->p, &d);
    r->emulated = d.emulated;
    return 0;
}

int agent_trial_count(struct run *r, const uint8_t task[32], int *n)
{
    struct history h;
    int rc = history_load(r, task, &h);
    *n = (int)h.n;
    history_free(&h);
    return rc;
}

/* --------------------------------------------------------------- one task */

static void result_fill(struct run *r, struct agent_result *res, const struct history *h)
{
    res->trials = (int)h->n;
    res->first_pass = h->first_pass;
    res->best_trial = h->best_trial;
    res->tokens = h->tokens;
    res->passed = h->best >= 0;
    res->n_ratios = 0;
    res->speedup = 0;
    res->baseline[0] = res->best_label[0] = res->best_path[0] = '\0';
    if (h->best < 0)
        return;
    const struct graph_node *b = &h->tree.nodes[h->best];
    const cJSON *sp = body_of(&b->out, "speedup"), *bl = body_of(&b->out, "baseline");
    const cJSON *em = body_of(&b->out, "emulated"), *ra = body_of(&b->out, "ratios"), *x;
    const cJSON *lab = body_of(&b->dec, "params"), *who = body_of(&b->dec, "proposer");
    res->speedup = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
    snprintf(res->baseline, sizeof res->baseline, "%s", cJSON_IsString(bl) ? bl->valuestring : "");
    res->emulated = cJSON_IsTrue(em);
    cJSON_ArrayForEach(x, ra)
    {
        if (res->n_ratios < PLAT_MAX_BASELINES && cJSON_IsNumber(x)) {
            snprintf(res->ratios[res->n_ratios].name, PLAT_NAME_MAX, "%s", x->string);
            res->ratios[res->n_ratios++].ratio = x->valuedouble;
        }
    }
    snprintf(res->best_label, sizeof res->best_label, "%s",
             cJSON_IsString(lab) ? lab->valuestring : cJSON_IsString(who) ? who->valuestring : "?");
    int path[64], n = 0;
    for (int k = h->best; k >= 0 && n < 64; k = h->tree.nodes[k].parent)
        path[n++] = k;
    size_t off = 0;
    while (n-- && off + 16 < sizeof res->best_path)
        off += (size_t)snprintf(res->best_path + off, sizeof res->best_path - off, "%.8s%s",
                                h->tree.nodes[path[n]].dec.id_hex, n ? ">" : "");
    (void)r;
}

/* The insight of a task: what won, what failed and why, citing outcomes. */
static int write_insight(struct run *r, const uint8_t task[32], const struct plat_task *t,
                         const struct history *h)
{
    uint8_t cite[16][32];
    size_t nc = 0;
    int fails[PLAT_FAIL_COUNT + 2] = {0};
    struct buf txt;
    buf_init(&txt, 8192);
    if (h->best >= 0) {
        const struct graph_node *b = &h->tree.nodes[h->best];
        const cJSON *lab = body_of(&b->dec, "params"), *sp = body_of(&b->out, "speedup");
        const cJSON *bl = body_of(&b->out, "baseline");
        memcpy(cite[nc++], b->out.id, 32);
        buf_printf(&txt, "%s: best %s", t->name, cJSON_IsString(lab) ? lab->valuestring : "llm kernel");
        if (cJSON_IsNumber(sp))
            buf_printf(&txt, " at %.2fx vs %s%s", sp->valuedouble, cJSON_IsString(bl) ? bl->valuestring : "baseline",
                       cJSON_IsTrue(body_of(&b->out, "emulated")) ? " (icount, emulated)" : "");
        if (h->best_trial)
            buf_printf(&txt, ", found at trial %d of %zu (first pass at trial %d).", h->best_trial, h->n,
                       h->first_pass);
        else
            buf_printf(&txt, ", from an earlier run in the graph (%.12s); this run's %zu trial(s) did not beat it.",
                       b->dec.id_hex, h->n);
    } else {
        buf_printf(&txt, "%s: no passing kernel in %zu trials.", t->name, h->n);
    }
    for (size_t i = 0; i < h->n; i++) {
        const struct graph_node *n = &h->tree.nodes[h->idx[i]];
        if (node_pass(n))
            continue;
        const cJSON *st = body_of(&n->out, "status"), *why = body_of(&n->out, "reason");
        const cJSON *lab = body_of(&n->dec, "params");
        if (nc < 16)
            memcpy(cite[nc++], n->out.id, 32);
        if (fails[0]++ < 4)
            buf_printf(&txt, " Failed: %s -> %s (%.120s).", cJSON_IsString(lab) ? lab->valuestring : "llm kernel",
                       cJSON_IsString(st) ? st->valuestring : "?", cJSON_IsString(why) ? why->valuestring : "");
    }
    int rc = buf_err(&txt);
    cJSON *body = cJSON_CreateObject();
    if (rc || !body) {
        rc = rc ? rc : KOPE_ERR_NOMEM;
        goto out;
    }
    cJSON_AddStringToObject(body, "text", txt.p);
    if (r->id)
        cJSON_AddNumberToObject(body, "run", (double)r->id);
    cJSON_AddNumberToObject(body, "trials", (double)h->n);
    cJSON_AddNumberToObject(body, "first_pass", h->first_pass);
    cJSON_AddNumberToObject(body, "best_trial", h->best_trial);
    cJSON_AddNumberToObject(body, "tokens", (double)h->tokens);
    if ((rc = graph_begin(r->g)))
        goto out;
    if (!nc) { /* nothing to cite: the insight hangs on the task itself */
        memcpy(cite[0], task, 32);
        nc = 1;
    }
    if ((rc = graph_insight_add(r->g, task, (const uint8_t(*)[32])cite, nc, r->target, body, NULL))) {
        graph_rollback(r->g);
        goto out;
    }
    cJSON *done = cJSON_GetObjectItemCaseSensitive(r->cursor, "done");
    if (!done)
        done = cJSON_AddArrayToObject(r->cursor, "done");
    cJSON_AddItemToArray(done, cJSON_CreateString(t->name));
    if ((rc = cursor_save(r)) || (rc = graph_checkpoint(r->g))) {
        graph_rollback(r->g);
        goto out;
    }
    rc = graph_commit(r->g);
out:
    cJSON_Delete(body);
    buf_free(&txt);
    return rc;
}

static int out_of_time(struct run *r)
{
    return r->o->time_limit_s > 0 && (double)(util_now_ns() - r->t0_ns) / 1e9 >= r->o->time_limit_s;
}

static int llm_usable(struct run *r)
{
    long cap = r->o->token_budget > 0 ? r->o->token_budget : AGENT_TOKENS_DEFAULT;
    return r->llm && cursor_tokens(r) < cap && agent_now_ms() >= r->link_retry_ms;
}

static void progress(struct run *r, size_t ti, size_t nt, const char *name, int trial, int budget,
                     const char *what, const struct verdict *vd)
{
    if (!r->o->log)
        return;
    char res[200];
    if (vd->pass && vd->baseline[0])
        snprintf(res, sizeof res, "pass %.2fx vs %s%s%s%s", vd->speedup, vd->baseline,
                 vd->m.emulated ? " (" : "", vd->m.emulated ? vd->m.ratio_metric : "", vd->m.emulated ? ")" : "");
    else if (vd->pass)
        snprintf(res, sizeof res, "pass");
    else
        snprintf(res, sizeof res, "%s: %.80s", vd->status, vd->reason);
    if (r->o->tty) {
        int w = 24, fill = (int)((double)w * (double)ti / (double)(nt ? nt : 1));
        char bar[32];
        for (int i = 0; i < w; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[w] = '\0';
        fprintf(r->o->log, "\r\033[K[%s] %zu/%zu %s %d/%d %s: %s", bar, ti + 1, nt, name, trial, budget, what, res);
        if (trial == budget)
            fputc('\n', r->o->log);
    } else {
        fprintf(r->o->log, "[%zu/%zu] %s trial %d/%d %s: %s\n", ti + 1, nt, name, trial, budget, what, res);
    }
    fflush(r->o->log);
}

static int run_task(struct run *r, const struct task_entry *te, size_t ti, size_t nt,
                    struct agent_result *res)
{
    const struct plat_task *t = &te->t;
    const struct k3_template *tp = k3_template_for(t->op);
    int budget = r->o->budget > 0 ? r->o->budget : AGENT_BUDGET_DEFAULT;
    struct tuner_prior prior;
    struct history h = {0};
    struct verdict *vd = calloc(1, sizeof *vd);
    struct base_cache bc;
    char *src = NULL;
    int rc = KOPE_ERR_NOMEM;
    memset(&bc, 0, sizeof bc);
    tuner_prior_init(&prior);
    h.best = -1;
    if (!vd)
        goto out;
    if (!r->o->no_memory && (rc = tuner_prior_load(r->g, t, r->target, &prior)))
        goto out;
    for (;;) {
        history_free(&h);
        if ((rc = history_load(r, res->task_id, &h)))
            goto out;
        if ((int)h.n >= budget || out_of_time(r))
            break;
        int trial = (int)h.n + 1;
        struct proposal pr;
        memset(&pr, 0, sizeof pr);
        pr.parent = h.best >= 0 ? h.tree.nodes[h.best].dec.id : h.n ? h.tree.nodes[h.idx[h.n - 1]].dec.id : NULL;

        /* the LLM proposes once the task has a best in the graph (from any
         * run) or this run's first trial (the tuner's safe default or the
         * target's starter) is in: from that best, or from the feedback */
        if ((h.n >= 1 || h.best >= 0) && llm_usable(r)) {
            char *req = NULL;
            char ref[GRAPH_BLOB_REF];
            uint8_t ph[32];
            int64_t qid = 0;
            if ((rc = build_prompt(r, t, res->task_id, &h, &req)))
                goto out;
            rc = graph_blob_put(r->g, req, strlen(req), ref);
            free(req);
            if (rc || (rc = util_unhex(ref + 7, ph, 32)) ||
                (rc = store_queue_push(r->g->st, res->task_id, pr.parent, ph, agent_now_ms() / 1000, &qid)))
                goto out;
            int sent = 0, applied = 0;
            if ((rc = agent_queue_pump(r, 0, &sent, &applied)))
                goto out;
            if (applied)
                continue; /* the reply was this trial (and maybe older ones) */
        }

        /* a target whose kernels the k3 templates cannot write (its ops
         * table has a starter, e.g. ascend): the starter is the offline
         * proposer's one kernel; more trials need the LLM */
        if (r->p->ops->starter) {
            if (h.n >= 1)
                break;
            size_t slen = 0;
            free(src);
            src = NULL;
            rc = platform_starter(r->p, t, &src, &slen, pr.label, sizeof pr.label);
            if (rc) {
                rc = fail(r, rc, "task %s: no starter kernel on %s: %s", t->name, r->target, r->p->err);
                goto out;
            }
            pr.proposer = "starter";
            pr.why = "starter";
            pr.src = src;
            pr.len = slen;
        } else {
            /* the tuner */
            int v[K3_PARAM_MAX];
            const char *why = NULL;
            struct tuner_trial *tt = history_trials(&h, tp);
            if (!tt) {
                rc = KOPE_ERR_NOMEM;
                goto out;
            }
            rc = tuner_next(t, tt, h.n, &prior, v, &why);
            free(tt);
            if (rc == 1) { /* every point tried: the task is as good as the tuner gets */
                rc = 0;
                break;
            }
            if (rc)
                goto out;
            pr.proposer = "tuner";
            pr.why = why;
            k3_point_label(tp, v, pr.label, sizeof pr.label);
            free(src);
            src = k3_point_source(tp, v, &pr.len);
            if (!src) {
                rc = fail(r, KOPE_ERR_NOMEM, "task %s: template source for %s", t->name, pr.label);
                goto out;
            }
            pr.src = src;
        }
        if ((rc = agent_evaluate(r, t, &pr, vd, &bc))) {
            rc = fail(r, rc, "task %s: %s", t->name, vd->plat->err);
            goto out;
        }
        uint8_t d[32], o[32];
        rc = agent_record_trial(r, res->task_id, trial, &pr, vd, d, o);
        platform_build_free(vd->plat, &vd->b);
        if (rc) {
            rc = fail(r, rc, "task %s: recording trial %d: %s", t->name, trial,
                      r->g->err[0] ? r->g->err : kope_strerror(rc));
            goto out;
        }
        progress(r, ti, nt, t->name, trial, budget, pr.label, vd);
    }
    result_fill(r, res, &h);
    if (!out_of_time(r) && !cursor_done(r, t->name)) {
        if ((rc = write_insight(r, res->task_id, t, &h)))
            goto out;
    }
    res->done = cursor_done(r, t->name);
    rc = 0;
out:
    history_free(&h);
    tuner_prior_free(&prior);
    free(vd);
    free(src);
    return rc;
}

/* ---------------------------------------------------------------- the run */

static int run_begin(struct run *r, const char *key, int *resumed)
{
    char *cur = NULL;
    int rc = r->o->fresh ? STORE_ERR_NOTFOUND : store_run_find(r->g->st, key, "running", &r->id, &cur);
    if (rc == 0) {
        r->cursor = cJSON_Parse(cur);
        free(cur);
        *resumed = 1;
        if (r->cursor)
            return 0;
    } else if (rc != STORE_ERR_NOTFOUND) {
        return fail(r, rc, "run state: %s", store_errmsg(r->g->st));
    }
    if (rc == 0) /* an unreadable cursor: abandon that run */
        store_run_set(r->g->st, r->id, "abandoned", NULL);
    *resumed = 0;
    r->cursor = cJSON_CreateObject();
    if (!r->cursor)
        return KOPE_ERR_NOMEM;
    cJSON_AddNumberToObject(r->cursor, "tokens", 0);
    cJSON_AddArrayToObject(r->cursor, "done");
    if ((rc = store_run_new(r->g->st, key, "{\"tokens\":0,\"done\":[]}", agent_now_ms() / 1000, &r->id)))
        return fail(r, rc, "run state: %s", store_errmsg(r->g->st));
    return 0;
}

static int llm_open(struct run *r)
{
    const struct llm_settings *ls = r->o->llm;
    if (r->o->offline || !ls || !ls->base_url || !ls->model)
        return 0;
    char err[256];
    int rc = llm_client_new(ls, &r->llm, err, sizeof err);
    if (rc) {
        agent_say(r, "kope run: LLM not used: %s\n", err);
        r->llm = NULL;
    }
    r->backoff_ms = AGENT_BACKOFF_MS;
    return 0;
}

int agent_run(struct graph *g, const struct agent_opts *o, struct agent_summary *out,
              char *err, size_t err_len)
{
    struct run r;
    struct task_suite s = {0};
    int rc;
    memset(&r, 0, sizeof r);
    memset(out, 0, sizeof *out);
    r.g = g;
    r.o = o;
    r.err = err;
    r.err_len = err_len;
    r.target = o->target ? o->target : "k3";
    r.t0_ns = util_now_ns();
    err[0] = '\0';
    if ((rc = task_suite_load(o->suite_path, &s, err, err_len)))
        goto out;
    size_t lo = 0, hi = s.n_tasks;
    if (o->task_name) {
        const struct task_entry *te = task_suite_find(&s, o->task_name);
        if (!te) {
            rc = fail(&r, KOPE_ERR_NOTFOUND, "no task '%s' in suite %s (see `kope tasks`)", o->task_name, s.name);
            goto out;
        }
        lo = (size_t)(te - s.tasks);
        hi = lo + 1;
    }
    out->res = calloc(hi - lo + 1, sizeof *out->res);
    if (!out->res) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    char key[PLAT_NAME_MAX * 2 + 8];
    snprintf(key, sizeof key, "%s%s%s", s.name, o->task_name ? "/" : "", o->task_name ? o->task_name : "");
    if ((rc = run_begin(&r, key, &out->resumed)))
        goto out;
    out->run = r.id;
    if ((rc = agent_open_platform(&r)) || (rc = llm_open(&r)))
        goto out;
    if (out->resumed)
        agent_say(&r, "resuming run %lld of %s (%zu task(s) done)\n", (long long)r.id, key,
            (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.cursor, "done")));
    /* replies answered before a crash are applied first (exactly once) */
    if ((rc = agent_queue_pump(&r, 0, NULL, NULL)))
        goto out;
    for (size_t i = lo; i < hi; i++) {
        struct agent_result *res = &out->res[out->n++];
        const struct plat_task *t = &s.tasks[i].t;
        snprintf(res->name, sizeof res->name, "%s", t->name);
        snprintf(res->op, sizeof res->op, "%s", plat_op_name(t->op));
        snprintf(res->family, sizeof res->family, "%s", plat_family_name(t->family));
        if ((rc = task_record(&r, &s.tasks[i], res->task_id)))
            goto out;
        if ((rc = run_task(&r, &s.tasks[i], i - lo, hi - lo, res)))
            goto out;
        out->passed += res->passed;
        out->tokens += res->tokens;
        if (out_of_time(&r)) {
            snprintf(out->stop_reason, sizeof out->stop_reason, "time limit %.0f s reached", o->time_limit_s);
            break;
        }
    }
    out->complete = out->n == hi - lo && out->n && out->res[out->n - 1].done;
    for (size_t i = 0; i < out->n; i++)
        out->complete &= out->res[i].done;
    if (out->complete && (rc = store_run_set(g->st, r.id, "done", NULL))) {
        rc = fail(&r, rc, "run state: %s", store_errmsg(g->st));
        goto out;
    }
    int64_t q = 0;
    store_queue_count(g->st, "pending", &q);
    out->queued = (long)q;
    out->llm_calls = r.calls;
    out->tokens = cursor_tokens(&r);
    rc = 0;
out:
    out->wall_s = (double)(util_now_ns() - r.t0_ns) / 1e9;
    llm_client_free(r.llm);
    platform_close(r.p_fast);
    platform_close(r.p);
    cJSON_Delete(r.cursor);
    task_suite_free(&s);
    return rc;
}

int agent_queue_flush(struct graph *g, const struct agent_opts *o, struct platform *p, int force,
                      int *sent, int *applied, char *err, size_t err_len)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.g = g;
    r.o = o;
    r.err = err;
    r.err_len = err_len;
    r.target = o->target ? o->target : "k3";
    r.p = p;
    r.t0_ns = util_now_ns();
    err[0] = '\0';
    int rc = llm_open(&r);
    if (!rc)
        rc = agent_queue_pump(&r, force, sent, applied);
    if (rc && !err[0])
        snprintf(err, err_len, "%s", g->err[0] ? g->err : kope_strerror(rc));
    llm_client_free(r.llm);
    platform_close(r.p_fast);
    if (!p)
        platform_close(r.p);
    return rc;
}

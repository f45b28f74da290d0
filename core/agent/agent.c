/*
 * core/agent/agent.c - the agent loop (core/agent/agent.h): tasks, trials, records,
 * resume, and the LLM path through the durable queue.
 *
 * Reading order: the per-run state (struct run), task records, one trial
 * (evaluate -> record), the proposers (tuner, LLM via the queue), the task
 * loop, the run.
 *
 * Everything a resumed run needs is read back from the graph and the store,
 * never from memory: the trials of this run are the task's decisions of this
 * device whose body has "run": <this run> (a peer's decisions carry the
 * peer's run numbers: experience, never our trials), the tuner's order is a
 * function of them, the LLM's feedback is rebuilt from their outcomes.
 *
 * Several kope processes may share the store. A run holds a lock for its
 * whole life ("run:N", store/lock.h), taken in the transaction that finds or
 * creates its run_state row, so a live run is never taken for an interrupted
 * one; a task being run is locked too ("task:ID"): a second `kope run` of
 * the same task is refused, a suite run skips it (and stays resumable).
 * Between trials the loop looks for SIGINT / SIGTERM (core/interrupt.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "core/agent/agent.h"
#include "core/arena.h"
#include "core/context/context.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/agent/prompt.h"
#include "core/agent/proposer.h"
#include "core/agent/pump.h"
#include "core/task/task.h"
#include "core/termsafe.h"
#include "core/agent/trial.h"
#include "core/interrupt.h"
#include "core/util.h"
#include "net/llm.h"
#include "store/lock.h"
#include "store/queue.h"
#include "store/store.h"


void agent_opts_init(struct agent_opts *o)
{
    memset(o, 0, sizeof *o);
}

void agent_summary_free(struct agent_summary *s)
{
    free(s->res);
    memset(s, 0, sizeof *s);
}

static int cursor_done(const struct run *r, const char *name)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->cursor, "done"), *x;
    cJSON_ArrayForEach(x, d) if (cJSON_IsString(x) && strcmp(x->valuestring, name) == 0) return 1;
    return 0;
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
    cJSON_AddStringToObject(b, "op", plat_task_op_name(t));
    cJSON_AddStringToObject(b, "dtype", "f32");
    cJSON_AddStringToObject(b, "family", plat_family_name(t->family));
    const char *keys[6] = {"n", "rows", "cols", "m", "k", "batch"};
    uint64_t vals[6] = {t->n, t->rows, t->cols, t->m, t->k, t->batch};
    for (int i = 0; i < 6; i++) {
        if (i == 5 && t->op != PLAT_OP_GEMM && t->op != PLAT_OP_GEMM_NT &&
            !(t->op == PLAT_OP_USER && t->family == PLAT_FAM_MATMUL))
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
    if (te->user) { /* a user's own op: the reference is part of what the task is */
        char ref[GRAPH_BLOB_REF];
        cJSON *range;
        if (graph_blob_ref(te->user->ref, te->user->ref_len, ref)) {
            cJSON_Delete(b);
            return NULL;
        }
        cJSON_AddBoolToObject(b, "user_op", 1);
        cJSON_AddStringToObject(b, "ref", ref);
        if (te->user->file[0])
            cJSON_AddStringToObject(b, "ref_file", te->user->file);
        if (te->user->in_hi > te->user->in_lo && (range = cJSON_AddArrayToObject(b, "range"))) {
            cJSON_AddItemToArray(range, cJSON_CreateNumber(te->user->in_lo));
            cJSON_AddItemToArray(range, cJSON_CreateNumber(te->user->in_hi));
        }
    }
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

/* The task record with exactly this spec on this target, added if absent
 * (not when add is 0: then *found says whether there is one). */
static int task_lookup(struct run *r, const struct task_entry *te, int add, uint8_t id[32], int *found)
{
    cJSON *spec = task_spec(te);
    if (!spec)
        return KOPE_ERR_NOMEM;
    struct find_task f = {spec, r->target, {0}, 0};
    /* adding: the search and the add in one write transaction, so two runs
     * starting at once agree on one task record (one tree) */
    int rc = add ? graph_begin(r->g) : 0;
    if (!rc && (rc = store_rec_query(r->g->st, STORE_Q_TASKS, NULL, 0, find_task_cb, &f)) > 0)
        rc = 0;
    *found = f.found;
    if (!rc && f.found)
        memcpy(id, f.id, 32);
    else if (!rc && add && te->user) /* the reference's text, for show and export */
        rc = graph_blob_put(r->g, te->user->ref, te->user->ref_len, (char[GRAPH_BLOB_REF]){0});
    if (!rc && !f.found && add)
        rc = graph_task_add(r->g, r->target, spec, id);
    if (add && r->g->in_tx) {
        if (rc)
            graph_rollback(r->g);
        else
            rc = graph_commit(r->g);
    }
    cJSON_Delete(spec);
    if (rc)
        return run_fail(r, rc, "task %s: cannot store its record: %s", te->t.name,
                    r->g->err[0] ? r->g->err : kope_strerror(rc));
    return 0;
}

static int task_record(struct run *r, const struct task_entry *te, uint8_t id[32])
{
    int found;
    return task_lookup(r, te, 1, id, &found);
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
    res->baseline[0] = res->best_label[0] = res->best_path[0] = res->not_measured[0] = '\0';
    /* no pass at the task's shape: what passed at a reduced one (under
     * emulation a large task is checked cut down) is reported as such */
    int best = h->best >= 0 ? h->best : graph_tree_best_reduced(&h->tree);
    res->reduced = h->best < 0 && best >= 0;
    if (best < 0)
        return;
    const struct graph_node *b = &h->tree.nodes[best];
    const cJSON *sp = history_body(&b->out, "speedup"), *bl = history_body(&b->out, "baseline");
    const cJSON *em = history_body(&b->out, "emulated"), *ra = history_body(&b->out, "ratios"), *x;
    const cJSON *lab = history_body(&b->dec, "params"), *who = history_body(&b->dec, "proposer");
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
    const cJSON *why = history_body(&b->out, "reason");
    if (!res->n_ratios && cJSON_IsString(why) &&
        strncmp(why->valuestring, PLAT_NOT_MEASURED, strlen(PLAT_NOT_MEASURED)) == 0)
        snprintf(res->not_measured, sizeof res->not_measured, "%s", why->valuestring);
    snprintf(res->best_label, sizeof res->best_label, "%s",
             cJSON_IsString(lab) ? lab->valuestring : cJSON_IsString(who) ? who->valuestring : "?");
    int path[64], n = 0;
    for (int k = best; k >= 0 && n < 64; k = h->tree.nodes[k].parent)
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
        const cJSON *lab = history_body(&b->dec, "params"), *sp = history_body(&b->out, "speedup");
        const cJSON *bl = history_body(&b->out, "baseline");
        memcpy(cite[nc++], b->out.id, 32);
        buf_printf(&txt, "%s: best %s", t->name, cJSON_IsString(lab) ? lab->valuestring : "llm kernel");
        if (cJSON_IsNumber(sp))
            buf_printf(&txt, " at %.2fx vs %s%s", sp->valuedouble, cJSON_IsString(bl) ? bl->valuestring : "baseline",
                       cJSON_IsTrue(history_body(&b->out, "emulated")) ? " (vcost, emulated)" : "");
        if (h->best_trial)
            buf_printf(&txt, ", found at trial %d of %zu (first pass at trial %d).", h->best_trial, h->n,
                       h->first_pass);
        else
            buf_printf(&txt, ", from an earlier run in the graph (%.12s); this run's %zu trial(s) did not beat it.",
                       b->dec.id_hex, h->n);
    } else if (graph_tree_best_reduced(&h->tree) >= 0) {
        const struct graph_node *b = &h->tree.nodes[graph_tree_best_reduced(&h->tree)];
        const cJSON *lab = history_body(&b->dec, "params");
        memcpy(cite[nc++], b->out.id, 32);
        buf_printf(&txt, "%s: verified only at a reduced shape (emulated; the full shape needs a board or "
                   "--full-shape): best there %s.", t->name, cJSON_IsString(lab) ? lab->valuestring : "llm kernel");
    } else {
        buf_printf(&txt, "%s: no passing kernel in %zu trials.", t->name, h->n);
    }
    for (size_t i = 0; i < h->n; i++) {
        const struct graph_node *n = &h->tree.nodes[h->idx[i]];
        if (history_pass(n))
            continue;
        const cJSON *st = history_body(&n->out, "status"), *why = history_body(&n->out, "reason");
        const cJSON *lab = history_body(&n->dec, "params");
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
    if ((rc = run_cursor_save(r)) || (rc = graph_checkpoint(r->g))) {
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

static void progress(struct run *r, size_t ti, size_t nt, const char *name, int trial, int budget,
                     const char *what, const struct verdict *vd)
{
    if (!r->o->log)
        return;
    char res[200];
    const char *cut = vd->v.reduced_shape ? ", verified at reduced shape only" : "";
    if (vd->pass && vd->baseline[0])
        snprintf(res, sizeof res, "pass %.2fx vs %s%s%s%s%s", vd->speedup, vd->baseline,
                 vd->m.emulated ? " (" : "", vd->m.emulated ? vd->m.ratio_metric : "", vd->m.emulated ? ")" : "",
                 cut);
    else if (vd->pass)
        snprintf(res, sizeof res, "pass%s", cut);
    else
        snprintf(res, sizeof res, "%s: %.80s", vd->status, vd->reason);
    /* the label (a seed's file name) and the reason are outside text: the
     * line goes out through termsafe, only our own \r and erase are raw */
    char line[600];
    if (r->o->tty) {
        int w = 24, fill = (int)((double)w * (double)ti / (double)(nt ? nt : 1));
        char bar[32];
        for (int i = 0; i < w; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[w] = '\0';
        snprintf(line, sizeof line, "[%s] %zu/%zu %s %d/%d %s: %s", bar, ti + 1, nt, name, trial, budget, what, res);
        fputs("\r\033[K", r->o->log);
        termsafe_fputs(line, r->o->log);
        if (trial == budget)
            fputc('\n', r->o->log);
    } else {
        snprintf(line, sizeof line, "[%zu/%zu] %s trial %d/%d %s: %s", ti + 1, nt, name, trial, budget, what, res);
        termsafe_fputs(line, r->o->log);
        fputc('\n', r->o->log);
    }
    fflush(r->o->log);
}

/* Trials until the budget: each asks the proposers in order, the first
 * that proposes makes the trial; the loop never looks at which one did. */
static int run_task(struct run *r, const struct task_entry *te, size_t ti, size_t nt,
                    struct agent_result *res)
{
    const struct plat_task *t = &te->t;
    int budget = r->o->budget > 0 ? r->o->budget : AGENT_BUDGET_DEFAULT;
    struct proposer *ps[PROPOSERS_MAX];
    size_t nps = 0;
    struct history h;
    struct verdict *vd = calloc(1, sizeof *vd);
    struct base_cache bc;
    struct arena ar; /* one iteration's allocations (core/arena.h) */
    int rc = KOPE_ERR_NOMEM;
    arena_init(&ar, AGENT_ITER_ARENA_MAX);
    memset(&bc, 0, sizeof bc);
    memset(&h, 0, sizeof h);
    h.best = -1;
    if (!vd)
        goto out;
    if ((rc = proposers_for_task(r, te, ps, &nps)))
        goto out;
    r->bc = &bc; /* the queue's replies for this task measure against it too */
    memcpy(r->bc_task, res->task_id, 32);
    /* the task's tree is read once; each trial of the loop is appended to
     * it (history_add). Only a reply the queue applied (recorded outside
     * the loop, maybe with older ones) has the tree read again. */
    int reload = 1;
    for (;;) {
        if (reload) {
            history_free(&h);
            if ((rc = history_load(r, res->task_id, &h)))
                goto out;
            reload = 0;
        }
        if (interrupt_pending()) {
            rc = run_fail(r, KOPE_ERR_INTERRUPTED, "run %lld stopped in task %s after trial %zu of %d",
                          (long long)r->id, t->name, h.n, budget);
            goto out;
        }
        if ((int)h.n >= budget || out_of_time(r))
            break;
        int trial = (int)h.n + 1;
        struct proposal pr;
        memset(&pr, 0, sizeof pr);
        pr.parent = h.best >= 0 ? h.tree.nodes[h.best].dec.id : h.n ? h.tree.nodes[h.idx[h.n - 1]].dec.id : NULL;
        arena_reset(&ar); /* the previous iteration's proposal is recorded: free it all */
        struct proposer_ctx c = {r, t, res->task_id, &h, &ar};
        int got = PROPOSE_EXHAUSTED;
        size_t k;
        for (k = 0; k < nps; k++) {
            if (ps[k]->exhausted)
                continue;
            got = ps[k]->propose(ps[k], &c, &pr);
            if (got < 0) {
                rc = got;
                if (!r->err[0])
                    run_fail(r, rc, "task %s: proposer %s: %s", t->name, ps[k]->name, kope_strerror(rc));
                goto out;
            }
            if (got == PROPOSE_EXHAUSTED)
                ps[k]->exhausted = 1;
            if (got == PROPOSE_OK || got == PROPOSE_RECORDED)
                break;
        }
        if (got == PROPOSE_RECORDED) {
            reload = 1; /* the trial is in the graph (and maybe older ones) */
            continue;
        }
        if (got != PROPOSE_OK)
            break;    /* nobody has anything new for this task */
        if (!pr.proposer)
            pr.proposer = ps[k]->name;
        if ((rc = trial_run(r, res->task_id, t, trial, &pr, &bc, vd)) == KOPE_ERR_INTERRUPTED) {
            run_fail(r, rc, "run %lld stopped in task %s after trial %zu of %d (trial %d, in progress, was "
                     "not recorded: it is redone on resume)", (long long)r->id, t->name, h.n, budget, trial);
            goto out;
        }
        if (rc || (rc = history_add(r, &h, vd)))
            goto out;
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
    arena_free(&ar);
    r->bc = NULL;
    while (nps)
        proposer_free(ps[--nps]);
    history_free(&h);
    free(vd);
    return rc;
}

/* ---------------------------------------------------------------- the run */

/* The run_state key of a suite (+ one task): what `kope run` resumes by. */
static void run_key(const struct task_suite *s, const char *task_name, char *key, size_t cap)
{
    snprintf(key, cap, "%s%s%s", s->name, task_name ? "/" : "", task_name ? task_name : "");
}

static void run_lock_name(int64_t id, char *name, size_t cap)
{
    snprintf(name, cap, "run:%lld", (long long)id);
}

/* The run to resume (the newest "running" row of key whose lock is free: its
 * process is gone) or a new one, locked for this process's life. Found,
 * created and locked in one write transaction: another process starting
 * at the same moment sees the row only once its lock is held. A running
 * row whose lock is held belongs to a live run: KOPE_ERR_IN_USE. */
static int run_begin(struct run *r, const char *key, int *resumed)
{
    char *cur = NULL, name[48];
    long holder = 0;
    int rc = graph_begin(r->g);
    if (rc)
        return run_fail(r, rc, "run state: %s", r->g->err);
    rc = r->o->fresh ? STORE_ERR_NOTFOUND : store_run_find(r->g->st, key, "running", &r->id, &cur);
    if (rc == 0) {
        run_lock_name(r->id, name, sizeof name);
        if ((rc = store_lock_try(r->g->st, name, &holder)) == STORE_ERR_LOCKED) {
            free(cur);
            rc = run_fail(r, KOPE_ERR_IN_USE, "%s is being run by pid %ld (run %lld)", key, holder, (long long)r->id);
            r->id = 0;
            goto out;
        }
        if (rc) {
            free(cur);
            rc = run_fail(r, rc, "run lock: %s", store_errmsg(r->g->st));
            r->id = 0;
            goto out;
        }
        r->cursor = cJSON_Parse(cur);
        free(cur);
        *resumed = 1;
        if (r->cursor)
            goto out;
        /* an unreadable cursor: abandon that run */
        store_lock_release(r->g->st, name);
        if ((rc = store_run_set(r->g->st, r->id, "abandoned", NULL)))
            goto out;
    } else if (rc != STORE_ERR_NOTFOUND) {
        rc = run_fail(r, rc, "run state: %s", store_errmsg(r->g->st));
        goto out;
    }
    *resumed = 0;
    r->cursor = cJSON_CreateObject();
    if (!r->cursor) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    cJSON_AddNumberToObject(r->cursor, "tokens", 0);
    cJSON_AddArrayToObject(r->cursor, "done");
    if ((rc = store_run_new(r->g->st, key, "{\"tokens\":0,\"done\":[]}", run_now_ms() / 1000, &r->id))) {
        rc = run_fail(r, rc, "run state: %s", store_errmsg(r->g->st));
        goto out;
    }
    run_lock_name(r->id, name, sizeof name);
    if ((rc = store_lock_try(r->g->st, name, &holder)))
        rc = run_fail(r, rc == STORE_ERR_LOCKED ? KOPE_ERR_IN_USE : rc, "run lock: %s", store_errmsg(r->g->st));
out:
    if (rc) {
        graph_rollback(r->g);
        if (r->id) {
            run_lock_name(r->id, name, sizeof name);
            store_lock_release(r->g->st, name);
        }
        r->id = 0;
        return rc;
    }
    if ((rc = graph_commit(r->g))) {
        run_lock_name(r->id, name, sizeof name);
        store_lock_release(r->g->st, name);
        r->id = 0;
        return run_fail(r, rc, "run state: %s", r->g->err);
    }
    return 0;
}

/* The lock of a task for this run: 0 (ours now), KOPE_ERR_IN_USE with the
 * holder's pid in r->err, or a store code. */
static int task_claim(struct run *r, const struct task_entry *te, const uint8_t id[32], char *name, size_t cap)
{
    char hex[GRAPH_ID_HEX];
    long holder = 0;
    util_hex(id, 32, hex);
    snprintf(name, cap, "task:%s", hex);
    int rc = store_lock_try(r->g->st, name, &holder);
    if (rc == STORE_ERR_LOCKED)
        return run_fail(r, KOPE_ERR_IN_USE, "task %s is being run by pid %ld", te->t.name, holder);
    if (rc)
        return run_fail(r, rc, "task %s: lock: %s", te->t.name, store_errmsg(r->g->st));
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
        run_say(r, "kope run: LLM not used: %s\n", err);
        r->llm = NULL;
    }
    r->backoff_ms = agent_backoff_first(r->o);
    return 0;
}

int agent_run(struct graph *g, const struct agent_opts *o, struct agent_summary *out,
              char *err, size_t err_len)
{
    struct run r;
    struct task_suite s = {0};
    char one_lock[80] = "", run_lock[48] = ""; /* the locks this run holds (store/lock.h) */
    int rc;
    memset(&r, 0, sizeof r);
    memset(out, 0, sizeof *out);
    r.g = g;
    r.o = o;
    r.err = err;
    r.err_len = err_len;
    r.target = o->target ? o->target : PLAT_DEFAULT_TARGET;
    r.t0_ns = util_now_ns();
    err[0] = '\0';
    if ((rc = task_suite_load(o->suite_path, &s, err, err_len)))
        goto out;
    size_t lo = 0, hi = s.n_tasks;
    if (o->task_name) {
        const struct task_entry *te = task_suite_find(&s, o->task_name);
        if (!te) {
            const char *near = task_suite_near(&s, o->task_name);
            rc = run_fail(&r, KOPE_ERR_NOTFOUND, "no task '%s' in suite %s%s%s%s (see `kope tasks`)", o->task_name,
                          s.name, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
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
    /* a user op's reference is checked on its own before anything of the
     * run is kept: a bad one is the user's input error, not an outcome */
    for (size_t i = lo; i < hi; i++) {
        if (!s.tasks[i].user)
            continue;
        if ((rc = run_open_platform(&r)))
            goto out;
        if ((rc = task_ref_check(r.p, &s.tasks[i], err, err_len)))
            goto out;
    }
    char key[PLAT_NAME_MAX * 2 + 8];
    run_key(&s, o->task_name, key, sizeof key);
    if (o->task_name) {
        /* one task: another live run on it refuses this one before anything
         * of this run is written */
        uint8_t id[32];
        if ((rc = task_record(&r, &s.tasks[lo], id)) ||
            (rc = task_claim(&r, &s.tasks[lo], id, one_lock, sizeof one_lock)))
            goto out;
    }
    if ((rc = run_begin(&r, key, &out->resumed)))
        goto out;
    run_lock_name(r.id, run_lock, sizeof run_lock);
    out->run = r.id;
    if ((rc = run_open_platform(&r)) || (rc = llm_open(&r)))
        goto out;
    if (out->resumed)
        run_say(&r, "resuming run %lld of %s (%zu task(s) done)\n", (long long)r.id, key,
            (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.cursor, "done")));
    /* replies answered before a crash are applied first (exactly once) */
    if ((rc = queue_pump(&r, 0, NULL, NULL, NULL, NULL)))
        goto out;
    for (size_t i = lo; i < hi; i++) {
        struct agent_result *res = &out->res[out->n++];
        const struct plat_task *t = &s.tasks[i].t;
        snprintf(res->name, sizeof res->name, "%s", t->name);
        snprintf(res->op, sizeof res->op, "%s", plat_task_op_name(t));
        snprintf(res->family, sizeof res->family, "%s", plat_family_name(t->family));
        if ((rc = task_record(&r, &s.tasks[i], res->task_id)))
            goto out;
        char task_lock[80];
        if (!o->task_name && (rc = task_claim(&r, &s.tasks[i], res->task_id, task_lock, sizeof task_lock))) {
            if (rc != KOPE_ERR_IN_USE)
                goto out;
            /* another live run works on it: this run leaves it and stays open */
            run_say(&r, "[%zu/%zu] %s: skipped: %s; this run stays open (`kope run` again resumes it)\n",
                    i - lo + 1, hi - lo, t->name, err);
            err[0] = '\0';
            continue;
        }
        rc = run_task(&r, &s.tasks[i], i - lo, hi - lo, res);
        if (!o->task_name)
            store_lock_release(g->st, task_lock);
        if (rc)
            goto out;
        out->passed += res->passed;
        out->reduced += res->reduced;
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
        rc = run_fail(&r, rc, "run state: %s", store_errmsg(g->st));
        goto out;
    }
    int64_t q = 0;
    store_queue_count(g->st, "pending", &q);
    out->queued = (long)q;
    out->llm_calls = r.calls;
    out->tokens = run_tokens(&r);
    rc = 0;
out:
    out->wall_s = (double)(util_now_ns() - r.t0_ns) / 1e9;
    llm_client_free(r.llm);
    platform_close(r.p_fast); /* removes their work folders, interrupted or not */
    platform_close(r.p);
    if (run_lock[0])
        store_lock_release(g->st, run_lock);
    if (one_lock[0])
        store_lock_release(g->st, one_lock);
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
    r.target = o->target ? o->target : PLAT_DEFAULT_TARGET;
    r.p = p;
    r.t0_ns = util_now_ns();
    err[0] = '\0';
    int rc = llm_open(&r);
    if (!rc)
        rc = queue_pump(&r, force, NULL, NULL, sent, applied);
    if (rc && !err[0])
        snprintf(err, err_len, "%s", g->err[0] ? g->err : kope_strerror(rc));
    llm_client_free(r.llm);
    platform_close(r.p_fast);
    if (!p)
        platform_close(r.p);
    return rc;
}

/* The prompt the next `kope run --task` would send: the same builder
 * (core/agent/prompt.c) over the same inputs - the target and options of o, the
 * task's best in the graph, and as feedback the trials of the run that
 * would be resumed (`kope run --suite S --task T`, else `kope run --suite
 * S`), none when the next run is a new one. Read-only. */
int agent_prompt_next(struct graph *g, const struct agent_opts *o, struct ctx_prompt *p, struct agent_next *nx,
                      char *err, size_t err_len)
{
    struct run r;
    struct task_suite s = {0};
    struct history h;
    int rc;
    memset(&r, 0, sizeof r);
    memset(&h, 0, sizeof h);
    memset(nx, 0, sizeof *nx);
    h.best = -1;
    r.g = g;
    r.o = o;
    r.err = err;
    r.err_len = err_len;
    r.target = o->target ? o->target : PLAT_DEFAULT_TARGET;
    err[0] = '\0';
    if ((rc = task_suite_load(o->suite_path, &s, err, err_len)))
        goto out;
    const struct task_entry *te = o->task_name ? task_suite_find(&s, o->task_name) : NULL;
    if (!te) {
        const char *near = o->task_name ? task_suite_near(&s, o->task_name) : NULL;
        rc = run_fail(&r, KOPE_ERR_NOTFOUND, "no task '%s' in suite %s%s%s%s (see `kope tasks`)",
                      o->task_name ? o->task_name : "", s.name, near ? " (did you mean '" : "", near ? near : "",
                      near ? "'?)" : "");
        goto out;
    }
    /* the run the next `kope run` resumes, by its key; 0 = a new run */
    char key[PLAT_NAME_MAX * 2 + 8], *cur = NULL;
    for (int whole = 0; whole < 2 && !r.id; whole++) {
        run_key(&s, whole ? NULL : o->task_name, key, sizeof key);
        rc = o->fresh ? STORE_ERR_NOTFOUND : store_run_find(g->st, key, "running", &r.id, &cur);
        free(cur);
        cur = NULL;
        if (rc && rc != STORE_ERR_NOTFOUND) {
            rc = run_fail(&r, rc, "run state: %s", store_errmsg(g->st));
            goto out;
        }
        if (!rc)
            snprintf(nx->run_key, sizeof nx->run_key, "%s", key);
    }
    nx->run = r.id;
    uint8_t id[32];
    int found = 0;
    if ((rc = task_lookup(&r, te, 0, id, &found)))
        goto out;
    if (found) {
        if ((rc = history_load(&r, id, &h)))
            goto out;
        nx->decisions = h.tree.n;
        memcpy(nx->task_id, id, 32);
    }
    nx->has_task = found;
    nx->trials = h.n;
    nx->has_best = h.best >= 0;
    if ((rc = prompt_make(&r, &te->t, found ? id : NULL, &h, p)))
        run_fail(&r, rc, "%s", p->err[0] ? p->err : kope_strerror(rc));
out:
    history_free(&h);
    task_suite_free(&s);
    return rc;
}

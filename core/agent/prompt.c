/*
 * core/agent/prompt.c - the prompt the LLM proposer queues (core/agent/prompt.h): Active
 * Context Management's prompt (core/context/context.h) for the task, its best in
 * the graph and this run's latest feedback; a minimal prompt while ACM
 * cannot build one.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/agent/bestpeer.h"
#include "core/buf.h"
#include "core/context/context.h"
#include "core/err.h"
#include "core/secret.h"
#include "core/graph/graph.h"
#include "core/agent/prompt.h"
#include "core/context/reply.h"
#include "core/task/task.h"
#include "core/agent/trial.h"
#include "net/llm.h"

/* A minimal prompt used while context_build (core/context/context.c) cannot build
 * one: the task, the best kernel and the last attempts' feedback. */
static int prompt_fallback(const struct ctx_request *rq, struct ctx_prompt *p)
{
    struct buf s, u;
    buf_init(&s, 64 * 1024);
    buf_init(&u, 1024 * 1024);
    char shape[64];
    task_shape_print(rq->task, shape, sizeof shape);
    /* the target's contract here too (platform_ops.prompt) */
    const struct plat_prompt *pc = platform_prompt(rq->target);
    char fmt[REPLY_FORMAT_MAX], judging[4096] = "";
    reply_format(pc->lang, fmt, sizeof fmt);
    if (pc->judging)
        pc->judging(rq->probe, judging, sizeof judging);
    buf_printf(&s, "You optimize one compute kernel for the %s target (%s). %s\n\n%s%s\n", rq->target, pc->about,
               pc->contract, judging, fmt);
    buf_printf(&u, "## Task\n%s: op %s, %s, rtol %g atol %g\nSignature: %s\n", rq->task->name,
               plat_task_op_name(rq->task), shape, rq->task->rtol, rq->task->atol,
               pc->signature(rq->task->family));
    /* sources are candidate text: fenced so that no line of theirs closes
     * the fence (core/buf.h buf_fence_open) */
    if (rq->task->op == PLAT_OP_USER && rq->task->user && rq->task->user->ref) {
        const char *ref = rq->task->user->ref;
        size_t rl = strlen(ref) > 12 * 1024 ? 12 * 1024 : strlen(ref);
        buf_adds(&u, "A user's own op: it computes what this reference does (plain C, the judge's answer):\n");
        size_t fence = buf_fence_open(&u, ref, rl, "c");
        buf_add(&u, ref, rl);
        buf_addc(&u, '\n');
        buf_fence_close(&u, fence);
    }
    if (rq->best_source) {
        buf_printf(&u, "\n## Current best kernel (%s)\n", rq->best_summary ? rq->best_summary : "");
        size_t fence = buf_fence_open(&u, rq->best_source, strlen(rq->best_source), pc->lang);
        buf_printf(&u, "%s\n", rq->best_source);
        buf_fence_close(&u, fence);
    }
    for (size_t i = 0; i < rq->n_feedback; i++) {
        const struct ctx_feedback *f = &rq->feedback[i];
        buf_printf(&u, "\n## Attempt feedback %zu: %s %s%s%s\n", i + 1, f->stage ? f->stage : "",
                   f->status ? f->status : "", f->tags ? " tags " : "", f->tags ? f->tags : "");
        if (f->speedup > 0)
            buf_printf(&u, "speedup %.2fx vs %s, %.2fx vs the best same-run peer %s%s\n", f->speedup,
                       f->baseline ? f->baseline : "baseline", f->peer ? f->peer_ratio : f->speedup,
                       f->peer ? f->peer : "(none other)", f->emulated ? " (vcost, emulated)" : "");
        if (f->taken)
            buf_printf(&u, "From your reply kope %s.\n", f->taken);
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

/* The best same-run peer among an outcome's "ratios" (core/agent/bestpeer.h):
 * its name (borrowed from the record) and ratio, or NULL. */
static const char *peer_of(const cJSON *ratios, double *ratio)
{
    double v[PLAT_MAX_BASELINES];
    const char *name[PLAT_MAX_BASELINES];
    int n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, ratios)
    {
        if (n < PLAT_MAX_BASELINES && cJSON_IsNumber(x) && x->string) {
            name[n] = x->string;
            v[n++] = x->valuedouble;
        }
    }
    int b = bestpeer_pick(v, n);
    *ratio = b >= 0 ? v[b] : 0;
    return b >= 0 ? name[b] : NULL;
}

int prompt_make(struct run *r, const struct plat_task *t, const uint8_t *task, const struct history *h,
                struct ctx_prompt *out)
{
    int rc;
    struct ctx_request rq;
    struct ctx_prompt p;
    struct ctx_feedback fb[PROMPT_FEEDBACK_MAX];
    char *fb_text[PROMPT_FEEDBACK_MAX] = {0}, *failed_src = NULL;
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
        const cJSON *src = history_body(&b->dec, "source");
        size_t len;
        if (cJSON_IsString(src))
            graph_blob_get(r->g, src->valuestring, &best_src, &len);
        const cJSON *sp = history_body(&b->out, "speedup"), *bl = history_body(&b->out, "baseline");
        const cJSON *met = history_body(&b->out, "metric");
        double pr_ratio;
        const char *peer = peer_of(history_body(&b->out, "ratios"), &pr_ratio);
        char peer_txt[96] = "";
        if (peer && !(cJSON_IsString(bl) && strcmp(peer, bl->valuestring) == 0))
            snprintf(peer_txt, sizeof peer_txt, ", %.2fx vs the best same-run peer %.40s", pr_ratio, peer);
        else if (peer)
            snprintf(peer_txt, sizeof peer_txt, " (the best same-run peer)");
        if (cJSON_IsNumber(sp))
            snprintf(summary, sizeof summary, "pass, %.2fx vs %s%s%s%s%s", sp->valuedouble,
                     cJSON_IsString(bl) ? bl->valuestring : "baseline", peer_txt,
                     cJSON_IsTrue(history_body(&b->out, "emulated")) ? " (emulated, by " : "",
                     cJSON_IsTrue(history_body(&b->out, "emulated"))
                         ? (cJSON_IsString(met) ? met->valuestring : "icount") : "",
                     cJSON_IsTrue(history_body(&b->out, "emulated")) ? ")" : "");
        else
            snprintf(summary, sizeof summary, "pass");
        rq.best_source = best_src;
        rq.best_summary = summary;
        rq.parent_decision = b->dec.id;
    }
    /* feedback: the last PROMPT_FEEDBACK_MAX trials of this run, oldest first */
    size_t from = h->n > PROMPT_FEEDBACK_MAX ? h->n - PROMPT_FEEDBACK_MAX : 0;
    for (size_t i = from; i < h->n; i++) {
        const struct graph_node *n = &h->tree.nodes[h->idx[i]];
        struct ctx_feedback *f = &fb[nfb];
        memset(f, 0, sizeof *f);
        const cJSON *st = history_body(&n->out, "status"), *stage = history_body(&n->out, "stage");
        const cJSON *reason = history_body(&n->out, "reason"), *diag = history_body(&n->out, "diag");
        const cJSON *sp = history_body(&n->out, "speedup"), *bl = history_body(&n->out, "baseline");
        const cJSON *em = history_body(&n->out, "emulated"), *lab = history_body(&n->dec, "params");
        const cJSON *taken = history_body(&n->dec, "taken");
        f->stage = cJSON_IsString(stage) ? stage->valuestring : NULL;
        f->status = cJSON_IsString(st) ? st->valuestring : NULL;
        f->tags = cJSON_IsString(lab) ? lab->valuestring : NULL;
        f->taken = cJSON_IsString(taken) ? taken->valuestring : NULL;
        size_t len;
        if (cJSON_IsString(diag) && graph_blob_get(r->g, diag->valuestring, &fb_text[nfb], &len) == 0)
            f->text = fb_text[nfb];
        else
            f->text = cJSON_IsString(reason) ? reason->valuestring : NULL;
        f->speedup = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
        f->baseline = cJSON_IsString(bl) ? bl->valuestring : NULL;
        f->emulated = cJSON_IsTrue(em);
        f->peer = peer_of(history_body(&n->out, "ratios"), &f->peer_ratio);
        /* the latest attempt's kernel when it was judged and failed: the
         * prompt shows what failed (its diff against the best) */
        const cJSON *src = history_body(&n->dec, "source");
        if (i + 1 == h->n && cJSON_IsString(src) && f->status && strcmp(f->status, "pass") != 0 &&
            strcmp(f->status, "duplicate") != 0 && graph_blob_get(r->g, src->valuestring, &failed_src, &len) == 0)
            f->source = failed_src;
        nfb++;
    }
    rq.feedback = fb;
    rq.n_feedback = nfb;
    rc = context_build(r->g, &rq, &p);
    if (rc == KOPE_ERR_SECRET) { /* refused, not failed: no other prompt either */
        run_say(r, "  llm: %s\n", p.err);
        goto out;
    }
    if (rc) { /* ACM not available (or failed): say so once per prompt, use the minimal one */
        ctx_prompt_free(&p);
        ctx_prompt_init(&p);
        rc = prompt_fallback(&rq, &p);
        if (rc)
            goto out;
        /* the last line for the minimal prompt too (core/secret.h) */
        const char *what = secret_find(p.system, strlen(p.system));
        if (!what)
            what = secret_find(p.user, strlen(p.user));
        if (what) {
            run_say(r, "  llm: the prompt would carry %s: refused, nothing sent\n", what);
            rc = KOPE_ERR_SECRET;
            goto out;
        }
    }
    *out = p;
    ctx_prompt_init(&p);
out:
    for (size_t i = 0; i < nfb; i++)
        free(fb_text[i]);
    free(failed_src);
    free(best_src);
    ctx_prompt_free(&p);
    return rc;
}

int prompt_build(struct run *r, const struct plat_task *t, const uint8_t task[32], const struct history *h,
                 char **json, long *est)
{
    struct ctx_prompt p;
    ctx_prompt_init(&p);
    int rc = prompt_make(r, t, task, h, &p);
    if (rc)
        goto out;
    cJSON *j = cJSON_CreateObject();
    if (!j) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    cJSON_AddStringToObject(j, "system", p.system);
    cJSON_AddStringToObject(j, "user", p.user);
    cJSON_AddNumberToObject(j, "est", (double)p.n_tokens);
    /* the run that asks: a reply applied later (`kope queue flush`) is that
     * run's trial and counts toward its tokens (core/agent/queue.c). Not sent. */
    if (r->id)
        cJSON_AddNumberToObject(j, "run", (double)r->id);
    *est = (long)p.n_tokens;
    *json = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    rc = *json ? 0 : KOPE_ERR_NOMEM;
out:
    ctx_prompt_free(&p);
    return rc;
}

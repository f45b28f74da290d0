/*
 * core/agent/pump.c - the durable LLM call queue's moves (store/queue.h holds the
 * rows): send a pending call, apply an answered one, pump both.
 *
 * Every LLM call of the agent is a queue row before it is sent, so a live
 * link and a dead one take the same path:
 *   pending --send ok--> sent (reply stored with the row, one transaction)
 *   pending --link down--> pending (tries+1, next_try = now + backoff)
 *   pending --final error (401, 404, bad certificate)--> failed, LLM off
 *   sent --apply--> done, in the transaction that records the decision and
 *                   outcome (core/agent/trial.c trial_run)
 * A kill anywhere leaves a row pending (sent again later) or sent (applied
 * later, not asked again): each call is applied exactly once.
 *
 * The rows are shared by every kope process on the store (two runs on
 * different tasks, a `kope queue flush`): a row is sent or applied only by
 * the process holding its lock ("queue:QID", store/lock.h), which reads the
 * row again once it holds it; a row another process moved meanwhile is left
 * alone, so no process fails because another got there first.
 */
#include "core/agent/pump.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/secret.h"
#include "core/graph/graph.h"
#include "core/context/reply.h"
#include "core/context/tokens.h"
#include "core/agent/trial.h"
#include "core/util.h"
#include "net/llm.h"
#include "store/lock.h"
#include "store/queue.h"
#include "store/store.h"

int queue_send(struct run *r, const struct store_queue_row *row)
{
    char *req = NULL, *body = NULL;
    size_t len;
    char hex[GRAPH_ID_HEX];
    int rc;
    struct llm_reply rep;
    llm_reply_init(&rep);
    util_hex(row->prompt, 32, hex);
    if ((rc = graph_blob_get(r->g, hex, &req, &len)))
        goto out;
    cJSON *j = cJSON_Parse(req);
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(j, "system");
    const cJSON *usr = cJSON_GetObjectItemCaseSensitive(j, "user");
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(j, "est");
    if (!cJSON_IsString(sys) || !cJSON_IsString(usr)) {
        /* our own row is broken, not the link: drop it (keeping why) and
         * let the pump go on with the next */
        cJSON_Delete(j);
        run_say(r, "  llm: call %lld has a malformed prompt: dropped\n", (long long)row->qid);
        store_queue_retry(r->g->st, row->qid, 0, "malformed prompt (not {system, user}): dropped");
        rc = store_queue_drop(r->g->st, row->qid);
        if (!rc)
            rc = 2;
        goto out;
    }
    struct llm_message msgs[2] = {{"system", sys->valuestring}, {"user", usr->valuestring}};
    long est_in = cJSON_IsNumber(est) ? (long)est->valuedouble : 0;
    /* our raw estimate of this prompt (= ctx_prompt.n_tokens_raw), for calibration */
    size_t n_raw = tokens_estimate_str(sys->valuestring) + tokens_estimate_str(usr->valuestring);
    rc = llm_chat(r->llm, msgs, 2, &rep);
    cJSON_Delete(j);
    /* an endpoint's error text can quote the key it was sent: redacted
     * before it is printed or stored with the queued call (core/secret.h) */
    secret_redact(rep.error, sizeof rep.error);
    if (rc) {
        if (net_err_retryable(rc)) {
            int64_t next = run_now_ms() + r->backoff_ms;
            r->link_retry_ms = next;
            r->backoff_ms = r->backoff_ms * 2 > AGENT_BACKOFF_MAX_MS ? AGENT_BACKOFF_MAX_MS : r->backoff_ms * 2;
            run_say(r, "  llm: link down (%s); call %lld stays queued, tuner carries on\n", rep.error,
                (long long)row->qid);
            rc = store_queue_retry(r->g->st, row->qid, next, rep.error);
            goto out;
        }
        run_say(r, "  llm: %s: LLM disabled for this run (call %lld dropped)\n", rep.error, (long long)row->qid);
        llm_client_free(r->llm);
        r->llm = NULL;
        store_queue_retry(r->g->st, row->qid, 0, rep.error);
        rc = store_queue_drop(r->g->st, row->qid);
        goto out;
    }
    r->backoff_ms = agent_backoff_first(r->o);
    r->link_retry_ms = 0;
    r->calls++;
    /* the endpoint's own count calibrates our estimate for it (core/context/tokens.h);
     * a failure to store the factor costs accuracy only, so the call goes on */
    if (rep.n_tokens_in > 0 && r->o->llm && r->o->llm->base_url &&
        tokens_calibrate(r->g->st, r->o->llm->base_url, n_raw, rep.n_tokens_in))
        run_say(r, "  llm: could not store the token calibration: %s\n", store_errmsg(r->g->st));
    /* keep what the reply means, not the transport: content and usage */
    cJSON *kept = cJSON_CreateObject();
    if (!kept) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    cJSON_AddStringToObject(kept, "content", rep.content ? rep.content : "");
    /* why the reply ended and what else it held: a cut or reasoning-only
     * reply is its own outcome, with its numbers (queue_apply) */
    if (rep.finish_reason)
        cJSON_AddStringToObject(kept, "finish_reason", rep.finish_reason);
    cJSON_AddNumberToObject(kept, "reasoning_bytes", (double)(rep.reasoning ? strlen(rep.reasoning) : 0));
    if (r->o->llm && r->o->llm->max_tokens > 0)
        cJSON_AddNumberToObject(kept, "max_tokens", (double)r->o->llm->max_tokens);
    cJSON_AddNumberToObject(kept, "tokens_in", (double)(rep.n_tokens_in >= 0 ? rep.n_tokens_in : est_in));
    cJSON_AddNumberToObject(kept, "tokens_out",
                            (double)(rep.n_tokens_out >= 0 ? rep.n_tokens_out
                                                           : (long)(rep.content ? strlen(rep.content) / 4 : 0)));
    body = cJSON_PrintUnformatted(kept);
    cJSON_Delete(kept);
    if (!body) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    char ref[GRAPH_BLOB_REF];
    uint8_t h[32];
    if ((rc = graph_begin(r->g)))
        goto out;
    if ((rc = graph_blob_put(r->g, body, strlen(body), ref)) || (rc = util_unhex(ref + 7, h, 32)) ||
        (rc = store_queue_sent(r->g->st, row->qid, h))) {
        graph_rollback(r->g);
        goto out;
    }
    rc = graph_commit(r->g);
    if (!rc)
        rc = 1;
out:
    llm_reply_free(&rep);
    free(req);
    free(body);
    return rc;
}

struct rows {
    struct store_queue_row *v;
    size_t n, cap;
};

static int rows_cb(void *ctx, const struct store_queue_row *row)
{
    struct rows *rs = ctx;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        void *p = realloc(rs->v, cap * sizeof *rs->v);
        if (!p)
            return KOPE_ERR_NOMEM;
        rs->v = p;
        rs->cap = cap;
    }
    rs->v[rs->n] = *row;
    rs->v[rs->n].state = NULL; /* not valid after the callback */
    rs->v[rs->n].error = NULL;
    rs->n++;
    return 0;
}

/* A reply without a kernel that says why: cut at max_tokens (its own
 * status, "truncated", with the numbers) or reasoning only. kept is the
 * stored reply (queue_send). */
static void reply_cut(const cJSON *kept, struct proposal *pr, char *buf, size_t cap)
{
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(kept, "finish_reason");
    const cJSON *rb = cJSON_GetObjectItemCaseSensitive(kept, "reasoning_bytes");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(kept, "max_tokens");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(kept, "content");
    long reasoning = cJSON_IsNumber(rb) ? (long)rb->valuedouble : 0;
    size_t clen = cJSON_IsString(content) ? strlen(content->valuestring) : 0;
    if (cJSON_IsString(fr) && strcmp(fr->valuestring, "length") == 0) {
        char lim[32] = "";
        if (cJSON_IsNumber(mt))
            snprintf(lim, sizeof lim, " (%ld)", (long)mt->valuedouble);
        snprintf(buf, cap,
                 "reply truncated at max_tokens%s: %ld completion tokens, %zu bytes of content, %ld bytes of "
                 "reasoning; no complete kernel (raise llm.max_tokens)",
                 lim, pr->tokens_out, clen, reasoning);
        pr->status = "truncated";
        pr->no_code = buf;
    } else if (!clen && reasoning > 0) {
        snprintf(buf, cap, "reasoning-only reply: %ld bytes of reasoning_content, no content (finish_reason %s)",
                 reasoning, cJSON_IsString(fr) ? fr->valuestring : "absent");
        pr->no_code = buf;
    }
}

/* The run that queued row (its prompt's "run"), made r's run for one
 * application: *adopted = 1 then (the caller restores r). A prompt that
 * names no run, or a run that is gone, leaves r as it is. Returns 1 when
 * that run is live in another kope process (the row is its to apply). */
static int adopt_run(struct run *r, const struct store_queue_row *row, int *adopted)
{
    char hex[GRAPH_ID_HEX], *req = NULL, *cur = NULL;
    size_t len;
    *adopted = 0;
    util_hex(row->prompt, 32, hex);
    int rc = graph_blob_get(r->g, hex, &req, &len);
    if (rc)
        return rc;
    cJSON *j = cJSON_Parse(req);
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
    int64_t id = cJSON_IsNumber(run) && run->valuedouble >= 1 ? (int64_t)run->valuedouble : 0;
    cJSON_Delete(j);
    free(req);
    if (!id)
        return 0;
    char name[32];
    snprintf(name, sizeof name, "run:%lld", (long long)id);
    long pid = store_lock_holder(r->g->st, name);
    if (pid) { /* its trials and cursor are that process's to write */
        run_say(r, "  llm call %lld belongs to run %lld, live in pid %ld: left for it\n", (long long)row->qid,
                (long long)id, pid);
        return 1;
    }
    rc = store_run_get(r->g->st, id, &cur);
    if (rc == STORE_ERR_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    r->cursor = cJSON_Parse(cur);
    free(cur);
    if (!r->cursor)
        return 0; /* an unreadable cursor: the trial stays outside any run */
    r->id = id;
    *adopted = 1;
    return 0;
}

int queue_apply(struct run *r, const struct store_queue_row *row, const struct plat_task *tk)
{
    char hex[GRAPH_ID_HEX], *body = NULL;
    size_t len;
    int rc;
    struct reply rep;
    struct task_suite one = {0};
    struct history h;
    char dup[400], cut[400];
    int adopted = 0;
    struct verdict *vd = calloc(1, sizeof *vd);
    memset(&h, 0, sizeof h);
    reply_init(&rep);
    if (!vd)
        return KOPE_ERR_NOMEM;
    util_hex(row->reply, 32, hex);
    if ((rc = graph_blob_get(r->g, hex, &body, &len)))
        goto out;
    cJSON *j = cJSON_Parse(body);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(j, "tokens_in");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(j, "tokens_out");
    struct proposal pr;
    memset(&pr, 0, sizeof pr);
    pr.proposer = "llm";
    pr.qid = row->qid;
    pr.parent = row->has_parent ? row->parent : NULL;
    pr.tokens_in = cJSON_IsNumber(ti) ? (long)ti->valuedouble : 0;
    pr.tokens_out = cJSON_IsNumber(to) ? (long)to->valuedouble : 0;
    /* the one extraction of the reply (core/context/reply.h) */
    rc = reply_extract(cJSON_IsString(content) ? content->valuestring : "", &rep);
    if (rc) {
        cJSON_Delete(j);
        goto out;
    }
    pr.src = rep.kernel;
    pr.len = rep.kernel ? strlen(rep.kernel) : 0;
    pr.no_code = rep.no_code;
    pr.taken = rep.taken;
    if (!pr.src)
        reply_cut(j, &pr, cut, sizeof cut);
    pr.rationale = rep.rationale;
    cJSON_Delete(j);
    for (size_t i = 0; i < rep.n_tags && pr.n_tags < TRIAL_TAGS_MAX; i++)
        pr.tags[pr.n_tags++] = rep.tags[i];
    if (!tk) {
        if ((rc = run_task_from_record(r->g, row->task, &one)))
            goto out;
        tk = &one.tasks[0].t;
    }
    /* outside a run (`kope queue flush`), the reply is a trial of the run
     * that queued the call: its trial number, its tokens */
    if (!r->id && (rc = adopt_run(r, row, &adopted)))
        goto out; /* 1: the run is live elsewhere, the row is left for it */
    if ((rc = run_open_platform(r)) || (rc = history_load(r, row->task, &h)))
        goto out;
    /* a kernel the graph already holds verified with this toolchain is not
     * measured again: the trial says so (and the model reads it next time) */
    int known = trial_known(r, &h, pr.src, pr.len);
    int failed = known < 0 ? trial_failed_before(r, &h, pr.src, pr.len) : -1;
    if (known >= 0) {
        snprintf(dup, sizeof dup, "the same kernel as decision %.12s, already verified with this toolchain: "
                 "not measured again", h.tree.nodes[known].dec.id_hex);
        pr.status = "duplicate";
        pr.no_code = dup;
    } else if (failed >= 0) {
        /* the same source failed before: said, with what it was, not judged again */
        const cJSON *st = history_body(&h.tree.nodes[failed].out, "status");
        const cJSON *why = history_body(&h.tree.nodes[failed].out, "reason");
        snprintf(dup, sizeof dup, "the same kernel as decision %.12s, which failed (%s: %.120s): not judged "
                 "again; change the code", h.tree.nodes[failed].dec.id_hex, st->valuestring,
                 cJSON_IsString(why) ? why->valuestring : "");
        pr.status = "duplicate";
        pr.no_code = dup;
    }
    /* the loop's baseline cache when the reply is for the task it is on:
     * under emulation an LLM trial then measures the candidate alone */
    struct base_cache *bc = r->bc && memcmp(r->bc_task, row->task, 32) == 0 ? r->bc : NULL;
    if ((rc = trial_run(r, row->task, tk, (int)h.n + 1, &pr, bc, vd)))
        goto out;
    /* a pass says its ratio, as the loop's own progress line does */
    char ratio[160] = "";
    if (vd->pass && vd->baseline[0])
        snprintf(ratio, sizeof ratio, " %.2fx vs %s%s%s%s", vd->speedup, vd->baseline, vd->m.emulated ? " (" : "",
                 vd->m.emulated ? vd->m.ratio_metric : "", vd->m.emulated ? ")" : "");
    run_say(r, "  llm call %lld applied to %s: %s%s%s%s\n", (long long)row->qid, tk->name, vd->status, ratio,
            vd->pass ? "" : ": ", vd->pass ? "" : vd->reason);
out:
    if (adopted) { /* back to no run */
        cJSON_Delete(r->cursor);
        r->cursor = NULL;
        r->id = 0;
    }
    history_free(&h);
    free(vd);
    free(body);
    reply_free(&rep);
    task_suite_free(&one);
    return rc;
}


struct state_seen {
    char state[16];
};

static int state_cb(void *ctx, const struct store_queue_row *row)
{
    snprintf(((struct state_seen *)ctx)->state, sizeof ((struct state_seen *)ctx)->state, "%s", row->state);
    return 0;
}

/* Claim a row for this process: 1 when its lock is ours and the row is still
 * in `state` (the caller then releases name), 0 when another process has it
 * or moved it, or a negative code. */
static int row_claim(struct run *r, const struct store_queue_row *row, const char *state, char *name, size_t cap)
{
    struct state_seen seen = {""};
    long holder = 0;
    snprintf(name, cap, "queue:%lld", (long long)row->qid);
    int rc = store_lock_try(r->g->st, name, &holder);
    if (rc == STORE_ERR_LOCKED)
        return 0;
    if (rc)
        return rc;
    rc = store_queue_get(r->g->st, row->qid, state_cb, &seen);
    if (rc || strcmp(seen.state, state) != 0) {
        store_lock_release(r->g->st, name);
        return rc == STORE_ERR_NOTFOUND || !rc ? 0 : rc;
    }
    return 1;
}

int queue_pump(struct run *r, int force, const uint8_t *task, const struct plat_task *tk, int *sent,
               int *applied)
{
    char name[48];
    struct rows rs = {0};
    int rc = 0;
    if (r->llm && (force || run_now_ms() >= r->link_retry_ms)) {
        if ((rc = store_queue_each(r->g->st, "pending", rows_cb, &rs)))
            goto out;
        for (size_t i = 0; i < rs.n && r->llm; i++) {
            if (!force && rs.v[i].next_try > run_now_ms())
                continue;
            if ((rc = row_claim(r, &rs.v[i], "pending", name, sizeof name)) <= 0) {
                if (rc < 0)
                    goto out;
                continue; /* another kope process is sending it */
            }
            rc = queue_send(r, &rs.v[i]);
            store_lock_release(r->g->st, name);
            if (rc < 0)
                goto out;
            if (rc == 0)
                break; /* link down: the rest wait for the backoff */
            if (rc == 2)
                continue; /* a malformed row, dropped: not the link */
            if (sent)
                (*sent)++;
        }
        rs.n = 0;
    }
    if ((rc = store_queue_each(r->g->st, "sent", rows_cb, &rs)))
        goto out;
    if (rs.n && (rc = run_open_platform(r)))
        goto out;
    for (size_t i = 0; i < rs.n; i++) {
        int mine = task && tk && memcmp(rs.v[i].task, task, 32) == 0;
        if ((rc = row_claim(r, &rs.v[i], "sent", name, sizeof name)) <= 0) {
            if (rc < 0)
                goto out;
            continue; /* another kope process is applying it */
        }
        rc = queue_apply(r, &rs.v[i], mine ? tk : NULL);
        store_lock_release(r->g->st, name);
        if (rc == 1)
            continue; /* its run is live in another process: that run applies it */
        if (rc)
            goto out;
        if (applied)
            (*applied)++;
    }
    rc = 0;
out:
    free(rs.v);
    return rc;
}



/*
 * core/agent/proposer.c - the built-in proposers (core/agent/proposer.h): a user's seed,
 * the LLM through the durable queue, the target's starter, the offline
 * tuner; and the one place their order is set.
 *
 * Each proposer decides from the history alone (never from memory of its
 * own earlier calls), so a resumed run proposes what the interrupted one
 * would have. None proposes a kernel the graph already holds verified with
 * this toolchain (trial_known): the seed and the starter are then spent, the
 * tuner moves on to a new point.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "core/agent/prompt.h"
#include "core/agent/proposer.h"
#include "core/agent/pump.h"
#include "core/agent/trial.h"
#include "core/agent/tuner.h"
#include "core/util.h"
#include "store/queue.h"

void proposer_free(struct proposer *p)
{
    if (p)
        p->destroy(p);
}

/* 1 if this run already tried exactly this source (any outcome). */
static int tried_in_run(const struct history *h, const char *src, size_t len)
{
    char ref[GRAPH_BLOB_REF];
    if (graph_blob_ref(src, len, ref))
        return 0;
    for (size_t i = 0; i < h->n; i++) {
        const cJSON *s = history_body(&h->tree.nodes[h->idx[i]].dec, "source");
        if (cJSON_IsString(s) && strcmp(s->valuestring, ref) == 0)
            return 1;
    }
    return 0;
}

/* --------------------------------------------------------------- the seed */

struct seed {
    struct proposer base;
    char name[128];
    char *src;
    size_t len;
    const char *why; /* "seed", or "reference" for a user op's own reference */
};

static int seed_propose(struct proposer *self, const struct proposer_ctx *c, struct proposal *pr)
{
    struct seed *s = (struct seed *)self;
    if (tried_in_run(c->h, s->src, s->len))
        return PROPOSE_EXHAUSTED;
    int known = trial_known(c->r, c->h, s->src, s->len);
    if (known >= 0) {
        run_say(c->r, "  %s: %s %s already verified with this toolchain (decision %.12s): not measured again\n",
                c->t->name, s->why, s->name, c->h->tree.nodes[known].dec.id_hex);
        return PROPOSE_EXHAUSTED;
    }
    pr->why = s->why;
    snprintf(pr->label, sizeof pr->label, "%s", s->name);
    pr->src = s->src;
    pr->len = s->len;
    return PROPOSE_OK;
}

static void seed_destroy(struct proposer *self)
{
    struct seed *s = (struct seed *)self;
    free(s->src);
    free(s);
}

int proposer_seed_new(const char *name, const char *src, size_t len, struct proposer **out)
{
    *out = NULL;
    struct seed *s = calloc(1, sizeof *s);
    if (!s || !(s->src = malloc(len + 1))) {
        free(s);
        return KOPE_ERR_NOMEM;
    }
    memcpy(s->src, src, len);
    s->src[len] = '\0';
    s->len = len;
    snprintf(s->name, sizeof s->name, "%s", name && name[0] ? name : "seed");
    s->base.name = "user"; /* the decision's proposer: the and the report's word for a user's kernel */
    s->base.propose = seed_propose;
    s->base.destroy = seed_destroy;
    s->why = "seed";
    *out = &s->base;
    return 0;
}

int proposer_ref_new(const struct plat_task *t, struct proposer **out)
{
    *out = NULL;
    if (t->op != PLAT_OP_USER || !t->user || !t->user->ref)
        return 0;
    const struct plat_user_op *u = t->user;
    int rc = proposer_seed_new(u->file[0] ? u->file : "inline reference", u->ref, u->ref_len, out);
    if (rc)
        return rc;
    struct seed *s = (struct seed *)*out;
    s->base.name = "ref"; /* the decision's proposer: the op's own reference, built as a candidate */
    s->why = "reference";
    return 0;
}

/* ---------------------------------------------------------------- the LLM */

static int llm_usable(struct run *r)
{
    return r->llm && run_now_ms() >= r->link_retry_ms;
}

/* 1 if a call whose prompt is est tokens fits the run's token cap: the
 * prompt plus the most the reply may take (max_tokens; the default when
 * none is sent), so the last call cannot overshoot the cap. */
static int llm_fits(struct run *r, long est, long *cost)
{
    long cap = r->o->token_budget > 0 ? r->o->token_budget : AGENT_TOKENS_DEFAULT;
    long out = r->o->llm && r->o->llm->max_tokens > 0 ? r->o->llm->max_tokens : LLM_MAX_TOKENS_DEFAULT;
    *cost = est + out;
    return run_tokens(r) + *cost <= cap;
}

/* The call is queued first (a row with its prompt), then the queue is
 * pumped: an answer is applied as this trial by the queue itself. */
static int llm_propose(struct proposer *self, const struct proposer_ctx *c, struct proposal *pr)
{
    struct run *r = c->r;
    const struct history *h = c->h;
    /* the LLM refines: from the task's best in the graph, or from this
     * run's first trial (the safe default or the starter) and its feedback */
    if (!(h->n >= 1 || h->best >= 0) || !llm_usable(r))
        return PROPOSE_PASS;
    char *req = NULL;
    char ref[GRAPH_BLOB_REF];
    uint8_t ph[32];
    int64_t qid = 0;
    long est = 0, cost = 0;
    int rc = prompt_build(r, c->t, c->task, h, &req, &est);
    if (rc)
        return rc;
    if (!llm_fits(r, est, &cost)) {
        run_say(r, "  llm: the next call (~%ld tokens: prompt ~%ld + up to max_tokens) would pass the run's token "
                   "cap (%ld spent of %ld): no more LLM calls this run\n",
                cost, est, run_tokens(r), r->o->token_budget > 0 ? r->o->token_budget : AGENT_TOKENS_DEFAULT);
        free(req);
        return PROPOSE_EXHAUSTED;
    }
    rc = graph_blob_put(r->g, req, strlen(req), ref);
    free(req);
    if (rc || (rc = util_unhex(ref + 7, ph, 32)) ||
        (rc = store_queue_push(r->g->st, c->task, pr->parent, ph, run_now_ms() / 1000, &qid)))
        return rc;
    int sent = 0, applied = 0;
    if ((rc = queue_pump(r, 0, c->task, c->t, &sent, &applied)))
        return rc;
    (void)self;
    return applied ? PROPOSE_RECORDED : PROPOSE_PASS;
}

static void plain_destroy(struct proposer *self)
{
    free(self);
}

int proposer_llm_new(struct run *r, struct proposer **out)
{
    *out = NULL;
    if (!r->llm)
        return 0;
    struct proposer *p = calloc(1, sizeof *p);
    if (!p)
        return KOPE_ERR_NOMEM;
    p->name = "llm";
    p->propose = llm_propose;
    p->destroy = plain_destroy;
    *out = p;
    return 0;
}

/* ------------------------------------------------------------ the starter */

struct starter {
    struct proposer base;
};

/* The target's one built-in kernel, as this run's first trial only (more
 * trials on such a target need the LLM). */
static int starter_propose(struct proposer *self, const struct proposer_ctx *c, struct proposal *pr)
{
    struct run *r = c->r;
    (void)self;
    if (c->h->n >= 1)
        return PROPOSE_EXHAUSTED;
    size_t len = 0;
    char *heap = NULL;
    int rc = platform_starter(r->p, c->t, &heap, &len, pr->label, sizeof pr->label);
    if (rc) {
        snprintf(r->err, r->err_len, "task %s: no starter kernel on %s: %s", c->t->name, r->target, r->p->err);
        return rc;
    }
    const char *src = arena_strndup(c->a, heap, len);
    free(heap);
    if (!src)
        return KOPE_ERR_NOMEM;
    int known = trial_known(r, c->h, src, len);
    if (known >= 0) {
        run_say(r, "  %s: the starter is already verified with this toolchain (decision %.12s)\n", c->t->name,
                c->h->tree.nodes[known].dec.id_hex);
        return PROPOSE_EXHAUSTED;
    }
    pr->why = "starter";
    pr->src = src;
    pr->len = len;
    return PROPOSE_OK;
}

static void starter_destroy(struct proposer *self)
{
    free(self);
}

int proposer_starter_new(struct run *r, const struct plat_task *t, struct proposer **out)
{
    *out = NULL;
    int rc = run_open_platform(r);
    if (rc)
        return rc;
    if (!r->p->ops->starter)
        return 0;
    struct starter *s = calloc(1, sizeof *s);
    if (!s)
        return KOPE_ERR_NOMEM;
    s->base.name = "starter";
    s->base.propose = starter_propose;
    s->base.destroy = starter_destroy;
    *out = &s->base;
    (void)t;
    return 0;
}

/* -------------------------------------------------------------- the tuner */

struct tuner {
    struct proposer base;
    const struct plat_space *tp;
    struct tuner_prior prior;
};

/* The tuner's view of the history: this run's trials, and (unless the run
 * re-measures) every point the graph already holds verified with this
 * toolchain, so a re-run spends its budget on new points. */
static struct tuner_trial *tuner_history(const struct run *r, const struct history *h,
                                         const struct plat_space *tp, struct arena *a, size_t *n)
{
    struct tuner_trial *tt = arena_alloc(a, (h->tree.n + 1) * sizeof *tt);
    if (!tt)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < h->tree.n; i++) {
        int mine = 0;
        for (size_t k = 0; k < h->n && !mine; k++)
            mine = h->idx[k] == (int)i;
        if (!mine && !history_measured(r, h, i))
            continue;
        const struct graph_node *nd = &h->tree.nodes[i];
        const cJSON *lab = history_body(&nd->dec, "params");
        struct tuner_trial *x = &tt[(*n)++];
        if (cJSON_IsString(lab) && plat_point_parse(tp, lab->valuestring, x->v) == 0)
            x->has_point = 1;
        x->pass = history_pass(nd);
        x->score = nd->has_outcome ? graph_outcome_rank(&nd->out) : 0;
    }
    return tt;
}

static int tuner_propose(struct proposer *self, const struct proposer_ctx *c, struct proposal *pr)
{
    struct tuner *s = (struct tuner *)self;
    size_t n = 0, cap = c->h->tree.n + 1;
    struct tuner_trial *tt = tuner_history(c->r, c->h, s->tp, c->a, &n);
    int rc = 0;
    if (!tt)
        return KOPE_ERR_NOMEM;
    /* a point whose source the graph holds verified (e.g. an LLM kernel
     * equal to a template instance) counts as tried: at most the space's
     * size of rounds */
    for (;;) {
        int v[PLAT_PARAM_MAX];
        const char *why = NULL;
        rc = tuner_next(s->tp, tt, n, &s->prior, v, &why);
        if (rc == 1) { /* every point tried: the task is as good as the tuner gets */
            rc = PROPOSE_EXHAUSTED;
            break;
        }
        if (rc)
            break;
        char *heap = plat_point_source(s->tp, v, &pr->len);
        const char *src = heap ? arena_strndup(c->a, heap, pr->len) : NULL;
        free(heap);
        plat_point_label(s->tp, v, pr->label, sizeof pr->label);
        if (!src) {
            snprintf(c->r->err, c->r->err_len, "task %s: template source for %s", c->t->name, pr->label);
            rc = KOPE_ERR_NOMEM;
            break;
        }
        int known = trial_known(c->r, c->h, src, pr->len);
        if (known < 0) {
            pr->why = why;
            pr->src = src;
            rc = PROPOSE_OK;
            break;
        }
        if (n == cap) { /* the arena frees the old array with the iteration */
            struct tuner_trial *bigger = arena_alloc(c->a, 2 * cap * sizeof *tt);
            if (!bigger) {
                rc = KOPE_ERR_NOMEM;
                break;
            }
            memcpy(bigger, tt, n * sizeof *tt);
            tt = bigger;
            cap *= 2;
        }
        struct tuner_trial *x = &tt[n++];
        memset(x, 0, sizeof *x);
        memcpy(x->v, v, sizeof x->v);
        x->has_point = 1;
        x->pass = 1;
        x->score = graph_outcome_rank(&c->h->tree.nodes[known].out);
    }
    if (rc != PROPOSE_OK)
        pr->label[0] = '\0';
    return rc;
}

static void tuner_destroy(struct proposer *self)
{
    struct tuner *s = (struct tuner *)self;
    tuner_prior_free(&s->prior);
    free(s);
}

int proposer_tuner_new(struct run *r, const struct plat_task *t, struct proposer **out)
{
    *out = NULL;
    int rc = run_open_platform(r);
    if (rc)
        return rc;
    /* The target's tuning space of the op (k3: its RVV templates); a target
     * without one (ascend) has its starter and the LLM. */
    const struct plat_space *tp = platform_space(r->target, t->op);
    if (!tp)
        return 0;
    struct tuner *s = calloc(1, sizeof *s);
    if (!s)
        return KOPE_ERR_NOMEM;
    tuner_prior_init(&s->prior);
    s->tp = tp;
    if (!r->o->no_memory && (rc = tuner_prior_load(r->g, t, r->target, &s->prior))) {
        tuner_destroy(&s->base);
        return rc;
    }
    s->base.name = "tuner";
    s->base.propose = tuner_propose;
    s->base.destroy = tuner_destroy;
    *out = &s->base;
    return 0;
}

/* --------------------------------------------------------------- the order */

int proposers_for_task(struct run *r, const struct task_entry *te, struct proposer *v[PROPOSERS_MAX],
                       size_t *n)
{
    const struct plat_task *t = &te->t;
    int rc = 0;
    struct proposer *p;
    *n = 0;
    /* a suite task's own seed (core/task/task.h "seed"), then the command
     * line's --seed: the user's kernels before anything kope writes */
    if (te->seed) {
        if ((rc = proposer_seed_new(te->seed_file, te->seed, te->seed_len, &p)))
            goto fail;
        v[(*n)++] = p;
    }
    if (r->o->seed_src) {
        if ((rc = proposer_seed_new(r->o->seed_name, r->o->seed_src, r->o->seed_len, &p)))
            goto fail;
        v[(*n)++] = p;
    }
    if ((rc = proposer_ref_new(t, &p)))
        goto fail;
    if (p)
        v[(*n)++] = p;
    if ((rc = proposer_llm_new(r, &p)))
        goto fail;
    if (p)
        v[(*n)++] = p;
    if ((rc = proposer_starter_new(r, t, &p)))
        goto fail;
    if (p)
        v[(*n)++] = p;
    if ((rc = proposer_tuner_new(r, t, &p)))
        goto fail;
    if (p)
        v[(*n)++] = p;
    return 0;
fail:
    while (*n)
        proposer_free(v[--*n]);
    return rc;
}

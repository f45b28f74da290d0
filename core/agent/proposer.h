/*
 * core/agent/proposer.h - where candidate kernels come from, behind one interface.
 *
 * A proposer proposes the next candidate for a task from what the graph
 * holds (its history: every run's trials and the task's best, core/agent/trial.h)
 * and says when it has nothing more. The task loop (core/agent/agent.c) asks its
 * proposers in order and never looks at which one answered: the first that
 * proposes makes the trial. Built in:
 *
 *   seed     a user's kernel (source text), measured once;
 *   ref      a user op's own reference built as a candidate (autovectorized
 *            by the candidate flags), once: with no seed it is the first
 *            trial, so the task has a passing kernel and a best to refine;
 *   llm      the LLM through the durable call queue (core/agent/pump.h): its
 *            trials are recorded when the reply is applied, so it answers
 *            PROPOSE_RECORDED, or PROPOSE_PASS while the link is down;
 *   starter  the target's built-in kernel (platform_ops.starter), once;
 *   tuner    the offline tuner over the target's tuning space (core/agent/tuner.h).
 *
 * The order (proposers_for_task) is seed, ref, llm, starter, tuner: a seed is the
 * first trial, the LLM proposes once the task has a best or a first trial,
 * the tuner takes every trial nobody else wants.
 *
 * Ownership: a proposer is a heap object (proposer_free). What a proposal
 * points to lives in the iteration's arena (proposer_ctx.a, core/arena.h)
 * or in the proposer itself (a seed's source), and is valid until the loop's
 * iteration ends.
 */
#ifndef KOPE_PROPOSER_H
#define KOPE_PROPOSER_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/agent/trial.h"

enum proposer_answer {
    PROPOSE_OK = 0,        /* pr is a candidate: evaluate and record it */
    PROPOSE_RECORDED = 1,  /* the proposer's trial is already recorded (an applied LLM reply) */
    PROPOSE_PASS = 2,      /* nothing this time (link down, not yet): ask the next one */
    PROPOSE_EXHAUSTED = 3, /* nothing more for this task: do not ask again */
};

/* What a proposer sees of the task. */
struct proposer_ctx {
    struct run *r;
    const struct plat_task *t;
    const uint8_t *task;        /* the task record's id */
    const struct history *h;    /* every trial so far (appended as the loop records them) */
    struct arena *a;            /* this iteration's allocations, freed at its end */
};

struct proposer {
    const char *name;           /* "tuner", "llm", "user" (a seed), "starter": the decision's "proposer" */
    /* Fill pr (already zeroed, pr->parent set) with the next candidate.
     * Returns a PROPOSE_* answer, or a negative code with c->r->err set. */
    int (*propose)(struct proposer *self, const struct proposer_ctx *c, struct proposal *pr);
    void (*destroy)(struct proposer *self); /* frees self and its state */
    int exhausted;              /* the loop's note: it said PROPOSE_EXHAUSTED */
};

/* Accepts NULL. */
void proposer_free(struct proposer *p);

/* Constructors. Each returns 0 with *out set, or *out = NULL when it does
 * not apply (no LLM configured, no starter on this target, no tuning space
 * for this op), or a negative code with r->err set. */
int proposer_tuner_new(struct run *r, const struct plat_task *t, struct proposer **out);
int proposer_llm_new(struct run *r, struct proposer **out);
int proposer_starter_new(struct run *r, const struct plat_task *t, struct proposer **out);
/* A user's kernel: src (len bytes) is copied; name labels it in records. */
int proposer_seed_new(const char *name, const char *src, size_t len, struct proposer **out);
/* The reference of a user op (t->user) as a proposer named "ref"; *out NULL
 * for a catalogue op. The source is copied. */
int proposer_ref_new(const struct plat_task *t, struct proposer **out);

#ifndef PROPOSERS_MAX
#define PROPOSERS_MAX 8
#endif
/* The proposers of one task of the run, in order: the suite task's seed
 * (te->seed), the command line's (agent_opts.seed_src), ref (a user op's
 * reference), llm, starter, tuner; those that do not apply are left out.
 * The one place the order is set. *n set; free each with proposer_free. */
struct task_entry;
int proposers_for_task(struct run *r, const struct task_entry *te, struct proposer *v[PROPOSERS_MAX],
                       size_t *n);

#endif

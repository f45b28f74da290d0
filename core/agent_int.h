/*
 * core/agent_int.h - private to the agent (core/agent.c, core/queue.c): the
 * state of one run and the steps of one trial, shared by the task loop and
 * the LLM call queue. Not an interface for other modules: use core/agent.h.
 */
#ifndef KOPE_AGENT_INT_H
#define KOPE_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "core/agent.h"
#include "core/graph.h"
#include "core/task.h"
#include "net/llm.h"
#include "platform/platform.h"
#include "store/queue.h"

#define REASON_MAX 600 /* one-line reason kept in an outcome body */

struct run {
    struct graph *g;
    const struct agent_opts *o;
    const char *target;
    struct platform *p;
    struct platform *p_fast;    /* emulated only: same target without baselines */
    int emulated;
    int64_t id;                 /* run_state row, 0 = none (queue flush outside a run) */
    cJSON *cursor;              /* {"tokens":N,"done":[names]} */
    struct llm_client *llm;     /* NULL = no LLM (offline, not configured, or disabled) */
    int64_t link_retry_ms;      /* link down: no send before this (unix ms) */
    long backoff_ms;
    long calls;
    uint64_t t0_ns;
    char *err;
    size_t err_len;
};

struct proposal {
    const char *proposer;       /* "tuner" | "llm" */
    const char *src;            /* NULL = no code (an LLM reply without a kernel) */
    size_t len;
    char label[128];            /* tuner: k3_point_label; "" otherwise */
    const char *why;            /* tuner: "default", "prior", ... */
    char *tags[LLM_MAX_TAGS];   /* borrowed */
    size_t n_tags;
    const char *rationale;      /* borrowed, may be NULL */
    const char *no_code;        /* why there is no kernel */
    long tokens_in, tokens_out; /* LLM tokens of the call (0 for the tuner) */
    int64_t qid;                /* queue row applied by this trial, 0 = none */
    const uint8_t *parent;      /* decision refined, NULL = first of the task */
};

struct verdict {
    int pass;
    const char *status;         /* "pass" | plat_fail_name() | "no_code" */
    const char *stage;          /* "reply" | "compile" | "verify" | "measure" */
    char reason[REASON_MAX];
    const char *diag;           /* compiler output (borrowed from build) */
    struct platform *plat;      /* which handle built b */
    struct plat_build b;
    struct plat_verify v;
    struct plat_measure m;
    double speedup;
    char baseline[PLAT_NAME_MAX];
    double score;
};

/* Baselines measured once per task under emulation. Instruction counts are
 * exactly repeatable there (docs/K3-KERNELS.md), so later trials measure the
 * candidate alone and take the ratio against these counts: same claim, half
 * the emulator time. Natively every trial measures its baselines. */
struct base_cache {
    int have;
    int n;
    struct plat_baseline base[PLAT_MAX_BASELINES];
};

/* Unix time in ms (the queue's backoff is wall-clock: it survives restarts). */
int64_t agent_now_ms(void);
/* A progress / event line on the run's log (none when silent). */
void agent_say(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Open the run's platform on first use; records emulation. */
int agent_open_platform(struct run *r);
/* A plat_task back from a task record, as a one-task suite (caller frees). */
int agent_task_from_record(struct graph *g, const uint8_t id[32], struct task_suite *s);
/* Trials of this run recorded for a task. */
int agent_trial_count(struct run *r, const uint8_t task[32], int *n);
/* Screen, compile, verify, measure one proposal: 0 = answered (vd says
 * how), PLAT_ERR_* = the platform failed. bc: per-task baseline cache or NULL.
 * The caller frees vd->b with platform_build_free(vd->plat, ...). */
int agent_evaluate(struct run *r, const struct plat_task *t, const struct proposal *pr, struct verdict *vd,
                   struct base_cache *bc);
/* The trial's one transaction: blobs, decision, outcome, cursor, queue row done. */
int agent_record_trial(struct run *r, const uint8_t task[32], int trial, const struct proposal *pr,
                       const struct verdict *vd, uint8_t dec_id[32], uint8_t out_id[32]);

/* core/queue.c: the durable LLM call queue's moves. */
/* Send one pending row: 1 answered (row 'sent'), 0 link down (backoff set,
 * row stays 'pending'), or a negative code. */
int agent_queue_send(struct run *r, const struct store_queue_row *row);
/* Evaluate an answered row's kernel and record it, marking the row done, in
 * one transaction. tk: the task when the caller has it, else NULL. */
int agent_queue_apply(struct run *r, const struct store_queue_row *row, const struct plat_task *tk);
/* Send what may be sent (all pending when force), then apply every answered row. */
int agent_queue_pump(struct run *r, int force, int *sent, int *applied);

#endif

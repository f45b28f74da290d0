/*
 * core/agent/trial.h - one trial: evaluate a candidate kernel on the target and
 * record it (decision + outcome) in one transaction. The task loop
 * (core/agent/agent.c, through the proposers of core/agent/proposer.h) and the LLM call
 * queue (core/agent/pump.h) both call it, so neither calls the other's insides.
 *
 * Reading order: struct run (what a run shares with its trials), struct
 * proposal (a candidate, from any proposer), struct verdict (what the target
 * said), struct history (a task's tree as the proposers see it), then the
 * steps.
 *
 * A point is never measured twice: before a candidate is evaluated,
 * trial_known() looks for a verified outcome of the same source (blob hash)
 * built by the same toolchain on this task's target; such a candidate is not
 * measured again unless the run asks for it (agent_opts.remeasure).
 *
 * Ownership: struct run borrows the graph and the options; it owns its
 * platform handles, LLM client and cursor (agent.c frees them). A proposal's
 * strings are borrowed from its proposer. history_load fills a history the
 * caller frees (history_free).
 */
#ifndef KOPE_TRIAL_H
#define KOPE_TRIAL_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "core/agent/agent.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "net/llm.h"
#include "platform/platform.h"

#define REASON_MAX 600 /* one-line reason kept in an outcome body */
#ifndef TRIAL_TAGS_MAX
#define TRIAL_TAGS_MAX 16
#endif

/* The state of one run (or of a `kope queue flush` outside a run). */
struct run {
    struct graph *g;
    const struct agent_opts *o;
    const char *target;
    struct platform *p;
    struct platform *p_fast;    /* emulated only: same target without baselines */
    int emulated;
    char toolchain[256];        /* plat_desc.cc: compiler and flags, recorded per decision */
    int64_t id;                 /* run_state row, 0 = none (queue flush outside a run) */
    cJSON *cursor;              /* {"tokens":N,"done":[names]} */
    struct llm_client *llm;     /* NULL = no LLM (offline, not configured, or disabled) */
    int64_t link_retry_ms;      /* link down: no send before this (unix ms) */
    long backoff_ms;
    long calls;
    uint64_t t0_ns;
    /* the baseline cache of the task the loop is on (run_task), so an LLM
     * reply applied for that task by the queue reuses it too; NULL = none */
    struct base_cache *bc;
    uint8_t bc_task[32];
    char *err;
    size_t err_len;
};

/* A run's first wait before it retries a dead link: the setting
 * (agent_opts.link_backoff_ms, llm.link_backoff_ms) or AGENT_BACKOFF_MS. */
static inline long agent_backoff_first(const struct agent_opts *o)
{
    return o && o->link_backoff_ms > 0 ? o->link_backoff_ms : AGENT_BACKOFF_MS;
}

/* One candidate, whoever proposed it. */
struct proposal {
    const char *proposer;       /* recorded as the decision's "proposer" */
    const char *src;            /* NULL = no code (an LLM reply without a kernel) */
    size_t len;
    char label[128];            /* a tuning point's label, a starter's name; "" otherwise */
    const char *why;            /* "default", "prior", "seed", ... */
    char *tags[TRIAL_TAGS_MAX]; /* borrowed */
    size_t n_tags;
    const char *rationale;      /* borrowed, may be NULL */
    const char *no_code;        /* why there is no kernel */
    const char *taken;          /* which of the reply's code blocks is src, NULL/"" = its only one */
    const char *status;         /* NULL, or an outcome status decided before evaluation
                                   ("duplicate"): then no_code is its reason */
    long tokens_in, tokens_out; /* LLM tokens of the call (0 otherwise) */
    int64_t qid;                /* queue row applied by this trial, 0 = none */
    const uint8_t *parent;      /* decision refined, NULL = first of the task */
};

struct verdict {
    int pass;
    const char *status;         /* "pass" | plat_fail_name() | "no_code" | "duplicate" */
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
    char object_sha256[65];     /* hex SHA-256 of the judged object (b.object), "" = none */
    uint8_t dec_id[32], out_id[32]; /* the records trial_run wrote */
};

/* Most bytes of a judged object core hashes (larger: an error). */
#define TRIAL_OBJECT_MAX (16u << 20)

/* The hex SHA-256 of build b's judged object (plat_build.object) into hex,
 * as an outcome records it ("object_sha256"): "" and 0 when the target has
 * no object; KOPE_ERR_IO with err set when it cannot be read. */
int trial_object_hash(const struct plat_build *b, char hex[65], char *err, size_t err_len);

/* The values at a failing case's first bad element (input(s), expected,
 * got as a number and its bits) as one clause for a reason, "" when the
 * judge reported none. op decodes the got bits (argmax: an index). */
void trial_fail_values(enum plat_op op, const struct plat_case *c, char *dst, size_t cap);

struct base_cache;

/* Baselines measured once per task under emulation. Instruction counts are
 * exactly repeatable there (docs/K3-KERNELS.md), so later trials measure the
 * candidate alone and take the ratio against these counts: same claim, half
 * the emulator time. Natively every trial measures its baselines. */
struct base_cache {
    int have;
    int n;
    struct plat_baseline base[PLAT_MAX_BASELINES];
};

/* A task's tree as the proposers see it: every decision of every run and
 * origin, which of them are this run's trials, and the task's best. */
struct history {
    struct graph_tree tree;     /* the task's whole tree: every run, proposer, origin */
    int *idx;                   /* nodes of this run, in order */
    size_t n;
    int best;                   /* the task's best in the graph (graph_tree_best), -1 = none */
    int first_pass;             /* 1-based trial of this run, 0 = none */
    int best_trial;             /* trial of this run that found the best, 0 = an earlier one */
    long tokens;
};

/* Unix time in ms (the queue's backoff is wall-clock: it survives restarts). */
int64_t run_now_ms(void);
/* A progress / event line on the run's log (none when silent). */
void run_say(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Put the message into r->err; returns rc (KOPE_ERR_INTERNAL for 0). */
int run_fail(struct run *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Write the cursor to the run row (inside the caller's transaction). */
int run_cursor_save(struct run *r);
/* LLM tokens spent by the run so far (its cursor). */
long run_tokens(const struct run *r);
/* Open the run's platform on first use; records emulation and the toolchain. */
int run_open_platform(struct run *r);
/* A plat_task back from a task record, as a one-task suite (caller frees). */
int run_task_from_record(struct graph *g, const uint8_t id[32], struct task_suite *s);

/* The task's tree and this run's trials in it. 0 or a code; h is filled
 * (and must be freed) either way. */
int history_load(struct run *r, const uint8_t task[32], struct history *h);
/* The trial vd just recorded (trial_run), added to h without reading the
 * task's tree again. 0 or a code. */
int history_add(struct run *r, struct history *h, const struct verdict *vd);
void history_free(struct history *h);
/* A member of a record's body, or NULL. */
const cJSON *history_body(const struct graph_rec *rec, const char *key);
/* 1 if node i has a passing outcome (any target, any shape). */
int history_pass(const struct graph_node *n);
/* 1 if node i of h counts as already measured for this run: a fully
 * verified outcome (core/graph/graph.h) built by the run's toolchain. Always 0
 * with agent_opts.remeasure. */
int history_measured(const struct run *r, const struct history *h, size_t i);

/* The node of h holding a verified outcome of exactly this source with this
 * run's toolchain (history_measured), or -1. */
int trial_known(const struct run *r, const struct history *h, const char *src, size_t len);

/* The node of h holding a FAILED outcome of exactly this source built by this
 * run's toolchain, of a kind that repeats (compile, screen, verification; not
 * timeout or crash), or -1: an LLM that sends a failed kernel again is told so
 * instead of having it judged (and charged) again as if it were new. Always
 * -1 with agent_opts.remeasure or no_memory, as for history_measured. */
int trial_failed_before(const struct run *r, const struct history *h, const char *src, size_t len);

/* Evaluate pr on t and record it as trial number `trial` of task: screen,
 * compile, verify, measure, then blobs, decision, outcome, cursor and the
 * queue row (pr->qid) in one transaction. bc: per-task baseline cache or
 * NULL. vd gets the verdict (its build already released). Returns 0, or a
 * code with r->err set (the platform failed, or the store), or
 * KOPE_ERR_INTERRUPTED when SIGINT / SIGTERM arrived before the record
 * (nothing recorded: core/interrupt.h). */
int trial_run(struct run *r, const uint8_t task[32], const struct plat_task *t, int trial,
              const struct proposal *pr, struct base_cache *bc, struct verdict *vd);

#endif

/*
 * core/agent/agent.h - the agent loop behind `kope run` (docs/AGENT.md "One
 * task").
 *
 * For each task of a suite: find or add its task record, then trial after
 * trial within the budget (trials per task, LLM tokens per run, wall time):
 * a proposer gives a kernel (the offline tuner, core/agent/tuner.h, or the LLM
 * through the durable queue, core/agent/pump.h), the platform screens, compiles,
 * verifies and measures it, and the decision (parent = the decision it
 * refined) and its outcome are recorded in the graph. At the end of a task
 * an insight record cites the outcomes it learned from.
 *
 * Crash safety - what is committed when:
 *   - a trial is ONE transaction: source blob, decision, outcome, the run's
 *     cursor (tokens) and, for an LLM reply, its queue row marked done. A
 *     kill before the commit loses only work (the trial is redone: the
 *     tuner's order is deterministic); a kill after it loses nothing.
 *   - every LLM call is a queue row first (pending), its reply is stored
 *     with the row (sent) in one transaction, and applied in the trial's
 *     transaction (done): exactly once, whatever is killed when.
 *   - a task ends with its insight and "done" in the cursor, one transaction.
 *   - the run row (run_state) stays "running" until every task is done, so
 *     the next `kope run` of the same suite resumes it, counting the trials
 *     already in the graph (decision body "run").
 *
 * Ownership: options are borrowed for the call; struct agent_summary owns
 * its results (agent_summary_free).
 */
#ifndef KOPE_AGENT_H
#define KOPE_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "platform/platform.h"

struct graph;
struct llm_settings;

#ifndef AGENT_BUDGET_DEFAULT
#define AGENT_BUDGET_DEFAULT 8          /* trials per task */
#endif
#ifndef AGENT_TOKENS_DEFAULT
#define AGENT_TOKENS_DEFAULT 2000000L   /* LLM tokens per run */
#endif
#ifndef AGENT_BUDGET_MAX
#define AGENT_BUDGET_MAX 1000
#endif
#ifndef AGENT_BACKOFF_MS
#define AGENT_BACKOFF_MS 30000          /* first wait before retrying a dead link */
#endif
#ifndef AGENT_BACKOFF_MAX_MS
#define AGENT_BACKOFF_MAX_MS 600000
#endif
#ifndef AGENT_ITER_ARENA_MAX
#define AGENT_ITER_ARENA_MAX (64u << 20) /* bytes one trial of the loop may allocate (core/arena.h) */
#endif

struct agent_opts {
    const char *suite_path;     /* NULL = the embedded default suite */
    const char *task_name;      /* NULL = every task of the suite */
    const char *target;         /* NULL = PLAT_DEFAULT_TARGET */
    int budget;                 /* trials per task; 0 = AGENT_BUDGET_DEFAULT */
    long token_budget;          /* LLM tokens per run; 0 = AGENT_TOKENS_DEFAULT */
    double time_limit_s;        /* wall time of the run; 0 = none */
    int offline;                /* never call the LLM */
    int no_memory;              /* the tuner ignores the graph (ablation) */
    int fresh;                  /* start a new run even if one is open */
    int remeasure;              /* measure again points the graph already holds verified
                                   (same task, target, toolchain, source); default: never */
    const char *seed_src;       /* a user's kernel, the first proposal of each task; NULL = none */
    size_t seed_len;
    const char *seed_name;      /* its label in records ("seed" when NULL) */
    int ctx_mode;               /* enum ctx_mode (core/context/context.h) */
    size_t ctx_budget;          /* prompt tokens; 0 = context default */
    const struct plat_settings *plat; /* NULL = defaults */
    const struct llm_settings *llm;   /* NULL, or no base_url = no LLM */
    long link_backoff_ms;       /* first wait before retrying a dead LLM link (doubles up
                                   to AGENT_BACKOFF_MAX_MS); 0 = AGENT_BACKOFF_MS */
    FILE *log;                  /* progress lines; NULL = silent */
    int tty;                    /* log is a terminal: draw a bar */
};
void agent_opts_init(struct agent_opts *o);

/* One task's result in this run. */
struct agent_result {
    char name[PLAT_NAME_MAX];
    char op[24];
    char family[24];
    uint8_t task_id[32];
    int done;                   /* its insight is written */
    int passed;                 /* some trial passed at the task's shape */
    int reduced;                /* not passed, but verified at a reduced shape (the
                                   emulation cap): judged as far as this machine can;
                                   the figures below are that outcome's */
    int trials;                 /* trials recorded in this run */
    int first_pass;             /* trial number (1-based) of the first pass, 0 = none */
    int best_trial;             /* trial number of the best, 0 = none */
    double speedup;             /* best vs `baseline` (icount ratio when emulated) */
    char baseline[PLAT_NAME_MAX];
    int emulated;
    int n_ratios;
    struct { char name[PLAT_NAME_MAX]; double ratio; } ratios[PLAT_MAX_BASELINES];
    char not_measured[PLAT_DETAIL_MAX]; /* the best's reason when it begins
                                 PLAT_NOT_MEASURED (no figure at all), else "" */
    char best_label[128];       /* tuner label or "llm" */
    char best_path[200];        /* decision ids (12 hex) root -> best */
    long tokens;                /* LLM tokens spent on this task in this run */
};

struct agent_summary {
    int64_t run;                /* run_state id */
    int resumed;                /* 1 if an interrupted run was continued */
    struct agent_result *res;   /* one per task, suite order (owned) */
    size_t n;
    int passed;                 /* tasks with a passing kernel */
    int reduced;                /* tasks verified only at a reduced shape (emulated) */
    int complete;               /* every task done (run state "done") */
    long tokens;                /* LLM tokens of the run */
    long llm_calls, queued;     /* calls answered, calls left queued */
    double wall_s;
    char stop_reason[128];      /* "" or why the run stopped early */
};
void agent_summary_free(struct agent_summary *s);

/* Run (or resume) the suite. Returns 0 when the run went through (tasks may
 * still have failed: see the summary), or a negative code when the store,
 * the platform or the suite failed, with a message in err. */
int agent_run(struct graph *g, const struct agent_opts *o, struct agent_summary *out,
              char *err, size_t err_len);

/* Send every queued call whose backoff has passed (all of them when force)
 * and apply every answered one, each exactly once. p may be NULL (opened
 * from o->plat when needed). Counts go to *sent / *applied (may be NULL).
 * Returns 0, or a negative code with err set. A dead link is not an error:
 * the calls stay queued (*sent counts only answered ones). */
int agent_queue_flush(struct graph *g, const struct agent_opts *o, struct platform *p, int force,
                      int *sent, int *applied, char *err, size_t err_len);

/* What agent_prompt_next found. */
struct agent_next {
    int64_t run;                /* the run the next `kope run` resumes, 0 = a new one */
    char run_key[PLAT_NAME_MAX * 2 + 8];
    int has_task;               /* the task has a record in the graph */
    uint8_t task_id[32];
    size_t decisions;           /* decisions of the task in the graph */
    size_t trials;              /* trials of that run (its feedback comes from them) */
    int has_best;               /* a best in the graph: the LLM proposes from trial 1 */
};

/* The prompt the next `kope run` of o->suite_path / o->task_name would send
 * to the LLM, built by the same code from the same inputs (core/agent/prompt.h).
 * Read-only. *p (ctx_prompt_init'ed) is the caller's to free. Returns 0 or
 * a code with err set. */
struct ctx_prompt;
int agent_prompt_next(struct graph *g, const struct agent_opts *o, struct ctx_prompt *p, struct agent_next *nx,
                      char *err, size_t err_len);

#endif

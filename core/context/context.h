/*
 * core/context/context.h - Active Context Management: the prompt of one LLM call,
 * built from three tiers under one fixed token budget (docs/CONTEXT.md).
 *
 *   hot  - the task, the current best kernel, the feedback of the latest
 *          attempts (compiler / verify / measure). Always present; when it
 *          does not fit, the OLDEST feedback is trimmed first, then the best
 *          kernel's source is cut, and the task line is never dropped.
 *   warm - retrieved experience (core/context/retrieve.h): decision -> outcome paths
 *          from similar tasks, failures included, cross-target items labelled
 *          with the target they come from.
 *   cold - static knowledge embedded in the binary (core/knowledge/ files:
 *          RVV 1.0 intrinsics, X100/K3 notes, Ascend C notes), chunked by
 *          "## " section, plus the target's probe results.
 *
 * Warm and cold items compete for what the hot tier leaves, greedily by
 * value per token (ties broken by a stable key), so the same inputs (same
 * request, same graph) always give byte-identical prompts: nothing depends on
 * time, addresses or hash-table order.
 *
 * --context passive (CTX_PASSIVE, the KOPE paper's baseline): no retrieval,
 * no cold tier, no budget; the prompt is the task plus the task's FULL
 * history from the graph (every decision with its source and outcome, in
 * order) plus all feedback given. It exists so the two can be compared.
 *
 * For the agent (core/agent/agent.c) - how to call it:
 *
 *     struct ctx_request rq;
 *     ctx_request_init(&rq);              // budget CTX_BUDGET_DEFAULT, active
 *     rq.task = &entry->t;                // struct plat_task
 *     rq.task_id = task_id;               // the task record (its own history
 *                                         //  is never "similar experience")
 *     rq.target = "k3";
 *     rq.mode = passive ? CTX_PASSIVE : CTX_ACTIVE;
 *     rq.best_source = best_src;  rq.best_summary = "pass, 2.31x vs scalar-O2";
 *     rq.parent_decision = parent;        // the decision being refined, or NULL
 *     rq.feedback = fb; rq.n_feedback = n; // oldest first (see ctx_feedback)
 *     rq.probe = &probe;                  // or NULL: the newest probe record
 *     rq.endpoint = conf.base_url;        // calibration key, or NULL
 *     struct ctx_prompt p;
 *     ctx_prompt_init(&p);
 *     rc = context_build(&g, &rq, &p);    // p.system, p.user -> llm_chat
 *     ...  after the reply: tokens_calibrate(g.st, rq.endpoint,
 *                                            p.n_tokens_raw, reply.n_tokens_in);
 *     ctx_prompt_free(&p);
 *
 * What retrieval reads from record bodies (so please write them):
 *   task     the spec: name, op, dtype, shape{...} (graph_task_add does it);
 *   decision tags[], rationale, source ("sha256:.."), optional "params"{..};
 *   outcome  status ("pass" | plat_fail_name() | "no_code"), speedup (vs the
 *            named "baseline"), emulated, reason (one line: the detail /
 *            first compiler error), and when measured natively "share"
 *            (plat_roofline_share, 0..1) and "bound" ("compute"|"memory");
 *   insight  "text" (one paragraph) plus anything else.
 * Missing members are tolerated (the item just scores lower).
 *
 * Ownership: the request and everything it points to are borrowed for the
 * call; the prompt owns its strings (ctx_prompt_free). Not thread-safe per
 * graph (the graph's store handle serves one thread).
 */
#ifndef KOPE_CONTEXT_H
#define KOPE_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/graph/graph.h"
#include "platform/platform.h"

#ifndef CTX_BUDGET_DEFAULT
#define CTX_BUDGET_DEFAULT 6000  /* tokens of system + user */
#endif
#ifndef CTX_BUDGET_MIN
#define CTX_BUDGET_MIN 1000      /* below this the task and the judging notes do not fit */
#endif
#ifndef CTX_MAX_ITEMS
#define CTX_MAX_ITEMS 256        /* candidate items considered per build */
#endif
#ifndef CTX_PASSIVE_MAX_BYTES
#define CTX_PASSIVE_MAX_BYTES (16u * 1024 * 1024) /* cap of a passive prompt */
#endif
#ifndef CTX_FEEDBACK_MAX_BYTES
#define CTX_FEEDBACK_MAX_BYTES 3000 /* one feedback text kept in a prompt */
#endif

enum ctx_mode {
    CTX_ACTIVE = 0,   /* three tiers, budgeted (the default) */
    CTX_PASSIVE = 1,  /* full history, unbudgeted (the paper's baseline) */
};
/* "active" / "passive" -> mode; returns -1 for anything else. */
int ctx_mode_parse(const char *s);
const char *ctx_mode_name(enum ctx_mode m);

enum ctx_tier { CTX_HOT = 0, CTX_WARM, CTX_COLD, CTX_N_TIERS };
const char *ctx_tier_name(enum ctx_tier t);

/* The result of one earlier attempt, as the hot tier shows it. All strings
 * borrowed, NULL = absent. Give them oldest first; the newest is kept longest. */
struct ctx_feedback {
    const char *stage;   /* "screen" | "compile" | "verify" | "measure" | "reply" */
    const char *status;  /* "pass", "compile_error", "wrong_result", "no_code", ... */
    const char *tags;    /* the attempt's decision tags, comma separated */
    const char *text;    /* compiler diagnostics, failing cases, timing summary
                            (cut to CTX_FEEDBACK_MAX_BYTES in the prompt) */
    double speedup;      /* > 0 when measured (vs baseline) */
    const char *baseline;/* name of that baseline ("scalar-O2") */
    int emulated;        /* 1: speedup is an icount ratio under qemu */
    const char *taken;   /* which of the reply's code blocks was judged, NULL = its only one */
    const char *peer;    /* the best same-run peer (smallest ratio), NULL = none */
    double peer_ratio;   /* the ratio against it */
    const char *source;  /* a failed attempt's kernel (the prompt shows its diff against
                            the best, or itself), NULL = not given */
    const char *cost;    /* after a pass: its cost breakdown beside the current best's
                            (lines of text, core/agent/prompt.c), NULL = none */
};

struct ctx_request {
    const struct plat_task *task;   /* required */
    const uint8_t *task_id;         /* task record id (32 bytes) or NULL */
    const char *target;             /* PLAT_DEFAULT_TARGET when NULL */
    const char *dtype;              /* "f32" (default when NULL) */
    size_t budget_tokens;           /* 0 = CTX_BUDGET_DEFAULT; active mode only */
    enum ctx_mode mode;
    /* hot tier */
    const char *best_source;        /* current best kernel, NULL = none yet */
    const char *best_summary;       /* one line: "pass, 2.31x vs scalar-O2 (icount)" */
    const char *best_cost;          /* its cost breakdown (core/agent/prompt.c), NULL = none */
    double best_share;              /* roofline share of the best, 0 = unknown */
    const uint8_t *parent_decision; /* decision being refined (32 bytes) or NULL */
    const struct ctx_feedback *feedback; /* oldest first */
    size_t n_feedback;
    /* cold tier */
    const struct plat_probe *probe; /* NULL: use the newest probe record of target */
    /* token accounting */
    const char *endpoint;           /* key of the calibration factor, NULL = none */
    /* retrieval knobs (0 = defaults, see core/context/retrieve.h) */
    int max_similar_tasks;
};

/* Defaults: budget CTX_BUDGET_DEFAULT, CTX_ACTIVE, target PLAT_DEFAULT_TARGET, dtype "f32". */
void ctx_request_init(struct ctx_request *rq);

/* One candidate item and what became of it: the "which records and why". */
struct ctx_item {
    enum ctx_tier tier;
    int chosen;            /* 1 = in the prompt */
    size_t n_tokens;       /* estimated (raw, uncalibrated) */
    double value;          /* score; chosen greedily by value / n_tokens */
    char ref[80];          /* record id (hex prefix) or "knowledge/rvv.md#3" or "hot:feedback[2]" */
    char why[200];         /* "same op silu, shape 2^12 vs 2^12, same target, pass 3.1x" */
};

struct ctx_prompt {
    char *system;          /* owned, NUL-terminated */
    char *user;            /* owned, NUL-terminated */
    enum ctx_mode mode;
    size_t budget_tokens;  /* the budget applied (0 in passive mode) */
    size_t n_tokens_raw;   /* estimate of system + user, uncalibrated: pass
                              this to tokens_calibrate with usage.prompt_tokens */
    size_t n_tokens;       /* calibrated for rq->endpoint (= raw when none) */
    size_t tier_tokens[CTX_N_TIERS]; /* raw estimate per tier (system counted in cold/hot as built) */
    struct ctx_item *items; /* every candidate, chosen first then dropped; owned */
    size_t n_items;
    double build_ms;       /* wall time of context_build */
    char err[256];         /* message when context_build fails */
};

void ctx_prompt_init(struct ctx_prompt *p);
/* Accepts an initialised or built prompt; leaves it initialised. */
void ctx_prompt_free(struct ctx_prompt *p);

/* Build the prompt for rq into out (ctx_prompt_init'ed). Returns 0, or
 * KOPE_ERR_USAGE (no task / budget below CTX_BUDGET_MIN), KOPE_ERR_NOMEM,
 * KOPE_ERR_TOOBIG (passive prompt over CTX_PASSIVE_MAX_BYTES), or a store
 * error from retrieval; out->err says what. The prompt never exceeds the
 * budget in active mode (by the raw estimate). */
int context_build(struct graph *g, const struct ctx_request *rq, struct ctx_prompt *out);

/* Print the prompt as `kope context` shows it: a header with the tokens of
 * each tier, the items (chosen and dropped, with why), then the messages. */
void ctx_prompt_print(const struct ctx_prompt *p, FILE *f);

#endif /* KOPE_CONTEXT_H */

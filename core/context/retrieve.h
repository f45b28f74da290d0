/*
 * core/context/retrieve.h - experience retrieval for the warm tier of the context
 * (core/context/context.h): which decision -> outcome paths of the graph are worth
 * showing the model for this task.
 *
 * Keyed on what was MEASURED, not on text:
 *   - op (same op, else same family), dtype;
 *   - shape on a log scale (per dimension for the same op, total elements
 *     across ops of a family);
 *   - the roofline bound class of the task (compute or memory: arithmetic
 *     intensity against the probed ridge point, or a nominal X100 ridge
 *     when there is no native probe);
 *   - the share of the roofline peak an outcome reached ("share" in its
 *     body), which says how much a speed lesson is worth;
 *   - the target that produced it. Correctness lessons (failures and their
 *     reasons) transfer across targets almost fully; speed lessons (best
 *     paths, best kernels) are weighted toward the same target (the KOPE
 *     paper's K3 table: Ascend memory raised pass rate 60% -> 83% but not
 *     speed). Every item from another target says so in its text.
 *
 * Cost: candidate tasks come from the store's task_keys index (op, newest
 * first, capped), scored in memory; for the top RETR_MAX_TASKS tasks the
 * exp_keys index gives the best pass, failures and insights directly, and
 * only the decisions shown are fetched by id (a few dozen records in all,
 * however long each task's history). So a build costs the same at 10k or 1M
 * records (bench/context measures it).
 *
 * Deterministic: candidates are ordered by score, then by record id.
 */
#ifndef KOPE_RETRIEVE_H
#define KOPE_RETRIEVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/graph/graph.h"
#include "platform/platform.h"

#ifndef RETR_MAX_TASKS
#define RETR_MAX_TASKS 6          /* similar tasks whose records are read */
#endif
#ifndef RETR_SCAN_SAME_OP
#define RETR_SCAN_SAME_OP 512     /* task keys scanned for the same op */
#endif
#ifndef RETR_SCAN_OTHER_OP
#define RETR_SCAN_OTHER_OP 64     /* ... for each other op of the family */
#endif
#ifndef RETR_MAX_FAILS_PER_TASK
#define RETR_MAX_FAILS_PER_TASK 3 /* distinct failure lessons per task */
#endif
#ifndef RETR_MAX_SLOWDOWNS_PER_TASK
#define RETR_MAX_SLOWDOWNS_PER_TASK 2 /* slowdown lessons per task */
#endif
/* A pass counts as slower than its parent when its ratio is below the
 * parent's times this (same task, same baseline): 3% is beyond the noise
 * of a time ratio's median and far beyond the vcost model's, which repeats
 * exactly under emulation. */
#define RETR_SLOWDOWN_BELOW 0.97
#ifndef RETR_NOMINAL_RIDGE
#define RETR_NOMINAL_RIDGE 4.0    /* flop/byte: X100 core, 256-bit FMA vs ~8 GB/s */
#endif

/* Weights (the value of an item before dividing by its tokens). */
#define RETR_W_FAIL 1.0           /* a failure lesson */
#define RETR_W_PATH 1.2           /* a best decision path */
#define RETR_W_SOURCE 1.6         /* the best kernel's source of a similar task */
#define RETR_W_INSIGHT 1.4        /* an insight record */
#define RETR_W_SLOWDOWN 1.0       /* a pass slower than its parent */
#define RETR_W_OWN 3.0            /* this task's own history so far */
#define RETR_CROSS_CORRECTNESS 0.9 /* cross-target factor for correctness lessons */
#define RETR_CROSS_SPEED 0.25     /* cross-target factor for speed lessons */

enum retr_kind {
    RETR_OWN_HISTORY = 0, /* this task's attempts so far (tags, outcome) */
    RETR_BEST_PATH,       /* root -> best decision chain of a similar task */
    RETR_BEST_SOURCE,     /* that best kernel's source */
    RETR_FAILURE,         /* a failed attempt and why */
    RETR_INSIGHT,         /* an insight record */
    RETR_SLOWDOWN,        /* a pass slower than its parent: the change that cost speed */
};
const char *retr_kind_name(enum retr_kind k);

enum retr_lesson { RETR_CORRECTNESS = 0, RETR_SPEED = 1 };

enum retr_bound { RETR_BOUND_MEMORY = 0, RETR_BOUND_COMPUTE = 1 };
const char *retr_bound_name(enum retr_bound b);

struct retr_query {
    const struct plat_task *task;  /* required */
    const uint8_t *task_id;        /* own task record: its history is RETR_OWN_HISTORY */
    const char *target;            /* PLAT_DEFAULT_TARGET when NULL */
    const char *dtype;             /* "f32" when NULL */
    const struct plat_probe *probe; /* for the ridge point; NULL/emulated = nominal */
    double best_share;             /* share our best reached, 0 = unknown */
    int max_tasks;                 /* 0 = RETR_MAX_TASKS */
};

struct retr_item {
    enum retr_kind kind;
    enum retr_lesson lesson;
    int cross_target;              /* 1: from another target (labelled in text) */
    char target[32];
    char ref[GRAPH_ID_HEX];        /* the record (decision/insight/task) it shows */
    double sim;                    /* task similarity 0..1 */
    double value;                  /* weight * sim * target factor * measured factor */
    char *text;                    /* owned: the lines that go into the prompt */
    char why[200];                 /* short reason, for `kope context` */
};

struct retr_result {
    struct retr_item *items;       /* owned, sorted by value desc then ref */
    size_t n;
    enum retr_bound bound;         /* of the query task */
    double ridge;                  /* flop/byte used */
    int ridge_nominal;             /* 1 when no native probe gave it */
    size_t n_keys_scanned;         /* task keys looked at */
    size_t n_tasks_read;           /* similar tasks whose lessons were read */
    size_t n_records_read;         /* key rows and records fetched */
};

void retr_result_init(struct retr_result *r);
void retr_result_free(struct retr_result *r);

/* The bound class of t given a ridge point (flop/byte). */
enum retr_bound retrieve_bound(const struct plat_task *t, double ridge);

/* Similarity of candidate task b to query task a, 0..1 (0 = other family).
 * dtypes may be NULL (taken as "f32"). Exposed for tests. */
double retrieve_similarity(const struct plat_task *a, const char *dtype_a,
                           const struct plat_task *b, const char *dtype_b, double ridge);

/* Retrieve the warm-tier candidates for q into out (retr_result_init'ed).
 * Returns 0, KOPE_ERR_NOMEM, or a STORE_ERR_* code (g->err / store message). */
int retrieve_run(struct graph *g, const struct retr_query *q, struct retr_result *out);

#endif /* KOPE_RETRIEVE_H */

/*
 * core/agent/tuner.h - the offline tuner: kope's proposer when no LLM is
 * configured (or with --offline). It walks the target's tuning space of
 * the task's op (struct plat_space, platform_ops.space: for k3 its RVV
 * templates) in an order that spends trials where they are likely to pay:
 *
 *   1. the template's default point, always first: it passes on every
 *      supported shape, so even a budget of one trial ends with a kernel;
 *   2. the "prior": points that won on similar tasks of the same op on the
 *      same target, read from the experience graph (nearest shape first);
 *   3. one-parameter neighbours of the best point so far (hill climbing);
 *   4. every other valid point, in the space's index order.
 *
 * The order depends only on the task, the prior and the trial history, so
 * a resumed run proposes exactly what the interrupted one would have.
 *
 * Ownership: struct tuner_prior owns its points (tuner_prior_free).
 */
#ifndef KOPE_TUNER_H
#define KOPE_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"

struct graph;

#ifndef TUNER_PRIOR_MAX
#define TUNER_PRIOR_MAX 8       /* remembered winners tried after the default */
#endif
#ifndef TUNER_SIMILAR_MAX
#define TUNER_SIMILAR_MAX 16    /* similar task records examined */
#endif

/* One trial already made for this task (by anyone: tuner or LLM). For an
 * LLM kernel that is not a template point, has_point is 0. */
struct tuner_trial {
    int has_point;
    int v[PLAT_PARAM_MAX];
    int pass;
    double score;               /* higher is better (speedup); only if pass */
};

struct tuner_prior {
    int (*v)[PLAT_PARAM_MAX];     /* points, best first (owned) */
    double *speedup;            /* what each achieved where it won */
    size_t n;
};
void tuner_prior_init(struct tuner_prior *p);
void tuner_prior_free(struct tuner_prior *p);

/* Fill p with the winning points of tasks similar to t (same op, same
 * target; nearest shape in log2 distance first; the task record self is
 * included: its earlier runs are the best evidence). Returns 0 or a
 * KOPE_ERR_* / STORE_ERR_* code. An empty graph, or a target without a
 * space for the op, gives an empty prior. */
int tuner_prior_load(struct graph *g, const struct plat_task *t, const char *target,
                     struct tuner_prior *p);

/* The next point of space sp to try after the n trials in hist (oldest
 * first). Returns 0 with v filled, 1 when every valid point has been tried.
 * *why (may be NULL) gets a static phrase: "default", "prior", "neighbour
 * of best", "sweep". */
int tuner_next(const struct plat_space *sp, const struct tuner_trial *hist, size_t n,
               const struct tuner_prior *prior, int v[PLAT_PARAM_MAX], const char **why);

#endif

/*
 * core/agent/bestpeer.h - the best same-run peer of a kernel, and geometric means
 * of ratios against it, for the run table (core/cli/cli_run.c), the report
 * (core/cli/cli_report.c) and bench/.
 *
 * A kernel is measured with its same-run baselines (scalar-O2, autovec-O3,
 * OpenBLAS where BLAS computes the op exactly, ...), each as a ratio
 * baseline / kernel (> 1: the kernel is better). The best peer is the
 * strongest of them: the one with the smallest ratio. "At least the best
 * peer" means that ratio >= 1.
 *
 * Ratios are multiplicative, so they are averaged geometrically: the mean
 * of log(ratio), exponentiated. Non-positive ratios (not claimed) are
 * ignored.
 */
#ifndef KOPE_CORE_BESTPEER_H
#define KOPE_CORE_BESTPEER_H

/* Index of the smallest positive ratio among n, or -1 when none is claimed. */
int bestpeer_pick(const double *ratios, int n);

struct geomean {
    double sum_log;   /* sum of ln(ratio) */
    int n;            /* ratios added */
    int at_least_1;   /* of them, ratios >= 1 */
};

/* Add one ratio (ignored when <= 0 or not finite). Cannot fail. */
void geomean_add(struct geomean *g, double ratio);
/* The geometric mean of what was added; 0 when nothing was. */
double geomean_value(const struct geomean *g);

#endif

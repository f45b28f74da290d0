/* core/agent/bestpeer.c - best same-run peer and geometric means. See bestpeer.h. */
#include <math.h>

#include "core/agent/bestpeer.h"

int bestpeer_pick(const double *ratios, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (ratios[i] > 0 && isfinite(ratios[i]) && (best < 0 || ratios[i] < ratios[best]))
            best = i;
    return best;
}

void geomean_add(struct geomean *g, double ratio)
{
    if (!(ratio > 0) || !isfinite(ratio))
        return;
    g->sum_log += log(ratio);
    g->n++;
    g->at_least_1 += ratio >= 1.0;
}

double geomean_value(const struct geomean *g)
{
    return g->n ? exp(g->sum_log / g->n) : 0;
}

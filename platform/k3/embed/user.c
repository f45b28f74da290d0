/*
 * user.c - the glue between the harness and a user's own op (embedded; built
 * once per family with -DKOPE_USER_FAMILY=F, an enum plat_family value).
 *
 * A user op brings its reference: one C file defining kope_kernel with the
 * family's signature (platform/kernel_abi.h). kope compiles that file twice,
 * kope_kernel renamed: kope_user_scalar (-O2, vectorizer off: plain f32
 * scalar code) and kope_user_autovec (-O3, RVV on). This file turns them into
 * what the harness calls:
 *   h_user_ref         the judge's reference: kope_user_scalar into judge
 *                      memory, each f32 result widened to double. It runs in
 *                      the judge only, like ref.c, on the judge's master
 *                      copies of the inputs, never in a kernel process's view;
 *   kope_base_scalar   the scalar baseline (the same build, timed in a kernel
 *                      process like every baseline);
 *   kope_base_autovec  the autovec baseline.
 * So the reference is plain scalar f32, not double precision: a candidate is
 * judged against what the user's own code computes, within the task's
 * tolerance (docs/KERNELS.md).
 */
#include <math.h>
#include <stdlib.h>

#include "kernel_abi.h"
#include "hargs.h"

#ifndef KOPE_USER_FAMILY
#error "KOPE_USER_FAMILY must be the op family (0 elementwise .. 3 matmul)"
#endif

#if KOPE_USER_FAMILY == 0
typedef kope_elementwise_fn user_fn;
#elif KOPE_USER_FAMILY == 1
typedef kope_activation_fn user_fn;
#elif KOPE_USER_FAMILY == 2
typedef kope_reduction_fn user_fn;
#else
typedef kope_matmul_fn user_fn;
#endif

user_fn kope_user_scalar, kope_user_autovec;

static void user_call(user_fn *f, const struct h_args *a, float *out)
{
#if KOPE_USER_FAMILY == 0
    struct kope_scalars s = {a->alpha, a->lo, a->hi, a->eps};
    f(a->n, a->x, a->y, out, &s);
#elif KOPE_USER_FAMILY == 1
    struct kope_scalars s = {a->alpha, a->lo, a->hi, a->eps};
    f(a->rows, a->cols, a->x, out, a->gamma, a->beta, &s);
#elif KOPE_USER_FAMILY == 2
    f(a->rows, a->cols, a->x, out);
#else
    f(a->batch, a->m, a->n, a->k, a->a, a->b, out);
#endif
}

void kope_base_scalar(const struct h_args *a) { user_call(kope_user_scalar, a, a->out); }
void kope_base_autovec(const struct h_args *a) { user_call(kope_user_autovec, a, a->out); }

void h_user_ref(const struct h_args *a, double *out)
{
    size_t n = a->out_count ? a->out_count : 1;
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp) { /* no answer is no pass: every candidate then fails the case */
        for (size_t i = 0; i < a->out_count; i++)
            out[i] = NAN;
        return;
    }
    for (size_t i = 0; i < n; i++)
        tmp[i] = NAN;
    user_call(kope_user_scalar, a, tmp);
    for (size_t i = 0; i < a->out_count; i++)
        out[i] = tmp[i];
    free(tmp);
}

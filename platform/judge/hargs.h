/*
 * platform/judge/hargs.h - what the judge, the references and the baselines
 * share about one call: the op order, the harness flags, struct h_args (one
 * call's operands) and the entry points of the references (ref.c) and the
 * K3 baselines (platform/k3/embed/base.c, blas.c, sleef.c, user.c). Embedded
 * in the kope binary: the K3 harness and the Ascend host program are built
 * from it by the target's compiler; kope's drivers (platform/k3/k3.c,
 * platform/ascend/ascend.c) include it for the op order and the report
 * protocol.
 *
 * The op order equals enum plat_op in platform/platform.h; k3.c checks that
 * with a static assertion. Nothing here may include kope headers: the harness
 * is built by the target compiler from a temp dir.
 *
 * Report protocol (one line per record, written by the harness to the file
 * named by report=PATH, never to stdout, which the candidate may flood):
 *   case LABEL N ROWS COLS M K BATCH PASS REASON MAX_ABS MAX_REL NORM FIRST_BAD [VALS]
 *                                         VALS (failing cases only, optional, so a
 *                                         13-field reader still parses the line):
 *                                         got=0xBITS ref=REF [x=X [y=Y]] at FIRST_BAD;
 *                                         x/y only where the output index is the
 *                                         input index (elementwise, activations)
 *   fail REASON SIGNAL DETAIL...          a terminal failure (signal handler etc.)
 *   time NAME MEDIAN_NS MIN_NS SPREAD REPEATS WARMUP
 *                                         (NAME candidate first; with H_FLAG_AA a
 *                                         last "candidate-aa": the A/A timing)
 *   icount_region IDX NAME PID            a counted call, made in process PID
 *   method TEXT...
 *   done                                  the run completed
 * REASON is a plat_fail name ("none", "wrong_result", ...).
 */
#ifndef KOPE_JUDGE_HARGS_H
#define KOPE_JUDGE_HARGS_H

enum h_op {
    H_OP_ADD = 0, H_OP_MUL, H_OP_AXPY, H_OP_SCALE, H_OP_CLAMP,
    H_OP_RELU, H_OP_GELU_TANH, H_OP_GELU_ERF, H_OP_SILU,
    H_OP_SIGMOID, H_OP_TANH, H_OP_EXP,
    H_OP_SOFTMAX, H_OP_LAYERNORM, H_OP_RMSNORM,
    H_OP_SUM, H_OP_MAX, H_OP_MEAN, H_OP_L2NORM, H_OP_ARGMAX,
    H_OP_GEMM, H_OP_GEMM_NT, H_OP_GEMV,
    H_OP_COUNT
};

/* A user's own op (op=user family=F rowwise=R lo= hi=): equals PLAT_OP_USER.
 * Its reference and baselines come from user.c and the user's file. */
#define H_OP_USER 100

#define H_OP_NAMES \
    "add", "mul", "axpy", "scale", "clamp", "relu", "gelu_tanh", "gelu_erf", \
    "silu", "sigmoid", "tanh", "exp", "softmax", "layernorm", "rmsnorm", "sum", \
    "max", "mean", "l2norm", "argmax", "gemm", "gemm_nt", "gemv"

/* harness flags= bits */
#define H_FLAG_FLUSH 1        /* flush caches between timed repeats */
#define H_FLAG_NO_BASELINES 2 /* time the candidate only */
#define H_FLAG_NO_PIN 4       /* do not pin to one core */
#define H_FLAG_QUICK 8        /* emulated: 1 warm-up, 3 samples, no calibration */
#define H_FLAG_AA 16          /* time the candidate a second time, last ("candidate-aa") */

/* Exit status of the harness when it reported a failure itself. */
#define H_EXIT_FAIL 3

/* The bit pattern outputs are filled with before every call: a quiet NaN
 * with a payload no arithmetic produces, so "still this pattern" means
 * "never written". */
#define H_FILL_BITS 0x7fc0deadu

#ifndef KOPE_HARNESS_HOST_ONLY
#include <stddef.h>
#include <stdint.h>

/* One call's operands, shared by the reference, the baselines and the
 * candidate. Pointers are into guarded mappings owned by harness.c. */
struct h_args {
    int op;
    size_t n, rows, cols, m, k, batch;  /* as the family ABI takes them */
    const float *x, *y;                 /* elementwise/activation/reduction inputs */
    const float *a, *b;                 /* matmul inputs (b = x for gemv) */
    const float *gamma, *beta;
    float alpha, lo, hi, eps;
    void *out;                          /* float, or int32_t for argmax */
    size_t out_count;                   /* elements in out */
};

/* ref.c: double-precision reference into out (out_count doubles). */
void h_ref_run(const struct h_args *a, double *out);
/* user.c (a user op's builds only): the user's reference in f32, widened to
 * double into out. ref.c calls it for H_OP_USER. */
void h_user_ref(const struct h_args *a, double *out);
/* base.c: a plain C f32 implementation of op KOPE_BASE_OP, compiled twice
 * (scalar -O2 no-vectorize, and -O3 auto-vectorized) under two names; for a
 * user op, user.c defines both over the user's reference. */
void kope_base_scalar(const struct h_args *a);
void kope_base_autovec(const struct h_args *a);
/* blas.c: OpenBLAS where a BLAS routine computes exactly the op (the matmul
 * family, axpy, scale, add, l2norm); returns 0 when not linked or the op has
 * no exact BLAS equivalent. */
int h_blas_available(int op);
void h_blas_run(const struct h_args *a);
/* sleef.c: SLEEF's RVV vector math, LMUL 1 and LMUL 2, for the
 * transcendental ops (exp, tanh, sigmoid, silu, gelu_tanh, gelu_erf,
 * softmax); returns 0 when not linked or the op is not one of them. */
int h_sleef_available(int op);
void h_sleef_run_m1(const struct h_args *a);
void h_sleef_run_m2(const struct h_args *a);
#endif

#endif

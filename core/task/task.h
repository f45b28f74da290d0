/*
 * core/task/task.h - task suites: the JSON files users write by hand to say which
 * kernels to optimize, parsed into struct plat_task for the platform layer.
 *
 * Format (shared between sites, so kept exactly this shape):
 *
 *   {"suite": "k3-core",
 *    "tasks": [{"name": "silu-4096", "op": "silu", "dtype": "f32",
 *               "shape": {"n": 4096},
 *               "tolerance": {"rtol": 1e-4, "atol": 1e-5},     (optional)
 *               "source": "Llama-3 8B MLP width",                 (optional)
 *               "seed": "kernels/my_silu.c"}]}                     (optional)
 *
 * A user's own op (an op outside the catalogue) brings its reference:
 *
 *   {"name": "swiglu-4096", "op": "swiglu", "family": "elementwise",
 *    "ref": "ops/swiglu_ref.c", "shape": {"n": 4096},
 *    "tolerance": {"rtol": 1e-4, "atol": 1e-5},                     (optional)
 *    "range": [-8, 8]}                                               (optional)
 *
 * "family" is one of elementwise, activation, reduction, matmul and fixes the
 * signature the reference (and every candidate) implements and the shape keys
 * (activation: {n} pointwise or {rows, cols} row-wise). "range" is where the
 * inputs are drawn from (default [-4, 4]). The op's name must not be a
 * catalogue op and must be [a-z][a-z0-9_]* (it becomes part of C symbols).
 * What kope does with the reference: platform.h struct plat_user_op.
 *
 * "ref" and "seed" are a file (relative to the suite file's folder) or, when
 * the string holds a newline, the C source itself (inline).
 *
 * Shape keys by op: `n` for elementwise ops and pointwise activations;
 * `rows`, `cols` for softmax/layernorm/rmsnorm and reductions (one result per
 * row); `m`, `n`, `k` (+ optional `batch`) for gemm/gemm_nt; `m`, `k` for
 * gemv (y = A.x, A is m x k). Sizes are integers >= 1; the buffers of one
 * task must fit in TASK_MAX_BYTES (a K3 board's memory budget for one
 * kernel). Unknown ops, unknown or missing shape keys, negative, fractional or
 * absurd sizes, duplicate names: an error naming the task and the field.
 * Without a tolerance the op's default applies (plat_op_default_tol).
 *
 * "seed" names a user's kernel file (relative to the suite file's folder) that
 * `kope run` tries as the task's first trial, recorded with proposer "user"
 * and screened, verified and measured like any candidate. task_suite_load
 * reads it (capped at PLAT_SRC_MAX): a missing or unreadable seed is an error
 * naming the task and the field before anything runs.
 */
#ifndef KOPE_TASK_H
#define KOPE_TASK_H

#include <stddef.h>

#include "platform/platform.h"

#ifndef TASK_MAX_BYTES
#define TASK_MAX_BYTES ((double)4 * 1024 * 1024 * 1024) /* operands of one task */
#endif
#ifndef TASK_MAX_DIM
#define TASK_MAX_DIM 2147483647.0 /* BLAS takes int dimensions */
#endif
#ifndef TASK_MAX_TASKS
#define TASK_MAX_TASKS 4096
#endif
#ifndef TASK_FILE_MAX_BYTES
#define TASK_FILE_MAX_BYTES (4 * 1024 * 1024)
#endif

/* The default suite, embedded in the binary. */
#define TASK_DEFAULT_SUITE "suites/k3-core.json"

struct task_entry {
    struct plat_task t;
    char source[160];   /* where the shape comes from ("" if not given) */
    int tol_given;      /* 1 if the file set the tolerance */
    char seed_file[256]; /* "seed" as written in the suite ("" = none) */
    char *seed;         /* its source, read by task_suite_load (owned; NULL = none) */
    size_t seed_len;
    struct plat_user_op *user; /* a user's own op (owned; t.user points here); NULL = catalogue op */
    char *ref;          /* user->ref's bytes (owned): read at load, or inline */
};

struct task_suite {
    char name[PLAT_NAME_MAX];
    struct task_entry *tasks; /* n_tasks entries, owned */
    size_t n_tasks;
};

/* Parse a suite from JSON text (len bytes). On success *out is filled and
 * owned by the caller (task_suite_free). On failure returns KOPE_ERR_PARSE
 * (or KOPE_ERR_NOMEM / KOPE_ERR_TOOBIG) with a message naming the task and
 * field in err; *out is left empty. */
int task_suite_parse(const char *json, size_t len, struct task_suite *out, char *err,
                     size_t err_len);

/* Load a suite file; path NULL loads the embedded default suite. Errors as
 * task_suite_parse, plus KOPE_ERR_IO; messages start with the file name. A
 * key the format does not have ("tolerence", "sead", "shpe") is
 * KOPE_ERR_PARSE naming FILE:LINE:COLUMN, with "did you mean" for a near
 * miss and a `hint:` line listing the keys there. (task_suite_parse itself
 * reads the keys it knows and ignores the rest: it also reads task specs
 * rebuilt from records, which carry a few more.) */
int task_suite_load(const char *path, struct task_suite *out, char *err, size_t err_len);

/* Read a user's kernel file (a seed) for task `task` into *src (heap, caller
 * frees), capped at PLAT_SRC_MAX. field names where it came from in messages
 * ("seed", "--seed"). KOPE_ERR_IO / KOPE_ERR_TOOBIG with err set. */
int task_seed_read(const char *path, const char *task, const char *field, char **src, size_t *len,
                   char *err, size_t err_len);

/* Check a user op's reference (te->user) on its own before a run records
 * anything: built as a candidate of the task on platform p (the same screen),
 * then verified against itself (its scalar build is the judge's reference),
 * on the task shape and the awkward cases. A reference that is refused, does
 * not build as the family's signature, crashes (an out-of-bounds read hits a
 * guard page), leaves output unwritten, or disagrees with itself across calls
 * (state, uninitialised reads) is KOPE_ERR_PARSE with err naming the task,
 * the field and the file. 0 for a good reference or a catalogue task;
 * PLAT_ERR_* when the platform itself failed (err says why). */
int task_ref_check(struct platform *p, const struct task_entry *te, char *err, size_t err_len);

/* Accepts a zeroed suite. */
void task_suite_free(struct task_suite *s);

/* The name of s's task nearest to name when name is probably a typo of it
 * (core/suggest.h: "silu-486" -> "silu-4864"), else NULL. Owned by s. */
const char *task_suite_near(const struct task_suite *s, const char *name);

/* The task named name, or NULL. Owned by s. */
const struct task_entry *task_suite_find(const struct task_suite *s, const char *name);

/* "n=4096", "rows=32 cols=151936", "m=1 n=4096 k=4096", ... into buf. */
void task_shape_print(const struct plat_task *t, char *buf, size_t len);

/* Bytes of all operands of one call (inputs + output). */
double task_bytes(const struct plat_task *t);

#endif

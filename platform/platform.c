/*
 * platform/platform.c - the one place a target is chosen, the op catalogue,
 * the arithmetic of tuning spaces (struct plat_space), and the thin wrappers
 * that check optional members of struct platform_ops.
 *
 * Everything here is target-independent: names of ops/families/failures,
 * default tolerances, and error text for the PLAT_ERR_* band. A target adds
 * itself by appending its ops table to `targets` below.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

extern const struct platform_ops plat_k3_ops;     /* platform/k3/k3.c */
extern const struct platform_ops plat_ascend_ops; /* platform/ascend/ascend.c */

static const struct platform_ops *const targets[] = {
    &plat_k3_ops,
    &plat_ascend_ops,
};

/* ---------------------------------------------------------------- ops --- */

struct op_info {
    const char *name;
    enum plat_family fam;
    int rowwise;
    double rtol, atol;
};

/* Default tolerances: an f32 kernel against a double reference. Pointwise
 * arithmetic is exact to a rounding or two; transcendentals get room for
 * polynomial approximations; long reductions and matmuls accumulate error
 * roughly with sqrt(length), which the atol/rtol pair below covers for the
 * suite's sizes (k up to ~14k). */
static const struct op_info ops[PLAT_OP_COUNT] = {
    [PLAT_OP_ADD] = {"add", PLAT_FAM_ELEMENTWISE, 0, 1e-6, 1e-6},
    [PLAT_OP_MUL] = {"mul", PLAT_FAM_ELEMENTWISE, 0, 1e-6, 1e-6},
    [PLAT_OP_AXPY] = {"axpy", PLAT_FAM_ELEMENTWISE, 0, 1e-5, 1e-6},
    [PLAT_OP_SCALE] = {"scale", PLAT_FAM_ELEMENTWISE, 0, 1e-6, 1e-6},
    [PLAT_OP_CLAMP] = {"clamp", PLAT_FAM_ELEMENTWISE, 0, 0, 0},
    [PLAT_OP_RELU] = {"relu", PLAT_FAM_ACTIVATION, 0, 0, 0},
    [PLAT_OP_GELU_TANH] = {"gelu_tanh", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-5},
    [PLAT_OP_GELU_ERF] = {"gelu_erf", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-5},
    [PLAT_OP_SILU] = {"silu", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-5},
    [PLAT_OP_SIGMOID] = {"sigmoid", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-5},
    [PLAT_OP_TANH] = {"tanh", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-5},
    [PLAT_OP_EXP] = {"exp", PLAT_FAM_ACTIVATION, 0, 1e-4, 1e-6},
    [PLAT_OP_SOFTMAX] = {"softmax", PLAT_FAM_ACTIVATION, 1, 1e-4, 1e-6},
    [PLAT_OP_LAYERNORM] = {"layernorm", PLAT_FAM_ACTIVATION, 1, 1e-4, 1e-4},
    [PLAT_OP_RMSNORM] = {"rmsnorm", PLAT_FAM_ACTIVATION, 1, 1e-4, 1e-4},
    [PLAT_OP_SUM] = {"sum", PLAT_FAM_REDUCTION, 0, 1e-4, 1e-3},
    [PLAT_OP_MAX] = {"max", PLAT_FAM_REDUCTION, 0, 0, 0},
    [PLAT_OP_MEAN] = {"mean", PLAT_FAM_REDUCTION, 0, 1e-4, 1e-5},
    [PLAT_OP_L2NORM] = {"l2norm", PLAT_FAM_REDUCTION, 0, 1e-4, 1e-5},
    [PLAT_OP_ARGMAX] = {"argmax", PLAT_FAM_REDUCTION, 0, 0, 0},
    [PLAT_OP_GEMM] = {"gemm", PLAT_FAM_MATMUL, 0, 1e-4, 1e-3},
    [PLAT_OP_GEMM_NT] = {"gemm_nt", PLAT_FAM_MATMUL, 0, 1e-4, 1e-3},
    [PLAT_OP_GEMV] = {"gemv", PLAT_FAM_MATMUL, 0, 1e-4, 1e-3},
};

const char *plat_op_name(enum plat_op op)
{
    return (unsigned)op < PLAT_OP_COUNT ? ops[op].name : NULL;
}

int plat_op_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < PLAT_OP_COUNT; i++)
        if (strcmp(ops[i].name, s) == 0)
            return i;
    return -1;
}

enum plat_family plat_op_family(enum plat_op op)
{
    return (unsigned)op < PLAT_OP_COUNT ? ops[op].fam : PLAT_FAM_COUNT;
}

int plat_op_is_rowwise(enum plat_op op)
{
    return (unsigned)op < PLAT_OP_COUNT && ops[op].rowwise;
}

const char *plat_task_op_name(const struct plat_task *t)
{
    if (t->op == PLAT_OP_USER)
        return t->user && t->user->name[0] ? t->user->name : "?";
    const char *n = plat_op_name(t->op);
    return n ? n : "?";
}

int plat_task_rowwise(const struct plat_task *t)
{
    if (t->op == PLAT_OP_USER)
        return t->user && t->family == PLAT_FAM_ACTIVATION && t->user->rowwise;
    return plat_op_is_rowwise(t->op);
}

const char *plat_family_name(enum plat_family f)
{
    static const char *const names[PLAT_FAM_COUNT] = {
        "elementwise", "activation", "reduction", "matmul"};
    return (unsigned)f < PLAT_FAM_COUNT ? names[f] : "unknown";
}

void plat_op_default_tol(enum plat_op op, double *rtol, double *atol)
{
    *rtol = (unsigned)op < PLAT_OP_COUNT ? ops[op].rtol : 1e-4;
    *atol = (unsigned)op < PLAT_OP_COUNT ? ops[op].atol : 1e-5;
}

/* ------------------------------------------------------- names / text --- */

const char *plat_fail_name(enum plat_fail f)
{
    static const char *const names[PLAT_FAIL_COUNT] = {
        [PLAT_FAIL_NONE] = "none",
        [PLAT_FAIL_SCREEN_REJECTED] = "screen_rejected",
        [PLAT_FAIL_COMPILE_ERROR] = "compile_error",
        [PLAT_FAIL_CRASH] = "crash",
        [PLAT_FAIL_TIMEOUT] = "timeout",
        [PLAT_FAIL_WRONG_RESULT] = "wrong_result",
        [PLAT_FAIL_NAN_INF] = "nan_inf",
        [PLAT_FAIL_UNWRITTEN_OUTPUT] = "unwritten_output",
        [PLAT_FAIL_OUT_OF_BOUNDS_WRITE] = "out_of_bounds_write",
        [PLAT_FAIL_OUTPUT_FLOOD] = "output_flood",
        [PLAT_FAIL_MEMORY_LIMIT] = "memory_limit",
        [PLAT_FAIL_STATEFUL] = "stateful",
        [PLAT_FAIL_INPUT_MODIFIED] = "input_modified",
        [PLAT_FAIL_HARNESS] = "harness",
    };
    return (unsigned)f < PLAT_FAIL_COUNT && names[f] ? names[f] : "unknown";
}

const char *plat_screen_rule_name(enum plat_screen_rule r)
{
    static const char *const names[PLAT_SCREEN_COUNT] = {
        [PLAT_SCREEN_NONE] = "none",
        [PLAT_SCREEN_HEADER] = "header",
        [PLAT_SCREEN_CALL] = "forbidden_call",
        [PLAT_SCREEN_ASM] = "asm",
        [PLAT_SCREEN_CTOR] = "constructor",
        [PLAT_SCREEN_ATTRIBUTE] = "attribute",
        [PLAT_SCREEN_STATE] = "mutable_state",
        [PLAT_SCREEN_SYMBOL] = "forbidden_symbol",
        [PLAT_SCREEN_NO_KERNEL] = "no_kernel",
        [PLAT_SCREEN_TOO_BIG] = "too_big",
        [PLAT_SCREEN_SYSTEM_INSN] = "system_instruction",
        [PLAT_SCREEN_DIRECTIVE] = "directive",
        [PLAT_SCREEN_PRAGMA] = "pragma",
        [PLAT_SCREEN_SECTION] = "section",
        [PLAT_SCREEN_RELOCATION] = "relocation",
        [PLAT_SCREEN_CHARACTER] = "character",
    };
    return (unsigned)r < PLAT_SCREEN_COUNT && names[r] ? names[r] : "unknown";
}

const char *platform_strerror(int code)
{
    switch (code) {
    case PLAT_ERR_INTERNAL: return "platform: internal error";
    case PLAT_ERR_NOMEM: return "platform: out of memory";
    case PLAT_ERR_NO_TARGET: return "platform: no such target";
    case PLAT_ERR_NO_TOOLCHAIN: return "platform: no usable compiler for the target";
    case PLAT_ERR_NO_RUNNER: return "platform: no emulator to run target code";
    case PLAT_ERR_WORKDIR: return "platform: work directory unusable";
    case PLAT_ERR_SPAWN: return "platform: cannot start a child process";
    case PLAT_ERR_HARNESS: return "platform: the measuring harness does not build";
    case PLAT_ERR_PROTOCOL: return "platform: harness output not understood";
    case PLAT_ERR_UNSUPPORTED: return "platform: operation not supported by this target";
    case PLAT_ERR_BAD_TASK: return "platform: task invalid for this target";
    case PLAT_ERR_IO: return "platform: file read/write failed";
    case PLAT_ERR_NOT_BUILT: return "platform: candidate was not built";
    default:
        if (code <= -300 && code >= -399)
            return "platform: unknown error";
        return NULL;
    }
}

void plat_settings_init(struct plat_settings *s)
{
    memset(s, 0, sizeof *s);
}

void plat_task_work(const struct plat_task *t, double *flops, double *bytes)
{
    double n = (double)t->n, rc = (double)t->rows * (double)t->cols, c = (double)t->cols;
    double m = (double)t->m, k = (double)t->k, b = t->batch ? (double)t->batch : 1;
    *flops = *bytes = 0;
    switch (t->op) {
    case PLAT_OP_ADD: case PLAT_OP_MUL: *flops = n; *bytes = 12 * n; break;
    case PLAT_OP_AXPY: *flops = 2 * n; *bytes = 12 * n; break;
    case PLAT_OP_SCALE: *flops = n; *bytes = 8 * n; break;
    case PLAT_OP_CLAMP: *flops = 2 * n; *bytes = 8 * n; break;
    case PLAT_OP_RELU: *flops = n; *bytes = 8 * n; break;
    case PLAT_OP_EXP: case PLAT_OP_TANH: *flops = n; *bytes = 8 * n; break;
    case PLAT_OP_SIGMOID: *flops = 3 * n; *bytes = 8 * n; break;
    case PLAT_OP_SILU: *flops = 4 * n; *bytes = 8 * n; break;
    case PLAT_OP_GELU_TANH: *flops = 8 * n; *bytes = 8 * n; break;
    case PLAT_OP_GELU_ERF: *flops = 4 * n; *bytes = 8 * n; break;
    case PLAT_OP_SOFTMAX: *flops = 4 * rc; *bytes = 8 * rc; break;
    case PLAT_OP_LAYERNORM: *flops = 7 * rc; *bytes = 8 * rc + 8 * c; break;
    case PLAT_OP_RMSNORM: *flops = 4 * rc; *bytes = 8 * rc + 4 * c; break;
    case PLAT_OP_SUM: case PLAT_OP_MAX: case PLAT_OP_MEAN: case PLAT_OP_ARGMAX:
        *flops = rc; *bytes = 4 * rc + 4 * (double)t->rows; break;
    case PLAT_OP_L2NORM: *flops = 2 * rc; *bytes = 4 * rc + 4 * (double)t->rows; break;
    case PLAT_OP_GEMV: *flops = 2 * m * k; *bytes = 4 * (m * k + k + m); break;
    case PLAT_OP_GEMM: case PLAT_OP_GEMM_NT:
        *flops = 2 * b * m * (double)t->n * k;
        *bytes = 4 * b * (m * k + k * (double)t->n + m * (double)t->n);
        break;
    case PLAT_OP_USER: /* what its reference computes is unknown: one step per element */
        switch (t->family) {
        case PLAT_FAM_ELEMENTWISE: *flops = n; *bytes = 12 * n; break;
        case PLAT_FAM_ACTIVATION:
            *flops = t->rows ? rc : n;
            *bytes = 8 * (t->rows ? rc : n);
            break;
        case PLAT_FAM_REDUCTION: *flops = rc; *bytes = 4 * rc + 4 * (double)t->rows; break;
        case PLAT_FAM_MATMUL:
            *flops = 2 * b * m * (double)t->n * k;
            *bytes = 4 * b * (m * k + k * (double)t->n + m * (double)t->n);
            break;
        default: break;
        }
        break;
    default: break;
    }
}

double plat_emulated_ratio(uint64_t cand_vcost, uint64_t cand_icount, uint64_t base_vcost,
                           uint64_t base_icount, const char **metric)
{
    /* vcost first: raw counts make LMUL free (one vfadd at LMUL 8 counts
     * like one at LMUL 1), the model does not */
    if (cand_vcost && base_vcost) {
        *metric = "vcost";
        return (double)base_vcost / (double)cand_vcost;
    }
    if (cand_icount && base_icount) {
        *metric = "icount";
        return (double)base_icount / (double)cand_icount;
    }
    *metric = "";
    return 0;
}

void plat_metric_merge(char ratio_metric[8], const char *metric)
{
    if (metric[0] && (!ratio_metric[0] || strcmp(metric, "icount") == 0))
        snprintf(ratio_metric, 8, "%s", metric);
}

double plat_roofline_share(const struct plat_probe *pr, double flops, double bytes, double ns)
{
    if (!pr || pr->emulated || pr->peak_gflops_core <= 0 || pr->triad_gbs <= 0 || ns <= 0 ||
        bytes <= 0)
        return 0;
    double ai = flops / bytes;                         /* flop per byte */
    double attainable = pr->peak_gflops_core;          /* GFLOP/s */
    if (ai * pr->triad_gbs < attainable)
        attainable = ai * pr->triad_gbs;
    double achieved = flops / ns;                      /* flop/ns = GFLOP/s */
    return attainable > 0 ? achieved / attainable : 0;
}

/* ------------------------------------------------------------- handle --- */

const struct platform_ops *platform_find(const char *name)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (name && strcmp(targets[i]->name, name) == 0)
            return targets[i];
    return NULL;
}

double platform_rank(const char *target, const struct plat_outcome *o)
{
    const struct platform_ops *t = platform_find(target);
    if (t && t->rank)
        return t->rank(o);
    return o->num(o->ctx, "speedup", 0);
}

const struct plat_space *platform_space(const char *target, enum plat_op op)
{
    const struct platform_ops *t = platform_find(target);
    return t && t->space && (unsigned)op < PLAT_OP_COUNT ? t->space(op) : NULL;
}

size_t platform_peers(const char *target, const struct plat_settings *s, char *buf, size_t cap)
{
    const struct platform_ops *t = platform_find(target);
    if (cap)
        buf[0] = '\0';
    return t && t->peers && cap ? t->peers(s, buf, cap) : 0;
}

const char *plat_setting_str(const struct platform *p, const char *key)
{
    const struct plat_settings *s = &p->set;
    return s->own_str ? s->own_str(s->own, p->ops->name, key) : NULL;
}

double plat_setting_num(const struct platform *p, const char *key, double dflt)
{
    const struct plat_settings *s = &p->set;
    return s->own_num ? s->own_num(s->own, p->ops->name, key, dflt) : dflt;
}

const struct plat_prompt *platform_prompt(const char *target)
{
    const struct platform_ops *t = platform_find(target);
    if (!t || !t->prompt)
        t = platform_find(PLAT_DEFAULT_TARGET);
    return t->prompt;
}

/* ------------------------------------------------------ tuning spaces --- */

int plat_point_get(const struct plat_space *s, const int *v, const char *name)
{
    for (int i = 0; i < s->n_params; i++)
        if (strcmp(s->params[i].name, name) == 0)
            return v[i];
    return -1;
}

void plat_point_default(const struct plat_space *s, int *v)
{
    for (int i = 0; i < s->n_params; i++)
        v[i] = s->params[i].def;
}

int plat_point_valid(const struct plat_space *s, const int *v)
{
    for (int i = 0; i < s->n_params; i++) {
        int ok = 0;
        for (int j = 0; j < s->params[i].n_values; j++)
            ok |= v[i] == s->params[i].values[j];
        if (!ok)
            return 0;
    }
    return s->valid ? s->valid(s, v) : 1;
}

size_t plat_space_size(const struct plat_space *s)
{
    size_t n = 1;
    for (int i = 0; i < s->n_params; i++)
        n *= (size_t)s->params[i].n_values;
    return n;
}

int plat_space_point(const struct plat_space *s, size_t idx, int *v)
{
    if (idx >= plat_space_size(s))
        return -1;
    for (int i = 0; i < s->n_params; i++) {
        size_t nv = (size_t)s->params[i].n_values;
        v[i] = s->params[i].values[idx % nv];
        idx /= nv;
    }
    return plat_point_valid(s, v);
}

size_t plat_space_count_valid(const struct plat_space *s)
{
    int v[PLAT_PARAM_MAX];
    size_t n = 0, size = plat_space_size(s);
    for (size_t i = 0; i < size; i++)
        n += plat_space_point(s, i, v) == 1;
    return n;
}

int plat_point_label(const struct plat_space *s, const int *v, char *buf, size_t cap)
{
    if (!cap)
        return PLAT_ERR_INTERNAL;
    int w = snprintf(buf, cap, "%s", plat_op_name(s->op));
    size_t off = w > 0 ? (size_t)w : cap;
    for (int i = 0; i < s->n_params && off < cap; i++) {
        w = snprintf(buf + off, cap - off, " %s=%d", s->params[i].name, v[i]);
        off = w >= 0 ? off + (size_t)w : cap;
    }
    return off < cap ? 0 : PLAT_ERR_INTERNAL;
}

int plat_label_op(const char *label)
{
    char word[64];
    size_t n = strcspn(label, " ");
    if (n == 0 || n >= sizeof word)
        return -1;
    memcpy(word, label, n);
    word[n] = '\0';
    return plat_op_parse(word);
}

int plat_point_parse(const struct plat_space *s, const char *label, int *v)
{
    char word[64];
    size_t n = strcspn(label, " ");
    if (plat_label_op(label) != (int)s->op)
        return PLAT_ERR_BAD_TASK;
    plat_point_default(s, v);
    label += n;
    while (*label == ' ')
        label++;
    while (*label) {
        n = strcspn(label, " ");
        if (n >= sizeof word)
            return PLAT_ERR_BAD_TASK;
        memcpy(word, label, n);
        word[n] = '\0';
        char *eq = strchr(word, '=');
        if (!eq)
            return PLAT_ERR_BAD_TASK;
        *eq = '\0';
        int i = 0;
        while (i < s->n_params && strcmp(s->params[i].name, word) != 0)
            i++;
        char *end;
        long val = strtol(eq + 1, &end, 10);
        if (i == s->n_params || end == eq + 1 || *end || val < -1000 || val > 1000)
            return PLAT_ERR_BAD_TASK;
        v[i] = (int)val;
        label += n;
        while (*label == ' ')
            label++;
    }
    return plat_point_valid(s, v) ? 0 : PLAT_ERR_BAD_TASK;
}

char *plat_point_source(const struct plat_space *s, const int *v, size_t *len)
{
    return s->source && plat_point_valid(s, v) ? s->source(s, v, len) : NULL;
}

int platform_open(const char *name, const struct plat_settings *s,
                  struct platform **out, char *err, size_t err_len)
{
    int rc = PLAT_ERR_INTERNAL;
    struct platform *p = NULL;
    *out = NULL;
    const struct platform_ops *tops = platform_find(name);
    if (!tops) {
        snprintf(err, err_len, "no platform named '%s' (known: k3, ascend)", name ? name : "(null)");
        return PLAT_ERR_NO_TARGET;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_len, "out of memory");
        return PLAT_ERR_NOMEM;
    }
    p->ops = tops;
    if (s)
        p->set = *s;
    else
        plat_settings_init(&p->set);
    rc = tops->open(p);
    if (rc) {
        snprintf(err, err_len, "%s", p->err[0] ? p->err : platform_strerror(rc));
        tops->close(p);
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void platform_close(struct platform *p)
{
    if (!p)
        return;
    p->ops->close(p);
    free(p);
}

int platform_describe(struct platform *p, struct plat_desc *out)
{
    memset(out, 0, sizeof *out);
    return p->ops->describe(p, out);
}

int platform_compile(struct platform *p, const struct plat_task *t,
                     const char *src, size_t len, struct plat_build *out)
{
    memset(out, 0, sizeof *out);
    return p->ops->compile(p, t, src, len, out);
}

int platform_object_export(struct platform *p, const struct plat_build *b, const char *symbol,
                           const char *path, int *refused, char *why, size_t why_len)
{
    *refused = 1;
    if (why_len)
        why[0] = '\0';
    if (!p->ops->object_export)
        return plat_set_err(p, PLAT_ERR_UNSUPPORTED, "target %s cannot ship its objects", p->ops->name);
    return p->ops->object_export(p, b, symbol, path, refused, why, why_len);
}

int platform_verify(struct platform *p, const struct plat_task *t,
                    const struct plat_build *b, struct plat_verify *out)
{
    memset(out, 0, sizeof *out);
    if (!b->ok) {
        out->reason = b->reason;
        out->screen_rule = b->screen_rule;
        snprintf(out->detail, sizeof out->detail, "%s", b->detail);
        return 0;
    }
    return p->ops->verify(p, t, b, out);
}

int platform_measure(struct platform *p, const struct plat_task *t,
                     const struct plat_build *b, struct plat_measure *out)
{
    memset(out, 0, sizeof *out);
    if (!p->ops->measure)
        return PLAT_ERR_UNSUPPORTED;
    if (!b->ok)
        return PLAT_ERR_NOT_BUILT;
    return p->ops->measure(p, t, b, out);
}

int platform_probe(struct platform *p, struct plat_probe *out)
{
    memset(out, 0, sizeof *out);
    if (!p->ops->probe)
        return PLAT_ERR_UNSUPPORTED;
    return p->ops->probe(p, out);
}

void platform_build_free(struct platform *p, struct plat_build *b)
{
    if (p && b && p->ops->build_free)
        p->ops->build_free(p, b);
}

int platform_starter(struct platform *p, const struct plat_task *t, char **src, size_t *len,
                     char *label, size_t label_len)
{
    *src = NULL;
    *len = 0;
    if (label_len)
        label[0] = '\0';
    if (!p->ops->starter)
        return PLAT_ERR_UNSUPPORTED;
    return p->ops->starter(p, t, src, len, label, label_len);
}

int plat_set_err(struct platform *p, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    p->rc = rc;
    return rc;
}

/*
 * platform/k3/k3_templates.c - the table of built-in RVV kernel templates
 * (one per op) and the arithmetic of their parameter spaces. See
 * k3_templates.h for the model; the kernel texts live in
 * platform/k3/embed/kernels/ and document what each parameter does.
 *
 * Defaults: the point with the fewest executed instructions under qemu
 * (VLEN 256) on the suite's shapes, measured with the icount plugin when
 * this table was written (docs/K3-KERNELS.md), except that exp keeps the
 * accurate polynomial (EXP_POLY=7; 5 saves ~12% and stays in tolerance).
 * Instruction counts are a proxy; the tuner re-ranks on the board.
 *
 * Validity rules keep only points that differ in generated code: a
 * parameter that the chosen variant does not read must sit at its default
 * (e.g. RECIP when tanh uses the rational approximation), so the tuner never
 * measures the same kernel twice, and register budgets are respected.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/embed.h"
#include "platform/k3/k3_templates.h"

#define KDIR "platform/k3/embed/kernels/"

/* ------------------------------------------------------- parameters --- */

#define P_LMUL1248(d) {"LMUL", 4, {1, 2, 4, 8}, d, "vector register group (LMUL)"}
#define P_LMUL124(d) {"LMUL", 3, {1, 2, 4}, d, "vector register group (LMUL)"}
#define P_EXP {"EXP_POLY", 2, {7, 5}, 7, "exp polynomial: 7 Cephes minimax (~1 ulp), 5 Taylor (~2.4e-6 rel)"}
#define P_RECIP {"RECIP", 2, {0, 1}, 0, "1/(1+e): 0 vfdiv, 1 vfrec7 + 2 Newton steps"}
#define P_TANH {"TANH_METHOD", 2, {1, 2}, 1, "tanh: 1 via exp (+odd poly near 0), 2 rational 13/6"}

/* A parameter the chosen variant ignores must stay at its default. */
static int at_default(const struct k3_template *t, const int *v, const char *name)
{
    for (int i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return v[i] == t->params[i].def;
    return 1;
}

static int valid_tanh(const struct k3_template *t, const int *v)
{
    if (k3_point_get(t, v, "TANH_METHOD") == 2)
        return at_default(t, v, "EXP_POLY") && at_default(t, v, "RECIP");
    return 1;
}

static int valid_gelu_tanh(const struct k3_template *t, const int *v)
{
    if (k3_point_get(t, v, "GELU_FORM") == 1)
        return at_default(t, v, "TANH_METHOD");
    return valid_tanh(t, v);
}

static int valid_gelu_erf(const struct k3_template *t, const int *v)
{
    if (k3_point_get(t, v, "ERF_METHOD") == 2)
        return at_default(t, v, "EXP_POLY") && at_default(t, v, "RECIP");
    return 1;
}

static int valid_norm(const struct k3_template *t, const int *v)
{
    return !(k3_point_get(t, v, "LMUL") == 8 && k3_point_get(t, v, "ACC") == 2);
}

static int valid_reduce(const struct k3_template *t, const int *v)
{
    int acc = k3_point_get(t, v, "ACC");
    if (acc == 2 && k3_point_get(t, v, "UNROLL") > 1)
        return 0;
    if (acc == 3 && k3_point_get(t, v, "LMUL") > 4)
        return 0;
    return 1;
}

static int valid_gemm(const struct k3_template *t, const int *v)
{
    return k3_point_get(t, v, "MR") * k3_point_get(t, v, "LMUL") <= 16;
}

static int valid_gemm_nt(const struct k3_template *t, const int *v)
{
    int mr = k3_point_get(t, v, "MR"), nr = k3_point_get(t, v, "NR");
    return (mr * nr + mr + 1) * k3_point_get(t, v, "LMUL") <= 32;
}

static int valid_gemv(const struct k3_template *t, const int *v)
{
    return (2 * k3_point_get(t, v, "RB") + 1) * k3_point_get(t, v, "LMUL") <= 32;
}

/* ------------------------------------------------------------ table --- */

#define ELEMENTWISE(OPV, FIXED)                                                \
    {OPV, KDIR "elementwise.c", FIXED, 2,                                      \
     {P_LMUL1248(8),                                                           \
      {"UNROLL", 3, {1, 2, 4}, 2, "full-length strips per loop iteration"}},   \
     NULL}

#define REDUCE_SUM(OPV, FIXED)                                                 \
    {OPV, KDIR "reduce.c", FIXED, 3,                                           \
     {P_LMUL1248(8),                                                           \
      {"ACC", 3, {1, 2, 3}, 1, "1 vector accumulators, 2 reduce every strip, 3 f64 widening accumulators"}, \
      {"UNROLL", 2, {1, 2}, 2, "independent accumulators (ACC 1 and 3)"}},     \
     valid_reduce}

static const struct k3_template templates[PLAT_OP_COUNT] = {
    ELEMENTWISE(PLAT_OP_ADD, "OP=OP_ADD"),
    ELEMENTWISE(PLAT_OP_MUL, "OP=OP_MUL"),
    ELEMENTWISE(PLAT_OP_AXPY, "OP=OP_AXPY"),
    ELEMENTWISE(PLAT_OP_SCALE, "OP=OP_SCALE"),
    ELEMENTWISE(PLAT_OP_CLAMP, "OP=OP_CLAMP"),
    {PLAT_OP_RELU, KDIR "activation.c", "OP=OP_RELU", 1, {P_LMUL1248(8)}, NULL},
    {PLAT_OP_GELU_TANH, KDIR "activation.c", "OP=OP_GELU_TANH", 5,
     {P_LMUL124(4),
      {"GELU_FORM", 2, {1, 2}, 1, "1 x*sigmoid(2u), 2 0.5x(1+tanh u)"},
      P_TANH, P_EXP, P_RECIP},
     valid_gelu_tanh},
    {PLAT_OP_GELU_ERF, KDIR "activation.c", "OP=OP_GELU_ERF", 4,
     {P_LMUL124(4),
      {"ERF_METHOD", 2, {1, 2}, 1, "erf: 1 A&S 7.1.26 (exp), 2 A&S 7.1.28 (no exp)"},
      P_EXP, P_RECIP},
     valid_gelu_erf},
    {PLAT_OP_SILU, KDIR "activation.c", "OP=OP_SILU", 3, {P_LMUL124(4), P_EXP, P_RECIP}, NULL},
    {PLAT_OP_SIGMOID, KDIR "activation.c", "OP=OP_SIGMOID", 3, {P_LMUL124(4), P_EXP, P_RECIP}, NULL},
    {PLAT_OP_TANH, KDIR "activation.c", "OP=OP_TANH", 4, {P_LMUL124(4), P_TANH, P_EXP, P_RECIP}, valid_tanh},
    {PLAT_OP_EXP, KDIR "activation.c", "OP=OP_EXP", 2, {P_LMUL124(4), P_EXP}, NULL},
    {PLAT_OP_SOFTMAX, KDIR "softmax.c", NULL, 3,
     {P_LMUL124(4),
      {"PASSES", 2, {3, 2}, 3, "3 max/exp-sum/scale, 2 online max+sum then exp-scale"},
      P_EXP},
     NULL},
    {PLAT_OP_LAYERNORM, KDIR "norm.c", "OP=OP_LAYERNORM", 2,
     {P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 f32 two-pass statistics, 2 f64 widening one pass"}},
     valid_norm},
    {PLAT_OP_RMSNORM, KDIR "norm.c", "OP=OP_RMSNORM", 2,
     {P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 f32 accumulators, 2 f64 widening accumulators"}},
     valid_norm},
    REDUCE_SUM(PLAT_OP_SUM, "OP=OP_SUM"),
    {PLAT_OP_MAX, KDIR "reduce.c", "OP=OP_MAX", 3,
     {P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 vector max accumulators, 2 vfredmax every strip"},
      {"UNROLL", 2, {1, 2}, 2, "independent accumulators (ACC 1)"}},
     valid_reduce},
    REDUCE_SUM(PLAT_OP_MEAN, "OP=OP_MEAN"),
    REDUCE_SUM(PLAT_OP_L2NORM, "OP=OP_L2NORM"),
    {PLAT_OP_ARGMAX, KDIR "reduce.c", "OP=OP_ARGMAX", 2,
     {P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 2, "1 per-lane best value+index, 2 strip max then vfirst"}},
     NULL},
    {PLAT_OP_GEMM, KDIR "gemm.c", NULL, 3,
     {P_LMUL124(4),
      {"MR", 4, {1, 2, 4, 8}, 4, "rows of C per micro-tile (MR*LMUL <= 16)"},
      {"KC", 3, {0, 64, 256}, 0, "k block (0 = none)"}},
     valid_gemm},
    {PLAT_OP_GEMM_NT, KDIR "gemm_nt.c", NULL, 3,
     {P_LMUL124(4),
      {"MR", 3, {1, 2, 4}, 2, "rows of A per block"},
      {"NR", 3, {1, 2, 4}, 2, "rows of B per block ((MR*NR+MR+1)*LMUL <= 32)"}},
     valid_gemm_nt},
    {PLAT_OP_GEMV, KDIR "gemv.c", NULL, 2,
     {P_LMUL1248(8),
      {"RB", 4, {1, 2, 4, 8}, 1, "rows of A per block (x strip reused; (2*RB+1)*LMUL <= 32)"}},
     valid_gemv},
};

const struct k3_template *k3_template_for(enum plat_op op)
{
    return (unsigned)op < PLAT_OP_COUNT ? &templates[op] : NULL;
}

const struct k3_template *k3_template_at(size_t k)
{
    return k < PLAT_OP_COUNT ? &templates[k] : NULL;
}

/* ----------------------------------------------------------- points --- */

int k3_point_get(const struct k3_template *t, const int *v, const char *name)
{
    for (int i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return v[i];
    return -1;
}

void k3_point_default(const struct k3_template *t, int *v)
{
    for (int i = 0; i < t->n_params; i++)
        v[i] = t->params[i].def;
}

int k3_point_valid(const struct k3_template *t, const int *v)
{
    for (int i = 0; i < t->n_params; i++) {
        int ok = 0;
        for (int j = 0; j < t->params[i].n_values; j++)
            ok |= v[i] == t->params[i].values[j];
        if (!ok)
            return 0;
    }
    return t->valid ? t->valid(t, v) : 1;
}

size_t k3_template_space_size(const struct k3_template *t)
{
    size_t n = 1;
    for (int i = 0; i < t->n_params; i++)
        n *= (size_t)t->params[i].n_values;
    return n;
}

int k3_template_point(const struct k3_template *t, size_t idx, int *v)
{
    if (idx >= k3_template_space_size(t))
        return -1;
    for (int i = 0; i < t->n_params; i++) {
        size_t nv = (size_t)t->params[i].n_values;
        v[i] = t->params[i].values[idx % nv];
        idx /= nv;
    }
    return k3_point_valid(t, v);
}

size_t k3_template_count_valid(const struct k3_template *t)
{
    int v[K3_PARAM_MAX];
    size_t n = 0, size = k3_template_space_size(t);
    for (size_t i = 0; i < size; i++)
        n += k3_template_point(t, i, v) == 1;
    return n;
}

/* Append printf output to buf at *off; -1 when it does not fit. */
__attribute__((format(printf, 4, 5)))
static int put(char *buf, size_t cap, size_t *off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *off, cap - *off, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= cap - *off)
        return -1;
    *off += (size_t)w;
    return 0;
}

int k3_point_defines(const struct k3_template *t, const int *v, char *buf, size_t cap)
{
    size_t off = 0;
    if (!cap || !k3_point_valid(t, v))
        return PLAT_ERR_INTERNAL;
    buf[0] = '\0';
    if (t->fixed && put(buf, cap, &off, "-D%s", t->fixed))
        return PLAT_ERR_INTERNAL;
    for (int i = 0; i < t->n_params; i++)
        if (put(buf, cap, &off, "%s-D%s=%d", off ? " " : "", t->params[i].name, v[i]))
            return PLAT_ERR_INTERNAL;
    return 0;
}

int k3_point_label(const struct k3_template *t, const int *v, char *buf, size_t cap)
{
    size_t off = 0;
    if (!cap || put(buf, cap, &off, "%s", plat_op_name(t->op)))
        return PLAT_ERR_INTERNAL;
    for (int i = 0; i < t->n_params; i++)
        if (put(buf, cap, &off, " %s=%d", t->params[i].name, v[i]))
            return PLAT_ERR_INTERNAL;
    return 0;
}

int k3_point_parse(const char *label, const struct k3_template **tp, int *v)
{
    char word[64];
    const char *s = label;
    size_t n = strcspn(s, " ");
    if (n == 0 || n >= sizeof word)
        return PLAT_ERR_BAD_TASK;
    memcpy(word, s, n);
    word[n] = '\0';
    int op = plat_op_parse(word);
    if (op < 0)
        return PLAT_ERR_BAD_TASK;
    const struct k3_template *t = k3_template_for((enum plat_op)op);
    k3_point_default(t, v);
    s += n;
    while (*s == ' ')
        s++;
    while (*s) {
        n = strcspn(s, " ");
        if (n >= sizeof word)
            return PLAT_ERR_BAD_TASK;
        memcpy(word, s, n);
        word[n] = '\0';
        char *eq = strchr(word, '=');
        if (!eq)
            return PLAT_ERR_BAD_TASK;
        *eq = '\0';
        int i = 0;
        while (i < t->n_params && strcmp(t->params[i].name, word) != 0)
            i++;
        char *end;
        long val = strtol(eq + 1, &end, 10);
        if (i == t->n_params || end == eq + 1 || *end || val < -1000 || val > 1000)
            return PLAT_ERR_BAD_TASK;
        v[i] = (int)val;
        s += n;
        while (*s == ' ')
            s++;
    }
    if (!k3_point_valid(t, v))
        return PLAT_ERR_BAD_TASK;
    *tp = t;
    return 0;
}

char *k3_point_source(const struct k3_template *t, const int *v, size_t *len)
{
    char label[256], head[1024];
    size_t off = 0;
    const struct embed_file *f = embed_find(t->file);
    if (!f || !k3_point_valid(t, v) || k3_point_label(t, v, label, sizeof label))
        return NULL;
    int w = snprintf(head, sizeof head, "/* kope built-in template instance: %s */\n", label);
    if (w < 0 || (size_t)w >= sizeof head)
        return NULL;
    off = (size_t)w;
    if (t->fixed) {
        /* "OP=OP_ADD" -> "#define OP OP_ADD" */
        const char *eq = strchr(t->fixed, '=');
        w = snprintf(head + off, sizeof head - off, "#define %.*s %s\n",
                     (int)(eq - t->fixed), t->fixed, eq + 1);
        if (w < 0 || (size_t)w >= sizeof head - off)
            return NULL;
        off += (size_t)w;
    }
    for (int i = 0; i < t->n_params; i++) {
        w = snprintf(head + off, sizeof head - off, "#define %s %d\n", t->params[i].name, v[i]);
        if (w < 0 || (size_t)w >= sizeof head - off)
            return NULL;
        off += (size_t)w;
    }
    char *src = malloc(off + f->len + 1);
    if (!src)
        return NULL;
    memcpy(src, head, off);
    memcpy(src + off, f->data, f->len + 1);
    if (len)
        *len = off + f->len;
    return src;
}

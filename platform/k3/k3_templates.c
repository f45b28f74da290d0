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
static int at_default(const struct plat_space *t, const int *v, const char *name)
{
    for (int i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return v[i] == t->params[i].def;
    return 1;
}

static int valid_tanh(const struct plat_space *t, const int *v)
{
    if (plat_point_get(t, v, "TANH_METHOD") == 2)
        return at_default(t, v, "EXP_POLY") && at_default(t, v, "RECIP");
    return 1;
}

static int valid_gelu_tanh(const struct plat_space *t, const int *v)
{
    if (plat_point_get(t, v, "GELU_FORM") == 1)
        return at_default(t, v, "TANH_METHOD");
    return valid_tanh(t, v);
}

static int valid_gelu_erf(const struct plat_space *t, const int *v)
{
    if (plat_point_get(t, v, "ERF_METHOD") == 2)
        return at_default(t, v, "EXP_POLY") && at_default(t, v, "RECIP");
    return 1;
}

static int valid_norm(const struct plat_space *t, const int *v)
{
    return !(plat_point_get(t, v, "LMUL") == 8 && plat_point_get(t, v, "ACC") == 2);
}

static int valid_reduce(const struct plat_space *t, const int *v)
{
    int acc = plat_point_get(t, v, "ACC");
    if (acc == 2 && plat_point_get(t, v, "UNROLL") > 1)
        return 0;
    if (acc == 3 && plat_point_get(t, v, "LMUL") > 4)
        return 0;
    return 1;
}

static int valid_gemm(const struct plat_space *t, const int *v)
{
    return plat_point_get(t, v, "MR") * plat_point_get(t, v, "LMUL") <= 16;
}

static int valid_gemm_nt(const struct plat_space *t, const int *v)
{
    int mr = plat_point_get(t, v, "MR"), nr = plat_point_get(t, v, "NR");
    return (mr * nr + mr + 1) * plat_point_get(t, v, "LMUL") <= 32;
}

static int valid_gemv(const struct plat_space *t, const int *v)
{
    return (2 * plat_point_get(t, v, "RB") + 1) * plat_point_get(t, v, "LMUL") <= 32;
}

/* ------------------------------------------------------------ table --- */

static char *space_source(const struct plat_space *s, const int *v, size_t *len);

/* T(op, file, fixed, valid, params...): one template; its space's source is
 * the template text under the point's #defines. */
#define NARGS(...) (int)(sizeof((struct plat_param[]){__VA_ARGS__}) / sizeof(struct plat_param))
#define T(OPV, FILE, FIXED, VALID, ...) \
    {{OPV, NARGS(__VA_ARGS__), {__VA_ARGS__}, VALID, space_source}, FILE, FIXED}

#define ELEMENTWISE(OPV, FIXED)                                                \
    T(OPV, KDIR "elementwise.c", FIXED, NULL, P_LMUL1248(8),                   \
      {"UNROLL", 3, {1, 2, 4}, 2, "full-length strips per loop iteration"})

#define REDUCE_SUM(OPV, FIXED)                                                 \
    T(OPV, KDIR "reduce.c", FIXED, valid_reduce, P_LMUL1248(8),                \
      {"ACC", 3, {1, 2, 3}, 1, "1 vector accumulators, 2 reduce every strip, 3 f64 widening accumulators"}, \
      {"UNROLL", 2, {1, 2}, 2, "independent accumulators (ACC 1 and 3)"})

static const struct k3_template templates[PLAT_OP_COUNT] = {
    ELEMENTWISE(PLAT_OP_ADD, "OP=OP_ADD"),
    ELEMENTWISE(PLAT_OP_MUL, "OP=OP_MUL"),
    ELEMENTWISE(PLAT_OP_AXPY, "OP=OP_AXPY"),
    ELEMENTWISE(PLAT_OP_SCALE, "OP=OP_SCALE"),
    ELEMENTWISE(PLAT_OP_CLAMP, "OP=OP_CLAMP"),
    T(PLAT_OP_RELU, KDIR "activation.c", "OP=OP_RELU", NULL, P_LMUL1248(8)),
    T(PLAT_OP_GELU_TANH, KDIR "activation.c", "OP=OP_GELU_TANH", valid_gelu_tanh, P_LMUL124(4),
      {"GELU_FORM", 2, {1, 2}, 1, "1 x*sigmoid(2u), 2 0.5x(1+tanh u)"}, P_TANH, P_EXP, P_RECIP),
    T(PLAT_OP_GELU_ERF, KDIR "activation.c", "OP=OP_GELU_ERF", valid_gelu_erf, P_LMUL124(4),
      {"ERF_METHOD", 2, {1, 2}, 1, "erf: 1 A&S 7.1.26 (exp), 2 A&S 7.1.28 (no exp)"}, P_EXP, P_RECIP),
    T(PLAT_OP_SILU, KDIR "activation.c", "OP=OP_SILU", NULL, P_LMUL124(4), P_EXP, P_RECIP),
    T(PLAT_OP_SIGMOID, KDIR "activation.c", "OP=OP_SIGMOID", NULL, P_LMUL124(4), P_EXP, P_RECIP),
    T(PLAT_OP_TANH, KDIR "activation.c", "OP=OP_TANH", valid_tanh, P_LMUL124(4), P_TANH, P_EXP, P_RECIP),
    T(PLAT_OP_EXP, KDIR "activation.c", "OP=OP_EXP", NULL, P_LMUL124(4), P_EXP),
    T(PLAT_OP_SOFTMAX, KDIR "softmax.c", NULL, NULL, P_LMUL124(4),
      {"PASSES", 2, {3, 2}, 3, "3 max/exp-sum/scale, 2 online max+sum then exp-scale"}, P_EXP),
    T(PLAT_OP_LAYERNORM, KDIR "norm.c", "OP=OP_LAYERNORM", valid_norm, P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 f32 two-pass statistics, 2 f64 widening one pass"}),
    T(PLAT_OP_RMSNORM, KDIR "norm.c", "OP=OP_RMSNORM", valid_norm, P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 f32 accumulators, 2 f64 widening accumulators"}),
    REDUCE_SUM(PLAT_OP_SUM, "OP=OP_SUM"),
    T(PLAT_OP_MAX, KDIR "reduce.c", "OP=OP_MAX", valid_reduce, P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 1, "1 vector max accumulators, 2 vfredmax every strip"},
      {"UNROLL", 2, {1, 2}, 2, "independent accumulators (ACC 1)"}),
    REDUCE_SUM(PLAT_OP_MEAN, "OP=OP_MEAN"),
    REDUCE_SUM(PLAT_OP_L2NORM, "OP=OP_L2NORM"),
    T(PLAT_OP_ARGMAX, KDIR "reduce.c", "OP=OP_ARGMAX", NULL, P_LMUL1248(8),
      {"ACC", 2, {1, 2}, 2, "1 per-lane best value+index, 2 strip max then vfirst"}),
    T(PLAT_OP_GEMM, KDIR "gemm.c", NULL, valid_gemm, P_LMUL124(4),
      {"MR", 4, {1, 2, 4, 8}, 4, "rows of C per micro-tile (MR*LMUL <= 16)"},
      {"KC", 3, {0, 64, 256}, 0, "k block (0 = none)"}),
    T(PLAT_OP_GEMM_NT, KDIR "gemm_nt.c", NULL, valid_gemm_nt, P_LMUL124(4),
      {"MR", 3, {1, 2, 4}, 2, "rows of A per block"},
      {"NR", 3, {1, 2, 4}, 2, "rows of B per block ((MR*NR+MR+1)*LMUL <= 32)"}),
    T(PLAT_OP_GEMV, KDIR "gemv.c", NULL, valid_gemv, P_LMUL1248(8),
      {"RB", 4, {1, 2, 4, 8}, 1, "rows of A per block (x strip reused; (2*RB+1)*LMUL <= 32)"}),
};

const struct k3_template *k3_template_for(enum plat_op op)
{
    return (unsigned)op < PLAT_OP_COUNT ? &templates[op] : NULL;
}

const struct k3_template *k3_template_at(size_t k)
{
    return k < PLAT_OP_COUNT ? &templates[k] : NULL;
}

const struct plat_space *k3_space(enum plat_op op)
{
    const struct k3_template *t = k3_template_for(op);
    return t ? &t->sp : NULL;
}

/* ----------------------------------------------------------- points --- */

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
    if (!cap || !plat_point_valid(&t->sp, v))
        return PLAT_ERR_INTERNAL;
    buf[0] = '\0';
    if (t->fixed && put(buf, cap, &off, "-D%s", t->fixed))
        return PLAT_ERR_INTERNAL;
    for (int i = 0; i < t->sp.n_params; i++)
        if (put(buf, cap, &off, "%s-D%s=%d", off ? " " : "", t->sp.params[i].name, v[i]))
            return PLAT_ERR_INTERNAL;
    return 0;
}

int k3_point_label(const struct k3_template *t, const int *v, char *buf, size_t cap)
{
    return plat_point_label(&t->sp, v, buf, cap);
}

int k3_point_parse(const char *label, const struct k3_template **tp, int *v)
{
    int op = plat_label_op(label);
    if (op < 0)
        return PLAT_ERR_BAD_TASK;
    const struct k3_template *t = k3_template_for((enum plat_op)op);
    int rc = plat_point_parse(&t->sp, label, v);
    if (rc == 0)
        *tp = t;
    return rc;
}

/* sp is the first member of its template (k3_templates.h). */
static char *space_source(const struct plat_space *s, const int *v, size_t *len)
{
    return k3_point_source((const struct k3_template *)s, v, len);
}

char *k3_point_source(const struct k3_template *t, const int *v, size_t *len)
{
    char label[256], head[1024];
    size_t off = 0;
    const struct embed_file *f = embed_find(t->file);
    if (!f || !plat_point_valid(&t->sp, v) || k3_point_label(t, v, label, sizeof label))
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
    for (int i = 0; i < t->sp.n_params; i++) {
        w = snprintf(head + off, sizeof head - off, "#define %s %d\n", t->sp.params[i].name, v[i]);
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

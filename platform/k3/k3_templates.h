/*
 * platform/k3/k3_templates.h - kope's built-in RVV kernel templates and
 * their tuning space.
 *
 * Every op has one template: a kernel source embedded in the binary
 * (the files under platform/k3/embed/kernels/, read with embed_find) whose behaviour is
 * chosen by a few macros (LMUL, unroll, tile sizes, accumulation strategy,
 * approximation choice). A *point* of a template is one value per parameter,
 * stored as an int array in the order of t->params. A point is *valid* when
 * the template accepts it (register budget, combinations that make sense);
 * every valid point is an instance kope may ship, and tests/test_k3_kernels.c
 * verifies all of them under qemu.
 *
 * An instance is turned into a self-contained candidate source by
 * k3_point_source(): "#define NAME VALUE" lines followed by the template
 * text, which includes only <stddef.h> <stdint.h> <string.h> <math.h>
 * <riscv_vector.h> and "kernel_abi.h" and defines kope_kernel, so it goes
 * through the harness's screen and compile like any other candidate.
 * k3_point_defines() gives the same point as -D flags instead.
 *
 * The offline tuner walks the space with k3_template_space_size() and
 * k3_template_point() (mixed-radix index, skipping invalid points).
 */
#ifndef KOPE_K3_TEMPLATES_H
#define KOPE_K3_TEMPLATES_H

#include <stddef.h>

#include "platform/platform.h"

#define K3_PARAM_MAX 6  /* parameters per template */
#define K3_VALUE_MAX 4  /* values per parameter */

struct k3_param {
    const char *name;          /* the macro: "LMUL" */
    int n_values;
    int values[K3_VALUE_MAX];  /* allowed values, in search order */
    int def;                   /* default value (one of values) */
    const char *doc;           /* what the values mean, one line */
};

struct k3_template {
    enum plat_op op;
    const char *file;          /* embedded name, "platform/k3/embed/kernels/gemm.c" */
    const char *fixed;         /* fixed macro for this op, "OP=OP_ADD", or NULL */
    int n_params;
    struct k3_param params[K3_PARAM_MAX];
    /* Extra validity rule over a point (values in params order); NULL means
     * every combination of allowed values is valid. */
    int (*valid)(const struct k3_template *t, const int *v);
};

/* The template of op, or NULL. */
const struct k3_template *k3_template_for(enum plat_op op);
/* The k-th template (0-based, in plat_op order), or NULL past the end. */
const struct k3_template *k3_template_at(size_t k);

/* Value of parameter `name` in point v, or -1 if t has no such parameter. */
int k3_point_get(const struct k3_template *t, const int *v, const char *name);
/* Fill v with the default point. */
void k3_point_default(const struct k3_template *t, int *v);
/* 1 if v is a valid point of t (every value allowed and t->valid agrees). */
int k3_point_valid(const struct k3_template *t, const int *v);

/* Number of raw points (product of the value counts, valid or not). */
size_t k3_template_space_size(const struct k3_template *t);
/* Decode raw index idx (< space size) into v. Returns 1 if the point is
 * valid, 0 if it is not (v is filled either way), -1 if idx is out of range. */
int k3_template_point(const struct k3_template *t, size_t idx, int *v);
/* Number of valid points. */
size_t k3_template_count_valid(const struct k3_template *t);

/* "-DOP=OP_ADD -DLMUL=4 -DUNROLL=2" into buf. 0, or PLAT_ERR_INTERNAL when
 * buf is too small or the point invalid. */
int k3_point_defines(const struct k3_template *t, const int *v, char *buf, size_t cap);
/* "add LMUL=4 UNROLL=2" into buf (for logs and records). 0 or PLAT_ERR_INTERNAL. */
int k3_point_label(const struct k3_template *t, const int *v, char *buf, size_t cap);
/* Parse a label made by k3_point_label back into t and v: the op name, then
 * NAME=VALUE words (missing ones take their default). 0, or PLAT_ERR_BAD_TASK
 * for an unknown op, parameter or value, or an invalid point. */
int k3_point_parse(const char *label, const struct k3_template **t, int *v);

/* The instance as one candidate source: a comment naming the point, the
 * #define lines, then the template text. Returns a malloc'd NUL-terminated
 * string the caller frees (length in *len if len is not NULL), or NULL when
 * out of memory, the point is invalid or the template is not embedded. */
char *k3_point_source(const struct k3_template *t, const int *v, size_t *len);

#endif /* KOPE_K3_TEMPLATES_H */

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
 * core's offline tuner walks a template as the target's tuning space
 * (struct plat_space, platform/platform.h; k3_space() is the k3 target's
 * platform_ops.space): mixed-radix index, skipping invalid points.
 */
#ifndef KOPE_K3_TEMPLATES_H
#define KOPE_K3_TEMPLATES_H

#include <stddef.h>

#include "platform/platform.h"

#define K3_PARAM_MAX PLAT_PARAM_MAX  /* parameters per template */
#define K3_VALUE_MAX PLAT_VALUE_MAX  /* values per parameter */

/* A template is the op's tuning space (what core's tuner sees, through
 * platform_ops.space) plus where its text is. sp is the first member, so
 * the k3 code can go from a space back to its template. */
struct k3_template {
    struct plat_space sp;      /* op, parameters, validity rule, source */
    const char *file;          /* embedded name, "platform/k3/embed/kernels/gemm.c" */
    const char *fixed;         /* fixed macro for this op, "OP=OP_ADD", or NULL */
};

/* The template of op, or NULL. */
const struct k3_template *k3_template_for(enum plat_op op);
/* The k-th template (0-based, in plat_op order), or NULL past the end. */
const struct k3_template *k3_template_at(size_t k);
/* platform_ops.space of the k3 target: &k3_template_for(op)->sp. */
const struct plat_space *k3_space(enum plat_op op);


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

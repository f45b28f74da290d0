/*
 * kcall.h - the K3 harness's call of a candidate through kcall.S (embedded
 * in kope, included by harness.c only): the family's arguments packed into
 * a0-a6, a clean vector and FP control state before the call, canaries in
 * every callee-saved register checked after it.
 *
 *   kcall_family    call fn with a's arguments (region >= 0: the counted
 *                   call, markers around the kernel); 0, or the KCALL_* code
 *                   of the first preserved register the kernel left changed
 *   kcall_reg_name  "s5", "fs3", "gp", ... for a code
 *
 * Off riscv64 (nothing builds the harness there today) the call is a plain
 * C call and nothing is checked.
 */
#ifndef KOPE_KCALL_H
#define KOPE_KCALL_H

#include <stddef.h>
#include <stdint.h>

#include "hargs.h"
#include "kernel_abi.h"

enum { KCALL_OK = 0, KCALL_S0 = 1, KCALL_FS0 = 13, KCALL_SP = 25, KCALL_GP, KCALL_TP, KCALL_COUNT };

#if defined(__riscv) && __riscv_xlen == 64 && defined(__riscv_vector) && defined(__riscv_d)
#define KCALL_CHECKED 1
int kope_kcall(void (*fn)(void), const unsigned long args[7], long region);
#else
#define KCALL_CHECKED 0
#endif

static inline const char *kcall_reg_name(int code)
{
    static const char *const names[KCALL_COUNT] = {
        "none", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
        "fs0", "fs1", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11",
        "sp", "gp", "tp"};
    return code >= 0 && code < KCALL_COUNT ? names[code] : "?";
}

void kope_icount_begin(int region); /* harness.c: the plugin's markers */
void kope_icount_end(int region);

/* region >= 0: the counted call, the icount markers right around the kernel */
static inline int kcall_family(void (*fn)(void), int family, const struct h_args *a,
                               const struct kope_scalars *s, int region)
{
#if KCALL_CHECKED
    unsigned long v[7] = {0};
    switch (family) {
    case 0: /* (n, x, y, out, s) */
        v[0] = a->n; v[1] = (uintptr_t)a->x; v[2] = (uintptr_t)a->y; v[3] = (uintptr_t)a->out;
        v[4] = (uintptr_t)s;
        break;
    case 1: /* (rows, cols, x, out, gamma, beta, s) */
        v[0] = a->rows; v[1] = a->cols; v[2] = (uintptr_t)a->x; v[3] = (uintptr_t)a->out;
        v[4] = (uintptr_t)a->gamma; v[5] = (uintptr_t)a->beta; v[6] = (uintptr_t)s;
        break;
    case 2: /* (rows, cols, x, out) */
        v[0] = a->rows; v[1] = a->cols; v[2] = (uintptr_t)a->x; v[3] = (uintptr_t)a->out;
        break;
    default: /* (batch, m, n, k, a, b, out) */
        v[0] = a->batch; v[1] = a->m; v[2] = a->n; v[3] = a->k; v[4] = (uintptr_t)a->a;
        v[5] = (uintptr_t)a->b; v[6] = (uintptr_t)a->out;
    }
    return kope_kcall(fn, v, region);
#else
    if (region >= 0)
        kope_icount_begin(region);
    switch (family) {
    case 0:
        ((kope_elementwise_fn *)fn)(a->n, a->x, a->y, a->out, s);
        break;
    case 1:
        ((kope_activation_fn *)fn)(a->rows, a->cols, a->x, a->out, a->gamma, a->beta, s);
        break;
    case 2:
        ((kope_reduction_fn *)fn)(a->rows, a->cols, a->x, a->out);
        break;
    default:
        ((kope_matmul_fn *)fn)(a->batch, a->m, a->n, a->k, a->a, a->b, a->out);
    }
    if (region >= 0)
        kope_icount_end(region);
    return KCALL_OK;
#endif
}

#endif

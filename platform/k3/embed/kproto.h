/*
 * kproto.h - what the K3 judge (harness.c) and the kernel program
 * (kserve.c, linked with the candidate) share: the fixed descriptors a
 * kernel process starts with, the command pipe's messages, the status page
 * and the layout table of the operand arena. Embedded in kope and written
 * to rt/ with the two programs; includes hargs.h only.
 *
 * The judge never reads anything a kernel process can write as a fact: the
 * table is written by the judge before every exec and only read by kserve;
 * the status page is read only as the reason a dead kernel process gives;
 * outputs are compared with the judge's own reference, inputs with its
 * master copy outside the arena.
 */
#ifndef KOPE_K3_KPROTO_H
#define KOPE_K3_KPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "hargs.h"

/* The judge's own descriptors, from kope: 3 the report, 4 (qemu only) the
 * judge's plugin key (read and closed by the plugin before main), 5 the
 * kernel program, opened read-only by kope. */
#define KJ_FD_REPORT 3
#define KJ_FD_PROG 5

/* A kernel process starts with 0 (/dev/null), 1 and 2 (kope's capped output
 * pipe) and exactly these; every other descriptor is closed before the exec. */
#define KS_FD_CMD 3   /* read end of the command pipe */
#define KS_FD_DONE 4  /* write end of the answer pipe */
#define KS_FD_ARENA 5 /* the operand memfd; kserve closes it once mapped */
#define KS_FD_PROG 6  /* natively: the kernel program (close-on-exec: gone after it) */
#define KS_FD_KEY 7   /* under qemu: the kernel qemu's plugin key (the plugin closes it) */

/* Commands (one struct per write, one answer byte per command):
 * CALL n (n calls of the kernel on the current operands), COUNT (one call
 * between the icount markers), SETS (one call on each verify set whose bit
 * is in region), QUIT. */
enum { KS_CMD_CALL = 1, KS_CMD_COUNT, KS_CMD_SETS, KS_CMD_QUIT };
struct ks_cmd {
    int32_t kind, count, region, set; /* set: operand set, -1 = the table's current one */
    float alpha, lo, hi, eps;         /* the scalars change with every refill */
    int32_t scrub, pad;               /* scrub: clear 256 KiB below sp before each call */
};

/* What a kernel process says about its own end (the status page). */
enum {
    KS_NONE = 0, KS_MEMORY, KS_OOB_WRITE, KS_READ_PAST, KS_INPUT_WRITE, KS_SEGV, KS_SIGNAL, KS_FRM,
    KS_HARNESS, KS_SETUP, KS_ABI, KS_COUNT
};
struct ks_status {
    volatile int32_t code, sig;
    volatile int32_t set; /* SETS: the operand set being run, for the detail only */
    volatile int32_t ready; /* kserve mapped its operands and entered its loop */
};

/* Kinds of arena regions: what the kernel process maps there, and how a
 * fault inside one is classified. */
enum { KS_R_OUT_GUARD = 1, KS_R_IN_GUARD, KS_R_INPUT, KS_R_OUTPUT, KS_R_TABLE, KS_R_STATUS };

#define KS_MAX_REGIONS 256
#define KS_MAX_SETS 20
#define KS_TABLE_MAGIC 0x6b6f70652d6b7331ull /* "kope-ks1" */

struct ks_region {
    uint64_t addr, len;
    int32_t kind, pad;
};

/* The arena's first pages. Every address is inside [base, base + used). */
struct ks_table {
    uint64_t magic;
    uint64_t base, used;  /* the range kserve maps from the memfd, at base */
    uint64_t status;      /* address of the struct ks_status page */
    int32_t family;       /* 0 elementwise, 1 activation, 2 reduction, 3 matmul */
    int32_t n_regions, n_sets, pad;
    struct ks_region region[KS_MAX_REGIONS];
    struct h_args cur;    /* the operands of a command with set -1 */
    struct h_args sets[KS_MAX_SETS];
};

#endif

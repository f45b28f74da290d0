/*
 * core/graph/spill.h - an append-only list of byte entries held in memory up to a
 * limit and in an unlinked temporary file past it, read back in order.
 *
 * The importer (core/graph/graph_import.c) buffers a run of verified records here until
 * the checkpoint that covers it has arrived and verified, so that it never
 * holds the store's write lock while it waits on a peer: the run is then
 * written in one short transaction. Both parts have hard caps: mem_max
 * bytes in memory (then the file), total_max bytes in all (then
 * KOPE_ERR_TOOBIG). The file is made in $TMPDIR (else /tmp) and unlinked at
 * once, so nothing is left behind by a crash.
 *
 * Ownership: the struct is the caller's (spill_init cannot fail; spill_free
 * accepts an initialised one). Entries passed to spill_each's callback are
 * valid only during the call.
 */
#ifndef KOPE_SPILL_H
#define KOPE_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"

struct spill {
    struct buf mem;      /* entries not yet moved to the file: u32 length + bytes each */
    FILE *f;             /* older entries, or NULL */
    uint64_t total;      /* bytes held, both parts (entry headers included) */
    uint64_t total_max;
    size_t n;            /* entries held */
    int err;             /* sticky: the first failure */
};

void spill_init(struct spill *s, size_t mem_max, uint64_t total_max);
void spill_free(struct spill *s);
/* Drop every entry (the file is truncated, not closed). */
void spill_reset(struct spill *s);
/* Append one entry: 0, KOPE_ERR_TOOBIG past total_max, KOPE_ERR_IO or
 * KOPE_ERR_NOMEM. A failure is sticky until spill_reset. */
int spill_add(struct spill *s, const void *p, size_t len);
/* Call cb on every entry, oldest first; a non-zero return from cb stops the
 * walk and is returned. */
int spill_each(struct spill *s, int (*cb)(void *ctx, const uint8_t *p, size_t len), void *ctx);
/* Bytes in memory now (for memory budgets). */
static inline size_t spill_mem_bytes(const struct spill *s) { return s->mem.cap; }

#endif

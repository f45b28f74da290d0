/*
 * core/agent/pump.h - the durable LLM call queue's moves (store/queue.h holds the
 * rows): send a pending call, apply an answered one (through core/agent/trial.h),
 * pump both. The LLM proposer (core/agent/proposer.c) and `kope queue flush`
 * (core/agent/agent.c agent_queue_flush) call it; it calls nothing of theirs.
 */
#ifndef KOPE_AGENT_PUMP_H
#define KOPE_AGENT_PUMP_H

#include <stdint.h>

#include "core/agent/trial.h"
#include "store/queue.h"

/* Send one pending row: 1 answered (row 'sent'), 0 link down (backoff set,
 * row stays 'pending'), 2 the row itself was malformed (dropped, the link
 * untouched), or a negative code. */
int queue_send(struct run *r, const struct store_queue_row *row);
/* Evaluate an answered row's kernel and record it, marking the row done, in
 * one transaction. tk: the row's task when the caller holds it, else NULL
 * (read back from its record). Returns 0, 1 when the run that queued the
 * call is live in another kope process (nothing done: that run applies it),
 * or a negative code. */
int queue_apply(struct run *r, const struct store_queue_row *row, const struct plat_task *tk);
/* Send what may be sent (all pending when force), then apply every answered
 * row. task/tk: the task the caller holds (its rows are applied with tk), or
 * NULL. Counts go to *sent / *applied (may be NULL). */
int queue_pump(struct run *r, int force, const uint8_t *task, const struct plat_task *tk, int *sent,
               int *applied);

#endif

/*
 * store/queue.h - the durable LLM call queue and the agent's run state,
 * two tables of the v1 schema (llm_queue, run_state; docs/STORE.md).
 *
 * The queue keeps a call that could not be sent (its prompt is a blob, with
 * the task and the parent decision) through crashes and power cuts. A row
 * moves pending -> sent (the reply is stored as a blob: nothing is lost once
 * the server answered) -> done (the reply was applied: the agent records its
 * decision and outcome and marks the row done in ONE transaction, which is
 * what makes "applied exactly once" hold). 'failed' is a dropped call.
 *
 * Run state: one row per `kope run`, with its suite, state ("running",
 * "done") and a small JSON cursor the agent owns.
 *
 * The store decides nothing: these functions write what they are told.
 * Errors are STORE_ERR_* (store/store.h). Row pointers handed to a callback
 * are valid only during the callback.
 */
#ifndef KOPE_STORE_QUEUE_H
#define KOPE_STORE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct store;

struct store_queue_row {
    int64_t qid;
    int64_t created;          /* unix seconds */
    const char *state;        /* "pending" | "sent" | "done" | "failed" */
    int has_task, has_parent, has_prompt, has_reply;
    uint8_t task[32];         /* task record id */
    uint8_t parent[32];       /* decision the call refines */
    uint8_t prompt[32];       /* blob hash of the request (JSON) */
    uint8_t reply[32];        /* blob hash of the reply body, once sent */
    int tries;
    int64_t next_try;         /* unix ms before which it is not resent */
    const char *error;        /* last send error, NULL if none */
};
typedef int store_queue_cb(void *ctx, const struct store_queue_row *r);

/* Add a pending call; the prompt blob must be stored. parent may be NULL.
 * *qid (may be NULL) gets the new row's id. */
int store_queue_push(struct store *st, const uint8_t task[32], const uint8_t *parent,
                     const uint8_t prompt[32], int64_t now_s, int64_t *qid);
/* Rows in qid order; state NULL = every row. A non-zero cb return stops. */
int store_queue_each(struct store *st, const char *state, store_queue_cb *cb, void *ctx);
/* One row (STORE_ERR_NOTFOUND when absent). */
int store_queue_get(struct store *st, int64_t qid, store_queue_cb *cb, void *ctx);
/* pending -> sent with the reply blob (must be stored). */
int store_queue_sent(struct store *st, int64_t qid, const uint8_t reply[32]);
/* A failed send: tries + 1, not before next_try_ms, with the error text. */
int store_queue_retry(struct store *st, int64_t qid, int64_t next_try_ms, const char *error);
/* sent -> done. STORE_ERR_CONFLICT if the row is not 'sent' (so a second
 * application inside the same transaction is refused). */
int store_queue_done(struct store *st, int64_t qid);
/* Drop a call that is not done: state 'failed'. STORE_ERR_NOTFOUND if
 * absent, STORE_ERR_CONFLICT if already done. */
int store_queue_drop(struct store *st, int64_t qid);
/* Count rows in a state (NULL = all). */
int store_queue_count(struct store *st, const char *state, int64_t *n);

/* --- run state ----------------------------------------------------------- */
/* Create a run ("running") for suite with the cursor JSON; *run gets its id. */
int store_run_new(struct store *st, const char *suite, const char *cursor, int64_t now_s,
                  int64_t *run);
/* The newest run of suite in state `state` (e.g. "running"): its id and
 * cursor (*cursor heap, caller frees). STORE_ERR_NOTFOUND if none. */
int store_run_find(struct store *st, const char *suite, const char *state, int64_t *run,
                   char **cursor);
/* The cursor of run `run` (any state; *cursor heap, caller frees).
 * STORE_ERR_NOTFOUND if there is no such run. */
int store_run_get(struct store *st, int64_t run, char **cursor);
/* Set a run's state and cursor (cursor NULL keeps it). */
int store_run_set(struct store *st, int64_t run, const char *state, const char *cursor);

#endif

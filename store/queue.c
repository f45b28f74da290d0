/*
 * store/queue.c - the llm_queue and run_state tables (store/queue.h).
 *
 * Plain statements prepared per call: these rows change a few times per LLM
 * call or task, never in a hot loop, so the statement cache of store.c is
 * not worth the coupling. Every write is one statement, so it is atomic on
 * its own and joins the caller's transaction when there is one.
 */
#include <stdlib.h>
#include <string.h>

#include "store/queue.h"
#include "store/store.h"
#include "store/store_int.h"

static int prep(struct store *st, const char *sql, sqlite3_stmt **s)
{
    int rc = sqlite3_prepare_v2(store_int_db(st), sql, -1, s, NULL);
    return rc == SQLITE_OK ? 0 : store_int_fail(st, rc);
}

/* Step a write statement, finalize it; *changes gets the rows changed. */
static int run_done(struct store *st, sqlite3_stmt *s, int *changes)
{
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? 0 : store_int_fail(st, rc);
    if (changes)
        *changes = sqlite3_changes(store_int_db(st));
    sqlite3_finalize(s);
    return out;
}

static void bind32(sqlite3_stmt *s, int i, const uint8_t *p)
{
    if (p)
        sqlite3_bind_blob(s, i, p, 32, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static int col32(sqlite3_stmt *s, int col, uint8_t out[32])
{
    const void *p = sqlite3_column_blob(s, col);
    if (p && sqlite3_column_bytes(s, col) == 32) {
        memcpy(out, p, 32);
        return 1;
    }
    memset(out, 0, 32);
    return 0;
}

int store_queue_push(struct store *st, const uint8_t task[32], const uint8_t *parent,
                     const uint8_t prompt[32], int64_t now_s, int64_t *qid)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "INSERT INTO llm_queue(created, state, task, parent, prompt_blob)"
                      " VALUES(?1, 'pending', ?2, ?3, ?4)", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, now_s);
    bind32(s, 2, task);
    bind32(s, 3, parent);
    bind32(s, 4, prompt);
    rc = run_done(st, s, NULL);
    if (!rc && qid)
        *qid = sqlite3_last_insert_rowid(store_int_db(st));
    return rc;
}

#define QCOLS "qid, created, state, task, parent, prompt_blob, reply_blob, tries, next_try, error"

static int rows(struct store *st, sqlite3_stmt *s, int need_row, store_queue_cb *cb, void *ctx)
{
    int rc, out = 0, n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_queue_row r;
        memset(&r, 0, sizeof r);
        r.qid = sqlite3_column_int64(s, 0);
        r.created = sqlite3_column_int64(s, 1);
        r.state = (const char *)sqlite3_column_text(s, 2);
        r.has_task = col32(s, 3, r.task);
        r.has_parent = col32(s, 4, r.parent);
        r.has_prompt = col32(s, 5, r.prompt);
        r.has_reply = col32(s, 6, r.reply);
        r.tries = sqlite3_column_int(s, 7);
        r.next_try = sqlite3_column_int64(s, 8);
        r.error = (const char *)sqlite3_column_text(s, 9);
        n++;
        if ((out = cb(ctx, &r)) != 0)
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = store_int_fail(st, rc);
    sqlite3_finalize(s);
    if (!out && need_row && !n)
        out = STORE_ERR_NOTFOUND;
    return out;
}

int store_queue_each(struct store *st, const char *state, store_queue_cb *cb, void *ctx)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, state ? "SELECT " QCOLS " FROM llm_queue WHERE state = ?1 ORDER BY qid"
                            : "SELECT " QCOLS " FROM llm_queue ORDER BY qid", &s);
    if (rc)
        return rc;
    if (state)
        sqlite3_bind_text(s, 1, state, -1, SQLITE_TRANSIENT);
    return rows(st, s, 0, cb, ctx);
}

int store_queue_get(struct store *st, int64_t qid, store_queue_cb *cb, void *ctx)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "SELECT " QCOLS " FROM llm_queue WHERE qid = ?1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, qid);
    return rows(st, s, 1, cb, ctx);
}

/* One UPDATE that must change exactly one row; 0 rows -> conflict or notfound. */
static int update1(struct store *st, sqlite3_stmt *s, int64_t qid)
{
    int changes = 0;
    int rc = run_done(st, s, &changes);
    if (rc || changes == 1)
        return rc;
    sqlite3_stmt *q = NULL;
    if ((rc = prep(st, "SELECT 1 FROM llm_queue WHERE qid = ?1", &q)))
        return rc;
    sqlite3_bind_int64(q, 1, qid);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? STORE_ERR_CONFLICT : STORE_ERR_NOTFOUND;
}

int store_queue_sent(struct store *st, int64_t qid, const uint8_t reply[32])
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "UPDATE llm_queue SET state = 'sent', reply_blob = ?2, tries = tries + 1,"
                      " error = NULL WHERE qid = ?1 AND state = 'pending'", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, qid);
    bind32(s, 2, reply);
    return update1(st, s, qid);
}

int store_queue_retry(struct store *st, int64_t qid, int64_t next_try_ms, const char *error)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "UPDATE llm_queue SET tries = tries + 1, next_try = ?2, error = ?3"
                      " WHERE qid = ?1 AND state = 'pending'", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, qid);
    sqlite3_bind_int64(s, 2, next_try_ms);
    sqlite3_bind_text(s, 3, error ? error : "", -1, SQLITE_TRANSIENT);
    return update1(st, s, qid);
}

int store_queue_done(struct store *st, int64_t qid)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "UPDATE llm_queue SET state = 'done' WHERE qid = ?1 AND state = 'sent'", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, qid);
    return update1(st, s, qid);
}

int store_queue_drop(struct store *st, int64_t qid)
{
    sqlite3_stmt *s = NULL;
    /* the row keeps the error that led to the drop (a 401, a malformed
     * prompt): `kope queue list` shows why, not only that */
    int rc = prep(st, "UPDATE llm_queue SET state = 'failed', error = CASE WHEN error IS NULL OR error = ''"
                      " THEN 'dropped' ELSE 'dropped: ' || error END"
                      " WHERE qid = ?1 AND state IN ('pending', 'sent')", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, qid);
    return update1(st, s, qid);
}

int store_queue_count(struct store *st, const char *state, int64_t *n)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, state ? "SELECT count(*) FROM llm_queue WHERE state = ?1"
                            : "SELECT count(*) FROM llm_queue", &s);
    if (rc)
        return rc;
    if (state)
        sqlite3_bind_text(s, 1, state, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *n = sqlite3_column_int64(s, 0);
        rc = 0;
    } else {
        rc = store_int_fail(st, rc);
    }
    sqlite3_finalize(s);
    return rc;
}

/* ---------------------------------------------------------------- runs --- */

int store_run_new(struct store *st, const char *suite, const char *cursor, int64_t now_s,
                  int64_t *run)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "INSERT INTO run_state(created, suite, state, cursor)"
                      " VALUES(?1, ?2, 'running', ?3)", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, now_s);
    sqlite3_bind_text(s, 2, suite, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, cursor ? cursor : "{}", -1, SQLITE_TRANSIENT);
    rc = run_done(st, s, NULL);
    if (!rc && run)
        *run = sqlite3_last_insert_rowid(store_int_db(st));
    return rc;
}

int store_run_find(struct store *st, const char *suite, const char *state, int64_t *run,
                   char **cursor)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "SELECT run, cursor FROM run_state WHERE suite = ?1 AND state = ?2"
                      " ORDER BY run DESC LIMIT 1", &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, suite, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *run = sqlite3_column_int64(s, 0);
        rc = 0;
        if (cursor) {
            const char *c = (const char *)sqlite3_column_text(s, 1);
            *cursor = strdup(c ? c : "{}");
            if (!*cursor)
                rc = STORE_ERR_SQL;
        }
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : store_int_fail(st, rc);
    }
    sqlite3_finalize(s);
    return rc;
}

int store_run_get(struct store *st, int64_t run, char **cursor)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "SELECT cursor FROM run_state WHERE run = ?1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, run);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(s, 0);
        *cursor = strdup(c ? c : "{}");
        rc = *cursor ? 0 : STORE_ERR_SQL;
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : store_int_fail(st, rc);
    }
    sqlite3_finalize(s);
    return rc;
}

int store_run_set(struct store *st, int64_t run, const char *state, const char *cursor)
{
    sqlite3_stmt *s = NULL;
    int rc = prep(st, "UPDATE run_state SET state = coalesce(?2, state),"
                      " cursor = coalesce(?3, cursor) WHERE run = ?1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, run);
    if (state)
        sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
    if (cursor)
        sqlite3_bind_text(s, 3, cursor, -1, SQLITE_TRANSIENT);
    int changes = 0;
    rc = run_done(st, s, &changes);
    return rc ? rc : changes == 1 ? 0 : STORE_ERR_NOTFOUND;
}

/*
 * store/store.c - the SQLite store. See store.h for the contract.
 *
 * Layout of this file: open and pragmas, migrations, the statement cache,
 * then one section per table group. Every statement is prepared once per
 * handle (stmt()) and reset after use; no SQL text is ever built from data.
 *
 * Durability: WAL journal with synchronous=FULL, so a committed transaction
 * survives a power cut and an interrupted one leaves no trace (SQLite's
 * atomic commit). foreign_keys=ON so links cannot dangle.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include "store/lock.h"
#include "store/store_int.h"

#include "store/store.h"

/* --------------------------------------------------------------- statements */

enum stmt_id {
    S_BEGIN, S_COMMIT, S_ROLLBACK,
    S_REC_GET_ID_ONLY, S_REC_INS, S_ORIGIN_UPSERT, S_ORIGIN_OID, S_KIND_INC,
    S_Q_ID, S_Q_RANGE, S_Q_TASK, S_Q_ORIGIN, S_Q_TASKS,
    S_ORIGIN_GET, S_ORIGIN_EACH, S_ORIGIN_CKPT,
    S_BLOB_INS, S_BLOB_GET, S_BLOB_HAS,
    S_META_GET, S_META_SET,
    S_TASK_KEYS, S_REC_ID_BY_RID, S_PROBE_LATEST,
    S_EXP_BEST, S_EXP_FAILS, S_EXP_INSIGHTS, S_EXP_RECENT,
    S_TASK_KEY_INS, S_EXP_KEY_INS,
    S_REVOKE_PUT, S_REVOKED_GET, S_REVOKED_EACH, S_CKPT_AT_MOST,
    S_N
};

#define REC_COLS "r.id, o.origin, r.seq, r.prev, r.kind, r.target, r.task, r.canon"
#define REC_FROM " FROM records r JOIN origins o ON o.oid = r.oid "
/* Records of a revoked origin after its revocation's seq are hidden from
 * every query that feeds retrieval, best and reports (docs/SYNC.md
 * "Revocation"); by-id lookups and the origin walk (import, export) see all. */
#define NOT_REVOKED(r) " NOT EXISTS (SELECT 1 FROM revoked v WHERE v.oid = " r ".oid AND " r ".seq > v.after_seq) "

static const char *const stmt_sql[S_N] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_REC_GET_ID_ONLY] = "SELECT rid, id FROM records WHERE oid = ?1 AND seq = ?2",
    [S_REC_INS] = "INSERT INTO records(id, oid, seq, prev, kind, target, task, canon, idk) "
                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_ORIGIN_UPSERT] = "INSERT OR IGNORE INTO origins(origin) VALUES(?1)",
    [S_ORIGIN_OID] = "SELECT oid FROM origins WHERE origin = ?1",
    [S_KIND_INC] = "INSERT INTO kind_counts(kind, n) VALUES(?1, ?2) "
                   "ON CONFLICT(kind) DO UPDATE SET n = n + excluded.n",
    [S_Q_ID] = "SELECT " REC_COLS REC_FROM "WHERE r.idk = ?2 AND r.id = ?1",
    [S_Q_RANGE] = "SELECT " REC_COLS REC_FROM "WHERE r.idk BETWEEN ?3 AND ?4 "
                   "AND r.id BETWEEN ?1 AND ?2 "
                   "ORDER BY r.id LIMIT 2",
    [S_Q_TASK] = "SELECT " REC_COLS REC_FROM "WHERE r.task = ?1 AND" NOT_REVOKED("r") "ORDER BY r.rid",
    [S_Q_ORIGIN] = "SELECT " REC_COLS REC_FROM "WHERE o.origin = ?1 AND r.seq > ?2 "
                   "ORDER BY r.seq",
    [S_Q_TASKS] = "SELECT " REC_COLS REC_FROM "WHERE r.kind = 'task' AND" NOT_REVOKED("r") "ORDER BY r.rid",
    [S_ORIGIN_GET] = "SELECT o.origin, r.seq, r.id, o.ckpt_seq FROM origins o "
                     "JOIN records r ON r.oid = o.oid WHERE o.origin = ?1 "
                     "ORDER BY r.seq DESC LIMIT 1",
    [S_ORIGIN_EACH] = "SELECT o.origin, r.seq, r.id, o.ckpt_seq FROM origins o "
                      "JOIN records r ON r.oid = o.oid AND r.seq = "
                      "(SELECT max(seq) FROM records WHERE oid = o.oid) ORDER BY o.origin",
    [S_ORIGIN_CKPT] = "UPDATE origins SET ckpt_seq = ?2 WHERE origin = ?1 AND ckpt_seq < ?2",
    [S_BLOB_INS] = "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES(?1, ?2, ?3)",
    [S_BLOB_GET] = "SELECT data FROM blobs WHERE hash = ?1",
    [S_BLOB_HAS] = "SELECT 1 FROM blobs WHERE hash = ?1",
    [S_TASK_KEY_INS] = "INSERT OR IGNORE INTO task_keys(rid, op, target, dtype, n, rows, cols, m, k, batch) "
                       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [S_EXP_KEY_INS] = "INSERT OR IGNORE INTO exp_keys(rid, task, kind, parent, status, speedup, share, reason) "
                      "VALUES(?1, ?2, ?3, ?4, substr(?5, 1, 32), ?6, ?7, substr(?8, 1, 600))",
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    /* no join: the record id is fetched only for the tasks retrieval keeps
     * (store_rec_id), which saves a table lookup per candidate */
    [S_TASK_KEYS] = "SELECT t.rid, t.op, t.target, t.dtype, t.n, t.rows, t.cols, t.m, t.k, t.batch"
                    " FROM task_keys t WHERE t.op = ?1 AND NOT EXISTS (SELECT 1 FROM records r"
                    " JOIN revoked v ON v.oid = r.oid WHERE r.rid = t.rid AND r.seq > v.after_seq)"
                    " ORDER BY t.rid DESC LIMIT ?2",
    [S_REC_ID_BY_RID] = "SELECT id FROM records WHERE rid = ?1",
    [S_PROBE_LATEST] = "SELECT " REC_COLS REC_FROM "WHERE r.kind = 'probe' AND r.target = ?1 AND" NOT_REVOKED("r")
                       "ORDER BY r.rid DESC LIMIT 1",
#define EXP_COLS "SELECT r.id, e.kind, e.parent, e.status, e.speedup, e.share, e.reason" \
                 " FROM exp_keys e JOIN records r ON r.rid = e.rid WHERE e.task = ?1 AND" NOT_REVOKED("r")
    [S_EXP_BEST] = EXP_COLS " AND e.status = 'pass' ORDER BY e.speedup DESC, e.rid LIMIT ?2",
    [S_EXP_FAILS] = EXP_COLS " AND e.kind = 'outcome' AND e.status <> 'pass' ORDER BY e.rid LIMIT ?2",
    [S_EXP_INSIGHTS] = EXP_COLS " AND e.status = 'insight' ORDER BY e.rid DESC LIMIT ?2",
    [S_EXP_RECENT] = EXP_COLS " AND e.kind = 'outcome' ORDER BY e.rid DESC LIMIT ?2",
    /* the lowest seq wins: a revocation never un-hides (docs/SYNC.md) */
    [S_REVOKE_PUT] = "INSERT INTO revoked(oid, after_seq, id) SELECT oid, ?2, ?3 FROM origins WHERE origin = ?1 "
                     "ON CONFLICT(oid) DO UPDATE SET after_seq = excluded.after_seq, id = excluded.id "
                     "WHERE excluded.after_seq < revoked.after_seq",
    [S_REVOKED_GET] = "SELECT o.origin, v.after_seq, v.id FROM revoked v JOIN origins o ON o.oid = v.oid "
                      "WHERE o.origin = ?1",
    [S_REVOKED_EACH] = "SELECT o.origin, v.after_seq, v.id FROM revoked v JOIN origins o ON o.oid = v.oid "
                       "ORDER BY o.origin",
    /* backwards from seq on the (oid, seq) index: own chains checkpoint
     * every 1,024 records, so this reads at most about that many rows */
    [S_CKPT_AT_MOST] = "SELECT r.seq FROM records r JOIN origins o ON o.oid = r.oid WHERE o.origin = ?1 "
                       "AND r.seq <= ?2 AND r.kind = 'checkpoint' AND (?3 = 0 OR r.canon LIKE '{\"body\":{\"cert\":%') "
                       "ORDER BY r.seq DESC LIMIT 1",
};

/* Per-kind record counts added in the open transaction: written to
 * kind_counts once at commit instead of once per record. */
#define KIND_SLOTS 12
struct kind_delta {
    char kind[16];
    int64_t n;
};

struct store {
    sqlite3 *db;
    sqlite3_stmt *stmts[S_N];
    struct kind_delta kinds[KIND_SLOTS];
    /* records reference their origin by a small integer (oid): the last one
     * resolved is cached; a rollback forgets it (the row may be gone). */
    int have_oid;
    uint8_t oid_origin[32];
    sqlite3_int64 oid;
    int version; /* schema version of this handle (older only in tests of migrations) */
    int read_only; /* opened with STORE_READONLY: every write fails */
    /* waiting for another process's write lock (busy_wait below) */
    int busy_timeout_ms;
    uint64_t busy_t0_ms;
    int busy_told;
    store_wait_fn *wait_notice;
    void *wait_ctx;
    struct store_int_lock lock; /* DB.lock: the writer's pid, named locks (store/lock.c) */
    char errmsg[256];
};

/* Map an SQLite result to a store code, keeping the message (sticky until
 * the next error). */
/* 1 if the OS error behind SQLite's last failure means "no room": a full
 * disk, a quota, or a file size limit (RLIMIT_FSIZE). A write that fails on
 * one of them is SQLITE_FULL only when it was short; a write, an fsync, a
 * WAL index that cannot grow or a journal that cannot be created say
 * SQLITE_IOERR_* or SQLITE_CANTOPEN instead. */
static int no_room(struct store *st)
{
    int e = st->db ? sqlite3_system_errno(st->db) : 0;
    return e == ENOSPC || e == EDQUOT || e == EFBIG;
}

static int fail(struct store *st, int sqlrc)
{
    snprintf(st->errmsg, sizeof st->errmsg, "%s", sqlite3_errmsg(st->db));
    switch (sqlrc & 0xff) {
    case SQLITE_FULL: return STORE_ERR_FULL;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return STORE_ERR_BUSY;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return STORE_ERR_CORRUPT;
    case SQLITE_CANTOPEN:
        return no_room(st) ? STORE_ERR_FULL : STORE_ERR_READONLY;
    case SQLITE_READONLY:
    case SQLITE_PERM: return STORE_ERR_READONLY;
    case SQLITE_IOERR:
        return no_room(st) || ((sqlrc == SQLITE_IOERR_WRITE || sqlrc == SQLITE_IOERR_FSYNC) && errno == ENOSPC)
                   ? STORE_ERR_FULL : STORE_ERR_SQL;
    default: return STORE_ERR_SQL;
    }
}

static sqlite3_stmt *stmt(struct store *st, enum stmt_id id)
{
    if (!st->stmts[id]) {
        int rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &st->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            fail(st, rc);
            return NULL;
        }
    }
    return st->stmts[id];
}

/* Step a statement that returns no rows, then reset it. */
static int step_done(struct store *st, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? 0 : fail(st, rc);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
}

static int exec_sql(struct store *st, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int code = fail(st, rc);
        if (msg)
            snprintf(st->errmsg, sizeof st->errmsg, "%s", msg);
        sqlite3_free(msg);
        return code;
    }
    return 0;
}

/* ------------------------------------------------------------ waiting */

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* SQLite's busy handler: another connection holds the lock this one needs.
 * Wait up to busy_timeout_ms (short sleeps first: most writes take
 * milliseconds), and once STORE_WAIT_NOTICE_MS have passed tell the
 * handle's owner, once per wait, with the writer's pid when it is known
 * (store/lock.h), so a user sees why a command stands still. */
static int busy_wait(void *arg, int count)
{
    static const int delay_ms[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50};
    struct store *st = arg;
    uint64_t now = mono_ms();
    if (count == 0) {
        st->busy_t0_ms = now;
        st->busy_told = 0;
    }
    uint64_t waited = now - st->busy_t0_ms;
    if (waited >= (uint64_t)st->busy_timeout_ms)
        return 0;
    if (!st->busy_told && waited >= STORE_WAIT_NOTICE_MS && st->wait_notice) {
        st->busy_told = 1;
        st->wait_notice(st->wait_ctx, store_writer_pid(st), st->busy_timeout_ms);
    }
    uint64_t d = count < (int)(sizeof delay_ms / sizeof delay_ms[0]) ? (uint64_t)delay_ms[count] : 100;
    if (waited + d > (uint64_t)st->busy_timeout_ms)
        d = (uint64_t)st->busy_timeout_ms - waited;
    usleep((useconds_t)(d * 1000));
    return 1;
}

/* Ids are SHA-256 values: random. Indexing all 32 bytes makes every insert
 * dirty a random page of a large index (bench/graph measured the WAL
 * traffic this causes). The index holds the first 63 bits instead (order-
 * preserving: the top bit is shifted out so the value is never negative),
 * and each lookup compares the full id among its (almost always single)
 * matches. Uniqueness comes from UNIQUE(origin, seq): an id hashes its
 * origin and seq, so one (origin, seq) can hold only one id. */
static sqlite3_int64 idk(const uint8_t id[32])
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | id[i];
    return (sqlite3_int64)(v >> 1);
}

/* --------------------------------------------------------------- migrations */

/* Each entry moves the schema from version i to i+1, inside one transaction.
 * Never edit a shipped entry: add a new one. */
static const char *const migrations[] = {
    /* 0 -> 1: the first schema */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE blobs(bid INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    "  size INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE TABLE origins(oid INTEGER PRIMARY KEY, origin BLOB NOT NULL UNIQUE,"
    "  ckpt_seq INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE records(rid INTEGER PRIMARY KEY, id BLOB NOT NULL, idk INTEGER NOT NULL,"
    "  oid INTEGER NOT NULL REFERENCES origins(oid), seq INTEGER NOT NULL CHECK(seq >= 1),"
    "  prev BLOB, kind TEXT NOT NULL, target TEXT NOT NULL, task BLOB, canon TEXT NOT NULL,"
    "  UNIQUE(oid, seq));"
    "CREATE INDEX records_idk ON records(idk);"
    "CREATE INDEX records_task ON records(task) WHERE task IS NOT NULL;"
    "CREATE INDEX records_tasks ON records(rid) WHERE kind = 'task';"
    "CREATE TABLE llm_queue(qid INTEGER PRIMARY KEY, created INTEGER NOT NULL,"
    "  state TEXT NOT NULL CHECK(state IN ('pending','sent','done','failed')),"
    "  task BLOB, parent BLOB, prompt_blob BLOB, reply_blob BLOB,"
    "  tries INTEGER NOT NULL DEFAULT 0, next_try INTEGER NOT NULL DEFAULT 0, error TEXT);"
    "CREATE TABLE run_state(run INTEGER PRIMARY KEY, created INTEGER NOT NULL,"
    "  suite TEXT NOT NULL, state TEXT NOT NULL, cursor TEXT NOT NULL DEFAULT '{}');",
    /* 1 -> 2: per-kind counters so `graph stats` is O(1) on a large graph;
     * backfilled from the records already stored. */
    "CREATE TABLE kind_counts(kind TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO kind_counts(kind, n) SELECT kind, count(*) FROM records GROUP BY kind;",
    /* 2 -> 3: the retrieval keys of every task record (op, dtype, shape,
     * target), so the context manager finds similar tasks through an index
     * instead of parsing every task's JSON (core/context/retrieve.c). Kept by a
     * trigger, so imports and sync fill it too; backfilled here. A task
     * body without an op gets no row. */
    "CREATE TABLE task_keys(rid INTEGER PRIMARY KEY REFERENCES records(rid),"
    "  op TEXT NOT NULL, target TEXT NOT NULL, dtype TEXT,"
    "  n INTEGER, rows INTEGER, cols INTEGER, m INTEGER, k INTEGER, batch INTEGER);"
    "CREATE INDEX task_keys_op ON task_keys(op, rid);"
    "CREATE TRIGGER records_task_keys AFTER INSERT ON records"
    "  WHEN NEW.kind = 'task' AND json_valid(NEW.canon)"
    "   AND json_type(NEW.canon, '$.body.op') = 'text' BEGIN"
    "  INSERT OR IGNORE INTO task_keys(rid, op, target, dtype, n, rows, cols, m, k, batch)"
    "  VALUES(NEW.rid, json_extract(NEW.canon, '$.body.op'), NEW.target,"
    "   json_extract(NEW.canon, '$.body.dtype'), json_extract(NEW.canon, '$.body.shape.n'),"
    "   json_extract(NEW.canon, '$.body.shape.rows'), json_extract(NEW.canon, '$.body.shape.cols'),"
    "   json_extract(NEW.canon, '$.body.shape.m'), json_extract(NEW.canon, '$.body.shape.k'),"
    "   json_extract(NEW.canon, '$.body.shape.batch'));"
    "END;"
    "INSERT INTO task_keys(rid, op, target, dtype, n, rows, cols, m, k, batch)"
    "  SELECT rid, json_extract(canon, '$.body.op'), target, json_extract(canon, '$.body.dtype'),"
    "   json_extract(canon, '$.body.shape.n'), json_extract(canon, '$.body.shape.rows'),"
    "   json_extract(canon, '$.body.shape.cols'), json_extract(canon, '$.body.shape.m'),"
    "   json_extract(canon, '$.body.shape.k'), json_extract(canon, '$.body.shape.batch')"
    "  FROM records WHERE kind = 'task' AND json_valid(canon)"
    "   AND json_type(canon, '$.body.op') = 'text';",
    /* 3 -> 4: `graph stats` reports blob bytes from this covering index
     * instead of walking every blob row (each on its own page): on a
     * 100,000-record store that walk alone cost the stats command 8 MiB of
     * page cache. */
    "CREATE INDEX blobs_size ON blobs(size);",
    /* 4 -> 5: the measured keys of every outcome and insight (status,
     * speedup, roofline share, a short reason), filed by task, so retrieval
     * reads a similar task's best pass and distinct failures through an
     * index instead of parsing all of its records (core/context/retrieve.c,
     * bench/context). Kept by a trigger; backfilled here. */
    "CREATE TABLE exp_keys(rid INTEGER PRIMARY KEY REFERENCES records(rid),"
    "  task BLOB NOT NULL, kind TEXT NOT NULL, parent TEXT, status TEXT,"
    "  speedup REAL, share REAL, reason TEXT);"
    "CREATE INDEX exp_keys_task ON exp_keys(task, status, speedup);"
    "CREATE TRIGGER records_exp_keys AFTER INSERT ON records"
    "  WHEN NEW.kind IN ('outcome', 'insight') AND NEW.task IS NOT NULL"
    "   AND json_valid(NEW.canon) BEGIN"
    "  INSERT OR IGNORE INTO exp_keys(rid, task, kind, parent, status, speedup, share, reason)"
    "  VALUES(NEW.rid, NEW.task, NEW.kind, json_extract(NEW.canon, '$.parents[0]'),"
    "   CASE WHEN NEW.kind = 'insight' THEN 'insight'"
    "    ELSE substr(json_extract(NEW.canon, '$.body.status'), 1, 32) END,"
    "   CASE WHEN json_type(NEW.canon, '$.body.speedup') IN ('integer', 'real')"
    "    THEN json_extract(NEW.canon, '$.body.speedup') END,"
    "   CASE WHEN json_type(NEW.canon, '$.body.share') IN ('integer', 'real')"
    "    THEN json_extract(NEW.canon, '$.body.share') END,"
    "   substr(coalesce(json_extract(NEW.canon, '$.body.reason'),"
    "    json_extract(NEW.canon, '$.body.text'), json_extract(NEW.canon, '$.body.summary')), 1, 600));"
    "END;"
    "INSERT OR IGNORE INTO exp_keys(rid, task, kind, parent, status, speedup, share, reason)"
    "  SELECT rid, task, kind, json_extract(canon, '$.parents[0]'),"
    "   CASE WHEN kind = 'insight' THEN 'insight'"
    "    ELSE substr(json_extract(canon, '$.body.status'), 1, 32) END,"
    "   CASE WHEN json_type(canon, '$.body.speedup') IN ('integer', 'real')"
    "    THEN json_extract(canon, '$.body.speedup') END,"
    "   CASE WHEN json_type(canon, '$.body.share') IN ('integer', 'real')"
    "    THEN json_extract(canon, '$.body.share') END,"
    "   substr(coalesce(json_extract(canon, '$.body.reason'), json_extract(canon, '$.body.text'),"
    "    json_extract(canon, '$.body.summary')), 1, 600)"
    "  FROM records WHERE kind IN ('outcome', 'insight') AND task IS NOT NULL"
    "   AND json_valid(canon);",
    /* 5 -> 6: probe records get a small partial index, so the context
     * manager finds a target's newest probe (its roofline) without a scan. */
    "CREATE INDEX records_probes ON records(rid) WHERE kind = 'probe';",
    /* 6 -> 7: task_keys and exp_keys are written by store_rec_put from keys
     * core reads off the parsed body, not by triggers that re-parsed every
     * record's JSON in SQL (measured: +76% on the insert path). */
    "DROP TRIGGER IF EXISTS records_task_keys;"
    "DROP TRIGGER IF EXISTS records_exp_keys;",
    /* 7 -> 8: revocations in force (docs/SYNC.md "Revocation"): per
     * origin, the lowest seq after which its records are refused and
     * hidden, and the revocation record that said so. */
    "CREATE TABLE revoked(oid INTEGER PRIMARY KEY REFERENCES origins(oid),"
    "  after_seq INTEGER NOT NULL CHECK(after_seq >= 0), id BLOB NOT NULL);",
};
_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA_VERSION,
               "one migration per schema version");

static int scalar(struct store *st, const char *sql, int64_t *v);

static int user_version(struct store *st, int *v)
{
    int64_t x = 0;
    int rc = scalar(st, "PRAGMA user_version", &x);
    *v = (int)x;
    return rc;
}

static int migrate(struct store *st, int target)
{
    int v = 0, rc = user_version(st, &v);
    if (rc)
        return rc;
    if (v > STORE_SCHEMA_VERSION) {
        snprintf(st->errmsg, sizeof st->errmsg,
                 "schema version %d is newer than this kope understands (%d): upgrade kope",
                 v, STORE_SCHEMA_VERSION);
        return STORE_ERR_VERSION;
    }
    for (; v < target; v++) {
        char pragma[48];
        if ((rc = exec_sql(st, "BEGIN IMMEDIATE")))
            return rc;
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
        if ((rc = exec_sql(st, migrations[v])) || (rc = exec_sql(st, pragma))) {
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
        if ((rc = exec_sql(st, "COMMIT")))
            return rc;
    }
    return 0;
}

/* --------------------------------------------------------------- open/close */

/* The folder part of path ("." for a bare name), into buf. */
static void dir_of(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

/* "file:" URI of path with immutable=1 (for a store in a folder this
 * process cannot write: see the read-only branch below). */
static int immutable_uri(const char *path, char *buf, size_t cap)
{
    size_t n = 0;
    int w = snprintf(buf, cap, "file:");
    if (w < 0 || (size_t)w >= cap)
        return -1;
    n = (size_t)w;
    for (const char *p = path; *p; p++) {
        if (n + 4 >= cap)
            return -1;
        if (*p == '%' || *p == '?' || *p == '#')
            n += (size_t)snprintf(buf + n, cap - n, "%%%02X", (unsigned char)*p);
        else
            buf[n++] = *p;
    }
    w = snprintf(buf + n, cap - n, "?immutable=1");
    return w < 0 || (size_t)w >= cap - n ? -1 : 0;
}

static int open_mode(const char *path, enum store_mode mode, int version, struct store **out,
                     char *err, size_t err_len)
{
    int rc = STORE_ERR_OPEN;
    char dir[4096];
    struct stat sb;
    struct store *st = calloc(1, sizeof *st);
    *out = NULL;
    if (!st) {
        snprintf(err, err_len, "out of memory");
        return STORE_ERR_OPEN;
    }
    st->lock.slot = -1;
    st->busy_timeout_ms = STORE_BUSY_TIMEOUT_MS;
    snprintf(st->lock.path, sizeof st->lock.path, "%s.lock", path);
    dir_of(path, dir, sizeof dir);
    /* A mistyped --db must not quietly become a new, empty store (with a
     * new identity): only `kope init` creates one. */
    if (stat(path, &sb) != 0) {
        int e = errno;
        if (stat(dir, &sb) != 0) {
            snprintf(err, err_len, "%s: the folder %s does not exist", path, dir);
            rc = STORE_ERR_NODIR;
        } else if (mode != STORE_CREATE) {
            snprintf(err, err_len, "no store at %s", path);
            rc = STORE_ERR_MISSING;
        } else {
            rc = 0;
        }
        if (rc || (e != ENOENT && e != ENOTDIR)) {
            if (!rc) {
                snprintf(err, err_len, "%s: %s", path, strerror(e));
                rc = STORE_ERR_OPEN;
            }
            goto out;
        }
    }
    int flags = mode == STORE_READONLY ? SQLITE_OPEN_READONLY
                                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int src = sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (src != SQLITE_OK) {
        snprintf(err, err_len, "%s: cannot open: %s", path,
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        rc = fail(st, src) == STORE_ERR_READONLY ? STORE_ERR_READONLY : STORE_ERR_OPEN;
        goto out;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_handler(st->db, busy_wait, st);
    if (mode == STORE_READONLY) {
        /* Nothing here writes: no journal-mode change, no migration. A WAL
         * store needs its -shm file; in a folder this process cannot write
         * (a read-only mount, another user's store) SQLite cannot create it
         * and refuses even reads (SQLITE_READONLY_DIRECTORY). When no -wal
         * file holds uncheckpointed commits, the main file alone is the
         * whole store, so it is opened as immutable (no locks, no -shm). */
        int64_t v = 0;
        int qrc = scalar(st, "PRAGMA user_version", &v);
        char wal[4200];
        snprintf(wal, sizeof wal, "%s-wal", path);
        if (qrc && (sqlite3_extended_errcode(st->db) == SQLITE_READONLY_DIRECTORY ||
                    sqlite3_extended_errcode(st->db) == SQLITE_CANTOPEN) &&
            (stat(wal, &sb) != 0 || sb.st_size == 0)) {
            char uri[4300];
            sqlite3_close(st->db);
            st->db = NULL;
            if (immutable_uri(path, uri, sizeof uri) == 0 &&
                sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                NULL) == SQLITE_OK) {
                sqlite3_extended_result_codes(st->db, 1);
                sqlite3_busy_handler(st->db, busy_wait, st);
                qrc = scalar(st, "PRAGMA user_version", &v);
            }
        }
        if (qrc || !st->db) {
            snprintf(err, err_len, "%s: cannot read: %s", path, st->db ? st->errmsg : "cannot open");
            rc = qrc == STORE_ERR_CORRUPT ? STORE_ERR_CORRUPT : STORE_ERR_READONLY;
            goto out;
        }
        if ((rc = exec_sql(st, "PRAGMA foreign_keys = ON; PRAGMA trusted_schema = OFF;"
                               "PRAGMA cache_size = -8192;"))) {
            snprintf(err, err_len, "%s: not a usable kope store: %s", path, st->errmsg);
            goto out;
        }
        if (v != version && version >= 0) {
            rc = v > version ? STORE_ERR_VERSION : STORE_ERR_OLD;
            snprintf(err, err_len, "%s: schema version %d, this kope %s %d", path, (int)v,
                     v > version ? "understands at most" : "reads", version);
            goto out;
        }
        st->version = (int)v;
        st->read_only = 1;
        *out = st;
        return 0;
    }
    /* journal_mode returns a row; the others do not. A file that is not a
     * database fails here with SQLITE_NOTADB. */
    /* cache_size: 8 MiB of pages (allocated only as used) keeps the id and
     * (origin, seq) indexes' hot pages in memory during imports; measured
     * by bench/graph, it is the difference between ~35k and ~50k records/s. */
    if ((rc = exec_sql(st, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                           "PRAGMA foreign_keys = ON; PRAGMA trusted_schema = OFF;"
                           "PRAGMA cache_size = -8192;"))) { /* STORE_CACHE_DEFAULT */
        snprintf(err, err_len, rc == STORE_ERR_FULL ? "%s: disk full: %s" : "%s: not a usable kope store: %s", path,
                 st->errmsg);
        goto out;
    }
    if (version >= 0 && (rc = migrate(st, version))) {
        snprintf(err, err_len, rc == STORE_ERR_FULL ? "%s: disk full: %s" : "%s: %s", path, st->errmsg);
        goto out;
    }
    st->version = store_schema_version(st);
    *out = st;
    st = NULL;
    rc = 0;
out:
    store_close(st);
    return rc;
}

int store_open_at(const char *path, int version, struct store **out, char *err, size_t err_len)
{
    return open_mode(path, STORE_CREATE, version, out, err, err_len);
}

int store_open(const char *path, struct store **out, char *err, size_t err_len)
{
    return open_mode(path, STORE_CREATE, STORE_SCHEMA_VERSION, out, err, err_len);
}

int store_open_mode(const char *path, enum store_mode mode, struct store **out, char *err,
                    size_t err_len)
{
    return open_mode(path, mode, STORE_SCHEMA_VERSION, out, err, err_len);
}

int store_read_only(const struct store *st)
{
    return st && st->read_only;
}

void store_set_busy_timeout(struct store *st, int timeout_ms)
{
    if (st && timeout_ms > 0)
        st->busy_timeout_ms = timeout_ms;
}

void store_set_wait_notice(struct store *st, store_wait_fn *fn, void *ctx)
{
    if (!st)
        return;
    st->wait_notice = fn;
    st->wait_ctx = ctx;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    store_int_lock_close(st);
    for (int i = 0; i < S_N; i++)
        sqlite3_finalize(st->stmts[i]);
    sqlite3_close(st->db);
    free(st);
}

const char *store_errmsg(const struct store *st)
{
    return st && st->errmsg[0] ? st->errmsg : "no error";
}

const char *store_strerror(int code)
{
    switch (code) {
    case STORE_ERR_OPEN: return "store: cannot open the file";
    case STORE_ERR_SQL: return "store: SQLite error";
    case STORE_ERR_FULL: return "store: disk full (free space and retry; nothing partial was written)";
    case STORE_ERR_BUSY: return "store: locked by another kope process";
    case STORE_ERR_CONFLICT: return "store: a different record already holds this (origin, seq)";
    case STORE_ERR_NOTFOUND: return "store: not found";
    case STORE_ERR_VERSION: return "store: made by a newer kope";
    case STORE_ERR_CORRUPT: return "store: file is corrupt";
    case STORE_ERR_READONLY: return "store: file is read-only";
    case STORE_ERR_MISSING: return "store: no store at this path";
    case STORE_ERR_NODIR: return "store: the folder does not exist";
    case STORE_ERR_OLD: return "store: an older schema (a write command migrates it)";
    case STORE_ERR_LOCKED: return "store: in use by another kope process";
    default: return "store: unknown error";
    }
}

const char *store_sqlite_version(void)
{
    return sqlite3_libversion();
}

int store_schema_version(struct store *st)
{
    int v = -1;
    return user_version(st, &v) ? -1 : v;
}

/* --------------------------------------------------------------- transactions */

static int kinds_flush(struct store *st)
{
    int rc = 0;
    for (int i = 0; i < KIND_SLOTS && st->kinds[i].kind[0]; i++) {
        sqlite3_stmt *s = stmt(st, S_KIND_INC);
        if (!s)
            return STORE_ERR_SQL;
        sqlite3_bind_text(s, 1, st->kinds[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, st->kinds[i].n);
        if ((rc = step_done(st, s)))
            return rc;
    }
    memset(st->kinds, 0, sizeof st->kinds);
    return 0;
}

static int kinds_add(struct store *st, const char *kind)
{
    int i = 0;
    for (; i < KIND_SLOTS && st->kinds[i].kind[0]; i++)
        if (strcmp(st->kinds[i].kind, kind) == 0)
            break;
    if (i == KIND_SLOTS) {
        int rc = kinds_flush(st);
        if (rc)
            return rc;
        i = 0;
    }
    snprintf(st->kinds[i].kind, sizeof st->kinds[i].kind, "%s", kind);
    st->kinds[i].n++;
    return sqlite3_get_autocommit(st->db) ? kinds_flush(st) : 0;
}

/* BEGIN IMMEDIATE takes the write lock now (waiting in busy_wait while
 * another process holds it), so whatever the transaction reads - an
 * origin's head before its next record - is the latest committed state and
 * stays so until the commit. */
int store_begin(struct store *st)
{
    sqlite3_stmt *s = stmt(st, S_BEGIN);
    memset(st->kinds, 0, sizeof st->kinds);
    int rc = s ? step_done(st, s) : STORE_ERR_SQL;
    if (!rc)
        store_int_writer_note(st, 1);
    return rc;
}

int store_commit(struct store *st)
{
    int rc = kinds_flush(st);
    if (rc)
        return rc;
    sqlite3_stmt *s = stmt(st, S_COMMIT);
    if (!s)
        return STORE_ERR_SQL;
    /* cleared while the lock is still ours: once COMMIT returns, the next
     * writer may already have noted itself */
    store_int_writer_note(st, 0);
    return step_done(st, s);
}

void store_rollback(struct store *st)
{
    memset(st->kinds, 0, sizeof st->kinds);
    st->have_oid = 0;
    if (sqlite3_get_autocommit(st->db))
        return; /* SQLite already rolled back (e.g. after SQLITE_FULL) */
    store_int_writer_note(st, 0);
    sqlite3_stmt *s = stmt(st, S_ROLLBACK);
    if (s)
        step_done(st, s);
}

/* --------------------------------------------------------------- records */

/* After a UNIQUE failure: the same record (a no-op) or a fork? */
static int rec_existing(struct store *st, const struct store_rec *r, sqlite3_int64 oid)
{
    sqlite3_stmt *s = stmt(st, S_REC_GET_ID_ONLY);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_int64(s, 1, oid);
    sqlite3_bind_int64(s, 2, r->seq);
    int rc = sqlite3_step(s), out;
    if (rc == SQLITE_ROW) {
        out = sqlite3_column_bytes(s, 1) == 32 && memcmp(sqlite3_column_blob(s, 1), r->id, 32) == 0
                  ? 1 : STORE_ERR_CONFLICT;
    } else {
        /* the id exists under another (origin, seq): impossible for a real
         * hash, so the caller handed us an inconsistent record */
        out = rc == SQLITE_DONE ? STORE_ERR_CONFLICT : fail(st, rc);
    }
    sqlite3_reset(s);
    if (out == STORE_ERR_CONFLICT)
        snprintf(st->errmsg, sizeof st->errmsg, "origin already has a different record at seq %lld",
                 (long long)r->seq);
    return out;
}

static void bind_size(sqlite3_stmt *s, int i, double v)
{
    if (v >= 0)
        sqlite3_bind_double(s, i, v);
}

/* The retrieval keys core read from the body, in the record's transaction.
 * (Schema 3 and 5 kept these with SQL triggers that re-parsed the JSON of
 * every insert; doing it here costs one bound statement.) */
static int keys_put(struct store *st, const struct store_rec *r)
{
    sqlite3_stmt *s;
    sqlite3_int64 rid = sqlite3_last_insert_rowid(st->db);
    /* the key tables exist from schema 3 (task_keys) and 5 (exp_keys) */
    if (r->task_key && r->task_key->op && st->version >= 3) {
        const struct store_task_idx *k = r->task_key;
        if (!(s = stmt(st, S_TASK_KEY_INS)))
            return STORE_ERR_SQL;
        sqlite3_bind_int64(s, 1, rid);
        sqlite3_bind_text(s, 2, k->op, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, r->target, -1, SQLITE_STATIC);
        if (k->dtype)
            sqlite3_bind_text(s, 4, k->dtype, -1, SQLITE_STATIC);
        bind_size(s, 5, k->n);
        bind_size(s, 6, k->rows);
        bind_size(s, 7, k->cols);
        bind_size(s, 8, k->m);
        bind_size(s, 9, k->k);
        bind_size(s, 10, k->batch);
        int rc = step_done(st, s);
        if (rc)
            return rc;
    }
    if (r->exp_key && r->has_task && st->version >= 5) {
        const struct store_exp_idx *e = r->exp_key;
        if (!(s = stmt(st, S_EXP_KEY_INS)))
            return STORE_ERR_SQL;
        sqlite3_bind_int64(s, 1, rid);
        sqlite3_bind_blob(s, 2, r->task, 32, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, r->kind, -1, SQLITE_STATIC);
        if (e->parent)
            sqlite3_bind_text(s, 4, e->parent, -1, SQLITE_STATIC);
        if (e->status)
            sqlite3_bind_text(s, 5, e->status, -1, SQLITE_STATIC);
        if (e->has_speedup)
            sqlite3_bind_double(s, 6, e->speedup);
        if (e->has_share)
            sqlite3_bind_double(s, 7, e->share);
        if (e->reason)
            sqlite3_bind_text(s, 8, e->reason, -1, SQLITE_STATIC);
        return step_done(st, s);
    }
    return 0;
}

int store_rec_put(struct store *st, const struct store_rec *r)
{
    int rc;
    sqlite3_stmt *s;
    /* A chain starts with seq 1: that record creates its origin's row,
     * which every later record of the origin references. */
    if (r->seq == 1) {
        if (!(s = stmt(st, S_ORIGIN_UPSERT)))
            return STORE_ERR_SQL;
        sqlite3_bind_blob(s, 1, r->origin, 32, SQLITE_STATIC);
        if ((rc = step_done(st, s)))
            return rc;
    }
    if (!st->have_oid || memcmp(st->oid_origin, r->origin, 32) != 0) {
        if (!(s = stmt(st, S_ORIGIN_OID)))
            return STORE_ERR_SQL;
        sqlite3_bind_blob(s, 1, r->origin, 32, SQLITE_STATIC);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            st->oid = sqlite3_column_int64(s, 0);
            memcpy(st->oid_origin, r->origin, 32);
            st->have_oid = 1;
        }
        sqlite3_reset(s);
        if (rc == SQLITE_DONE) {
            snprintf(st->errmsg, sizeof st->errmsg, "record of an origin whose chain start is not stored");
            return STORE_ERR_CONFLICT;
        }
        if (rc != SQLITE_ROW)
            return fail(st, rc);
    }
    if (!(s = stmt(st, S_REC_INS)))
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, r->id, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, st->oid);
    sqlite3_bind_int64(s, 3, r->seq);
    if (r->has_prev)
        sqlite3_bind_blob(s, 4, r->prev, 32, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, r->target, -1, SQLITE_STATIC);
    if (r->has_task)
        sqlite3_bind_blob(s, 7, r->task, 32, SQLITE_STATIC);
    sqlite3_bind_text(s, 8, r->canon, (int)r->canon_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 9, idk(r->id));
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
        return rec_existing(st, r, st->oid);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
        fail(st, rc);
        snprintf(st->errmsg, sizeof st->errmsg, "record of an origin whose chain start is not stored");
        return STORE_ERR_CONFLICT;
    }
    if (rc != SQLITE_DONE)
        return fail(st, rc);

    /* Parents and blob references live in the canonical JSON; the store
     * only guarantees that every referenced blob is present. */
    for (size_t i = 0; i < r->n_blobs; i++) {
        if (!store_blob_has(st, r->blobs[i])) {
            snprintf(st->errmsg, sizeof st->errmsg, "a record references a blob that is not stored");
            return STORE_ERR_NOTFOUND;
        }
    }
    if ((rc = keys_put(st, r)))
        return rc;
    return kinds_add(st, r->kind);
}

static void copy32(sqlite3_stmt *s, int col, uint8_t out[32], int *has)
{
    const void *p = sqlite3_column_blob(s, col);
    int ok = p && sqlite3_column_bytes(s, col) == 32;
    if (ok)
        memcpy(out, p, 32);
    else
        memset(out, 0, 32);
    if (has)
        *has = ok;
}

/* Walk the rows of a prepared record query (columns REC_COLS), then reset it. */
static int rec_rows(struct store *st, sqlite3_stmt *s, int need_row, store_rec_cb *cb, void *ctx)
{
    int rc, rows = 0, out = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_rec r;
        memset(&r, 0, sizeof r);
        copy32(s, 0, r.id, NULL);
        copy32(s, 1, r.origin, NULL);
        r.seq = sqlite3_column_int64(s, 2);
        copy32(s, 3, r.prev, &r.has_prev);
        r.kind = (const char *)sqlite3_column_text(s, 4);
        r.target = (const char *)sqlite3_column_text(s, 5);
        copy32(s, 6, r.task, &r.has_task);
        r.canon = (const char *)sqlite3_column_text(s, 7);
        r.canon_len = (size_t)sqlite3_column_bytes(s, 7);
        rows++;
        if ((out = cb(ctx, &r)) != 0)
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = fail(st, rc);
    if (!out && need_row && rows == 0)
        out = STORE_ERR_NOTFOUND;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
}

int store_rec_query(struct store *st, enum store_rec_query q, const uint8_t key[32],
                    int64_t n, store_rec_cb *cb, void *ctx)
{
    static const enum stmt_id map[] = {
        [STORE_Q_ID] = S_Q_ID, [STORE_Q_TASK] = S_Q_TASK,
        [STORE_Q_ORIGIN] = S_Q_ORIGIN, [STORE_Q_TASKS] = S_Q_TASKS,
    };
    sqlite3_stmt *s = stmt(st, map[q]);
    if (!s)
        return STORE_ERR_SQL;
    if (q != STORE_Q_TASKS)
        sqlite3_bind_blob(s, 1, key, 32, SQLITE_STATIC);
    if (q == STORE_Q_ID)
        sqlite3_bind_int64(s, 2, idk(key));
    if (q == STORE_Q_ORIGIN)
        sqlite3_bind_int64(s, 2, n);
    return rec_rows(st, s, q == STORE_Q_ID, cb, ctx);
}

int store_rec_range(struct store *st, const uint8_t lo[32], const uint8_t hi[32],
                    store_rec_cb *cb, void *ctx)
{
    sqlite3_stmt *s = stmt(st, S_Q_RANGE);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, lo, 32, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, hi, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, idk(lo));
    sqlite3_bind_int64(s, 4, idk(hi));
    return rec_rows(st, s, 0, cb, ctx);
}

/* --------------------------------------------------------------- origins */

static void origin_row(sqlite3_stmt *s, struct store_origin *o)
{
    copy32(s, 0, o->origin, NULL);
    o->head_seq = sqlite3_column_int64(s, 1);
    copy32(s, 2, o->head_id, NULL);
    o->ckpt_seq = sqlite3_column_int64(s, 3);
}

int store_origin_get(struct store *st, const uint8_t origin[32], struct store_origin *o)
{
    sqlite3_stmt *s = stmt(st, S_ORIGIN_GET);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        origin_row(s, o);
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : fail(st, rc);
    }
    sqlite3_reset(s);
    return rc;
}

int store_origin_each(struct store *st, store_origin_cb *cb, void *ctx)
{
    sqlite3_stmt *s = stmt(st, S_ORIGIN_EACH);
    if (!s)
        return STORE_ERR_SQL;
    int rc, out = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_origin o;
        origin_row(s, &o);
        if ((out = cb(ctx, &o)))
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = fail(st, rc);
    sqlite3_reset(s);
    return out;
}

int store_origin_set_ckpt(struct store *st, const uint8_t origin[32], int64_t seq)
{
    sqlite3_stmt *s = stmt(st, S_ORIGIN_CKPT);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, seq);
    return step_done(st, s);
}

/* --------------------------------------------------------------- blobs */

int store_blob_put(struct store *st, const uint8_t hash[32], const void *data, size_t len)
{
    sqlite3_stmt *s = stmt(st, S_BLOB_INS);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)len);
    sqlite3_bind_blob64(s, 3, data, len, SQLITE_STATIC);
    return step_done(st, s);
}

int store_blob_get(struct store *st, const uint8_t hash[32], char **data, size_t *len)
{
    sqlite3_stmt *s = stmt(st, S_BLOB_GET);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    *data = NULL;
    if (rc == SQLITE_ROW) {
        size_t n = (size_t)sqlite3_column_bytes(s, 0);
        char *p = malloc(n + 1);
        if (p) {
            if (n)
                memcpy(p, sqlite3_column_blob(s, 0), n);
            p[n] = '\0';
            *data = p;
            *len = n;
            rc = 0;
        } else {
            rc = STORE_ERR_SQL;
        }
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : fail(st, rc);
    }
    sqlite3_reset(s);
    return rc;
}

int store_blob_has(struct store *st, const uint8_t hash[32])
{
    sqlite3_stmt *s = stmt(st, S_BLOB_HAS);
    if (!s)
        return 0;
    sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
    int has = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_reset(s);
    return has;
}

/* --------------------------------------------------------------- meta */

int store_meta_get(struct store *st, const char *key, char **value)
{
    sqlite3_stmt *s = stmt(st, S_META_GET);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    *value = NULL;
    if (rc == SQLITE_ROW) {
        *value = strdup((const char *)sqlite3_column_text(s, 0));
        rc = *value ? 0 : STORE_ERR_SQL;
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : fail(st, rc);
    }
    sqlite3_reset(s);
    return rc;
}

int store_meta_set(struct store *st, const char *key, const char *value)
{
    sqlite3_stmt *s = stmt(st, S_META_SET);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
    return step_done(st, s);
}

int store_rec_id(struct store *st, int64_t rid, uint8_t id[32])
{
    sqlite3_stmt *s = stmt(st, S_REC_ID_BY_RID);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_int64(s, 1, rid);
    int rc = sqlite3_step(s), has = 0;
    if (rc == SQLITE_ROW)
        copy32(s, 0, id, &has);
    int out = rc == SQLITE_ROW ? (has ? 0 : STORE_ERR_CORRUPT)
              : rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : fail(st, rc);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
}

int store_probe_latest(struct store *st, const char *target, store_rec_cb *cb, void *ctx)
{
    sqlite3_stmt *s = stmt(st, S_PROBE_LATEST);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_text(s, 1, target, -1, SQLITE_STATIC);
    return rec_rows(st, s, 1, cb, ctx);
}

/* --------------------------------------------------------------- revocations */

int store_revoke_put(struct store *st, const uint8_t origin[32], int64_t after_seq, const uint8_t id[32])
{
    sqlite3_stmt *s;
    int rc;
    /* the origin may have no records here yet: its row carries the
     * revocation until they come (and are refused after after_seq) */
    if (!(s = stmt(st, S_ORIGIN_UPSERT)))
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    if ((rc = step_done(st, s)))
        return rc;
    st->have_oid = 0;
    if (!(s = stmt(st, S_REVOKE_PUT)))
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, after_seq);
    sqlite3_bind_blob(s, 3, id, 32, SQLITE_STATIC);
    return step_done(st, s);
}

static void revoked_row(sqlite3_stmt *s, struct store_revoked *v)
{
    memset(v, 0, sizeof *v);
    copy32(s, 0, v->origin, NULL);
    v->after_seq = sqlite3_column_int64(s, 1);
    copy32(s, 2, v->id, NULL);
}

int store_revoked_get(struct store *st, const uint8_t origin[32], struct store_revoked *v)
{
    sqlite3_stmt *s = stmt(st, S_REVOKED_GET);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        revoked_row(s, v);
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : fail(st, rc);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

int store_revoked_each(struct store *st, store_revoked_cb *cb, void *ctx)
{
    sqlite3_stmt *s = stmt(st, S_REVOKED_EACH);
    if (!s)
        return STORE_ERR_SQL;
    int rc, out = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_revoked v;
        revoked_row(s, &v);
        if ((out = cb(ctx, &v)) != 0)
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = fail(st, rc);
    sqlite3_reset(s);
    return out;
}

int store_ckpt_at_most(struct store *st, const uint8_t origin[32], int64_t seq, int with_cert, int64_t *out)
{
    sqlite3_stmt *s = stmt(st, S_CKPT_AT_MOST);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, origin, 32, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, seq);
    sqlite3_bind_int(s, 3, with_cert);
    int rc = sqlite3_step(s);
    *out = 0;
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? 0 : fail(st, rc);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

/* --------------------------------------------------------------- experience keys */

int store_exp_keys(struct store *st, const uint8_t task[32], enum store_exp_query q, int limit,
                   store_exp_key_cb *cb, void *ctx)
{
    static const enum stmt_id map[] = {
        [STORE_EXP_BEST] = S_EXP_BEST, [STORE_EXP_FAILS] = S_EXP_FAILS,
        [STORE_EXP_INSIGHTS] = S_EXP_INSIGHTS, [STORE_EXP_RECENT] = S_EXP_RECENT,
    };
    if ((unsigned)q > STORE_EXP_RECENT)
        return STORE_ERR_SQL;
    sqlite3_stmt *s = stmt(st, map[q]);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_blob(s, 1, task, 32, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, limit);
    int rc, out = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_exp_key k;
        memset(&k, 0, sizeof k);
        copy32(s, 0, k.id, NULL);
        k.kind = (const char *)sqlite3_column_text(s, 1);
        k.parent = (const char *)sqlite3_column_text(s, 2);
        k.status = (const char *)sqlite3_column_text(s, 3);
        k.has_speedup = sqlite3_column_type(s, 4) != SQLITE_NULL;
        k.speedup = sqlite3_column_double(s, 4);
        k.has_share = sqlite3_column_type(s, 5) != SQLITE_NULL;
        k.share = sqlite3_column_double(s, 5);
        k.reason = (const char *)sqlite3_column_text(s, 6);
        if ((out = cb(ctx, &k)) != 0)
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = fail(st, rc);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
}

/* --------------------------------------------------------------- task keys */

int store_task_keys(struct store *st, const char *op, int limit, store_task_key_cb *cb, void *ctx)
{
    sqlite3_stmt *s = stmt(st, S_TASK_KEYS);
    if (!s)
        return STORE_ERR_SQL;
    sqlite3_bind_text(s, 1, op, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, limit);
    int rc, out = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_task_key k;
        memset(&k, 0, sizeof k);
        k.rid = sqlite3_column_int64(s, 0);
        k.op = (const char *)sqlite3_column_text(s, 1);
        k.target = (const char *)sqlite3_column_text(s, 2);
        k.dtype = (const char *)sqlite3_column_text(s, 3);
        int64_t *dims[6] = {&k.n, &k.rows, &k.cols, &k.m, &k.k, &k.batch};
        for (int i = 0; i < 6; i++)
            *dims[i] = sqlite3_column_int64(s, 4 + i);
        if ((out = cb(ctx, &k)) != 0)
            break;
    }
    if (!out && rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = fail(st, rc);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
}

/* --------------------------------------------------------------- stats */

static int scalar(struct store *st, const char *sql, int64_t *v)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return fail(st, rc);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(s, 0);
        rc = 0;
    } else {
        rc = fail(st, rc);
    }
    sqlite3_finalize(s);
    return rc;
}

int store_stats_get(struct store *st, struct store_stats *out)
{
    int rc;
    int64_t pages = 0, psize = 0;
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(st->db, "SELECT kind, n FROM kind_counts ORDER BY kind", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return fail(st, rc);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(s, 1);
        out->n_records += n;
        if (out->n_kinds < (int)(sizeof out->kinds / sizeof out->kinds[0])) {
            snprintf(out->kinds[out->n_kinds].kind, sizeof out->kinds[0].kind, "%s",
                     (const char *)sqlite3_column_text(s, 0));
            out->kinds[out->n_kinds++].n = n;
        }
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return fail(st, rc);
    /* The blob figures come from SQLite's own aggregate over a small table
     * (one row per distinct text), not from a scan of the records. */
    if ((rc = scalar(st, "SELECT count(*) FROM origins", &out->n_origins)) ||
        (rc = scalar(st, "SELECT count(*) FROM blobs", &out->n_blobs)) ||
        (rc = scalar(st, "SELECT coalesce(sum(size), 0) FROM blobs", &out->blob_bytes)) ||
        (rc = scalar(st, "SELECT count(*) FROM llm_queue WHERE state = 'pending'", &out->queue_pending)) ||
        (rc = scalar(st, "PRAGMA page_count", &pages)) ||
        (rc = scalar(st, "PRAGMA page_size", &psize)))
        return rc;
    out->file_bytes = pages * psize;
    out->schema_version = store_schema_version(st);
    return 0;
}

int store_seal(struct store *st)
{
    return exec_sql(st, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
}

int store_integrity_check(struct store *st)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "PRAGMA integrity_check", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return fail(st, rc);
    rc = sqlite3_step(s);
    int out = 0;
    if (rc != SQLITE_ROW) {
        out = fail(st, rc);
    } else if (strcmp((const char *)sqlite3_column_text(s, 0), "ok") != 0) {
        snprintf(st->errmsg, sizeof st->errmsg, "%s", (const char *)sqlite3_column_text(s, 0));
        out = STORE_ERR_CORRUPT;
    }
    sqlite3_finalize(s);
    return out;
}

int store_set_max_bytes(struct store *st, int64_t max_bytes)
{
    int64_t psize = 4096, pages;
    int rc = scalar(st, "PRAGMA page_size", &psize);
    if (rc)
        return rc;
    pages = max_bytes > 0 ? max_bytes / psize : 4294967294LL;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)(pages < 1 ? 1 : pages));
    return scalar(st, sql, &pages);
}

int store_set_cache_bytes(struct store *st, int64_t bytes)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA cache_size = %lld", -(long long)(bytes / 1024));
    return exec_sql(st, sql);
}

/* --------------------------------------------------- internal accessors */

/* For the other files of store/ (store/store_int.h): the SQLite handle and
 * the error mapping, so the queue and run-state code can live in its own file. */
sqlite3 *store_int_db(struct store *st)
{
    return st->db;
}

int store_int_fail(struct store *st, int sqlrc)
{
    return fail(st, sqlrc);
}

void store_int_set_msg(struct store *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
    va_end(ap);
}

struct store_int_lock *store_int_lock(struct store *st)
{
    return &st->lock;
}

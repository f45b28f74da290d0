/*
 * store/store.h - kope's one SQLite file: records, blobs, origins, the LLM
 * call queue and run state.
 *
 * The store keeps what it is given and decides nothing: hashing, chain and
 * signature checks are the graph's (core/graph/graph.c). It guarantees that every
 * write it is asked for in one transaction lands whole or not at all, that
 * (origin, seq) and id are unique, and that the schema is migrated to the
 * current version on open (PRAGMA user_version; see docs/STORE.md).
 *
 * Ownership: struct store is a handle (open/close). Row pointers handed to a
 * callback are valid only during that callback. Errors: STORE_ERR_* below;
 * the handle keeps the last SQLite message (store_errmsg).
 */
#ifndef KOPE_STORE_H
#define KOPE_STORE_H

#include <stddef.h>
#include <stdint.h>

enum store_err {
    STORE_ERR_OPEN = -100,     /* file cannot be opened / is not a kope store */
    STORE_ERR_SQL = -101,      /* SQLite reported an error (see store_errmsg) */
    STORE_ERR_FULL = -102,     /* disk full */
    STORE_ERR_BUSY = -103,     /* locked by another process longer than the timeout */
    STORE_ERR_CONFLICT = -104, /* (origin, seq) already holds a different record */
    STORE_ERR_NOTFOUND = -105,
    STORE_ERR_VERSION = -106,  /* file made by a newer kope */
    STORE_ERR_CORRUPT = -107,
    STORE_ERR_READONLY = -108,
    STORE_ERR_MISSING = -109,  /* no store at the path (only STORE_CREATE makes one) */
    STORE_ERR_NODIR = -110,    /* the store's folder does not exist */
    STORE_ERR_OLD = -111,      /* older schema: read-only opening cannot migrate it */
    STORE_ERR_LOCKED = -112,   /* a named lock is held by another live process (store/lock.h) */
};

#define STORE_SCHEMA_VERSION 8

struct store;

/* A record as stored. canon is the canonical JSON without the "id" member. */
struct store_rec {
    uint8_t id[32];
    uint8_t origin[32];
    int64_t seq;
    int has_prev;
    uint8_t prev[32];
    int has_task;
    uint8_t task[32];
    const char *kind;
    const char *target;
    const char *canon;
    size_t canon_len;
    const uint8_t (*blobs)[32]; /* blobs the record references: must be stored */
    size_t n_blobs;
    /* Retrieval keys read from the body by core (NULL: none), indexed in
     * task_keys / exp_keys in the same transaction as the record. */
    const struct store_task_idx *task_key;
    const struct store_exp_idx *exp_key;
};

/* What a task record is indexed by (docs/STORE.md, task_keys). Sizes < 0
 * and NULL strings are absent. */
struct store_task_idx {
    const char *op;
    const char *dtype;
    double n, rows, cols, m, k, batch;
};

/* What an outcome or insight is indexed by (exp_keys). */
struct store_exp_idx {
    const char *parent; /* hex id of its first parent, or NULL */
    const char *status; /* "insight" for an insight */
    int has_speedup, has_share;
    double speedup, share;
    const char *reason; /* cut to 600 bytes by the store */
};

/* Open (creating if absent) and migrate the store at path. On failure a
 * message naming the file goes to err. */
int store_open(const char *path, struct store **out, char *err, size_t err_len);

enum store_mode {
    STORE_CREATE,   /* create if absent (with its folder existing), migrate */
    STORE_EXISTING, /* STORE_ERR_MISSING if absent; migrate */
    STORE_READONLY, /* STORE_ERR_MISSING if absent; never writes (no migration:
                     * STORE_ERR_OLD for an older schema); works in a folder this
                     * process cannot write (opened immutable when no -wal holds
                     * commits: then it must not be written meanwhile) */
};
/* store_open with a mode. A missing folder is STORE_ERR_NODIR in every mode. */
int store_open_mode(const char *path, enum store_mode mode, struct store **out, char *err,
                    size_t err_len);
/* 1 if st was opened STORE_READONLY. */
int store_read_only(const struct store *st);
/* Open without migrating (for tests of migrations): version 0 = empty. */
int store_open_at(const char *path, int version, struct store **out, char *err, size_t err_len);
void store_close(struct store *st);
/* How long a write waits for another connection's lock before failing with
 * STORE_ERR_BUSY (store_open sets STORE_BUSY_TIMEOUT_MS; the CLI waits
 * longer, saying so). A sync server's session waits as long as it would
 * wait for its own peer (core/graph/sync.c). */
#ifndef STORE_BUSY_TIMEOUT_MS
#define STORE_BUSY_TIMEOUT_MS 5000
#endif
void store_set_busy_timeout(struct store *st, int timeout_ms);
/* Told once per wait, when a wait for another process's lock has lasted
 * STORE_WAIT_NOTICE_MS: the writer's pid (0 when unknown, store/lock.h) and
 * how long the wait may last. Called from inside SQLite's busy handler: it
 * must not use this store. NULL = silent (the default). */
#ifndef STORE_WAIT_NOTICE_MS
#define STORE_WAIT_NOTICE_MS 1000
#endif
typedef void store_wait_fn(void *ctx, long writer_pid, int timeout_ms);
void store_set_wait_notice(struct store *st, store_wait_fn *fn, void *ctx);
const char *store_errmsg(const struct store *st);
const char *store_strerror(int code);
const char *store_sqlite_version(void);
int store_schema_version(struct store *st);

/* Transactions. Every multi-row change goes inside one. */
int store_begin(struct store *st);
int store_commit(struct store *st);
void store_rollback(struct store *st);

/* --- records ------------------------------------------------------------ */
/* Insert a record (its origin's head advances with it). Returns 0, 1 if this exact id is already stored (a no-op: merging is
 * a union), STORE_ERR_CONFLICT if (origin, seq) holds another id, or an
 * error. Referenced blobs must already be stored (STORE_ERR_NOTFOUND). */
int store_rec_put(struct store *st, const struct store_rec *r);

typedef int store_rec_cb(void *ctx, const struct store_rec *r);

enum store_rec_query {
    STORE_Q_ID,        /* key = record id (0 or 1 row) */
    STORE_Q_TASK,      /* key = task id: every record of that task, in insertion order */
    STORE_Q_ORIGIN,    /* key = origin, n = seq: records of origin with seq > n, in seq order */
    STORE_Q_TASKS,     /* key unused: every task record (a small partial index) */
};
/* Run a query, calling cb for each row (blobs are not filled).
 * A non-zero return from cb stops the walk and is returned. Returns
 * STORE_ERR_NOTFOUND for STORE_Q_ID when absent. */
int store_rec_query(struct store *st, enum store_rec_query q, const uint8_t key[32],
                    int64_t n, store_rec_cb *cb, void *ctx);
/* Records whose id lies in [lo, hi] (byte order), at most 2 (to detect an
 * ambiguous prefix). */
int store_rec_range(struct store *st, const uint8_t lo[32], const uint8_t hi[32],
                    store_rec_cb *cb, void *ctx);
/* --- origins (one row per device chain) --------------------------------- */
struct store_origin {
    uint8_t origin[32];
    int64_t head_seq;
    uint8_t head_id[32];
    int64_t ckpt_seq; /* highest seq covered by a stored checkpoint */
};
/* STORE_ERR_NOTFOUND when the origin has no records here. */
int store_origin_get(struct store *st, const uint8_t origin[32], struct store_origin *o);
typedef int store_origin_cb(void *ctx, const struct store_origin *o);
int store_origin_each(struct store *st, store_origin_cb *cb, void *ctx);
int store_origin_set_ckpt(struct store *st, const uint8_t origin[32], int64_t seq);

/* --- revocations (schema 8): origins whose records after a seq are refused
 * and hidden (docs/SYNC.md "Revocation"). The store keeps what core
 * verified; the lowest seq per origin wins. Hidden from STORE_Q_TASK,
 * STORE_Q_TASKS, task keys, experience keys and probes; STORE_Q_ID and
 * STORE_Q_ORIGIN see every record (import and export decide). */
struct store_revoked {
    uint8_t origin[32];
    int64_t after_seq;
    uint8_t id[32]; /* the revocation record in force */
};
/* Record a revocation (inside the caller's transaction); a higher seq than
 * the one in force changes nothing. */
int store_revoke_put(struct store *st, const uint8_t origin[32], int64_t after_seq, const uint8_t id[32]);
/* STORE_ERR_NOTFOUND when origin is not revoked. */
int store_revoked_get(struct store *st, const uint8_t origin[32], struct store_revoked *v);
typedef int store_revoked_cb(void *ctx, const struct store_revoked *v);
int store_revoked_each(struct store *st, store_revoked_cb *cb, void *ctx);
/* The highest seq <= seq of a checkpoint of origin (with_cert: only one
 * whose body carries a "cert"), or 0 in *out when there is none. */
int store_ckpt_at_most(struct store *st, const uint8_t origin[32], int64_t seq, int with_cert, int64_t *out);

/* --- blobs: content-addressed, stored once ------------------------------ */
/* Insert unless present (hash is the caller's SHA-256 of data). */
int store_blob_put(struct store *st, const uint8_t hash[32], const void *data, size_t len);
/* *data is heap, NUL-terminated, owned by the caller. */
int store_blob_get(struct store *st, const uint8_t hash[32], char **data, size_t *len);
int store_blob_has(struct store *st, const uint8_t hash[32]);
/* --- small key/value settings (device id, created time) ----------------- */
/* *value heap, owned by caller; STORE_ERR_NOTFOUND if absent. */
int store_meta_get(struct store *st, const char *key, char **value);
int store_meta_set(struct store *st, const char *key, const char *value);

/* --- task keys: what retrieval matches on (schema 3) --------------------- *
 * One row per task record whose body has a string "op": its target, dtype
 * and shape dimensions (0 when absent), kept by a trigger on insert. */
struct store_task_key {
    int64_t rid;          /* the task record's row (store_rec_id gives its id) */
    const char *op, *target, *dtype; /* dtype may be NULL */
    int64_t n, rows, cols, m, k, batch;
};
typedef int store_task_key_cb(void *ctx, const struct store_task_key *k);
/* The task keys of op, newest first, at most limit rows; cb as for
 * store_rec_query (a non-zero return stops the walk and is returned). */
int store_task_keys(struct store *st, const char *op, int limit, store_task_key_cb *cb, void *ctx);
/* The newest probe record of target (schema 6: a partial index), passed to
 * cb; STORE_ERR_NOTFOUND when the target has none. */
int store_probe_latest(struct store *st, const char *target, store_rec_cb *cb, void *ctx);
/* The id of the record in row rid; STORE_ERR_NOTFOUND if there is none. */
int store_rec_id(struct store *st, int64_t rid, uint8_t id[32]);

/* --- experience keys: outcomes and insights by task (schema 5) ----------- *
 * One row per outcome or insight record filed under a task: the parent
 * (decision id, hex), status ("insight" for insights), speedup and roofline
 * share when the body has them, and the first 600 bytes of its reason (or
 * an insight's text). Kept by a trigger on insert. */
struct store_exp_key {
    uint8_t id[32];       /* the outcome / insight record */
    const char *kind;     /* "outcome" | "insight" */
    const char *parent;   /* first parent, hex; may be NULL */
    const char *status;   /* may be NULL */
    int has_speedup, has_share;
    double speedup, share;
    const char *reason;   /* may be NULL */
};
typedef int store_exp_key_cb(void *ctx, const struct store_exp_key *k);
enum store_exp_query {
    STORE_EXP_BEST = 0,   /* passing outcomes, highest speedup first */
    STORE_EXP_FAILS,      /* failing outcomes, oldest first */
    STORE_EXP_INSIGHTS,   /* insights, newest first */
    STORE_EXP_RECENT,     /* every outcome, newest first */
};
/* Rows of one task, at most limit; cb as for store_rec_query. */
int store_exp_keys(struct store *st, const uint8_t task[32], enum store_exp_query q, int limit,
                   store_exp_key_cb *cb, void *ctx);

/* --- stats --------------------------------------------------------------- */
struct store_stats {
    int64_t n_records;
    struct { char kind[16]; int64_t n; } kinds[12];
    int n_kinds;
    int64_t n_origins;
    int64_t n_blobs;
    int64_t blob_bytes;
    int64_t file_bytes; /* page_count * page_size of the main file */
    int64_t queue_pending;
    int schema_version;
};
int store_stats_get(struct store *st, struct store_stats *s);

/* Cap the file at about max_bytes (SQLite max_page_count): writes past it
 * fail with STORE_ERR_FULL exactly as a full disk does. 0 = no cap. Used by
 * the `store.max_mb` setting and by the disk-full tests. */
int store_set_max_bytes(struct store *st, int64_t max_bytes);

/* Page cache for this handle, in bytes. The default (8 MiB) suits a board;
 * bulk writers (import, the bench) raise it so the id index's pages stay
 * in memory instead of being re-read from the file for every insert. */
int store_set_cache_bytes(struct store *st, int64_t bytes);
#define STORE_CACHE_DEFAULT (8ll << 20)
#define STORE_CACHE_BULK (32ll << 20)

/* Fold the WAL into the main file and leave WAL mode, so that the file
 * alone is the whole store (no -wal, no -shm once closed): `kope init`
 * builds a store under a temporary name, seals it, closes it and then gives
 * it its name, so a failed init leaves no store behind. The next
 * store_open turns WAL mode on again. */
int store_seal(struct store *st);

/* Run PRAGMA integrity_check; 0 when "ok", STORE_ERR_CORRUPT with the first
 * message in errmsg otherwise. */
int store_integrity_check(struct store *st);

#endif

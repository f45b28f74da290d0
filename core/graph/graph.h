/*
 * core/graph/graph.h - the experience graph: immutable, content-addressed,
 * hash-chained, signed records (docs/RECORDS.md).
 *
 * A record's canonical JSON (core/graph/canon.h) is
 *   {"body":{..},"kind":K,"origin":HEX,"parents":[HEX..],"prev":HEX|null,
 *    "seq":N,"target":T,"v":1}
 * and its id is the SHA-256 of those bytes. Each device (origin = SHA-256 of
 * its DER public key) numbers its records 1, 2, 3 ... with no gaps; record 1
 * is its identity (the public key), and each record's prev is the id of the
 * one before it. A checkpoint record carries an ECDSA P-256 signature over
 * its prev (the chain head it covers): one signature check authenticates the
 * whole run before it.
 *
 * Texts (kernel sources, compiler output) are blobs: stored once, keyed by
 * their SHA-256, and referenced from a body as the string "sha256:HEX".
 *
 * Ownership: struct graph borrows the store; graph_init cannot fail,
 * graph_free accepts an initialised struct. Bodies passed in are borrowed.
 */
#ifndef KOPE_GRAPH_H
#define KOPE_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"

#define GRAPH_FORMAT_VERSION 1
#define GRAPH_ID_HEX 65             /* 64 hex + NUL */
#ifndef GRAPH_CKPT_EVERY
#define GRAPH_CKPT_EVERY 1024       /* own records between automatic checkpoints */
#endif
#ifndef GRAPH_RECORD_MAX
#define GRAPH_RECORD_MAX (256 * 1024) /* canonical bytes of one record */
#endif
#ifndef GRAPH_BLOB_MAX
#define GRAPH_BLOB_MAX (8 * 1024 * 1024)
#endif

struct store;
struct net_key;
struct cJSON;

struct graph {
    struct store *st;
    struct net_key *key;  /* NULL until an identity is loaded */
    uint8_t origin[32];
    int64_t seq;          /* our chain head */
    uint8_t head[32];
    int64_t ckpt_seq;     /* highest seq of ours covered by a checkpoint */
    int in_tx;
    struct buf canon;     /* scratch for canonical forms */
    char err[256];        /* last error message (sticky until the next one) */
    char *cert_hex;       /* this device's fleet certificate (DER hex), owned; NULL until enrolled */
    unsigned long n_tree_loads; /* graph_tree_load calls (a task's whole tree from the store) */
};

void graph_init(struct graph *g, struct store *st);
void graph_free(struct graph *g);

/* Create this device's key pair (PEM, mode 0600 at key_path; refuses to
 * overwrite) and its identity record (seq 1, signed checkpoint seq 2).
 * Returns KOPE_ERR_EXISTS if the store already has an identity. */
int graph_identity_create(struct graph *g, const char *key_path, const char *target);
/* Load the identity of this store from key_path (checks the key matches the
 * store's device id). KOPE_ERR_NOINIT when the store has none. */
int graph_identity_load(struct graph *g, const char *key_path);

/* Group appends in one transaction (much faster; all-or-nothing). commit
 * adds a checkpoint first when GRAPH_CKPT_EVERY records are uncovered. */
int graph_begin(struct graph *g);
int graph_commit(struct graph *g);
void graph_rollback(struct graph *g);

/* Store a text blob; its reference "sha256:HEX" goes to ref (72 bytes).
 * Invalid UTF-8 bytes are replaced by '?' first (blobs are JSON strings on
 * the wire); a text over GRAPH_BLOB_MAX is KOPE_ERR_TOOBIG. */
#define GRAPH_BLOB_REF 72
int graph_blob_put(struct graph *g, const char *text, size_t len, char ref[GRAPH_BLOB_REF]);
/* The reference graph_blob_put would give text, without storing it. */
int graph_blob_ref(const char *text, size_t len, char ref[GRAPH_BLOB_REF]);
/* The text of a blob reference ("sha256:HEX" or bare HEX). *out heap, caller frees. */
int graph_blob_get(struct graph *g, const char *ref, char **out, size_t *len);

/* Append one of our records. parents: ids (binary); body borrowed (must be
 * an object). For decision/outcome/insight the body's "task" member (hex id)
 * files the record under that task. out_id may be NULL. */
int graph_append(struct graph *g, const char *kind, const char *target,
                 const uint8_t (*parents)[32], size_t n_parents,
                 const struct cJSON *body, uint8_t out_id[32]);

/* Convenience wrappers that fill the conventional body members. */
int graph_task_add(struct graph *g, const char *target, const struct cJSON *spec, uint8_t out_id[32]);
/* parent: the decision this one refines, or NULL for a first decision of the task. */
int graph_decision_add(struct graph *g, const uint8_t task[32], const uint8_t *parent,
                       const char *target, const struct cJSON *body, uint8_t out_id[32]);
int graph_outcome_add(struct graph *g, const uint8_t task[32], const uint8_t decision[32],
                      const char *target, const struct cJSON *body, uint8_t out_id[32]);
int graph_insight_add(struct graph *g, const uint8_t task[32], const uint8_t (*outcomes)[32],
                      size_t n, const char *target, const struct cJSON *body, uint8_t out_id[32]);
/* Sign our current head now (no-op if already covered). Once the device is
 * enrolled (graph_cert_set), the checkpoint body also carries its fleet
 * certificate, so records relayed by other peers verify without the origin. */
int graph_checkpoint(struct graph *g);
/* Enroll: keep this device's certificate (DER, hex; meta "device_cert") and
 * sign a checkpoint carrying it now, so the whole chain so far is covered
 * by a certificate-bearing checkpoint. The caller checked that the
 * certificate is for this device's key. */
int graph_cert_set(struct graph *g, const char *cert_hex);

/* --- revocation (docs/SYNC.md "Revocation") -------------------------------
 * A fleet CA revokes an origin's records after a seq with a record of kind
 * "revocation" in the chain of the device that wrote it; it travels like
 * any record. What the CA signs: SHA-256("kope-revocation-v1" || origin ||
 * after_seq as 8 bytes big-endian). */
void graph_revocation_digest(const uint8_t origin[32], int64_t after_seq, uint8_t out[32]);
/* Append our revocation record (cert_hex: the revoked device's certificate,
 * sig_hex: the CA's signature over the digest, both checked by the caller),
 * put it in force here, and sign a checkpoint over it, in one transaction. */
int graph_revocation_add(struct graph *g, const uint8_t origin[32], int64_t after_seq, const char *cert_hex,
                         const char *sig_hex, uint8_t out_id[32]);

/* A record read back: parsed canonical JSON plus columns. */
struct graph_rec {
    uint8_t id[32];
    char id_hex[GRAPH_ID_HEX];
    int64_t seq;
    char kind[16];
    char target[32];
    struct cJSON *json; /* the whole record (without id), owned */
};
void graph_rec_free(struct graph_rec *r);
/* Fetch by id, or by a unique hex prefix of at least 8 characters. */
int graph_get(struct graph *g, const char *id_or_prefix, struct graph_rec *out);
/* Find a task record by hex id/prefix or by the "name" in its spec. */
int graph_task_find(struct graph *g, const char *name_or_id, uint8_t task[32]);

/* The decision tree of a task, for printing. Nodes are decisions in
 * insertion order; each knows its parent decision (-1 = root) and its outcome. */
struct graph_node {
    struct graph_rec dec;
    int parent;           /* index into nodes, -1 for a root decision */
    int has_outcome;
    struct graph_rec out; /* valid when has_outcome */
};
struct graph_tree {
    struct graph_rec task;
    struct graph_node *nodes;
    size_t n;
};
int graph_tree_load(struct graph *g, const uint8_t task[32], struct graph_tree *t);
void graph_tree_free(struct graph_tree *t);
/* Append one decision (and its outcome, when out is not NULL) just recorded
 * to a loaded tree, as graph_tree_load would have placed it: two record
 * reads instead of the whole tree again. 0 or a code (t unchanged). */
int graph_tree_add(struct graph *g, struct graph_tree *t, const uint8_t dec[32], const uint8_t *out);
/* --- the best of a task: ONE definition, used by run, context, report,
 * export and the tuner's prior ---------------------------------------------
 * A task's best is its passing, fully verified outcome on the task's target,
 * from any run, proposer or origin, ranked by the target's claimed metric
 * (platform_ops.rank: larger is better; ties keep the earlier record).
 * "Fully verified": status "pass", recorded for the task's own target, and
 * not verified at a reduced shape (body "reduced_shape": true, set when the
 * harness could only check a smaller problem). */

/* 1 if out (an outcome record) counts for the best of a task on target. */
int graph_outcome_verified(const struct graph_rec *out, const char *target);
/* The target's metric of an outcome record (platform_rank over its body). */
double graph_outcome_rank(const struct graph_rec *out);
/* Index of t's best node by the definition above, or -1 when none passed. */
int graph_tree_best(const struct graph_tree *t);
/* Index of t's best node among the passes verified only at a reduced shape
 * (the task's own target, status "pass", body "reduced_shape": true): what
 * an emulated run could judge of a task too large to check whole. Never a
 * task's best; -1 when there is none. */
int graph_tree_best_reduced(const struct graph_tree *t);

/* A task's best, read from the store. found = 0 when nothing passed. */
struct graph_best {
    int found;
    struct graph_rec dec;   /* the decision (body: "source" blob ref, "params", "proposer") */
    struct graph_rec out;   /* its outcome (body: "speedup", "baseline", "ratios", ...) */
    double rank;
};
/* Load the task's tree and take its best. 0 (found or not), or a code
 * (KOPE_ERR_NOTFOUND: no such task). *b is owned: graph_best_free. */
int graph_task_best(struct graph *g, const uint8_t task[32], struct graph_best *b);
void graph_best_free(struct graph_best *b);
/* Print as an indented tree / as Graphviz DOT. */
void graph_tree_print(const struct graph_tree *t, FILE *f);
void graph_tree_dot(const struct graph_tree *t, FILE *f);

/* --- export / import: JSON Lines shards ---------------------------------- *
 * Line 1: {"format":"kope-graph","v":1}. Then per origin, in origin order:
 * the blobs its exported records reference ({"blob":HEX,"text":..}), then
 * its records in seq order (canonical JSON with "id" added), ending with a
 * checkpoint. since: JSON object {origin-hex: seq} (records with a larger
 * seq are exported), or NULL for everything. */
int graph_export(struct graph *g, const char *since_json, FILE *out, int64_t *n_records);

struct graph_import_stats {
    int64_t accepted;     /* new records stored */
    int64_t duplicates;   /* already present (a no-op) */
    int64_t rejected;     /* failed a check, or not covered by a checkpoint */
    int64_t blobs;
    char first_error[256];
};
/* Read a shard; every record is checked (hash, chain, identity, checkpoint
 * signature) and a run of records is committed only when a valid checkpoint
 * of its origin covers it, in one transaction per covered run. Returns 0 if
 * nothing was rejected, KOPE_ERR_* (the first failure) otherwise; stats say
 * what was kept. */
int graph_import(struct graph *g, FILE *in, struct graph_import_stats *stats);

/* Worst-case shard line: an 8 MiB blob escaped as \u00xx, plus its frame. */
#define GRAPH_LINE_MAX ((size_t)GRAPH_BLOB_MAX * 7 + 1024)

/* The fleet's say on a signed checkpoint. Called once a checkpoint's
 * signature has verified with its origin's identity key (pubkey, DER); cert
 * is the checkpoint body's "cert" member (DER certificate, hex) or NULL.
 * Return 0 to let this checkpoint commit the run it covers; anything else
 * leaves the run pending (a later trusted checkpoint may still cover it)
 * and, if none does, rejects it with KOPE_ERR_TRUST and the text put in why. */
typedef int graph_trust_fn(void *ctx, const uint8_t origin[32], const uint8_t *pubkey,
                           size_t pubkey_len, const char *cert_hex, char *why, size_t why_cap);
/* The fleet's say on a revocation record (docs/SYNC.md "Revocation"):
 * 0 when cert_hex (the revoked device's certificate, DER hex) chains to a
 * trusted CA, holds the key whose hash is origin, and sig_hex is that same
 * CA's signature over digest (graph_revocation_digest). Else the record
 * is refused with the text put in why. */
typedef int graph_revoke_fn(void *ctx, const uint8_t origin[32], const uint8_t digest[32], const char *cert_hex,
                            const char *sig_hex, char *why, size_t why_cap);
struct graph_import_opts {
    graph_trust_fn *trust; /* NULL: self-consistency only (a file of one's own) */
    void *trust_ctx;
    int64_t max_pending;   /* cap on records held uncommitted for one run; 0 = none */
    int64_t max_pending_bytes; /* cap on the buffered run's bytes; 0 = GRAPH_PENDING_MAX */
    graph_revoke_fn *revoke; /* NULL: revocations are stored, not enforced (ctx: trust_ctx) */
    int64_t cache_bytes;   /* the store's page cache while importing; 0 = STORE_CACHE_BULK */
};
/* A run is buffered (in memory up to GRAPH_PENDING_MEM, then in a temp
 * file) until its trusted checkpoint, then written in one transaction. */
#ifndef GRAPH_PENDING_MEM
#define GRAPH_PENDING_MEM (4u << 20)
#endif
#ifndef GRAPH_PENDING_MAX
#define GRAPH_PENDING_MAX (1ull << 30)
#endif
int graph_import_opts(struct graph *g, FILE *in, const struct graph_import_opts *opts,
                      struct graph_import_stats *stats);

/* The same checks, fed one line at a time (peer sync feeds frames). begin
 * makes *out (owned: end or abort frees it); stats is borrowed and filled as
 * lines pass. feed_line returns 0 (a refused line is counted, not fatal),
 * or a fatal code: the store cannot take more (STORE_ERR_FULL/BUSY/READONLY,
 * KOPE_ERR_NOMEM) or the first line is not a shard header; then abort.
 * end closes the last origin's run (uncovered records are rejected) and
 * returns 0 or the first failure; abort drops whatever is uncommitted (a
 * cut stream: committed runs stay, the next sync resumes from them). */
struct graph_importer;
int graph_importer_begin(struct graph *g, const struct graph_import_opts *opts,
                         struct graph_import_stats *stats, struct graph_importer **out);
int graph_importer_feed_line(struct graph_importer *im, const char *line, size_t len);
int graph_importer_end(struct graph_importer *im);
/* A line the caller refused unread (over a memory budget): counted as
 * rejected with why as the reason, like a line over the length cap. */
void graph_importer_skip_line(struct graph_importer *im, const char *why);
void graph_importer_abort(struct graph_importer *im);

/* Version vector {origin-hex: head seq} as JSON text (heap, caller frees). */
int graph_vector(struct graph *g, char **json);

#endif

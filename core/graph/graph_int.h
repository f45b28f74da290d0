/*
 * core/graph/graph_int.h - what the graph's own files share and nobody
 * else sees: graph.c (records and identity: appending, blobs, revocation,
 * reading back) defines these; graph_tree.c (the decision tree and best),
 * graph_export.c (shards out) and graph_import.c (shards in, every foreign
 * byte checked before use) use them. Not for core/ outside core/graph/.
 */
#ifndef KOPE_GRAPH_INT_H
#define KOPE_GRAPH_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "store/store.h"

#define MAX_PARENTS 64   /* parents one record may name */
#define MAX_BLOB_REFS 64 /* blobs one record may reference */

/* The retrieval keys the store indexes (task_keys, exp_keys), read off a
 * parsed body: core decides what a body means, the store only files it. */
struct rec_keys {
    struct store_task_idx t;
    struct store_exp_idx e;
    char parent[GRAPH_ID_HEX];
};

/* One of the record kinds this build knows. */
int graph_kind_valid(const char *k);
/* Formats g->err and returns rc (the one error path of every graph call). */
int graph_seterr(struct graph *g, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reads our own chain's head (seq, id) from the store into g. */
int graph_load_own_head(struct graph *g);
/* Collects the blob ids a body references (depth-capped walk). */
int graph_scan_blobs(const cJSON *v, uint8_t (*out)[32], size_t *n, int depth);
/* The store's index keys of a record off its parsed body. */
void graph_keys_fill(struct rec_keys *k, const char *kind, const cJSON *body,
                     const uint8_t *first_parent, struct store_rec *r);
/* The task a record belongs to (itself for a task record). */
int graph_task_of(const char *kind, const uint8_t id[32], const cJSON *body, uint8_t out[32]);
/* A stored row into a parsed graph_rec (owned by out). */
int graph_rec_fill(struct graph_rec *out, const struct store_rec *r);

#endif /* KOPE_GRAPH_INT_H */

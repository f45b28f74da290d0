/*
 * core/graph/graph_export.c - graph shards out: the records and blobs of chosen origins, serialized for a peer or a file.
 * Split from graph.c, whose shared helpers are in graph_int.h. See graph.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/graph/canon.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/graph/graph_int.h"
#include "core/secret.h"
#include "core/graph/spill.h"
#include "core/util.h"
#include "net/crypto.h"
#include "platform/platform.h"
#include "store/store.h"

/* ------------------------------------------------------------------ export */

struct origin_list {
    struct store_origin *v;
    size_t n, cap;
};

static int origin_collect(void *ctx, const struct store_origin *o)
{
    struct origin_list *l = ctx;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        void *p = realloc(l->v, ncap * sizeof *l->v);
        if (!p)
            return KOPE_ERR_NOMEM;
        l->v = p;
        l->cap = ncap;
    }
    l->v[l->n++] = *o;
    return 0;
}

/* Blobs already written for the current origin (open addressing on the
 * first 8 bytes of the hash; grows by doubling). Blobs are written once per
 * origin, before the first record of that origin that references them, so a
 * receiver never needs a blob from another origin's part of the shard. */
struct hash_set {
    uint8_t (*v)[32];
    size_t cap, n;
};

static int hash_set_add(struct hash_set *h, const uint8_t k[32])
{
    if (2 * (h->n + 1) > h->cap) {
        struct hash_set nh = {calloc(h->cap ? h->cap * 2 : 256, 32), h->cap ? h->cap * 2 : 256, 0};
        if (!nh.v)
            return KOPE_ERR_NOMEM;
        for (size_t i = 0; i < h->cap; i++) {
            static const uint8_t zero[32];
            if (memcmp(h->v[i], zero, 32) != 0)
                hash_set_add(&nh, h->v[i]);
        }
        free(h->v);
        *h = nh;
    }
    uint64_t x;
    memcpy(&x, k, 8);
    for (size_t i = x & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        static const uint8_t zero[32];
        if (memcmp(h->v[i], k, 32) == 0)
            return 0; /* already there */
        if (memcmp(h->v[i], zero, 32) == 0) {
            memcpy(h->v[i], k, 32);
            h->n++;
            return 1;
        }
    }
}

struct export_ctx {
    struct graph *g;
    FILE *out;
    int64_t limit;
    int64_t n;
    struct buf tmp;
    struct hash_set sent;
};

static int export_blob(struct export_ctx *c, const uint8_t hash[32])
{
    char hex[GRAPH_ID_HEX], *data = NULL;
    size_t len = 0;
    int rc = store_blob_get(c->g->st, hash, &data, &len);
    if (rc)
        return graph_seterr(c->g, rc, "a stored record references a missing blob");
    util_hex(hash, 32, hex);
    buf_reset(&c->tmp);
    if (!(rc = canon_write_string(data, &c->tmp)) &&
        fprintf(c->out, "{\"blob\":\"%s\",\"text\":%s}\n", hex, c->tmp.p) < 0)
        rc = KOPE_ERR_IO;
    free(data);
    return rc;
}

static int export_rec(void *ctx, const struct store_rec *r)
{
    struct export_ctx *c = ctx;
    char hex[GRAPH_ID_HEX];
    int rc;
    if (r->seq > c->limit)
        return 0; /* not covered by a checkpoint: never leaves the device */
    /* blob references are the strings "sha256:HEX" in the canonical text */
    for (const char *p = r->canon; (p = strstr(p, "\"sha256:")) != NULL; p += 8) {
        uint8_t h[32];
        if (strlen(p) < 73 || p[72] != '"')
            continue;
        memcpy(hex, p + 8, 64);
        hex[64] = '\0';
        if (util_unhex(hex, h, 32))
            continue;
        if ((rc = hash_set_add(&c->sent, h)) < 0)
            return rc;
        if (rc == 1 && (rc = export_blob(c, h)))
            return rc;
    }
    util_hex(r->id, 32, hex);
    if (fprintf(c->out, "{\"id\":\"%s\",%s\n", hex, r->canon + 1) < 0)
        return KOPE_ERR_IO;
    c->n++;
    return 0;
}

/* The highest seq of origin o that may leave this store: its newest
 * checkpoint, or for a revoked origin its newest certificate-bearing
 * checkpoint at or before the revocation's seq (a delta must end at a
 * checkpoint the receiver can trust, and nothing after the seq leaves). */
static int export_limit(struct graph *g, const struct store_origin *o, int64_t *limit)
{
    struct store_revoked v;
    int rc = store_revoked_get(g->st, o->origin, &v);
    *limit = o->ckpt_seq;
    if (rc == STORE_ERR_NOTFOUND)
        return 0;
    if (rc || v.after_seq >= o->ckpt_seq)
        return rc;
    return store_ckpt_at_most(g->st, o->origin, v.after_seq, 1, limit);
}

int graph_export(struct graph *g, const char *since_json, FILE *out, int64_t *n_records)
{
    int rc = 0;
    cJSON *since = NULL;
    struct origin_list l = {0};
    struct export_ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.out = out;
    buf_init(&c.tmp, GRAPH_BLOB_MAX * 7 + 64);
    if (since_json) {
        since = cJSON_Parse(since_json);
        if (!cJSON_IsObject(since)) {
            rc = graph_seterr(g, KOPE_ERR_USAGE, "--since wants a JSON object {\"origin-hex\": seq, ...}");
            goto out;
        }
    }
    /* a read-only store cannot sign: it exports what is already covered */
    if (g->key && !store_read_only(g->st) && (rc = graph_checkpoint(g)))
        goto out;
    if ((rc = store_origin_each(g->st, origin_collect, &l)))
        goto out;
    fprintf(out, "{\"format\":\"kope-graph\",\"v\":%d}\n", GRAPH_FORMAT_VERSION);
    for (size_t i = 0; i < l.n; i++) {
        char hex[GRAPH_ID_HEX];
        util_hex(l.v[i].origin, 32, hex);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(since, hex);
        int64_t from = cJSON_IsNumber(s) && s->valuedouble > 0 ? (int64_t)s->valuedouble : 0;
        if ((rc = export_limit(g, &l.v[i], &c.limit)))
            goto out;
        if (from >= c.limit)
            continue;
        free(c.sent.v);
        memset(&c.sent, 0, sizeof c.sent);
        if ((rc = store_rec_query(g->st, STORE_Q_ORIGIN, l.v[i].origin, from, export_rec, &c)))
            goto out;
    }
    if (fflush(out) != 0 || ferror(out))
        rc = graph_seterr(g, KOPE_ERR_IO, "write error on the export stream");
out:
    if (n_records)
        *n_records = c.n;
    free(c.sent.v);
    buf_free(&c.tmp);
    free(l.v);
    cJSON_Delete(since);
    return rc;
}

struct vector_ctx {
    struct graph *g;
    cJSON *v;
};

/* What we claim is what we would export: a peer checks our claims
 * against our delta (core/graph/sync.c). */
static int vector_cb(void *ctx, const struct store_origin *o)
{
    struct vector_ctx *c = ctx;
    char hex[GRAPH_ID_HEX];
    int64_t limit;
    int rc = export_limit(c->g, o, &limit);
    if (rc)
        return rc;
    util_hex(o->origin, 32, hex);
    return cJSON_AddNumberToObject(c->v, hex, (double)limit) ? 0 : KOPE_ERR_NOMEM;
}

int graph_vector(struct graph *g, char **json)
{
    cJSON *v = cJSON_CreateObject();
    if (!v)
        return KOPE_ERR_NOMEM;
    struct vector_ctx c = {g, v};
    int rc = store_origin_each(g->st, vector_cb, &c);
    *json = rc ? NULL : cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    return rc ? rc : *json ? 0 : KOPE_ERR_NOMEM;
}

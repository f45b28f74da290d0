/*
 * core/graph/graph_import.c - graph shards in: every foreign byte checked before use (signature, chain, size caps, kinds, blobs), buffered and written at checkpoints.
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

/* ------------------------------------------------------------------ import */

/* Per-origin verification state while reading a shard (graph_importer_*). */
struct graph_importer {
    struct graph *g;
    struct graph_import_stats *stats;
    struct graph_import_opts opts;
    struct buf canon;      /* scratch: a record's canonical form */
    struct buf scratch;    /* scratch: a buffered entry */
    char why[160];         /* why the last checkpoint of this origin was not trusted */
    int header_seen, header_bad;
    int have_origin;
    uint8_t origin[32];
    int poisoned;          /* a record of this origin failed: the rest is rejected */
    uint8_t pubkey[NET_PUBKEY_MAX];
    size_t pubkey_len;
    struct spill pend;     /* the run so far (blobs and verified records), not yet written */
    int64_t pending;       /* records in pend */
    int64_t stored_head;   /* the origin's head in the store (head, below, includes pend) */
    int first_rc;
    int64_t line_no;
    int head_known;        /* head/head_id below mirror the store */
    int64_t head;
    uint8_t head_id[32];
    int64_t revoked_after; /* this origin is revoked after this seq; -1: not */
    uint8_t revoked_by[32];
};

static int imp_fail(struct graph_importer *im, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int imp_fail(struct graph_importer *im, int rc, const char *fmt, ...)
{
    if (!im->first_rc) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(im->stats->first_error, sizeof im->stats->first_error, "line %lld: %s",
                 (long long)im->line_no, msg);
        im->first_rc = rc;
    }
    return rc;
}

/* Abandon the buffered run: its records were never covered by a checkpoint.
 * A buffer holding only blobs (sent ahead of their origin's records) is
 * kept unless force is set. */
static void imp_drop(struct graph_importer *im, int force)
{
    im->head_known = 0; /* the head goes back to the store's */
    if (im->pending || force)
        spill_reset(&im->pend);
    im->stats->rejected += im->pending;
    im->pending = 0;
}

/* ---- the buffered run: entries of struct spill, written at its checkpoint.
 * 'B' hash[32] text | 'R' id origin prev task [32 each], seq, flags, kind,
 * target, canon, blobs, then the retrieval keys. Strings carry their NUL so
 * they are used in place; a NULL string is length 0xffffffff. */
enum { PEND_PREV = 1, PEND_TASK = 2, PEND_TKEY = 4, PEND_EKEY = 8, PEND_SPEEDUP = 16, PEND_SHARE = 32,
       PEND_REVOKE = 64 };

static void enc_u32(struct buf *b, uint32_t v)
{
    uint8_t h[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    buf_add(b, h, 4);
}

static void enc_str(struct buf *b, const char *t)
{
    if (!t) {
        enc_u32(b, 0xffffffffu);
        return;
    }
    size_t n = strlen(t) + 1;
    enc_u32(b, (uint32_t)n);
    buf_add(b, t, n);
}

struct dec {
    const uint8_t *p;
    size_t n, off;
    int bad;
};

static const void *dec_take(struct dec *d, size_t n)
{
    if (d->bad || n > d->n - d->off) {
        d->bad = 1;
        return NULL;
    }
    d->off += n;
    return d->p + d->off - n;
}

static uint32_t dec_u32(struct dec *d)
{
    const uint8_t *h = dec_take(d, 4);
    return h ? (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3] : 0;
}

static void dec_copy(struct dec *d, void *out, size_t n)
{
    const void *p = dec_take(d, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

static const char *dec_str(struct dec *d)
{
    uint32_t n = dec_u32(d);
    if (n == 0xffffffffu)
        return NULL;
    const char *t = dec_take(d, n);
    if (t && (n == 0 || t[n - 1] != '\0'))
        d->bad = 1;
    return d->bad ? NULL : t;
}

/* Buffer a verified record (r, keys) of the run; rv_origin: a verified
 * revocation of that origin after rv_after, applied when the run lands. */
static int pend_record(struct graph_importer *im, struct buf *b, const struct store_rec *r,
                       const uint8_t *rv_origin, int64_t rv_after)
{
    uint8_t flags = (uint8_t)((r->has_prev ? PEND_PREV : 0) | (r->has_task ? PEND_TASK : 0) |
                              (rv_origin ? PEND_REVOKE : 0) |
                              (r->task_key ? PEND_TKEY : 0) | (r->exp_key ? PEND_EKEY : 0) |
                              (r->exp_key && r->exp_key->has_speedup ? PEND_SPEEDUP : 0) |
                              (r->exp_key && r->exp_key->has_share ? PEND_SHARE : 0));
    buf_reset(b);
    buf_addc(b, 'R');
    buf_add(b, r->id, 32);
    buf_add(b, r->origin, 32);
    buf_add(b, r->prev, 32);
    buf_add(b, r->task, 32);
    buf_add(b, &r->seq, sizeof r->seq);
    buf_addc(b, (char)flags);
    enc_str(b, r->kind);
    enc_str(b, r->target);
    enc_u32(b, (uint32_t)r->canon_len);
    buf_add(b, r->canon, r->canon_len);
    enc_u32(b, (uint32_t)r->n_blobs);
    buf_add(b, r->blobs, r->n_blobs * 32);
    if (r->task_key) {
        const struct store_task_idx *t = r->task_key;
        double v[6] = {t->n, t->rows, t->cols, t->m, t->k, t->batch};
        enc_str(b, t->op);
        enc_str(b, t->dtype);
        buf_add(b, v, sizeof v);
    }
    if (r->exp_key) {
        const struct store_exp_idx *e = r->exp_key;
        double v[2] = {e->speedup, e->share};
        enc_str(b, e->parent);
        enc_str(b, e->status);
        enc_str(b, e->reason);
        buf_add(b, v, sizeof v);
    }
    if (rv_origin) {
        buf_add(b, rv_origin, 32);
        buf_add(b, &rv_after, sizeof rv_after);
    }
    if (buf_err(b))
        return imp_fail(im, buf_err(b), "a record too large to buffer");
    int rc = spill_add(&im->pend, b->p, b->len);
    if (rc)
        return imp_fail(im, rc, rc == KOPE_ERR_TOOBIG ? "a run over the buffer's cap without a trusted checkpoint"
                                                     : "cannot buffer the run (temporary file)");
    return 0;
}

struct pend_write {
    struct graph_importer *im;
    int64_t dups;
};

static int pend_write_one(void *ctx, const uint8_t *p, size_t n)
{
    struct pend_write *w = ctx;
    struct store *st = w->im->g->st;
    struct dec d = {p, n, 1, 0};
    if (n && p[0] == 'B') {
        uint8_t h[32];
        dec_copy(&d, h, 32);
        return d.bad ? KOPE_ERR_INTERNAL : store_blob_put(st, h, p + d.off, n - d.off);
    }
    struct store_rec r;
    struct store_task_idx t;
    struct store_exp_idx e;
    uint8_t (*blobs)[32] = NULL;
    memset(&r, 0, sizeof r);
    memset(&t, 0, sizeof t);
    memset(&e, 0, sizeof e);
    dec_copy(&d, r.id, 32);
    dec_copy(&d, r.origin, 32);
    dec_copy(&d, r.prev, 32);
    dec_copy(&d, r.task, 32);
    dec_copy(&d, &r.seq, sizeof r.seq);
    uint8_t flags = 0;
    dec_copy(&d, &flags, 1);
    r.has_prev = !!(flags & PEND_PREV);
    r.has_task = !!(flags & PEND_TASK);
    r.kind = dec_str(&d);
    r.target = dec_str(&d);
    r.canon_len = dec_u32(&d);
    r.canon = dec_take(&d, r.canon_len);
    r.n_blobs = dec_u32(&d);
    const uint8_t *bl = dec_take(&d, r.n_blobs * 32);
    if (bl && r.n_blobs && !(blobs = malloc(r.n_blobs * 32)))
        return KOPE_ERR_NOMEM;
    if (blobs)
        memcpy(blobs, bl, r.n_blobs * 32); /* aligned for the store */
    r.blobs = (const uint8_t(*)[32])blobs;
    if (flags & PEND_TKEY) {
        double v[6];
        t.op = dec_str(&d);
        t.dtype = dec_str(&d);
        dec_copy(&d, v, sizeof v);
        t.n = v[0], t.rows = v[1], t.cols = v[2], t.m = v[3], t.k = v[4], t.batch = v[5];
        r.task_key = &t;
    }
    if (flags & PEND_EKEY) {
        double v[2];
        e.parent = dec_str(&d);
        e.status = dec_str(&d);
        e.reason = dec_str(&d);
        dec_copy(&d, v, sizeof v);
        e.has_speedup = !!(flags & PEND_SPEEDUP);
        e.has_share = !!(flags & PEND_SHARE);
        e.speedup = v[0];
        e.share = v[1];
        r.exp_key = &e;
    }
    uint8_t rv_origin[32];
    int64_t rv_after = 0;
    if (flags & PEND_REVOKE) {
        dec_copy(&d, rv_origin, 32);
        dec_copy(&d, &rv_after, sizeof rv_after);
    }
    int rc = d.bad || !r.kind || !r.target ? KOPE_ERR_INTERNAL : store_rec_put(st, &r);
    free(blobs);
    /* in force from the same transaction as the record (a duplicate too:
     * another session stored the record, the lowest seq wins anyway) */
    if (rc >= 0 && (flags & PEND_REVOKE)) {
        int rr = store_revoke_put(st, rv_origin, rv_after, r.id);
        if (rr)
            return rr;
    }
    if (rc == 1) { /* another session stored it meanwhile: merging is a union */
        w->dups++;
        rc = 0;
    }
    return rc;
}

/* The run is covered by a trusted checkpoint of origin at seq: write it in
 * one short transaction (the only time an import holds the write lock). */
static int imp_commit(struct graph_importer *im, const uint8_t origin[32], int64_t seq)
{
    struct store *st = im->g->st;
    struct pend_write w = {im, 0};
    int rc = store_begin(st);
    if (rc)
        return imp_fail(im, rc, "%s", store_errmsg(st));
    if ((rc = spill_each(&im->pend, pend_write_one, &w)) || (rc = store_origin_set_ckpt(st, origin, seq)) ||
        (rc = store_commit(st))) {
        imp_fail(im, rc == STORE_ERR_NOTFOUND ? KOPE_ERR_BLOB : rc, "cannot store the run: %s",
                 rc == STORE_ERR_NOTFOUND ? "a record references a blob that was not sent" : store_errmsg(st));
        store_rollback(st);
        return rc;
    }
    spill_reset(&im->pend);
    im->stats->accepted += im->pending - w.dups;
    im->stats->duplicates += w.dups;
    im->pending = 0;
    im->stored_head = seq;
    return 0;
}

static void imp_end_origin(struct graph_importer *im)
{
    if (im->pending && im->why[0])
        imp_fail(im, KOPE_ERR_TRUST, "%lld record(s) not covered by a checkpoint from a trusted certificate: %s",
                 (long long)im->pending, im->why);
    else if (im->pending)
        imp_fail(im, KOPE_ERR_UNCOVERED, "%lld record(s) at the end of an origin's run are not covered by a checkpoint",
                 (long long)im->pending);
    im->why[0] = '\0';
    imp_drop(im, 0);
    im->have_origin = 0;
    im->poisoned = 0;
    im->pubkey_len = 0;
    im->head_known = 0;
}

static int hex32(const cJSON *v, uint8_t out[32])
{
    return cJSON_IsString(v) && v->valuestring && strlen(v->valuestring) == 64 &&
                   util_unhex(v->valuestring, out, 32) == 0
               ? 0 : KOPE_ERR_PARSE;
}

static int exists_cb(void *ctx, const struct store_rec *r)
{
    (void)ctx;
    (void)r;
    return 1;
}

/* Public key of an origin from its stored identity record (seq 1). */
static int pubkey_cb(void *ctx, const struct store_rec *r)
{
    struct graph_importer *im = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "body"), "pubkey");
    int rc = KOPE_ERR_PARSE;
    if (cJSON_IsString(pk) && strlen(pk->valuestring) % 2 == 0 &&
        strlen(pk->valuestring) / 2 <= sizeof im->pubkey) {
        im->pubkey_len = strlen(pk->valuestring) / 2;
        rc = util_unhex(pk->valuestring, im->pubkey, im->pubkey_len);
    }
    cJSON_Delete(j);
    return rc ? rc : 1; /* 1: stop after the first row */
}

static int imp_blob(struct graph_importer *im, cJSON *line)
{
    uint8_t want[32], got[32];
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(line, "text");
    if (hex32(cJSON_GetObjectItemCaseSensitive(line, "blob"), want) || !cJSON_IsString(text))
        return imp_fail(im, KOPE_ERR_PARSE, "malformed blob line");
    size_t len = strlen(text->valuestring);
    net_sha256(text->valuestring, len, got);
    if (memcmp(want, got, 32) != 0)
        return imp_fail(im, KOPE_ERR_BLOB, "blob content does not match its hash");
    /* A blob joins the buffered run: it is kept if the run that references
     * it is, and dropped with it otherwise. */
    struct buf *b = &im->scratch;
    buf_reset(b);
    buf_addc(b, 'B');
    buf_add(b, want, 32);
    buf_add(b, text->valuestring, len);
    int rc = buf_err(b) ? buf_err(b) : spill_add(&im->pend, b->p, b->len);
    if (rc)
        return imp_fail(im, rc, rc == KOPE_ERR_TOOBIG ? "a run over the buffer's cap without a trusted checkpoint"
                                                     : "cannot buffer the run (temporary file)");
    im->stats->blobs++;
    return 0;
}

/* A revocation record's body: {"after_seq":N,"cert":HEX,"origin":HEX,
 * "sig":HEX}, the fleet CA's signature over graph_revocation_digest. With
 * a fleet policy it must verify (opts.revoke) or the record is refused;
 * then *after >= 0 and it takes effect when its run lands. Without one (a
 * store that trusts no fleet) it is kept as data and enforced nowhere. */
static int imp_revocation(struct graph_importer *im, const cJSON *body, uint8_t origin[32], int64_t *after)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(body, "after_seq");
    const cJSON *cert = cJSON_GetObjectItemCaseSensitive(body, "cert");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(body, "sig");
    uint8_t digest[32];
    char why[160] = "";
    *after = -1;
    if (cJSON_GetArraySize(body) != 4 || !cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 9e15 ||
        n->valuedouble != (double)(int64_t)n->valuedouble || !cJSON_IsString(cert) || !cJSON_IsString(sig) ||
        hex32(cJSON_GetObjectItemCaseSensitive(body, "origin"), origin))
        return imp_fail(im, KOPE_ERR_PARSE, "revocation body fields missing or invalid");
    if (!im->opts.revoke)
        return 0;
    graph_revocation_digest(origin, (int64_t)n->valuedouble, digest);
    if (im->opts.revoke(im->opts.trust_ctx, origin, digest, cert->valuestring, sig->valuestring, why, sizeof why))
        return imp_fail(im, KOPE_ERR_TRUST, "revocation refused: %s", why[0] ? why : "not signed by the origin's fleet CA");
    *after = (int64_t)n->valuedouble;
    return 0;
}

static int imp_record(struct graph_importer *im, cJSON *rec)
{
    int rc;
    uint8_t id[32], origin[32], prev[32], calc[32], parents[MAX_PARENTS][32], blobs[MAX_BLOB_REFS][32];
    size_t n_parents = 0, n_blobs = 0;
    int untrusted = 0;
    struct buf *canon = &im->canon;
    struct store_rec r;
    memset(&r, 0, sizeof r);

    /* 1. shape */
    cJSON *idv = cJSON_DetachItemFromObjectCaseSensitive(rec, "id");
    rc = hex32(idv, id);
    cJSON_Delete(idv);
    if (rc)
        return imp_fail(im, KOPE_ERR_PARSE, "record without a valid id");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(rec, "kind");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(rec, "target");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(rec, "seq");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(rec, "prev");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(rec, "parents");
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(rec, "body");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(rec, "v");
    if (cJSON_GetArraySize(rec) != 8 || !cJSON_IsString(kind) || !graph_kind_valid(kind->valuestring) ||
        !cJSON_IsString(target) || strlen(target->valuestring) == 0 || strlen(target->valuestring) >= 32 ||
        !cJSON_IsNumber(seq) || seq->valuedouble < 1 || seq->valuedouble > 9e15 ||
        seq->valuedouble != (double)(int64_t)seq->valuedouble || !cJSON_IsArray(ps) ||
        !cJSON_IsObject(body) || !cJSON_IsNumber(ver) || ver->valueint != GRAPH_FORMAT_VERSION ||
        hex32(cJSON_GetObjectItemCaseSensitive(rec, "origin"), origin))
        return imp_fail(im, KOPE_ERR_PARSE, "record fields missing or invalid");
    const cJSON *p;
    cJSON_ArrayForEach(p, ps)
    {
        if (n_parents >= MAX_PARENTS || hex32(p, parents[n_parents]))
            return imp_fail(im, KOPE_ERR_PARSE, "bad parents list");
        n_parents++;
    }
    int64_t s = (int64_t)seq->valuedouble;
    int has_prev = !cJSON_IsNull(pv);
    if ((s == 1) == has_prev || (has_prev && hex32(pv, prev)))
        return imp_fail(im, KOPE_ERR_CHAIN, "prev must be null exactly at seq 1");

    /* 2. content address */
    buf_reset(canon);
    if ((rc = canon_write(rec, canon)))
        return imp_fail(im, rc, "record has no canonical form");
    net_sha256(canon->p, canon->len, calc);
    if (memcmp(calc, id, 32) != 0)
        return imp_fail(im, KOPE_ERR_HASH, "record id is not the hash of its content (tampered)");

    /* 3. which origin run are we in */
    if (!im->have_origin || memcmp(im->origin, origin, 32) != 0) {
        imp_end_origin(im);
        memcpy(im->origin, origin, 32);
        im->have_origin = 1;
        uint8_t one[32];
        memcpy(one, origin, 32);
        int prc = store_rec_query(im->g->st, STORE_Q_ORIGIN, one, 0, pubkey_cb, im);
        if (prc < 0 && prc != STORE_ERR_NOTFOUND)
            return imp_fail(im, prc, "%s", store_errmsg(im->g->st));
        struct store_revoked v;
        prc = store_revoked_get(im->g->st, origin, &v);
        if (prc && prc != STORE_ERR_NOTFOUND)
            return imp_fail(im, prc, "%s", store_errmsg(im->g->st));
        im->revoked_after = prc ? -1 : v.after_seq;
        memcpy(im->revoked_by, v.id, 32);
    }
    if (im->poisoned) {
        im->stats->rejected++;
        return 0;
    }

    /* 4. chain: seq must follow the stored (or pending) head. The head is
     * read from the store once per run and then tracked here. */
    if (!im->head_known) {
        struct store_origin o;
        rc = store_origin_get(im->g->st, origin, &o);
        if (rc == 0) {
            im->head = o.head_seq;
            memcpy(im->head_id, o.head_id, 32);
        } else if (rc == STORE_ERR_NOTFOUND) {
            im->head = 0;
        } else {
            return imp_fail(im, rc, "%s", store_errmsg(im->g->st));
        }
        im->head_known = 1;
        im->stored_head = im->head;
    }
    int64_t head = im->head;
    const uint8_t *head_id = im->head_id;
    const char *k = kind->valuestring;
    rc = 0;
    if (s <= im->stored_head) {
        /* Already have this seq: a duplicate if this very id is stored (the
         * id hashes origin and seq too), else a fork. A read: no lock. */
        int q = store_rec_query(im->g->st, STORE_Q_ID, id, 0, exists_cb, NULL);
        if (q == 1) {
            im->stats->duplicates++;
            return 0;
        }
        if (q != STORE_ERR_NOTFOUND && q != 0)
            return imp_fail(im, q, "%s", store_errmsg(im->g->st));
        rc = imp_fail(im, KOPE_ERR_CHAIN, "fork: a different record already holds this origin's seq");
    } else if (im->revoked_after >= 0 && s > im->revoked_after) {
        char ohex[GRAPH_ID_HEX], rhex[GRAPH_ID_HEX];
        util_hex(origin, 32, ohex);
        util_hex(im->revoked_by, 32, rhex);
        rc = imp_fail(im, KOPE_ERR_REVOKED,
                      "origin %.16s is revoked after seq %lld by its fleet CA (revocation %.16s): seq %lld and "
                      "later refused", ohex, (long long)im->revoked_after, rhex, (long long)s);
    } else if (s <= head) {
        rc = imp_fail(im, KOPE_ERR_CHAIN, "a seq repeated inside one uncommitted run");
    } else if (s != head + 1) {
        rc = imp_fail(im, KOPE_ERR_CHAIN, "gap in the chain (records missing or out of order)");
    } else if (s > 1 && memcmp(prev, head_id, 32) != 0) {
        rc = imp_fail(im, KOPE_ERR_CHAIN, "prev does not match the previous record of its origin");
    } else if ((s == 1) != (strcmp(k, "identity") == 0)) {
        rc = imp_fail(im, KOPE_ERR_CHAIN, "an origin's first record, and only it, is its identity");
    } else if (s == 1) {
        /* 5. identity: the origin is the hash of the key it carries */
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(body, "pubkey");
        size_t hl = cJSON_IsString(pk) ? strlen(pk->valuestring) : 0;
        uint8_t h[32];
        if (!hl || hl % 2 || hl / 2 > sizeof im->pubkey ||
            util_unhex(pk->valuestring, im->pubkey, hl / 2)) {
            rc = imp_fail(im, KOPE_ERR_PARSE, "identity record without a public key");
        } else {
            im->pubkey_len = hl / 2;
            net_sha256(im->pubkey, im->pubkey_len, h);
            if (memcmp(h, origin, 32) != 0)
                rc = imp_fail(im, KOPE_ERR_SIG, "origin is not the hash of the identity's key");
        }
    } else if (strcmp(k, "checkpoint") == 0) {
        /* 6. the signature that authenticates the run */
        const cJSON *sig = cJSON_GetObjectItemCaseSensitive(body, "sig");
        uint8_t sb[NET_SIG_MAX];
        size_t sl = cJSON_IsString(sig) ? strlen(sig->valuestring) : 0;
        if (!im->pubkey_len)
            rc = imp_fail(im, KOPE_ERR_SIG, "checkpoint of an origin whose identity is unknown");
        else if (!sl || sl % 2 || sl / 2 > sizeof sb || util_unhex(sig->valuestring, sb, sl / 2))
            rc = imp_fail(im, KOPE_ERR_PARSE, "checkpoint without a signature");
        else if (net_pubkey_verify(im->pubkey, im->pubkey_len, prev, sb, sl / 2) != 0)
            rc = imp_fail(im, KOPE_ERR_SIG, "checkpoint signature does not verify (forged)");
        else if (im->opts.trust) {
            /* 6b. the fleet: only a checkpoint whose certificate (issued by
             * a trusted CA, for this very key) the policy accepts commits
             * the run. An untrusted one is kept pending, not fatal: an
             * origin's pre-enrollment checkpoints carry no certificate, and
             * a later trusted checkpoint covers the whole run. */
            const cJSON *cert = cJSON_GetObjectItemCaseSensitive(body, "cert");
            im->why[0] = '\0';
            if (im->opts.trust(im->opts.trust_ctx, origin, im->pubkey, im->pubkey_len,
                               cJSON_IsString(cert) ? cert->valuestring : NULL, im->why, sizeof im->why) != 0) {
                if (!im->why[0])
                    snprintf(im->why, sizeof im->why, "certificate refused");
                untrusted = 1;
            }
        }
    }
    uint8_t rv_origin[32];
    int64_t rv_after = -1;
    if (!rc && strcmp(k, "revocation") == 0)
        rc = imp_revocation(im, body, rv_origin, &rv_after);
    if (!rc && (rc = graph_scan_blobs(body, blobs, &n_blobs, 0)))
        imp_fail(im, rc, "too many blob references");
    if (rc) {
        imp_drop(im, 0);
        im->poisoned = 1;
        im->stats->rejected++;
        return 0; /* keep reading: other origins may be fine */
    }

    /* 7. buffer the record with its run; write the run at a trusted
     * checkpoint (imp_commit), never while waiting for the rest of it */
    memcpy(r.id, id, 32);
    memcpy(r.origin, origin, 32);
    r.seq = s;
    r.has_prev = has_prev;
    memcpy(r.prev, prev, 32);
    r.has_task = graph_task_of(k, id, body, r.task);
    r.kind = k;
    r.target = target->valuestring;
    r.canon = canon->p;
    r.canon_len = canon->len;
    r.blobs = (const uint8_t(*)[32])blobs;
    r.n_blobs = n_blobs;
    struct rec_keys keys;
    graph_keys_fill(&keys, k, body, n_parents ? parents[0] : NULL, &r);
    if ((rc = pend_record(im, &im->scratch, &r, rv_after >= 0 ? rv_origin : NULL, rv_after))) {
        imp_drop(im, 0);
        im->poisoned = 1;
        im->stats->rejected++;
        return rc == KOPE_ERR_NOMEM ? rc : 0;
    }
    im->pending++;
    im->head = s;
    memcpy(im->head_id, id, 32);
    if (im->opts.max_pending > 0 && im->pending > im->opts.max_pending) {
        imp_fail(im, KOPE_ERR_TOOBIG, "more than %lld records without a trusted checkpoint",
                 (long long)im->opts.max_pending);
        imp_drop(im, 0);
        im->poisoned = 1;
        return 0;
    }
    if (strcmp(k, "checkpoint") == 0 && !untrusted) {
        im->why[0] = '\0';
        if ((rc = imp_commit(im, origin, s))) {
            imp_drop(im, 1);
            im->poisoned = 1;
            return rc == STORE_ERR_FULL || rc == STORE_ERR_BUSY || rc == STORE_ERR_READONLY ? rc : 0;
        }
    }
    return 0;
}

int graph_importer_begin(struct graph *g, const struct graph_import_opts *opts,
                         struct graph_import_stats *stats, struct graph_importer **out)
{
    struct graph_importer *im;
    *out = NULL;
    memset(stats, 0, sizeof *stats);
    if (g->in_tx)
        return KOPE_ERR_INTERNAL;
    if (!(im = calloc(1, sizeof *im)))
        return KOPE_ERR_NOMEM;
    im->g = g;
    im->stats = stats;
    if (opts)
        im->opts = *opts;
    buf_init(&im->canon, GRAPH_RECORD_MAX);
    buf_init(&im->scratch, GRAPH_LINE_MAX + 1024);
    spill_init(&im->pend, GRAPH_PENDING_MEM, im->opts.max_pending_bytes > 0 ? (uint64_t)im->opts.max_pending_bytes
                                                                           : GRAPH_PENDING_MAX);
    store_set_cache_bytes(g->st, im->opts.cache_bytes > 0 ? im->opts.cache_bytes : STORE_CACHE_BULK); /* store.h */
    *out = im;
    return 0;
}

/* A line the reader could not take whole (over the cap). */
static void imp_line_toobig(struct graph_importer *im)
{
    im->line_no++;
    imp_fail(im, KOPE_ERR_TOOBIG, "line longer than the limit");
    im->stats->rejected++;
}

void graph_importer_skip_line(struct graph_importer *im, const char *why)
{
    im->line_no++;
    imp_fail(im, KOPE_ERR_TOOBIG, "%s", why);
    im->stats->rejected++;
}

int graph_importer_feed_line(struct graph_importer *im, const char *line, size_t len)
{
    im->line_no++;
    if (im->header_bad)
        return im->first_rc;
    if (len > GRAPH_LINE_MAX) {
        imp_fail(im, KOPE_ERR_TOOBIG, "line longer than the limit");
        im->stats->rejected++;
        return 0;
    }
    if (len == 0)
        return 0;
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        imp_fail(im, KOPE_ERR_PARSE, "not a JSON object");
        im->stats->rejected++;
        return 0;
    }
    if (!im->header_seen) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "format");
        int ok = cJSON_IsString(f) && strcmp(f->valuestring, "kope-graph") == 0;
        cJSON_Delete(j);
        im->header_seen = 1;
        if (!ok) {
            im->header_bad = 1;
            return imp_fail(im, KOPE_ERR_PARSE, "not a kope graph shard (first line must be {\"format\":\"kope-graph\",...})");
        }
        return 0;
    }
    /* a peer's line that holds a secret of ours is never stored */
    const char *what = secret_find(line, len);
    if (what) {
        cJSON_Delete(j);
        imp_fail(im, KOPE_ERR_SECRET, "a line holds %s: refused", what);
        im->stats->rejected++;
        return 0;
    }
    int rc = cJSON_GetObjectItemCaseSensitive(j, "blob") ? imp_blob(im, j) : imp_record(im, j);
    cJSON_Delete(j);
    if (rc == STORE_ERR_FULL || rc == STORE_ERR_BUSY || rc == STORE_ERR_READONLY || rc == KOPE_ERR_NOMEM)
        return rc; /* the store cannot take more: stop, keep what was committed */
    if (rc < 0)
        im->stats->rejected++; /* a line refused before it could join a run */
    return 0;
}

static void importer_free(struct graph_importer *im)
{
    struct graph *g = im->g;
    imp_drop(im, 1);
    store_set_cache_bytes(g->st, STORE_CACHE_DEFAULT);
    if (g->key)
        graph_load_own_head(g);
    buf_free(&im->canon);
    buf_free(&im->scratch);
    spill_free(&im->pend);
    free(im);
}

int graph_importer_end(struct graph_importer *im)
{
    if (!im)
        return 0;
    imp_end_origin(im);
    int rc = im->first_rc;
    importer_free(im);
    return rc;
}

void graph_importer_abort(struct graph_importer *im)
{
    if (!im)
        return;
    if (im->pending)
        imp_fail(im, KOPE_ERR_UNCOVERED, "stream ended mid-run: %lld uncovered record(s) dropped",
                 (long long)im->pending);
    importer_free(im);
}

/* Read one line of at most max bytes into b; longer lines are skipped whole
 * and reported as KOPE_ERR_TOOBIG. Returns 1 at EOF. */
static int read_line(FILE *in, struct buf *b)
{
    char chunk[65536];
    buf_reset(b);
    int any = 0, toobig = 0;
    while (fgets(chunk, sizeof chunk, in)) {
        any = 1;
        size_t n = strlen(chunk);
        int eol = n && chunk[n - 1] == '\n';
        if (!toobig && buf_add(b, chunk, n - (size_t)eol))
            toobig = 1;
        if (eol)
            break;
    }
    if (!any)
        return 1;
    return toobig ? KOPE_ERR_TOOBIG : 0;
}

int graph_import_opts(struct graph *g, FILE *in, const struct graph_import_opts *opts,
                      struct graph_import_stats *stats)
{
    int rc;
    struct graph_importer *im = NULL;
    struct buf line;
    buf_init(&line, GRAPH_LINE_MAX);
    if ((rc = graph_importer_begin(g, opts, stats, &im)))
        goto out;
    for (;;) {
        int lr = read_line(in, &line);
        if (lr == 1)
            break;
        if (lr) {
            imp_line_toobig(im);
            continue;
        }
        if ((rc = graph_importer_feed_line(im, line.p, line.len)))
            break;
    }
    if (!rc && ferror(in))
        imp_fail(im, KOPE_ERR_IO, "read error");
    if (rc) {
        graph_importer_abort(im);
    } else {
        rc = graph_importer_end(im);
    }
    im = NULL;
out:
    buf_free(&line);
    return rc;
}

int graph_import(struct graph *g, FILE *in, struct graph_import_stats *stats)
{
    return graph_import_opts(g, in, NULL, stats);
}

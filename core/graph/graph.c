/*
 * core/graph/graph.c - the experience graph over the store. See graph.h.
 *
 * Sections: identity, appending our records, reading back, the decision
 * tree, export, import (where every foreign byte is checked before use).
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
#include "core/secret.h"
#include "core/graph/spill.h"
#include "core/util.h"
#include "net/crypto.h"
#include "platform/platform.h"
#include "store/store.h"

#define MAX_PARENTS 64
#define MAX_BLOB_REFS 64
#define KEY_PEM_MAX 1024

static const char *const kinds[] = {"identity", "task", "decision", "outcome",
                                    "insight", "probe", "checkpoint", "revocation"};

static int kind_valid(const char *k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(k, kinds[i]) == 0)
            return 1;
    return 0;
}

static int seterr(struct graph *g, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int seterr(struct graph *g, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
    return rc;
}

void graph_init(struct graph *g, struct store *st)
{
    memset(g, 0, sizeof *g);
    g->st = st;
    buf_init(&g->canon, GRAPH_RECORD_MAX);
}

void graph_free(struct graph *g)
{
    if (!g)
        return;
    net_key_free(g->key);
    buf_free(&g->canon);
    free(g->cert_hex);
    g->cert_hex = NULL;
    g->key = NULL;
}

/* ------------------------------------------------------------------ identity */

static int load_own_head(struct graph *g)
{
    struct store_origin o;
    int rc = store_origin_get(g->st, g->origin, &o);
    if (rc == STORE_ERR_NOTFOUND) {
        g->seq = 0;
        g->ckpt_seq = 0;
        memset(g->head, 0, 32);
        return 0;
    }
    if (rc)
        return rc;
    g->seq = o.head_seq;
    g->ckpt_seq = o.ckpt_seq;
    memcpy(g->head, o.head_id, 32);
    return 0;
}

int graph_identity_create(struct graph *g, const char *key_path, const char *target)
{
    int rc = KOPE_ERR_INTERNAL, fd = -1;
    char *existing = NULL, pem[KEY_PEM_MAX];
    uint8_t der[NET_PUBKEY_MAX];
    size_t der_len = 0;
    char hex[2 * NET_PUBKEY_MAX + 1], ohex[GRAPH_ID_HEX];
    cJSON *body = NULL;

    if (store_meta_get(g->st, "device_origin", &existing) == 0) {
        rc = seterr(g, KOPE_ERR_EXISTS, "this store already has a device identity (%s)", existing);
        goto out;
    }
    if ((rc = net_key_generate(&g->key)))
        goto out;
    if ((rc = net_key_write_pem(g->key, pem, sizeof pem)))
        goto out;
    /* the last line (core/secret.h): no copy of it is ever stored or sent */
    if ((rc = secret_add_key_pem(pem, strlen(pem), "this device's private key")))
        goto out;
    fd = open(key_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        rc = seterr(g, errno == EEXIST ? KOPE_ERR_EXISTS : KOPE_ERR_IO,
                    "cannot create the key file %s (it must not exist yet)", key_path);
        goto out;
    }
    size_t n = strlen(pem);
    if (write(fd, pem, n) != (ssize_t)n || fsync(fd) != 0) {
        rc = seterr(g, KOPE_ERR_IO, "cannot write the key file %s", key_path);
        unlink(key_path);
        goto out;
    }
    if ((rc = net_key_public_der(g->key, der, sizeof der, &der_len)))
        goto out;
    net_sha256(der, der_len, g->origin);
    util_hex(der, der_len, hex);
    util_hex(g->origin, 32, ohex);
    body = cJSON_CreateObject();
    if (!body || !cJSON_AddStringToObject(body, "alg", "ecdsa-p256-sha256") ||
        !cJSON_AddStringToObject(body, "pubkey", hex)) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    g->seq = 0;
    g->ckpt_seq = 0;
    if ((rc = graph_begin(g)))
        goto out;
    if ((rc = graph_append(g, "identity", target, NULL, 0, body, NULL)) ||
        (rc = graph_checkpoint(g)) ||
        (rc = store_meta_set(g->st, "device_origin", ohex)) ||
        (rc = store_meta_set(g->st, "device_target", target))) {
        graph_rollback(g);
        unlink(key_path);
        goto out;
    }
    rc = graph_commit(g);
    if (rc)
        unlink(key_path);
out:
    net_wipe(pem, sizeof pem);
    if (fd >= 0)
        close(fd);
    if (rc) {
        net_key_free(g->key);
        g->key = NULL;
    }
    free(existing);
    cJSON_Delete(body);
    return rc;
}

int graph_identity_load(struct graph *g, const char *key_path)
{
    int rc;
    char *ohex = NULL, *pem = NULL, err[256];
    size_t len = 0, der_len = 0;
    uint8_t der[NET_PUBKEY_MAX], want[32];
    if ((rc = store_meta_get(g->st, "device_origin", &ohex)))
        return rc == STORE_ERR_NOTFOUND
                   ? seterr(g, KOPE_ERR_NOINIT, "this store has no device identity: run `kope init`")
                   : rc;
    if (util_unhex(ohex, want, 32)) {
        rc = seterr(g, KOPE_ERR_PARSE, "bad device_origin in store: %s", ohex);
        goto out;
    }
    if ((rc = util_read_file(key_path, 64 * 1024, &pem, &len, err, sizeof err))) {
        rc = seterr(g, KOPE_ERR_IO, "cannot read this device's key: %s", err);
        goto out;
    }
    if ((rc = net_key_load((const uint8_t *)pem, len + 1, &g->key))) {
        rc = seterr(g, rc, "%s: not a P-256 private key", key_path);
        goto out;
    }
    /* the last line (core/secret.h): no copy of it is ever stored or sent */
    if ((rc = secret_add_key_pem(pem, len, "this device's private key")))
        goto out;
    if ((rc = net_key_public_der(g->key, der, sizeof der, &der_len)))
        goto out;
    net_sha256(der, der_len, g->origin);
    if (memcmp(g->origin, want, 32) != 0) {
        rc = seterr(g, KOPE_ERR_SIG, "%s is not the key of this store's device", key_path);
        goto out;
    }
    rc = load_own_head(g);
    if (!rc) {
        free(g->cert_hex);
        g->cert_hex = NULL;
        int crc = store_meta_get(g->st, "device_cert", &g->cert_hex);
        if (crc && crc != STORE_ERR_NOTFOUND)
            rc = crc;
    }
out:
    if (rc) {
        net_key_free(g->key);
        g->key = NULL;
    }
    if (pem) {
        net_wipe(pem, len);
        free(pem);
    }
    free(ohex);
    return rc;
}

/* ------------------------------------------------------------------ transactions */

/* Our next seq and chain link are read here, inside the write transaction:
 * another kope process on the same store (a probe, a second run, `kope
 * fleet enroll`) may have appended to our chain since we last looked, and
 * BEGIN IMMEDIATE holds the write lock until our commit, so the head read
 * now is the one our records follow. */
int graph_begin(struct graph *g)
{
    if (g->in_tx)
        return KOPE_ERR_INTERNAL;
    int rc = store_begin(g->st);
    if (rc)
        return seterr(g, rc, "%s", store_errmsg(g->st));
    if (g->key && (rc = load_own_head(g))) {
        store_rollback(g->st);
        return seterr(g, rc, "reading our chain head: %s", store_errmsg(g->st));
    }
    g->in_tx = 1;
    return 0;
}

int graph_commit(struct graph *g)
{
    int rc = 0;
    if (!g->in_tx)
        return KOPE_ERR_INTERNAL;
    if (g->key && g->seq - g->ckpt_seq >= GRAPH_CKPT_EVERY && (rc = graph_checkpoint(g))) {
        graph_rollback(g);
        return rc;
    }
    rc = store_commit(g->st);
    if (rc) {
        seterr(g, rc, "%s", store_errmsg(g->st));
        graph_rollback(g);
        return rc;
    }
    g->in_tx = 0;
    return 0;
}

void graph_rollback(struct graph *g)
{
    if (!g->in_tx)
        return;
    store_rollback(g->st);
    g->in_tx = 0;
    if (g->key)
        load_own_head(g); /* forget the seqs the rolled-back records took */
}

/* ------------------------------------------------------------------ blobs */

static int blob_ref_parse(const char *ref, uint8_t hash[32])
{
    if (strncmp(ref, "sha256:", 7) == 0)
        ref += 7;
    return strlen(ref) == 64 ? util_unhex(ref, hash, 32) : KOPE_ERR_PARSE;
}

/* The bytes a blob stores for text: text itself, or a copy in *fixed (heap)
 * with the bytes that cannot travel as a JSON string replaced. Byte by
 * byte: a valid multi-byte sequence is kept, anything else becomes '?'. */
static int blob_text(const char *text, size_t len, char **fixed)
{
    *fixed = NULL;
    if (canon_utf8_valid(text, len) && !memchr(text, '\0', len))
        return 0;
    if (!(*fixed = malloc(len + 1)))
        return KOPE_ERR_NOMEM;
    char *f = *fixed;
    size_t i = 0;
    while (i < len) {
        size_t n = 1;
        unsigned char c = (unsigned char)text[i];
        if (c >= 0xc0)
            n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (c != 0 && i + n <= len && canon_utf8_valid(text + i, n)) {
            memcpy(f + i, text + i, n);
        } else {
            f[i] = '?';
            n = 1;
        }
        i += n;
    }
    f[len] = '\0';
    return 0;
}

int graph_blob_ref(const char *text, size_t len, char ref[GRAPH_BLOB_REF])
{
    uint8_t h[32];
    char *fixed;
    int rc = blob_text(text, len, &fixed);
    if (rc)
        return rc;
    net_sha256(fixed ? fixed : text, len, h);
    strcpy(ref, "sha256:");
    util_hex(h, 32, ref + 7);
    free(fixed);
    return 0;
}

int graph_blob_put(struct graph *g, const char *text, size_t len, char ref[GRAPH_BLOB_REF])
{
    uint8_t h[32];
    char *fixed = NULL;
    int rc;
    if (len > GRAPH_BLOB_MAX)
        return seterr(g, KOPE_ERR_TOOBIG, "text over the blob limit");
    if ((rc = blob_text(text, len, &fixed)))
        return rc;
    if (fixed)
        text = fixed;
    const char *what = secret_find(text, len);
    if (what) {
        free(fixed);
        return seterr(g, KOPE_ERR_SECRET, "a text to store holds %s: refused, nothing stored (a "
                      "kernel source, a reply or a diagnostic that quotes it)", what);
    }
    net_sha256(text, len, h);
    strcpy(ref, "sha256:");
    util_hex(h, 32, ref + 7);
    rc = store_blob_put(g->st, h, text, len);
    free(fixed);
    return rc;
}

int graph_blob_get(struct graph *g, const char *ref, char **out, size_t *len)
{
    uint8_t h[32];
    if (blob_ref_parse(ref, h))
        return seterr(g, KOPE_ERR_PARSE, "not a blob reference: %s", ref);
    return store_blob_get(g->st, h, out, len);
}

/* Collect "sha256:HEX" strings anywhere in a body. */
static int scan_blobs(const cJSON *v, uint8_t (*out)[32], size_t *n, int depth)
{
    if (depth > CANON_MAX_DEPTH)
        return KOPE_ERR_CANON;
    if (cJSON_IsString(v) && v->valuestring && strncmp(v->valuestring, "sha256:", 7) == 0 &&
        strlen(v->valuestring) == 71) {
        uint8_t h[32];
        if (util_unhex(v->valuestring + 7, h, 32) == 0) {
            for (size_t i = 0; i < *n; i++)
                if (memcmp(out[i], h, 32) == 0)
                    return 0;
            if (*n >= MAX_BLOB_REFS)
                return KOPE_ERR_TOOBIG;
            memcpy(out[(*n)++], h, 32);
        }
        return 0;
    }
    for (const cJSON *c = v->child; c; c = c->next) {
        int rc = scan_blobs(c, out, n, depth + 1);
        if (rc)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------ appending */

/* Write our record's canonical form straight into b: the top-level keys
 * are emitted in their sorted order (body, kind, origin, parents, prev,
 * seq, target, v), so only the body goes through the generic writer. The
 * importer re-derives the same bytes through cJSON + canon_write; the tests
 * check that both agree. */
static int record_canon(struct buf *b, const char *kind, const char *target,
                        const uint8_t origin[32], int64_t seq, const uint8_t *prev,
                        const uint8_t (*parents)[32], size_t n_parents, const cJSON *body)
{
    char hex[GRAPH_ID_HEX];
    int rc;
    buf_adds(b, "{\"body\":");
    if ((rc = canon_write(body, b)))
        return rc;
    buf_adds(b, ",\"kind\":\"");
    buf_adds(b, kind); /* one of kinds[]: plain ASCII */
    buf_adds(b, "\",\"origin\":\"");
    util_hex(origin, 32, hex);
    buf_adds(b, hex);
    buf_adds(b, "\",\"parents\":[");
    for (size_t i = 0; i < n_parents; i++) {
        util_hex(parents[i], 32, hex);
        buf_adds(b, i ? ",\"" : "\"");
        buf_adds(b, hex);
        buf_addc(b, '"');
    }
    buf_adds(b, "],\"prev\":");
    if (prev) {
        util_hex(prev, 32, hex);
        buf_addc(b, '"');
        buf_adds(b, hex);
        buf_addc(b, '"');
    } else {
        buf_adds(b, "null");
    }
    buf_printf(b, ",\"seq\":%lld,\"target\":", (long long)seq);
    if ((rc = canon_write_string(target, b)))
        return rc;
    buf_printf(b, ",\"v\":%d}", GRAPH_FORMAT_VERSION);
    return buf_err(b);
}

/* The retrieval keys the store indexes (task_keys, exp_keys), read off a
 * parsed body: core decides what a body means, the store only files it. */
struct rec_keys {
    struct store_task_idx t;
    struct store_exp_idx e;
    char parent[GRAPH_ID_HEX];
};

static double key_size(const cJSON *shape, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(shape, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : -1;
}

static const char *key_str(const cJSON *body, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void keys_fill(struct rec_keys *k, const char *kind, const cJSON *body,
                      const uint8_t *first_parent, struct store_rec *r)
{
    memset(k, 0, sizeof *k);
    r->task_key = NULL;
    r->exp_key = NULL;
    if (strcmp(kind, "task") == 0) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(body, "shape");
        k->t.op = key_str(body, "op");
        k->t.dtype = key_str(body, "dtype");
        k->t.n = key_size(shape, "n");
        k->t.rows = key_size(shape, "rows");
        k->t.cols = key_size(shape, "cols");
        k->t.m = key_size(shape, "m");
        k->t.k = key_size(shape, "k");
        k->t.batch = key_size(shape, "batch");
        if (k->t.op)
            r->task_key = &k->t;
    } else if (strcmp(kind, "outcome") == 0 || strcmp(kind, "insight") == 0) {
        const cJSON *v;
        if (first_parent) {
            util_hex(first_parent, 32, k->parent);
            k->e.parent = k->parent;
        }
        k->e.status = strcmp(kind, "insight") == 0 ? "insight" : key_str(body, "status");
        v = cJSON_GetObjectItemCaseSensitive(body, "speedup");
        if ((k->e.has_speedup = cJSON_IsNumber(v)))
            k->e.speedup = v->valuedouble;
        v = cJSON_GetObjectItemCaseSensitive(body, "share");
        if ((k->e.has_share = cJSON_IsNumber(v)))
            k->e.share = v->valuedouble;
        k->e.reason = key_str(body, "reason");
        if (!k->e.reason)
            k->e.reason = key_str(body, "text");
        if (!k->e.reason)
            k->e.reason = key_str(body, "summary");
        r->exp_key = &k->e;
    }
}

/* The task a record is filed under: its own id for a task, else body.task. */
static int task_of(const char *kind, const uint8_t id[32], const cJSON *body, uint8_t out[32])
{
    if (strcmp(kind, "task") == 0) {
        memcpy(out, id, 32);
        return 1;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "task");
    return cJSON_IsString(t) && t->valuestring && strlen(t->valuestring) == 64 &&
           util_unhex(t->valuestring, out, 32) == 0;
}

static int append_locked(struct graph *g, const char *kind, const char *target,
                         const uint8_t (*parents)[32], size_t n_parents,
                         const cJSON *body, uint8_t out_id[32])
{
    int rc;
    uint8_t blobs[MAX_BLOB_REFS][32];
    size_t n_blobs = 0;
    struct store_rec r;
    memset(&r, 0, sizeof r);
    buf_reset(&g->canon);
    if ((rc = record_canon(&g->canon, kind, target, g->origin, g->seq + 1, g->seq ? g->head : NULL,
                           parents, n_parents, body))) {
        seterr(g, rc, "record has no canonical form (NaN, duplicate key, bad UTF-8 or too big)");
        goto out;
    }
    const char *what = secret_find(g->canon.p, g->canon.len);
    if (what) {
        rc = seterr(g, KOPE_ERR_SECRET, "a %s record holds %s: refused, nothing stored", kind, what);
        goto out;
    }
    if ((rc = scan_blobs(body, blobs, &n_blobs, 0)))
        goto out;
    net_sha256(g->canon.p, g->canon.len, r.id);
    memcpy(r.origin, g->origin, 32);
    r.seq = g->seq + 1;
    r.has_prev = g->seq > 0;
    memcpy(r.prev, g->head, 32);
    r.has_task = task_of(kind, r.id, body, r.task);
    r.kind = kind;
    r.target = target;
    r.canon = g->canon.p;
    r.canon_len = g->canon.len;
    r.blobs = (const uint8_t(*)[32])blobs;
    r.n_blobs = n_blobs;
    struct rec_keys keys;
    keys_fill(&keys, kind, body, n_parents ? parents[0] : NULL, &r);
    rc = store_rec_put(g->st, &r);
    if (rc == 1)
        rc = seterr(g, KOPE_ERR_CHAIN, "record already stored");
    if (rc) {
        if (rc != KOPE_ERR_CHAIN)
            seterr(g, rc, "%s", store_errmsg(g->st));
        goto out;
    }
    g->seq = r.seq;
    memcpy(g->head, r.id, 32);
    if (out_id)
        memcpy(out_id, r.id, 32);
out:
    return rc;
}

int graph_append(struct graph *g, const char *kind, const char *target,
                 const uint8_t (*parents)[32], size_t n_parents,
                 const cJSON *body, uint8_t out_id[32])
{
    int rc;
    if (!g->key)
        return seterr(g, KOPE_ERR_NOINIT, "no device identity loaded: run `kope init`");
    if (!kind_valid(kind) || !target || !*target || strlen(target) >= 32 ||
        !cJSON_IsObject(body) || n_parents > MAX_PARENTS)
        return seterr(g, KOPE_ERR_USAGE, "invalid record (kind %s, target, body or parents)", kind);
    if (g->in_tx)
        return append_locked(g, kind, target, parents, n_parents, body, out_id);
    if ((rc = graph_begin(g)))
        return rc;
    if ((rc = append_locked(g, kind, target, parents, n_parents, body, out_id))) {
        graph_rollback(g);
        return rc;
    }
    return graph_commit(g);
}

static int checkpoint_sign(struct graph *g);

int graph_checkpoint(struct graph *g)
{
    int rc;
    if (!g->key)
        return seterr(g, KOPE_ERR_NOINIT, "no device identity loaded");
    if (g->in_tx)
        return g->seq == 0 || g->ckpt_seq == g->seq ? 0 : checkpoint_sign(g);
    /* whether the head is covered is only known inside the transaction */
    if ((rc = graph_begin(g)))
        return rc;
    if (g->seq == 0 || g->ckpt_seq == g->seq) {
        graph_rollback(g);
        return 0;
    }
    if ((rc = checkpoint_sign(g))) {
        graph_rollback(g);
        return rc;
    }
    return graph_commit(g);
}

int graph_cert_set(struct graph *g, const char *cert_hex)
{
    int rc;
    char *copy = NULL;
    if (!g->key || g->seq == 0)
        return seterr(g, KOPE_ERR_NOINIT, "no device identity loaded");
    if (!(copy = strdup(cert_hex)))
        return KOPE_ERR_NOMEM;
    if ((rc = graph_begin(g))) {
        free(copy);
        return rc;
    }
    free(g->cert_hex);
    g->cert_hex = copy;
    if ((rc = store_meta_set(g->st, "device_cert", cert_hex)) || (rc = checkpoint_sign(g))) {
        graph_rollback(g);
        return rc;
    }
    return graph_commit(g);
}

/* Append a checkpoint over the current head (even one already covered),
 * inside the caller's transaction: the head it signs is the one read there. */
static int checkpoint_sign(struct graph *g)
{
    int rc;
    uint8_t sig[NET_SIG_MAX];
    size_t sig_len = 0;
    char hex[2 * NET_SIG_MAX + 1];
    if (!g->in_tx)
        return seterr(g, KOPE_ERR_INTERNAL, "checkpoint outside a transaction");
    if ((rc = net_key_sign(g->key, g->head, sig, sizeof sig, &sig_len)))
        return seterr(g, rc, "signing failed");
    util_hex(sig, sig_len, hex);
    cJSON *body = cJSON_CreateObject();
    if (!body || !cJSON_AddNumberToObject(body, "covers", (double)g->seq) ||
        !cJSON_AddStringToObject(body, "sig", hex) ||
        (g->cert_hex && !cJSON_AddStringToObject(body, "cert", g->cert_hex))) {
        cJSON_Delete(body);
        return KOPE_ERR_NOMEM;
    }
    char target[32] = "any";
    if (!(rc = append_locked(g, "checkpoint", target, NULL, 0, body, NULL)) &&
        !(rc = store_origin_set_ckpt(g->st, g->origin, g->seq)))
        g->ckpt_seq = g->seq;
    cJSON_Delete(body);
    return rc;
}

/* ------------------------------------------------------------------ revocation */

void graph_revocation_digest(const uint8_t origin[32], int64_t after_seq, uint8_t out[32])
{
    static const char tag[] = "kope-revocation-v1";
    uint8_t n[8];
    struct net_sha256 h;
    for (int i = 0; i < 8; i++)
        n[i] = (uint8_t)((uint64_t)after_seq >> (56 - 8 * i));
    net_sha256_init(&h);
    net_sha256_update(&h, tag, sizeof tag - 1);
    net_sha256_update(&h, origin, 32);
    net_sha256_update(&h, n, 8);
    net_sha256_final(&h, out);
}

int graph_revocation_add(struct graph *g, const uint8_t origin[32], int64_t after_seq, const char *cert_hex,
                         const char *sig_hex, uint8_t out_id[32])
{
    char hex[GRAPH_ID_HEX];
    uint8_t id[32];
    int rc;
    util_hex(origin, 32, hex);
    cJSON *body = cJSON_CreateObject();
    if (!body || !cJSON_AddNumberToObject(body, "after_seq", (double)after_seq) ||
        !cJSON_AddStringToObject(body, "cert", cert_hex) || !cJSON_AddStringToObject(body, "origin", hex) ||
        !cJSON_AddStringToObject(body, "sig", sig_hex)) {
        cJSON_Delete(body);
        return KOPE_ERR_NOMEM;
    }
    /* the record and its effect here land together; the checkpoint makes
     * it exportable at once (only covered records leave the device) */
    if ((rc = graph_begin(g)))
        goto out;
    if ((rc = append_locked(g, "revocation", "any", NULL, 0, body, id)) ||
        (rc = store_revoke_put(g->st, origin, after_seq, id)) || (rc = checkpoint_sign(g))) {
        if (rc < -99 && rc > -200)
            seterr(g, rc, "%s", store_errmsg(g->st));
        graph_rollback(g);
        goto out;
    }
    if ((rc = graph_commit(g)))
        goto out;
    if (out_id)
        memcpy(out_id, id, 32);
out:
    cJSON_Delete(body);
    return rc;
}

static int add_task_ref(cJSON *body, const uint8_t task[32])
{
    char hex[GRAPH_ID_HEX];
    util_hex(task, 32, hex);
    cJSON_DeleteItemFromObjectCaseSensitive(body, "task");
    return cJSON_AddStringToObject(body, "task", hex) ? 0 : KOPE_ERR_NOMEM;
}

int graph_task_add(struct graph *g, const char *target, const cJSON *spec, uint8_t out_id[32])
{
    return graph_append(g, "task", target, NULL, 0, spec, out_id);
}

/* Copy body, set its "task", append with the given parents. */
static int append_for_task(struct graph *g, const char *kind, const uint8_t task[32],
                           const uint8_t (*parents)[32], size_t n, const char *target,
                           const cJSON *body, uint8_t out_id[32])
{
    cJSON *b = body ? cJSON_Duplicate(body, 1) : cJSON_CreateObject();
    if (!b)
        return KOPE_ERR_NOMEM;
    int rc = add_task_ref(b, task);
    if (!rc)
        rc = graph_append(g, kind, target, parents, n, b, out_id);
    cJSON_Delete(b);
    return rc;
}

int graph_decision_add(struct graph *g, const uint8_t task[32], const uint8_t *parent,
                       const char *target, const cJSON *body, uint8_t out_id[32])
{
    uint8_t p[1][32];
    memcpy(p[0], parent ? parent : task, 32);
    return append_for_task(g, "decision", task, (const uint8_t(*)[32])p, 1, target, body, out_id);
}

int graph_outcome_add(struct graph *g, const uint8_t task[32], const uint8_t decision[32],
                      const char *target, const cJSON *body, uint8_t out_id[32])
{
    uint8_t p[1][32];
    memcpy(p[0], decision, 32);
    return append_for_task(g, "outcome", task, (const uint8_t(*)[32])p, 1, target, body, out_id);
}

int graph_insight_add(struct graph *g, const uint8_t task[32], const uint8_t (*outcomes)[32],
                      size_t n, const char *target, const cJSON *body, uint8_t out_id[32])
{
    return append_for_task(g, "insight", task, outcomes, n, target, body, out_id);
}

/* ------------------------------------------------------------------ reading */

void graph_rec_free(struct graph_rec *r)
{
    if (!r)
        return;
    cJSON_Delete(r->json);
    r->json = NULL;
}

static int rec_fill(struct graph_rec *out, const struct store_rec *r)
{
    memset(out, 0, sizeof *out);
    memcpy(out->id, r->id, 32);
    util_hex(r->id, 32, out->id_hex);
    out->seq = r->seq;
    snprintf(out->kind, sizeof out->kind, "%s", r->kind);
    snprintf(out->target, sizeof out->target, "%s", r->target);
    out->json = cJSON_ParseWithLength(r->canon, r->canon_len);
    return out->json ? 0 : KOPE_ERR_PARSE;
}

struct get_ctx {
    struct graph_rec *out;
    const char *prefix;
    int n;
};

static int get_cb(void *ctx, const struct store_rec *r)
{
    struct get_ctx *c = ctx;
    char hex[GRAPH_ID_HEX];
    util_hex(r->id, 32, hex);
    if (c->prefix && strncmp(hex, c->prefix, strlen(c->prefix)) != 0)
        return 0;
    if (++c->n > 1) {
        graph_rec_free(c->out);
        return KOPE_ERR_USAGE; /* ambiguous prefix */
    }
    return rec_fill(c->out, r);
}

int graph_get(struct graph *g, const char *id, struct graph_rec *out)
{
    size_t len = strlen(id);
    uint8_t lo[32], hi[32];
    struct get_ctx c = {out, id, 0};
    memset(out, 0, sizeof *out);
    if (len < 8 || len > 64 || strspn(id, "0123456789abcdef") != len)
        return seterr(g, KOPE_ERR_USAGE, "'%s' is not a record id (8 to 64 lower-case hex digits)", id);
    char full[GRAPH_ID_HEX];
    memset(full, '0', 64);
    memcpy(full, id, len);
    full[64] = '\0';
    util_unhex(full, lo, 32);
    memset(full, 'f', 64);
    memcpy(full, id, len);
    util_unhex(full, hi, 32);
    int rc = store_rec_range(g->st, lo, hi, get_cb, &c);
    if (rc == KOPE_ERR_USAGE)
        return seterr(g, rc, "id prefix '%s' matches more than one record: give more digits", id);
    if (rc)
        return rc;
    if (c.n == 0)
        return seterr(g, KOPE_ERR_NOTFOUND, "no record %s in this store", id);
    return 0;
}

struct find_ctx {
    const char *name;
    uint8_t *task;
    int n;
};

static int find_cb(void *ctx, const struct store_rec *r)
{
    struct find_ctx *c = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "body"), "name");
    if (cJSON_IsString(name) && strcmp(name->valuestring, c->name) == 0) {
        memcpy(c->task, r->id, 32); /* the latest task of that name wins */
        c->n++;
    }
    cJSON_Delete(j);
    return 0;
}

int graph_task_find(struct graph *g, const char *name_or_id, uint8_t task[32])
{
    struct graph_rec r;
    size_t len = strlen(name_or_id);
    if (len >= 8 && len <= 64 && strspn(name_or_id, "0123456789abcdef") == len &&
        graph_get(g, name_or_id, &r) == 0) {
        int is_task = strcmp(r.kind, "task") == 0;
        memcpy(task, r.id, 32);
        graph_rec_free(&r);
        if (is_task)
            return 0;
        return seterr(g, KOPE_ERR_NOTFOUND, "record %s is not a task", name_or_id);
    }
    struct find_ctx c = {name_or_id, task, 0};
    int rc = store_rec_query(g->st, STORE_Q_TASKS, NULL, 0, find_cb, &c);
    if (rc)
        return rc;
    if (!c.n)
        return seterr(g, KOPE_ERR_NOTFOUND, "no task named or with id '%s'", name_or_id);
    return 0;
}

/* ------------------------------------------------------------------ tree */

struct tree_ctx {
    struct graph_tree *t;
    size_t cap;
    struct graph_rec *outs;
    size_t n_outs, cap_outs;
    int rc;
};

static const char *body_str(const struct graph_rec *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "body"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double body_num(const struct graph_rec *r, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "body"), key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *first_parent(const struct graph_rec *r)
{
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r->json, "parents"), 0);
    return cJSON_IsString(p) ? p->valuestring : NULL;
}

static int tree_cb(void *ctx, const struct store_rec *sr)
{
    struct tree_ctx *c = ctx;
    struct graph_tree *t = c->t;
    struct graph_rec r;
    int rc = rec_fill(&r, sr);
    if (rc)
        return rc;
    if (strcmp(r.kind, "task") == 0) {
        graph_rec_free(&t->task);
        t->task = r;
    } else if (strcmp(r.kind, "decision") == 0) {
        if (t->n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 16;
            void *p = realloc(t->nodes, ncap * sizeof *t->nodes);
            if (!p) {
                graph_rec_free(&r);
                return KOPE_ERR_NOMEM;
            }
            t->nodes = p;
            c->cap = ncap;
        }
        struct graph_node *nd = &t->nodes[t->n++];
        memset(nd, 0, sizeof *nd);
        nd->dec = r;
        nd->parent = -1;
        const char *par = first_parent(&r);
        for (size_t i = 0; par && i + 1 < t->n; i++)
            if (strcmp(t->nodes[i].dec.id_hex, par) == 0)
                nd->parent = (int)i;
    } else if (strcmp(r.kind, "outcome") == 0) {
        const char *par = first_parent(&r);
        for (size_t i = 0; par && i < t->n; i++)
            if (strcmp(t->nodes[i].dec.id_hex, par) == 0 && !t->nodes[i].has_outcome) {
                t->nodes[i].out = r;
                t->nodes[i].has_outcome = 1;
                return 0;
            }
        graph_rec_free(&r);
    } else {
        graph_rec_free(&r);
    }
    return 0;
}

int graph_tree_load(struct graph *g, const uint8_t task[32], struct graph_tree *t)
{
    struct tree_ctx c;
    memset(t, 0, sizeof *t);
    memset(&c, 0, sizeof c);
    c.t = t;
    g->n_tree_loads++;
    int rc = store_rec_query(g->st, STORE_Q_TASK, task, 0, tree_cb, &c);
    if (!rc && !t->task.json)
        rc = seterr(g, KOPE_ERR_NOTFOUND, "task not found");
    if (rc)
        graph_tree_free(t);
    return rc;
}

int graph_tree_add(struct graph *g, struct graph_tree *t, const uint8_t dec[32], const uint8_t *out)
{
    char hex[GRAPH_ID_HEX];
    struct graph_node nd;
    memset(&nd, 0, sizeof nd);
    nd.parent = -1;
    util_hex(dec, 32, hex);
    int rc = graph_get(g, hex, &nd.dec);
    if (rc)
        return rc;
    if (out) {
        util_hex(out, 32, hex);
        if ((rc = graph_get(g, hex, &nd.out))) {
            graph_rec_free(&nd.dec);
            return rc;
        }
        nd.has_outcome = 1;
    }
    struct graph_node *p = realloc(t->nodes, (t->n + 1) * sizeof *t->nodes);
    if (!p) {
        graph_rec_free(&nd.dec);
        if (nd.has_outcome)
            graph_rec_free(&nd.out);
        return KOPE_ERR_NOMEM;
    }
    t->nodes = p;
    const char *par = first_parent(&nd.dec);
    for (size_t i = 0; par && i < t->n; i++)
        if (strcmp(t->nodes[i].dec.id_hex, par) == 0)
            nd.parent = (int)i;
    t->nodes[t->n++] = nd;
    return 0;
}

void graph_tree_free(struct graph_tree *t)
{
    graph_rec_free(&t->task);
    for (size_t i = 0; i < t->n; i++) {
        graph_rec_free(&t->nodes[i].dec);
        if (t->nodes[i].has_outcome)
            graph_rec_free(&t->nodes[i].out);
    }
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

static int passed(const struct graph_node *n)
{
    const char *s = n->has_outcome ? body_str(&n->out, "status") : NULL;
    return s && strcmp(s, "pass") == 0;
}

static double rank_num(const void *ctx, const char *key, double dflt)
{
    return body_num(ctx, key, dflt);
}

int graph_outcome_verified(const struct graph_rec *out, const char *target)
{
    const char *st = body_str(out, "status");
    const cJSON *reduced = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out->json, "body"),
                                                            "reduced_shape");
    return st && strcmp(st, "pass") == 0 && strcmp(out->kind, "outcome") == 0 &&
           (!target || strcmp(out->target, target) == 0) && !cJSON_IsTrue(reduced);
}

double graph_outcome_rank(const struct graph_rec *out)
{
    struct plat_outcome o = {out, rank_num};
    double v = platform_rank(out->target, &o);
    return isfinite(v) ? v : 0; /* a record's number is outside input: never NaN-ranked */
}

int graph_tree_best(const struct graph_tree *t)
{
    int best = -1;
    double bs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        if (!n->has_outcome || !graph_outcome_verified(&n->out, t->task.target))
            continue;
        double s = graph_outcome_rank(&n->out);
        if (best < 0 || s > bs) {
            best = (int)i;
            bs = s;
        }
    }
    return best;
}

int graph_tree_best_reduced(const struct graph_tree *t)
{
    int best = -1;
    double bs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        const char *st = n->has_outcome ? body_str(&n->out, "status") : NULL;
        if (!st || strcmp(st, "pass") != 0 || strcmp(n->out.kind, "outcome") != 0 ||
            strcmp(n->out.target, t->task.target) != 0 ||
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n->out.json, "body"),
                                                           "reduced_shape")))
            continue;
        double s = graph_outcome_rank(&n->out);
        if (best < 0 || s > bs) {
            best = (int)i;
            bs = s;
        }
    }
    return best;
}

int graph_task_best(struct graph *g, const uint8_t task[32], struct graph_best *b)
{
    struct graph_tree t;
    memset(b, 0, sizeof *b);
    int rc = graph_tree_load(g, task, &t);
    if (rc)
        return rc;
    int i = graph_tree_best(&t);
    if (i >= 0) {
        /* move the two records out of the tree before it is freed */
        b->found = 1;
        b->dec = t.nodes[i].dec;
        b->out = t.nodes[i].out;
        b->rank = graph_outcome_rank(&b->out);
        memset(&t.nodes[i].dec, 0, sizeof t.nodes[i].dec);
        t.nodes[i].has_outcome = 0;
    }
    graph_tree_free(&t);
    return 0;
}

void graph_best_free(struct graph_best *b)
{
    if (b->found) {
        graph_rec_free(&b->dec);
        graph_rec_free(&b->out);
    }
    memset(b, 0, sizeof *b);
}

static void outcome_text(const struct graph_node *n, char *buf, size_t cap)
{
    if (!n->has_outcome) {
        snprintf(buf, cap, "(no outcome yet)");
        return;
    }
    const char *st = body_str(&n->out, "status");
    const char *base = body_str(&n->out, "baseline");
    double sp = body_num(&n->out, "speedup", -1);
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(n->out.json, "body");
    const cJSON *em = cJSON_GetObjectItemCaseSensitive(body, "emulated");
    const char *cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "reduced_shape"))
                          ? ", verified at reduced shape only" : "";
    if (sp >= 0)
        snprintf(buf, cap, "%s %.2fx vs %s%s%s", st ? st : "?", sp, base ? base : "baseline",
                 cJSON_IsTrue(em) ? " (emulated: vcost ratio)" : "", cut);
    else
        snprintf(buf, cap, "%s%s%s", st ? st : "?", body_str(&n->out, "reason") ? ": " : "",
                 body_str(&n->out, "reason") ? body_str(&n->out, "reason") : "");
}

static void tags_text(const struct graph_rec *d, char *buf, size_t cap)
{
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->json, "body"), "tags");
    size_t off = 0;
    buf[0] = '\0';
    const cJSON *tg;
    cJSON_ArrayForEach(tg, tags)
    {
        if (cJSON_IsString(tg) && off < cap)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? "," : "", tg->valuestring);
    }
}

static void print_node(const struct graph_tree *t, int i, int depth, int best, FILE *f)
{
    char out[160], tags[160];
    const struct graph_node *n = &t->nodes[i];
    outcome_text(n, out, sizeof out);
    tags_text(&n->dec, tags, sizeof tags);
    fprintf(f, "%*s%s %.12s [%s] -> %s\n", 2 + 2 * depth, "", i == best ? "*" : "-",
            n->dec.id_hex, tags, out);
    for (size_t k = 0; k < t->n; k++)
        if (t->nodes[k].parent == i)
            print_node(t, (int)k, depth + 1, best, f);
}

void graph_tree_print(const struct graph_tree *t, FILE *f)
{
    const char *name = body_str(&t->task, "name"), *op = body_str(&t->task, "op");
    int best = graph_tree_best(t);
    fprintf(f, "task %s (%.12s) op=%s target=%s: %zu decision(s)\n", name ? name : "?",
            t->task.id_hex, op ? op : "?", t->task.target, t->n);
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].parent < 0)
            print_node(t, (int)i, 0, best, f);
    if (best >= 0) {
        /* the best path: from the root down to the best decision */
        int path[256], n = 0;
        for (int k = best; k >= 0 && n < 256; k = t->nodes[k].parent)
            path[n++] = k;
        fprintf(f, "best path:");
        while (n--)
            fprintf(f, " %.12s%s", t->nodes[path[n]].dec.id_hex, n ? " ->" : "");
        fprintf(f, "\n");
    } else if (graph_tree_best_reduced(t) >= 0) {
        fprintf(f, "best path: none verified at the task's shape; passed at a reduced shape only "
                   "(emulated): full shape on a board or with --full-shape\n");
    } else {
        fprintf(f, "best path: none passed yet\n");
    }
}

void graph_tree_dot(const struct graph_tree *t, FILE *f)
{
    const char *name = body_str(&t->task, "name");
    int best = graph_tree_best(t);
    fprintf(f, "digraph kope {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\"];\n");
    fprintf(f, "  \"%.12s\" [label=\"task %s\", fillcolor=\"#dddddd\"];\n", t->task.id_hex,
            name ? name : "?");
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *n = &t->nodes[i];
        char out[160], tags[160];
        outcome_text(n, out, sizeof out);
        tags_text(&n->dec, tags, sizeof tags);
        for (char *p = out; *p; p++)
            if (*p == '"' || *p == '\\')
                *p = '\'';
        for (char *p = tags; *p; p++)
            if (*p == '"' || *p == '\\')
                *p = '\'';
        const char *colour = !n->has_outcome ? "#eeeeee" : passed(n) ? "#a6dba0" : "#f4a582";
        fprintf(f, "  \"%.12s\" [label=\"%.12s\\n[%s]\\n%s\", fillcolor=\"%s\"%s];\n", n->dec.id_hex,
                n->dec.id_hex, tags, out, colour, (int)i == best ? ", penwidth=3" : "");
        fprintf(f, "  \"%.12s\" -> \"%.12s\";\n",
                n->parent < 0 ? t->task.id_hex : t->nodes[n->parent].dec.id_hex, n->dec.id_hex);
    }
    fprintf(f, "}\n");
}

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
        return seterr(c->g, rc, "a stored record references a missing blob");
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
            rc = seterr(g, KOPE_ERR_USAGE, "--since wants a JSON object {\"origin-hex\": seq, ...}");
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
        rc = seterr(g, KOPE_ERR_IO, "write error on the export stream");
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
    if (cJSON_GetArraySize(rec) != 8 || !cJSON_IsString(kind) || !kind_valid(kind->valuestring) ||
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
    if (!rc && (rc = scan_blobs(body, blobs, &n_blobs, 0)))
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
    r.has_task = task_of(k, id, body, r.task);
    r.kind = k;
    r.target = target->valuestring;
    r.canon = canon->p;
    r.canon_len = canon->len;
    r.blobs = (const uint8_t(*)[32])blobs;
    r.n_blobs = n_blobs;
    struct rec_keys keys;
    keys_fill(&keys, k, body, n_parents ? parents[0] : NULL, &r);
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
        load_own_head(g);
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

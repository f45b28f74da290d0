/*
 * core/graph/graph.c - the experience graph's records over the store: our
 * identity and signing key, transactions, blobs, appending our records,
 * revocation, reading records back. See graph.h. The decision tree is in
 * graph_tree.c, shards out in graph_export.c, shards in in graph_import.c;
 * what they share with this file is graph_int.h.
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

#define KEY_PEM_MAX 1024

static const char *const kinds[] = {"identity", "task", "decision", "outcome",
                                    "insight", "probe", "checkpoint", "revocation"};

int graph_kind_valid(const char *k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(k, kinds[i]) == 0)
            return 1;
    return 0;
}

int graph_seterr(struct graph *g, int rc, const char *fmt, ...)
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

int graph_load_own_head(struct graph *g)
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
        rc = graph_seterr(g, KOPE_ERR_EXISTS, "this store already has a device identity (%s)", existing);
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
        rc = graph_seterr(g, errno == EEXIST ? KOPE_ERR_EXISTS : KOPE_ERR_IO,
                    "cannot create the key file %s (it must not exist yet)", key_path);
        goto out;
    }
    size_t n = strlen(pem);
    if (write(fd, pem, n) != (ssize_t)n || fsync(fd) != 0) {
        rc = graph_seterr(g, KOPE_ERR_IO, "cannot write the key file %s", key_path);
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
                   ? graph_seterr(g, KOPE_ERR_NOINIT, "this store has no device identity: run `kope init`")
                   : rc;
    if (util_unhex(ohex, want, 32)) {
        rc = graph_seterr(g, KOPE_ERR_PARSE, "bad device_origin in store: %s", ohex);
        goto out;
    }
    if ((rc = util_read_file(key_path, 64 * 1024, &pem, &len, err, sizeof err))) {
        rc = graph_seterr(g, KOPE_ERR_IO, "cannot read this device's key: %s", err);
        goto out;
    }
    if ((rc = net_key_load((const uint8_t *)pem, len + 1, &g->key))) {
        rc = graph_seterr(g, rc, "%s: not a P-256 private key", key_path);
        goto out;
    }
    /* the last line (core/secret.h): no copy of it is ever stored or sent */
    if ((rc = secret_add_key_pem(pem, len, "this device's private key")))
        goto out;
    if ((rc = net_key_public_der(g->key, der, sizeof der, &der_len)))
        goto out;
    net_sha256(der, der_len, g->origin);
    if (memcmp(g->origin, want, 32) != 0) {
        rc = graph_seterr(g, KOPE_ERR_SIG, "%s is not the key of this store's device", key_path);
        goto out;
    }
    rc = graph_load_own_head(g);
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
        return graph_seterr(g, rc, "%s", store_errmsg(g->st));
    if (g->key && (rc = graph_load_own_head(g))) {
        store_rollback(g->st);
        return graph_seterr(g, rc, "reading our chain head: %s", store_errmsg(g->st));
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
        graph_seterr(g, rc, "%s", store_errmsg(g->st));
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
        graph_load_own_head(g); /* forget the seqs the rolled-back records took */
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
        return graph_seterr(g, KOPE_ERR_TOOBIG, "text over the blob limit");
    if ((rc = blob_text(text, len, &fixed)))
        return rc;
    if (fixed)
        text = fixed;
    const char *what = secret_find(text, len);
    if (what) {
        free(fixed);
        return graph_seterr(g, KOPE_ERR_SECRET, "a text to store holds %s: refused, nothing stored (a "
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
        return graph_seterr(g, KOPE_ERR_PARSE, "not a blob reference: %s", ref);
    return store_blob_get(g->st, h, out, len);
}

/* Collect "sha256:HEX" strings anywhere in a body. */
int graph_scan_blobs(const cJSON *v, uint8_t (*out)[32], size_t *n, int depth)
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
        int rc = graph_scan_blobs(c, out, n, depth + 1);
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

void graph_keys_fill(struct rec_keys *k, const char *kind, const cJSON *body,
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
int graph_task_of(const char *kind, const uint8_t id[32], const cJSON *body, uint8_t out[32])
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
        graph_seterr(g, rc, "record has no canonical form (NaN, duplicate key, bad UTF-8 or too big)");
        goto out;
    }
    const char *what = secret_find(g->canon.p, g->canon.len);
    if (what) {
        rc = graph_seterr(g, KOPE_ERR_SECRET, "a %s record holds %s: refused, nothing stored", kind, what);
        goto out;
    }
    if ((rc = graph_scan_blobs(body, blobs, &n_blobs, 0)))
        goto out;
    net_sha256(g->canon.p, g->canon.len, r.id);
    memcpy(r.origin, g->origin, 32);
    r.seq = g->seq + 1;
    r.has_prev = g->seq > 0;
    memcpy(r.prev, g->head, 32);
    r.has_task = graph_task_of(kind, r.id, body, r.task);
    r.kind = kind;
    r.target = target;
    r.canon = g->canon.p;
    r.canon_len = g->canon.len;
    r.blobs = (const uint8_t(*)[32])blobs;
    r.n_blobs = n_blobs;
    struct rec_keys keys;
    graph_keys_fill(&keys, kind, body, n_parents ? parents[0] : NULL, &r);
    rc = store_rec_put(g->st, &r);
    if (rc == 1)
        rc = graph_seterr(g, KOPE_ERR_CHAIN, "record already stored");
    if (rc) {
        if (rc != KOPE_ERR_CHAIN)
            graph_seterr(g, rc, "%s", store_errmsg(g->st));
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
        return graph_seterr(g, KOPE_ERR_NOINIT, "no device identity loaded: run `kope init`");
    if (!graph_kind_valid(kind) || !target || !*target || strlen(target) >= 32 ||
        !cJSON_IsObject(body) || n_parents > MAX_PARENTS)
        return graph_seterr(g, KOPE_ERR_USAGE, "invalid record (kind %s, target, body or parents)", kind);
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
        return graph_seterr(g, KOPE_ERR_NOINIT, "no device identity loaded");
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
        return graph_seterr(g, KOPE_ERR_NOINIT, "no device identity loaded");
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
        return graph_seterr(g, KOPE_ERR_INTERNAL, "checkpoint outside a transaction");
    if ((rc = net_key_sign(g->key, g->head, sig, sizeof sig, &sig_len)))
        return graph_seterr(g, rc, "signing failed");
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
            graph_seterr(g, rc, "%s", store_errmsg(g->st));
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

int graph_rec_fill(struct graph_rec *out, const struct store_rec *r)
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
    return graph_rec_fill(c->out, r);
}

int graph_get(struct graph *g, const char *id, struct graph_rec *out)
{
    size_t len = strlen(id);
    uint8_t lo[32], hi[32];
    struct get_ctx c = {out, id, 0};
    memset(out, 0, sizeof *out);
    if (len < 8 || len > 64 || strspn(id, "0123456789abcdef") != len)
        return graph_seterr(g, KOPE_ERR_USAGE, "'%s' is not a record id (8 to 64 lower-case hex digits)", id);
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
        return graph_seterr(g, rc, "id prefix '%s' matches more than one record: give more digits", id);
    if (rc)
        return rc;
    if (c.n == 0)
        return graph_seterr(g, KOPE_ERR_NOTFOUND, "no record %s in this store", id);
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
        return graph_seterr(g, KOPE_ERR_NOTFOUND, "record %s is not a task", name_or_id);
    }
    struct find_ctx c = {name_or_id, task, 0};
    int rc = store_rec_query(g->st, STORE_Q_TASKS, NULL, 0, find_cb, &c);
    if (rc)
        return rc;
    if (!c.n)
        return graph_seterr(g, KOPE_ERR_NOTFOUND, "no task named or with id '%s'", name_or_id);
    return 0;
}

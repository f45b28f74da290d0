/*
 * core/graph/sync.c - peer sync sessions and the server loop. See sync.h and
 * docs/SYNC.md.
 *
 * Sections: frames as JSON, hello and vectors, sending a delta (the shard
 * export written through a FILE that turns each line into a LINE frame),
 * receiving one (frames fed to the importer), the session, the server.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/secret.h"
#include "core/graph/graph.h"
#include "core/graph/sync.h"
#include "core/util.h"
#include "core/version.h"
#include "net/crypto.h"
#include "net/fleet.h"
#include "net/neterr.h"
#include "net/peer.h"
#include "net/sync_frame.h"
#include "store/store.h"

struct sess {
    struct graph *g;
    struct net_peer *p;
    const struct sync_opts *o;
    struct sync_stats *st;
    uint8_t *buf;   /* the last frame read (grows; freed at the end) */
    size_t cap, len;
    int type;
    int done_sent, done_recv; /* both: the exchange ran to its end */
    int peer_gave_up;         /* the peer sent ERROR: no answer is due */
    int64_t budget;           /* this session's memory budget */
    int64_t held;             /* reserved now: base + frame buffer (+ a parse, briefly) */
    int64_t frame_held;       /* of which for the frame buffer */
    int64_t cache_extra;      /* of which for a bulk page cache while importing */
    char mem_why[160];        /* why the last reservation failed */
};

/* ------------------------------------------------------------------ memory budget */

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;

/* What a session holds besides frames and parses: the run buffer's memory
 * part, TLS records, scratch. */
#define SYNC_MEM_BASE ((int64_t)GRAPH_PENDING_MEM + (512 << 10))
/* The session's store handle's page cache (store.h): the default always,
 * the bulk size while importing when the server's budget has room. Not
 * the peer's to spend, so it is added to the session's own budget, but it
 * counts in the server's. */
#define SYNC_MEM_CACHE STORE_CACHE_DEFAULT
#define SYNC_MEM_CACHE_BULK (STORE_CACHE_BULK - STORE_CACHE_DEFAULT)

static int mem_take_wait(struct sess *s, int64_t n, int tries);

/* Reserve n bytes for this session: within its own budget, and from the
 * shared pool, waiting up to 2 s for other sessions to give some back.
 * 0, NET_ERR_FRAME_BIG (over the session's budget: never fits) or
 * NET_ERR_BUSY (the server's budget stayed full). */
static int mem_take(struct sess *s, int64_t n)
{
    return mem_take_wait(s, n, 400);
}

static int mem_take_wait(struct sess *s, int64_t n, int tries)
{
    if (n <= 0)
        return 0;
    if (s->held + n > s->budget) {
        snprintf(s->mem_why, sizeof s->mem_why, "%lld bytes over this session's memory budget (%lld)",
                 (long long)(s->held + n - s->budget), (long long)s->budget);
        return NET_ERR_FRAME_BIG;
    }
    struct sync_mem *m = s->o->pool;
    for (int i = 0; m; i++) {
        pthread_mutex_lock(&mem_mu);
        int ok = m->used + n <= m->max;
        if (ok) {
            m->used += n;
            if (m->used > m->peak)
                m->peak = m->used;
        }
        pthread_mutex_unlock(&mem_mu);
        if (ok)
            break;
        if (i >= tries) {
            snprintf(s->mem_why, sizeof s->mem_why, "the server's memory budget (%lld bytes) is in use",
                     (long long)m->max);
            return NET_ERR_BUSY;
        }
        usleep(5000);
    }
    s->held += n;
    return 0;
}

static void mem_give(struct sess *s, int64_t n)
{
    if (n <= 0)
        return;
    if (s->o->pool) {
        pthread_mutex_lock(&mem_mu);
        s->o->pool->used -= n;
        pthread_mutex_unlock(&mem_mu);
    }
    s->held -= n;
}

/* An upper bound of what cJSON allocates to parse text, known before
 * parsing: a node (struct + malloc overhead) per value - every value but
 * the first follows one of , [ { : outside a string - and a copy of every
 * string and key. A line at the frame cap may cost 40x its size. */
static int64_t json_cost(const uint8_t *p, size_t n)
{
    int64_t nodes = 1, strings = 0;
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (in) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in = 0;
        } else if (c == '"') {
            in = 1;
            strings++;
        } else if (c == ',' || c == '[' || c == '{' || c == ':') {
            nodes++;
        }
    }
    return (int64_t)n + nodes * (int64_t)(sizeof(cJSON) + 16) + strings * 32;
}

/* Frame admission (before a payload byte is read): the buffer must fit. */
static int frame_admit(void *ctx, int type, size_t len)
{
    struct sess *s = ctx;
    (void)type;
    int64_t need = (int64_t)len + 1 - s->frame_held;
    int rc = mem_take(s, need);
    if (!rc && need > 0)
        s->frame_held += need;
    return rc;
}


static int fail(struct sess *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct sess *s, int rc, const char *fmt, ...)
{
    if (!s->st->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->st->error, sizeof s->st->error, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ------------------------------------------------------------------ frames as JSON */

static int send_json(struct sess *s, int type, const cJSON *j)
{
    char *t = cJSON_PrintUnformatted(j);
    if (!t)
        return KOPE_ERR_NOMEM;
    int rc = net_peer_frame_write(s->p, type, t, strlen(t));
    free(t);
    return rc;
}

/* Tell the peer why we stop (best effort: the link may be the problem). */
static void send_error(struct sess *s, const char *msg)
{
    cJSON *j = cJSON_CreateObject();
    if (j && cJSON_AddStringToObject(j, "error", msg) && send_json(s, NET_SYNC_ERROR, j) == 0)
        net_peer_flush(s->p);
    cJSON_Delete(j);
}

/* Read the next frame; an ERROR frame from the peer ends the session. */
static int read_frame(struct sess *s, const char *waiting_for)
{
    char why[240];
    if (s->frame_held > (1 << 20)) { /* a big frame is done with: give its memory back */
        free(s->buf);
        s->buf = NULL;
        s->cap = 0;
        mem_give(s, s->frame_held);
        s->frame_held = 0;
    }
    s->mem_why[0] = '\0';
    int rc = net_peer_frame_read_admit(s->p, frame_admit, s, &s->type, &s->buf, &s->cap, &s->len);
    if (s->mem_why[0])
        return fail(s, rc, "%s frame of %zu bytes refused unread while waiting for %s: %s",
                    net_sync_type_name(s->type), s->len, waiting_for, s->mem_why);
    if (rc == NET_ERR_DEADLINE || rc == NET_ERR_SLOW || rc == NET_ERR_BUSY || rc == NET_ERR_TIMEOUT ||
        rc == NET_ERR_PEER_CERT) {
        net_peer_limit_text(s->p, why, sizeof why);
        if (why[0])
            return fail(s, rc, "%s while waiting for %s", why, waiting_for);
    }
    if (rc == NET_ERR_FRAME_BIG)
        return fail(s, rc, "frame over the cap while waiting for %s (type %d, %zu bytes announced)",
                    waiting_for, s->type, s->len);
    if (rc == NET_ERR_FRAME)
        return fail(s, rc, "malformed frame while waiting for %s (type %d)", waiting_for, s->type);
    if (rc)
        return fail(s, rc, "connection lost while waiting for %s: %s", waiting_for, net_strerror(rc));
    if (s->type == NET_SYNC_ERROR) {
        cJSON *j = cJSON_ParseWithLength((const char *)s->buf, s->len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        char text[200];
        net_text_clean(text, sizeof text, cJSON_IsString(e) ? e->valuestring : "(no reason)", SIZE_MAX);
        fail(s, NET_ERR_PEER, "peer gave up: %s", text);
        s->peer_gave_up = 1;
        cJSON_Delete(j);
        return NET_ERR_PEER;
    }
    return 0;
}

/* The current frame as a JSON object of the expected type. Owned by caller. */
static int expect_json(struct sess *s, int type, const char *what, cJSON **out)
{
    *out = NULL;
    if (s->type != type)
        return fail(s, NET_ERR_PEER, "expected a %s frame, got %s", what, net_sync_type_name(s->type));
    /* kept reserved until the session ends: the peer's vector lives as long */
    int rc = mem_take(s, json_cost(s->buf, s->len));
    if (rc)
        return fail(s, rc, "%s frame refused before parsing: %s", what, s->mem_why);
    cJSON *j = cJSON_ParseWithLength((const char *)s->buf, s->len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return fail(s, NET_ERR_FRAME, "%s frame is not a JSON object", what);
    }
    *out = j;
    return 0;
}

/* ------------------------------------------------------------------ hello, vectors */

static int send_hello(struct sess *s)
{
    cJSON *j = cJSON_CreateObject();
    int rc = KOPE_ERR_NOMEM;
    if (j && cJSON_AddStringToObject(j, "proto", "kope-sync") &&
        cJSON_AddNumberToObject(j, "v", SYNC_PROTO_VERSION) && cJSON_AddNumberToObject(j, "min", SYNC_PROTO_MIN) &&
        cJSON_AddStringToObject(j, "kope", KOPE_VERSION))
        rc = send_json(s, NET_SYNC_HELLO, j);
    cJSON_Delete(j);
    return rc;
}

static int small_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return 0;
    *out = (int64_t)v->valuedouble;
    return 1;
}

static int recv_hello(struct sess *s)
{
    cJSON *j = NULL;
    int64_t v = 0, mn = 0;
    int rc = read_frame(s, "hello");
    if (rc || (rc = expect_json(s, NET_SYNC_HELLO, "hello", &j)))
        goto out;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(j, "proto");
    if (!cJSON_IsString(pr) || strcmp(pr->valuestring, "kope-sync") != 0 ||
        !small_int(cJSON_GetObjectItemCaseSensitive(j, "v"), 1, 1000000, &v) ||
        !small_int(cJSON_GetObjectItemCaseSensitive(j, "min"), 1, v, &mn)) {
        rc = fail(s, NET_ERR_PEER, "hello is not a kope-sync hello");
        goto out;
    }
    /* The highest version both speak. A later kope keeps speaking 1 for as
     * long as its "min" says so. */
    int64_t use = v < SYNC_PROTO_VERSION ? v : SYNC_PROTO_VERSION;
    if (use < mn || use < SYNC_PROTO_MIN) {
        rc = fail(s, NET_ERR_PROTO_VERSION, "no protocol version in common (peer speaks %lld..%lld, we %d..%d)",
                  (long long)mn, (long long)v, SYNC_PROTO_MIN, SYNC_PROTO_VERSION);
        goto out;
    }
    s->st->proto = (int)use;
out:
    cJSON_Delete(j);
    return rc;
}

/* The peer's vector, checked: hex origins, whole seqs >= 0. *out owned. */
static int recv_vector(struct sess *s, cJSON **out)
{
    cJSON *j = NULL;
    int n = 0;
    int rc = read_frame(s, "vector");
    if (rc || (rc = expect_json(s, NET_SYNC_VECTOR, "vector", &j)))
        goto out;
    for (const cJSON *e = j->child; e; e = e->next) {
        int64_t seq;
        uint8_t o[32];
        if (++n > SYNC_VECTOR_ENTRIES_MAX || !e->string || strlen(e->string) != 64 ||
            strspn(e->string, "0123456789abcdef") != 64 || util_unhex(e->string, o, 32) ||
            !small_int(e, 0, 9000000000000000ll, &seq)) {
            rc = fail(s, NET_ERR_PEER, "peer's version vector is malformed (entry %d)", n);
            goto out;
        }
    }
    *out = j;
    j = NULL;
out:
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------------ sending a delta */

/* graph_export writes a shard to a FILE; this cookie FILE turns each line
 * into one LINE frame. */
struct line_out {
    struct sess *s;
    struct buf line;
    int64_t lines, records;
    int rc;
};

static ssize_t line_write(void *cookie, const char *p, size_t n)
{
    struct line_out *lo = cookie;
    size_t done = 0;
    if (lo->rc)
        return -1;
    while (done < n) {
        const char *nl = memchr(p + done, '\n', n - done);
        size_t k = nl ? (size_t)(nl - (p + done)) : n - done;
        if (buf_add(&lo->line, p + done, k)) {
            lo->rc = fail(lo->s, NET_ERR_FRAME_BIG, "a shard line over the frame cap cannot be sent");
            return -1;
        }
        done += k;
        if (!nl)
            break;
        done++;
        /* the last line (core/secret.h): a record or blob that holds a
         * secret of ours is not sent; the session stops (records chain, so
         * one cannot be left out) */
        const char *what = secret_find(lo->line.p, lo->line.len);
        if (what) {
            lo->rc = fail(lo->s, KOPE_ERR_SECRET, "a record to send holds %s: not sent, sync stopped", what);
            return -1;
        }
        if ((lo->rc = net_peer_frame_write(lo->s->p, NET_SYNC_LINE, lo->line.p, lo->line.len))) {
            fail(lo->s, lo->rc, "sending a record: %s", net_strerror(lo->rc));
            return -1;
        }
        lo->lines++;
        if (lo->line.len > 6 && memcmp(lo->line.p, "{\"id\":", 6) == 0)
            lo->records++;
        buf_reset(&lo->line);
    }
    return (ssize_t)n;
}

static int send_delta(struct sess *s, const cJSON *peer_vec)
{
    struct line_out lo = {s, {0}, 0, 0, 0};
    cookie_io_functions_t io = {NULL, line_write, NULL, NULL};
    char *since = NULL;
    int rc;
    cJSON *end = NULL;
    buf_init(&lo.line, NET_SYNC_LINE_MAX);
    if (s->o->since_override)
        since = strdup(s->o->since_override);
    else
        since = cJSON_PrintUnformatted(peer_vec);
    FILE *f = fopencookie(&lo, "w", io);
    if (!since || !f) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    setvbuf(f, NULL, _IOFBF, 64 * 1024);
    int64_t n = 0;
    rc = graph_export(s->g, since, f, &n);
    if (fclose(f) != 0 && !rc)
        rc = KOPE_ERR_IO;
    f = NULL;
    if (lo.rc) {
        rc = lo.rc;
        goto out;
    }
    if (rc) {
        rc = fail(s, rc, "export failed: %s", s->g->err[0] ? s->g->err : kope_strerror(rc));
        goto out;
    }
    s->st->sent = lo.records;
    if (!(end = cJSON_CreateObject()) || !cJSON_AddNumberToObject(end, "lines", (double)lo.lines) ||
        !cJSON_AddNumberToObject(end, "records", (double)lo.records)) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    if ((rc = send_json(s, NET_SYNC_END, end)) || (rc = net_peer_flush(s->p)))
        fail(s, rc, "sending the end of our delta: %s", net_strerror(rc));
out:
    cJSON_Delete(end);
    free(since);
    buf_free(&lo.line);
    return rc;
}

/* The peer's DONE: what it stored of ours. */
static int recv_done(struct sess *s)
{
    cJSON *j = NULL;
    int rc = read_frame(s, "done");
    if (rc || (rc = expect_json(s, NET_SYNC_DONE, "done", &j)))
        goto out;
    int64_t a = 0, r = 0;
    small_int(cJSON_GetObjectItemCaseSensitive(j, "accepted"), 0, INT64_MAX / 2, &a);
    small_int(cJSON_GetObjectItemCaseSensitive(j, "rejected"), 0, INT64_MAX / 2, &r);
    s->done_recv = 1;
    s->st->peer_accepted = a;
    s->st->peer_rejected = r;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(e))
        net_text_clean(s->st->peer_error, sizeof s->st->peer_error, e->valuestring, SIZE_MAX);
out:
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------------ receiving a delta */

int sync_trust_check(void *ctx, const uint8_t origin[32], const uint8_t *pubkey, size_t pubkey_len,
                     const char *cert_hex, char *why, size_t why_cap)
{
    uint8_t der[NET_CERT_DER_MAX];
    size_t n = cert_hex ? strlen(cert_hex) : 0;
    (void)origin;
    if (!cert_hex) {
        snprintf(why, why_cap, "the origin's checkpoint carries no fleet certificate (device not enrolled)");
        return KOPE_ERR_TRUST;
    }
    if (n % 2 || n / 2 > sizeof der || util_unhex(cert_hex, der, n / 2)) {
        snprintf(why, why_cap, "the checkpoint's certificate is not DER hex");
        return KOPE_ERR_TRUST;
    }
    return net_trust_check(ctx, der, n / 2, pubkey, pubkey_len, why, why_cap) ? KOPE_ERR_TRUST : 0;
}

int sync_revoke_check(void *ctx, const uint8_t origin[32], const uint8_t digest[32], const char *cert_hex,
                      const char *sig_hex, char *why, size_t why_cap)
{
    uint8_t der[NET_CERT_DER_MAX], sig[NET_SIG_MAX];
    size_t n = strlen(cert_hex), m = strlen(sig_hex);
    if (n % 2 || n / 2 > sizeof der || util_unhex(cert_hex, der, n / 2) || m % 2 || m / 2 > sizeof sig ||
        util_unhex(sig_hex, sig, m / 2)) {
        snprintf(why, why_cap, "the revocation's certificate or signature is not DER hex");
        return KOPE_ERR_TRUST;
    }
    return net_trust_revoke_check(ctx, der, n / 2, origin, digest, sig, m / 2, why, why_cap) ? KOPE_ERR_TRUST : 0;
}

/* A peer whose own device is revoked here is no sync partner: it gets an
 * ERROR frame saying so (the session's error, sent at its end), and its
 * `kope sync` exits 1 with that text. The check is on its TLS certificate's
 * key, the same key its records' origin is the hash of. */
static int peer_not_revoked(struct sess *s)
{
    uint8_t o[32];
    struct store_revoked v;
    char oh[GRAPH_ID_HEX], idh[GRAPH_ID_HEX];
    if (net_peer_origin(s->p, o))
        return 0; /* no certificate: the handshake would not have passed */
    int rc = store_revoked_get(s->g->st, o, &v);
    if (rc == STORE_ERR_NOTFOUND)
        return 0;
    if (rc)
        return fail(s, rc, "reading revocations: %s", store_errmsg(s->g->st));
    util_hex(o, 32, oh);
    util_hex(v.id, 32, idh);
    return fail(s, KOPE_ERR_REVOKED,
                "device %s (origin %.12s) is revoked: revocation %.12s refuses its records after seq %lld "
                "fleet-wide; it is no longer a sync peer", s->st->peer, oh, idh, (long long)v.after_seq);
}

/* After the peer's delta: every origin its vector claims beyond ours should
 * now be here up to that seq. If not, it lied (or its records failed).
 * An origin revoked here after seq N (its revocation may have arrived in
 * this very session, in either delta) is owed only up to N: what the peer
 * holds after N is refused by the importer (each refusal counted and
 * reported in DONE, naming the revocation) or hidden from the peer's own
 * export, so a claim beyond N is not a lie. A claim at or below N, and any
 * claim for an origin no revocation covers, is checked as always. */
static int check_claims(struct sess *s, const cJSON *peer_vec, const cJSON *our_vec)
{
    for (const cJSON *e = peer_vec->child; e; e = e->next) {
        uint8_t o[32];
        struct store_origin so;
        struct store_revoked v;
        const cJSON *mine = cJSON_GetObjectItemCaseSensitive(our_vec, e->string);
        double had = cJSON_IsNumber(mine) ? mine->valuedouble : 0;
        if (e->valuedouble <= had || util_unhex(e->string, o, 32))
            continue;
        int rc = store_revoked_get(s->g->st, o, &v);
        if (rc && rc != STORE_ERR_NOTFOUND)
            return rc;
        if (!rc && e->valuedouble > (double)v.after_seq)
            continue;
        rc = store_origin_get(s->g->st, o, &so);
        int64_t now = rc == 0 ? so.ckpt_seq : 0;
        if (rc && rc != STORE_ERR_NOTFOUND)
            return rc;
        if ((double)now < e->valuedouble) {
            s->st->lies++;
            fail(s, NET_ERR_PEER, "peer's vector claimed origin %.12s up to seq %.0f, but its delta brought it to %lld",
                 e->string, e->valuedouble, (long long)now);
        }
    }
    return 0;
}

static int recv_delta(struct sess *s)
{
    struct graph_import_stats is;
    struct graph_importer *im = NULL;
    struct graph_import_opts io = {sync_trust_check, s->o->trust,
                                   s->o->max_pending > 0 ? s->o->max_pending : SYNC_MAX_PENDING, 0,
                                   sync_revoke_check, 0};
    int64_t lines = 0;
    cJSON *end = NULL, *done = NULL;
    int rc, stopped = 0;
    if (!s->o->trust)
        return fail(s, KOPE_ERR_INTERNAL, "no fleet trust policy");
    /* a bulk page cache only if the server's budget has room now (no
     * wait: the default cache, already counted, does the job more slowly) */
    io.cache_bytes = STORE_CACHE_DEFAULT;
    s->budget += SYNC_MEM_CACHE_BULK;
    if (mem_take_wait(s, SYNC_MEM_CACHE_BULK, 0) == 0) {
        s->cache_extra = SYNC_MEM_CACHE_BULK;
        io.cache_bytes = STORE_CACHE_BULK;
    } else {
        s->budget -= SYNC_MEM_CACHE_BULK;
    }
    if ((rc = graph_importer_begin(s->g, &io, &is, &im))) {
        rc = fail(s, rc, "cannot start the import");
        goto out;
    }
    for (;;) {
        if ((rc = read_frame(s, "records")))
            goto out;
        if (s->type == NET_SYNC_END)
            break;
        if (s->type != NET_SYNC_LINE) {
            rc = fail(s, NET_ERR_PEER, "expected a line or end frame, got %s", net_sync_type_name(s->type));
            goto out;
        }
        lines++;
        if (stopped)
            continue; /* draining: the peer's stream is read to its end */
        int64_t cost = json_cost(s->buf, s->len);
        s->mem_why[0] = '\0';
        if ((rc = mem_take(s, cost)) == NET_ERR_FRAME_BIG) {
            char why[320];
            snprintf(why, sizeof why, "line refused before parsing: parsing it would take %lld bytes, %s",
                     (long long)cost, s->mem_why);
            graph_importer_skip_line(im, why);
            continue;
        } else if (rc) {
            rc = fail(s, rc, "%s", s->mem_why);
            goto out;
        }
        rc = graph_importer_feed_line(im, (const char *)s->buf, s->len);
        mem_give(s, cost);
        if (rc) {
            /* The store cannot take more (busy, full) or the stream is not
             * a shard. Read on to the peer's END, so that both sides stay
             * in step and the peer learns the real cause from our DONE. */
            fail(s, rc, "import stopped: %s (%s)", kope_strerror(rc), is.first_error);
            stopped = rc;
            s->st->accepted = is.accepted;
            s->st->duplicates = is.duplicates;
            s->st->rejected = is.rejected;
            graph_importer_abort(im);
            im = NULL;
            continue;
        }
        if (is.rejected > SYNC_REJECT_MAX) { /* a peer that only wastes our time */
            rc = fail(s, NET_ERR_PEER, "more than %d refused records, stopping: %s", SYNC_REJECT_MAX,
                      is.first_error);
            goto out;
        }
    }
    if ((rc = expect_json(s, NET_SYNC_END, "end", &end)))
        goto out;
    int64_t n = -1;
    if (!small_int(cJSON_GetObjectItemCaseSensitive(end, "lines"), 0, INT64_MAX / 2, &n) || n != lines) {
        rc = fail(s, NET_ERR_PEER, "end frame says %lld lines, %lld arrived", (long long)n, (long long)lines);
        goto out;
    }
    int irc = stopped;
    if (!stopped) {
        irc = graph_importer_end(im);
        im = NULL;
        s->st->accepted = is.accepted;
        s->st->duplicates = is.duplicates;
        s->st->rejected = is.rejected;
        if (irc)
            fail(s, irc, "refused records: %s", is.first_error);
    }
    if (!(done = cJSON_CreateObject()) || !cJSON_AddNumberToObject(done, "accepted", (double)is.accepted) ||
        !cJSON_AddNumberToObject(done, "duplicates", (double)is.duplicates) ||
        !cJSON_AddNumberToObject(done, "rejected", (double)is.rejected) ||
        !cJSON_AddStringToObject(done, "error", stopped ? s->st->error : is.first_error)) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    if ((rc = send_json(s, NET_SYNC_DONE, done)) || (rc = net_peer_flush(s->p))) {
        fail(s, rc, "sending done: %s", net_strerror(rc));
        goto out;
    }
    s->done_sent = 1;
    rc = irc;
out:
    if (im) {
        s->st->accepted = is.accepted; /* committed runs stay */
        s->st->duplicates = is.duplicates;
        s->st->rejected = is.rejected;
        graph_importer_abort(im);
    }
    if (s->cache_extra) { /* the importer is gone: back to the default cache */
        mem_give(s, s->cache_extra);
        s->budget -= s->cache_extra;
        s->cache_extra = 0;
    }
    cJSON_Delete(end);
    cJSON_Delete(done);
    return rc;
}

/* ------------------------------------------------------------------ the session */

int sync_session(struct graph *g, struct net_peer *p, int is_client, const struct sync_opts *o,
                 struct sync_stats *st)
{
    struct sess s;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.p = p;
    s.o = o;
    s.st = st;
    cJSON *peer_vec = NULL, *our_vec = NULL;
    char *ours = NULL;
    int rc, import_rc = 0;
    memset(st, 0, sizeof *st);
    s.budget = (o->mem_session > 0 ? o->mem_session : SYNC_MEM_SESSION) + SYNC_MEM_CACHE;
    net_peer_name(p, st->peer, sizeof st->peer);
    if ((rc = mem_take(&s, SYNC_MEM_BASE + SYNC_MEM_CACHE))) {
        fail(&s, rc, "no memory for a session: %s", s.mem_why);
        goto out;
    }
    if (is_client) {
        if ((rc = send_hello(&s)) || (rc = recv_hello(&s)))
            goto out;
    } else {
        if ((rc = recv_hello(&s)) || (rc = send_hello(&s)))
            goto out;
    }
    /* Our vector is taken once, before anything arrives: it is what we
     * claim, and what the peer's claims are compared with. */
    if ((rc = graph_vector(g, &ours)) || !(our_vec = cJSON_Parse(ours))) {
        rc = fail(&s, rc ? rc : KOPE_ERR_NOMEM, "cannot read our version vector");
        goto out;
    }
    /* A revoked peer is refused where it has nothing unread in flight: the
     * client before it sends its vector, the server once it has read the
     * client's (then the client waits for ours and reads the ERROR instead,
     * with no reset overtaking it) */
    if (is_client) {
        if ((rc = peer_not_revoked(&s)))
            goto out;
        if ((rc = net_peer_frame_write(p, NET_SYNC_VECTOR, ours, strlen(ours))) || (rc = recv_vector(&s, &peer_vec)))
            goto out;
        if ((rc = send_delta(&s, peer_vec)) || (rc = recv_done(&s)))
            goto out;
        import_rc = recv_delta(&s);
        if ((rc = check_claims(&s, peer_vec, our_vec)))
            goto out;
    } else {
        if ((rc = recv_vector(&s, &peer_vec)) || (rc = peer_not_revoked(&s)) ||
            (rc = net_peer_frame_write(p, NET_SYNC_VECTOR, ours, strlen(ours))))
            goto out;
        import_rc = recv_delta(&s);
        if (import_rc <= -200 && import_rc > -300) { /* the link or the protocol: stop */
            rc = import_rc;
            goto out;
        }
        if ((rc = check_claims(&s, peer_vec, our_vec)))
            goto out;
        if ((rc = send_delta(&s, peer_vec)) || (rc = recv_done(&s)))
            goto out;
    }
    if (import_rc <= -200 && import_rc > -300) {
        rc = import_rc;
        goto out;
    }
    rc = import_rc ? import_rc : st->lies ? NET_ERR_PEER : 0;
out:
    /* Every violation gets an ERROR frame with the reason, unless the link
     * itself is gone, the exchange already ended (DONE both ways says it
     * all), or the peer gave up first. A peer that hit a limit gets at most
     * a second more (net_peer_final). */
    if (rc && rc != NET_ERR_CLOSED && rc != NET_ERR_RESET && !(s.done_sent && s.done_recv) && !s.peer_gave_up) {
        if (rc == NET_ERR_TIMEOUT || rc == NET_ERR_DEADLINE || rc == NET_ERR_SLOW || rc == NET_ERR_BUSY)
            net_peer_final(p);
        send_error(&s, st->error[0] ? st->error : kope_strerror(rc));
    }
    net_peer_bytes(p, &st->bytes_sent, &st->bytes_received);
    mem_give(&s, s.held);
    free(s.buf);
    free(ours);
    cJSON_Delete(peer_vec);
    cJSON_Delete(our_vec);
    return rc;
}

/* ------------------------------------------------------------------ the server */

/* One connection being served; on srv->slots under srv_mu from accept until
 * its thread ends, so net_peer_evict never sees a closed peer. */
struct sync_slot {
    struct sync_server *srv;
    struct net_peer *p;
    char addr[64];
    uint64_t age;             /* accept order: smaller = older */
    uint64_t t0;              /* accepted (ms) */
    int authed;               /* handshake done, counted in max_conns */
    int evicted;
    uint8_t cert_id[32];
    struct sync_gen *gen;     /* the trust it was accepted with */
    struct sync_slot *next;
};

/* One trust generation: the TLS conf and record trust that connections
 * accepted while it was current use for their whole life. */
struct sync_gen {
    struct net_peer_conf *conf;
    struct net_trust *trust;
    int refs;                 /* connections using it, +1 while current */
    int owned;                /* made by srv->reload: freed here */
};

static void gen_put(struct sync_gen *g) /* srv_mu held */
{
    if (g && --g->refs == 0) {
        if (g->owned) {
            net_peer_conf_free(g->conf);
            net_trust_free(g->trust);
        }
        free(g);
    }
}

static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv_cv = PTHREAD_COND_INITIALIZER;

static int lim(int v, int def)
{
    return v > 0 ? v : def;
}

static void log_session(struct sync_server *srv, const char *addr, int rc, const struct sync_stats *st)
{
    FILE *f = srv->log ? srv->log : stderr;
    if (rc == 0)
        fprintf(f, "kope serve: %s (%s): ok: stored %lld new, %lld already here; sent %lld, peer stored %lld\n",
                st->peer, addr, (long long)st->accepted, (long long)st->duplicates, (long long)st->sent,
                (long long)st->peer_accepted);
    else
        fprintf(f, "kope serve: %s (%s): refused: %s [%s]; stored %lld new, %lld rejected\n", st->peer, addr,
                st->error[0] ? st->error : kope_strerror(rc), kope_strerror(rc), (long long)st->accepted,
                (long long)st->rejected);
    fflush(f);
}

/* Admission of a new connection from addr before its handshake (srv_mu
 * held): 0 = admit, 1 = admit after evicting *victim, -1 = not yet (wait
 * for a slot). A handshake is evicted only when it has already run for
 * min_age_ms (an honest one takes milliseconds), the oldest first: of
 * addr's own when addr holds its share, else of the address holding the
 * most handshakes, else of any. */
static int slot_admit(struct sync_server *srv, const char *addr, uint64_t now, uint64_t min_age_ms,
                      struct sync_slot **victim)
{
    const char *worst = NULL;
    int worst_n = 0, n_pre = 0, n_addr = 0;
    *victim = NULL;
    for (struct sync_slot *a = srv->slots; a; a = a->next) {
        if (a->authed || a->evicted)
            continue;
        n_pre++;
        n_addr += strcmp(a->addr, addr) == 0;
        int k = 0;
        for (struct sync_slot *b = srv->slots; b; b = b->next)
            k += !b->authed && !b->evicted && strcmp(a->addr, b->addr) == 0;
        if (k > worst_n) {
            worst_n = k;
            worst = a->addr;
        }
    }
    if (n_addr < lim(srv->max_per_addr, 4) && n_pre < lim(srv->max_unauth, 8))
        return 0;
    const char *from[3] = {n_addr >= lim(srv->max_per_addr, 4) ? addr : worst, worst, NULL};
    for (int k = 0; k < 3; k++) {
        struct sync_slot *v = NULL;
        for (struct sync_slot *a = srv->slots; a; a = a->next)
            if (!a->authed && !a->evicted && (!from[k] || strcmp(a->addr, from[k]) == 0) &&
                now - a->t0 >= min_age_ms && (!v || a->age < v->age))
                v = a;
        if (v) {
            *victim = v;
            return 1;
        }
        if (k == 0 && n_addr >= lim(srv->max_per_addr, 4))
            return -1; /* at its own share: it may only displace its own */
    }
    return -1;
}

/* After the handshake: take an authenticated slot, or say why not. */
static int slot_auth(struct sync_slot *sl, char *why, size_t cap)
{
    struct sync_server *srv = sl->srv;
    int n = 0, same = 0, here = 0, rc = 0;
    int max_conns = lim(srv->max_conns, 16), per_addr = lim(srv->max_auth_per_addr, max_conns > 1 ? max_conns / 2 : 1);
    uint8_t id[32];
    if (net_peer_cert_id(sl->p, id))
        memset(id, 0, sizeof id);
    pthread_mutex_lock(&srv_mu);
    for (struct sync_slot *a = srv->slots; a; a = a->next)
        if (a->authed) {
            n++;
            same += memcmp(a->cert_id, id, 32) == 0;
            here += strcmp(a->addr, sl->addr) == 0;
        }
    if (same >= lim(srv->max_per_cert, 2)) {
        snprintf(why, cap, "this certificate already has %d sessions open (the most per peer)", same);
        rc = NET_ERR_BUSY;
    } else if (here >= per_addr) {
        snprintf(why, cap, "this address already has %d sessions open (the most per address)", here);
        rc = NET_ERR_BUSY;
    } else if (n >= max_conns) {
        snprintf(why, cap, "too many sessions at once (%d)", n);
        rc = NET_ERR_BUSY;
    } else {
        sl->authed = 1;
        memcpy(sl->cert_id, id, 32);
    }
    pthread_mutex_unlock(&srv_mu);
    return rc;
}

static void *conn_main(void *arg)
{
    struct sync_slot *sl = arg;
    struct sync_server *srv = sl->srv;
    struct sync_stats st;
    struct store *stp = NULL;
    struct graph g;
    char err[320];
    int rc;
    memset(&st, 0, sizeof st);
    graph_init(&g, NULL);
    err[0] = '\0';
    if ((rc = net_peer_handshake(sl->p, err, sizeof err))) {
        snprintf(st.error, sizeof st.error, "%s", err);
        snprintf(st.peer, sizeof st.peer, "?");
        goto out;
    }
    net_peer_name(sl->p, st.peer, sizeof st.peer);
    if ((rc = slot_auth(sl, err, sizeof err))) {
        cJSON *j = cJSON_CreateObject();
        char *t = j && cJSON_AddStringToObject(j, "error", err) ? cJSON_PrintUnformatted(j) : NULL;
        if (t && net_peer_frame_write(sl->p, NET_SYNC_ERROR, t, strlen(t)) == 0)
            net_peer_flush(sl->p);
        free(t);
        cJSON_Delete(j);
        snprintf(st.error, sizeof st.error, "%s", err);
        goto out;
    }
    if ((rc = store_open(srv->db_path, &stp, err, sizeof err))) {
        snprintf(st.error, sizeof st.error, "%s", err);
        goto out;
    }
    if (srv->lock_wait_ms > 0)
        store_set_busy_timeout(stp, srv->lock_wait_ms);
    graph_free(&g);
    graph_init(&g, stp);
    struct sync_opts o = srv->opts;
    o.trust = sl->gen->trust;
    rc = sync_session(&g, sl->p, 0, &o, &st);
out:
    log_session(srv, sl->addr, rc, &st);
    if (srv->on_session)
        srv->on_session(srv->ctx, rc, &st);
    graph_free(&g);
    store_close(stp);
    pthread_mutex_lock(&srv_mu);
    for (struct sync_slot **pp = &srv->slots; *pp; pp = &(*pp)->next)
        if (*pp == sl) {
            *pp = sl->next;
            break;
        }
    pthread_mutex_unlock(&srv_mu);
    if (rc && rc != NET_ERR_BUSY && rc != NET_ERR_PEER_CERT && rc != KOPE_ERR_REVOKED)
        net_peer_abort(sl->p);
    else
        net_peer_close(sl->p); /* a refusal: let the ERROR frame or the TLS alert arrive (no RST) */
    pthread_mutex_lock(&srv_mu);
    gen_put(sl->gen);
    srv->active--;
    pthread_cond_broadcast(&srv_cv);
    pthread_mutex_unlock(&srv_mu);
    free(sl);
    return NULL;
}

#ifndef SYNC_ADMIT_WAIT_MAX
#define SYNC_ADMIT_WAIT_MAX 64 /* accepted connections waiting for a handshake slot */
#endif

struct admit_wait {
    struct net_peer *p;
    char addr[64];
    uint64_t t0; /* accepted (ms) */
    struct sync_gen *gen;
};

static void wait_drop(struct admit_wait *aw)
{
    net_peer_abort(aw->p);
    pthread_mutex_lock(&srv_mu);
    gen_put(aw->gen);
    pthread_mutex_unlock(&srv_mu);
}

/* Ask srv->reload; a new generation becomes current. */
static void serve_reload(struct sync_server *srv, FILE *log)
{
    struct net_peer_conf *conf = NULL;
    struct net_trust *trust = NULL;
    char err[320] = "";
    int rc = srv->reload(srv->reload_ctx, &conf, &trust, err, sizeof err);
    struct sync_gen *g = rc == 1 ? calloc(1, sizeof *g) : NULL;
    if (rc < 0)
        fprintf(log, "kope serve: trust not reloaded (the current one stays): %s\n", err);
    if (rc != 1)
        return;
    if (!g) {
        net_peer_conf_free(conf);
        net_trust_free(trust);
        return;
    }
    g->conf = conf;
    g->trust = trust;
    g->refs = 1;
    g->owned = 1;
    pthread_mutex_lock(&srv_mu);
    gen_put(srv->gen);
    srv->gen = g;
    pthread_mutex_unlock(&srv_mu);
    fprintf(log, "kope serve: trust reloaded: new connections use the fleet CAs now on file\n");
    fflush(log);
}

/* Try to give an accepted connection a handshake slot and its thread.
 * 1: started (or failed and closed: it is gone either way); 0: no slot yet. */
static int serve_admit(struct sync_server *srv, pthread_attr_t *attr, struct admit_wait *aw, uint64_t now)
{
    /* Threads: every authenticated session, every handshake, and evicted
     * ones still on their way out. A handshake may be evicted after a
     * quarter of its deadline (2.5 s by default): more than an honest one
     * needs even on a slow board with several at once (under qemu, eight
     * parallel handshakes took over a second each). */
    int max_threads = lim(srv->max_conns, 16) + 2 * lim(srv->max_unauth, 8);
    uint64_t hs_ms = (uint64_t)net_peer_conf_handshake_ms(srv->conf);
    uint64_t min_age_ms = hs_ms / 4;
    struct sync_slot *sl = NULL, *v = NULL;
    pthread_t th;
    int admit = -1;
    pthread_mutex_lock(&srv_mu);
    if (srv->active < max_threads && (admit = slot_admit(srv, aw->addr, now, min_age_ms, &v)) >= 0 &&
        (sl = calloc(1, sizeof *sl))) {
        if (v) {
            v->evicted = 1;
            net_peer_evict(v->p);
        }
        sl->srv = srv;
        sl->p = aw->p;
        sl->gen = aw->gen;
        sl->age = ++srv->n_accepted;
        sl->t0 = now;
        snprintf(sl->addr, sizeof sl->addr, "%s", aw->addr);
        sl->next = srv->slots;
        srv->slots = sl;
        srv->active++;
    }
    pthread_mutex_unlock(&srv_mu);
    if (admit < 0)
        return 0;
    if (sl && pthread_create(&th, attr, conn_main, sl) == 0)
        return 1;
    wait_drop(aw);
    if (sl) {
        pthread_mutex_lock(&srv_mu);
        for (struct sync_slot **pp = &srv->slots; *pp; pp = &(*pp)->next)
            if (*pp == sl) {
                *pp = sl->next;
                break;
            }
        srv->active--;
        pthread_mutex_unlock(&srv_mu);
        free(sl);
    }
    fprintf(srv->log ? srv->log : stderr, "kope serve: %s: refused: out of memory\n", aw->addr);
    return 1;
}

int sync_serve(struct sync_server *srv)
{
    /* Connections that find no handshake slot wait here, not in the accept
     * call, so that one address's flood does not hold up the next address;
     * the newest is admitted first (a flood's old connections are the ones
     * that should lose), and each gives up when its handshake time is spent. */
    struct admit_wait wait[SYNC_ADMIT_WAIT_MAX];
    int n_wait = 0;
    FILE *log = srv->log ? srv->log : stderr;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    srv->active = 0;
    srv->slots = NULL;
    memset(&srv->mem, 0, sizeof srv->mem);
    srv->mem.max = srv->mem_budget > 0 ? srv->mem_budget : SYNC_MEM_SERVER;
    srv->opts.pool = &srv->mem;
    if (!(srv->gen = calloc(1, sizeof *srv->gen)))
        return KOPE_ERR_NOMEM;
    srv->gen->conf = srv->conf; /* the caller's: not owned */
    srv->gen->trust = srv->opts.trust;
    srv->gen->refs = 1;
    while (!*srv->stop) {
        uint64_t now = util_now_ns() / 1000000u, hs_ms = (uint64_t)net_peer_conf_handshake_ms(srv->conf);
        for (int i = n_wait - 1; i >= 0; i--) {
            int gone = serve_admit(srv, &attr, &wait[i], now);
            if (!gone && hs_ms && now - wait[i].t0 >= hs_ms) {
                fprintf(log, "kope serve: %s: refused: no handshake slot free within the handshake deadline\n",
                        wait[i].addr);
                wait_drop(&wait[i]);
                gone = 1;
            }
            if (gone)
                memmove(&wait[i], &wait[i + 1], (size_t)(n_wait - i - 1) * sizeof wait[0]);
            n_wait -= gone;
        }
        struct admit_wait aw;
        int rc = net_peer_listener_wait(srv->listener, n_wait ? 5 : 200);
        if (srv->reload) /* between the connection's arrival and its accept: it gets the newest trust */
            serve_reload(srv, log);
        if (rc == NET_ERR_TIMEOUT)
            continue;
        aw.gen = srv->gen;
        if (!rc)
            rc = net_peer_accept(srv->listener, aw.gen->conf, 0, &aw.p, aw.addr, sizeof aw.addr);
        if (rc == NET_ERR_TIMEOUT)
            continue;
        if (rc) {
            fprintf(log, "kope serve: accept failed: %s\n", net_strerror(rc));
            usleep(100 * 1000);
            continue;
        }
        aw.t0 = util_now_ns() / 1000000u;
        pthread_mutex_lock(&srv_mu);
        aw.gen->refs++;
        pthread_mutex_unlock(&srv_mu);
        if (serve_admit(srv, &attr, &aw, aw.t0))
            continue;
        if (n_wait == SYNC_ADMIT_WAIT_MAX) {
            fprintf(log, "kope serve: %s: refused: too many connections waiting for a handshake slot\n", aw.addr);
            wait_drop(&aw);
            continue;
        }
        wait[n_wait++] = aw;
    }
    for (int i = 0; i < n_wait; i++)
        wait_drop(&wait[i]);
    pthread_mutex_lock(&srv_mu);
    while (srv->active > 0)
        pthread_cond_wait(&srv_cv, &srv_mu);
    gen_put(srv->gen);
    srv->gen = NULL;
    pthread_mutex_unlock(&srv_mu);
    pthread_attr_destroy(&attr);
    return 0;
}

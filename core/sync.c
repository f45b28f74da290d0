/*
 * core/sync.c - peer sync sessions and the server loop. See sync.h and
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
#include "core/graph.h"
#include "core/sync.h"
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
};

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
    int rc = net_peer_frame_read(s->p, &s->type, &s->buf, &s->cap, &s->len);
    if (rc == NET_ERR_FRAME_BIG)
        return fail(s, rc, "frame over the cap while waiting for %s (type %d, %zu bytes announced)",
                    waiting_for, s->type, s->len);
    if (rc == NET_ERR_FRAME)
        return fail(s, rc, "malformed frame while waiting for %s (type %d)", waiting_for, s->type);
    if (rc == NET_ERR_TIMEOUT)
        return fail(s, rc, "peer idle for too long while waiting for %s", waiting_for);
    if (rc)
        return fail(s, rc, "connection lost while waiting for %s: %s", waiting_for, net_strerror(rc));
    if (s->type == NET_SYNC_ERROR) {
        cJSON *j = cJSON_ParseWithLength((const char *)s->buf, s->len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        fail(s, NET_ERR_PEER, "peer gave up: %.200s", cJSON_IsString(e) ? e->valuestring : "(no reason)");
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
    s->st->peer_accepted = a;
    s->st->peer_rejected = r;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(e))
        for (size_t i = 0; e->valuestring[i] && i + 1 < sizeof s->st->peer_error; i++) {
            unsigned char ch = (unsigned char)e->valuestring[i]; /* a log line: printable ASCII only */
            s->st->peer_error[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
            s->st->peer_error[i + 1] = '\0';
        }
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

/* After the peer's delta: every origin its vector claims beyond ours should
 * now be here up to that seq. If not, it lied (or its records failed). */
static int check_claims(struct sess *s, const cJSON *peer_vec, const cJSON *our_vec)
{
    for (const cJSON *e = peer_vec->child; e; e = e->next) {
        uint8_t o[32];
        struct store_origin so;
        const cJSON *mine = cJSON_GetObjectItemCaseSensitive(our_vec, e->string);
        double had = cJSON_IsNumber(mine) ? mine->valuedouble : 0;
        if (e->valuedouble <= had || util_unhex(e->string, o, 32))
            continue;
        int rc = store_origin_get(s->g->st, o, &so);
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
                                   s->o->max_pending > 0 ? s->o->max_pending : SYNC_MAX_PENDING};
    int64_t lines = 0;
    cJSON *end = NULL, *done = NULL;
    int rc;
    if (!s->o->trust)
        return fail(s, KOPE_ERR_INTERNAL, "no fleet trust policy");
    if ((rc = graph_importer_begin(s->g, &io, &is, &im)))
        return fail(s, rc, "cannot start the import");
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
        if ((rc = graph_importer_feed_line(im, (const char *)s->buf, s->len))) {
            rc = fail(s, rc, "import stopped: %s (%s)", kope_strerror(rc), is.first_error);
            goto out;
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
    int irc = graph_importer_end(im);
    im = NULL;
    s->st->accepted = is.accepted;
    s->st->duplicates = is.duplicates;
    s->st->rejected = is.rejected;
    if (irc)
        fail(s, irc, "refused records: %s", is.first_error);
    if (!(done = cJSON_CreateObject()) || !cJSON_AddNumberToObject(done, "accepted", (double)is.accepted) ||
        !cJSON_AddNumberToObject(done, "duplicates", (double)is.duplicates) ||
        !cJSON_AddNumberToObject(done, "rejected", (double)is.rejected) ||
        !cJSON_AddStringToObject(done, "error", is.first_error)) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    if ((rc = send_json(s, NET_SYNC_DONE, done)) || (rc = net_peer_flush(s->p))) {
        fail(s, rc, "sending done: %s", net_strerror(rc));
        goto out;
    }
    rc = irc;
out:
    if (im) {
        s->st->accepted = is.accepted; /* committed runs stay */
        s->st->duplicates = is.duplicates;
        s->st->rejected = is.rejected;
        graph_importer_abort(im);
    }
    cJSON_Delete(end);
    cJSON_Delete(done);
    return rc;
}

/* ------------------------------------------------------------------ the session */

int sync_session(struct graph *g, struct net_peer *p, int is_client, const struct sync_opts *o,
                 struct sync_stats *st)
{
    struct sess s = {g, p, o, st, NULL, 0, 0, 0};
    cJSON *peer_vec = NULL, *our_vec = NULL;
    char *ours = NULL;
    int rc, import_rc = 0;
    memset(st, 0, sizeof *st);
    net_peer_name(p, st->peer, sizeof st->peer);
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
    if (is_client) {
        if ((rc = net_peer_frame_write(p, NET_SYNC_VECTOR, ours, strlen(ours))) || (rc = recv_vector(&s, &peer_vec)))
            goto out;
        if ((rc = send_delta(&s, peer_vec)) || (rc = recv_done(&s)))
            goto out;
        import_rc = recv_delta(&s);
        if ((rc = check_claims(&s, peer_vec, our_vec)))
            goto out;
    } else {
        if ((rc = recv_vector(&s, &peer_vec)) ||
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
    if (rc && rc != NET_ERR_CLOSED && rc != NET_ERR_RESET && rc != NET_ERR_TIMEOUT && rc <= -200 && rc > -300)
        send_error(&s, st->error[0] ? st->error : net_strerror(rc));
    net_peer_bytes(p, &st->bytes_sent, &st->bytes_received);
    free(s.buf);
    free(ours);
    cJSON_Delete(peer_vec);
    cJSON_Delete(our_vec);
    return rc;
}

/* ------------------------------------------------------------------ the server */

struct conn_job {
    struct sync_server *srv;
    struct net_peer *p;
    char addr[64];
};

static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv_cv = PTHREAD_COND_INITIALIZER;

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

static void *conn_main(void *arg)
{
    struct conn_job *job = arg;
    struct sync_server *srv = job->srv;
    struct sync_stats st;
    struct store *stp = NULL;
    struct graph g;
    char err[320];
    int rc;
    memset(&st, 0, sizeof st);
    graph_init(&g, NULL);
    err[0] = '\0';
    if ((rc = net_peer_handshake(job->p, err, sizeof err))) {
        snprintf(st.error, sizeof st.error, "%s", err);
        snprintf(st.peer, sizeof st.peer, "?");
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
    rc = sync_session(&g, job->p, 0, &srv->opts, &st);
out:
    log_session(srv, job->addr, rc, &st);
    if (srv->on_session)
        srv->on_session(srv->ctx, rc, &st);
    graph_free(&g);
    store_close(stp);
    if (rc)
        net_peer_abort(job->p);
    else
        net_peer_close(job->p);
    pthread_mutex_lock(&srv_mu);
    srv->active--;
    pthread_cond_broadcast(&srv_cv);
    pthread_mutex_unlock(&srv_mu);
    free(job);
    return NULL;
}

int sync_serve(struct sync_server *srv)
{
    int max = srv->max_conns > 0 ? srv->max_conns : 16;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    srv->active = 0;
    while (!*srv->stop) {
        struct net_peer *p = NULL;
        char addr[64];
        int rc = net_peer_accept(srv->listener, srv->conf, 200, &p, addr, sizeof addr);
        if (rc == NET_ERR_TIMEOUT)
            continue;
        if (rc) {
            fprintf(srv->log ? srv->log : stderr, "kope serve: accept failed: %s\n", net_strerror(rc));
            usleep(100 * 1000);
            continue;
        }
        pthread_mutex_lock(&srv_mu);
        int full = srv->active >= max;
        if (!full)
            srv->active++;
        pthread_mutex_unlock(&srv_mu);
        struct conn_job *job = full ? NULL : calloc(1, sizeof *job);
        pthread_t th;
        if (!job) {
            fprintf(srv->log ? srv->log : stderr, "kope serve: %s: refused: %s\n", addr,
                    full ? "too many sessions at once" : "out of memory");
            net_peer_abort(p);
            if (!full) {
                pthread_mutex_lock(&srv_mu);
                srv->active--;
                pthread_mutex_unlock(&srv_mu);
            }
            continue;
        }
        job->srv = srv;
        job->p = p;
        snprintf(job->addr, sizeof job->addr, "%s", addr);
        if (pthread_create(&th, &attr, conn_main, job) != 0) {
            net_peer_abort(p);
            free(job);
            pthread_mutex_lock(&srv_mu);
            srv->active--;
            pthread_mutex_unlock(&srv_mu);
        }
    }
    pthread_mutex_lock(&srv_mu);
    while (srv->active > 0)
        pthread_cond_wait(&srv_cv, &srv_mu);
    pthread_mutex_unlock(&srv_mu);
    pthread_attr_destroy(&attr);
    return 0;
}

/*
 * tests/sync_fixture.h - what the peer-sync tests share (tests/test_sync.c,
 * tests/test_revoke.c): a fleet CA and a rogue one, enrolled devices with a
 * store and some work, a server (sync_serve) in a thread with its log, and
 * an honest client session, all over real mutual TLS on loopback.
 *
 * Header-only (static functions) so each program includes it once; a
 * program need not use all of them.
 */
#ifndef KOPE_SYNC_FIXTURE_H
#define KOPE_SYNC_FIXTURE_H

#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "core/graph/sync.h"
#include "core/util.h"
#include "net/crypto.h"
#include "net/fleet.h"
#include "net/peer.h"
#include "net/sync_frame.h"
#include "store/store.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* ------------------------------------------------------------ PKI */

struct ca {
    char *key, *cert;
};
static struct ca fleet_ca, rogue_ca;

static void ca_make(struct ca *c, const char *name)
{
    assert_int_equal(net_fleet_ca_make(name, 30, &c->key, &c->cert), 0);
}

/* ------------------------------------------------------------ devices */

struct dev {
    char name[32];
    struct store *st;
    struct graph g;
    char *key_pem;
    char *cert_pem;     /* TLS certificate (NULL when not enrolled) */
    uint8_t task[32];
    int n_dec;
};

static char *slurp(const char *path)
{
    char *t = NULL, err[256];
    size_t len = 0;
    assert_int_equal(util_read_file(path, 1 << 20, &t, &len, err, sizeof err), 0);
    return t;
}

/* Issue a certificate for d's key from ca (validity NULL = now .. +30 days). */
static char *issue_for(struct dev *d, struct ca *ca, const char *nb, const char *na)
{
    uint8_t pub[NET_PUBKEY_MAX];
    size_t pub_len = 0;
    char *pem = NULL, err[256];
    assert_int_equal(net_key_public_der(d->g.key, pub, sizeof pub, &pub_len), 0);
    assert_int_equal(net_fleet_cert_issue(ca->key, ca->cert, pub, pub_len, d->name, 30, nb, na, &pem, err, sizeof err), 0);
    return pem;
}

static void cert_hex(const char *pem, char *hex)
{
    uint8_t der[NET_CERT_DER_MAX];
    size_t n = 0;
    assert_int_equal(net_cert_pem_parse(pem, der, &n, NULL, NULL, NULL, 0), 0);
    util_hex(der, n, hex);
}

/* A device with an identity; enrolled by ca (its checkpoints carry the cert) unless NULL. */
static void dev_make(struct dev *d, const char *name, const char *target, struct ca *ca)
{
    char err[256], hex[2 * NET_CERT_DER_MAX + 1];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    unlink(tpath("%s.db", name));
    unlink(tpath("%s.db-wal", name));
    unlink(tpath("%s.key", name));
    assert_int_equal(store_open(tpath("%s.db", name), &d->st, err, sizeof err), 0);
    graph_init(&d->g, d->st);
    assert_int_equal(graph_identity_create(&d->g, tpath("%s.key", name), target), 0);
    d->key_pem = slurp(tpath("%s.key", name));
    if (ca) {
        d->cert_pem = issue_for(d, ca, NULL, NULL);
        cert_hex(d->cert_pem, hex);
        assert_int_equal(graph_cert_set(&d->g, hex), 0);
    }
}

static void dev_free(struct dev *d)
{
    graph_free(&d->g);
    store_close(d->st);
    free(d->key_pem);
    free(d->cert_pem);
}

static cJSON *obj(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    return j;
}

/* n decisions (+ outcomes, every other with a source blob) under one task,
 * a checkpoint every ckpt_every records. */
static void dev_work(struct dev *d, const char *op, int n, int ckpt_every)
{
    char spec[256], body[256], ref[GRAPH_BLOB_REF];
    snprintf(spec, sizeof spec, "{\"name\":\"%s_%s\",\"op\":\"%s\",\"shape\":{\"n\":4096}}", op, d->name, op);
    cJSON *sp = obj(spec);
    assert_int_equal(graph_task_add(&d->g, d->g.seq ? "k3" : "k3", sp, d->task), 0);
    cJSON_Delete(sp);
    assert_int_equal(graph_begin(&d->g), 0);
    for (int i = 0; i < n; i++) {
        uint8_t dec[32];
        char src[128];
        snprintf(src, sizeof src, "/* %s %d */ void kope_kernel(void) {}", d->name, d->n_dec);
        assert_int_equal(graph_blob_put(&d->g, src, strlen(src), ref), 0);
        snprintf(body, sizeof body, "{\"tags\":[\"lmul%d\"],\"source\":\"%s\"}", 1 << (i % 4), ref);
        cJSON *b = obj(body);
        cJSON *o = obj(i % 3 ? "{\"status\":\"pass\",\"speedup\":1.5}" : "{\"status\":\"wrong_result\",\"reason\":\"tail\"}");
        assert_int_equal(graph_decision_add(&d->g, d->task, NULL, "k3", b, dec), 0);
        assert_int_equal(graph_outcome_add(&d->g, d->task, dec, "k3", o, NULL), 0);
        cJSON_Delete(b);
        cJSON_Delete(o);
        d->n_dec++;
        if (ckpt_every && (i + 1) % ckpt_every == 0)
            assert_int_equal(graph_checkpoint(&d->g), 0);
    }
    assert_int_equal(graph_commit(&d->g), 0);
    assert_int_equal(graph_checkpoint(&d->g), 0);
}

/* Every record id of a store, sorted, as one string. */
struct idset {
    struct store *st;
    char *s;
    size_t n, cap;
    int64_t count;
};

static int ids_rec(void *ctx, const struct store_rec *r)
{
    struct idset *x = ctx;
    if (x->n + 66 > x->cap) {
        x->cap = x->cap ? x->cap * 2 : 65536;
        x->s = realloc(x->s, x->cap);
    }
    util_hex(r->id, 32, x->s + x->n);
    x->n += 64;
    x->s[x->n++] = '\n';
    x->s[x->n] = 0;
    x->count++;
    return 0;
}

static int ids_origin(void *ctx, const struct store_origin *o)
{
    struct idset *x = ctx;
    return store_rec_query(x->st, STORE_Q_ORIGIN, o->origin, 0, ids_rec, x);
}

static int cmp_line(const void *a, const void *b)
{
    return memcmp(a, b, 65);
}

static char *idset(struct dev *d, int64_t *count)
{
    struct idset x = {d->st, NULL, 0, 0, 0};
    assert_int_equal(store_origin_each(d->st, ids_origin, &x), 0);
    if (!x.s)
        x.s = calloc(1, 1);
    qsort(x.s, x.n / 65, 65, cmp_line);
    if (count)
        *count = x.count;
    return x.s;
}

static int64_t n_records(struct dev *d)
{
    int64_t n = 0;
    free(idset(d, &n));
    return n;
}

static int64_t origin_seq(struct dev *holder, struct dev *of)
{
    struct store_origin o;
    return store_origin_get(holder->st, of->g.origin, &o) == 0 ? o.ckpt_seq : 0;
}

static void assert_same_records(struct dev *a, struct dev *b)
{
    char *x = idset(a, NULL), *y = idset(b, NULL);
    assert_string_equal(x, y);
    free(x);
    free(y);
}

/* ------------------------------------------------------------ server */

struct srv {
    struct dev *d;
    struct net_peer_conf *conf;
    struct net_trust *trust;
    struct net_peer_listener *l;
    struct sync_server s;
    volatile sig_atomic_t stop;
    pthread_t th;
    char port[16];
    pthread_mutex_t mu;
    int n_sessions, n_failed, last_rc;
    struct sync_stats last;
    FILE *log;
};

static void on_session(void *ctx, int rc, const struct sync_stats *st)
{
    struct srv *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->n_sessions++;
    s->n_failed += rc != 0;
    s->last_rc = rc;
    s->last = *st;
    pthread_mutex_unlock(&s->mu);
}

static void *srv_main(void *arg)
{
    sync_serve(&((struct srv *)arg)->s);
    return NULL;
}

static void srv_start(struct srv *s, struct dev *d, int timeout_ms)
{
    char err[320];
    int port = 0;
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->d = d;
    /* timeouts are native figures, scaled under emulation (tests/testutil.h) */
    assert_int_equal(net_peer_conf_new(1, fleet_ca.cert, d->cert_pem, d->key_pem, test_ms(timeout_ms), &s->conf, err, sizeof err), 0);
    struct net_peer_limits lim = {test_ms(NET_PEER_HANDSHAKE_MS), test_ms(NET_PEER_SESSION_MS), NET_PEER_MIN_RATE,
                                  test_ms(NET_PEER_RATE_GRACE_MS)};
    net_peer_conf_limits(s->conf, &lim); /* the defaults, scaled under emulation */
    assert_int_equal(net_trust_new(fleet_ca.cert, &s->trust, err, sizeof err), 0);
    assert_int_equal(net_peer_listen("127.0.0.1", "0", &s->l, &port, err, sizeof err), 0);
    snprintf(s->port, sizeof s->port, "%d", port);
    s->log = fopen(tpath("server-%s.log", d->name), "a");
    s->s.db_path = tpath("%s.db", d->name);
    s->s.db_path = strdup(s->s.db_path);
    s->s.conf = s->conf;
    s->s.listener = s->l;
    s->s.lock_wait_ms = test_ms(timeout_ms);
    s->s.opts.trust = s->trust;
    s->s.log = s->log;
    s->s.stop = &s->stop;
    s->s.on_session = on_session;
    s->s.ctx = s;
    assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s)
{
    s->stop = 1;
    pthread_join(s->th, NULL);
    net_peer_listener_close(s->l);
    net_peer_conf_free(s->conf);
    net_trust_free(s->trust);
    free((char *)s->s.db_path);
    fclose(s->log);
}

/* Wait until the server has finished n sessions in all: 60 s at most
 * (test_ms), a bound on a hang, not on speed (it returns at the event; 5 s
 * was within reach of a loaded machine's handshakes and teardown). */
static void srv_wait(struct srv *s, int n)
{
    for (int i = 0; i < test_ms(60000) / 5; i++) {
        pthread_mutex_lock(&s->mu);
        int k = s->n_sessions;
        pthread_mutex_unlock(&s->mu);
        if (k >= n)
            return;
        usleep(5000);
    }
    fail_msg("server finished %d sessions, expected %d", s->n_sessions, n);
}

/* The server log, for the "clear log line" checks. */
/* Whether the server log has text so far, saying nothing either way (for
 * "must not have" checks). */
static int srv_log_has_quiet(struct srv *s, const char *text)
{
    fflush(s->log);
    char *t = slurp(tpath("server-%s.log", s->d->name));
    int has = strstr(t, text) != NULL;
    if (has)
        fprintf(stderr, "server log has '%s':\n%s", text, t);
    free(t);
    return has;
}

static int srv_log_has(struct srv *s, const char *text)
{
    fflush(s->log);
    char *t = slurp(tpath("server-%s.log", s->d->name));
    int has = strstr(t, text) != NULL;
    if (!has)
        fprintf(stderr, "server log lacks '%s':\n%s", text, t);
    free(t);
    return has;
}

/* ------------------------------------------------------------ clients */

static struct net_peer_conf *client_conf(struct dev *d, const char *cert_pem, int timeout_ms)
{
    struct net_peer_conf *c = NULL;
    char err[320];
    assert_int_equal(net_peer_conf_new(0, fleet_ca.cert, cert_pem ? cert_pem : d->cert_pem, d->key_pem,
                                       test_ms(timeout_ms), &c, err, sizeof err), 0);
    struct net_peer_limits lim = {test_ms(NET_PEER_HANDSHAKE_MS), test_ms(NET_PEER_SESSION_MS), NET_PEER_MIN_RATE,
                                  test_ms(NET_PEER_RATE_GRACE_MS)};
    net_peer_conf_limits(c, &lim);
    return c;
}

/* An honest sync of d with the server. */
static int client_sync(struct dev *d, struct srv *s, struct sync_stats *st)
{
    struct net_peer_conf *c = client_conf(d, NULL, 5000);
    struct net_trust *t = NULL;
    struct net_peer *p = NULL;
    struct sync_opts o = {NULL, 0, NULL, 0, NULL};
    struct sync_stats tmp;
    char err[320];
    assert_int_equal(net_trust_new(fleet_ca.cert, &t, err, sizeof err), 0);
    o.trust = t;
    int rc = net_peer_connect(c, "127.0.0.1", s->port, &p, err, sizeof err);
    if (rc == 0) {
        rc = sync_session(&d->g, p, 1, &o, st ? st : &tmp);
        if (rc)
            net_peer_abort(p);
        else
            net_peer_close(p);
    }
    net_trust_free(t);
    net_peer_conf_free(c);
    return rc;
}

/* A raw client speaking frames by hand. */
struct raw {
    struct net_peer_conf *c;
    struct net_peer *p;
    uint8_t *buf;
    size_t cap, len;
    int type;
};

/* A raw connection whose reads give up after read_ms (scaled): only a
 * failure detector, so it must be well past anything the server is meant
 * to take before it answers. */
static void raw_open_wait(struct raw *r, struct dev *d, struct srv *s, int read_ms)
{
    char err[320];
    memset(r, 0, sizeof *r);
    r->c = client_conf(d, NULL, read_ms);
    assert_int_equal(net_peer_connect(r->c, "127.0.0.1", s->port, &r->p, err, sizeof err), 0);
}

static void raw_open(struct raw *r, struct dev *d, struct srv *s)
{
    raw_open_wait(r, d, s, 3000);
}

static void raw_close(struct raw *r, int abort_it)
{
    if (abort_it)
        net_peer_abort(r->p);
    else
        net_peer_close(r->p);
    net_peer_conf_free(r->c);
    free(r->buf);
}

static void raw_send(struct raw *r, int type, const char *text)
{
    assert_int_equal(net_peer_frame_write(r->p, type, text, strlen(text)), 0);
}

static int raw_read(struct raw *r)
{
    return net_peer_frame_read(r->p, &r->type, &r->buf, &r->cap, &r->len);
}

/* Hello and vectors: claim `vector`; returns after the server's vector. */
static void raw_hello(struct raw *r, const char *vector)
{
    raw_send(r, NET_SYNC_HELLO, "{\"min\":1,\"proto\":\"kope-sync\",\"v\":1}");
    assert_int_equal(raw_read(r), 0);
    assert_int_equal(r->type, NET_SYNC_HELLO);
    raw_send(r, NET_SYNC_VECTOR, vector);
    assert_int_equal(raw_read(r), 0);
    assert_int_equal(r->type, NET_SYNC_VECTOR);
}

/* ------------------------------------------------------------ limits */

/* The server's limits for connections from now on (ms, scaled by test_ms). */
static void srv_limits(struct srv *s, int handshake_ms, int session_ms, int min_rate, int grace_ms)
{
    /* 0: the default, scaled under emulation like every bound here */
    handshake_ms = handshake_ms ? handshake_ms : NET_PEER_HANDSHAKE_MS;
    session_ms = session_ms ? session_ms : NET_PEER_SESSION_MS;
    grace_ms = grace_ms ? grace_ms : NET_PEER_RATE_GRACE_MS;
    struct net_peer_limits l = {handshake_ms > 0 ? test_ms(handshake_ms) : handshake_ms,
                                session_ms > 0 ? test_ms(session_ms) : session_ms, min_rate,
                                grace_ms > 0 ? test_ms(grace_ms) : grace_ms};
    net_peer_conf_limits(s->conf, &l);
}

static int srv_sessions(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    int k = s->n_sessions;
    pthread_mutex_unlock(&s->mu);
    return k;
}

/* (The trickled HELLOs announce 4,000 bytes: at a byte per 50 ms the frame
 * never completes within a limit, even scaled 10x under emulation.)
 * Send bytes one at a time, every step_ms, until the server has finished
 * n sessions or max_ms pass; returns the seconds it took. Today's idle
 * timeout alone never ends such a peer: each byte resets it. */
static double trickle_until(struct srv *s, struct net_peer *p, int fd, const uint8_t *b, size_t n_bytes,
                            int n_sessions, int step_ms, int max_ms)
{
    uint64_t t0 = util_now_ns();
    for (size_t i = 0; srv_sessions(s) < n_sessions && util_now_ns() - t0 < (uint64_t)test_ms(max_ms) * 1000000u; i++) {
        if (p) {
            if (net_peer_write_raw(p, b + i % n_bytes, 1) || net_peer_flush(p))
                break;
        } else if (send(fd, b + i % n_bytes, 1, MSG_NOSIGNAL) != 1) {
            break;
        }
        /* the step scales with the deadlines (test_ms): unscaled, a 10x longer
         * deadline under qemu lets the cycled bytes complete a frame first */
        usleep((useconds_t)test_ms(step_ms) * 1000);
    }
    for (int i = 0; i < 200 && srv_sessions(s) < n_sessions; i++)
        usleep(10000);
    return (double)(util_now_ns() - t0) / 1e9;
}

/* ------------------------------------------------------------ setup */

/* cmocka group setup/teardown: the two CAs. */
static int setup_all(void **s)
{
    (void)s;
    signal(SIGPIPE, SIG_IGN);
    ca_make(&fleet_ca, "kope test fleet");
    ca_make(&rogue_ca, "kope rogue fleet");
    return 0;
}

static int teardown_all(void **s)
{
    (void)s;
    free(fleet_ca.key);
    free(fleet_ca.cert);
    free(rogue_ca.key);
    free(rogue_ca.cert);
    return 0;
}

#pragma GCC diagnostic pop

#endif /* KOPE_SYNC_FIXTURE_H */

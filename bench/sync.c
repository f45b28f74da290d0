/*
 * bench/sync.c - peer sync over loopback mutual TLS, against a named
 * baseline measured in the same run.
 *
 *   build/x86_64/bench/sync [N_INITIAL] [N_BIG] [DIR]   (default 100000 1000000 ./bench-sync)
 *
 * Prints:
 *   - initial sync of N_INITIAL records (decisions and outcomes, sources as
 *     shared blobs, a signed checkpoint every 1024, the device enrolled so
 *     every checkpoint carries its certificate) into an empty store, with
 *     all verification on (hash, chain, signature, certificate chain to the
 *     fleet CA), vs baseline "kope graph export | kope graph import" (the
 *     real binary, a shell pipe, same records, same hash/chain/signature
 *     checks, no TLS);
 *   - bytes on the wire per record (TLS payload, headers included);
 *   - incremental sync of 100 new records against an N_BIG-record store
 *     (the receiver a copy of the sender's file: cost must follow the delta);
 *   - hostile load (issue #16): the server in a child process (its own peak
 *     RSS, from wait4), 16 sessions of 8 enrolled members that each send a
 *     12 MiB line of [0,0,...] (about 500 MB if parsed) and then trickle a
 *     byte every 100 ms; an honest initial sync of the same records while
 *     they are open, against the same sync on the quiet server.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/graph/sync.h"
#include "core/util.h"
#include "net/crypto.h"
#include "net/fleet.h"
#include "net/neterr.h"
#include "net/peer.h"
#include "net/sync_frame.h"
#include "store/store.h"

#define POOL 1000
static char *ca_key, *ca_cert;
static const char *dir;

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench/sync: %s failed: %d (%s)\n", what, rc, kope_strerror(rc));
    exit(1);
}

static double secs(uint64_t a, uint64_t b) { return (double)(b - a) / 1e9; }

/* CPU seconds (user + system) of this process, or of its waited-for children. */
static double cpu(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static const char *path(const char *name)
{
    static char ring[8][4096];
    static int k;
    char *p = ring[k++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

struct dev {
    struct store *st;
    struct graph g;
    char *key_pem, *cert_pem;
    char db[4096];
};

static char *slurp(const char *p)
{
    char *t = NULL, err[256];
    size_t len = 0;
    if (util_read_file(p, 1 << 20, &t, &len, err, sizeof err))
        die(err, -1);
    return t;
}

static void dev_open(struct dev *d, const char *name, int fresh)
{
    char err[256], kp[4200], hex[2 * NET_CERT_DER_MAX + 1];
    memset(d, 0, sizeof *d);
    snprintf(d->db, sizeof d->db, "%s", path(name));
    snprintf(kp, sizeof kp, "%s.key", d->db);
    if (fresh) {
        unlink(d->db);
        unlink(kp);
        char w[4300];
        snprintf(w, sizeof w, "%s-wal", d->db);
        unlink(w);
    }
    int rc = store_open(d->db, &d->st, err, sizeof err);
    if (rc)
        die(err, rc);
    graph_init(&d->g, d->st);
    if (fresh && (rc = graph_identity_create(&d->g, kp, "k3")))
        die("identity", rc);
    if (!fresh && (rc = graph_identity_load(&d->g, kp)))
        die("identity load", rc);
    d->key_pem = slurp(kp);
    if (fresh) {
        uint8_t pub[NET_PUBKEY_MAX], der[NET_CERT_DER_MAX];
        size_t pl = 0, dl = 0;
        if ((rc = net_key_public_der(d->g.key, pub, sizeof pub, &pl)) ||
            (rc = net_fleet_cert_issue(ca_key, ca_cert, pub, pl, name, 30, NULL, NULL, &d->cert_pem, err, sizeof err)) ||
            (rc = net_cert_pem_parse(d->cert_pem, der, &dl, NULL, NULL, NULL, 0)))
            die("enroll", rc);
        util_hex(der, dl, hex);
        if ((rc = graph_cert_set(&d->g, hex)))
            die("cert set", rc);
        FILE *f = fopen(path("cert.pem"), "w");
        fputs(d->cert_pem, f);
        fclose(f);
    } else {
        d->cert_pem = slurp(path("cert.pem"));
    }
}

static void dev_close(struct dev *d)
{
    graph_free(&d->g);
    store_close(d->st);
    free(d->key_pem);
    free(d->cert_pem);
}

/* n records: decision + outcome pairs under tasks of 200 pairs. */
static void work(struct dev *d, int64_t n, int seed)
{
    static char refs[POOL][GRAPH_BLOB_REF];
    uint8_t task[32];
    int rc;
    { /* the shared sources, in this device's store (stored once each) */
        for (int i = 0; i < POOL; i++) {
            char src[2048];
            int k = snprintf(src, sizeof src, "/* kernel %d */\n", i);
            while (k < 1900)
                k += snprintf(src + k, sizeof src - (size_t)k, "vl = __riscv_vsetvl_e32m%d(n - i); /* %d */\n", 1 << (i % 4), k);
            if ((rc = graph_blob_put(&d->g, src, (size_t)k, refs[i])))
                die("blob", rc);
        }
    }
    if ((rc = graph_begin(&d->g)))
        die("begin", rc);
    int64_t made = 0;
    for (int t = 0; made < n; t++) {
        char spec[160];
        snprintf(spec, sizeof spec, "{\"name\":\"op%d_%d\",\"op\":\"silu\",\"shape\":{\"n\":%d}}", seed, t, 4096 + t);
        cJSON *sp = cJSON_Parse(spec);
        if ((rc = graph_task_add(&d->g, "k3", sp, task)))
            die("task", rc);
        cJSON_Delete(sp);
        made++;
        for (int i = 0; i < 200 && made + 2 <= n; i++) {
            uint8_t dec[32];
            cJSON *b = cJSON_CreateObject(), *o = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "rationale", "lmul sweep");
            cJSON_AddStringToObject(b, "source", refs[(t * 200 + i + seed) % POOL]);
            cJSON_AddStringToObject(o, "status", i % 3 ? "pass" : "wrong_result");
            cJSON_AddNumberToObject(o, "speedup", 1.0 + i * 0.01);
            if ((rc = graph_decision_add(&d->g, task, NULL, "k3", b, dec)) ||
                (rc = graph_outcome_add(&d->g, task, dec, "k3", o, NULL)))
                die("append", rc);
            cJSON_Delete(b);
            cJSON_Delete(o);
            made += 2;
            if (made % 10000 < 2) {
                if ((rc = graph_commit(&d->g)) || (rc = graph_begin(&d->g)))
                    die("commit", rc);
            }
        }
    }
    if ((rc = graph_commit(&d->g)) || (rc = graph_checkpoint(&d->g)))
        die("commit", rc);
}

/* ------------------------------------------------------------ a server */

struct srv {
    struct sync_server s;
    struct net_peer_conf *conf;
    struct net_trust *trust;
    struct net_peer_listener *l;
    volatile sig_atomic_t stop;
    pthread_t th;
    char port[16];
};

static void *srv_main(void *a)
{
    sync_serve(&((struct srv *)a)->s);
    return NULL;
}

static void srv_start(struct srv *s, struct dev *d)
{
    char err[320];
    int port = 0, rc;
    memset(s, 0, sizeof *s);
    if ((rc = net_peer_conf_new(1, ca_cert, d->cert_pem, d->key_pem, 30000, &s->conf, err, sizeof err)) ||
        (rc = net_trust_new(ca_cert, &s->trust, err, sizeof err)) ||
        (rc = net_peer_listen("127.0.0.1", "0", &s->l, &port, err, sizeof err)))
        die(err, rc);
    snprintf(s->port, sizeof s->port, "%d", port);
    s->s.db_path = d->db;
    s->s.conf = s->conf;
    s->s.listener = s->l;
    s->s.opts.trust = s->trust;
    s->s.log = fopen("/dev/null", "w");
    s->s.stop = &s->stop;
    pthread_create(&s->th, NULL, srv_main, s);
}

static void srv_stop(struct srv *s)
{
    s->stop = 1;
    pthread_join(s->th, NULL);
    fclose(s->s.log);
    net_peer_listener_close(s->l);
    net_peer_conf_free(s->conf);
    net_trust_free(s->trust);
}

/* d (client, its graph may lack a key) syncs with s; returns seconds. */
static double sync_with(struct dev *d, const char *key_pem, const char *cert_pem, struct srv *s,
                        struct sync_stats *st)
{
    struct net_peer_conf *c = NULL;
    struct net_trust *t = NULL;
    struct net_peer *p = NULL;
    char err[320];
    int rc;
    uint64_t t0 = util_now_ns();
    if ((rc = net_peer_conf_new(0, ca_cert, cert_pem, key_pem, 30000, &c, err, sizeof err)) ||
        (rc = net_trust_new(ca_cert, &t, err, sizeof err)) ||
        (rc = net_peer_connect(c, "127.0.0.1", s->port, &p, err, sizeof err)))
        die(err, rc);
    struct sync_opts o = {t, 0, NULL, 0, NULL};
    if ((rc = sync_session(&d->g, p, 1, &o, st)))
        die(st->error, rc);
    net_peer_close(p);
    double sec = secs(t0, util_now_ns());
    net_trust_free(t);
    net_peer_conf_free(c);
    return sec;
}

/* ------------------------------------------------------------ hostile load */

static volatile sig_atomic_t child_stop;
static void child_on_term(int sig)
{
    (void)sig;
    child_stop = 1;
}

struct child_srv {
    pid_t pid;
    char port[16];
    struct net_peer_listener *l; /* kept open here until the child ends: closing it shuts the socket down */
};

/* Serve d's store from a child process, so that its peak RSS is its own. */
static void child_srv_start(struct child_srv *cs, struct dev *d)
{
    char err[320];
    int port = 0, rc;
    struct net_peer_listener *l = NULL;
    if ((rc = net_peer_listen("127.0.0.1", "0", &l, &port, err, sizeof err)))
        die(err, rc);
    snprintf(cs->port, sizeof cs->port, "%d", port);
    fflush(stdout);
    if ((cs->pid = fork()) < 0)
        die("fork", -1);
    if (cs->pid == 0) {
        struct net_peer_conf *conf = NULL;
        struct net_trust *t = NULL;
        struct sync_server s;
        if (net_peer_conf_new(1, ca_cert, d->cert_pem, d->key_pem, 30000, &conf, err, sizeof err) ||
            net_trust_new(ca_cert, &t, err, sizeof err))
            _exit(3);
        signal(SIGTERM, child_on_term);
        memset(&s, 0, sizeof s);
        s.db_path = d->db;
        s.conf = conf;
        s.listener = l;
        s.opts.trust = t;
        s.max_conns = 32; /* 16 hostile enrolled sessions would fill the default 16 (see README) */
        s.max_auth_per_addr = 32; /* all of them, and the honest one, come from 127.0.0.1 */
        s.log = fopen(path("hostile-server.log"), "w");
        s.stop = &child_stop;
        sync_serve(&s);
        printf("  server memory budget: at most %.1f MiB reserved of %lld MiB\n", (double)s.mem.peak / 1048576.0,
               (long long)(s.mem.max >> 20));
        fflush(stdout);
        _exit(0);
    }
    cs->l = l;
}

/* Stop it; its peak RSS in KiB. */
static long child_srv_stop(struct child_srv *cs)
{
    struct rusage ru;
    int st = 0;
    kill(cs->pid, SIGTERM);
    if (wait4(cs->pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        die("server child", -1);
    net_peer_listener_close(cs->l);
    return ru.ru_maxrss;
}

static char *hostile_line;
static size_t hostile_len;

struct hostile {
    struct dev *d;
    const char *port;
    volatile int *stop;
    volatile int big_sent;
};

static void *hostile_main(void *a)
{
    struct hostile *h = a;
    struct net_peer_conf *c = NULL;
    struct net_peer *p = NULL;
    char err[320];
    uint8_t hdr[NET_SYNC_HDR];
    static const char hello[] = "{\"min\":1,\"proto\":\"kope-sync\",\"v\":1}";
    static const char head[] = "{\"format\":\"kope-graph\",\"v\":1}";
    if (net_peer_conf_new(0, ca_cert, h->d->cert_pem, h->d->key_pem, 30000, &c, err, sizeof err) ||
        net_peer_connect(c, "127.0.0.1", h->port, &p, err, sizeof err))
        goto out;
    if (net_peer_frame_write(p, NET_SYNC_HELLO, hello, strlen(hello)) || net_peer_frame_write(p, NET_SYNC_VECTOR, "{}", 2) ||
        net_peer_frame_write(p, NET_SYNC_LINE, head, strlen(head)) ||
        net_peer_frame_write(p, NET_SYNC_LINE, hostile_line, hostile_len) || net_peer_flush(p))
        goto out;
    h->big_sent = 1;
    /* then hold the session: a line of 1 MiB announced, a byte every 100 ms */
    net_sync_hdr_write(hdr, NET_SYNC_LINE, 1u << 20);
    if (net_peer_write_raw(p, hdr, sizeof hdr) || net_peer_write_raw(p, "{", 1) || net_peer_flush(p))
        goto out;
    while (!*h->stop && net_peer_write_raw(p, " ", 1) == 0 && net_peer_flush(p) == 0)
        usleep(100000);
out:
    h->big_sent = 1;
    if (p)
        net_peer_abort(p);
    net_peer_conf_free(c);
    return NULL;
}

static void hostile_load(struct dev *src, int64_t n_src)
{
    struct child_srv cs;
    struct dev legit, bad[8];
    struct hostile h[16];
    pthread_t th[16];
    volatile int stop = 0;
    struct sync_stats st;
    char name[64];
    hostile_len = 12u << 20;
    hostile_line = malloc(hostile_len + 1);
    memcpy(hostile_line, "{\"a\":[", 6);
    for (size_t i = 6; i + 3 < hostile_len; i += 2)
        memcpy(hostile_line + i, "0,", 2);
    memcpy(hostile_line + hostile_len - 3, "0]}", 4);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "hostile%d.db", i);
        dev_open(&bad[i], name, 1);
    }
    printf("hostile load: %lld records served from a child process; 16 sessions of 8 enrolled members, each a "
           "12 MiB line of [0,0,...] then a byte every 100 ms:\n", (long long)n_src);
    /* quiet: the honest sync alone */
    child_srv_start(&cs, src);
    dev_open(&legit, "legit-quiet.db", 1);
    struct srv fake; /* sync_with wants the port only */
    memset(&fake, 0, sizeof fake);
    snprintf(fake.port, sizeof fake.port, "%s", cs.port);
    double t_quiet = sync_with(&legit, legit.key_pem, legit.cert_pem, &fake, &st);
    dev_close(&legit);
    long rss_quiet = child_srv_stop(&cs);
    /* hostile */
    child_srv_start(&cs, src);
    snprintf(fake.port, sizeof fake.port, "%s", cs.port);
    for (int i = 0; i < 16; i++) {
        h[i].d = &bad[i / 2];
        h[i].port = cs.port;
        h[i].stop = &stop;
        h[i].big_sent = 0;
        pthread_create(&th[i], NULL, hostile_main, &h[i]);
    }
    for (int k = 0; k < 3000; k++) { /* until every hostile line is on its way (30 s at most) */
        int all = 1;
        for (int i = 0; i < 16; i++)
            all &= h[i].big_sent;
        if (all)
            break;
        usleep(10000);
    }
    dev_open(&legit, "legit-hostile.db", 1);
    double t_host = sync_with(&legit, legit.key_pem, legit.cert_pem, &fake, &st);
    int64_t got = st.accepted;
    dev_close(&legit);
    stop = 1;
    for (int i = 0; i < 16; i++)
        pthread_join(th[i], NULL);
    long rss_host = child_srv_stop(&cs);
    printf("  honest initial sync: %.2f s quiet, %.2f s with the 16 hostile sessions open (%.2fx), %lld records "
           "stored\n",
           t_quiet, t_host, t_host / t_quiet, (long long)got);
    printf("  server peak RSS: %.0f MiB quiet, %.0f MiB under hostile load\n", rss_quiet / 1024.0, rss_host / 1024.0);
    for (int i = 0; i < 8; i++)
        dev_close(&bad[i]);
    free(hostile_line);
}

static int64_t count(struct dev *d)
{
    struct store_stats s;
    store_stats_get(d->st, &s);
    return s.n_records;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000;
    int64_t big = argc > 2 ? atoll(argv[2]) : 1000000;
    dir = argc > 3 ? argv[3] : "bench-sync";
    const char *kope = getenv("KOPE_BIN") ? getenv("KOPE_BIN") : "build/x86_64/kope";
    char cmd[16384];
    int rc;
    signal(SIGPIPE, SIG_IGN);
    mkdir(dir, 0755);
    if ((rc = net_fleet_ca_make("bench fleet", 30, &ca_key, &ca_cert)))
        die("CA", rc);

    /* ---- initial sync: n records into an empty store */
    struct dev src, dst;
    dev_open(&src, "src.db", 1);
    uint64_t t0 = util_now_ns();
    work(&src, n - count(&src), 1);
    int64_t n_src = count(&src);
    printf("source: %lld records built in %.1f s\n", (long long)n_src, secs(t0, util_now_ns()));

    /* baseline: the real binary, export piped into import (no TLS, no fleet) */
    /* only `kope init` makes a store (its identity: 2 records of its own) */
    snprintf(cmd, sizeof cmd, "rm -f %s %s-wal %s-shm %s.key; %s --db %s init >/dev/null", path("pipe.db"), path("pipe.db"),
             path("pipe.db"), path("pipe.db"), kope, path("pipe.db"));
    if (system(cmd) != 0)
        die("baseline store", -1);
    snprintf(cmd, sizeof cmd, "%s --db %s graph export 2>/dev/null | %s --db %s graph import - >/dev/null", kope, src.db,
             kope, path("pipe.db"));
    t0 = util_now_ns();
    double c0 = cpu(RUSAGE_CHILDREN);
    if (system(cmd) != 0)
        die("baseline pipe", -1);
    double t_pipe = secs(t0, util_now_ns()), c_pipe = cpu(RUSAGE_CHILDREN) - c0;

    struct srv s;
    srv_start(&s, &src);
    dev_open(&dst, "dst.db", 1);
    struct sync_stats st;
    double c1 = cpu(RUSAGE_SELF);
    double t_sync = sync_with(&dst, dst.key_pem, dst.cert_pem, &s, &st);
    double c_sync = cpu(RUSAGE_SELF) - c1; /* both ends run in this process */
    srv_stop(&s);
    if (st.accepted != n_src || st.rejected)
        die("initial sync: not everything arrived", -1);
    printf("initial sync, %lld records into an empty store (all checks + fleet certificates):\n", (long long)n_src);
    printf("  kope sync over loopback mutual TLS 1.3:         %6.2f s wall %8.0f records/s, %5.2f s CPU (both ends)\n",
           t_sync, n_src / t_sync, c_sync);
    printf("  baseline kope graph export | kope graph import: %6.2f s wall %8.0f records/s, %5.2f s CPU (both ends)\n",
           t_pipe, n_src / t_pipe, c_pipe);
    printf("  ratio sync / pipe: %.2fx the wall time, %.2fx the CPU\n", t_sync / t_pipe, c_sync / c_pipe);
    printf("  bytes on the wire per record: %.0f (server -> client, TLS payload incl. blobs and frame headers)\n",
           (double)st.bytes_received / (double)n_src);
    dev_close(&dst);

    /* ---- cut at random points, resumed until complete */
    {
        struct dev res;
        char *va = NULL, *vb = NULL;
        int cuts = 0, sessions = 0;
        dev_open(&res, "resume.db", 1);
        srv_start(&s, &src);
        srand(7);
        t0 = util_now_ns();
        for (;;) {
            struct net_peer_conf *c = NULL;
            struct net_trust *t = NULL;
            struct net_peer *p = NULL;
            char err[320];
            if ((rc = net_peer_conf_new(0, ca_cert, res.cert_pem, res.key_pem, 30000, &c, err, sizeof err)) ||
                (rc = net_trust_new(ca_cert, &t, err, sizeof err)) ||
                (rc = net_peer_connect(c, "127.0.0.1", s.port, &p, err, sizeof err)))
                die(err, rc);
            sessions++;
            if (cuts < 5) /* within the first 8 MB of what is left of the ~53 MB */
                net_peer_fault_cut(p, 100000 + (uint64_t)(rand() % 8000000));
            struct sync_opts o = {t, 0, NULL, 0, NULL};
            rc = sync_session(&res.g, p, 1, &o, &st);
            if (rc)
                net_peer_abort(p);
            else
                net_peer_close(p);
            net_trust_free(t);
            net_peer_conf_free(c);
            if (!rc)
                break;
            if (rc != NET_ERR_RESET)
                die(st.error, rc);
            cuts++;
        }
        double t_res = secs(t0, util_now_ns());
        srv_stop(&s);
        graph_vector(&src.g, &va);
        graph_vector(&res.g, &vb);
        /* vectors name each chain's covered head; equal heads of hash-linked
         * chains mean equal record sets */
        cJSON *ja = cJSON_Parse(va), *jb = cJSON_Parse(vb);
        int same = ja && jb;
        for (const cJSON *e = ja ? ja->child : NULL; e; e = e->next) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(jb, e->string);
            same &= cJSON_IsNumber(o) && o->valuedouble == e->valuedouble;
        }
        cJSON_Delete(ja);
        cJSON_Delete(jb);
        printf("cut and resume: %d cuts at random points, %d sessions, %.2f s: %lld records here, %s\n", cuts,
               sessions, t_res, (long long)count(&res),
               same ? "every chain of the source identical here" : "MISMATCH");
        free(va);
        free(vb);
        dev_close(&res);
    }
    if (!getenv("BENCH_SYNC_NO_HOSTILE"))
        hostile_load(&src, n_src);
    dev_close(&src);

    /* ---- incremental: 100 new records against a big store */
    if (big > 0) {
        dev_open(&src, "big.db", 1);
        t0 = util_now_ns();
        work(&src, big - count(&src), 2);
        int64_t nb = count(&src);
        printf("big store: %lld records built in %.1f s\n", (long long)nb, secs(t0, util_now_ns()));
        dev_close(&src); /* closes the WAL into the main file */
        snprintf(cmd, sizeof cmd, "cp %s %s", path("big.db"), path("bigcopy.db"));
        if (system(cmd) != 0)
            die("copy", -1);
        dev_open(&src, "big.db", 0);
        work(&src, 100, 3);
        struct dev rcv;
        char err[256];
        memset(&rcv, 0, sizeof rcv);
        snprintf(rcv.db, sizeof rcv.db, "%s", path("bigcopy.db"));
        if ((rc = store_open(rcv.db, &rcv.st, err, sizeof err)))
            die(err, rc);
        graph_init(&rcv.g, rcv.st); /* a receiver without the sender's key */
        srv_start(&s, &src);
        double t_inc = sync_with(&rcv, src.key_pem, src.cert_pem, &s, &st);
        srv_stop(&s);
        printf("incremental sync, %lld new records against a %lld-record store: %.0f ms (%llu bytes in, %llu out)\n",
               (long long)st.accepted, (long long)nb, t_inc * 1000, (unsigned long long)st.bytes_received,
               (unsigned long long)st.bytes_sent);
        graph_free(&rcv.g);
        store_close(rcv.st);
        dev_close(&src);
    }
    free(ca_key);
    free(ca_cert);
    return 0;
}

/*
 * tests/test_revoke.c - revocation without trusted time (docs/SYNC.md
 * "Revocation"): a fleet CA's record saying "records of this origin after
 * seq N are not accepted", relayed like any record, verified by every peer
 * against its own trusted CAs, enforced at import and hidden from best,
 * retrieval's keys, export and sync vectors. Real stores, real TLS on
 * loopback (tests/sync_fixture.h); files between stores go through the same
 * importer peer sync uses, under the same fleet policy.
 */
#include "sync_fixture.h"

#include <signal.h>
#include <sys/wait.h>

#include "core/err.h"
#include "net/neterr.h"

/* The fleet policy over one CA set, as `kope graph import` and sync apply it. */
static int ship_with(struct dev *from, struct dev *to, const char *ca_pem, struct graph_import_stats *st)
{
    struct net_trust *t = NULL;
    char err[320];
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(net_trust_new(ca_pem, &t, err, sizeof err), 0);
    assert_int_equal(graph_export(&from->g, NULL, f, NULL), 0);
    rewind(f);
    struct graph_import_opts o = {sync_trust_check, t, 0, 0, sync_revoke_check, 0};
    int rc = graph_import_opts(&to->g, f, &o, st);
    fclose(f);
    net_trust_free(t);
    return rc;
}

static int ship(struct dev *from, struct dev *to, struct graph_import_stats *st)
{
    return ship_with(from, to, fleet_ca.cert, st);
}

/* A's revocation of d after seq n, signed by signer's key over signed_n
 * (a forgery when either differs from the truth). */
static int revoke_as(struct dev *a, struct dev *d, struct ca *signer, int64_t n, int64_t signed_n)
{
    uint8_t der[NET_CERT_DER_MAX], digest[32], sig[NET_SIG_MAX];
    size_t der_len = 0, sig_len = 0;
    char hex[2 * NET_CERT_DER_MAX + 1], sig_hex[2 * NET_SIG_MAX + 1];
    struct net_key *k = NULL;
    assert_int_equal(net_cert_pem_parse(d->cert_pem, der, &der_len, NULL, NULL, NULL, 0), 0);
    util_hex(der, der_len, hex);
    graph_revocation_digest(d->g.origin, signed_n, digest);
    assert_int_equal(net_key_load((const uint8_t *)signer->key, strlen(signer->key) + 1, &k), 0);
    assert_int_equal(net_key_sign(k, digest, sig, sizeof sig, &sig_len), 0);
    net_key_free(k);
    util_hex(sig, sig_len, sig_hex);
    return graph_revocation_add(&a->g, d->g.origin, n, hex, sig_hex, NULL);
}

static int64_t revoked_after(struct dev *holder, struct dev *of)
{
    struct store_revoked v;
    int rc = store_revoked_get(holder->st, of->g.origin, &v);
    return rc == STORE_ERR_NOTFOUND ? -1 : (assert_int_equal(rc, 0), v.after_seq);
}

/* One task of d's with a fast passing outcome (the best anyone has), so
 * hiding it is visible in best, retrieval's keys and export. */
static void dev_fast_task(struct dev *d, const char *op, uint8_t task[32])
{
    char spec[160];
    uint8_t dec[32];
    snprintf(spec, sizeof spec, "{\"name\":\"%s_%s\",\"op\":\"%s\",\"shape\":{\"n\":1024}}", op, d->name, op);
    cJSON *sp = obj(spec), *b = obj("{\"tags\":[\"fast\"]}"), *o = obj("{\"status\":\"pass\",\"speedup\":9.5}");
    assert_int_equal(graph_task_add(&d->g, "k3", sp, task), 0);
    assert_int_equal(graph_decision_add(&d->g, task, NULL, "k3", b, dec), 0);
    assert_int_equal(graph_outcome_add(&d->g, task, dec, "k3", o, NULL), 0);
    assert_int_equal(graph_checkpoint(&d->g), 0);
    cJSON_Delete(sp);
    cJSON_Delete(b);
    cJSON_Delete(o);
}

static int count_cb(void *ctx, const void *row)
{
    (void)row;
    ++*(int *)ctx;
    return 0;
}
static int task_key_cb(void *ctx, const struct store_task_key *k) { return count_cb(ctx, k); }
static int exp_key_cb(void *ctx, const struct store_exp_key *k) { return count_cb(ctx, k); }
static int rec_cb(void *ctx, const struct store_rec *r) { return count_cb(ctx, r); }

/* What retrieval, best and the task list see of a task of d's, in holder. */
static int visible(struct dev *holder, const uint8_t task[32], const char *op)
{
    struct graph_best b;
    int keys = 0, exps = 0, tasks = 0;
    int rc = graph_task_best(&holder->g, task, &b);
    if (rc != KOPE_ERR_NOTFOUND) /* a hidden task record: no such task */
        assert_int_equal(rc, 0);
    int found = !rc && b.found;
    if (!rc)
        graph_best_free(&b);
    assert_int_equal(store_task_keys(holder->st, op, 100, task_key_cb, &keys), 0);
    assert_int_equal(store_exp_keys(holder->st, task, STORE_EXP_BEST, 10, exp_key_cb, &exps), 0);
    assert_int_equal(store_rec_query(holder->st, STORE_Q_TASK, task, 0, rec_cb, &tasks), 0);
    /* all or nothing: one hidden, all hidden */
    assert_int_equal(!!found, !!keys);
    assert_int_equal(!!found, !!exps);
    assert_int_equal(!!found, !!tasks);
    return found;
}

/* The highest seq of d's that holder's export carries, and its vector's claim. */
static int64_t exported_max(struct dev *holder, struct dev *d, int64_t *vector)
{
    char hex[GRAPH_ID_HEX], key[80], line[1 << 16], *v = NULL;
    int64_t max = 0;
    util_hex(d->g.origin, 32, hex);
    snprintf(key, sizeof key, "\"origin\":\"%s\"", hex);
    FILE *f = tmpfile();
    assert_int_equal(graph_export(&holder->g, NULL, f, NULL), 0);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        char *s = strstr(line, key);
        if (s && (s = strstr(s, "\"seq\":")) && atoll(s + 6) > max)
            max = atoll(s + 6);
    }
    fclose(f);
    assert_int_equal(graph_vector(&holder->g, &v), 0);
    cJSON *j = obj(v);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, hex);
    *vector = cJSON_IsNumber(e) ? (int64_t)e->valuedouble : 0;
    cJSON_Delete(j);
    free(v);
    return max;
}

/* A revokes D; C learns it through B (sync); D's later records are refused
 * by B and C, and B refuses D's own sessions; what C already held after the
 * seq is hidden from best, retrieval's keys, export and C's vector; sync
 * with the hidden part stays consistent (no "lying vector"). */
static void test_relay_revocation(void **state)
{
    (void)state;
    struct dev a, b, c, d, e;
    struct srv sb;
    struct graph_import_stats st;
    struct sync_stats ss;
    uint8_t task_before[32], task_after[32], task_late[32];
    int64_t vec = 0;
    dev_make(&a, "rv_a", "k3", &fleet_ca);
    dev_make(&b, "rv_b", "k3", &fleet_ca);
    dev_make(&c, "rv_c", "k3", &fleet_ca);
    dev_make(&d, "rv_d", "k3", &fleet_ca);
    dev_make(&e, "rv_e", "k3", &fleet_ca);
    dev_fast_task(&d, "silu", task_before);
    const int64_t n = d.g.seq; /* a checkpoint: what stays D's */
    dev_fast_task(&d, "rmsnorm", task_after);
    const int64_t m = d.g.seq;
    assert_int_equal(ship(&d, &c, &st), 0); /* C holds D up to m */
    assert_int_equal(origin_seq(&c, &d), m);
    assert_true(visible(&c, task_after, "rmsnorm"));

    assert_int_equal(revoke_as(&a, &d, &fleet_ca, n, n), 0);
    assert_int_equal(revoked_after(&a, &d), n);
    srv_start(&sb, &b, 5000);
    assert_int_equal(client_sync(&a, &sb, &ss), 0); /* B learns it from A */
    srv_wait(&sb, 1);
    assert_int_equal(revoked_after(&b, &d), n);
    ss.error[0] = '\0';
    int rc = client_sync(&c, &sb, &ss); /* C learns it through B */
    srv_wait(&sb, 2);
    assert_int_equal(revoked_after(&c, &d), n);
    /* C's delta carried D after n: B refused it by the revocation (and
     * says so in its DONE); B's delta brought C the revocation */
    assert_int_equal(rc, 0);
    assert_true(ss.peer_rejected > 0);
    assert_non_null(strstr(ss.peer_error, "is revoked after seq"));
    assert_true(srv_log_has(&sb, "is revoked after seq"));
    assert_int_equal(origin_seq(&b, &d), n);

    /* stored before, hidden now: best, retrieval's keys, the task's records */
    assert_true(visible(&c, task_before, "silu"));
    assert_false(visible(&c, task_after, "rmsnorm"));
    assert_int_equal(exported_max(&c, &d, &vec), n);
    assert_int_equal(vec, n);

    /* D goes on: its later records are refused by C, and by B over sync */
    dev_fast_task(&d, "gelu", task_late);
    assert_int_equal(ship(&d, &c, &st), KOPE_ERR_REVOKED);
    assert_non_null(strstr(st.first_error, "is revoked after seq"));
    assert_true(st.rejected > 0);
    assert_int_equal(origin_seq(&c, &d), m);
    assert_false(visible(&c, task_late, "gelu"));
    /* ... and D itself is no sync peer of B's any more: B's ERROR frame
     * says why, nothing of D's session is stored */
    assert_int_equal(client_sync(&d, &sb, &ss), NET_ERR_PEER);
    srv_wait(&sb, 3);
    assert_non_null(strstr(ss.error, "peer gave up: "));
    assert_non_null(strstr(ss.error, " is revoked: revocation "));
    assert_int_equal(sb.last_rc, KOPE_ERR_REVOKED);
    assert_int_equal(ss.sent, 0);
    assert_int_equal(origin_seq(&b, &d), n);

    /* C and B agree now: a second sync is clean both ways, and a fresh
     * peer gets D up to n only, with nothing refused */
    assert_int_equal(client_sync(&c, &sb, &ss), 0);
    srv_wait(&sb, 4);
    assert_int_equal(client_sync(&e, &sb, &ss), 0);
    srv_wait(&sb, 5);
    assert_int_equal(origin_seq(&e, &d), n);
    assert_int_equal(revoked_after(&e, &d), n);
    assert_true(visible(&e, task_before, "silu"));
    srv_stop(&sb);
    dev_free(&a);
    dev_free(&b);
    dev_free(&c);
    dev_free(&d);
    dev_free(&e);
}

/* A revocation every peer must refuse: what it says is not what the CA
 * signed, it is signed by another fleet's CA (one B trusts too, with the
 * same name), or the origin is not certified by a CA B trusts. Each is
 * refused at import with the reason, is not in force, and the revoker's
 * chain stops at it (like any invalid record); D is still accepted. */
static void test_forged_revocation_refused(void **state)
{
    (void)state;
    struct ca twin;
    struct dev a, b, d, r;
    struct graph_import_stats st;
    char *both = NULL;
    uint8_t task[32];
    ca_make(&twin, "kope test fleet"); /* the same name as fleet_ca: a different key */
    assert_int_not_equal(asprintf(&both, "%s%s", fleet_ca.cert, twin.cert), -1);
    dev_make(&d, "fg_d", "k3", &fleet_ca);
    dev_make(&r, "fg_r", "k3", &rogue_ca);
    dev_fast_task(&d, "silu", task);
    struct {
        struct ca *signer;
        struct dev *victim;
        int64_t says, signed_n;
        const char *why;
    } cases[] = {
        {&fleet_ca, &d, 2, 5, "not signed by the CA that issued"},  /* body altered after signing */
        {&twin, &d, 2, 2, "not signed by the CA that issued"},      /* another trusted fleet's CA */
        {&rogue_ca, &d, 2, 2, "not signed by the CA that issued"},  /* an untrusted CA */
        {&rogue_ca, &r, 2, 2, "not issued by a trusted fleet CA"},  /* an origin no trusted CA certified */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "fg_a%zu", i);
        dev_make(&a, name, "k3", &fleet_ca);
        snprintf(name, sizeof name, "fg_b%zu", i);
        dev_make(&b, name, "k3", &fleet_ca);
        assert_int_equal(revoke_as(&a, cases[i].victim, cases[i].signer, cases[i].says, cases[i].signed_n), 0);
        assert_int_equal(ship_with(&a, &b, both, &st), KOPE_ERR_TRUST);
        if (!strstr(st.first_error, "revocation refused") || !strstr(st.first_error, cases[i].why))
            fail_msg("case %zu: %s", i, st.first_error);
        assert_int_equal(revoked_after(&b, cases[i].victim), -1);
        assert_true(origin_seq(&b, &a) < a.g.seq); /* A's chain stops before it */
        assert_int_equal(ship(&d, &b, &st), 0);     /* D's records still welcome */
        assert_int_equal(origin_seq(&b, &d), d.g.seq);
        assert_true(visible(&b, task, "silu"));
        dev_free(&a);
        dev_free(&b);
    }
    free(both);
    free(twin.key);
    free(twin.cert);
    dev_free(&d);
    dev_free(&r);
}

/* Revoking twice: the lowest seq wins, whatever order the revocations
 * arrive in (a later, higher seq cannot un-hide what a compromise may
 * have written, and a merge must not depend on arrival order). */
static void test_lowest_seq_wins(void **state)
{
    (void)state;
    struct dev a1, a2, b, c, d;
    struct graph_import_stats st;
    uint8_t t1[32], t2[32];
    dev_make(&a1, "lw_a1", "k3", &fleet_ca);
    dev_make(&a2, "lw_a2", "k3", &fleet_ca);
    dev_make(&b, "lw_b", "k3", &fleet_ca);
    dev_make(&c, "lw_c", "k3", &fleet_ca);
    dev_make(&d, "lw_d", "k3", &fleet_ca);
    dev_fast_task(&d, "silu", t1);
    const int64_t low = d.g.seq;
    dev_fast_task(&d, "gelu", t2);
    const int64_t high = d.g.seq;
    assert_int_equal(ship(&d, &b, &st), 0);
    assert_int_equal(ship(&d, &c, &st), 0);
    /* one device revokes high, then low: low is in force; high again: still low */
    assert_int_equal(revoke_as(&a1, &d, &fleet_ca, high, high), 0);
    assert_int_equal(revoked_after(&a1, &d), high);
    assert_int_equal(revoke_as(&a1, &d, &fleet_ca, low, low), 0);
    assert_int_equal(revoke_as(&a1, &d, &fleet_ca, high, high), 0);
    assert_int_equal(revoked_after(&a1, &d), low);
    /* two devices, opposite orders of arrival: the same result */
    assert_int_equal(revoke_as(&a2, &d, &fleet_ca, high, high), 0);
    assert_int_equal(ship(&a1, &b, &st), 0);
    assert_int_equal(ship(&a2, &b, &st), 0);
    assert_int_equal(ship(&a2, &c, &st), 0);
    assert_int_equal(revoked_after(&c, &d), high);
    assert_true(visible(&c, t2, "gelu"));
    assert_int_equal(ship(&a1, &c, &st), 0);
    assert_int_equal(revoked_after(&b, &d), low);
    assert_int_equal(revoked_after(&c, &d), low);
    assert_false(visible(&b, t2, "gelu"));
    assert_false(visible(&c, t2, "gelu"));
    assert_true(visible(&c, t1, "silu"));
    dev_free(&a1);
    dev_free(&a2);
    dev_free(&b);
    dev_free(&c);
    dev_free(&d);
}

/* `kope fleet revoke` end to end: by name, by certificate file, refused
 * with a CA that did not certify the device; `kope graph import` on a store
 * that trusts the fleet enforces it; `kope graph export` hides it. */
static void test_cli_revoke(void **state)
{
    (void)state;
    char out[8192], dir[4096];
    const char *k = kope_bin();
    snprintf(dir, sizeof dir, "%s", tpath("cli_revoke"));
    assert_int_equal(run_cmd(out, sizeof out, "rm -rf %s && mkdir -p %s", dir, dir), 0);
    int rc = run_cmd(out, sizeof out,
                     "cd %s && %s --db a.db init && %s --db d.db init && %s --db c.db init && "
                     "%s --db a.db fleet init && %s --db a.db fleet enroll ca-box && "
                     "%s --db d.db fleet enroll board-d && %s --db c.db fleet enroll board-c && "
                     "%s --db d.db graph export -o d1.jsonl && %s --db a.db graph import d1.jsonl && "
                     "%s --db c.db graph import d1.jsonl && %s --db other.db init && "
                     "%s --db other.db fleet init --dir other --name 'other fleet'",
                     dir, k, k, k, k, k, k, k, k, k, k, k, k);
    if (rc)
        fail_msg("setup: %s", out);
    /* another fleet's CA did not certify board-d: refused, nothing written */
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db a.db fleet revoke board-d --ca other", dir, k), 1);
    assert_non_null(strstr(out, "did not certify this device"));
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db a.db fleet revoke nobody", dir, k), 1);
    assert_non_null(strstr(out, "no enrolled device named 'nobody'"));
    /* by name (default: what a.db holds covered of it) and by file, lower */
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db a.db fleet revoke board-d", dir, k), 0);
    assert_non_null(strstr(out, "after seq 3 "));
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db a.db fleet revoke d.db.crt --after-seq 2", dir, k), 0);
    /* c.db learns it from a file; d's later records are then refused */
    rc = run_cmd(out, sizeof out,
                 "cd %s && %s --db a.db graph export -o a.jsonl && %s --db c.db graph import a.jsonl && "
                 "%s --db d.db fleet enroll board-d && %s --db d.db graph export -o d2.jsonl",
                 dir, k, k, k, k);
    if (rc)
        fail_msg("relay: %s", out);
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db c.db graph import d2.jsonl", dir, k), 1);
    assert_non_null(strstr(out, "is revoked after seq 2"));
    /* c.db's export carries d only up to its certificate-bearing checkpoint
     * at or before 2: none (its seq 2 checkpoint predates enrollment) */
    /* (a record's own origin is followed by its parents; a revocation's
     * body names the origin too, followed by its signature) */
    assert_int_equal(run_cmd(out, sizeof out,
                             "cd %s && %s --db c.db graph export 2>/dev/null | grep -c \"$(grep -o "
                             "'\"origin\":\"[0-9a-f]*\",\"parents\"' d1.jsonl | head -1)\"", dir, k), 1);
    assert_string_equal(out, "0\n");
}

/* `kope --db DB serve` on a free loopback port in dir, its log in
 * DB.serve.log; returns its pid once it listens (*port). */
static pid_t serve_db(const char *dir, const char *db, int *port)
{
    const char *k = kope_bin();
    char log[4200];
    snprintf(log, sizeof log, "%s/%s.serve.log", dir, db);
    unlink(log);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (chdir(dir) == 0 && freopen(log, "w", stderr))
            execl(k, k, "--db", db, "serve", "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    *port = 0;
    for (int i = 0; i < test_ms(10000) / 10 && !*port; i++) {
        usleep(10000);
        FILE *f = fopen(log, "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "listening on"))
                *port = atoi(strrchr(line, ':') + 1);
        if (f)
            fclose(f);
    }
    if (*port <= 0)
        kill(pid, SIGTERM);
    assert_true(*port > 0);
    return pid;
}

static void serve_stop(pid_t pid)
{
    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
}

/* Issue 23: the first sync after a revocation, as a user meets it with the
 * binary. E (holding the CA) revokes F after what E holds of it, while B
 * holds more of F. E's next sync with B is clean: B's vector claims F
 * beyond the revocation, which B's delta (capped once B learned the
 * revocation from E's) cannot bring, and that is no lie. F is told: every
 * peer that knows the revocation refuses F's sessions with an ERROR frame
 * naming it, and F's `kope sync` exits 1 saying so; E refuses F as a peer
 * too, with the reason, not a protocol break. */
static void test_cli_sync_after_revocation(void **state)
{
    (void)state;
    char out[8192], dir[4096];
    const char *k = kope_bin();
    int port;
    snprintf(dir, sizeof dir, "%s", tpath("cli_sync_revoke"));
    assert_int_equal(run_cmd(out, sizeof out, "rm -rf %s && mkdir -p %s", dir, dir), 0);
    int rc = run_cmd(out, sizeof out,
                     "cd %s && %s --db e.db init && %s --db f.db init && %s --db b.db init && "
                     "%s --db e.db fleet init && %s --db e.db fleet enroll e1 && %s --db f.db fleet enroll f1 && "
                     "%s --db b.db fleet enroll b1", dir, k, k, k, k, k, k, k);
    if (rc)
        fail_msg("setup: %s", out);
    /* F and E sync through B; then F records more (each enrollment signs a
     * checkpoint) and only B gets it */
    pid_t pid = serve_db(dir, "b.db", &port);
    int r1 = run_cmd(out, sizeof out, "cd %s && %s --db f.db sync 127.0.0.1:%d && %s --db e.db sync 127.0.0.1:%d && "
                     "%s --db f.db fleet enroll f1 && %s --db f.db fleet enroll f1 && %s --db f.db sync 127.0.0.1:%d",
                     dir, k, port, k, port, k, k, k, port);
    serve_stop(pid);
    if (r1)
        fail_msg("first syncs: %s", out);
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db e.db fleet revoke f1", dir, k), 0);
    assert_non_null(strstr(out, "after seq 3 "));
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db b.db graph vector | grep -o \"\\\"$(%s --db f.db "
                             "graph stats | awk '/^device/{print $2}')\\\":[0-9]*\"", dir, k, k), 0);
    assert_non_null(strstr(out, "\":5")); /* B holds F up to 5, beyond the revocation's 3 */

    /* E <-> B: clean, the revocation reaches B, F after 3 is hidden there */
    pid = serve_db(dir, "b.db", &port);
    char out_e[8192], out_f[8192];
    int re = run_cmd(out_e, sizeof out_e, "cd %s && %s --db e.db sync 127.0.0.1:%d", dir, k, port);
    int rf = run_cmd(out_f, sizeof out_f, "cd %s && %s --db f.db sync 127.0.0.1:%d", dir, k, port);
    serve_stop(pid);
    if (re)
        fail_msg("E's first sync after the revocation: %s", out_e);
    assert_null(strstr(out_e, "claimed origin"));
    /* F is refused by B, which learned the revocation from E */
    assert_int_equal(rf, 1);
    if (!strstr(out_f, "refused this device: device f1 (origin ") || !strstr(out_f, ") is revoked: revocation ") ||
        !strstr(out_f, "after seq 3") || !strstr(out_f, "hint: the fleet revoked this device"))
        fail_msg("F is not told it is revoked: %s", out_f);
    char *log = slurp(tpath("cli_sync_revoke/b.db.serve.log"));
    assert_non_null(strstr(log, "f1 (127.0.0.1): refused: device f1"));
    free(log);

    /* E with F serving: E refuses F, saying why */
    pid = serve_db(dir, "f.db", &port);
    re = run_cmd(out_e, sizeof out_e, "cd %s && %s --db e.db sync 127.0.0.1:%d", dir, k, port);
    serve_stop(pid);
    assert_int_equal(re, 1);
    assert_non_null(strstr(out_e, " is revoked: revocation "));
    assert_null(strstr(out_e, "broke the sync protocol"));
    assert_non_null(strstr(out_e, "hint: 127.0.0.1:"));
    log = slurp(tpath("cli_sync_revoke/f.db.serve.log"));
    assert_non_null(strstr(log, "peer gave up: device f1"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relay_revocation),
        cmocka_unit_test(test_forged_revocation_refused),
        cmocka_unit_test(test_lowest_seq_wins),
        cmocka_unit_test(test_cli_revoke),
        cmocka_unit_test(test_cli_sync_after_revocation),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}

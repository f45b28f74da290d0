/*
 * tests/test_multi.c - many devices, many processes, one graph (issue 23).
 *
 * Real kope processes on real SQLite files, real TLS on loopback for sync:
 *  - a run is its device's own: after `kope graph import` or `kope sync` of
 *    a peer's trials, `kope run --budget N` makes N new trials of this
 *    device, starting from the peer's best; --remeasure is honoured;
 *  - writers are serialized: our chain's next seq is read inside the write
 *    transaction (two graph handles on one file, then whole processes: a
 *    run stopped between two trials while a probe, an import, a sync
 *    server's session and a second run write), every process succeeds and
 *    the chain is intact (exported and imported again, nothing refused);
 *  - a second run of a live task is refused naming the live run's pid, a
 *    suite run skips that task and stays resumable, a killed run is resumed
 *    (its lock died with it);
 *  - a command waiting for another process's write says so after a second,
 *    naming that process.
 * Interleavings are made by stopping a process (SIGSTOP) at a point its own
 * output names, never by sleeping: nothing here depends on the machine's
 * speed (bounds are test_ms and generous).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "core/util.h"
#include "store/store.h"

static const char *SUITE =
    "{\"suite\":\"multi\",\"tasks\":["
    "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}},"
    "{\"name\":\"silu-a\",\"op\":\"silu\",\"dtype\":\"f32\",\"shape\":{\"n\":3000}}]}";

/* ------------------------------------------------------------ helpers */

/* A fresh folder DIR under the test's temp dir, holding the suite. */
static const char *fresh_dir(const char *name)
{
    static char dir[8][4096];
    static int k;
    char *d = dir[k++ % 8], out[512];
    snprintf(d, sizeof dir[0], "%s", tpath("%s", name));
    assert_int_equal(run_cmd(out, sizeof out, "rm -rf %s && mkdir -p %s/tmp", d, d), 0);
    char p[4200];
    snprintf(p, sizeof p, "%s/multi.json", d);
    test_write_text(p, SUITE);
    return d;
}

static char *slurp(const char *path)
{
    char *t = NULL, err[256];
    size_t n;
    if (util_read_file(path, 1 << 24, &t, &n, err, sizeof err))
        return strdup("");
    return t;
}

/* `kope ARGS` in dir, stdout and stderr to dir/log, TMPDIR dir/tmp (so the
 * work folders are this test's); returns the kope process's pid. */
static pid_t kope_spawn(const char *dir, const char *log, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static pid_t kope_spawn(const char *dir, const char *log, const char *fmt, ...)
{
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s/tmp exec %s %s > %s 2>&1", dir, dir, kope_bin(), args, log);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Exit code of a spawned process (128 + signal when killed). */
static int wait_rc(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait until the file holds text (1), or pid ended / the bound passed (0). */
static int wait_text(const char *path, const char *text, pid_t pid, int ms)
{
    for (int waited = 0; waited < test_ms(ms); waited += 20) {
        char *t = slurp(path);
        int found = strstr(t, text) != NULL;
        free(t);
        if (found)
            return 1;
        if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid)
            return 0;
        usleep(20000);
    }
    return 0;
}

/* The pid store/lock.c notes as the writer (bytes 0..7 of DB.lock). */
static long writer_noted(const char *db)
{
    char p[4200];
    uint8_t b[8] = {0};
    snprintf(p, sizeof p, "%s.lock", db);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, b, 8, 0);
    close(fd);
    uint64_t v = 0;
    for (int i = 0; n == 8 && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return (long)v;
}

/* Stop pid between two store writes: SIGSTOP, and if it stopped inside a
 * write transaction (it is the noted writer), let it go on and try again.
 * A stopped run then holds its run and task locks but no store lock. */
static void stop_between_writes(pid_t pid, const char *db)
{
    for (int i = 0; i < 1000; i++) {
        int st;
        assert_int_equal(kill(pid, SIGSTOP), 0);
        assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
        assert_true(WIFSTOPPED(st));
        if (writer_noted(db) != (long)pid)
            return;
        kill(pid, SIGCONT);
        usleep(5000);
    }
    fail_msg("pid %d never stopped outside a write", (int)pid);
}

static void resume(pid_t pid)
{
    assert_int_equal(kill(pid, SIGCONT), 0);
}

/* Counts over one task's tree in db: every decision, and this store's own
 * (origin = its device). first_parent_foreign: this device's first
 * decision refines another origin's decision (it started from a peer's best). */
struct counts {
    int total, mine, mine_outcomes, first_parent_foreign;
};

struct named {
    const char *name;
    uint8_t ids[8][32];
    int n;
};

static int named_cb(void *ctx, const struct store_rec *r)
{
    struct named *nm = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "body"), "name");
    if (cJSON_IsString(name) && strcmp(name->valuestring, nm->name) == 0 && nm->n < 8)
        memcpy(nm->ids[nm->n++], r->id, 32);
    cJSON_Delete(j);
    return 0;
}

/* (Every task record of that name: a peer that ran the same task has its
 * own task record, and its own tree, next to ours.) */
static void tree_counts(const char *db, const char *task, struct counts *c)
{
    struct store *st;
    struct graph g;
    struct graph_tree t;
    struct named nm = {task, {{0}}, 0};
    char err[512], *me = NULL;
    memset(c, 0, sizeof *c);
    assert_int_equal(store_open_mode(db, STORE_READONLY, &st, err, sizeof err), 0);
    assert_int_equal(store_meta_get(st, "device_origin", &me), 0);
    graph_init(&g, st);
    assert_int_equal(store_rec_query(st, STORE_Q_TASKS, NULL, 0, named_cb, &nm), 0);
    assert_true(nm.n >= 1);
    int first_trial = 1 << 30;
    for (int k = 0; k < nm.n; k++) {
        assert_int_equal(graph_tree_load(&g, nm.ids[k], &t), 0);
        for (size_t i = 0; i < t.n; i++) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "origin");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
            const cJSON *tr = cJSON_GetObjectItemCaseSensitive(b, "trial");
            c->total++;
            if (!cJSON_IsString(o) || strcmp(o->valuestring, me) != 0)
                continue;
            c->mine++;
            c->mine_outcomes += t.nodes[i].has_outcome;
            if (cJSON_IsNumber(tr) && tr->valueint < first_trial) {
                first_trial = tr->valueint;
                int p = t.nodes[i].parent;
                const cJSON *po = p >= 0 ? cJSON_GetObjectItemCaseSensitive(t.nodes[p].dec.json, "origin") : NULL;
                c->first_parent_foreign = cJSON_IsString(po) && strcmp(po->valuestring, me) != 0;
            }
        }
        graph_tree_free(&t);
    }
    graph_free(&g);
    free(me);
    store_close(st);
}

/* Records in db (graph stats), and the integrity check. */
static int64_t records_of(const char *db)
{
    struct store *st;
    struct store_stats s;
    char err[512];
    assert_int_equal(store_open_mode(db, STORE_READONLY, &st, err, sizeof err), 0);
    assert_int_equal(store_stats_get(st, &s), 0);
    assert_int_equal(store_integrity_check(st), 0);
    store_close(st);
    return s.n_records;
}

/* The chain and every record of db are intact: its export, imported into a
 * fresh store, is accepted whole (every hash, chain link and signature
 * checked again) and holds every record db holds. */
static void assert_chain_intact(const char *dir, const char *db)
{
    char out[8192], path[4200];
    /* the export signs our head first (a record more): count after it */
    int rc = run_cmd(out, sizeof out, "cd %s && rm -f check.db* && %s --db %s graph export -o check.jsonl",
                     dir, kope_bin(), db);
    if (rc)
        fail_msg("export of %s: %s", db, out);
    snprintf(path, sizeof path, "%s/%s", dir, db);
    int64_t n = records_of(path);
    rc = run_cmd(out, sizeof out, "cd %s && %s --db check.db init >/dev/null && %s --db check.db graph import check.jsonl",
                 dir, kope_bin(), kope_bin());
    if (rc)
        fail_msg("import of %s's export: %s", db, out);
    char want[128];
    snprintf(want, sizeof want, "imported %lld new record(s), 0 already present, 0 rejected", (long long)n);
    if (!strstr(out, want))
        fail_msg("%s holds %lld records; its export imported as: %s", db, (long long)n, out);
}

/* `kope --db DB serve` on a free loopback port in dir, its log in
 * DB.serve.log; returns its pid once it listens (*port). */
static pid_t serve_db(const char *dir, const char *db, int *port)
{
    char log[4200];
    snprintf(log, sizeof log, "%s/%s.serve.log", dir, db);
    unlink(log);
    pid_t pid = kope_spawn(dir, log, "--db %s serve --listen 127.0.0.1:0", db);
    *port = 0;
    for (int i = 0; i < test_ms(10000) / 10 && !*port; i++) {
        usleep(10000);
        char *t = slurp(log), *l = strstr(t, "listening on");
        if (l && strchr(l, '\n')) {
            char *colon = memchr(l, ':', (size_t)(strchr(l, '\n') - l));
            if (colon)
                *port = atoi(strrchr(colon, ':') + 1);
        }
        free(t);
    }
    if (*port <= 0)
        kill(pid, SIGTERM);
    assert_true(*port > 0);
    return pid;
}

static void serve_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    assert_int_equal(wait_rc(pid), 0);
}

#define K kope_bin()

/* ------------------------------------------------- a run is its device's */

/* B imports A's shard (A: one run of 2 trials, B's own first run will be
 * run 1 too), then `kope run --budget 3`: 3 new trials of B's, the first
 * refining A's best; then --remeasure --budget 1 measures once more. */
static void test_import_then_run(void **state)
{
    (void)state;
    char out[16384];
    struct counts c;
    const char *d = fresh_dir("import_run");
    int rc = run_cmd(out, sizeof out,
                     "cd %s && export TMPDIR=%s/tmp && %s --db a.db init && "
                     "%s --db a.db run --suite multi.json --task add-a --budget 2 --offline && "
                     "%s --db a.db graph export -o a.jsonl && %s --db b.db init && %s --db b.db graph import a.jsonl",
                     d, d, K, K, K, K, K);
    if (rc)
        fail_msg("setup: %s", out);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db b.db run --suite multi.json --task add-a --budget 3 --offline",
                 d, d, K);
    if (rc)
        fail_msg("kope run after the import: %s", out);
    assert_non_null(strstr(out, "trial 3/3"));
    assert_null(strstr(out, "resuming run"));
    tree_counts(tpath("import_run/b.db"), "add-a", &c);
    assert_int_equal(c.total, 5);
    assert_int_equal(c.mine, 3);        /* the budget: 3 new trials of this device */
    assert_int_equal(c.mine_outcomes, 3);
    assert_true(c.first_parent_foreign); /* it started from the imported best */
    rc = run_cmd(out, sizeof out,
                 "cd %s && TMPDIR=%s/tmp %s --db b.db run --suite multi.json --task add-a --budget 1 --offline --remeasure",
                 d, d, K);
    if (rc)
        fail_msg("kope run --remeasure after the import: %s", out);
    tree_counts(tpath("import_run/b.db"), "add-a", &c);
    assert_int_equal(c.mine, 4);
}

/* The same through `kope sync` with A's `kope serve`. */
static void test_sync_then_run(void **state)
{
    (void)state;
    char out[16384];
    struct counts c;
    int port;
    const char *d = fresh_dir("sync_run");
    int rc = run_cmd(out, sizeof out,
                     "cd %s && export TMPDIR=%s/tmp && %s --db a.db init && %s --db b.db init && "
                     "%s --db a.db fleet init && %s --db a.db fleet enroll host-a && %s --db b.db fleet enroll board-b && "
                     "%s --db a.db run --suite multi.json --task add-a --budget 2 --offline",
                     d, d, K, K, K, K, K, K);
    if (rc)
        fail_msg("setup: %s", out);
    pid_t srv = serve_db(d, "a.db", &port);
    rc = run_cmd(out, sizeof out, "cd %s && %s --db b.db sync 127.0.0.1:%d", d, K, port);
    serve_stop(srv);
    if (rc)
        fail_msg("kope sync: %s", out);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db b.db run --suite multi.json --task add-a --budget 3 --offline",
                 d, d, K);
    if (rc)
        fail_msg("kope run after the sync: %s", out);
    tree_counts(tpath("sync_run/b.db"), "add-a", &c);
    assert_true(c.total >= 5);
    assert_int_equal(c.mine, 3);
    assert_true(c.first_parent_foreign);
    rc = run_cmd(out, sizeof out,
                 "cd %s && TMPDIR=%s/tmp %s --db b.db run --suite multi.json --task add-a --budget 1 --offline --remeasure",
                 d, d, K);
    if (rc)
        fail_msg("kope run --remeasure after the sync: %s", out);
    tree_counts(tpath("sync_run/b.db"), "add-a", &c);
    assert_int_equal(c.mine, 4);
}

/* ------------------------------------------------- writers are serialized */

/* Two graph handles of one device on one file, as two processes would have
 * them: each append reads the chain head inside its own write transaction,
 * so interleaved appends (and checkpoints) never collide. */
static void test_head_read_in_transaction(void **state)
{
    (void)state;
    struct store *s1, *s2;
    struct graph g1, g2;
    char err[512];
    const char *db = tpath("two_handles.db"), *key = tpath("two_handles.db.key");
    unlink(db);
    unlink(key);
    assert_int_equal(store_open(db, &s1, err, sizeof err), 0);
    graph_init(&g1, s1);
    assert_int_equal(graph_identity_create(&g1, key, "k3"), 0);
    assert_int_equal(store_open(db, &s2, err, sizeof err), 0);
    graph_init(&g2, s2);
    assert_int_equal(graph_identity_load(&g2, key), 0);
    cJSON *spec = cJSON_Parse("{\"name\":\"t\",\"op\":\"add\",\"shape\":{\"n\":8}}");
    uint8_t id[32];
    for (int i = 0; i < 5; i++) {
        struct graph *g = i % 2 ? &g2 : &g1;
        cJSON_ReplaceItemInObject(spec, "name", cJSON_CreateNumber(i));
        if (graph_task_add(g, "k3", spec, id))
            fail_msg("append %d by handle %d: %s", i, i % 2 + 1, g->err);
        assert_int_equal(graph_checkpoint(i % 2 ? &g1 : &g2), 0);
    }
    cJSON_Delete(spec);
    assert_int_equal(g2.seq, g1.seq + 1); /* g1 last read the head before g2's checkpoint */
    graph_free(&g1);
    graph_free(&g2);
    store_close(s1);
    store_close(s2);
    char out[4096];
    int rc = run_cmd(out, sizeof out, "cd %s && rm -f th.jsonl && %s --db two_handles.db graph export -o th.jsonl && "
                     "%s --db th2.db init >/dev/null && %s --db th2.db graph import th.jsonl",
                     getenv("KOPE_TEST_TMP"), K, K, K);
    if (rc)
        fail_msg("the chain of two handles does not verify: %s", out);
    assert_non_null(strstr(out, "0 rejected"));
}

/* A run stopped between two trials while other writers use the store:
 * `kope probe` (our chain) and a second run on another task (2 writers),
 * then `kope graph import`, a `kope sync` into the store's `kope serve`
 * and a third run (4 at once). Every process succeeds, the stopped run
 * goes on and ends with its budget, and the chain is intact. */
static void test_concurrent_writers(void **state)
{
    (void)state;
    char out[16384], log[4200];
    int port;
    const char *d = fresh_dir("writers");
    int rc = run_cmd(out, sizeof out,
                     "cd %s && export TMPDIR=%s/tmp && %s --db s.db init && %s --db x.db init && %s --db p.db init && "
                     "%s --db s.db fleet init && %s --db s.db fleet enroll s1 && %s --db p.db fleet enroll p1 && "
                     "%s --db x.db fleet enroll x1 && %s --db x.db run --suite multi.json --task silu-a --budget 1 --offline && "
                     "%s --db x.db graph export -o x.jsonl && "
                     "%s --db p.db run --suite multi.json --task add-a --budget 1 --offline",
                     d, d, K, K, K, K, K, K, K, K, K, K);
    if (rc)
        fail_msg("setup: %s", out);
    char db[4200];
    snprintf(db, sizeof db, "%s/s.db", d);

    /* two writers: the run stopped after its first trial, a probe writes */
    snprintf(log, sizeof log, "%s/run1.log", d);
    pid_t run1 = kope_spawn(d, log, "--db s.db run --suite multi.json --task add-a --budget 3 --offline");
    if (!wait_text(log, "trial 1/3", run1, 120000))
        fail_msg("run 1 did not record its first trial: %s", slurp(log));
    stop_between_writes(run1, db);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db s.db probe", d, d, K);
    if (rc)
        fail_msg("kope probe while a run is live: %s", out);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db s.db run --suite multi.json --task silu-a --budget 1 --offline",
                 d, d, K);
    if (rc)
        fail_msg("a run on another task while a run is live: %s", out);

    /* four at once, run 1 still stopped */
    char l2[4200], l3[4200], l4[4200];
    snprintf(l2, sizeof l2, "%s/import.log", d);
    snprintf(l3, sizeof l3, "%s/sync.log", d);
    snprintf(l4, sizeof l4, "%s/run3.log", d);
    pid_t srv = serve_db(d, "s.db", &port);
    pid_t imp = kope_spawn(d, l2, "--db s.db graph import x.jsonl");
    pid_t syn = kope_spawn(d, l3, "--db p.db sync 127.0.0.1:%d", port);
    pid_t run3 = kope_spawn(d, l4, "--db s.db run --suite multi.json --task silu-a --budget 2 --offline");
    int rc_imp = wait_rc(imp), rc_syn = wait_rc(syn), rc_run3 = wait_rc(run3);
    resume(run1);
    int rc_run1 = wait_rc(run1);
    serve_stop(srv);
    if (rc_imp)
        fail_msg("kope graph import: %s", slurp(l2));
    if (rc_syn)
        fail_msg("kope sync into the store: %s", slurp(l3));
    if (rc_run3)
        fail_msg("the third run: %s", slurp(l4));
    if (rc_run1)
        fail_msg("the run stopped between trials failed once resumed: %s", slurp(log));
    struct counts c;
    tree_counts(db, "add-a", &c);
    assert_int_equal(c.mine, 3);
    assert_chain_intact(d, "s.db");
}

/* ------------------------------------------------- live runs, interrupted runs */

/* While a run of add-a is live (stopped between trials): a second run of
 * add-a is refused naming its pid, and writes nothing; a suite run skips
 * add-a and runs the rest, staying open; once the first ends, the suite
 * run resumes and finishes. A run killed outright is resumed: its lock
 * died with it. */
static void test_live_run_refused(void **state)
{
    (void)state;
    char out[16384], log[4200], db[4200], want[128];
    const char *d = fresh_dir("live");
    snprintf(db, sizeof db, "%s/s.db", d);
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && %s --db s.db init", d, K), 0);
    snprintf(log, sizeof log, "%s/run1.log", d);
    pid_t run1 = kope_spawn(d, log, "--db s.db run --suite multi.json --task add-a --budget 3 --offline");
    if (!wait_text(log, "trial 1/3", run1, 120000))
        fail_msg("run 1 did not record its first trial: %s", slurp(log));
    stop_between_writes(run1, db);
    int64_t before = records_of(db);
    int rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db s.db run --suite multi.json --task add-a --budget 3 --offline",
                     d, d, K);
    snprintf(want, sizeof want, "task add-a is being run by pid %d", (int)run1);
    int refused = rc == 1 && strstr(out, want) && strstr(out, "\nhint: ");
    int64_t after = records_of(db);
    rc = run_cmd(out + 8192, 8192, "cd %s && TMPDIR=%s/tmp %s --db s.db run --suite multi.json --budget 1 --offline",
                 d, d, K);
    resume(run1);
    int rc1 = wait_rc(run1);
    if (!refused)
        fail_msg("a second run of a live task was not refused: %s", out);
    assert_int_equal(after, before);     /* the refused run wrote nothing */
    assert_int_equal(rc, 1);             /* the suite run is not complete ... */
    snprintf(want, sizeof want, "add-a: skipped: task add-a is being run by pid %d", (int)run1);
    if (!strstr(out + 8192, want) || !strstr(out + 8192, "trial 1/1"))
        fail_msg("the suite run did not skip the live task and run the other: %s", out + 8192);
    assert_int_equal(rc1, 0);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db s.db run --suite multi.json --budget 1 --offline",
                 d, d, K);
    if (rc || !strstr(out, "resuming run") || !strstr(out, "(resumed)"))
        fail_msg("the suite run did not resume and finish: %s", out);

    /* killed outright: the next run resumes it */
    snprintf(log, sizeof log, "%s/run2.log", d);
    pid_t run2 = kope_spawn(d, log, "--db s.db run --suite multi.json --task silu-a --budget 3 --offline");
    if (!wait_text(log, "trial 1/3", run2, 120000))
        fail_msg("run 2 did not record its first trial: %s", slurp(log));
    kill(run2, SIGKILL);
    assert_int_equal(wait_rc(run2), 128 + SIGKILL);
    rc = run_cmd(out, sizeof out, "cd %s && TMPDIR=%s/tmp %s --db s.db run --suite multi.json --task silu-a --budget 3 --offline",
                 d, d, K);
    if (rc || !strstr(out, "resuming run"))
        fail_msg("a killed run was not resumed: %s", out);
    struct counts c;
    tree_counts(db, "silu-a", &c);
    assert_int_equal(c.mine, 4);         /* the suite run's 1, then 3 in the resumed run */
}

/* A command that waits for another process's write says so after a
 * second, naming it, and goes on once the write ends. */
static void test_wait_names_writer(void **state)
{
    (void)state;
    char out[8192], log[4200], want[128], err[512];
    const char *d = fresh_dir("wait");
    int rc = run_cmd(out, sizeof out, "cd %s && %s --db s.db init && %s --db x.db init && %s --db x.db graph export -o x.jsonl",
                     d, K, K, K);
    if (rc)
        fail_msg("setup: %s", out);
    struct store *st;
    char db[4200];
    snprintf(db, sizeof db, "%s/s.db", d);
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    assert_int_equal(store_begin(st), 0); /* this process holds the write lock */
    snprintf(log, sizeof log, "%s/import.log", d);
    pid_t imp = kope_spawn(d, log, "--db s.db graph import x.jsonl");
    snprintf(want, sizeof want, "kope: waiting for the store: pid %d is writing", (int)getpid());
    int told = wait_text(log, want, imp, 20000);
    store_rollback(st);
    store_close(st);
    rc = wait_rc(imp);
    if (!told)
        fail_msg("no word while waiting for the store: %s", slurp(log));
    if (rc)
        fail_msg("the import failed after waiting: %s", slurp(log));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_read_in_transaction),
        cmocka_unit_test(test_wait_names_writer),
        cmocka_unit_test(test_import_then_run),
        cmocka_unit_test(test_sync_then_run),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_live_run_refused),
    };
    return cmocka_run_group_tests_name("multi", tests, NULL, NULL);
}

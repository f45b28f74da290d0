/*
 * tests/test_crash.c - power cut and full disk during an import.
 *
 * A writer process importing a large shard is killed with SIGKILL at 20
 * random points of its work; after each kill the file must pass PRAGMA
 * integrity_check and hold each transaction (one checkpoint-covered run)
 * whole or not at all: the stored chain ends exactly at a checkpoint and
 * verifies. The next writer resumes where the last one died.
 *
 * The kill points are counted, not timed (a loaded machine must not move
 * them past the end of the import): this program's own pwrite64 stands in
 * for libc's (SQLite writes every page and WAL frame through it), counts
 * the writes of the importing child and, at the chosen one, stops the child
 * before the write: the parent kills it there. A dry run of the same
 * import on a copy of the same file counts its writes first, so every kill
 * point is inside the import by construction. Then the same
 * import runs against a store capped below the shard's size (SQLite reports
 * SQLITE_FULL, as a full disk does): it stops with a clear error and keeps
 * every run it committed.
 */
#include "testutil.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/util.h"
#include "net/crypto.h"
#include "store/store.h"

#define N_RUNS 24
#define RUN_LEN 300

static int64_t src_records;
static uint8_t src_origin[32];

/* ---- the write counter (the importing child's only) --------------------
 * SQLite's unix VFS writes through pwrite64 (its osPwrite64); defined
 * here, this program's definition is the one it calls. count_writes is set
 * in the child only; at write number stop_at the child says so on
 * stop_fd and waits to be killed, before the write is made. */
static int count_writes;
static long n_writes, stop_at;
static int stop_fd = -1;

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    if (count_writes && ++n_writes == stop_at) {
        char c = 'k';
        if (write(stop_fd, &c, 1) == 1)
            for (;;)
                pause(); /* the parent's SIGKILL ends it here */
        _exit(4);
    }
    return (ssize_t)syscall(SYS_pwrite64, fd, buf, n, off);
}

static void build_shard(void)
{
    struct store *st;
    struct graph g;
    char err[256], ref[GRAPH_BLOB_REF], text[8192];
    unlink(tpath("src.db"));
    unlink(tpath("src.key"));
    assert_int_equal(store_open(tpath("src.db"), &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_identity_create(&g, tpath("src.key"), "k3"), 0);
    memcpy(src_origin, g.origin, 32);
    uint8_t task[32], dec[32];
    cJSON *spec = cJSON_Parse("{\"name\":\"gemm\",\"op\":\"gemm\"}");
    assert_int_equal(graph_task_add(&g, "k3", spec, task), 0);
    cJSON_Delete(spec);
    for (int r = 0; r < N_RUNS; r++) {
        assert_int_equal(graph_begin(&g), 0);
        for (int i = 0; i < RUN_LEN / 2; i++) {
            int k = r * RUN_LEN + i;
            size_t len = 2048 + (size_t)(k % 7) * 800;
            for (size_t c = 0; c < len; c++)
                text[c] = (char)('a' + (c * 7 + (size_t)k) % 26);
            assert_int_equal(graph_blob_put(&g, text, len, ref), 0);
            cJSON *b = cJSON_CreateObject(), *o = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "source", ref);
            cJSON_AddNumberToObject(b, "i", k);
            cJSON_AddStringToObject(o, "status", "pass");
            cJSON_AddNumberToObject(o, "speedup", 1.0 + k / 1000.0);
            assert_int_equal(graph_decision_add(&g, task, NULL, "k3", b, dec), 0);
            assert_int_equal(graph_outcome_add(&g, task, dec, "k3", o, NULL), 0);
            cJSON_Delete(b);
            cJSON_Delete(o);
        }
        assert_int_equal(graph_checkpoint(&g), 0);
        assert_int_equal(graph_commit(&g), 0);
    }
    src_records = g.seq;
    FILE *f = fopen(tpath("src.jsonl"), "w");
    assert_int_equal(graph_export(&g, NULL, f, NULL), 0);
    fclose(f);
    graph_free(&g);
    store_close(st);
}

/* Child: import the shard into db and exit (0 = finished). */
static int import_child(const char *db)
{
    struct store *st;
    struct graph g;
    struct graph_import_stats s;
    char err[256];
    count_writes = 1;
    if (store_open(tpath("%s", db), &st, err, sizeof err))
        return 3;
    graph_init(&g, st);
    FILE *f = fopen(tpath("src.jsonl"), "r");
    int rc = graph_import(&g, f, &s);
    fclose(f);
    graph_free(&g);
    store_close(st);
    return rc ? 1 : 0;
}

struct walk {
    int64_t seq;
    uint8_t prev[32];
    char last_kind[16];
};

static int walk_cb(void *ctx, const struct store_rec *r)
{
    struct walk *w = ctx;
    uint8_t h[32];
    net_sha256(r->canon, r->canon_len, h);
    if (memcmp(h, r->id, 32) != 0 || r->seq != w->seq + 1 ||
        (r->seq > 1 && memcmp(r->prev, w->prev, 32) != 0))
        return -1;
    w->seq = r->seq;
    memcpy(w->prev, r->id, 32);
    snprintf(w->last_kind, sizeof w->last_kind, "%s", r->kind);
    return 0;
}

/* The writes an import into db makes from the state db is in now, counted
 * on a copy of it: the file, its WAL and its shared-memory index as a
 * killed writer left them (SQLite writes to extend an index it lacks, so a
 * copy without it would count more writes than the real file needs). */
static long writes_to_finish(const char *db)
{
    char cmd[4096], out[256];
    const char *d = getenv("KOPE_TEST_TMP");
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -f probe.db probe.db-wal probe.db-shm && "
             "{ test ! -e %s || cp %s probe.db; } && { test ! -e %s-wal || cp %s-wal probe.db-wal; } && "
             "{ test ! -e %s-shm || cp %s-shm probe.db-shm; }",
             d, db, db, db, db, db, db);
    assert_int_equal(run_cmd(out, sizeof out, "%s", cmd), 0);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        int rc = import_child("probe.db");
        if (write(fds[1], &n_writes, sizeof n_writes) != (ssize_t)sizeof n_writes)
            rc = 5;
        _exit(rc);
    }
    close(fds[1]);
    long n = 0;
    assert_int_equal(read(fds[0], &n, sizeof n), (ssize_t)sizeof n);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(n > 0);
    return n;
}

/* The store after a crash: intact file, chain whole up to a checkpoint. */
static int64_t check_store(void)
{
    struct store *st;
    char err[256];
    assert_int_equal(store_open(tpath("dst.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_integrity_check(st), 0);
    struct walk w;
    memset(&w, 0, sizeof w);
    assert_int_equal(store_rec_query(st, STORE_Q_ORIGIN, src_origin, 0, walk_cb, &w), 0);
    struct store_origin o;
    if (w.seq > 0) {
        assert_int_equal(store_origin_get(st, src_origin, &o), 0);
        assert_int_equal(o.head_seq, w.seq);
        assert_int_equal(o.ckpt_seq, w.seq);     /* all of each transaction ... */
        assert_string_equal(w.last_kind, "checkpoint"); /* ... or none */
    }
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, w.seq); /* no stray rows from a half transaction */
    store_close(st);
    return w.seq;
}

static void test_sigkill_during_import(void **s)
{
    (void)s;
    build_shard();
    unlink(tpath("dst.db"));
    unlink(tpath("dst.db-wal"));
    unlink(tpath("dst.db-shm"));
    /* the writes of one whole import into an empty file */
    long full = writes_to_finish("dst.db");
    print_message("a full import of %lld records makes %ld writes\n", (long long)src_records, full);

    unsigned seed = (unsigned)time(NULL);
    print_message("kill points from seed %u\n", seed);
    srand(seed);
    int killed_mid = 0;
    int64_t last = 0;
    for (int i = 0; i < 20; i++) {
        /* each writer starts on a fresh file, except every fourth, which
         * resumes on what the previous killed writer left */
        long left = full;
        if (i % 4 != 3) {
            unlink(tpath("dst.db"));
            unlink(tpath("dst.db-wal"));
            unlink(tpath("dst.db-shm"));
            last = 0;
        } else {
            left = writes_to_finish("dst.db");
        }
        /* any write of the import, the first and the last included */
        long at = 1 + (long)((unsigned long)rand() % (unsigned long)left);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            stop_at = at;
            stop_fd = fds[1];
            _exit(import_child("dst.db"));
        }
        close(fds[1]);
        char c = 0;
        ssize_t got = read(fds[0], &c, 1); /* 1: stopped at its write; 0: it ended first */
        close(fds[0]);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        if (got == 1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            killed_mid++;
        else
            fail_msg("writer %d was to stop at write %ld of %ld and did not (status %d)", i, at, left,
                     status);
        int64_t now = check_store();
        assert_true(now >= last); /* committed runs are never lost */
        last = now;
    }
    print_message("%d of 20 writers killed mid-import; %lld records held after the last kill\n",
                  killed_mid, (long long)last);
    assert_int_equal(killed_mid, 20);
    /* the next writer resumes and completes */
    pid_t pid = fork();
    if (pid == 0)
        _exit(import_child("dst.db"));
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(check_store(), src_records);
}

static void test_disk_full_during_import(void **s)
{
    (void)s;
    struct store *st;
    struct graph g;
    struct graph_import_stats ist;
    char err[256];
    if (!src_records)
        build_shard();
    unlink(tpath("full.db"));
    assert_int_equal(store_open(tpath("full.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_set_max_bytes(st, 3 * 1024 * 1024), 0);
    graph_init(&g, st);
    FILE *f = fopen(tpath("src.jsonl"), "r");
    assert_int_equal(graph_import(&g, f, &ist), STORE_ERR_FULL);
    fclose(f);
    assert_int_equal(store_integrity_check(st), 0);
    struct store_origin o;
    assert_int_equal(store_origin_get(st, src_origin, &o), 0);
    assert_true(o.head_seq > 0 && o.head_seq < src_records);
    assert_int_equal(o.ckpt_seq, o.head_seq); /* only whole runs */
    assert_int_equal(ist.accepted, o.head_seq);
    /* space freed: the same import finishes, nothing twice */
    assert_int_equal(store_set_max_bytes(st, 0), 0);
    f = fopen(tpath("src.jsonl"), "r");
    assert_int_equal(graph_import(&g, f, &ist), 0);
    fclose(f);
    assert_int_equal(ist.duplicates, o.head_seq);
    assert_int_equal(ist.accepted, src_records - o.head_seq);
    graph_free(&g);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_during_import),
        cmocka_unit_test(test_disk_full_during_import),
    };
    return cmocka_run_group_tests_name("crash", tests, NULL, NULL);
}

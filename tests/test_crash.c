/*
 * tests/test_crash.c - power cut and full disk during an import.
 *
 * A writer process importing a large shard is killed with SIGKILL at 20
 * random moments; after each kill the file must pass PRAGMA
 * integrity_check and hold each transaction (one checkpoint-covered run)
 * whole or not at all: the stored chain ends exactly at a checkpoint and
 * verifies. The next writer resumes where the last one died. Then the same
 * import runs against a store capped below the shard's size (SQLite reports
 * SQLITE_FULL, as a full disk does): it stops with a clear error and keeps
 * every run it committed.
 */
#include "testutil.h"

#include <signal.h>
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

/* Child: import the shard into dst.db and exit (0 = finished). */
static int import_child(void)
{
    struct store *st;
    struct graph g;
    struct graph_import_stats s;
    char err[256];
    if (store_open(tpath("dst.db"), &st, err, sizeof err))
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
    /* time one full import to spread the kills over it */
    uint64_t t0 = util_now_ns();
    pid_t pid = fork();
    if (pid == 0)
        _exit(import_child());
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t full_us = (util_now_ns() - t0) / 1000;
    assert_int_equal(check_store(), src_records);
    print_message("full import of %lld records: %.0f ms\n", (long long)src_records, full_us / 1000.0);

    srand((unsigned)time(NULL));
    int killed_mid = 0;
    int64_t last = 0;
    for (int i = 0; i < 20; i++) {
        /* each writer starts on a fresh file, except every fourth, which
         * resumes on what the previous killed writer left */
        if (i % 4 != 3) {
            unlink(tpath("dst.db"));
            unlink(tpath("dst.db-wal"));
            unlink(tpath("dst.db-shm"));
            last = 0;
        }
        pid = fork();
        if (pid == 0)
            _exit(import_child());
        useconds_t delay = (useconds_t)(full_us / 20 + (uint64_t)rand() % (full_us * 9 / 10 + 1));
        usleep(delay);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status))
            killed_mid++;
        int64_t now = check_store();
        assert_true(now >= last); /* committed runs are never lost */
        last = now;
    }
    print_message("%d of 20 writers killed mid-import; %lld records held after the last kill\n",
                  killed_mid, (long long)last);
    assert_true(killed_mid >= 10);
    /* the next writer resumes and completes */
    pid = fork();
    if (pid == 0)
        _exit(import_child());
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

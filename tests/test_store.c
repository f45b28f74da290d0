/*
 * tests/test_store.c - the SQLite store on real files: migrations (from an
 * empty file and from a version-1 file), refusal of newer/foreign files,
 * transactions all-or-nothing, blob dedup, disk-full behaviour.
 */
#include "testutil.h"

#include <sqlite3.h> /* only to build a version-1 file by hand */

#include "store/store.h"

static void rec_fill(struct store_rec *r, uint8_t origin_byte, int64_t seq, const char *kind)
{
    static uint8_t ids[64][32];
    memset(r, 0, sizeof *r);
    memset(r->origin, origin_byte, 32);
    memset(ids[seq % 64], 0, 32);
    ids[seq % 64][0] = origin_byte;
    ids[seq % 64][1] = (uint8_t)seq;
    memcpy(r->id, ids[seq % 64], 32);
    r->seq = seq;
    r->kind = kind;
    r->target = "k3";
    r->canon = "{}";
    r->canon_len = 2;
}

static void test_open_migrates_empty_file(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(tpath("empty.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, 0);
    assert_int_equal(store_integrity_check(st), 0);
    store_close(st);
    /* reopening a current file is a no-op */
    assert_int_equal(store_open(tpath("empty.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    store_close(st);
}

static void test_migrates_version1_file_with_data(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    const char *p = tpath("v1.db");
    assert_int_equal(store_open_at(p, 1, &st, err, sizeof err), 0);
    assert_int_equal(store_schema_version(st), 1);
    store_close(st);
    /* rows as a version-1 kope wrote them (no kind_counts table yet) */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
        "INSERT INTO origins(oid, origin) VALUES(1, x'01');"
        "INSERT INTO records(id, idk, oid, seq, kind, target, canon) VALUES"
        " (x'a1', 1, 1, 1, 'identity', 'k3', '{}'), (x'a2', 2, 1, 2, 'task', 'k3', '{}'),"
        " (x'a3', 3, 1, 3, 'task', 'k3', '{}');", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(p, &st, err, sizeof err), 0);
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, 3); /* backfilled by the 1 -> 2 migration */
    int tasks = 0;
    for (int i = 0; i < ss.n_kinds; i++)
        if (strcmp(ss.kinds[i].kind, "task") == 0)
            tasks = (int)ss.kinds[i].n;
    assert_int_equal(tasks, 2);
    store_close(st);
}

static void test_newer_file_refused(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    const char *p = tpath("newer.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(db);
    assert_int_equal(store_open(p, &st, err, sizeof err), STORE_ERR_VERSION);
    assert_non_null(strstr(err, "newer"));
}

static void test_not_a_database(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    const char *p = tpath("junk.db");
    FILE *f = fopen(p, "w");
    for (int i = 0; i < 2000; i++)
        fputs("this is not sqlite ", f);
    fclose(f);
    assert_int_not_equal(store_open(p, &st, err, sizeof err), 0);
    assert_non_null(strstr(err, "junk.db"));
}

static void test_transaction_all_or_nothing(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    struct store_rec r;
    assert_int_equal(store_open(tpath("tx.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_begin(st), 0);
    for (int i = 1; i <= 5; i++) {
        rec_fill(&r, 7, i, "task");
        assert_int_equal(store_rec_put(st, &r), 0);
    }
    store_rollback(st);
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, 0);
    assert_int_equal(ss.n_origins, 0);
    assert_int_equal(store_begin(st), 0);
    for (int i = 1; i <= 5; i++) {
        rec_fill(&r, 7, i, "task");
        assert_int_equal(store_rec_put(st, &r), 0);
    }
    assert_int_equal(store_commit(st), 0);
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, 5);
    /* same record again: a no-op; another id at the same (origin, seq): conflict */
    rec_fill(&r, 7, 3, "task");
    assert_int_equal(store_rec_put(st, &r), 1);
    r.id[5] = 0xee;
    assert_int_equal(store_rec_put(st, &r), STORE_ERR_CONFLICT);
    struct store_origin o;
    assert_int_equal(store_origin_get(st, r.origin, &o), 0);
    assert_int_equal(o.head_seq, 5);
    store_close(st);
}

static void test_blob_dedup(void **s)
{
    (void)s;
    struct store *st;
    char err[256], *d;
    size_t n;
    uint8_t h[32] = {1, 2, 3};
    assert_int_equal(store_open(tpath("blob.db"), &st, err, sizeof err), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(store_blob_put(st, h, "kernel source", 13), 0);
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_blobs, 1);
    assert_int_equal(ss.blob_bytes, 13);
    assert_int_equal(store_blob_get(st, h, &d, &n), 0);
    assert_int_equal(n, 13);
    assert_string_equal(d, "kernel source");
    free(d);
    h[0] = 9;
    assert_int_equal(store_blob_get(st, h, &d, &n), STORE_ERR_NOTFOUND);
    /* a record may not reference a blob that is not stored */
    struct store_rec r;
    rec_fill(&r, 1, 1, "task");
    uint8_t missing[1][32] = {{9, 9}};
    r.blobs = (const uint8_t(*)[32])missing;
    r.n_blobs = 1;
    assert_int_equal(store_begin(st), 0);
    assert_int_equal(store_rec_put(st, &r), STORE_ERR_NOTFOUND);
    store_rollback(st);
    store_close(st);
}

static void test_disk_full(void **s)
{
    (void)s;
    struct store *st;
    char err[256];
    struct store_rec r;
    static char big[4000];
    memset(big, 'x', sizeof big - 1);
    assert_int_equal(store_open(tpath("full.db"), &st, err, sizeof err), 0);
    assert_int_equal(store_begin(st), 0);
    rec_fill(&r, 3, 1, "task");
    assert_int_equal(store_rec_put(st, &r), 0);
    assert_int_equal(store_commit(st), 0);
    assert_int_equal(store_set_max_bytes(st, 200 * 1024), 0);
    int rc = store_begin(st);
    assert_int_equal(rc, 0);
    for (int i = 0; i < 200 && rc == 0; i++) {
        uint8_t h[32] = {(uint8_t)i, 0xbb};
        rc = store_blob_put(st, h, big, sizeof big);
    }
    assert_int_equal(rc, STORE_ERR_FULL);
    store_rollback(st);
    assert_int_equal(store_integrity_check(st), 0);
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    assert_int_equal(ss.n_records, 1); /* the committed record survived */
    assert_int_equal(ss.n_blobs, 0);   /* nothing of the failed transaction */
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_migrates_empty_file),
        cmocka_unit_test(test_migrates_version1_file_with_data),
        cmocka_unit_test(test_newer_file_refused),
        cmocka_unit_test(test_not_a_database),
        cmocka_unit_test(test_transaction_all_or_nothing),
        cmocka_unit_test(test_blob_dedup),
        cmocka_unit_test(test_disk_full),
    };
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}

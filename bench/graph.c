/*
 * bench/graph.c - the experience graph at scale, against named baselines
 * measured in the same run.
 *
 *   build/x86_64/bench/graph [N_RECORDS] [DIR]     (default 1000000, ./bench-out)
 *
 * Builds an N-record graph shaped like kope's real use: tasks, each with a
 * tree of decisions and their outcomes; every decision carries a 2-8 KB
 * kernel source, drawn from a pool so that many are shared (as when the
 * tuner revisits a variant). Prints:
 *   - insert rate: kope (canonical JSON + SHA-256 + chain + signed
 *     checkpoint every 1024 + indexes) vs baseline "plain SQLite inserts of
 *     the same rows without hashing" (one table, same transaction size);
 *   - bytes per record: kope's file vs baseline "sources stored inline";
 *   - `kope graph stats` latency (the real binary, fork+exec) vs baseline
 *     "SELECT count(*) FROM records" on the same file;
 *   - export and import rates vs baseline "plain SELECT of the rows to a
 *     file" and the plain-insert rate above.
 * The raw SQLite baseline is the one place outside store/ that includes
 * sqlite3.h: it must bypass kope to be a baseline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <sqlite3.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/util.h"
#include "store/store.h"

#define POOL 4000          /* distinct kernel sources */
#define PAIRS_PER_TASK 200 /* decision + outcome pairs per task */
static int TX = 10000;     /* records per transaction, both sides ($BENCH_TX) */

static char *pool_text[POOL];
static size_t pool_len[POOL];
static char pool_ref[POOL][GRAPH_BLOB_REF];

static double secs(uint64_t a, uint64_t b) { return (double)(b - a) / 1e9; }

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench/graph: %s failed: %d (%s)\n", what, rc, kope_strerror(rc));
    exit(1);
}

static long long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : 0;
}

/* Deterministic pseudo-random numbers (xorshift) so runs are comparable. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void make_pool(void)
{
    static const char *lines[] = {
        "    vfloat32m4_t va = __riscv_vle32_v_f32m4(x + i, vl);\n",
        "    vfloat32m4_t vb = __riscv_vle32_v_f32m4(y + i, vl);\n",
        "    acc = __riscv_vfmacc_vv_f32m4(acc, va, vb, vl);\n",
        "    __riscv_vse32_v_f32m4(out + i, __riscv_vfadd_vv_f32m4(va, vb, vl), vl);\n",
        "  for (size_t i = 0; i < n; i += vl) { vl = __riscv_vsetvl_e32m4(n - i);\n",
        "  }\n",
    };
    for (int p = 0; p < POOL; p++) {
        size_t want = 2048 + next() % 6144, len = 0;
        char *t = malloc(want + 256);
        len += (size_t)sprintf(t, "/* variant %d */\n#include <riscv_vector.h>\nvoid kope_kernel(void) {\n", p);
        while (len < want) {
            const char *l = lines[next() % 6];
            size_t n = strlen(l);
            memcpy(t + len, l, n);
            len += n;
        }
        t[len] = '\0';
        pool_text[p] = t;
        pool_len[p] = len;
    }
}

/* The kope side: returns the number of records written and the total source
 * bytes the decisions referenced (what inline storage would cost). */
static int64_t build_kope(struct graph *g, int64_t n, long long *inline_bytes, double *t_insert)
{
    uint8_t task[32], dec[32], prev_dec[32];
    int64_t written = g->seq, t_count = 0;
    uint64_t t0 = util_now_ns();
    int rc = graph_begin(g);
    if (rc)
        die("begin", rc);
    /* pool blobs are written as decisions first use them (inside the timing) */
    static char used[POOL];
    while (written < n) {
        cJSON *spec = cJSON_CreateObject();
        char name[32];
        snprintf(name, sizeof name, "task_%lld", (long long)t_count++);
        cJSON_AddStringToObject(spec, "name", name);
        cJSON_AddStringToObject(spec, "op", "gemm");
        cJSON *shape = cJSON_AddObjectToObject(spec, "shape");
        cJSON_AddNumberToObject(shape, "m", 1 + (double)(next() % 4096));
        cJSON_AddNumberToObject(shape, "n", 1 + (double)(next() % 4096));
        cJSON_AddNumberToObject(shape, "k", 1 + (double)(next() % 4096));
        if ((rc = graph_task_add(g, "k3", spec, task)))
            die("task", rc);
        cJSON_Delete(spec);
        int have_prev = 0;
        for (int i = 0; i < PAIRS_PER_TASK && g->seq < n; i++) {
            int p = (int)(next() % POOL);
            if (!used[p]) {
                if ((rc = graph_blob_put(g, pool_text[p], pool_len[p], pool_ref[p])))
                    die("blob", rc);
                used[p] = 1;
            }
            *inline_bytes += (long long)pool_len[p];
            cJSON *b = cJSON_CreateObject();
            cJSON *tags = cJSON_AddArrayToObject(b, "tags");
            cJSON_AddItemToArray(tags, cJSON_CreateString(i % 2 ? "lmul4" : "unroll2"));
            cJSON_AddItemToArray(tags, cJSON_CreateString("tail-mask"));
            cJSON_AddStringToObject(b, "rationale", "widen LMUL to hide load latency; keep the tail in one masked pass");
            cJSON_AddStringToObject(b, "proposer", i % 3 ? "llm" : "tuner");
            cJSON_AddStringToObject(b, "source", pool_ref[p]);
            if ((rc = graph_decision_add(g, task, have_prev && next() % 3 ? prev_dec : NULL, "k3", b, dec)))
                die("decision", rc);
            cJSON_Delete(b);
            cJSON *o = cJSON_CreateObject();
            int pass = next() % 4 != 0;
            cJSON_AddStringToObject(o, "status", pass ? "pass" : "wrong_result");
            if (pass) {
                cJSON_AddNumberToObject(o, "speedup", 0.5 + (double)(next() % 3000) / 1000.0);
                cJSON_AddStringToObject(o, "baseline", "scalar");
                cJSON_AddNumberToObject(o, "median_ns", (double)(next() % 10000000));
            } else {
                cJSON_AddStringToObject(o, "reason", "max rel err 3.1e-2 at n=33 (tail)");
            }
            cJSON_AddBoolToObject(o, "emulated", 1);
            if ((rc = graph_outcome_add(g, task, dec, "k3", o, NULL)))
                die("outcome", rc);
            cJSON_Delete(o);
            memcpy(prev_dec, dec, 32);
            have_prev = 1;
        }
        if (g->seq - written >= TX) {
            if ((rc = graph_commit(g)) || (rc = graph_begin(g)))
                die("commit", rc);
            written = g->seq;
            if (written % 100000 < TX + 2 * PAIRS_PER_TASK)
                fprintf(stderr, "  ... %lld records\n", (long long)written);
        }
    }
    if ((rc = graph_checkpoint(g)) || (rc = graph_commit(g)))
        die("final commit", rc);
    *t_insert = secs(t0, util_now_ns());
    return g->seq;
}

/* Baseline: the same record texts into one plain table, no hashing, no
 * chain, no indexes but the rowid, same transaction size. */
static double baseline_insert(const char *kope_db, const char *path, int64_t *rows)
{
    sqlite3 *src, *dst;
    sqlite3_stmt *sel, *ins;
    unlink(path);
    sqlite3_open(kope_db, &src);
    sqlite3_open(path, &dst);
    sqlite3_exec(dst, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                      "CREATE TABLE records(rid INTEGER PRIMARY KEY, kind TEXT, body TEXT);", 0, 0, 0);
    /* Read everything first so only the inserts are timed. */
    sqlite3_prepare_v2(src, "SELECT kind, canon FROM records ORDER BY rid", -1, &sel, 0);
    size_t cap = 1 << 20, n = 0;
    char **kinds = malloc(cap * sizeof *kinds), **bodies = malloc(cap * sizeof *bodies);
    while (sqlite3_step(sel) == SQLITE_ROW) {
        if (n == cap) {
            cap *= 2;
            kinds = realloc(kinds, cap * sizeof *kinds);
            bodies = realloc(bodies, cap * sizeof *bodies);
        }
        kinds[n] = strdup((const char *)sqlite3_column_text(sel, 0));
        bodies[n++] = strdup((const char *)sqlite3_column_text(sel, 1));
    }
    sqlite3_finalize(sel);
    sqlite3_close(src);
    sqlite3_prepare_v2(dst, "INSERT INTO records(kind, body) VALUES(?1, ?2)", -1, &ins, 0);
    uint64_t t0 = util_now_ns();
    sqlite3_exec(dst, "BEGIN", 0, 0, 0);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_text(ins, 1, kinds[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, bodies[i], -1, SQLITE_STATIC);
        sqlite3_step(ins);
        sqlite3_reset(ins);
        if ((i + 1) % TX == 0) {
            sqlite3_exec(dst, "COMMIT", 0, 0, 0);
            sqlite3_exec(dst, "BEGIN", 0, 0, 0);
        }
    }
    sqlite3_exec(dst, "COMMIT", 0, 0, 0);
    double t = secs(t0, util_now_ns());
    sqlite3_finalize(ins);
    sqlite3_close(dst);
    for (size_t i = 0; i < n; i++) {
        free(kinds[i]);
        free(bodies[i]);
    }
    free(kinds);
    free(bodies);
    *rows = (int64_t)n;
    return t;
}

/* Median wall time of a command over reps runs (fork + exec, output to /dev/null). */
static double time_cmd(char *const argv[], int reps)
{
    double v[32];
    for (int r = 0; r < reps; r++) {
        fflush(stdout);
        fflush(stderr);
        uint64_t t0 = util_now_ns();
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stdout);
            execv(argv[0], argv);
            _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        v[r] = secs(t0, util_now_ns());
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench/graph: %s failed\n", argv[0]);
            exit(1);
        }
    }
    for (int i = 0; i < reps; i++)
        for (int j = i + 1; j < reps; j++)
            if (v[j] < v[i]) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    return v[reps / 2];
}

static double baseline_count(const char *db, int reps)
{
    double v[32];
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = util_now_ns();
        sqlite3 *h;
        sqlite3_stmt *s;
        sqlite3_open(db, &h);
        sqlite3_prepare_v2(h, "SELECT kind, count(*) FROM records GROUP BY kind", -1, &s, 0);
        while (sqlite3_step(s) == SQLITE_ROW)
            ;
        sqlite3_finalize(s);
        sqlite3_close(h);
        v[r] = secs(t0, util_now_ns());
    }
    double best = v[0];
    for (int i = 1; i < reps; i++)
        best = v[i] < best ? v[i] : best;
    return best;
}

static double baseline_dump(const char *db, const char *out)
{
    uint64_t t0 = util_now_ns();
    sqlite3 *h;
    sqlite3_stmt *s;
    FILE *f = fopen(out, "w");
    sqlite3_open(db, &h);
    if (sqlite3_prepare_v2(h, "SELECT canon FROM records ORDER BY oid, seq", -1, &s, 0) != SQLITE_OK) {
        fprintf(stderr, "bench/graph: baseline query failed: %s\n", sqlite3_errmsg(h));
        exit(1);
    }
    while (sqlite3_step(s) == SQLITE_ROW)
        fprintf(f, "%s\n", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(h);
    fclose(f);
    return secs(t0, util_now_ns());
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 1000000;
    if (getenv("BENCH_TX"))
        TX = atoi(getenv("BENCH_TX"));
    const char *dir = argc > 2 ? argv[2] : "bench-out";
    char db[1024], key[1024], base[1024], shard[1024], db2[1024], dump[1024], kope[1024];
    if (n < 1000) {
        fprintf(stderr, "usage: bench/graph [N_RECORDS >= 1000] [DIR]\n");
        return 2;
    }
    mkdir(dir, 0755);
    snprintf(db, sizeof db, "%s/graph.db", dir);
    snprintf(key, sizeof key, "%s/graph.db.key", dir);
    snprintf(base, sizeof base, "%s/baseline.db", dir);
    snprintf(shard, sizeof shard, "%s/shard.jsonl", dir);
    snprintf(db2, sizeof db2, "%s/imported.db", dir);
    snprintf(dump, sizeof dump, "%s/dump.txt", dir);
    const char *kb = getenv("KOPE_BIN");
    snprintf(kope, sizeof kope, "%s", kb ? kb : "build/x86_64/kope");
    const char *files[] = {db, key, base, shard, db2, dump};
    char side[1100];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        unlink(files[i]);
        snprintf(side, sizeof side, "%s-wal", files[i]);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", files[i]);
        unlink(side);
    }

    printf("bench/graph: %lld records, %d distinct 2-8 KB kernel sources, tx of %d records, "
           "bulk page cache %lld MiB\n", (long long)n, POOL, TX, STORE_CACHE_BULK >> 20);
    make_pool();

    /* 1. insert */
    struct store *st;
    struct graph g;
    char err[512];
    long long inline_bytes = 0;
    double t_kope;
    int rc = store_open(db, &st, err, sizeof err);
    if (rc)
        die(err, rc);
    /* a bulk writer, like `kope graph import`: the same page cache */
    store_set_cache_bytes(st, getenv("BENCH_CACHE_MB") ? atoll(getenv("BENCH_CACHE_MB")) << 20
                                                       : STORE_CACHE_BULK);
    graph_init(&g, st);
    if ((rc = graph_identity_create(&g, key, "k3")))
        die("identity", rc);
    int64_t written = build_kope(&g, n, &inline_bytes, &t_kope);
    struct store_stats ss;
    store_stats_get(st, &ss);
    graph_free(&g);
    store_close(st);
    if (getenv("BENCH_INSERT_ONLY")) { /* for profiling the insert path alone */
        char io[4096] = "";
        FILE *pf = fopen("/proc/self/io", "r");
        if (pf) {
            size_t k = fread(io, 1, sizeof io - 1, pf);
            io[k] = 0;
            fclose(pf);
        }
        printf("insert      kope %9.0f records/s\n%s", (double)written / t_kope, io);
        return 0;
    }
    int64_t base_rows = 0;
    double t_base = baseline_insert(db, base, &base_rows);
    double r_kope = (double)written / t_kope, r_base = (double)base_rows / t_base;
    printf("\ninsert      kope %9.0f records/s   baseline plain SQLite inserts, no hashing %9.0f records/s   ratio %.2f\n",
           r_kope, r_base, r_kope / r_base);

    /* 2. size */
    long long fsz = file_size(db), bsz = file_size(base);
    printf("size        kope %9.0f bytes/record (%lld MB, %lld blobs)   baseline sources inline %9.0f bytes/record   ratio %.2f\n",
           (double)fsz / (double)written, fsz >> 20, (long long)ss.n_blobs,
           (double)(bsz + inline_bytes) / (double)written, (double)fsz / (double)(bsz + inline_bytes));

    /* 3. stats latency */
    char dbarg[1100];
    snprintf(dbarg, sizeof dbarg, "--db=%s", db);
    char *stats_argv[] = {kope, dbarg, "graph", "stats", NULL};
    char *version_argv[] = {kope, "--version", NULL};
    double t_stats = time_cmd(stats_argv, 9), t_ver = time_cmd(version_argv, 9);
    double t_count = baseline_count(db, 5);
    printf("stats       kope graph stats %7.1f ms (process start alone: %.1f ms)   baseline SELECT kind, count(*) GROUP BY kind %7.1f ms   ratio %.3f\n",
           t_stats * 1e3, t_ver * 1e3, t_count * 1e3, t_stats / t_count);

    /* 4. export / import */
    char outarg[1100];
    snprintf(outarg, sizeof outarg, "%s", shard);
    char *exp_argv[] = {kope, dbarg, "graph", "export", "-o", outarg, NULL};
    double t_exp = time_cmd(exp_argv, 1);
    double t_dump = baseline_dump(db, dump);
    printf("export      kope %9.0f records/s (%lld MB shard)   baseline plain SELECT to a file %9.0f records/s   ratio %.2f\n",
           (double)written / t_exp, file_size(shard) >> 20, (double)written / t_dump, t_dump / t_exp);
    char db2arg[1100];
    snprintf(db2arg, sizeof db2arg, "--db=%s", db2);
    char *imp_argv[] = {kope, db2arg, "graph", "import", shard, NULL};
    double t_imp = time_cmd(imp_argv, 1);
    printf("import      kope %9.0f records/s (every hash, chain link and checkpoint signature checked)   baseline plain SQLite inserts %9.0f records/s   ratio %.2f\n",
           (double)written / t_imp, r_base, (double)written / t_imp / r_base);

    printf("\ntargets (issue 2, this 2-core machine): insert >= 50000 records/s: %s; stats < 50 ms: %s; blob dedup visible: %s\n",
           r_kope >= 50000 ? "met" : "NOT met", t_stats < 0.050 ? "met" : "NOT met",
           fsz < bsz + inline_bytes ? "yes" : "no");
    for (int p = 0; p < POOL; p++)
        free(pool_text[p]);
    return 0;
}

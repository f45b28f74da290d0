/*
 * tests/test_graph.c - records, chains, signatures, the decision tree, and
 * import of shards that lie: tampered, truncated, reordered, forged,
 * forked, with missing or altered blobs. Real SQLite files, real keys.
 */
#include "testutil.h"

#include <sys/stat.h>

#include <cJSON.h>

#include "core/buf.h"
#include "core/graph/canon.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/util.h"
#include "net/crypto.h"
#include "store/store.h"

/* ------------------------------------------------------------ fixtures */

struct dev {
    struct store *st;
    struct graph g;
    uint8_t task[32], d[4][32];
};

static void dev_open(struct dev *d, const char *name, int with_identity)
{
    char err[256];
    memset(d, 0, sizeof *d);
    assert_int_equal(store_open(tpath("%s.db", name), &d->st, err, sizeof err), 0);
    graph_init(&d->g, d->st);
    if (with_identity) {
        unlink(tpath("%s.key", name));
        assert_int_equal(graph_identity_create(&d->g, tpath("%s.key", name), "k3"), 0);
    }
}

static void dev_close(struct dev *d)
{
    graph_free(&d->g);
    store_close(d->st);
}

static cJSON *obj(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    return j;
}

static void add_decision(struct dev *d, int i, const uint8_t *parent, const char *src,
                         const char *outcome_json)
{
    char ref[GRAPH_BLOB_REF], body[512];
    assert_int_equal(graph_blob_put(&d->g, src, strlen(src), ref), 0);
    snprintf(body, sizeof body, "{\"tags\":[\"t%d\",\"lmul4\"],\"rationale\":\"try %d\",\"source\":\"%s\"}", i, i, ref);
    cJSON *b = obj(body), *o = obj(outcome_json);
    assert_int_equal(graph_decision_add(&d->g, d->task, parent, "k3", b, d->d[i]), 0);
    assert_int_equal(graph_outcome_add(&d->g, d->task, d->d[i], "k3", o, NULL), 0);
    cJSON_Delete(b);
    cJSON_Delete(o);
}

/* A device with one task and a four-decision tree:
 *   d0 compile_error; d1 pass 1.5x; d2 refines d1: pass 2.0x; d3 refines d1: wrong_result
 * then a second, separately checkpointed run with another task. */
static void build_source(struct dev *d, const char *name)
{
    dev_open(d, name, 1);
    cJSON *spec = obj("{\"name\":\"softmax_4096\",\"op\":\"softmax\",\"shape\":{\"rows\":8,\"cols\":4096}}");
    assert_int_equal(graph_task_add(&d->g, "k3", spec, d->task), 0);
    cJSON_Delete(spec);
    add_decision(d, 0, NULL, "void kope_kernel(void) { syntax error", "{\"status\":\"compile_error\",\"reason\":\"expected ;\"}");
    add_decision(d, 1, NULL, "/* v1 */ void kope_kernel(void) {}", "{\"status\":\"pass\",\"speedup\":1.5,\"baseline\":\"scalar\",\"emulated\":true}");
    add_decision(d, 2, d->d[1], "/* v2 */ void kope_kernel(void) {}", "{\"status\":\"pass\",\"speedup\":2.0,\"baseline\":\"scalar\",\"emulated\":true}");
    add_decision(d, 3, d->d[1], "/* v1 */ void kope_kernel(void) {}", "{\"status\":\"wrong_result\",\"reason\":\"tail n=33\"}");
    assert_int_equal(graph_checkpoint(&d->g), 0);
    spec = obj("{\"name\":\"add_1m\",\"op\":\"add\",\"shape\":{\"n\":1048576}}");
    uint8_t t2[32];
    assert_int_equal(graph_task_add(&d->g, "k3", spec, t2), 0);
    cJSON_Delete(spec);
    assert_int_equal(graph_checkpoint(&d->g), 0);
}

/* Export a device into a file; returns its lines (malloc'd array of strings). */
static char **export_lines(struct dev *d, const char *file, int *n)
{
    FILE *f = fopen(tpath("%s", file), "w");
    assert_non_null(f);
    assert_int_equal(graph_export(&d->g, NULL, f, NULL), 0);
    fclose(f);
    f = fopen(tpath("%s", file), "r");
    char **lines = calloc(256, sizeof *lines);
    char buf[65536];
    *n = 0;
    while (fgets(buf, sizeof buf, f) && *n < 256) {
        buf[strcspn(buf, "\n")] = 0;
        lines[(*n)++] = strdup(buf);
    }
    fclose(f);
    return lines;
}

static void free_lines(char **l, int n)
{
    for (int i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static void write_lines(const char *file, char **l, int n)
{
    FILE *f = fopen(tpath("%s", file), "w");
    for (int i = 0; i < n; i++)
        if (l[i])
            fprintf(f, "%s\n", l[i]);
    fclose(f);
}

/* Import a file into a fresh store; returns the import's rc. */
static int import_into(const char *name, const char *file, struct graph_import_stats *s, int64_t *n_after)
{
    struct dev d;
    unlink(tpath("%s.db", name));
    dev_open(&d, name, 0);
    FILE *f = fopen(tpath("%s", file), "r");
    assert_non_null(f);
    int rc = graph_import(&d.g, f, s);
    fclose(f);
    struct store_stats ss;
    assert_int_equal(store_stats_get(d.st, &ss), 0);
    assert_int_equal(store_integrity_check(d.st), 0);
    if (n_after)
        *n_after = ss.n_records;
    dev_close(&d);
    return rc;
}

/* Index of the record line with this seq and kind (NULL kind: any). */
static int find_line(char **l, int n, int seq, const char *kind)
{
    char k1[32], k2[48];
    snprintf(k1, sizeof k1, "\"seq\":%d,", seq);
    snprintf(k2, sizeof k2, "\"kind\":\"%s\"", kind ? kind : "");
    for (int i = 0; i < n; i++)
        if (strstr(l[i], k1) && (!kind || strstr(l[i], k2)))
            return i;
    fail_msg("no line with seq %d", seq);
    return -1;
}

/* Recompute a record line's id after editing it (what a careful forger does). */
static char *reid(const char *line, char new_id[GRAPH_ID_HEX])
{
    cJSON *j = cJSON_Parse(line);
    assert_non_null(j);
    cJSON_DeleteItemFromObject(j, "id");
    struct buf b;
    uint8_t h[32];
    buf_init(&b, 1 << 20);
    assert_int_equal(canon_write(j, &b), 0);
    net_sha256(b.p, b.len, h);
    util_hex(h, 32, new_id);
    cJSON_AddStringToObject(j, "id", new_id);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    buf_free(&b);
    return out;
}

static char *replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    assert_non_null(p);
    char *out = malloc(strlen(s) + strlen(to) + 1);
    size_t k = (size_t)(p - s);
    memcpy(out, s, k);
    strcpy(out + k, to);
    strcat(out, p + strlen(from));
    return out;
}

/* ------------------------------------------------------------ tests */

static void test_identity(void **s)
{
    (void)s;
    struct dev d;
    dev_open(&d, "ident", 1);
    uint8_t origin[32];
    memcpy(origin, d.g.origin, 32);
    assert_int_equal(d.g.seq, 2); /* identity + its checkpoint */
    /* a second init is refused and changes nothing */
    struct graph g2;
    graph_init(&g2, d.st);
    assert_int_equal(graph_identity_create(&g2, tpath("ident2.key"), "k3"), KOPE_ERR_EXISTS);
    assert_int_equal(access(tpath("ident2.key"), F_OK), -1);
    /* loading with the right key works, with another device's key does not */
    assert_int_equal(graph_identity_load(&g2, tpath("ident.key")), 0);
    assert_memory_equal(g2.origin, origin, 32);
    graph_free(&g2);
    struct dev other;
    dev_open(&other, "ident_other", 1);
    graph_init(&g2, d.st);
    assert_int_equal(graph_identity_load(&g2, tpath("ident_other.key")), KOPE_ERR_SIG);
    graph_free(&g2);
    dev_close(&other);
    /* the key file is private */
    struct stat sb;
    assert_int_equal(stat(tpath("ident.key"), &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    dev_close(&d);
}

struct chain_ctx {
    int64_t seq;
    uint8_t prev[32];
    int n_ckpt;
    uint8_t pubkey[128];
    size_t pubkey_len;
};

static int check_chain_cb(void *ctx, const struct store_rec *r)
{
    struct chain_ctx *c = ctx;
    uint8_t h[32];
    net_sha256(r->canon, r->canon_len, h);
    assert_memory_equal(h, r->id, 32);          /* id = hash of canonical bytes */
    assert_int_equal(r->seq, c->seq + 1);       /* no gaps */
    if (r->seq > 1) {
        assert_true(r->has_prev);
        assert_memory_equal(r->prev, c->prev, 32); /* hash chain */
    }
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    /* the stored text is canonical: re-canonicalising gives the same bytes */
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(canon_write(j, &b), 0);
    assert_int_equal(b.len, r->canon_len);
    assert_memory_equal(b.p, r->canon, b.len);
    buf_free(&b);
    cJSON *body = cJSON_GetObjectItem(j, "body");
    if (r->seq == 1) {
        const char *pk = cJSON_GetObjectItem(body, "pubkey")->valuestring;
        c->pubkey_len = strlen(pk) / 2;
        assert_int_equal(util_unhex(pk, c->pubkey, c->pubkey_len), 0);
        net_sha256(c->pubkey, c->pubkey_len, h);
        assert_memory_equal(h, r->origin, 32); /* self-certifying origin */
    }
    if (strcmp(r->kind, "checkpoint") == 0) {
        const char *sig = cJSON_GetObjectItem(body, "sig")->valuestring;
        uint8_t sb[80];
        size_t sl = strlen(sig) / 2;
        assert_int_equal(util_unhex(sig, sb, sl), 0);
        assert_int_equal(net_pubkey_verify(c->pubkey, c->pubkey_len, r->prev, sb, sl), 0);
        uint8_t other[32];
        memcpy(other, r->prev, 32);
        other[0] ^= 1;
        assert_int_not_equal(net_pubkey_verify(c->pubkey, c->pubkey_len, other, sb, sl), 0);
        c->n_ckpt++;
    }
    cJSON_Delete(j);
    c->seq = r->seq;
    memcpy(c->prev, r->id, 32);
    return 0;
}

static void test_chain_and_signatures(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "chain");
    struct chain_ctx c;
    memset(&c, 0, sizeof c);
    assert_int_equal(store_rec_query(d.st, STORE_Q_ORIGIN, d.g.origin, 0, check_chain_cb, &c), 0);
    assert_int_equal(c.seq, d.g.seq);
    assert_int_equal(c.n_ckpt, 3);
    dev_close(&d);
}

static void test_tree_and_best_path(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "tree");
    struct graph_tree t;
    uint8_t found[32];
    assert_int_equal(graph_task_find(&d.g, "softmax_4096", found), 0);
    assert_memory_equal(found, d.task, 32);
    assert_int_equal(graph_tree_load(&d.g, d.task, &t), 0);
    assert_int_equal(t.n, 4);
    assert_int_equal(t.nodes[0].parent, -1);
    assert_int_equal(t.nodes[1].parent, -1);
    assert_int_equal(t.nodes[2].parent, 1); /* order and branches survive */
    assert_int_equal(t.nodes[3].parent, 1);
    for (size_t i = 0; i < t.n; i++)
        assert_true(t.nodes[i].has_outcome);
    assert_int_equal(graph_tree_best(&t), 2);
    char out[8192];
    FILE *f = fmemopen(out, sizeof out, "w");
    graph_tree_print(&t, f);
    fclose(f);
    assert_non_null(strstr(out, "task softmax_4096"));
    assert_non_null(strstr(out, "pass 2.00x vs scalar (emulated"));
    assert_non_null(strstr(out, "compile_error: expected ;"));
    char d1[GRAPH_ID_HEX], d2[GRAPH_ID_HEX];
    snprintf(d1, sizeof d1, "%s", t.nodes[1].dec.id_hex);
    snprintf(d2, sizeof d2, "%s", t.nodes[2].dec.id_hex);
    char want[200];
    snprintf(want, sizeof want, "best path: %.12s -> %.12s", d1, d2);
    assert_non_null(strstr(out, want));
    f = fmemopen(out, sizeof out, "w");
    graph_tree_dot(&t, f);
    fclose(f);
    assert_non_null(strstr(out, "digraph kope"));
    assert_non_null(strstr(out, "#a6dba0")); /* pass colour */
    assert_non_null(strstr(out, "#f4a582")); /* fail colour */
    graph_tree_free(&t);
    /* two decisions with the same source share one blob */
    struct store_stats ss;
    assert_int_equal(store_stats_get(d.st, &ss), 0);
    assert_int_equal(ss.n_blobs, 3);
    dev_close(&d);
}

/* The one definition of a task's best: passing, fully verified, on the
 * task's own target, ranked by the target's metric (k3: "speedup"). */
static void test_best_definition(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "bestdef");
    struct graph_best b;
    assert_int_equal(graph_task_best(&d.g, d.task, &b), 0);
    assert_true(b.found);
    assert_memory_equal(b.dec.id, d.d[2], 32);
    assert_true(b.rank == 2.0);
    graph_best_free(&b);
    /* verified only at a reduced shape: never the best, however fast */
    uint8_t x[32];
    cJSON *db = obj("{\"tags\":[\"reduced\"]}");
    cJSON *ob = obj("{\"status\":\"pass\",\"speedup\":9.0,\"reduced_shape\":true}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[2], "k3", db, x), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, x, "k3", ob, NULL), 0);
    cJSON_Delete(ob);
    /* an outcome recorded for another target: not this task's claim */
    ob = obj("{\"status\":\"pass\",\"speedup\":8.0}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[2], "ascend", db, x), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, x, "ascend", ob, NULL), 0);
    cJSON_Delete(ob);
    /* ranked by the target's metric, not by the agent's old "score" */
    ob = obj("{\"status\":\"pass\",\"speedup\":1.9,\"score\":100}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[2], "k3", db, x), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, x, "k3", ob, NULL), 0);
    cJSON_Delete(ob);
    assert_int_equal(graph_task_best(&d.g, d.task, &b), 0);
    assert_memory_equal(b.dec.id, d.d[2], 32);
    graph_best_free(&b);
    /* a faster verified one from a later run (any proposer) takes over */
    ob = obj("{\"status\":\"pass\",\"speedup\":2.5}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[1], "k3", db, x), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, x, "k3", ob, NULL), 0);
    cJSON_Delete(ob);
    /* k3 under emulation: an icount-only ratio (no vector-cost model, LMUL for
     * free) never outranks a claim, however large; a vcost claim does */
    uint8_t xi[32], xv[32];
    ob = obj("{\"status\":\"pass\",\"speedup\":40.0,\"icount\":100}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[1], "k3", db, xi), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, xi, "k3", ob, NULL), 0);
    cJSON_Delete(ob);
    assert_int_equal(graph_task_best(&d.g, d.task, &b), 0);
    assert_memory_equal(b.dec.id, x, 32);
    assert_true(b.rank == 2.5);
    graph_best_free(&b);
    ob = obj("{\"status\":\"pass\",\"speedup\":3.0,\"icount\":100,\"vcost\":400}");
    assert_int_equal(graph_decision_add(&d.g, d.task, d.d[1], "k3", db, xv), 0);
    assert_int_equal(graph_outcome_add(&d.g, d.task, xv, "k3", ob, NULL), 0);
    cJSON_Delete(ob);
    cJSON_Delete(db);
    assert_int_equal(graph_task_best(&d.g, d.task, &b), 0);
    assert_memory_equal(b.dec.id, xv, 32);
    assert_true(b.rank == 3.0);
    graph_best_free(&b);
    /* a task where nothing passed: found = 0 */
    uint8_t t2[32];
    assert_int_equal(graph_task_find(&d.g, "add_1m", t2), 0);
    assert_int_equal(graph_task_best(&d.g, t2, &b), 0);
    assert_false(b.found);
    graph_best_free(&b);
    dev_close(&d);
}

static void test_roundtrip_and_union(void **s)
{
    (void)s;
    struct dev a, b;
    build_source(&a, "ua");
    build_source(&b, "ub");
    int na, nb;
    char **la = export_lines(&a, "ua.jsonl", &na), **lb = export_lines(&b, "ub.jsonl", &nb);
    struct graph_import_stats st;
    FILE *f;
    /* both ways, twice: a set union, idempotent and commutative */
    for (int round = 0; round < 2; round++) {
        f = fopen(tpath("ub.jsonl"), "r");
        assert_int_equal(graph_import(&a.g, f, &st), 0);
        fclose(f);
        assert_int_equal(st.rejected, 0);
        assert_int_equal(st.accepted, round == 0 ? 14 : 0);
        f = fopen(tpath("ua.jsonl"), "r");
        assert_int_equal(graph_import(&b.g, f, &st), 0);
        fclose(f);
        assert_int_equal(st.duplicates, round == 0 ? 0 : 14);
    }
    struct store_stats sa, sb;
    assert_int_equal(store_stats_get(a.st, &sa), 0);
    assert_int_equal(store_stats_get(b.st, &sb), 0);
    assert_int_equal(sa.n_records, 28);
    assert_int_equal(sb.n_records, 28);
    assert_int_equal(sa.n_origins, 2);
    /* blobs travelled: b can read a's kernel sources */
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&b.g, a.task, &t), 0);
    const char *ref = cJSON_GetObjectItem(cJSON_GetObjectItem(t.nodes[2].dec.json, "body"), "source")->valuestring;
    char *text;
    size_t len;
    assert_int_equal(graph_blob_get(&b.g, ref, &text, &len), 0);
    assert_string_equal(text, "/* v2 */ void kope_kernel(void) {}");
    free(text);
    graph_tree_free(&t);
    /* our own chain continues after importing others */
    cJSON *spec = obj("{\"name\":\"later\"}");
    assert_int_equal(graph_task_add(&a.g, "k3", spec, NULL), 0);
    cJSON_Delete(spec);
    /* --since: only what the other side lacks */
    char since[200], hex[GRAPH_ID_HEX];
    util_hex(a.g.origin, 32, hex);
    snprintf(since, sizeof since, "{\"%s\":14}", hex);
    f = fopen(tpath("since.jsonl"), "w");
    int64_t n = 0;
    assert_int_equal(graph_export(&a.g, since, f, &n), 0);
    fclose(f);
    assert_int_equal(n, 2 + 14); /* a's new task + its checkpoint, and all of b's */
    free_lines(la, na);
    free_lines(lb, nb);
    dev_close(&a);
    dev_close(&b);
}

static void test_tampered_body_rejected(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "tamper");
    int n;
    char **l = export_lines(&d, "t.jsonl", &n);
    int i = find_line(l, n, 7, "outcome");
    char *m = replace(l[i], "\"speedup\":1.5", "\"speedup\":9.5");
    free(l[i]);
    l[i] = m;
    write_lines("t2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("tamper_in", "t2.jsonl", &st, &after), KOPE_ERR_HASH);
    /* the first run (identity + checkpoint) is kept; the run with the lie is
     * rejected whole, and so is everything of that origin after it */
    assert_int_equal(after, 2);
    assert_int_equal(st.accepted, 2);
    assert_int_equal(st.rejected, 12);
    assert_non_null(strstr(st.first_error, "tampered"));
    free_lines(l, n);
    dev_close(&d);
}

static void test_reid_breaks_chain(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "reid");
    int n;
    char **l = export_lines(&d, "r.jsonl", &n);
    int i = find_line(l, n, 7, "outcome");
    char *m = replace(l[i], "\"speedup\":1.5", "\"speedup\":9.5"), id[GRAPH_ID_HEX];
    free(l[i]);
    l[i] = reid(m, id); /* a valid id for the lie ... */
    free(m);
    write_lines("r2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    /* ... but the next record's prev still names the original */
    assert_int_equal(import_into("reid_in", "r2.jsonl", &st, &after), KOPE_ERR_CHAIN);
    assert_int_equal(after, 2);
    /* a forger who re-links the whole rest of the chain still cannot sign it */
    char prev_old[80], prev_new[80], last_id[GRAPH_ID_HEX];
    strcpy(last_id, id);
    for (int k = i + 1; k < n; k++) {
        if (!strstr(l[k], "\"seq\":"))
            continue; /* a blob line */
        snprintf(prev_new, sizeof prev_new, "\"prev\":\"%s\"", last_id);
        cJSON *j = cJSON_Parse(l[k]);
        snprintf(prev_old, sizeof prev_old, "\"prev\":\"%s\"", cJSON_GetObjectItem(j, "prev")->valuestring);
        cJSON_Delete(j);
        char *r1 = replace(l[k], prev_old, prev_new);
        free(l[k]);
        l[k] = reid(r1, last_id);
        free(r1);
    }
    write_lines("r3.jsonl", l, n);
    assert_int_equal(import_into("reid_in2", "r3.jsonl", &st, &after), KOPE_ERR_SIG);
    assert_int_equal(after, 2);
    assert_non_null(strstr(st.first_error, "signature"));
    free_lines(l, n);
    dev_close(&d);
}

static void test_truncated_keeps_covered_runs(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "trunc");
    int n;
    char **l = export_lines(&d, "tr.jsonl", &n);
    write_lines("tr2.jsonl", l, n - 1); /* the final checkpoint is cut off */
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("trunc_in", "tr2.jsonl", &st, &after), KOPE_ERR_UNCOVERED);
    assert_int_equal(after, 12);  /* identity run + the tree run */
    assert_int_equal(st.rejected, 1);
    /* a line cut in the middle is malformed JSON */
    l[n - 1][strlen(l[n - 1]) / 2] = 0;
    write_lines("tr3.jsonl", l, n);
    assert_int_not_equal(import_into("trunc_in2", "tr3.jsonl", &st, &after), 0);
    assert_int_equal(after, 12);
    free_lines(l, n);
    dev_close(&d);
}

static void test_reordered_rejected(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "reord");
    int n;
    char **l = export_lines(&d, "ro.jsonl", &n);
    int i = find_line(l, n, 4, NULL), j = find_line(l, n, 5, NULL);
    char *tmp = l[i];
    l[i] = l[j];
    l[j] = tmp;
    write_lines("ro2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("reord_in", "ro2.jsonl", &st, &after), KOPE_ERR_CHAIN);
    assert_int_equal(after, 2);
    /* a gap: drop a record */
    free(l[j]);
    l[j] = NULL;
    write_lines("ro3.jsonl", l, n);
    assert_int_equal(import_into("reord_in2", "ro3.jsonl", &st, &after), KOPE_ERR_CHAIN);
    assert_int_equal(after, 2);
    free_lines(l, n);
    dev_close(&d);
}

static void test_forged_signature_rejected(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "forge");
    int n;
    char **l = export_lines(&d, "f.jsonl", &n);
    int i = find_line(l, n, 2, "checkpoint");
    cJSON *j = cJSON_Parse(l[i]);
    char *sig = strdup(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "body"), "sig")->valuestring);
    cJSON_Delete(j);
    char *bad = strdup(sig), id[GRAPH_ID_HEX];
    bad[20] = bad[20] == '0' ? '1' : '0';
    char *m = replace(l[i], sig, bad);
    free(l[i]);
    l[i] = reid(m, id);
    free(m);
    write_lines("f2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("forge_in", "f2.jsonl", &st, &after), KOPE_ERR_SIG);
    assert_int_equal(after, 0);
    free(sig);
    free(bad);
    free_lines(l, n);
    dev_close(&d);
}

static void test_identity_must_hash_to_origin(void **s)
{
    (void)s;
    struct dev d, e;
    build_source(&d, "idh");
    dev_open(&e, "idh_other", 1);
    int n, m;
    char **l = export_lines(&d, "i.jsonl", &n), **le = export_lines(&e, "ie.jsonl", &m);
    /* d's identity with e's public key (and a recomputed id) */
    int di = find_line(l, n, 1, "identity"), ei = find_line(le, m, 1, "identity");
    cJSON *jd = cJSON_Parse(l[di]), *je = cJSON_Parse(le[ei]);
    const char *pk_d = cJSON_GetObjectItem(cJSON_GetObjectItem(jd, "body"), "pubkey")->valuestring;
    const char *pk_e = cJSON_GetObjectItem(cJSON_GetObjectItem(je, "body"), "pubkey")->valuestring;
    char *x = replace(l[di], pk_d, pk_e), id[GRAPH_ID_HEX];
    cJSON_Delete(jd);
    cJSON_Delete(je);
    free(l[di]);
    l[di] = reid(x, id);
    free(x);
    write_lines("i2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("idh_in", "i2.jsonl", &st, &after), KOPE_ERR_SIG);
    assert_int_equal(after, 0);
    free_lines(l, n);
    free_lines(le, m);
    dev_close(&d);
    dev_close(&e);
}

static void test_blob_checks(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "blob");
    int n;
    char **l = export_lines(&d, "b.jsonl", &n);
    int bi = -1;
    for (int i = 0; i < n && bi < 0; i++)
        if (strncmp(l[i], "{\"blob\"", 7) == 0 && strstr(l[i], "v2"))
            bi = i;
    assert_true(bi > 0);
    char *orig = l[bi];
    l[bi] = replace(orig, "v2", "v3"); /* text no longer matches its hash */
    write_lines("b2.jsonl", l, n);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("blob_in", "b2.jsonl", &st, &after), KOPE_ERR_BLOB);
    free(l[bi]);
    l[bi] = NULL; /* blob missing altogether */
    write_lines("b3.jsonl", l, n);
    assert_int_equal(import_into("blob_in2", "b3.jsonl", &st, &after), KOPE_ERR_BLOB);
    assert_int_equal(after, 2);
    l[bi] = orig;
    free_lines(l, n);
    dev_close(&d);
}

static void test_garbage_lines(void **s)
{
    (void)s;
    struct dev d;
    build_source(&d, "garb");
    int n;
    char **l = export_lines(&d, "g.jsonl", &n);
    FILE *f = fopen(tpath("g2.jsonl"), "w");
    fprintf(f, "%s\n", l[0]);
    fprintf(f, "{not json\n[1,2,3]\n");
    for (int i = 0; i < 3000000; i++) /* a 3 MB line of junk */
        fputc('x', f);
    fputc('\n', f);
    for (int i = 1; i < n; i++)
        fprintf(f, "%s\n", l[i]);
    fclose(f);
    struct graph_import_stats st;
    int64_t after;
    assert_int_equal(import_into("garb_in", "g2.jsonl", &st, &after), KOPE_ERR_PARSE);
    assert_int_equal(after, 14); /* every good record still came in */
    assert_int_equal(st.rejected, 3);
    /* a file that is not a shard at all */
    f = fopen(tpath("g3.jsonl"), "w");
    fprintf(f, "{\"hello\":1}\n%s\n", l[1]);
    fclose(f);
    assert_int_equal(import_into("garb_in2", "g3.jsonl", &st, &after), KOPE_ERR_PARSE);
    assert_int_equal(after, 0);
    free_lines(l, n);
    dev_close(&d);
}

static void test_append_validates(void **s)
{
    (void)s;
    struct dev d;
    dev_open(&d, "val", 0);
    cJSON *b = obj("{}");
    assert_int_equal(graph_append(&d.g, "task", "k3", NULL, 0, b, NULL), KOPE_ERR_NOINIT);
    dev_close(&d);
    dev_open(&d, "val2", 1);
    assert_int_equal(graph_append(&d.g, "bogus", "k3", NULL, 0, b, NULL), KOPE_ERR_USAGE);
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(graph_append(&d.g, "task", "k3", NULL, 0, arr, NULL), KOPE_ERR_USAGE);
    cJSON_Delete(arr);
    cJSON *nan = cJSON_CreateObject();
    cJSON_AddNumberToObject(nan, "x", 0.0 / 0.0);
    int64_t before = d.g.seq;
    assert_int_equal(graph_append(&d.g, "task", "k3", NULL, 0, nan, NULL), KOPE_ERR_CANON);
    assert_int_equal(d.g.seq, before); /* nothing consumed */
    cJSON_Delete(nan);
    /* invalid UTF-8 in a blob becomes '?' (blobs travel as JSON strings) */
    char ref[GRAPH_BLOB_REF], *text;
    size_t len;
    assert_int_equal(graph_blob_put(&d.g, "ok\xff\xfe!", 5, ref), 0);
    assert_int_equal(graph_blob_get(&d.g, ref, &text, &len), 0);
    assert_string_equal(text, "ok?" "?!");
    free(text);
    cJSON_Delete(b);
    dev_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_chain_and_signatures),
        cmocka_unit_test(test_tree_and_best_path),
        cmocka_unit_test(test_best_definition),
        cmocka_unit_test(test_roundtrip_and_union),
        cmocka_unit_test(test_tampered_body_rejected),
        cmocka_unit_test(test_reid_breaks_chain),
        cmocka_unit_test(test_truncated_keeps_covered_runs),
        cmocka_unit_test(test_reordered_rejected),
        cmocka_unit_test(test_forged_signature_rejected),
        cmocka_unit_test(test_identity_must_hash_to_origin),
        cmocka_unit_test(test_blob_checks),
        cmocka_unit_test(test_garbage_lines),
        cmocka_unit_test(test_append_validates),
    };
    return cmocka_run_group_tests_name("graph", tests, NULL, NULL);
}

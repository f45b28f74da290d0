/*
 * tests/test_secret.c - the last line (core/secret.h): kope never stores,
 * prompts or syncs a byte string equal to its API key or a private key it
 * holds. The registry and its scan alone; then each place the scan runs,
 * on real parts: a real SQLite file (grepped for the secret afterwards),
 * the importer, a prompt, a sync session over real mutual TLS on loopback;
 * and through the kope binary, the API key planted in a candidate's source
 * comment (refused) and in a compiler diagnostic (redacted).
 *
 * Each test plants a secret where an earlier layer would not stop it (a
 * record written before the key was registered, as an older store holds),
 * so it fails when its own scan is taken out.
 */
#include "sync_fixture.h"

#include "core/context/context.h"
#include "core/err.h"
#include "core/secret.h"

/* Does the file at path (and its WAL) hold needle anywhere? */
static int file_has(const char *path, const char *needle)
{
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    const char *files[2] = {path, wal};
    size_t nl = strlen(needle);
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "rb");
        if (!f)
            continue;
        static char buf[1 << 20];
        size_t n, keep = 0;
        while ((n = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
            n += keep;
            if (memmem(buf, n, needle, nl)) {
                fclose(f);
                return 1;
            }
            keep = n < nl ? n : nl - 1;
            memmove(buf, buf + n - keep, keep);
        }
        fclose(f);
    }
    return 0;
}

/* ------------------------------------------------------- the registry --- */

static void test_find_and_redact(void **state)
{
    (void)state;
    static const char key[] = "sk-kope-unit-8c1f0e44d2";
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0);
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0); /* once */
    assert_int_equal(secret_add("short", 5, "too short"), 0);           /* ignored */
    assert_null(secret_find("a short text", 12));
    char text[] = "Authorization: Bearer sk-kope-unit-8c1f0e44d2 (and again sk-kope-unit-8c1f0e44d2)";
    assert_string_equal(secret_find(text, strlen(text)), "the LLM API key");
    assert_null(secret_find(text, 30)); /* the bytes given, not past them */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    assert_int_equal(secret_redact(buf, sizeof buf), 2);
    assert_string_equal(buf, "Authorization: Bearer [redacted] (and again [redacted])");
    /* growing past the buffer cuts the text, never keeps the secret */
    char small[30] = "ab sk-kope-unit-8c1f0e44d2";
    assert_int_equal(secret_redact(small, sizeof small), 1);
    assert_string_equal(small, "ab [redacted]");
    char tiny[8] = "sk-kope";
    assert_int_equal(secret_redact(tiny, sizeof tiny), 0);
    secret_forget_all();
    assert_null(secret_find(text, strlen(text)));
}

/* A private key in each form a file's content or a dump of it takes. */
static void test_private_key_forms(void **state)
{
    (void)state;
    struct net_key *k = NULL;
    char pem[1024];
    uint8_t raw[64], der[NET_PUBKEY_MAX];
    size_t rl = 0, dl = 0;
    assert_int_equal(net_key_generate(&k), 0);
    assert_int_equal(net_key_write_pem(k, pem, sizeof pem), 0);
    assert_int_equal(net_key_private_raw(k, raw, sizeof raw, &rl), 0);
    assert_int_equal(rl, 32);
    assert_int_equal(net_key_public_der(k, der, sizeof der, &dl), 0);
    assert_int_equal(secret_add_key_pem(pem, strlen(pem), "a test key"), 0);
    assert_non_null(secret_find(pem, strlen(pem)));
    /* one base64 line of the body, quoted alone */
    const char *line = strchr(pem, '\n') + 1;
    char one[128];
    snprintf(one, sizeof one, "x %.*s y", (int)strcspn(line, "\n"), line);
    assert_non_null(secret_find(one, strlen(one)));
    char hex[130], HEX[130], pub[2 * NET_PUBKEY_MAX + 1];
    util_hex(raw, rl, hex);
    for (size_t i = 0; hex[i]; i++)
        HEX[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]), HEX[i + 1] = '\0';
    assert_non_null(secret_find(hex, strlen(hex)));
    assert_non_null(secret_find(HEX, strlen(HEX)));
    assert_non_null(secret_find(raw, rl));
    /* the public half is no secret: an identity record carries it */
    util_hex(der, dl, pub);
    assert_null(secret_find(pub, strlen(pub)));
    net_wipe(pem, sizeof pem);
    net_key_free(k);
    secret_forget_all();
}

/* ------------------------------------------------- the store refuses --- */

static void test_graph_refuses_a_secret(void **state)
{
    (void)state;
    struct dev d;
    dev_make(&d, "store1", "k3", NULL);
    static const char key[] = "sk-kope-store-51d7aa0c93";
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0);
    char text[256], ref[GRAPH_BLOB_REF];
    snprintf(text, sizeof text, "/* %s */ void kope_kernel(void) {}", key);
    assert_int_equal(graph_blob_put(&d.g, text, strlen(text), ref), KOPE_ERR_SECRET);
    assert_non_null(strstr(d.g.err, "the LLM API key"));
    assert_null(strstr(d.g.err, key));
    cJSON *spec = obj("{\"name\":\"t\",\"op\":\"add\",\"shape\":{\"n\":64}}");
    uint8_t task[32];
    assert_int_equal(graph_task_add(&d.g, "k3", spec, task), 0);
    cJSON_Delete(spec);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "rationale", text);
    assert_int_equal(graph_decision_add(&d.g, task, NULL, "k3", body, NULL), KOPE_ERR_SECRET);
    cJSON_Delete(body);
    /* the device's own key is registered when it is made */
    assert_int_equal(graph_blob_put(&d.g, d.key_pem, strlen(d.key_pem), ref), KOPE_ERR_SECRET);
    assert_int_equal(graph_checkpoint(&d.g), 0); /* the graph works on */
    dev_free(&d);
    assert_false(file_has(tpath("store1.db"), key));
    assert_false(file_has(tpath("store1.db"), "sk-kope-store"));
    secret_forget_all();
}

/* A peer's shard that carries our key (it was recorded somewhere our key
 * was not registered) is not stored. */
static void test_import_refuses_a_secret(void **state)
{
    (void)state;
    static const char key[] = "sk-kope-import-0b9e71c4";
    struct dev a, b;
    dev_make(&a, "imp_a", "k3", NULL);
    dev_make(&b, "imp_b", "k3", NULL);
    char text[256], ref[GRAPH_BLOB_REF], body[400];
    dev_work(&a, "add", 2, 0);
    /* not a secret yet: a blob and a record that holds it */
    snprintf(text, sizeof text, "diag: %s", key);
    assert_int_equal(graph_blob_put(&a.g, text, strlen(text), ref), 0);
    snprintf(body, sizeof body, "{\"status\":\"compile_error\",\"diag\":\"%s\",\"reason\":\"%s\"}", ref, text);
    cJSON *o = obj(body);
    uint8_t dec[32];
    cJSON *db = obj("{\"tags\":[\"x\"]}");
    assert_int_equal(graph_decision_add(&a.g, a.task, NULL, "k3", db, dec), 0);
    assert_int_equal(graph_outcome_add(&a.g, a.task, dec, "k3", o, NULL), 0);
    cJSON_Delete(o);
    cJSON_Delete(db);
    assert_int_equal(graph_checkpoint(&a.g), 0);
    const char *shard = tpath("imp.jsonl");
    FILE *f = fopen(shard, "w");
    int64_t n = 0;
    assert_int_equal(graph_export(&a.g, NULL, f, &n), 0);
    fclose(f);
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0);
    f = fopen(shard, "r");
    struct graph_import_stats st;
    memset(&st, 0, sizeof st);
    graph_import(&b.g, f, &st);
    fclose(f);
    fprintf(stderr, "imported %lld, rejected %lld: %s\n", (long long)st.accepted, (long long)st.rejected, b.g.err);
    assert_true(st.rejected >= 1);
    assert_true(st.accepted >= 1); /* the rest of the shard is taken */
    dev_free(&a);
    dev_free(&b);
    assert_false(file_has(tpath("imp_b.db"), key));
    secret_forget_all();
}

/* ------------------------------------------------- no prompt carries it --- */

static void test_prompt_refuses_a_secret(void **state)
{
    (void)state;
    struct dev d;
    dev_make(&d, "prompt1", "k3", NULL);
    static const char key[] = "sk-kope-prompt-a2f66e0d1";
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0);
    struct plat_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "add-secret");
    t.op = PLAT_OP_ADD;
    t.family = plat_op_family(t.op);
    t.n = 4096;
    plat_op_default_tol(t.op, &t.rtol, &t.atol);
    char fbtext[256];
    snprintf(fbtext, sizeof fbtext, "cand.c:3:1: error: use of undeclared identifier '%s'", key);
    struct ctx_feedback fb = {.stage = "compile", .status = "compile_error", .text = fbtext};
    struct ctx_request rq;
    ctx_request_init(&rq);
    rq.task = &t;
    rq.feedback = &fb;
    rq.n_feedback = 1;
    struct ctx_prompt p;
    assert_int_equal(context_build(&d.g, &rq, &p), KOPE_ERR_SECRET);
    assert_null(p.user);
    assert_non_null(strstr(p.err, "the LLM API key"));
    assert_null(strstr(p.err, key));
    ctx_prompt_free(&p);
    /* the same request without it builds */
    fb.text = "cand.c:3:1: error: expected ';'";
    assert_int_equal(context_build(&d.g, &rq, &p), 0);
    ctx_prompt_free(&p);
    dev_free(&d);
    secret_forget_all();
}

/* ---------------------------------------------------- no peer gets it --- */

static void test_sync_refuses_a_secret(void **state)
{
    (void)state;
    static const char key[] = "sk-kope-sync-77e1b0a5c2";
    struct dev a, b;
    dev_make(&a, "sync_a", "k3", &fleet_ca);
    dev_make(&b, "sync_b", "k3", &fleet_ca);
    /* a record that holds the key, written before it was registered (an
     * older store, or one made where the key was never loaded) */
    dev_work(&a, "add", 2, 0);
    cJSON *body = cJSON_CreateObject();
    char why[128];
    snprintf(why, sizeof why, "reason %s", key);
    cJSON_AddStringToObject(body, "rationale", why);
    assert_int_equal(graph_decision_add(&a.g, a.task, NULL, "k3", body, NULL), 0);
    cJSON_Delete(body);
    assert_int_equal(graph_checkpoint(&a.g), 0);
    assert_int_equal(secret_add(key, strlen(key), "the LLM API key"), 0);
    struct srv s;
    srv_start(&s, &b, 5000);
    struct sync_stats st;
    memset(&st, 0, sizeof st);
    int rc = client_sync(&a, &s, &st);
    fprintf(stderr, "sync: %d (%s)\n", rc, kope_strerror(rc));
    assert_int_equal(rc, KOPE_ERR_SECRET);
    srv_wait(&s, 1);
    srv_stop(&s);
    dev_free(&a);
    dev_free(&b);
    assert_false(file_has(tpath("sync_b.db"), key));
    secret_forget_all();
}

/* ------------------------------------------ through kope, a user's way --- */

/* KOPE_LLM_API_KEY set, kope run offline with a seed that (a) has the key
 * in a comment: refused with a clear error, nothing of it stored; (b) makes
 * the compiler say it (an identifier pasted from two halves, so the source
 * holds no copy): the diagnostic is stored redacted. */
static void test_kope_run_never_stores_the_key(void **state)
{
    (void)state;
    if (!getenv("KOPE_BIN"))
        skip();
    static const char key[] = "kopeTestKey_7f3a9b2c41";
    const char *db = tpath("run.db"), *suite = tpath("run.json");
    test_store_init(db);
    test_write_text(suite, "{\"suite\": \"sec\", \"tasks\": [{\"name\": \"sec-add\", \"op\": \"add\","
                           " \"dtype\": \"f32\", \"shape\": {\"n\": 1000}}]}\n");
    const char *a = tpath("seed-comment.c"), *b = tpath("seed-diag.c");
    char src[2048];
    snprintf(src, sizeof src, "/* %s */\n#include <stddef.h>\n#include \"kernel_abi.h\"\n"
             "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
             "                 const struct kope_scalars *s) {\n"
             "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n", key);
    test_write_text(a, src);
    test_write_text(b, "#include <stddef.h>\n#include \"kernel_abi.h\"\n#define CAT(p, q) p##q\n"
                       "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
                       "                 const struct kope_scalars *s) {\n"
                       "  (void)s; (void)CAT(kopeTestKey_, 7f3a9b2c41);\n"
                       "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n");
    static char out[1 << 16];
    int rc = run_cmd(out, sizeof out, "KOPE_LLM_API_KEY=%s %s --db %s run --suite %s --task sec-add --seed %s "
                     "--budget 1 --offline", key, kope_bin(), db, suite, a);
    fprintf(stderr, "comment: exit %d\n%s\n", rc, out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "the LLM API key"));
    assert_null(strstr(out, key));
    rc = run_cmd(out, sizeof out, "KOPE_LLM_API_KEY=%s %s --db %s run --suite %s --task sec-add --seed %s "
                 "--budget 1 --offline --fresh", key, kope_bin(), db, suite, b);
    fprintf(stderr, "diag: exit %d\n%s\n", rc, out);
    assert_true(rc == 0 || rc == 1);
    assert_non_null(strstr(out, "[redacted]"));
    assert_null(strstr(out, key));
    assert_false(file_has(db, key));
    assert_true(file_has(db, "[redacted]"));
    rc = run_cmd(out, sizeof out, "KOPE_LLM_API_KEY=%s %s --db %s context sec-add --suite %s", key, kope_bin(), db,
                 suite);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, key));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_and_redact),
        cmocka_unit_test(test_private_key_forms),
        cmocka_unit_test(test_graph_refuses_a_secret),
        cmocka_unit_test(test_import_refuses_a_secret),
        cmocka_unit_test(test_prompt_refuses_a_secret),
        cmocka_unit_test(test_sync_refuses_a_secret),
        cmocka_unit_test(test_kope_run_never_stores_the_key),
    };
    return cmocka_run_group_tests_name("secret", tests, setup_all, teardown_all);
}

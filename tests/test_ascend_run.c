/*
 * tests/test_ascend_run.c - `kope run --platform ascend` against the fake
 * CANN toolkit (tests/fake-cann) through the real binary:
 *   - offline: the platform's starter kernel for one task of every family
 *     goes through compile, verify, measure and is recorded, target ascend;
 *   - with an LLM (the loopback TLS server of tests/tls_server.c replaying
 *     Ascend C replies): every failure kind comes back from the platform as
 *     a recorded outcome with target ascend - compile error, wrong result,
 *     AI Core exception (crash), hang (timeout), unwritten output,
 *     out-of-bounds write - and a good kernel passes.
 * Results are the fake toolkit's (host CPU), labelled emulated: nothing here
 * is an NPU result.
 */
#include "testutil.h"

#include <cJSON.h>

#include "core/graph/graph.h"
#include "store/store.h"

#include "tls_server.c"
#include "context_check.c"

/* tls_server.c helpers this test does not use */
static void unused_ts(void) __attribute__((unused));
static void unused_ts(void)
{
    (void)ts_header;
    (void)ts_closed_port;
}

static struct ts_pki pki;
static char g_src[1024];

static int setup(void **state)
{
    (void)state;
    /* $KOPE_SRC first: cross-testing, $KOPE_BIN is the qemu wrapper in /tmp */
    const char *src = getenv("KOPE_SRC");
    const char *bin = getenv("KOPE_BIN");
    const char *b = bin ? strstr(bin, "/build/") : NULL;
    if (src && *src && strlen(src) < sizeof g_src) {
        snprintf(g_src, sizeof g_src, "%s", src);
    } else if (b && (size_t)(b - bin) < sizeof g_src) {
        memcpy(g_src, bin, (size_t)(b - bin));
        g_src[b - bin] = '\0';
    }
    return ts_pki_make(getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp", &pki);
}

/* Config: the fake toolkit and npu-smi, short timeouts. */
static const char *write_config(void)
{
    const char *p = tpath("kope.json");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"platform\": {\"name\": \"ascend\", \"ascend\": {\"home\": \"%s/tests/fake-cann\", "
               "\"npu_smi\": \"%s/tests/fake-cann/driver/npu-smi\", \"timeout_ms\": 5000, "
               "\"min_repeat_ms\": 5, \"max_repeats\": 20}}}\n",
            g_src, g_src);
    fclose(f);
    return p;
}

static const char *write_suite(const char *name, const char *json)
{
    const char *p = tpath("%s", name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    return p;
}

/* Outcome statuses of one task's trials; every decision and outcome must
 * carry target ascend. */
struct counts {
    int dec, pass, starter, llm;
    int status[16];
};
static const char *const statuses[] = {"compile_error", "wrong_result", "crash", "timeout",
                                       "unwritten_output", "out_of_bounds_write", NULL};

static void count_task(const char *db, const char *task, struct counts *c)
{
    struct store *st;
    char err[256];
    memset(c, 0, sizeof *c);
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    struct graph g;
    graph_init(&g, st);
    uint8_t id[32];
    assert_int_equal(graph_task_find(&g, task, id), 0);
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "target");
        const cJSON *ot = cJSON_GetObjectItemCaseSensitive(t.nodes[i].out.json, "target");
        assert_true(cJSON_IsString(dt) && strcmp(dt->valuestring, "ascend") == 0);
        assert_true(cJSON_IsString(ot) && strcmp(ot->valuestring, "ascend") == 0);
        const cJSON *db_ = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
        const cJSON *ob = cJSON_GetObjectItemCaseSensitive(t.nodes[i].out.json, "body");
        const cJSON *who = cJSON_GetObjectItemCaseSensitive(db_, "proposer");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(ob, "status");
        c->dec++;
        if (cJSON_IsString(who) && strcmp(who->valuestring, "starter") == 0)
            c->starter++;
        if (cJSON_IsString(who) && strcmp(who->valuestring, "llm") == 0)
            c->llm++;
        assert_true(cJSON_IsString(s));
        c->pass += strcmp(s->valuestring, "pass") == 0;
        for (int k = 0; statuses[k]; k++)
            c->status[k] += strcmp(s->valuestring, statuses[k]) == 0;
    }
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
}

static void test_run_offline_every_family(void **state)
{
    (void)state;
    if (!g_src[0]) {
        print_message("skip: no source tree ($KOPE_SRC or $KOPE_BIN)\n");
        skip();
    }
    static char out[65536];
    const char *cfg = write_config();
    const char *suite = write_suite(
        "families.json",
        "{\"suite\":\"ascend-families\",\"tasks\":["
        "{\"name\":\"add-1003\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1003}},"
        "{\"name\":\"softmax-3x333\",\"op\":\"softmax\",\"dtype\":\"f32\",\"shape\":{\"rows\":3,\"cols\":333}},"
        "{\"name\":\"argmax-5x777\",\"op\":\"argmax\",\"dtype\":\"f32\",\"shape\":{\"rows\":5,\"cols\":777}},"
        "{\"name\":\"gemm_nt-7x40x19\",\"op\":\"gemm_nt\",\"dtype\":\"f32\",\"shape\":{\"m\":7,\"n\":40,\"k\":19}}]}");
    const char *db = tpath("offline.db");
    test_store_init(db);
    unsetenv("KOPE_LLM_BASE_URL");
    int rc = run_cmd(out, sizeof out, "%s --db %s --config %s run --suite %s --budget 2 --offline",
                     kope_bin(), db, cfg, suite);
    if (rc)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "passed 4/4 tasks"));
    assert_non_null(strstr(out, "ascend-starter-matmul"));
    static const char *const tasks[] = {"add-1003", "softmax-3x333", "argmax-5x777", "gemm_nt-7x40x19"};
    for (int i = 0; i < 4; i++) {
        struct counts c;
        count_task(db, tasks[i], &c);
        assert_int_equal(c.dec, 1); /* offline: the starter, then nothing else to propose */
        assert_int_equal(c.starter, 1);
        assert_int_equal(c.pass, 1);
    }
    /* the shard carries them as target ascend (what syncs to K3 devices) */
    rc = run_cmd(out, sizeof out, "%s --db %s graph export 2>/dev/null | grep -c '\"target\":\"ascend\"'",
                 kope_bin(), db);
    assert_int_equal(rc, 0);
    assert_true(atoi(out) >= 12); /* 4 tasks, 4 decisions, 4 outcomes (+ insights) */
}

/* A chat completion whose content is the reply format around src. */
static char *chat_body(const char *tags, const char *src)
{
    char *content = malloc(strlen(src) + 512);
    assert_non_null(content);
    sprintf(content, "TAGS: %s\nRATIONALE: test reply\n```cpp\n%s\n```\n", tags, src);
    cJSON *j = cJSON_CreateObject(), *ch = cJSON_AddArrayToObject(j, "choices"), *c0 = cJSON_CreateObject();
    cJSON *msg = cJSON_AddObjectToObject(c0, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddStringToObject(msg, "content", content);
    cJSON_AddStringToObject(c0, "finish_reason", "stop");
    cJSON_AddItemToArray(ch, c0);
    cJSON_AddStringToObject(j, "model", "test-model");
    cJSON *u = cJSON_AddObjectToObject(j, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", 100);
    cJSON_AddNumberToObject(u, "completion_tokens", 50);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    free(content);
    return out;
}

static char *kernel_file(const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/tests/ascend-kernels/%s", g_src, name);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 16);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_run_llm_failure_kinds(void **state)
{
    (void)state;
    if (!g_src[0]) {
        print_message("skip: no source tree ($KOPE_SRC or $KOPE_BIN)\n");
        skip();
    }
    static char out[65536];
    static const char *const files[] = {"add_compile_error.cpp", "add_wrong.cpp", "add_crash.cpp",
                                        "add_hang.cpp", "add_unwritten.cpp", "add_oob.cpp", "add_ok.cpp"};
    enum { N = sizeof files / sizeof files[0] };
    char *bodies[N];
    struct ts_reply script[N];
    memset(script, 0, sizeof script);
    for (int i = 0; i < N; i++) {
        char *src = kernel_file(files[i]);
        bodies[i] = chat_body(files[i], src);
        free(src);
        script[i].status = 200;
        script[i].body = bodies[i];
    }
    struct ts_server srv;
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, N), 0);
    ts_llm_env(srv.port, pki.ca);
    const char *cfg = write_config();
    const char *suite = write_suite(
        "add.json", "{\"suite\":\"ascend-add\",\"tasks\":["
                    "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}}]}");
    const char *db = tpath("llm.db");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s --config %s run --suite %s --budget %d", kope_bin(), db, cfg,
                     suite, N + 1);
    if (rc)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "passed 1/1 tasks"));
    assert_int_equal(srv.n_req, N);
    /* the prompts are Ascend C prompts, and feedback reaches the next one */
    assert_non_null(strstr(srv.req[0].body, "kope_ascend.h"));
    assert_non_null(strstr(srv.req[1].body, "compile_error"));
    assert_non_null(strstr(srv.req[1].body, "undeclared_tile_count"));
    struct counts c;
    count_task(db, "add-a", &c);
    assert_int_equal(c.dec, N + 1);
    assert_int_equal(c.starter, 1);
    assert_int_equal(c.llm, N);
    assert_int_equal(c.pass, 2); /* the starter and add_ok.cpp */
    for (int k = 0; statuses[k]; k++) {
        if (c.status[k] != 1)
            print_error("status %s: %d outcomes\n", statuses[k], c.status[k]);
        assert_int_equal(c.status[k], 1);
    }
    ts_stop(&srv);
    for (int i = 0; i < N; i++)
        free(bodies[i]);
    unsetenv("KOPE_LLM_BASE_URL");
}

/* `kope context TASK --platform ascend` is byte for byte the prompt the
 * next `kope run --platform ascend` sends (the same builder with the target's
 * prompt contract), against what the loopback server receives; and that
 * prompt is the Ascend target's: its contract, signature, fence language
 * and knowledge, no RISC-V notes. */
static void test_context_is_what_run_sends(void **state)
{
    (void)state;
    if (!g_src[0]) {
        print_message("skip: no source tree ($KOPE_SRC or $KOPE_BIN)\n");
        skip();
    }
    static char out[65536], ctx[262144];
    const char *cfg = write_config();
    const char *suite = write_suite(
        "ctx.json", "{\"suite\":\"ascend-ctx\",\"tasks\":["
                    "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}}]}");
    const char *db = tpath("ctx.db");
    test_store_init(db);
    unsetenv("KOPE_LLM_BASE_URL");
    /* run 1, offline: the starter is the task's best */
    int rc = run_cmd(out, sizeof out, "%s --db %s --config %s run --suite %s --budget 1 --offline", kope_bin(),
                     db, cfg, suite);
    if (rc)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    char *src = kernel_file("add_ok.cpp"), *body = chat_body("ok", src);
    const struct ts_reply script[] = {{.status = 200, .body = body}};
    struct ts_server srv;
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    ts_llm_env(srv.port, pki.ca);
    /* the target from the command line, as a user would give it */
    rc = run_cmd(ctx, sizeof ctx, "%s --db %s --config %s context add-a --suite %s --platform ascend", kope_bin(),
                 db, cfg, suite);
    if (rc)
        print_error("%s\n", ctx);
    assert_int_equal(rc, 0);
    rc = run_cmd(out, sizeof out, "%s --db %s --config %s run --suite %s --task add-a --budget 1 --platform ascend",
                 kope_bin(), db, cfg, suite);
    if (rc)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 1);
    assert_context_is(ctx, &srv.req[0]);
    /* the ascend contract, not the k3 one */
    char *sys, *usr;
    sent_messages(&srv.req[0], &sys, &usr);
    assert_non_null(strstr(sys, "for the ascend target (an Ascend NPU"));
    assert_non_null(strstr(sys, "\"kope_ascend.h\""));
    assert_non_null(strstr(sys, "\n```cpp\n"));
    assert_null(strstr(sys, "riscv_vector.h"));
    assert_non_null(strstr(usr, "__global__ __aicore__ void kope_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out"));
    /* the starter as current best, fenced in the target's language */
    assert_non_null(strstr(usr, "## Current best kernel (pass)\n```cpp\n// kope built-in Ascend C starter"));
    /* knowledge: the target's files (the printout names each item's ref) */
    assert_non_null(strstr(ctx, "knowledge/ascendc.md#"));
    assert_null(strstr(ctx, "knowledge/rvv-intrinsics.md"));
    assert_null(strstr(ctx, "knowledge/x100-k3.md"));
    free(sys);
    free(usr);
    ts_stop(&srv);
    free(src);
    free(body);
    unsetenv("KOPE_LLM_BASE_URL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_offline_every_family),
        cmocka_unit_test(test_run_llm_failure_kinds),
        cmocka_unit_test(test_context_is_what_run_sends),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

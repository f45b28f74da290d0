/*
 * tests/test_agent_llm.c - the agent's LLM path end to end against the
 * loopback TLS server (tests/tls_server.c), and the queue's durability.
 *
 *   - `kope run` with an endpoint: trial 1 is the tuner's safe default, then
 *     the LLM proposes; its replies become decisions, and the compile error
 *     and the wrong result of one attempt are in the next request's prompt.
 *   - calls queued while the link is down are sent by `kope queue flush`,
 *     which is SIGKILLed at 20 random points while calls are sent and
 *     replies applied; afterwards every call was applied exactly once and
 *     the store passes PRAGMA integrity_check.
 */
#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <time.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "net/llm.h"
#include "platform/k3/k3_templates.h"
#include "store/queue.h"
#include "store/store.h"

#include "tls_server.c"
#include "context_check.c"

static struct ts_pki pki;

static int setup(void **state)
{
    (void)state;
    return ts_pki_make(getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp", &pki);
}

static const char *SUITE = "{\"suite\":\"one\",\"tasks\":["
                           "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}}]}";

static const char *write_suite(void)
{
    const char *p = tpath("one.json");
    test_write_text(p, SUITE);
    return p;
}

/* The id of task `name` in the store at db (opened and closed here). */
static void task_id_of(const char *db, const char *name, uint8_t id[32])
{
    struct store *st;
    char err[256];
    struct graph g;
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_task_find(&g, name, id), 0);
    graph_free(&g);
    store_close(st);
}

/* A chat completion whose content is the reply format around src. */
static char *chat_body(const char *tags, const char *src)
{
    char *content = malloc(strlen(src) + 512);
    assert_non_null(content);
    sprintf(content, "TAGS: %s\nRATIONALE: test reply\n```c\n%s\n```\n", tags, src);
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

/* A chat completion with this content, finish_reason and reasoning_content. */
static char *chat_raw(const char *content, const char *finish, const char *reasoning)
{
    cJSON *j = cJSON_CreateObject(), *ch = cJSON_AddArrayToObject(j, "choices"), *c0 = cJSON_CreateObject();
    cJSON *msg = cJSON_AddObjectToObject(c0, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddStringToObject(msg, "content", content);
    if (reasoning)
        cJSON_AddStringToObject(msg, "reasoning_content", reasoning);
    cJSON_AddStringToObject(c0, "finish_reason", finish);
    cJSON_AddItemToArray(ch, c0);
    cJSON *u = cJSON_AddObjectToObject(j, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", 100);
    cJSON_AddNumberToObject(u, "completion_tokens", 4096);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

static const char *BAD_COMPILE =
    "#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)\n"
    "{ (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i] + no_such_variable; }\n";
static const char *WRONG =
    "#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s)\n"
    "{ (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] - y[i]; }\n";

/* text holds WRONG's failing values (trial_fail_values): the element's
 * inputs, the reference x + y and what the kernel wrote, x - y, as numbers
 * and bits. Checked against each other, not against a fixed string, so the
 * values are the judge's own, not a label. */
static void assert_fail_values(const char *text)
{
    const char *p = strstr(text, "; element ");
    assert_non_null(p);
    unsigned long long idx;
    double x, y, ref, got;
    unsigned bits;
    assert_int_equal(sscanf(p, "; element %llu: x=%lf y=%lf expected %lf, got %lf (0x%x)", &idx, &x, &y, &ref,
                            &got, &bits), 6);
    assert_true(fabs(ref - (x + y)) <= 1e-6 * (1 + fabs(ref)));
    assert_true(fabs(got - (double)((float)x - (float)y)) <= 1e-6 * (1 + fabs(got)));
    float f = (float)got;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    assert_int_equal(fb, bits);
}

/* The cost breakdown after a pass (core/agent/prompt.c cost_text) in a
 * prompt: its parts add up, and its totals are the counts the judge
 * recorded for the task's trial 1 in the store at db (the same run's
 * outcome, not a label). The tuner's default add is the current best. */
static void assert_cost_breakdown(const char *body, const char *db)
{
    const char *p = strstr(body, "Cost of this kernel: vcost ");
    assert_non_null(p);
    double vc, vec, sc, per, el, ins, va, vm, s2, vs;
    assert_int_equal(sscanf(p, "Cost of this kernel: vcost %lf = vector %lf + scalar %lf (%lf per element of %lf); "
                               "executed %lf instructions: %lf vector arithmetic, %lf vector load/store, %lf scalar "
                               "(%lf of them vsetvl)",
                            &vc, &vec, &sc, &per, &el, &ins, &va, &vm, &s2, &vs), 10);
    assert_true(vc == vec + sc && ins == va + vm + s2 && sc == s2);
    assert_true(el == 1000 && fabs(per - vc / 1000) <= 1e-3 * per);
    assert_true(va > 0 && vm > 0 && vs > 0 && vs < s2); /* an RVV loop: vector work and its vsetvls */
    /* the hottest block: the add's loop, most of the call's instructions */
    const char *hb = strstr(p, "; hottest block: ");
    assert_non_null(hb);
    double hi, hv, hm, hs, ho, he;
    assert_int_equal(sscanf(hb, "; hottest block: %lf instructions (%lf vector arithmetic, %lf vector load/store, "
                                "%lf vsetvl, %lf other scalar) run %lf times",
                            &hi, &hv, &hm, &hs, &ho, &he), 6);
    assert_true(hi == hv + hm + hs + ho && hv > 0 && hm > 0 && he > 1);
    assert_true(hi * he <= ins && 2 * hi * he > ins);
    const char *o = strstr(p, "; object: ");
    assert_non_null(o);
    unsigned vsp, vrl, sst, sld;
    assert_int_equal(sscanf(o, "; object: %u vector register spills, %u reloads (whole-register stores/loads); "
                               "%u stack stores, %u loads",
                            &vsp, &vrl, &sst, &sld), 4);
    assert_int_equal(vsp, 0); /* a strip-mined add has nothing to spill */
    assert_non_null(strstr(o, "It is the current best."));
    /* ... and the best's own, beside its source: the same figures */
    const char *bc = strstr(body, "Its cost: vcost ");
    assert_non_null(bc);
    double bvc;
    assert_int_equal(sscanf(bc, "Its cost: vcost %lf", &bvc), 1);
    assert_true(bvc == vc);
    /* the same figures as the outcome the judge recorded */
    struct store *st;
    char err[256];
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    struct graph g;
    graph_init(&g, st);
    uint8_t id[32];
    assert_int_equal(graph_task_find(&g, "add-a", id), 0);
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    int found = 0;
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *ob = cJSON_GetObjectItemCaseSensitive(t.nodes[i].out.json, "body");
        const cJSON *db_ = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(db_, "trial");
        if (!cJSON_IsNumber(tr) || tr->valuedouble != 1)
            continue;
        found = 1;
        assert_true(cJSON_GetObjectItemCaseSensitive(ob, "vcost")->valuedouble == vc);
        assert_true(cJSON_GetObjectItemCaseSensitive(ob, "icount")->valuedouble == ins);
        const cJSON *mix = cJSON_GetObjectItemCaseSensitive(ob, "mix");
        assert_true(cJSON_GetObjectItemCaseSensitive(mix, "vsetvl")->valuedouble == vs);
    }
    assert_true(found);
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
}

static char *good_source(void)
{
    const struct k3_template *tp = k3_template_for(PLAT_OP_ADD);
    int v[K3_PARAM_MAX];
    plat_point_default(&tp->sp, v);
    v[0] = 2; /* LMUL 2: a valid point that is not the default (usually) */
    if (!plat_point_valid(&tp->sp, v))
        plat_point_default(&tp->sp, v);
    char *src = k3_point_source(tp, v, NULL);
    assert_non_null(src);
    return src;
}

static void llm_env(int port)
{
    ts_llm_env(port, pki.ca);
    unsetenv("KOPE_CONFIG");
}

/* A loopback LLM server replaying script, and kope's environment pointed at it. */
static void serve_llm(struct ts_server *srv, const struct ts_reply *script, int n)
{
    assert_int_equal(ts_start(srv, pki.cert, pki.key, script, n), 0);
    llm_env(srv->port);
}

struct llm_count {
    int dec, llm, pass, compile_error, wrong;
    int llm_cached;   /* passing LLM trials measured against the run's cached baselines */
    int llm_emulated; /* passing LLM trials measured under emulation */
    long tokens;
};

static void count_llm(const char *db, struct llm_count *c)
{
    struct store *st;
    char err[256];
    memset(c, 0, sizeof *c);
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    struct graph g;
    graph_init(&g, st);
    uint8_t id[32];
    assert_int_equal(graph_task_find(&g, "add-a", id), 0);
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *db_ = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
        const cJSON *ob = cJSON_GetObjectItemCaseSensitive(t.nodes[i].out.json, "body");
        const cJSON *who = cJSON_GetObjectItemCaseSensitive(db_, "proposer");
        const cJSON *st_ = cJSON_GetObjectItemCaseSensitive(ob, "status");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(db_, "tokens");
        c->dec++;
        if (cJSON_IsString(who) && strcmp(who->valuestring, "llm") == 0) {
            c->llm++;
            assert_true(cJSON_IsObject(tk));
            c->tokens += (long)cJSON_GetObjectItemCaseSensitive(tk, "in")->valuedouble +
                         (long)cJSON_GetObjectItemCaseSensitive(tk, "out")->valuedouble;
            c->llm_cached += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ob, "baselines_cached"));
            c->llm_emulated += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ob, "emulated"));
        }
        assert_true(cJSON_IsString(st_));
        c->pass += strcmp(st_->valuestring, "pass") == 0;
        c->compile_error += strcmp(st_->valuestring, "compile_error") == 0;
        c->wrong += strcmp(st_->valuestring, "wrong_result") == 0;
    }
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
}

static void test_llm_loop(void **state)
{
    (void)state;
    static char out[65536];
    char *good = good_source();
    char *b1 = chat_body("broken", BAD_COMPILE), *b2 = chat_body("scalar-sub", WRONG),
         *b3 = chat_body("lmul2", good);
    const struct ts_reply script[] = {{.status = 200, .body = b1}, {.status = 200, .body = b2},
                                      {.status = 200, .body = b3}};
    struct ts_server srv;
    serve_llm(&srv, script, 3);
    const char *db = tpath("llm.db"), *suite = write_suite();
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 4", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "passed 1/1 tasks"));
    assert_non_null(strstr(out, "450 LLM tokens"));
    { /* the live line of the passing LLM trial says its ratio */
        const char *l = strstr(out, "applied to add-a: pass ");
        assert_non_null(l);
        double x;
        char vs[8];
        assert_int_equal(sscanf(l, "applied to add-a: pass %lfx %3s", &x, vs), 2);
        assert_true(x > 0);
        assert_string_equal(vs, "vs");
    }
    assert_int_equal(srv.n_req, 3);
    assert_cost_breakdown(srv.req[0].body, db); /* trial 1 passed: its cost, in the next prompt */
    /* the compile error, then the wrong result, come back in the next prompt */
    assert_non_null(strstr(srv.req[1].body, "compile_error"));
    assert_non_null(strstr(srv.req[1].body, "no_such_variable"));
    assert_non_null(strstr(srv.req[2].body, "wrong_result"));
    assert_fail_values(srv.req[2].body); /* ... with the failing element's values */
    /* ... with the kernel that failed and what the judge's cases hold */
    assert_true(strstr(srv.req[2].body, "The kernel that failed:") || strstr(srv.req[2].body, "Its diff against"));
    assert_non_null(strstr(srv.req[2].body, "out[i] = x[i] - y[i];"));
    assert_non_null(strstr(srv.req[2].body, "The judge's cases, in order: the task shape, then n=1"));
    assert_string_equal(ts_header(&srv.req[0], "Authorization"), "Bearer sk-test");
    struct llm_count c;
    count_llm(db, &c);
    assert_int_equal(c.dec, 4);
    assert_int_equal(c.llm, 3);
    assert_int_equal(c.compile_error, 1);
    assert_int_equal(c.wrong, 1);
    assert_int_equal(c.pass, 2);
    assert_int_equal(c.tokens, 450);
    /* under emulation the passing LLM kernel was measured alone, against the
     * baselines the tuner's first trial measured (the loop's cache); natively
     * every trial measures its own */
    assert_int_equal(c.llm_cached, c.llm_emulated);
#if defined(__x86_64__)
    assert_int_equal(c.llm_emulated, 1); /* k3 kernels run under qemu on this host */
#endif
    /* each call is in the queue, applied */
    rc = run_cmd(out, sizeof out, "%s --db %s queue list", kope_bin(), db);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "pending"));
    assert_non_null(strstr(out, "done"));
    /* the token cap counts the next call's cost (prompt + up to max_tokens)
     * before it is made: a cap the first call could pass sends nothing */
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 2 --fresh --tokens 10000", kope_bin(), db,
                 suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 3);
    assert_non_null(strstr(out, "would pass the run's token cap"));
    /* --offline never calls */
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 2 --offline", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 3);
    ts_stop(&srv);
    free(b1);
    free(b2);
    free(b3);
    free(good);
}

/* `kope queue flush` against a server answering one good kernel: exits 0
 * after exactly one request (out gets its output). */
static void flush_one_good(const char *db, char *out, size_t cap)
{
    char *good = good_source(), *body = chat_body("lmul2", good);
    const struct ts_reply script[] = {{.status = 200, .body = body}};
    struct ts_server srv;
    serve_llm(&srv, script, 1);
    int rc = run_cmd(out, cap, "%s --db %s queue flush", kope_bin(), db);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 1);
    ts_stop(&srv);
    free(body);
    free(good);
}

/* A dead link: the call is queued and the tuner carries on. The run must
 * not retry the link within its trials whatever the machine's speed (with
 * the compiled-in 30 s backoff, trials slower than 30 s in all made a
 * second queued call): the backoff is set to a day here, so "1 queued" is
 * an event count, not a race with the clock. */
static void test_link_down_queues(void **state)
{
    (void)state;
    static char out[65536];
    llm_env(ts_closed_port());
    setenv("KOPE_LLM_LINK_BACKOFF_MS", "86400000", 1);
    const char *db = tpath("down.db"), *suite = write_suite();
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 3", kope_bin(), db, suite);
    unsetenv("KOPE_LLM_LINK_BACKOFF_MS");
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "passed 1/1 tasks"));
    assert_non_null(strstr(out, "1 queued"));
    rc = run_cmd(out, sizeof out, "%s --db %s queue list", kope_bin(), db);
    assert_non_null(strstr(out, "pending"));
    /* a flush that cannot send says so in its exit code */
    rc = run_cmd(out, sizeof out, "%s --db %s queue flush", kope_bin(), db);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "still queued 1"));
    /* the link is back: the flushed reply is a trial of the run that queued
     * the call, and its tokens count toward that run */
    flush_one_good(db, out, sizeof out);
    struct store *st;
    char err[256], *cur = NULL;
    int64_t run = 0;
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    assert_int_equal(store_run_find(st, "one", "done", &run, &cur), 0);
    cJSON *cj = cJSON_Parse(cur);
    assert_non_null(cj);
    assert_int_equal((long)cJSON_GetObjectItemCaseSensitive(cj, "tokens")->valuedouble, 150);
    cJSON_Delete(cj);
    free(cur);
    struct graph g;
    graph_init(&g, st);
    uint8_t id[32];
    assert_int_equal(graph_task_find(&g, "add-a", id), 0);
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    int llm = 0;
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
        const cJSON *who = cJSON_GetObjectItemCaseSensitive(bd, "proposer");
        if (cJSON_IsString(who) && strcmp(who->valuestring, "llm") == 0) {
            llm++;
            const cJSON *rn = cJSON_GetObjectItemCaseSensitive(bd, "run");
            assert_true(cJSON_IsNumber(rn));
            assert_int_equal((int64_t)rn->valuedouble, run);
            assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(bd, "trial")->valuedouble, 4);
        }
    }
    assert_int_equal(llm, 1);
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
    /* applied: nothing left to drop */
    rc = run_cmd(out, sizeof out, "%s --db %s queue drop 1", kope_bin(), db);
    assert_int_equal(rc, 1);
    rc = run_cmd(out, sizeof out, "%s --db %s queue bogus", kope_bin(), db);
    assert_int_equal(rc, 2);
}

/* The setting is what the run waits on: with a 1 ms backoff the link is
 * retried at the next proposal (two or more "link down" lines in one run);
 * with the compiled-in 30 s there would be one. No time is measured. */
static void test_link_backoff_is_a_setting(void **state)
{
    (void)state;
    static char out[65536];
    llm_env(ts_closed_port());
    setenv("KOPE_LLM_LINK_BACKOFF_MS", "1", 1);
    const char *db = tpath("retry.db"), *suite = write_suite();
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 3", kope_bin(), db, suite);
    unsetenv("KOPE_LLM_LINK_BACKOFF_MS");
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    int downs = 0;
    for (const char *p = out; (p = strstr(p, "llm: link down")); p++)
        downs++;
    if (downs < 2)
        fail_msg("the link was tried %d time(s) with a 1 ms backoff:\n%s", downs, out);
    /* out of range: refused with the setting's name */
    setenv("KOPE_LLM_LINK_BACKOFF_MS", "0", 1);
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1", kope_bin(), db, suite);
    unsetenv("KOPE_LLM_LINK_BACKOFF_MS");
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "KOPE_LLM_LINK_BACKOFF_MS"));
}

/* ------------------------------------------------------ the kill test */

#define N_CALLS_MAX 64
#define N_KILLS 20      /* kills that must land while calls wait or replies are applied */
#define N_TRIES 80      /* flushes at most */

static int rows_done(void *ctx, const struct store_queue_row *r)
{
    int *n = ctx;
    if (strcmp(r->state, "done") == 0)
        (*n)++;
    return 0;
}

/* Queue n more calls (as a run does when the link is down). */
static void push_calls(const char *db, const uint8_t task[32], int n, int64_t *qids, int *nq)
{
    struct store *st;
    char err[256];
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    struct graph g;
    graph_init(&g, st);
    struct graph_tree t;
    assert_int_equal(graph_tree_load(&g, task, &t), 0);
    assert_true(t.n >= 1);
    for (int i = 0; i < n && *nq < N_CALLS_MAX; i++) {
        char prompt[128], ref[GRAPH_BLOB_REF];
        uint8_t h[32];
        snprintf(prompt, sizeof prompt, "{\"system\":\"s\",\"user\":\"call %d\",\"est\":10}", *nq);
        assert_int_equal(graph_blob_put(&g, prompt, strlen(prompt), ref), 0);
        for (int k = 0; k < 32; k++)
            sscanf(ref + 7 + 2 * k, "%2hhx", &h[k]);
        assert_int_equal(store_queue_push(st, task, t.nodes[0].dec.id, h, 1, &qids[*nq]), 0);
        (*nq)++;
    }
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
}

static int64_t open_calls(const char *db)
{
    struct store *st;
    char err[256];
    int64_t p = 0, s = 0;
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    assert_int_equal(store_queue_count(st, "pending", &p), 0);
    assert_int_equal(store_queue_count(st, "sent", &s), 0);
    store_close(st);
    return p + s;
}

/* A queue row whose prompt is malformed is dropped with its reason; the
 * pump does not take it for a dead link and sends the next row. */
static void test_malformed_row_not_link_down(void **state)
{
    (void)state;
    static char out[65536];
    const char *db = tpath("badrow.db"), *suite = write_suite();
    unsetenv("KOPE_LLM_BASE_URL");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    struct store *st;
    char err[256];
    struct graph g;
    struct graph_tree t;
    uint8_t task[32], h[32];
    char ref[GRAPH_BLOB_REF];
    int64_t qid;
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_task_find(&g, "add-a", task), 0);
    assert_int_equal(graph_tree_load(&g, task, &t), 0);
    assert_int_equal(graph_blob_put(&g, "not a prompt", 12, ref), 0);
    for (int k = 0; k < 32; k++)
        sscanf(ref + 7 + 2 * k, "%2hhx", &h[k]);
    assert_int_equal(store_queue_push(st, task, t.nodes[0].dec.id, h, 1, &qid), 0);
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
    int64_t qids[N_CALLS_MAX];
    int nq = 0;
    push_calls(db, task, 1, qids, &nq);
    flush_one_good(db, out, sizeof out);
    assert_non_null(strstr(out, "sent 1, applied 1, still queued 0"));
    rc = run_cmd(out, sizeof out, "%s --db %s queue list", kope_bin(), db);
    assert_non_null(strstr(out, "malformed prompt"));
}

static void test_queue_kill(void **state)
{
    (void)state;
    static char out[65536];
    const char *db = tpath("kill.db"), *suite = write_suite();
    test_store_init(db);
    /* identity, task record and a first decision, offline */
    unsetenv("KOPE_LLM_BASE_URL");
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    uint8_t task[32];
    task_id_of(db, "add-a", task);
    int64_t qids[N_CALLS_MAX];
    int nq = 0;
    push_calls(db, task, 8, qids, &nq);

    /* every reply a different kernel (a numbered comment): a kernel the
     * graph already holds verified is not measured again, and the kills
     * must land while replies are measured */
    char *good = good_source();
    enum { N_REPLIES = 160 };
    static struct ts_reply script[N_REPLIES];
    char *bodies[N_REPLIES];
    for (int i = 0; i < N_REPLIES; i++) {
        char *src = malloc(strlen(good) + 32);
        assert_non_null(src);
        sprintf(src, "/* reply %d */\n%s", i, good);
        bodies[i] = chat_body("lmul2", src);
        free(src);
        script[i].status = 200;
        script[i].body = bodies[i];
    }
    struct ts_server srv;
    serve_llm(&srv, script, N_REPLIES);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    /* kill `kope queue flush` at random points until N_KILLS kills have
     * landed mid-work; when the queue runs dry, more calls are queued */
    int killed = 0, tries = 0;
    for (; killed < N_KILLS && tries < N_TRIES; tries++) {
        if (open_calls(db) == 0)
            push_calls(db, task, 4, qids, &nq);
        int ms = 20 + rand() % 1800;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            dup2(fd, 2);
            execl(kope_bin(), "kope", "--db", db, "queue", "flush", (char *)NULL);
            _exit(127);
        }
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int wst;
        waitpid(pid, &wst, 0);
        killed += WIFSIGNALED(wst);
    }
    rc = run_cmd(out, sizeof out, "%s --db %s queue flush", kope_bin(), db);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "still queued 0"));
    ts_stop(&srv);
    print_message("%d kills landed in %d flushes; %d calls queued in all\n", killed, tries, nq);
    assert_int_equal(killed, N_KILLS);

    struct store *st;
    struct graph g;
    struct graph_tree t;
    char err[256];
    /* every call applied exactly once */
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    assert_int_equal(store_integrity_check(st), 0);
    int ndone = 0;
    assert_int_equal(store_queue_each(st, NULL, rows_done, &ndone), 0);
    assert_int_equal(ndone, nq);
    graph_init(&g, st);
    assert_int_equal(graph_tree_load(&g, task, &t), 0);
    int per[N_CALLS_MAX] = {0};
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body"),
                                                          "queue");
        if (!cJSON_IsNumber(q))
            continue;
        for (int k = 0; k < nq; k++)
            if ((int64_t)q->valuedouble == qids[k])
                per[k]++;
        assert_true(t.nodes[i].has_outcome);
    }
    for (int k = 0; k < nq; k++)
        assert_int_equal(per[k], 1);
    assert_int_equal(t.n, 1 + nq);
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
    for (int i = 0; i < N_REPLIES; i++)
        free(bodies[i]);
    free(good);
}

/* A run starts from the task's best in the whole graph, whoever found it.
 * Run 1 (offline) measures the tuner's default silu point; `kope queue
 * flush` then applies an LLM kernel that beats it (the EXP_POLY=5 point,
 * 43x against the default's 38x by icount). The next `kope run --task`
 * must prompt with that kernel as the current best and report it as the
 * task's best, although none of its own trials reach it. */
static void test_run_starts_from_graph_best(void **state)
{
    (void)state;
    static char out[65536];
    const char *sp = tpath("silu.json");
    test_write_text(sp, "{\"suite\":\"s\",\"tasks\":[{\"name\":\"silu-a\",\"op\":\"silu\",\"dtype\":\"f32\","
                        "\"shape\":{\"n\":4864}}]}");
    const char *db = tpath("best.db");
    test_store_init(db);
    unsetenv("KOPE_LLM_BASE_URL");
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, sp);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    uint8_t task[32];
    struct store *st;
    char err[256];
    struct graph g;
    task_id_of(db, "silu-a", task);
    {
        /* ranking needs a claimed ratio (the icount plugin); without one
         * every pass ties and the oldest stays best, so there is nothing
         * to show here */
        struct graph_best b0;
        assert_int_equal(store_open(db, &st, err, sizeof err), 0);
        graph_init(&g, st);
        assert_int_equal(graph_task_best(&g, task, &b0), 0);
        int claimed = b0.found && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
                                      cJSON_GetObjectItemCaseSensitive(b0.out.json, "body"), "speedup"));
        graph_best_free(&b0);
        graph_free(&g);
        store_close(st);
        if (!claimed) {
            print_message("skip: no ratio claimed in this build (no icount plugin next to kope)\n");
            skip();
        }
    }
    int64_t qids[N_CALLS_MAX];
    int nq = 0;
    push_calls(db, task, 1, qids, &nq);

    const struct k3_template *tp = NULL;
    int v[K3_PARAM_MAX];
    assert_int_equal(k3_point_parse("silu LMUL=4 EXP_POLY=5 RECIP=0", &tp, v), 0);
    char *better = k3_point_source(tp, v, NULL);
    assert_non_null(better);
    char *b1 = chat_body("poly5", better), *b2 = chat_body("broken", BAD_COMPILE);
    const struct ts_reply script[] = {{.status = 200, .body = b1}, {.status = 200, .body = b2}};
    struct ts_server srv;
    serve_llm(&srv, script, 2);
    rc = run_cmd(out, sizeof out, "%s --db %s queue flush", kope_bin(), db);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 1);

    /* the graph's best is now the flushed LLM kernel */
    struct graph_best b;
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_task_best(&g, task, &b), 0);
    assert_true(b.found);
    const cJSON *who = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b.dec.json, "body"),
                                                        "proposer");
    assert_string_equal(who->valuestring, "llm");
    double best_x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b.out.json, "body"),
                                                     "speedup")->valuedouble;
    graph_best_free(&b);
    graph_free(&g);
    store_close(st);

    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --task silu-a --budget 2", kope_bin(), db, sp);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_true(srv.n_req >= 2);
    /* the first prompt of the new run shows the flushed kernel as current best */
    const char *cur = strstr(srv.req[1].body, "Current best kernel");
    assert_non_null(cur);
    const char *end = strstr(cur + 1, "```\\n");   /* the code block's end, JSON-escaped */
    end = end ? strstr(end + 4, "```") : NULL;
    const char *poly = strstr(cur, "EXP_POLY 5");
    assert_non_null(poly);
    assert_true(!end || poly < end);
    /* and the run reports it: the llm kernel at its ratio */
    char want[64];
    snprintf(want, sizeof want, "%.2fx", best_x);
    const char *row = strstr(out, "\nsilu-a ");
    assert_non_null(row);
    assert_non_null(strstr(row, want));
    assert_non_null(strstr(row, "llm"));
    ts_stop(&srv);
    free(b1);
    free(b2);
    free(better);
}

/* `kope context TASK` is byte for byte the prompt the next `kope run`
 * sends: for a new run (the task's best, no feedback) and for a run that
 * will be resumed (its trials' feedback), against what the loopback server
 * receives. */
static void test_context_is_what_run_sends(void **state)
{
    (void)state;
    static char out[65536], ctx1[262144], ctx2[262144];
    const char *db = tpath("ctx.db"), *suite = write_suite();
    test_store_init(db);
    unsetenv("KOPE_LLM_BASE_URL");
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, suite);
    assert_int_equal(rc, 0);

    char *b1 = chat_body("broken", BAD_COMPILE), *b2 = chat_body("scalar-sub", WRONG);
    const struct ts_reply script[] = {{.status = 200, .body = b1}, {.status = 200, .body = b2},
                                      {.status = 200, .body = b2, .mode = TS_STALL}};
    struct ts_server srv;
    serve_llm(&srv, script, 3);
    /* a new run next: the prompt of its first trial */
    rc = run_cmd(ctx1, sizeof ctx1, "%s --db %s context add-a --suite %s", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", ctx1);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(ctx1, "a new run"));
    /* that run: two replies applied, the third call hangs; kill it there */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(kope_bin(), "kope", "--db", db, "run", "--suite", suite, "--task", "add-a", "--budget", "6",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < test_ms(60000) / 50; i++) {
        pthread_mutex_lock(&srv.mu);
        size_t n = srv.n_req;
        pthread_mutex_unlock(&srv.mu);
        if (n >= 3)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_true(srv.n_req >= 3);
    assert_context_is(ctx1, &srv.req[0]);
    ts_stop(&srv);

    /* the killed run is resumed next: its trials are the feedback */
    rc = run_cmd(ctx2, sizeof ctx2, "%s --db %s context add-a --suite %s", kope_bin(), db, suite);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(ctx2, "resumes run"));
    assert_non_null(strstr(ctx2, "no_such_variable")); /* trial 1's compile error */
    assert_non_null(strstr(ctx2, "wrong_result"));     /* and trial 2's verdict */
    assert_fail_values(ctx2);                          /* with its failing values */
    char *good = good_source(), *b3 = chat_body("lmul2", good);
    const struct ts_reply script2[] = {{.status = 200, .body = b3}};
    serve_llm(&srv, script2, 1);
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --task add-a --budget 3", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "resuming run"));
    assert_true(srv.n_req >= 1);
    assert_context_is(ctx2, &srv.req[0]);
    ts_stop(&srv);
    free(b1);
    free(b2);
    free(b3);
    free(good);
}

/* A reply cut at max_tokens is its own outcome with its numbers (not "code
 * block not closed"); a reply with reasoning only says so. */
static void test_truncated_and_reasoning_only(void **state)
{
    (void)state;
    static char out[65536];
    char *b1 = chat_raw("TAGS: x\n```c\n#include \"kernel_abi.h\"\nvoid kope_kernel(size_t n,", "length",
                        "thinking hard"),
         *b2 = chat_raw("", "stop", "a very long chain of thought that never produced an answer");
    const struct ts_reply script[] = {{.status = 200, .body = b1}, {.status = 200, .body = b2}};
    struct ts_server srv;
    serve_llm(&srv, script, 2);
    const char *db = tpath("cut.db"), *suite = write_suite();
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 3", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 2);
    struct store *st;
    char err[256];
    struct graph g;
    struct graph_tree t;
    uint8_t id[32];
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_task_find(&g, "add-a", id), 0);
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    assert_int_equal(t.n, 3);
    const cJSON *o1 = cJSON_GetObjectItemCaseSensitive(t.nodes[1].out.json, "body");
    const cJSON *o2 = cJSON_GetObjectItemCaseSensitive(t.nodes[2].out.json, "body");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o1, "status")->valuestring, "truncated");
    const char *why = cJSON_GetObjectItemCaseSensitive(o1, "reason")->valuestring;
    char lim[64];
    snprintf(lim, sizeof lim, "reply truncated at max_tokens (%d)", LLM_MAX_TOKENS_DEFAULT);
    assert_non_null(strstr(why, lim));
    assert_non_null(strstr(why, "4096 completion tokens"));
    assert_non_null(strstr(why, "13 bytes of reasoning"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o2, "status")->valuestring, "no_code");
    assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(o2, "reason")->valuestring,
                           "reasoning-only reply: 58 bytes of reasoning_content"));
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
    ts_stop(&srv);
    free(b1);
    free(b2);
}

/* Reply extraction in the loop: a reply with the kernel and a longer
 * self-test block is judged by its kernel (it passes) and the next prompt
 * says which block was taken; a reply with two definitions is refused, and
 * the next prompt says why. */
static void test_reply_blocks(void **state)
{
    (void)state;
    static char out[65536];
    char *good = good_source();
    size_t pad = strlen(good) + 256;
    char *c1 = malloc(2 * pad + 1024), *c2 = malloc(2 * pad + 1024);
    assert_non_null(c1);
    assert_non_null(c2);
    int n = sprintf(c1, "TAGS: lmul2\nRATIONALE: with a self-test\n```c\n%s\n```\nTest it with:\n```c\n"
                        "#include <stdio.h>\nint main(void)\n{\n    float x[4] = {1, 2, 3, 4}, y[4] = {0}, o[4];\n"
                        "    kope_kernel(4, x, y, o, 0);\n", good);
    for (size_t i = 0; i < pad / 40; i++)
        n += sprintf(c1 + n, "    printf(\"%%g %%g\\n\", o[0], o[1]); /* check */\n");
    sprintf(c1 + n, "    return 0;\n}\n```\n");
    sprintf(c2, "TAGS: twice\n```c\n%s\n```\nOr:\n```c\n%s\n```\n", WRONG, good);
    char *b1 = chat_raw(c1, "stop", NULL), *b2 = chat_raw(c2, "stop", NULL), *b3 = chat_body("sub", WRONG),
         *b4 = chat_body("sub-again", WRONG);
    const struct ts_reply script[] = {{.status = 200, .body = b1}, {.status = 200, .body = b2},
                                      {.status = 200, .body = b3}, {.status = 200, .body = b4}};
    struct ts_server srv;
    serve_llm(&srv, script, 4);
    const char *db = tpath("blocks.db"), *suite = write_suite();
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 5", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_int_equal(srv.n_req, 4);
    /* the same failed kernel again is said, not judged again as if new */
    assert_non_null(strstr(out, "llm call 4 applied to add-a: duplicate: the same kernel as decision "));
    assert_non_null(strstr(out, "which failed (wrong_result: "));
    struct llm_count c;
    count_llm(db, &c);
    assert_int_equal(c.llm, 4);
    assert_int_equal(c.wrong, 1);
    assert_int_equal(c.pass, 2); /* the tuner's default and the kernel beside its test */
    assert_int_equal(c.compile_error, 0);
    if (!strstr(srv.req[1].body, "took code block 1 of 2 (```c, "))
        print_error("%s\n", srv.req[1].body);
    assert_non_null(strstr(srv.req[1].body, "took code block 1 of 2 (```c, "));
    assert_non_null(strstr(srv.req[1].body, "the one that defines kope_kernel"));
    /* the best and the passing attempt are given against the best same-run
     * peer too, not only autovec-O3 (core/agent/bestpeer.c's pick) */
    const char *best = strstr(srv.req[1].body, "## Current best kernel (pass, ");
    assert_non_null(best);
    const char *eol = strstr(best, "\\n");
    assert_non_null(eol);
    const char *peer = strstr(best, "x vs the best same-run peer ");
    const char *same = strstr(best, "(the best same-run peer)");
    assert_true((peer && peer < eol) || (same && same < eol));
    assert_non_null(strstr(srv.req[2].body, "no_code"));
    assert_non_null(strstr(srv.req[2].body, "2 code blocks define kope_kernel (blocks 1 and 2)"));
    ts_stop(&srv);
    free(b1);
    free(b2);
    free(b3);
    free(b4);
    free(c1);
    free(c2);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llm_loop),
        cmocka_unit_test(test_link_down_queues),
        cmocka_unit_test(test_link_backoff_is_a_setting),
        cmocka_unit_test(test_queue_kill),
        cmocka_unit_test(test_run_starts_from_graph_best),
        cmocka_unit_test(test_context_is_what_run_sends),
        cmocka_unit_test(test_truncated_and_reasoning_only),
        cmocka_unit_test(test_malformed_row_not_link_down),
        cmocka_unit_test(test_reply_blocks),
    };
    return cmocka_run_group_tests_name("agent_llm", tests, setup, NULL);
}

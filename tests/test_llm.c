/*
 * tests/test_llm.c - the LLM client (net/http.c, net/llm.c, net/llm_reply.c)
 * and the agent's extraction of what it returns (core/context/reply.c)
 * against a real TLS server on loopback (tests/tls_server.c) that replays
 * declared replies and records the requests kope actually sent.
 *
 * Every case pins down one behaviour so that removing it fails the case:
 * the request's shape, code extraction (fenced, unfenced, none), reasoning,
 * Retry-After, retry on 5xx and resets, timeouts and the whole-call deadline,
 * cancellation, the body cap, CA verification and key pinning.
 */
#include <cJSON.h>

#include "core/context/reply.h"
#include "net/http.h"
#include "net/llm.h"
#include "testutil.h"
#include "tls_server.c"

static struct ts_pki pki;

/* The agent's extraction of a reply's content (core/context/reply.h): net/ hands
 * over the message only. */
static struct reply got;
static void extract(const struct llm_reply *r)
{
    reply_free(&got);
    assert_int_equal(reply_extract(r->content, &got), 0);
}

static int setup_pki(void **state)
{
    (void)state;
    return ts_pki_make(getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp", &pki);
}

/* Settings for the server on port: short timeouts and backoffs for tests. */
static void settings_for(struct llm_settings *s, int port)
{
    char url[128];
    llm_settings_init(s);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/v1/", port);
    assert_int_equal(llm_settings_set(&s->base_url, url), 0);
    assert_int_equal(llm_settings_set(&s->model, "test-model"), 0);
    assert_int_equal(llm_settings_set(&s->api_key, "sk-test-123"), 0);
    assert_int_equal(llm_settings_set(&s->ca_file, pki.ca), 0);
    /* timeouts scaled for emulation (tests/testutil.h: test_ms) */
    s->timeout_ms = test_ms(5000);
    s->total_timeout_ms = test_ms(10000);
    s->connect_timeout_ms = test_ms(2000);
    s->backoff_ms = 10;
    s->backoff_max_ms = 50;
    s->retries = 2;
}

static const struct llm_message msgs[] = {
    {"system", "You write RVV kernels."},
    {"user", "Optimize vadd."},
};

/* Run one chat against a server serving script with cert/key. */
static int chat(struct ts_server *srv, const char *cert, const char *key, const struct ts_reply *script,
                size_t n, void (*tweak)(struct llm_settings *), struct llm_reply *r)
{
    struct llm_settings s;
    struct llm_client *c = NULL;
    char err[256];
    assert_int_equal(ts_start(srv, cert, key, script, n), 0);
    settings_for(&s, srv->port);
    if (tweak)
        tweak(&s);
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), 0);
    llm_reply_init(r);
    int rc = llm_chat(c, msgs, 2, r);
    llm_client_free(c);
    llm_settings_free(&s);
    return rc;
}

static const char good_body[] =
    "{\"id\":\"x\",\"model\":\"test-model-2025\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\","
    "\"message\":{\"role\":\"assistant\",\"content\":\"TAGS: vectorize-lmul4, Unroll 2, tail-mask\\n"
    "RATIONALE: LMUL=4 halves loop overhead;\\nthe tail uses vl.\\n\\n```c\\n#include <riscv_vector.h>\\n"
    "void vadd(const float *a, const float *b, float *c, size_t n) {\\n  for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];\\n}\\n```\\n"
    "Done.\"}}],\"usage\":{\"prompt_tokens\":123,\"completion_tokens\":45,\"total_tokens\":168}}";

/* ------------------------------------------------------------ good reply */

static void test_good_reply(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    int rc = chat(&srv, pki.cert, pki.key, script, 1, NULL, &r);
    assert_int_equal(rc, 0);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.http_status, 200);
    assert_string_equal(r.model, "test-model-2025");
    assert_int_equal(r.n_tokens_in, 123);
    assert_int_equal(r.n_tokens_out, 45);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_FENCED);
    assert_string_equal(got.kernel_lang, "c");
    assert_string_equal(got.kernel, "#include <riscv_vector.h>\nvoid vadd(const float *a, const float *b, float *c, size_t n) {\n"
                                  "  for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];\n}\n");
    assert_int_equal(got.n_tags, 3);
    assert_string_equal(got.tags[0], "vectorize-lmul4");
    assert_string_equal(got.tags[1], "unroll-2");
    assert_string_equal(got.tags[2], "tail-mask");
    assert_string_equal(got.rationale, "LMUL=4 halves loop overhead; the tail uses vl.");
    assert_null(r.reasoning);
    assert_string_equal(r.error, "");

    /* The request kope sent. */
    assert_int_equal(srv.n_req, 1);
    const struct ts_request *q = &srv.req[0];
    assert_string_equal(q->method, "POST");
    assert_string_equal(q->path, "/v1/chat/completions");
    assert_string_equal(ts_header(q, "Authorization"), "Bearer sk-test-123");
    assert_string_equal(ts_header(q, "Content-Type"), "application/json");
    cJSON *j = cJSON_ParseWithLength(q->body, q->body_len);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "test-model");
    cJSON *m = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetArraySize(m), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "role")->valuestring, "system");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 1), "content")->valuestring, "Optimize vadd.");
    assert_true(cJSON_GetObjectItem(j, "temperature")->valuedouble == 0.2);
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, LLM_MAX_TOKENS_DEFAULT);
    assert_null(cJSON_GetObjectItem(j, "max_completion_tokens"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "stream")));
    assert_null(strstr(q->body, "sk-test")); /* the key travels only in its header */
    cJSON_Delete(j);
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* A pinned key that matches the server's passes (the pin is not just a
 * switch that breaks TLS). */
static void pin_good(struct llm_settings *s) { llm_settings_set(&s->pinned_key, pki.pin); }

static void test_pin_match(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, pin_good, &r), 0);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_FENCED);
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* ------------------------------------------------------------ code forms */

static void test_unfenced_code(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200,
        .body = "{\"choices\":[{\"message\":{\"content\":\"Here is the kernel:\\n\\n#include <stddef.h>\\n\\n"
                "void k(float *x, size_t n)\\n{\\n    for (size_t i = 0; i < n; i++) { x[i] *= 2; }\\n}\\n\\n"
                "TAGS: scalar\\nIt doubles x.\"},\"finish_reason\":\"stop\"}]}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, NULL, &r), 0);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_UNFENCED);
    assert_string_equal(got.kernel, "#include <stddef.h>\n\nvoid k(float *x, size_t n)\n{\n"
                                  "    for (size_t i = 0; i < n; i++) { x[i] *= 2; }\n}\n");
    assert_int_equal(got.n_tags, 1);
    assert_string_equal(got.tags[0], "scalar");
    assert_int_equal(r.n_tokens_in, -1); /* no usage in this reply */
    llm_reply_free(&r);
    ts_stop(&srv);
}

static void test_no_code(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200,
        .body = "{\"choices\":[{\"message\":{\"content\":\"I cannot do that; the loop is already optimal.\"},"
                "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":11}}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, NULL, &r), 0);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_NONE);
    assert_null(got.kernel);
    assert_non_null(strstr(got.no_code, "no code"));
    assert_int_equal(r.n_tokens_out, 11);
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* reasoning_content is returned, and code is never taken from it. */
static void test_reasoning(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200,
        .body = "{\"choices\":[{\"message\":{\"reasoning_content\":\"Try LMUL 8?\\n```c\\nint draft(void) { return 0; }\\n```\","
                "\"content\":\"```cpp\\nint final(void) { return 1; }\\n```\"},\"finish_reason\":\"stop\"}]}"},
        {.status = 200,
         .body = "{\"choices\":[{\"message\":{\"reasoning_content\":\"long thinking ...\",\"content\":\"\"},"
                 "\"finish_reason\":\"length\"}]}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 2, NULL, &r), 0);
    assert_string_equal(r.reasoning, "Try LMUL 8?\n```c\nint draft(void) { return 0; }\n```");
    extract(&r);
    assert_string_equal(got.kernel, "int final(void) { return 1; }\n");
    assert_string_equal(got.kernel_lang, "cpp");
    llm_reply_free(&r);
    ts_stop(&srv);

    /* Out of tokens while reasoning: no code, said plainly. */
    const struct ts_reply script2[] = {script[1]};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script2, 1, NULL, &r), 0);
    extract(&r);
    /* net/ hands over what ended the reply; the outcome's words for it are
     * the queue's (test_agent_llm test_truncated_and_reasoning_only) */
    assert_int_equal(got.code, REPLY_CODE_NONE);
    assert_string_equal(r.finish_reason, "length");
    assert_string_equal(r.reasoning, "long thinking ...");
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* ------------------------------------------------------------ retries */

static void test_429_retry_after(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {
        {.status = 429, .headers = "Retry-After: 1\r\n", .body = "{\"error\":{\"message\":\"slow down\"}}"},
        {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 2, NULL, &r), 0);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(srv.n_req, 2);
    /* backoff_ms is 10: only Retry-After explains a wait of a second (the
     * second is fixed; the reply and the new request around it scale). */
    uint64_t gap = srv.req[1].t_ms - srv.req[0].t_ms;
    assert_true(gap >= 950);
    /* no upper bound: a loaded machine is slower, not wrong (attempts
     * and the lower bound prove the Retry-After was honoured) */
    print_message("  retried after %llu ms (Retry-After: 1)\n", (unsigned long long)gap);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_FENCED);
    llm_reply_free(&r);
    ts_stop(&srv);
}

static void test_500_then_success(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 500, .body = "{\"error\":\"boom\"}"},
                                      {.status = 503, .body = "busy"},
                                      {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 3, NULL, &r), 0);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.http_status, 200);
    assert_int_equal(srv.n_req, 3);
    /* The retried request is the same request. */
    assert_string_equal(srv.req[0].body, srv.req[2].body);
    llm_reply_free(&r);
    ts_stop(&srv);
}

static void no_retries(struct llm_settings *s) { s->retries = 0; }

/* 5xx with retries exhausted: retryable code, message with the server's words. */
static void test_500_gives_up(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 502, .body = "{\"error\":{\"message\":\"upstream down\"}}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, NULL, &r), NET_ERR_HTTP_SERVER);
    assert_int_equal(r.attempts, 3); /* retries = 2 */
    assert_non_null(strstr(r.error, "after 3 attempts"));
    assert_non_null(strstr(r.error, "upstream down"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* 401, 400 and 404 are final: one request, a clear message. */
static void test_final_errors(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply s401[] = {{.status = 401, .body = "{\"error\":{\"message\":\"Incorrect API key\"}}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, s401, 1, NULL, &r), NET_ERR_HTTP_AUTH);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "API key was refused"));
    assert_non_null(strstr(r.error, "Incorrect API key"));
    assert_null(strstr(r.error, "sk-test"));
    llm_reply_free(&r);
    ts_stop(&srv);

    const struct ts_reply s404[] = {{.status = 404, .body = "{\"error\":{\"message\":\"model not found\"}}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, s404, 1, NULL, &r), NET_ERR_HTTP_NOTFOUND);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "unknown model"));
    assert_non_null(strstr(r.error, "'test-model'"));
    llm_reply_free(&r);
    ts_stop(&srv);

    const struct ts_reply s400[] = {{.status = 400, .body = "{\"detail\":\"max_tokens too large\"}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, s400, 1, NULL, &r), NET_ERR_HTTP_BADREQ);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "max_tokens too large"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* ------------------------------------------------------------ faults */

static void short_timeout(struct llm_settings *s)
{
    s->timeout_ms = test_ms(300);
    s->retries = 0;
}

static void test_stall_timeout(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body, .mode = TS_STALL}};
    uint64_t t0 = ts_now_ms();
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, short_timeout, &r), NET_ERR_TIMEOUT);
    uint64_t took = ts_now_ms() - t0;
    /* the code proves the timeout fired (a stall that ran out would
     * give a reply); only the lower bound is a property of the clock */
    assert_true(took >= (uint64_t)test_ms(250));
    print_message("  stalled reply timed out after %llu ms (timeout %d ms)\n", (unsigned long long)took, test_ms(300));
    assert_true(net_err_retryable(NET_ERR_TIMEOUT));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* The whole call, retries included, ends by total_timeout_ms. */
static void tight_deadline(struct llm_settings *s)
{
    s->timeout_ms = test_ms(500);
    s->retries = 10;
    s->total_timeout_ms = test_ms(600); /* the 2nd attempt gets only what is left */
}

static void test_deadline(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body, .mode = TS_STALL}};
    uint64_t t0 = ts_now_ms();
    int rc = chat(&srv, pki.cert, pki.key, script, 1, tight_deadline, &r);
    uint64_t took = ts_now_ms() - t0;
    assert_int_equal(rc, NET_ERR_TIMEOUT);
    /* counted, not timed: 10 retries of 500 ms each are allowed, the
     * 600 ms deadline leaves room for a second attempt only (a third
     * at most if the first ended early) */
    assert_true(r.attempts >= 2 && r.attempts <= 3);
    print_message("  the call ended after %d attempts in %llu ms (deadline %d ms)\n", r.attempts,
                  (unsigned long long)took, test_ms(600));
    llm_reply_free(&r);
    ts_stop(&srv);
}

static int cancel_after_200ms(void *arg)
{
    return ts_now_ms() - *(uint64_t *)arg > (uint64_t)test_ms(200);
}

static void test_cancel(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_settings s;
    struct llm_client *c = NULL;
    struct llm_reply r;
    char err[256];
    const struct ts_reply script[] = {{.status = 200, .body = good_body, .mode = TS_STALL}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    settings_for(&s, srv.port);
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), 0);
    uint64_t t0 = ts_now_ms();
    llm_client_set_cancel(c, cancel_after_200ms, &t0);
    llm_reply_init(&r);
    assert_int_equal(llm_chat(c, msgs, 2, &r), NET_ERR_CANCELLED);
    /* NET_ERR_CANCELLED, not NET_ERR_TIMEOUT: the cancel ended it */
    assert_int_equal(r.attempts, 1);
    llm_reply_free(&r);
    llm_client_free(c);
    llm_settings_free(&s);
    ts_stop(&srv);
}

/* Cancel once the server has had the first request for 2 s (scaled): by
 * then its 500 has been read even on a loaded machine, and the client sits
 * in its 20 s backoff. Counted from the server's arrival time, not from the
 * call's start: a slow first attempt then is not cancelled mid-request. */
static int cancel_in_backoff(void *arg)
{
    struct ts_server *srv = arg;
    pthread_mutex_lock(&srv->mu);
    int go = srv->n_req >= 1 && ts_now_ms() - srv->req[0].t_ms > (uint64_t)test_ms(2000);
    pthread_mutex_unlock(&srv->mu);
    return go;
}

/* Cancelling also ends a backoff wait at once. */
static void test_cancel_backoff(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_settings s;
    struct llm_client *c = NULL;
    struct llm_reply r;
    char err[256];
    const struct ts_reply script[] = {{.status = 500, .body = "{}"}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    settings_for(&s, srv.port);
    s.backoff_ms = test_ms(20000);
    s.backoff_max_ms = test_ms(20000);
    s.total_timeout_ms = test_ms(60000); /* the backoff fits in the call's deadline */
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), 0);
    llm_client_set_cancel(c, cancel_in_backoff, &srv);
    llm_reply_init(&r);
    assert_int_equal(llm_chat(c, msgs, 2, &r), NET_ERR_CANCELLED); /* the message below says where */
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "cancelled while waiting to retry"));
    llm_reply_free(&r);
    llm_client_free(c);
    llm_settings_free(&s);
    ts_stop(&srv);
}

static void test_reset_mid_body(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body, .mode = TS_RESET}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, no_retries, &r), NET_ERR_RESET);
    assert_true(net_err_retryable(NET_ERR_RESET));
    llm_reply_free(&r);
    ts_stop(&srv);

    /* ...and a reset is retried. */
    const struct ts_reply script2[] = {{.status = 200, .body = good_body, .mode = TS_RESET},
                                       {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script2, 2, NULL, &r), 0);
    assert_int_equal(r.attempts, 2);
    extract(&r);
    assert_int_equal(got.code, REPLY_CODE_FENCED);
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* A 200 that is not a chat completion (a gateway's page) is asked once
 * more: a good second reply is taken; two bad ones are final. */
static void test_malformed_json(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = "{\"choices\":[{\"message\":{\"content\":\"x\""},
                                      {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 2, NULL, &r), 0);
    assert_int_equal(r.attempts, 2); /* retried once */
    assert_int_equal(srv.n_req, 2);
    assert_string_equal(r.error, "");
    extract(&r);
    assert_non_null(got.kernel);
    llm_reply_free(&r);
    ts_stop(&srv);

    const struct ts_reply script1[] = {{.status = 200, .body = "<html>502 Bad Gateway</html>"},
                                       {.status = 200, .body = "<html>502 Bad Gateway</html>"},
                                       {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script1, 3, NULL, &r), NET_ERR_REPLY);
    assert_int_equal(r.attempts, 2); /* once more, then final */
    assert_non_null(strstr(r.error, "not valid JSON"));
    llm_reply_free(&r);
    ts_stop(&srv);

    const struct ts_reply script2[] = {{.status = 200, .body = "{\"object\":\"list\",\"data\":[]}"}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script2, 1, NULL, &r), NET_ERR_REPLY);
    assert_non_null(strstr(r.error, "choices"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* llm.max_tokens_field: the cap travels as max_completion_tokens. */
static void completion_field(struct llm_settings *s)
{
    s->max_tokens_field = LLM_MAX_COMPLETION_TOKENS;
    s->max_tokens = 777;
}
static void test_max_completion_tokens(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, completion_field, &r), 0);
    cJSON *j = cJSON_ParseWithLength(srv.req[0].body, srv.req[0].body_len);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "max_completion_tokens")->valueint, 777);
    assert_null(cJSON_GetObjectItem(j, "max_tokens"));
    cJSON_Delete(j);
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* 20 MB of valid reply: refused by the 8 MB default cap, with and without a
 * Content-Length announcing it. */
static void test_big_body(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    for (int no_len = 0; no_len < 2; no_len++) {
        const struct ts_reply script[] = {
            {.status = 200, .mode = TS_BIG, .big_len = 20u * 1024 * 1024, .no_length = no_len}};
        uint64_t t0 = ts_now_ms();
        assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, NULL, &r), NET_ERR_TOOBIG);
        assert_int_equal(r.attempts, 1);
        assert_non_null(strstr(r.error, "over the cap"));
        print_message("  refused after %llu ms\n", (unsigned long long)(ts_now_ms() - t0));
        llm_reply_free(&r);
        ts_stop(&srv);
    }
}

static void test_wrong_ca(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.wrong_cert, pki.wrong_key, script, 1, NULL, &r), NET_ERR_CERT);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(srv.n_req, 0); /* nothing, and no key, was sent */
    assert_non_null(strstr(r.error, "not trusted"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

static void pin_wrong(struct llm_settings *s) { llm_settings_set(&s->pinned_key, pki.wrong_pin); }

static void test_pin_mismatch(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, pin_wrong, &r), NET_ERR_PIN);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(srv.n_req, 0);
    assert_non_null(strstr(r.error, "pinned"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

static void test_closed_port(void **state)
{
    (void)state;
    struct llm_settings s;
    struct llm_client *c = NULL;
    struct llm_reply r;
    char err[256];
    settings_for(&s, ts_closed_port());
    s.retries = 1;
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), 0);
    llm_reply_init(&r);
    assert_int_equal(llm_chat(c, msgs, 2, &r), NET_ERR_CONNECT);
    assert_int_equal(r.attempts, 2); /* connect failures are retried */
    assert_non_null(strstr(r.error, "TCP"));
    llm_reply_free(&r);
    llm_client_free(c);
    llm_settings_free(&s);
}

/* A Retry-After beyond retry_after_max_ms ends the call at once, saying so. */
static void test_retry_after_too_long(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {{.status = 503, .headers = "Retry-After: 999\r\n", .body = "{}"},
                                      {.status = 200, .body = good_body}};
    uint64_t t0 = ts_now_ms();
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 2, NULL, &r), NET_ERR_HTTP_SERVER);
    assert_int_equal(r.attempts, 1); /* no wait, no retry: counted, not timed */
    assert_non_null(strstr(r.error, "wait 999 s"));
    print_message("  refused after %llu ms\n", (unsigned long long)(ts_now_ms() - t0));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* Redirects are not followed (a POST carrying the key must not wander). */
static void test_redirect_not_followed(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    const struct ts_reply script[] = {
        {.status = 301, .headers = "Location: https://elsewhere.example/v1/chat/completions\r\n", .body = ""},
        {.status = 200, .body = good_body}};
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 2, NULL, &r), NET_ERR_HTTP);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(srv.n_req, 1);
    assert_non_null(strstr(r.error, "redirect to https://elsewhere.example"));
    llm_reply_free(&r);
    ts_stop(&srv);
}

/* The proxy comes from the environment (libcurl's default), and no_proxy
 * exempts hosts. A dead proxy makes a live server unreachable. */
static void test_proxy_from_env(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_reply r;
    char px[64];
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    snprintf(px, sizeof px, "http://127.0.0.1:%d", ts_closed_port());
    setenv("https_proxy", px, 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, no_retries, &r), NET_ERR_CONNECT);
    assert_int_equal(srv.n_req, 0);
    llm_reply_free(&r);
    ts_stop(&srv);

    setenv("no_proxy", "127.0.0.1", 1);
    assert_int_equal(chat(&srv, pki.cert, pki.key, script, 1, no_retries, &r), 0);
    assert_int_equal(srv.n_req, 1);
    llm_reply_free(&r);
    ts_stop(&srv);
    unsetenv("https_proxy");
    unsetenv("no_proxy");
}

/* One client keeps its connection: the second call pays no new handshake. */
static void test_keep_alive(void **state)
{
    (void)state;
    struct ts_server srv;
    struct llm_settings s;
    struct llm_client *c = NULL;
    struct llm_reply r;
    char err[256];
    const struct ts_reply script[] = {{.status = 200, .body = good_body}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    settings_for(&s, srv.port);
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), 0);
    for (int i = 0; i < 3; i++) {
        llm_reply_init(&r);
        assert_int_equal(llm_chat(c, msgs, 2, &r), 0);
        llm_reply_free(&r);
    }
    assert_int_equal(srv.n_req, 3);
    assert_int_equal(srv.n_conn, 1);
    llm_client_free(c);
    llm_settings_free(&s);
    ts_stop(&srv);
}

static void test_error_codes(void **state)
{
    (void)state;
    for (int code = -200; code >= -299; code--)
        assert_non_null(net_strerror(code));
    const int known[] = {NET_ERR_INTERNAL, NET_ERR_NOMEM, NET_ERR_ARG, NET_ERR_CANCELLED, NET_ERR_DNS,
                         NET_ERR_CONNECT, NET_ERR_TIMEOUT, NET_ERR_RESET, NET_ERR_PROXY, NET_ERR_TLS,
                         NET_ERR_CERT, NET_ERR_PIN, NET_ERR_CA_FILE, NET_ERR_TOOBIG, NET_ERR_HTTP_RATE,
                         NET_ERR_HTTP_SERVER, NET_ERR_HTTP_AUTH, NET_ERR_HTTP_BADREQ, NET_ERR_HTTP_NOTFOUND,
                         NET_ERR_HTTP, NET_ERR_REPLY};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        assert_true(known[i] <= -200 && known[i] >= -299);
        assert_string_not_equal(net_strerror(known[i]), "unknown net error");
    }
    assert_int_equal(http_status_err(200), 0);
    assert_int_equal(http_status_err(429), NET_ERR_HTTP_RATE);
    assert_int_equal(http_status_err(503), NET_ERR_HTTP_SERVER);
    assert_int_equal(http_status_err(401), NET_ERR_HTTP_AUTH);
    assert_int_equal(http_status_err(404), NET_ERR_HTTP_NOTFOUND);
    assert_true(net_err_retryable(NET_ERR_HTTP_RATE) && net_err_retryable(NET_ERR_HTTP_SERVER));
    assert_false(net_err_retryable(NET_ERR_HTTP_AUTH) || net_err_retryable(NET_ERR_CERT) ||
                 net_err_retryable(NET_ERR_PIN) || net_err_retryable(NET_ERR_TOOBIG) ||
                 net_err_retryable(NET_ERR_HTTP_BADREQ) || net_err_retryable(NET_ERR_HTTP_NOTFOUND));
}

/* ------------------------------------------------------------ parser units */

static void test_extract_rules(void **state)
{
    (void)state;
    /* No block defines kope_kernel: the longest C-like block, and taken says
     * so; other languages are skipped. */
    assert_int_equal(reply_extract("```bash\nmake\n```\n```c\nint a;\n```\n```\nint b(void) { return 2; }\n```\n"
                                       "```json\n{\"very\":\"long long long long long long long\"}\n```\n", &got), 0);
    assert_string_equal(got.kernel, "int b(void) { return 2; }\n");
    assert_string_equal(got.taken, "took code block 3 of 4 (```, 1 lines): the longest, though no block "
                                   "defines kope_kernel");
    /* Only other languages: no code, with the reason. */
    assert_int_equal(reply_extract("```python\nprint(1)\n```\n", &got), 0);
    assert_null(got.kernel);
    assert_non_null(strstr(got.no_code, "python"));
    /* An unclosed, unbalanced fence (cut off): no code. */
    assert_int_equal(reply_extract("```c\nvoid f(void) {\n  for (;;) {\n", &got), 0);
    assert_null(got.kernel);
    assert_non_null(strstr(got.no_code, "not closed"));
    /* An unclosed but whole block is taken. */
    assert_int_equal(reply_extract("~~~c\nvoid f(void) { }\n", &got), 0);
    assert_string_equal(got.kernel, "void f(void) { }\n");
    /* Decision with markdown decoration, duplicates and junk. */
    assert_int_equal(reply_extract("**Tags:** `LMUL-8`, lmul-8; strip/mine, ,\n"
                                       "## Rationale: fewer\nstrips.\n\n```c\nint x;\n```\n", &got), 0);
    assert_int_equal(got.n_tags, 2);
    assert_string_equal(got.tags[0], "lmul-8");
    assert_string_equal(got.tags[1], "strip-mine");
    assert_string_equal(got.rationale, "fewer strips.");
    /* The block that defines kope_kernel, not a longer self-test block that
     * only calls it (its mentions in comments and strings define nothing) */
    static const char kernel_then_test[] =
        "TAGS: lmul-2\n```c\n#include \"kernel_abi.h\"\n"
        "void kope_kernel(size_t n, float *out /* in, out */)\n{ for (size_t i = 0; i < n; i++) out[i] = 0; }\n"
        "```\nA test:\n```c\n#include <stdio.h>\n/* kope_kernel(n) { */\n"
        "void kope_kernel(size_t n, float *out);\n"
        "int main(void) { float o[4]; kope_kernel(4, o); puts(\"kope_kernel() {\"); "
        "printf(\"%g %g %g %g\\n\", o[0], o[1], o[2], o[3]); return 0; }\n```\n";
    assert_int_equal(reply_extract(kernel_then_test, &got), 0);
    assert_int_equal(got.code, REPLY_CODE_FENCED);
    assert_non_null(strstr(got.kernel, "out[i] = 0"));
    assert_null(strstr(got.kernel, "main"));
    assert_string_equal(got.taken, "took code block 1 of 2 (```c, 3 lines): the one that defines kope_kernel");
    /* the test block first, the kernel (KOPE_KERNEL, a comment before its
     * body) second: still the kernel */
    assert_int_equal(reply_extract("```c\nint main(void) { kope_kernel(1, 0); return 0; }\n```\n"
                                   "```c\nvoid KOPE_KERNEL(size_t n, float *o) /* body: */\n{ (void)n; (void)o; }\n```\n",
                                   &got), 0);
    assert_non_null(strstr(got.kernel, "KOPE_KERNEL"));
    assert_non_null(strstr(got.taken, "block 2 of 2"));
    /* Two blocks define it: refused, naming both, whatever their lengths */
    assert_int_equal(reply_extract("```c\nvoid kope_kernel(void) { }\n```\ntext\n```c\nint x;\n```\n"
                                   "```cpp\nvoid kope_kernel (void)\n{\n  /* a longer second copy */\n}\n```\n",
                                   &got), 0);
    assert_int_equal(got.code, REPLY_CODE_NONE);
    assert_null(got.kernel);
    assert_non_null(strstr(got.no_code, "2 code blocks define kope_kernel (blocks 1 and 3)"));
    /* one block, one definition: nothing to say about which */
    assert_int_equal(reply_extract("```c\nvoid kope_kernel(void) { }\n```\n", &got), 0);
    assert_non_null(got.kernel);
    assert_string_equal(got.taken, "");
    /* Empty content. */
    assert_int_equal(reply_extract("", &got), 0);
    assert_int_equal(got.code, REPLY_CODE_NONE);
    /* the format asks for the target's fence language */
    char fmt[REPLY_FORMAT_MAX];
    assert_true(reply_format("cpp", fmt, sizeof fmt) < sizeof fmt);
    assert_non_null(strstr(fmt, "\n```cpp\n"));
    assert_true(reply_format(NULL, fmt, sizeof fmt) < sizeof fmt);
    assert_non_null(strstr(fmt, "\n```c\n"));
    reply_free(&got);
}

static void test_error_text(void **state)
{
    (void)state;
    char m[64];
    const char *b = "{\"error\":{\"message\":\"bad\\nkey\"}}";
    llm_error_text(b, strlen(b), m, sizeof m);
    assert_string_equal(m, "bad key");
    llm_error_text("<html>502</html>", 16, m, sizeof m);
    assert_string_equal(m, "<html>502</html>");
    llm_error_text(NULL, 0, m, sizeof m);
    assert_string_equal(m, "");
}

static void test_settings(void **state)
{
    (void)state;
    struct llm_settings s;
    char url[256], err[128];
    struct llm_client *c = NULL;
    llm_settings_init(&s);
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), NET_ERR_ARG);
    assert_non_null(strstr(err, "not set"));
    llm_settings_set(&s.base_url, "ftp://x");
    assert_int_equal(llm_settings_url(&s, url, sizeof url), NET_ERR_ARG);
    llm_settings_set(&s.base_url, "http://h:8080/v1//");
    assert_int_equal(llm_settings_url(&s, url, sizeof url), 0);
    assert_string_equal(url, "http://h:8080/v1/chat/completions");
    llm_settings_set(&s.model, "m");
    llm_settings_set(&s.api_key, "sk-abc\n");
    assert_int_equal(llm_client_new(&s, &c, err, sizeof err), NET_ERR_ARG);
    assert_non_null(strstr(err, "newline"));
    llm_settings_free(&s);
    assert_null(s.api_key);
}

int main(void)
{
    alarm(120); /* a client that ignores its timeouts must fail, not hang CI */
    const char *proxies[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]); /* loopback tests must not go through the caller's proxy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_reply),
        cmocka_unit_test(test_pin_match),
        cmocka_unit_test(test_unfenced_code),
        cmocka_unit_test(test_no_code),
        cmocka_unit_test(test_reasoning),
        cmocka_unit_test(test_429_retry_after),
        cmocka_unit_test(test_500_then_success),
        cmocka_unit_test(test_500_gives_up),
        cmocka_unit_test(test_final_errors),
        cmocka_unit_test(test_stall_timeout),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_cancel_backoff),
        cmocka_unit_test(test_reset_mid_body),
        cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_max_completion_tokens),
        cmocka_unit_test(test_big_body),
        cmocka_unit_test(test_wrong_ca),
        cmocka_unit_test(test_pin_mismatch),
        cmocka_unit_test(test_closed_port),
        cmocka_unit_test(test_retry_after_too_long),
        cmocka_unit_test(test_redirect_not_followed),
        cmocka_unit_test(test_proxy_from_env),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_extract_rules),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_settings),
    };
    int rc = cmocka_run_group_tests(tests, setup_pki, NULL);
    reply_free(&got);
    return rc;
}

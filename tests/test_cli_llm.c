/*
 * tests/test_cli_llm.c - `kope llm check` ($KOPE_BIN) against the loopback
 * TLS server of tests/tls_server.c, a closed port and an untrusted
 * certificate; and the settings it reads (config, environment, key file).
 */
#include <sys/stat.h>

#include <cJSON.h>

#include "core/cli/config.h"
#include "core/err.h"
#include "core/cli/llm_conf.h"
#include "testutil.h"
#include "tls_server.c"

static struct ts_pki pki;
static char out[16384];

static int setup_pki(void **state)
{
    (void)state;
    return ts_pki_make(getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp", &pki);
}

static const char pong[] =
    "{\"model\":\"test-model-2025\",\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"pong\"},"
    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":1}}";

/* Run `kope [--config cfg] llm check` with a clean KOPE_LLM_* environment
 * plus the assignments in env ("A=b C=d"). */
static int check(const char *cfg, const char *env)
{
    return run_cmd(out, sizeof out,
                   "env -u KOPE_CONFIG -u KOPE_LLM_BASE_URL -u KOPE_LLM_MODEL -u KOPE_LLM_API_KEY "
                   "-u KOPE_LLM_API_KEY_FILE -u KOPE_LLM_CA_FILE -u KOPE_LLM_PINNED_KEY -u https_proxy "
                   "-u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY %s %s %s%s llm check --timeout 3000",
                   env, kope_bin(), cfg ? "--config " : "", cfg ? cfg : "");
}

static void test_check_ok(void **state)
{
    (void)state;
    struct ts_server srv;
    char env[2048];
    const struct ts_reply script[] = {{.status = 200, .body = pong}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=test-model "
                              "KOPE_LLM_CA_FILE=%s KOPE_LLM_API_KEY=sk-very-secret", srv.port, pki.ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "DNS    ok"));
    assert_non_null(strstr(out, "TCP    ok"));
    assert_non_null(strstr(out, "TLS    ok"));
    assert_non_null(strstr(out, "CN=localhost")); /* which certificate */
    assert_non_null(strstr(out, "kope good test CA"));
    assert_non_null(strstr(out, "HTTP   ok    200"));
    assert_non_null(strstr(out, "'test-model-2025'"));
    assert_non_null(strstr(out, "\"pong\""));
    assert_non_null(strstr(out, "21 in, 1 out"));
    assert_non_null(strstr(out, "latency"));
    assert_non_null(strstr(out, "result: OK"));
    assert_non_null(strstr(out, "set, 14 characters (from KOPE_LLM_API_KEY)"));
    assert_null(strstr(out, "sk-very-secret")); /* never printed */
    /* One small request, with the key and the configured model. */
    assert_int_equal(srv.n_req, 1);
    assert_string_equal(ts_header(&srv.req[0], "Authorization"), "Bearer sk-very-secret");
    cJSON *j = cJSON_Parse(srv.req[0].body);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "test-model");
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 32);
    cJSON_Delete(j);
    ts_stop(&srv);
}

static void test_check_closed_port(void **state)
{
    (void)state;
    char env[1024];
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=m KOPE_LLM_CA_FILE=%s",
             ts_closed_port(), pki.ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "TCP    FAIL"));
    assert_non_null(strstr(out, "TLS    --    not reached"));
    assert_non_null(strstr(out, "result: FAIL - could not connect"));
    assert_non_null(strstr(out, "hint:"));
}

static void test_check_untrusted(void **state)
{
    (void)state;
    struct ts_server srv;
    char env[2048];
    const struct ts_reply script[] = {{.status = 200, .body = pong}};
    assert_int_equal(ts_start(&srv, pki.wrong_cert, pki.wrong_key, script, 1), 0);
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=m KOPE_LLM_CA_FILE=%s "
                              "KOPE_LLM_API_KEY=sk-x", srv.port, pki.ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "TCP    ok"));
    assert_non_null(strstr(out, "TLS    FAIL"));
    assert_non_null(strstr(out, "not trusted"));
    assert_non_null(strstr(out, "kope wrong test CA")); /* which certificate was offered */
    assert_non_null(strstr(out, "HTTP   --    not reached"));
    assert_int_equal(srv.n_req, 0);
    ts_stop(&srv);
}

/* A certificate past its validity: the hint names expiry (or the board's
 * clock), not the CA file, which is right. */
static void test_check_expired(void **state)
{
    (void)state;
    struct ts_server srv;
    char env[2048];
    const struct ts_reply script[] = {{.status = 200, .body = pong}};
    assert_int_equal(ts_start(&srv, pki.old_cert, pki.old_key, script, 1), 0);
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=m KOPE_LLM_CA_FILE=%s "
                              "KOPE_LLM_API_KEY=sk-x", srv.port, pki.old_ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "TLS    FAIL"));
    assert_non_null(strstr(out, "certificate has expired"));
    const char *h = strstr(out, "hint:");
    assert_non_null(h);
    assert_non_null(strstr(h, "expired"));
    assert_non_null(strstr(h, "clock"));
    assert_null(strstr(h, "CA file"));
    assert_int_equal(srv.n_req, 0);
    ts_stop(&srv);
}

static void test_check_http_error(void **state)
{
    (void)state;
    struct ts_server srv;
    char env[2048];
    const struct ts_reply script[] = {{.status = 404, .body = "{\"error\":{\"message\":\"model 'nope' not found\"}}"}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=nope KOPE_LLM_CA_FILE=%s",
             srv.port, pki.ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "TLS    ok"));
    assert_non_null(strstr(out, "HTTP   FAIL  HTTP 404"));
    assert_non_null(strstr(out, "model 'nope' not found"));
    assert_int_equal(srv.n_req, 1); /* final: no retry */
    ts_stop(&srv);
}

/* Config file values, overridden by the environment; the key from a 0600 file. */
static void test_check_config_and_key_file(void **state)
{
    (void)state;
    struct ts_server srv;
    const struct ts_reply script[] = {{.status = 200, .body = pong}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    const char *key = tpath("api.key");
    FILE *f = fopen(key, "w");
    assert_non_null(f);
    fputs("sk-from-file\n", f);
    fclose(f);
    const char *cfg = tpath("llm-conf.json"); /* not ./kope.json: the other cases must see no config */
    f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "{\"llm\":{\"base_url\":\"https://127.0.0.1:%d/v1\",\"model\":\"cfg-model\",\"ca_file\":\"%s\","
               "\"api_key_file\":\"%s\",\"temperature\":0.7}}", srv.port, pki.ca, key);
    fclose(f);

    /* 0644: refused, with the fix. */
    chmod(key, 0644);
    int rc = check(cfg, "KOPE_LLM_MODEL=env-model");
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "mode 0644"));
    assert_non_null(strstr(out, "chmod 600"));
    assert_int_equal(srv.n_req, 0);

    chmod(key, 0600);
    rc = check(cfg, "KOPE_LLM_MODEL=env-model");
    print_message("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "(base URL from config llm.base_url)"));
    assert_non_null(strstr(out, "config llm.api_key_file"));
    assert_non_null(strstr(out, "env-model (from KOPE_LLM_MODEL)"));
    assert_null(strstr(out, "sk-from-file"));
    assert_int_equal(srv.n_req, 1);
    assert_string_equal(ts_header(&srv.req[0], "Authorization"), "Bearer sk-from-file");
    cJSON *j = cJSON_Parse(srv.req[0].body);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "env-model");
    cJSON_Delete(j);
    ts_stop(&srv);

    /* An API key written into the config itself is refused. */
    f = fopen(cfg, "w");
    fputs("{\"llm\":{\"base_url\":\"https://127.0.0.1:1/v1\",\"model\":\"m\",\"api_key\":\"sk-oops\"}}", f);
    fclose(f);
    rc = check(cfg, "");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "llm.api_key is refused"));
    assert_null(strstr(out, "sk-oops"));
}

/* A name that resolves (localhost, in the certificate's SAN) and one that
 * cannot (.invalid is reserved). */
static void test_check_names(void **state)
{
    (void)state;
    struct ts_server srv;
    char env[2048];
    const struct ts_reply script[] = {{.status = 200, .body = pong}};
    assert_int_equal(ts_start(&srv, pki.cert, pki.key, script, 1), 0);
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://localhost:%d/v1 KOPE_LLM_MODEL=m KOPE_LLM_CA_FILE=%s",
             srv.port, pki.ca);
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "DNS    ok    localhost -> "));
    ts_stop(&srv);

    rc = check(NULL, "KOPE_LLM_BASE_URL=https://no-such-host.invalid/v1 KOPE_LLM_MODEL=m");
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "DNS    FAIL"));
    assert_non_null(strstr(out, "TCP    --    not reached"));
}

/* A proxy from the environment is shown (password hidden) and blamed. */
static void test_check_proxy(void **state)
{
    (void)state;
    char env[1024];
    snprintf(env, sizeof env, "KOPE_LLM_BASE_URL=https://127.0.0.1:%d/v1 KOPE_LLM_MODEL=m "
             "https_proxy=http://user:pw@127.0.0.1:%d", ts_closed_port(), ts_closed_port());
    int rc = check(NULL, env);
    print_message("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "proxy       http://***@127.0.0.1:"));
    assert_null(strstr(out, "user:pw"));
    assert_non_null(strstr(out, "TCP    FAIL"));
    assert_non_null(strstr(out, "hint:   a proxy from the environment"));
}

/* llm_conf_load in-process: numbers from the config, environment overrides,
 * type errors named. */
static void test_conf_values(void **state)
{
    (void)state;
    struct kope_config *cfg = NULL;
    struct llm_settings s;
    struct llm_conf_origin o;
    char err[512];
    const char *path = tpath("conf-values.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"llm\":{\"base_url\":\"https://h/v1\",\"model\":\"m\",\"temperature\":0.5,\"max_tokens\":999,"
          "\"timeout_ms\":1234,\"retries\":7,\"total_timeout_ms\":99999,\"max_reply_bytes\":65536}}", f);
    fclose(f);
    unsetenv("KOPE_LLM_API_KEY");
    unsetenv("KOPE_LLM_API_KEY_FILE");
    unsetenv("KOPE_LLM_MODEL");
    unsetenv("KOPE_LLM_BASE_URL");
    unsetenv("KOPE_LLM_CA_FILE");
    unsetenv("KOPE_LLM_PINNED_KEY");
    setenv("KOPE_LLM_TIMEOUT_MS", "4321", 1);
    unsetenv("KOPE_LLM_RETRIES");
    assert_int_equal(kope_config_load(path, &cfg, err, sizeof err), 0);
    llm_settings_init(&s);
    assert_int_equal(llm_conf_load(cfg, &s, &o, err, sizeof err), 0);
    assert_string_equal(s.base_url, "https://h/v1");
    assert_string_equal(o.model, "config llm.model");
    assert_true(s.temperature == 0.5);
    assert_int_equal(s.max_tokens, 999);
    assert_int_equal(s.timeout_ms, 4321); /* the environment wins */
    assert_int_equal(s.retries, 7);
    assert_int_equal(s.total_timeout_ms, 99999);
    assert_int_equal(s.max_reply_bytes, 65536);
    assert_null(s.api_key);
    assert_string_equal(o.api_key, "not set");
    llm_settings_free(&s);

    setenv("KOPE_LLM_RETRIES", "many", 1);
    llm_settings_init(&s);
    assert_int_equal(llm_conf_load(cfg, &s, &o, err, sizeof err), KOPE_ERR_CONFIG);
    assert_non_null(strstr(err, "KOPE_LLM_RETRIES"));
    llm_settings_free(&s);
    unsetenv("KOPE_LLM_RETRIES");
    unsetenv("KOPE_LLM_TIMEOUT_MS");
    kope_config_free(cfg);

    f = fopen(path, "w");
    fputs("{\"llm\":{\"model\":42}}", f);
    fclose(f);
    /* a wrong type is refused when the file is loaded, at its position */
    assert_int_equal(kope_config_load(path, &cfg, err, sizeof err), KOPE_ERR_CONFIG);
    assert_non_null(strstr(err, ":1:17: \"llm.model\" must be a string"));
    assert_null(cfg);
}

static void test_check_usage(void **state)
{
    (void)state;
    assert_int_equal(run_cmd(out, sizeof out, "%s llm", kope_bin()), 2);
    assert_int_equal(run_cmd(out, sizeof out, "%s llm check --help", kope_bin()), 0);
    assert_non_null(strstr(out, "KOPE_LLM_BASE_URL"));
    assert_int_equal(run_cmd(out, sizeof out, "env -u KOPE_LLM_BASE_URL -u KOPE_CONFIG %s llm check", kope_bin()), 1);
    assert_non_null(strstr(out, "base URL"));
}

int main(void)
{
    alarm(120);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_ok),
        cmocka_unit_test(test_check_closed_port),
        cmocka_unit_test(test_check_untrusted),
        cmocka_unit_test(test_check_expired),
        cmocka_unit_test(test_check_http_error),
        cmocka_unit_test(test_check_config_and_key_file),
        cmocka_unit_test(test_check_names),
        cmocka_unit_test(test_check_proxy),
        cmocka_unit_test(test_conf_values),
        cmocka_unit_test(test_check_usage),
    };
    return cmocka_run_group_tests(tests, setup_pki, NULL);
}

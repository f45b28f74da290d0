/*
 * core/cli/cli_llm.c - `kope llm check`: one tiny chat request with the
 * configured settings, reported stage by stage (DNS, TCP, TLS and which
 * certificate, HTTP status, model, reply, tokens, latency) so that a person
 * at a board can see at once what works and what does not.
 *
 * Settings come from core/cli/llm_conf.c (config, then KOPE_LLM_* variables).
 * The API key is never printed: only whether it is set, its length and
 * where it came from.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/err.h"
#include "core/cli/llm_conf.h"
#include "net/llm.h"

static void llm_usage(FILE *f)
{
    fprintf(f, "usage: kope llm check [--timeout MS]\n"
               "\n"
               "Sends one tiny chat request to the configured OpenAI-compatible endpoint\n"
               "and reports DNS, TCP, TLS (and the server certificate), the HTTP status,\n"
               "the model, tokens and latency. No retries. Exit 0 when it works, 1 when not.\n"
               "\n"
               "Settings: llm.* in the config file, overridden by KOPE_LLM_BASE_URL,\n"
               "KOPE_LLM_MODEL, KOPE_LLM_API_KEY (or KOPE_LLM_API_KEY_FILE, mode 0600),\n"
               "KOPE_LLM_CA_FILE, KOPE_LLM_PINNED_KEY. Proxy: https_proxy / no_proxy.\n"
               "See docs/LLM.md.\n"
               "\n"
               "  --timeout MS   give up after MS milliseconds (default 30000)\n");
}

/* Host part of an http(s) URL into out ("" if none). */
static void url_host(const char *url, char *out, size_t len, int *port)
{
    const char *p = strstr(url, "://");
    out[0] = '\0';
    *port = strncmp(url, "https", 5) == 0 ? 443 : 80;
    if (!p)
        return;
    p += 3;
    const char *at = strchr(p, '@'), *sl = strchr(p, '/');
    if (at && (!sl || at < sl))
        p = at + 1;
    size_t n;
    if (*p == '[') {
        n = strcspn(p + 1, "]");
        snprintf(out, len, "%.*s", (int)n, p + 1);
        p += n + 2;
    } else {
        n = strcspn(p, ":/?#");
        snprintf(out, len, "%.*s", (int)n, p);
        p += n;
    }
    if (*p == ':')
        *port = atoi(p + 1);
}

/* The proxy libcurl will take from the environment, user:password hidden. */
static void proxy_from_env(const char *url, char *out, size_t len)
{
    const int https = strncmp(url, "https", 5) == 0;
    const char *names[] = {https ? "https_proxy" : "http_proxy", https ? "HTTPS_PROXY" : "HTTP_PROXY",
                           "all_proxy", "ALL_PROXY", NULL};
    const char *v = NULL, *name = NULL;
    for (int i = 0; names[i] && !v; i++)
        if ((v = getenv(names[i])) && !*v)
            v = NULL;
        else
            name = names[i];
    if (!v) {
        snprintf(out, len, "none in the environment");
        return;
    }
    const char *s = strstr(v, "://"), *at = strchr(v, '@');
    if (at && s && at > s)
        snprintf(out, len, "%.*s***%s (from %s)", (int)(s + 3 - v), v, at, name);
    else
        snprintf(out, len, "%s (from %s)", v, name);
    const char *np = getenv("no_proxy") ? getenv("no_proxy") : getenv("NO_PROXY");
    if (np && *np) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "; no_proxy=%s", np);
    }
}

static void stage(const char *name, const char *state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void stage(const char *name, const char *state, const char *fmt, ...)
{
    va_list ap;
    printf("%-6s %-5s ", name, state);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void ms_text(double ms, char *out, size_t len)
{
    if (ms < 0)
        snprintf(out, len, "?");
    else
        snprintf(out, len, "%.1f ms", ms);
}

/* What to try next, by error. */
static const char *hint(int rc, const struct llm_settings *s, int via_proxy)
{
    if (via_proxy && (rc == NET_ERR_CONNECT || rc == NET_ERR_TIMEOUT || rc == NET_ERR_RESET))
        return "a proxy from the environment is in the way: check https_proxy, or exempt the host in no_proxy";
    switch (rc) {
    case NET_ERR_DNS: return "check the host name in the base URL and the board's DNS (/etc/resolv.conf)";
    case NET_ERR_CONNECT: return "is the server running and listening on that address and port? a firewall?";
    case NET_ERR_PROXY: return "check https_proxy / no_proxy in the environment";
    case NET_ERR_TIMEOUT: return "no answer in time: raise --timeout, or check the link and the proxy";
    case NET_ERR_RESET: return "the connection was dropped: a flaky link, a proxy, or a plain-http server behind https?";
    case NET_ERR_CERT:
        return s->ca_file ? "the certificate is not signed by a CA in the CA file: point KOPE_LLM_CA_FILE at the right bundle"
                          : "boards often lack a CA store: set KOPE_LLM_CA_FILE (llm.ca_file) to the CA bundle that signed the server";
    case NET_ERR_CERT_EXPIRED:
        return "the server's certificate has expired (or is not valid yet): renew it on the server, or check "
               "this board's clock (`date`; a board without RTC starts in 1970)";
    case NET_ERR_PIN: return "the server's key changed, or llm.pinned_key / KOPE_LLM_PINNED_KEY is wrong";
    case NET_ERR_CA_FILE: return "the CA file could not be read: check the path and that it is PEM";
    case NET_ERR_TLS: return "TLS failed: an old server, or a plain-http server (try http://)?";
    case NET_ERR_HTTP_AUTH: return "set the right key in KOPE_LLM_API_KEY or in the llm.api_key_file (mode 0600)";
    case NET_ERR_HTTP_NOTFOUND: return "check the model name and that the base URL ends in /v1";
    case NET_ERR_HTTP_BADREQ: return "the server refused the request: is the model name right?";
    case NET_ERR_HTTP_RATE: return "rate limited: try again later";
    case NET_ERR_HTTP_SERVER: return "the server failed: check its logs";
    case NET_ERR_REPLY: return "the endpoint does not speak the OpenAI chat completions API";
    case NET_ERR_TOOBIG: return "the reply was over the size cap";
    default: return "";
    }
}

/* Print the stage lines from the trace and rc; returns the exit code. */
static int report(int rc, const struct llm_settings *s, const struct llm_trace *t, const struct llm_reply *r,
                  const char *host, int port, int proxy_env)
{
    char a[32], b[32];
    struct in6_addr ip6;
    int literal = inet_pton(AF_INET, host, &ip6) == 1 || inet_pton(AF_INET6, host, &ip6) == 1;
    /* Which stage failed: the first not reached, or the one rc names. */
    int fail_dns = rc == NET_ERR_DNS || rc == NET_ERR_PROXY ||
                   (rc == NET_ERR_TIMEOUT && !literal && !t->via_proxy && t->dns_ms < 0);
    int fail_tcp = rc == NET_ERR_CONNECT || (rc == NET_ERR_TIMEOUT && t->connect_ms < 0 && !fail_dns);
    int fail_tls = rc == NET_ERR_CERT || rc == NET_ERR_CERT_EXPIRED || rc == NET_ERR_PIN || rc == NET_ERR_CA_FILE || rc == NET_ERR_TLS ||
                   (rc == NET_ERR_TIMEOUT && t->tls && t->tls_ms < 0 && !fail_tcp);
    int failed = 0;

    if (fail_dns) {
        stage("DNS", "FAIL", "%s", r->error), failed = 1;
    } else if (literal) {
        stage("DNS", "ok", "%s is an address: no lookup needed", host);
    } else {
        ms_text(t->dns_ms, a, sizeof a);
        stage("DNS", "ok", "%s -> %s in %s", host, t->ip[0] ? t->ip : "?", a);
    }
    if (failed)
        stage("TCP", "--", "not reached");
    else if (fail_tcp)
        stage("TCP", "FAIL", "%s", r->error), failed = 1;
    else {
        ms_text(t->connect_ms, a, sizeof a);
        stage("TCP", "ok", "connected to %s:%ld in %s%s", t->ip[0] ? t->ip : host, t->port > 0 ? t->port : (long)port,
              a, t->via_proxy ? " (the proxy)" : "");
    }
    if (!t->tls)
        stage("TLS", "--", "plain http: no TLS%s", s->api_key ? " (WARNING: the API key travels unencrypted)" : "");
    else if (failed)
        stage("TLS", "--", "not reached");
    else if (fail_tls) {
        stage("TLS", "FAIL", "%s", r->error), failed = 1;
        if (t->cert_subject[0])
            printf("              server certificate: %s\n              issued by: %s\n", t->cert_subject,
                   t->cert_issuer);
    } else {
        ms_text(t->tls_ms, a, sizeof a);
        stage("TLS", "ok", "verified against %s%s in %s", s->ca_file ? s->ca_file : "the system CA store",
              s->pinned_key ? ", pinned key matches" : "", a);
        printf("              certificate: %s\n              issued by:   %s\n              expires:     %s\n",
               t->cert_subject[0] ? t->cert_subject : "?", t->cert_issuer[0] ? t->cert_issuer : "?",
               t->cert_expire[0] ? t->cert_expire : "?");
    }
    if (failed) {
        stage("HTTP", "--", "not reached");
    } else if (r->http_status == 0) {
        stage("HTTP", "FAIL", "%s", r->error), failed = 1;
    } else {
        ms_text(t->first_byte_ms, a, sizeof a);
        if (rc && rc != NET_ERR_REPLY && rc != NET_ERR_TOOBIG && rc != NET_ERR_RESET && rc != NET_ERR_TIMEOUT)
            stage("HTTP", "FAIL", "%s", r->error), failed = 1;
        else
            stage("HTTP", "ok", "%ld, first byte after %s", r->http_status, a);
    }
    if (failed) {
        stage("reply", "--", "not reached");
    } else if (rc) {
        stage("reply", "FAIL", "%s", r->error), failed = 1;
    } else {
        const char *m = r->model ? r->model : "(not named in the reply)";
        int same = r->model && s->model && strncmp(r->model, s->model, strlen(s->model)) == 0;
        stage("model", "ok", "asked for '%s', answered by %s%s%s", s->model, r->model ? "'" : "", m,
              r->model ? "'" : "");
        if (r->model && !same)
            printf("              (the server maps the name; that is usually fine)\n");
        char text[64] = "";
        size_t o = 0;
        for (const char *p = r->content; p && *p && o + 4 < sizeof text; p++)
            text[o++] = (*p >= 0x20 && *p < 0x7f) ? *p : ' ';
        text[o] = '\0';
        snprintf(a, sizeof a, "%ld", r->n_tokens_in);
        snprintf(b, sizeof b, "%ld", r->n_tokens_out);
        stage("reply", "ok", "\"%s%s\"%s", text, r->content && strlen(r->content) >= sizeof text - 4 ? "..." : "",
              r->content && *r->content ? "" : " (empty content)");
        stage("tokens", "ok", "%s in, %s out%s", r->n_tokens_in >= 0 ? a : "?", r->n_tokens_out >= 0 ? b : "?",
              r->n_tokens_in < 0 ? " (the server sent no usage)" : "");
    }
    printf("latency %.1f ms\n", r->latency_ms);
    if (!rc) {
        printf("result: OK - the LLM endpoint works\n");
        return CLI_OK;
    }
    printf("result: FAIL - %s\n", net_strerror(rc));
    const char *h = hint(rc, s, t->via_proxy || proxy_env);
    if (*h)
        printf("hint:   %s\n", h);
    return CLI_FAIL;
}

static int llm_check(struct cli *c, int argc, char **argv)
{
    long timeout_ms = 30000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            char *end;
            timeout_ms = strtol(argv[++i], &end, 10);
            if (*end || timeout_ms <= 0) {
                fprintf(stderr, "kope: --timeout needs a positive number of milliseconds\n");
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "kope: llm check: unknown argument '%s'\n", argv[i]);
            llm_usage(stderr);
            return CLI_USAGE;
        }
    }
    struct kope_config *cfg = cli_config(c);
    if (!cfg)
        return CLI_FAIL;
    struct llm_settings s;
    struct llm_conf_origin o;
    struct llm_client *lc = NULL;
    struct llm_reply r;
    char err[768], url[512] = "", host[256];
    int port, code = CLI_FAIL;
    llm_settings_init(&s);
    llm_reply_init(&r);
    if (llm_conf_load(cfg, &s, &o, err, sizeof err)) {
        printf("config FAIL  %s\n", err);
        fflush(stdout);
        cli_hint("see docs/LLM.md for each setting");
        goto out;
    }
    if (!s.base_url) {
        /* nothing to check: say so, not "base URL from not set" */
        fprintf(stderr, "kope llm check: no LLM endpoint is configured: no base URL (llm.base_url in "
                        "%s, or $KOPE_LLM_BASE_URL)\n", kope_config_path(cfg) ? kope_config_path(cfg) : "a config");
        cli_hint("set llm.base_url and llm.model in kope.json, or export KOPE_LLM_BASE_URL and "
                 "KOPE_LLM_MODEL (docs/LLM.md); `kope run --offline` needs no LLM");
        goto out;
    }
    /* The check itself: one attempt, small, bounded. */
    s.retries = 0;
    s.max_tokens = 32;
    s.temperature = 0;
    if (s.timeout_ms > timeout_ms)
        s.timeout_ms = timeout_ms;
    s.total_timeout_ms = s.timeout_ms;
    if (s.connect_timeout_ms > s.timeout_ms)
        s.connect_timeout_ms = s.timeout_ms;

    llm_settings_url(&s, url, sizeof url);
    printf("kope llm check\n");
    printf("  endpoint    %s (base URL from %s)\n", url[0] ? url : s.base_url ? s.base_url : "(none)", o.base_url);
    printf("  model       %s (from %s)\n", s.model ? s.model : "(none)", o.model);
    if (s.api_key)
        printf("  API key     set, %zu characters (from %s)\n", strlen(s.api_key), o.api_key);
    else
        printf("  API key     none (fine for a local server)\n");
    printf("  CA file     %s%s%s%s\n", s.ca_file ? s.ca_file : "system CA store", s.ca_file ? " (from " : "",
           s.ca_file ? o.ca_file : "", s.ca_file ? ")" : "");
    if (s.ca_file && access(s.ca_file, R_OK) != 0)
        printf("              WARNING: %s cannot be read\n", s.ca_file);
    if (s.pinned_key)
        printf("  pinned key  %s (from %s)\n", s.pinned_key, o.pinned_key);
    int proxy_env = 0;
    if (s.base_url) {
        char px[512];
        proxy_from_env(s.base_url, px, sizeof px);
        proxy_env = strncmp(px, "none", 4) != 0;
        printf("  proxy       %s\n", px);
    }
    printf("  timeout     %ld ms\n", s.timeout_ms);
    printf("  client      %s\n", llm_client_version());
    if (llm_client_new(&s, &lc, err, sizeof err)) {
        printf("config FAIL  %s\n", err);
        fflush(stdout);
        cli_hint("see docs/LLM.md for each setting");
        goto out;
    }
    static const struct llm_message msgs[] = {
        {"system", "You are a connectivity check. Answer briefly."},
        {"user", "Reply with the single word: pong"},
    };
    int rc = llm_chat(lc, msgs, 2, &r);
    url_host(url, host, sizeof host, &port);
    code = report(rc, &s, llm_client_trace(lc), &r, host, port, proxy_env);
out:
    llm_reply_free(&r);
    llm_client_free(lc);
    llm_settings_free(&s);
    return code;
}

int cli_llm(struct cli *c, int argc, char **argv)
{
    if (argc < 2 || cli_wants_help(argc, argv)) {
        llm_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return llm_check(c, argc - 1, argv + 1);
    fprintf(stderr, "kope: llm: unknown subcommand '%s'\n", argv[1]);
    llm_usage(stderr);
    return CLI_USAGE;
}

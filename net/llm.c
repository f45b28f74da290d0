/*
 * net/llm.c - the chat completion client: request body, retry loop, error
 * messages. See llm.h. Transport is net/http.c, parsing net/llm_reply.c.
 *
 * The retry loop holds one invariant: nothing it does - an attempt, a
 * backoff, a Retry-After wait - runs past the call's deadline
 * (start + total_timeout_ms). Each attempt's timeout is clipped to what is
 * left, and a wait that would cross the deadline is not started: the call
 * returns the last (retryable) error instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "net/http.h"
#include "net/llm.h"

struct llm_client {
    const struct llm_settings *s;
    struct http_client *http;
    int (*cancel)(void *arg);
    void *cancel_arg;
    uint64_t rng;            /* xorshift state for backoff jitter */
    struct llm_trace trace;
};

/* ------------------------------------------------------------ settings */

void llm_settings_init(struct llm_settings *s)
{
    memset(s, 0, sizeof *s);
    s->temperature = 0.2;
    s->max_tokens = LLM_MAX_TOKENS_DEFAULT;
    s->max_tokens_field = LLM_MAX_TOKENS;
    s->timeout_ms = LLM_TIMEOUT_MS_DEFAULT;
    s->connect_timeout_ms = 10000;
    s->total_timeout_ms = LLM_TOTAL_TIMEOUT_MS_DEFAULT;
    s->retries = 4;
    s->backoff_ms = 1000;
    s->backoff_max_ms = 30000;
    s->retry_after_max_ms = 120000;
    s->max_reply_bytes = NET_HTTP_MAX_BODY;
}

static void wipe_free(char *p)
{
    if (p) {
        explicit_bzero(p, strlen(p));
        free(p);
    }
}

void llm_settings_free(struct llm_settings *s)
{
    if (!s)
        return;
    free(s->base_url);
    free(s->model);
    wipe_free(s->api_key);
    free(s->ca_file);
    free(s->pinned_key);
    llm_settings_init(s);
}

int llm_settings_set(char **field, const char *value)
{
    char *v = NULL;
    if (value && *value && !(v = strdup(value)))
        return NET_ERR_NOMEM;
    wipe_free(*field);
    *field = v;
    return 0;
}

int llm_settings_url(const struct llm_settings *s, char *out, size_t out_len)
{
    const char *b = s->base_url;
    if (!b || (strncmp(b, "https://", 8) != 0 && strncmp(b, "http://", 7) != 0))
        return NET_ERR_ARG;
    size_t n = strlen(b);
    while (n > 8 && b[n - 1] == '/')
        n--;
    int w = snprintf(out, out_len, "%.*s/chat/completions", (int)n, b);
    return w < 0 || (size_t)w >= out_len ? NET_ERR_ARG : 0;
}

/* ------------------------------------------------------------ client */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int llm_client_new(const struct llm_settings *s, struct llm_client **out, char *err, size_t err_len)
{
    char url[512];
    *out = NULL;
    if (llm_settings_url(s, url, sizeof url)) {
        snprintf(err, err_len, "LLM base URL %s%s%s: it must start with https:// or http://",
                 s->base_url ? "'" : "", s->base_url ? s->base_url : "is not set",
                 s->base_url ? "' is invalid" : "");
        return NET_ERR_ARG;
    }
    if (!s->model) {
        snprintf(err, err_len, "LLM model is not set (llm.model or KOPE_LLM_MODEL)");
        return NET_ERR_ARG;
    }
    for (const char *k = s->api_key; k && *k; k++)
        if ((unsigned char)*k < 0x21 || *k == 0x7f) {
            snprintf(err, err_len, "LLM API key contains a space or control character "
                                   "(a trailing newline in the key file?)");
            return NET_ERR_ARG;
        }
    struct llm_client *c = calloc(1, sizeof *c);
    if (!c)
        return NET_ERR_NOMEM;
    int rc = http_client_new(&c->http);
    if (rc) {
        free(c);
        snprintf(err, err_len, "could not start libcurl: %s", net_strerror(rc));
        return rc;
    }
    c->s = s;
    c->rng = now_ms() ^ ((uint64_t)(uintptr_t)c << 16) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15u;
    *out = c;
    return 0;
}

void llm_client_free(struct llm_client *c)
{
    if (!c)
        return;
    http_client_free(c->http);
    free(c);
}

void llm_client_set_cancel(struct llm_client *c, int (*cancel)(void *arg), void *arg)
{
    c->cancel = cancel;
    c->cancel_arg = arg;
}

const char *llm_client_version(void)
{
    return http_version();
}

const struct llm_trace *llm_client_trace(const struct llm_client *c)
{
    return &c->trace;
}

/* ------------------------------------------------------------ request */

char *llm_request_json(const struct llm_settings *s, const struct llm_message *msgs, size_t n)
{
    char *out = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = NULL;
    if (!root || !cJSON_AddStringToObject(root, "model", s->model ? s->model : ""))
        goto out;
    if (!(arr = cJSON_AddArrayToObject(root, "messages")))
        goto out;
    for (size_t i = 0; i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        if (!m)
            goto out;
        if (!cJSON_AddItemToArray(arr, m)) { /* not attached: still ours to free */
            cJSON_Delete(m);
            goto out;
        }
        if (!cJSON_AddStringToObject(m, "role", msgs[i].role ? msgs[i].role : "user") ||
            !cJSON_AddStringToObject(m, "content", msgs[i].content ? msgs[i].content : ""))
            goto out;
    }
    if (s->temperature >= 0 && !cJSON_AddNumberToObject(root, "temperature", s->temperature))
        goto out;
    if (s->max_tokens > 0 &&
        !cJSON_AddNumberToObject(root, s->max_tokens_field == LLM_MAX_COMPLETION_TOKENS ? "max_completion_tokens"
                                                                                      : "max_tokens",
                                 (double)s->max_tokens))
        goto out;
    if (!cJSON_AddFalseToObject(root, "stream"))
        goto out;
    out = cJSON_PrintUnformatted(root);
out:
    cJSON_Delete(root);
    return out;
}

/* ------------------------------------------------------------ retry loop */

static uint64_t rng_next(struct llm_client *c)
{
    uint64_t x = c->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return c->rng = x;
}

/* Sleep ms, waking every 50 ms to ask the cancel callback. 1 if cancelled. */
static int nap(struct llm_client *c, long ms)
{
    uint64_t end = now_ms() + (uint64_t)(ms > 0 ? ms : 0);
    for (;;) {
        if (c->cancel && c->cancel(c->cancel_arg))
            return 1;
        uint64_t t = now_ms();
        if (t >= end)
            return 0;
        uint64_t step = end - t > 50 ? 50 : end - t;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The message for a non-2xx status: what it means for kope, plus the
 * server's own words. */
static void status_message(const struct llm_settings *s, const char *url, long status,
                           const struct http_response *h, char *msg, size_t msg_len)
{
    char said[200];
    llm_error_text(h->body, h->body_len, said, sizeof said);
    const char *what;
    switch (http_status_err(status)) {
    case NET_ERR_HTTP_AUTH:
        what = s->api_key ? "the API key was refused" : "no API key was sent (set KOPE_LLM_API_KEY or llm.api_key_file)";
        break;
    case NET_ERR_HTTP_NOTFOUND:
        what = "unknown model or wrong base URL (OpenAI-compatible servers usually end in /v1)";
        break;
    case NET_ERR_HTTP_BADREQ:
        what = "the server rejected the request (unknown model? max_tokens too large?)";
        break;
    case NET_ERR_HTTP_RATE:
        what = "rate limited";
        break;
    case NET_ERR_HTTP_SERVER:
        what = "server error";
        break;
    default:
        what = "unexpected status";
        break;
    }
    if (status >= 300 && status < 400 && h->location[0])
        snprintf(msg, msg_len, "HTTP %ld from %s: redirect to %.200s, not followed: put the final URL in the "
                 "base URL", status, url, h->location);
    else
        snprintf(msg, msg_len, "HTTP %ld from %s: %s (model '%s')%s%s", status, url, what,
                 s->model ? s->model : "", said[0] ? "; server says: " : "", said);
}

static void trace_take(struct llm_trace *t, const struct http_response *h, int rc)
{
    t->dns_ms = h->dns_ms;
    t->connect_ms = h->connect_ms;
    t->tls_ms = h->tls_ms;
    t->first_byte_ms = h->first_byte_ms;
    snprintf(t->ip, sizeof t->ip, "%s", h->ip);
    t->port = h->port;
    t->via_proxy = h->via_proxy;
    if (h->cert_subject[0] || h->cert_issuer[0]) {
        snprintf(t->cert_subject, sizeof t->cert_subject, "%s", h->cert_subject);
        snprintf(t->cert_issuer, sizeof t->cert_issuer, "%s", h->cert_issuer);
        snprintf(t->cert_expire, sizeof t->cert_expire, "%s", h->cert_expire);
    }
    t->last_rc = rc;
}

int llm_chat(struct llm_client *c, const struct llm_message *msgs, size_t n, struct llm_reply *r)
{
    const struct llm_settings *s = c->s;
    int rc = NET_ERR_INTERNAL;
    char *body = NULL, *auth = NULL;
    const char *headers[2] = {NULL, NULL};
    uint64_t start = now_ms();
    uint64_t deadline = start + (uint64_t)(s->total_timeout_ms > 0 ? s->total_timeout_ms
                                                                   : LLM_TOTAL_TIMEOUT_MS_DEFAULT);
    int reply_retried = 0;
    struct http_response h;
    char last[sizeof r->error] = "";

    memset(&h, 0, sizeof h);
    memset(&c->trace, 0, sizeof c->trace);
    c->trace.dns_ms = c->trace.connect_ms = c->trace.tls_ms = c->trace.first_byte_ms = -1;
    if ((rc = llm_settings_url(s, c->trace.url, sizeof c->trace.url))) {
        snprintf(r->error, sizeof r->error, "LLM base URL is not set or not http(s)");
        goto out;
    }
    c->trace.tls = strncmp(c->trace.url, "https://", 8) == 0;
    rc = NET_ERR_NOMEM;
    if (!(body = llm_request_json(s, msgs, n)))
        goto out;
    if (s->api_key) {
        size_t alen = strlen(s->api_key) + sizeof "Authorization: Bearer ";
        if (!(auth = malloc(alen)))
            goto out;
        snprintf(auth, alen, "Authorization: Bearer %s", s->api_key);
        headers[0] = auth;
    }

    struct http_opts o;
    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = s->connect_timeout_ms;
    o.max_body = s->max_reply_bytes;
    o.ca_file = s->ca_file;
    o.pinned_key = s->pinned_key;
    o.cancel = c->cancel;
    o.cancel_arg = c->cancel_arg;

    for (int attempt = 0;; attempt++) {
        uint64_t t = now_ms();
        if (t >= deadline) {
            rc = NET_ERR_TIMEOUT;
            snprintf(last, sizeof last, "no time left (total_timeout_ms=%ld)", s->total_timeout_ms);
            break;
        }
        long left = (long)(deadline - t);
        o.timeout_ms = s->timeout_ms > 0 && s->timeout_ms < left ? s->timeout_ms : left;
        http_response_free(&h);
        rc = http_post(c->http, c->trace.url, headers, body, strlen(body), &o, &h);
        r->attempts++;
        r->http_status = h.status;
        if (rc) {
            snprintf(last, sizeof last, "%s", h.error);
        } else if ((rc = http_status_err(h.status))) {
            status_message(s, c->trace.url, h.status, &h, last, sizeof last);
        } else {
            trace_take(&c->trace, &h, 0);
            rc = llm_reply_parse(h.body, h.body_len, r);
            if (rc == NET_ERR_REPLY) {
                snprintf(last, sizeof last, "HTTP %ld from %.200s but %.250s", h.status, c->trace.url, r->error);
                /* a 200 that is not a chat completion is often a gateway's
                 * page in front of a busy server: asked once more, then
                 * final (the caller turns the LLM off) */
                if (!reply_retried && attempt < s->retries) {
                    reply_retried = 1;
                    r->error[0] = '\0';
                    goto backoff;
                }
            } else if (rc) {
                snprintf(last, sizeof last, "%s", net_strerror(rc));
            }
            break;
        }
        trace_take(&c->trace, &h, rc);
        if (!net_err_retryable(rc) || attempt >= s->retries)
            break;
    backoff:;
        /* Backoff: base * 2^attempt capped, "equal jitter" (half fixed, half random). */
        long wait = s->backoff_ms > 0 ? s->backoff_ms : 0;
        for (int i = 0; i < attempt && wait < s->backoff_max_ms; i++)
            wait *= 2;
        if (s->backoff_max_ms > 0 && wait > s->backoff_max_ms)
            wait = s->backoff_max_ms;
        wait = wait / 2 + (long)(rng_next(c) % (uint64_t)(wait / 2 + 1));
        if (h.retry_after_ms >= 0 && (h.status == 429 || h.status == 503)) {
            if (h.retry_after_ms > s->retry_after_max_ms) {
                size_t l = strlen(last);
                snprintf(last + l, sizeof last - l, " (server asks to wait %ld s, more than the %ld s allowed)",
                         h.retry_after_ms / 1000, s->retry_after_max_ms / 1000);
                break;
            }
            long j = h.retry_after_ms / 10 < 1000 ? h.retry_after_ms / 10 : 1000;
            wait = h.retry_after_ms + (long)(rng_next(c) % (uint64_t)(j + 1));
        }
        if (now_ms() + (uint64_t)wait >= deadline) {
            size_t l = strlen(last);
            snprintf(last + l, sizeof last - l, " (no time left to retry within %ld ms)", s->total_timeout_ms);
            break;
        }
        if (nap(c, wait)) {
            rc = NET_ERR_CANCELLED;
            snprintf(last, sizeof last, "cancelled while waiting to retry");
            break;
        }
    }
    if (rc && last[0]) {
        if (r->attempts > 1)
            snprintf(r->error, sizeof r->error, "after %d attempts: %.480s", r->attempts, last);
        else
            snprintf(r->error, sizeof r->error, "%s", last);
    }
out:
    if (rc && !r->error[0])
        snprintf(r->error, sizeof r->error, "%s", net_strerror(rc));
    r->latency_ms = (double)(now_ms() - start);
    http_response_free(&h);
    free(body);
    wipe_free(auth);
    return rc;
}

/*
 * net/llm.h - the LLM client: OpenAI-compatible chat completions over
 * https (libcurl on mbedTLS, through net/http.h), made for flaky links.
 *
 * One call, llm_chat(), POSTs {base_url}/chat/completions with the model,
 * messages, temperature and max_tokens, and returns the parsed reply
 * (net/llm_reply.h: content, reasoning_content, kernel, decision, usage).
 * Failures are retried with exponential backoff and jitter when they are
 * retryable (timeouts, resets, DNS/connect failures, 429, 5xx); a 429/503
 * Retry-After is honoured. 400, 401/403, 404 (unknown model / wrong URL),
 * certificate and pin failures are final and say so plainly. The whole call
 * - every attempt and every wait - ends within total_timeout_ms, and the
 * caller's cancel callback stops it within about 100 ms.
 *
 * A client serves one thread at a time (it owns one libcurl handle and keeps
 * its connection alive between calls); its cancel callback may look at state
 * that another thread sets.
 *
 * Settings are plain data filled by core (config file, then environment).
 * The API key is a secret: it is sent only as "Authorization: Bearer", never
 * put in a message, and wiped by llm_settings_free().
 *
 * This header includes nothing from core/, store/ or platform/.
 */
#ifndef KOPE_NET_LLM_H
#define KOPE_NET_LLM_H

#include <stddef.h>

#include "net/llm_reply.h"
#include "net/neterr.h"

#ifndef LLM_MAX_TOKENS_DEFAULT
#define LLM_MAX_TOKENS_DEFAULT 16384       /* room for long reasoning plus a kernel */
#endif
#ifndef LLM_TIMEOUT_MS_DEFAULT
#define LLM_TIMEOUT_MS_DEFAULT 600000L     /* one attempt: 10 min of reasoning */
#endif
#ifndef LLM_TOTAL_TIMEOUT_MS_DEFAULT
#define LLM_TOTAL_TIMEOUT_MS_DEFAULT 1800000L /* the call with its retries */
#endif

/* The request member that carries max_tokens: "max_tokens" (the classic
 * OpenAI name, most servers) or "max_completion_tokens" (endpoints of
 * reasoning models that refuse max_tokens). */
enum llm_max_tokens_field {
    LLM_MAX_TOKENS = 0,
    LLM_MAX_COMPLETION_TOKENS = 1,
};

struct llm_settings {
    char *base_url;          /* e.g. "https://api.example.com/v1" (owned) */
    char *model;             /* owned */
    char *api_key;           /* owned secret; NULL = no Authorization header */
    char *ca_file;           /* PEM bundle, NULL = system store (owned) */
    char *pinned_key;        /* "sha256//<base64 of the SPKI hash>", NULL = none (owned) */
    double temperature;      /* default 0.2; < 0 = do not send */
    /* Defaults are sized for reasoning models (GLM, DeepSeek-R1, o-series),
     * whose hidden reasoning counts against max_tokens and can take minutes
     * before the first byte of the answer. */
    long max_tokens;         /* default LLM_MAX_TOKENS_DEFAULT; <= 0 = do not send */
    int max_tokens_field;    /* enum llm_max_tokens_field: how the cap is named */
    long timeout_ms;         /* one attempt; default LLM_TIMEOUT_MS_DEFAULT */
    long connect_timeout_ms; /* default 10000 */
    long total_timeout_ms;   /* the whole call with retries; default LLM_TOTAL_TIMEOUT_MS_DEFAULT */
    int retries;             /* extra attempts after the first; default 4 */
    long backoff_ms;         /* first backoff; doubles each retry; default 1000 */
    long backoff_max_ms;     /* cap of one backoff; default 30000 */
    long retry_after_max_ms; /* longest Retry-After honoured; default 120000 */
    size_t max_reply_bytes;  /* reply body cap; default NET_HTTP_MAX_BODY */
};

/* Defaults for everything, no strings (cannot fail). */
void llm_settings_init(struct llm_settings *s);
/* Free the strings, wiping the API key first; re-inits s. Accepts an
 * init'ed struct. */
void llm_settings_free(struct llm_settings *s);
/* Replace the owned string *field by a copy of value (NULL or "" clears it);
 * the old value is wiped before it is freed. Returns 0 or NET_ERR_NOMEM. */
int llm_settings_set(char **field, const char *value);

/* The request URL for s ({base_url}/chat/completions, no doubled slash) into
 * out. Returns 0, or NET_ERR_ARG when base_url is missing or not http(s). */
int llm_settings_url(const struct llm_settings *s, char *out, size_t out_len);

struct llm_message {
    const char *role;        /* "system" | "user" | "assistant" */
    const char *content;
};

/* What happened on the wire during the last llm_chat(), for `kope llm check`
 * and logs (never contains the key). */
struct llm_trace {
    char url[512];
    double dns_ms, connect_ms, tls_ms, first_byte_ms; /* last attempt, -1 = not reached */
    char ip[64];
    long port;
    int tls;                 /* 1 if https */
    int via_proxy;           /* 1 if the last attempt went through a proxy */
    char cert_subject[256], cert_issuer[256], cert_expire[64];
    int last_rc;             /* NET_ERR_* of the last attempt, 0 if it succeeded */
};

struct llm_client;

/* Create a client for settings s (which must outlive it; it is not copied).
 * Returns 0, NET_ERR_ARG (with a message in err) or NET_ERR_NOMEM. */
int llm_client_new(const struct llm_settings *s, struct llm_client **out, char *err, size_t err_len);
/* Free; accepts NULL. */
void llm_client_free(struct llm_client *c);
/* Optional: cancel(arg) is polled during transfers and waits; non-zero
 * stops the call with NET_ERR_CANCELLED. */
void llm_client_set_cancel(struct llm_client *c, int (*cancel)(void *arg), void *arg);
/* Trace of the last call (owned by c, valid until the next call). */
const struct llm_trace *llm_client_trace(const struct llm_client *c);

/* Send the n messages and parse the reply into r (init'ed by the caller;
 * free with llm_reply_free in every case). Returns 0 when a reply was
 * parsed - check r->code for the kernel, "no code" is not an error - or the
 * NET_ERR_* of the final failure with r->error saying what went wrong and
 * r->attempts / r->http_status / r->latency_ms filled. */
int llm_chat(struct llm_client *c, const struct llm_message *msgs, size_t n, struct llm_reply *r);

/* "libcurl/x.y.z mbedTLS/a.b.c ..." for reports (static storage). */
const char *llm_client_version(void);

/* The JSON request body for msgs under s (heap string, caller frees), or
 * NULL on out-of-memory. Exposed for tests and for `kope context`. */
char *llm_request_json(const struct llm_settings *s, const struct llm_message *msgs, size_t n);

#endif /* KOPE_NET_LLM_H */

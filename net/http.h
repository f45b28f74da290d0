/*
 * net/http.h - one HTTPS request at a time over libcurl (built on mbedTLS).
 *
 * The only file that includes <curl/curl.h>. It wraps a reusable easy handle
 * (so a keep-alive connection survives between an agent's calls) driven by a
 * multi handle, which lets every wait be bounded and cancellable:
 *   - the reply body is capped (max_body): a longer body ends the transfer
 *     with NET_ERR_TOOBIG, whether or not the server announced its length;
 *   - the whole request is bounded by timeout_ms, the connect by
 *     connect_timeout_ms;
 *   - cancel(cancel_arg) is polled at least every 100 ms; non-zero aborts with
 *     NET_ERR_CANCELLED;
 *   - TLS verification is always on; ca_file replaces the system bundle and
 *     pinned_key ("sha256//<base64>") additionally pins the server key;
 *   - the proxy comes from the environment (https_proxy, no_proxy, ...), as
 *     libcurl does by default; redirects are never followed (a POST with an
 *     Authorization header must not wander).
 * Failures map to NET_ERR_* (net/neterr.h); the message says which stage
 * failed (DNS, TCP, TLS, HTTP) in words.
 */
#ifndef KOPE_NET_HTTP_H
#define KOPE_NET_HTTP_H

#include <stddef.h>

#include "net/neterr.h"

#ifndef NET_HTTP_MAX_BODY
#define NET_HTTP_MAX_BODY (8u * 1024 * 1024) /* default reply cap, bytes */
#endif

struct http_opts {
    long timeout_ms;         /* whole request; 0 = 60000 */
    long connect_timeout_ms; /* DNS + TCP + TLS; 0 = 10000 */
    size_t max_body;         /* reply cap in bytes; 0 = NET_HTTP_MAX_BODY */
    const char *ca_file;     /* PEM bundle, NULL = libcurl's default */
    const char *pinned_key;  /* "sha256//base64[;sha256//...]" or NULL */
    /* Optional: polled while waiting; returning non-zero cancels. NULL = never. */
    int (*cancel)(void *arg);
    void *cancel_arg;
};

/* What one request produced; filled by http_post(), freed by
 * http_response_free(). Timings are in milliseconds from the start of the
 * request (-1 when the stage was not reached). */
struct http_response {
    long status;             /* HTTP status, 0 if none was received */
    char *body;              /* NUL-terminated reply body (owned), may be NULL */
    size_t body_len;
    long retry_after_ms;     /* from Retry-After (seconds or HTTP date), -1 absent */
    double dns_ms, connect_ms, tls_ms, first_byte_ms, total_ms;
    char ip[64];             /* address actually connected to, "" if none */
    long port;
    int tls_verified;        /* 1 if a TLS peer was verified */
    int via_proxy;           /* 1 if the request went through a proxy */
    char location[256];      /* Location of a 3xx reply (never followed), "" if none */
    char cert_subject[256];  /* leaf certificate subject, "" if unknown */
    char cert_issuer[256];   /* leaf certificate issuer, "" if unknown */
    char cert_expire[64];
    char error[512];         /* human text for a failure, "" on success */
};

struct http_client;

/* Create a client (one easy handle, keep-alive connection cache). Returns 0,
 * NET_ERR_NOMEM or NET_ERR_INTERNAL. *out is owned by the caller. */
int http_client_new(struct http_client **out);
/* Free a client; accepts NULL. */
void http_client_free(struct http_client *c);

/* POST body (len bytes, sent as application/json) to url with the extra
 * headers (NULL-terminated array of "Name: value" strings, may be NULL; they
 * are copied and the copies wiped after use, so an Authorization header
 * leaves no trace in kope's heap). Returns 0 when an HTTP reply was received
 * completely - whatever its status, which the caller judges - or a NET_ERR_*
 * code with out->error set. out must be zeroed or freed before reuse; on
 * return it always needs http_response_free(). */
int http_post(struct http_client *c, const char *url, const char *const *headers,
              const char *body, size_t len, const struct http_opts *opts,
              struct http_response *out);

/* Map an HTTP status to 0 (2xx) or a NET_ERR_HTTP_* code. */
int http_status_err(long status);

/* Free out's body and reset it; accepts a zeroed struct. */
void http_response_free(struct http_response *out);

/* libcurl's version string and its TLS backend, for `kope version`/checks. */
const char *http_version(void);

/* The linked libcurl's own version number ("8.14.1") and its TLS backend
 * ("mbedTLS/3.6.6"), from curl_version_info(): static strings. */
const char *http_libcurl_version(void);
const char *http_tls_backend(void);

#endif /* KOPE_NET_HTTP_H */

/*
 * net/http.c - bounded, cancellable HTTPS POSTs over libcurl. See http.h.
 *
 * One easy handle per client, reset before each request (curl_easy_reset
 * keeps the connection cache, so keep-alive survives) and driven through a
 * private multi handle: the loop below wakes at least every
 * HTTP_POLL_MS to ask the caller's cancel callback, so cancellation never
 * waits for a timeout. The reply body grows in one buffer that refuses to
 * pass max_body (the write callback returns short, curl stops).
 *
 * Secrets: header strings are copied into a curl_slist we own and wiped
 * before it is freed. libcurl itself formats the request into internal
 * buffers it frees without wiping; that copy is outside our control.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "net/http.h"

#ifndef HTTP_POLL_MS
#define HTTP_POLL_MS 100
#endif

struct http_client {
    CURL *easy;
    CURLM *multi;
};

/* ------------------------------------------------------------ global init */

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_init_rc = CURLE_FAILED_INIT;

static void http_global_init(void)
{
    http_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_client_new(struct http_client **out)
{
    *out = NULL;
    pthread_once(&http_once, http_global_init);
    if (http_init_rc != CURLE_OK)
        return NET_ERR_INTERNAL;
    struct http_client *c = calloc(1, sizeof *c);
    if (!c)
        return NET_ERR_NOMEM;
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    if (!c->easy || !c->multi) {
        http_client_free(c);
        return NET_ERR_NOMEM;
    }
    *out = c;
    return 0;
}

void http_client_free(struct http_client *c)
{
    if (!c)
        return;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    free(c);
}

const char *http_version(void)
{
    return curl_version();
}

const char *http_libcurl_version(void)
{
    return curl_version_info(CURLVERSION_NOW)->version;
}

const char *http_tls_backend(void)
{
    const char *s = curl_version_info(CURLVERSION_NOW)->ssl_version;
    return s ? s : "none";
}

void http_response_free(struct http_response *out)
{
    if (!out)
        return;
    free(out->body);
    memset(out, 0, sizeof *out);
}

/* ------------------------------------------------------------ callbacks */

struct xfer {
    struct http_response *resp;
    size_t cap;
    size_t alloc;
    int toobig;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    struct http_response *r = x->resp;
    size_t n = size * nmemb;
    if (n > x->cap - r->body_len) {
        x->toobig = 1;
        return 0; /* short write: curl ends the transfer with CURLE_WRITE_ERROR */
    }
    if (r->body_len + n + 1 > x->alloc) {
        size_t want = x->alloc ? x->alloc : 16384;
        while (want < r->body_len + n + 1)
            want *= 2;
        if (want > x->cap + 1)
            want = x->cap + 1;
        char *p = realloc(r->body, want);
        if (!p)
            return 0;
        r->body = p;
        x->alloc = want;
    }
    memcpy(r->body + r->body_len, ptr, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return n;
}

/* Retry-After: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
static long parse_retry_after(const char *v, size_t n)
{
    char buf[128];
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
        n--;
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (buf[0] >= '0' && buf[0] <= '9') {
        char *end;
        long s = strtol(buf, &end, 10);
        if (*end || s < 0)
            return -1;
        if (s > 86400)
            s = 86400;
        return s * 1000;
    }
    time_t t = curl_getdate(buf, NULL);
    if (t < 0)
        return -1;
    time_t now = time(NULL);
    return t > now ? (long)(t - now) * 1000 : 0;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    size_t n = size * nmemb;
    static const char ra[] = "retry-after:";
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
        x->resp->retry_after_ms = -1; /* a new response (after 100-continue etc.) */
    else if (n > sizeof ra - 1 && strncasecmp(ptr, ra, sizeof ra - 1) == 0)
        x->resp->retry_after_ms = parse_retry_after(ptr + sizeof ra - 1, n - (sizeof ra - 1));
    return n;
}

/* ------------------------------------------------------------ errors */

int http_status_err(long status)
{
    if (status >= 200 && status < 300)
        return 0;
    if (status == 429)
        return NET_ERR_HTTP_RATE;
    if (status >= 500 && status < 600)
        return NET_ERR_HTTP_SERVER;
    if (status == 401 || status == 403)
        return NET_ERR_HTTP_AUTH;
    if (status == 400 || status == 422)
        return NET_ERR_HTTP_BADREQ;
    if (status == 404)
        return NET_ERR_HTTP_NOTFOUND;
    if (status == 408)
        return NET_ERR_TIMEOUT;
    return NET_ERR_HTTP;
}

/* Turn a CURLcode into a NET_ERR_* and a message naming the stage. */
static int map_curl(CURLcode cc, const struct xfer *x, const char *url,
                    const struct http_opts *o, const char *cerr, char *msg, size_t msg_len)
{
    char d[CURL_ERROR_SIZE];
    snprintf(d, sizeof d, "%s", cerr && *cerr ? cerr : curl_easy_strerror(cc));
    for (size_t n = strlen(d); n && (d[n - 1] == '\n' || d[n - 1] == '\r' || d[n - 1] == ' ');)
        d[--n] = '\0';
    const char *detail = d;
    int rc;
    const char *what;
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
        rc = NET_ERR_DNS, what = "DNS: could not resolve the host";
        break;
    case CURLE_COULDNT_RESOLVE_PROXY:
        rc = NET_ERR_PROXY, what = "proxy: could not resolve the proxy from the environment";
        break;
    case CURLE_COULDNT_CONNECT:
        rc = NET_ERR_CONNECT, what = "TCP: could not connect";
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rc = NET_ERR_TIMEOUT, what = "timeout: no complete reply in time";
        break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        rc = NET_ERR_RESET, what = "connection dropped before the reply was complete";
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
        rc = NET_ERR_CERT, what = o->ca_file ? "TLS: server certificate not trusted by the CA file"
                                            : "TLS: server certificate not trusted by the system CA store";
        break;
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        rc = NET_ERR_PIN, what = "TLS: server public key does not match the pinned key";
        break;
    case CURLE_SSL_CACERT_BADFILE:
        rc = NET_ERR_CA_FILE, what = "TLS: the CA bundle could not be read";
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_INITFAILED:
        rc = NET_ERR_TLS, what = "TLS: handshake failed";
        break;
    case CURLE_FILESIZE_EXCEEDED:
        rc = NET_ERR_TOOBIG, what = "reply body over the cap";
        break;
    case CURLE_WRITE_ERROR:
        if (x->toobig)
            rc = NET_ERR_TOOBIG, what = "reply body over the cap";
        else
            rc = NET_ERR_NOMEM, what = "out of memory storing the reply";
        break;
    case CURLE_ABORTED_BY_CALLBACK:
        rc = NET_ERR_CANCELLED, what = "cancelled";
        break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        rc = NET_ERR_ARG, what = "bad URL (use http:// or https://)";
        break;
    case CURLE_OUT_OF_MEMORY:
        rc = NET_ERR_NOMEM, what = "out of memory";
        break;
    default:
        rc = NET_ERR_INTERNAL, what = "request failed";
        break;
    }
    /* a certificate out of its validity is trusted but stale: its own code,
     * so the hint names expiry (or the clock), not the CA file (mbedTLS and
     * OpenSSL word it differently) */
    if (rc == NET_ERR_CERT && (strstr(detail, "validity has expired") || strstr(detail, "certificate has expired") ||
                               strstr(detail, "validity starts in the future") ||
                               strstr(detail, "certificate is not yet valid")))
        rc = NET_ERR_CERT_EXPIRED, what = "TLS: server certificate has expired or is not yet valid";
    if (rc == NET_ERR_TOOBIG)
        snprintf(msg, msg_len, "%s (%zu bytes) from %s", what, x->cap, url);
    else if (rc == NET_ERR_CERT && o->ca_file)
        snprintf(msg, msg_len, "%s %s: %s", what, o->ca_file, detail);
    else
        snprintf(msg, msg_len, "%s: %s", what, detail);
    return rc;
}

/* ------------------------------------------------------------ request */

static double us_to_ms(curl_off_t us)
{
    return us > 0 ? (double)us / 1000.0 : -1.0;
}

static void copy_field(char *dst, size_t dst_len, const char *data, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(data, key, k) == 0 && !*dst)
        snprintf(dst, dst_len, "%s", data + k);
}

static void collect_info(CURL *e, struct http_response *r)
{
    curl_off_t t;
    long l;
    char *s = NULL;
    if (curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &l) == CURLE_OK)
        r->status = l;
    if (curl_easy_getinfo(e, CURLINFO_NAMELOOKUP_TIME_T, &t) == CURLE_OK)
        r->dns_ms = us_to_ms(t);
    if (curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &t) == CURLE_OK)
        r->connect_ms = us_to_ms(t);
    if (curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &t) == CURLE_OK)
        r->tls_ms = us_to_ms(t);
    if (curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &t) == CURLE_OK)
        r->first_byte_ms = us_to_ms(t);
    if (curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &t) == CURLE_OK)
        r->total_ms = us_to_ms(t);
    if (curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &s) == CURLE_OK && s)
        snprintf(r->ip, sizeof r->ip, "%s", s);
    if (curl_easy_getinfo(e, CURLINFO_PRIMARY_PORT, &l) == CURLE_OK)
        r->port = l;
    if (curl_easy_getinfo(e, CURLINFO_USED_PROXY, &l) == CURLE_OK)
        r->via_proxy = l != 0;
    if (curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &s) == CURLE_OK && s)
        snprintf(r->location, sizeof r->location, "%s", s);
    struct curl_certinfo *ci = NULL;
    if (curl_easy_getinfo(e, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci && ci->num_of_certs > 0) {
        for (struct curl_slist *p = ci->certinfo[0]; p; p = p->next) {
            copy_field(r->cert_subject, sizeof r->cert_subject, p->data, "Subject:");
            copy_field(r->cert_issuer, sizeof r->cert_issuer, p->data, "Issuer:");
            copy_field(r->cert_expire, sizeof r->cert_expire, p->data, "Expire Date:");
        }
    }
}

static void slist_wipe_free(struct curl_slist *l)
{
    for (struct curl_slist *p = l; p; p = p->next)
        if (p->data)
            explicit_bzero(p->data, strlen(p->data));
    curl_slist_free_all(l);
}

int http_post(struct http_client *c, const char *url, const char *const *headers,
              const char *body, size_t len, const struct http_opts *opts,
              struct http_response *out)
{
    int rc = NET_ERR_INTERNAL;
    struct http_opts o = *opts;
    struct curl_slist *hl = NULL;
    char cerr[CURL_ERROR_SIZE] = "";
    struct xfer x;
    CURL *e = c->easy;
    int added = 0;

    memset(out, 0, sizeof *out);
    out->retry_after_ms = -1;
    out->dns_ms = out->connect_ms = out->tls_ms = out->first_byte_ms = out->total_ms = -1;
    if (o.timeout_ms <= 0)
        o.timeout_ms = 60000;
    if (o.connect_timeout_ms <= 0)
        o.connect_timeout_ms = 10000;
    if (o.connect_timeout_ms > o.timeout_ms)
        o.connect_timeout_ms = o.timeout_ms;
    if (o.max_body == 0)
        o.max_body = NET_HTTP_MAX_BODY;
    memset(&x, 0, sizeof x);
    x.resp = out;
    x.cap = o.max_body;

    if (!url || (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)) {
        snprintf(out->error, sizeof out->error, "bad URL '%s': it must start with https:// or http://",
                 url ? url : "");
        return NET_ERR_ARG;
    }
    static const char *const fixed[] = {"Content-Type: application/json", "Accept: application/json",
                                        "Expect:", NULL};
    for (const char *const *h = fixed; *h; h++) {
        struct curl_slist *n = curl_slist_append(hl, *h);
        if (!n) {
            rc = NET_ERR_NOMEM;
            goto out;
        }
        hl = n;
    }
    for (const char *const *h = headers; h && *h; h++) {
        struct curl_slist *n = curl_slist_append(hl, *h);
        if (!n) {
            rc = NET_ERR_NOMEM;
            goto out;
        }
        hl = n;
    }

    curl_easy_reset(e);
    CURLcode cc = CURLE_OK;
#define SET(opt, val) do { if (cc == CURLE_OK) cc = curl_easy_setopt(e, opt, val); } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDS, body);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    SET(CURLOPT_HTTPHEADER, hl);
    SET(CURLOPT_USERAGENT, "kope");
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, &x);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, &x);
    SET(CURLOPT_ERRORBUFFER, cerr);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TIMEOUT_MS, o.timeout_ms);
    SET(CURLOPT_CONNECTTIMEOUT_MS, o.connect_timeout_ms);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o.max_body);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_CERTINFO, 1L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    /* A hung getaddrinfo() must not hold the caller past its timeout: let
     * libcurl detach a still-running resolver thread instead of joining it. */
    SET(CURLOPT_QUICK_EXIT, 1L);
    if (o.ca_file)
        SET(CURLOPT_CAINFO, o.ca_file);
    if (o.pinned_key)
        SET(CURLOPT_PINNEDPUBLICKEY, o.pinned_key);
#undef SET
    if (cc != CURLE_OK) {
        rc = map_curl(cc, &x, url, &o, cerr, out->error, sizeof out->error);
        if (cc == CURLE_UNKNOWN_OPTION || cc == CURLE_NOT_BUILT_IN)
            rc = NET_ERR_INTERNAL;
        goto out;
    }

    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        snprintf(out->error, sizeof out->error, "libcurl: could not start the request");
        goto out;
    }
    added = 1;
    int running = 1, cancelled = 0;
    while (running) {
        CURLMcode mc = curl_multi_perform(c->multi, &running);
        if (mc != CURLM_OK) {
            snprintf(out->error, sizeof out->error, "libcurl: %s", curl_multi_strerror(mc));
            goto out;
        }
        if (!running)
            break;
        if (o.cancel && o.cancel(o.cancel_arg)) {
            cancelled = 1;
            break;
        }
        mc = curl_multi_poll(c->multi, NULL, 0, HTTP_POLL_MS, NULL);
        if (mc != CURLM_OK) {
            snprintf(out->error, sizeof out->error, "libcurl: %s", curl_multi_strerror(mc));
            goto out;
        }
    }
    if (cancelled) {
        collect_info(e, out);
        rc = NET_ERR_CANCELLED;
        snprintf(out->error, sizeof out->error, "cancelled while waiting for %s", url);
        goto out;
    }
    cc = CURLE_FAILED_INIT;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left)))
        if (m->msg == CURLMSG_DONE && m->easy_handle == e)
            cc = m->data.result;
    collect_info(e, out);
    if (cc != CURLE_OK) {
        rc = map_curl(cc, &x, url, &o, cerr, out->error, sizeof out->error);
        goto out;
    }
    out->tls_verified = strncmp(url, "https://", 8) == 0;
    if (!out->body) {
        out->body = calloc(1, 1);
        if (!out->body) {
            rc = NET_ERR_NOMEM;
            goto out;
        }
    }
    rc = 0;
out:
    if (added)
        curl_multi_remove_handle(c->multi, e);
    /* Detach our header list before wiping it; curl must not see freed memory. */
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    slist_wipe_free(hl);
    if (rc == NET_ERR_NOMEM && !out->error[0])
        snprintf(out->error, sizeof out->error, "out of memory");
    if (rc) {
        free(out->body);
        out->body = NULL;
        out->body_len = 0;
    }
    return rc;
}

/*
 * tests/tls_server.c - a small HTTPS server on loopback, built on mbedTLS,
 * for the net/ tests (#included by tests/test_llm.c and test_cli_llm.c).
 *
 * ts_pki_make() writes a throw-away PKI into a directory: a test CA, a
 * server certificate it signs (CN=localhost, SAN DNS:localhost and
 * IP:127.0.0.1), and a second "wrong" CA with its own server certificate,
 * plus the sha256// pins of both server keys. ts_start() then serves on
 * 127.0.0.1:<ephemeral port> from a thread, replaying a declared script of
 * replies in order (the last one repeats) and recording each request it
 * received (method, path, headers, body, arrival time) for the test to check.
 *
 * Reply modes inject the faults a flaky link produces: a stall after half
 * the body, a TCP reset mid-body, a close with no answer, a huge body.
 * One connection is served at a time, with keep-alive, like one client.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/base64.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#define TS_MAX_REQ 32
#define TS_MAX_REQ_BYTES (1024 * 1024)

enum ts_mode {
    TS_NORMAL = 0, /* status, headers, body; keep-alive */
    TS_STALL,      /* headers + half the body, then silence until the client leaves */
    TS_RESET,      /* headers + half the body, then a TCP RST */
    TS_CLOSE,      /* read the request, close without a word */
    TS_BIG,        /* a valid chat reply whose content is body_len bytes of 'x' */
};

struct ts_reply {
    int status;
    const char *headers;  /* extra header lines, each ending "\r\n", or NULL */
    const char *body;     /* NULL = "" */
    enum ts_mode mode;
    size_t big_len;       /* TS_BIG: content bytes */
    int no_length;        /* no Content-Length: end the body by closing */
};

struct ts_request {
    char method[16];
    char path[256];
    char *headers;        /* the raw header block */
    char *body;
    size_t body_len;
    uint64_t t_ms;        /* monotonic arrival time */
};

struct ts_server {
    int port;
    int fd;
    pthread_t th;
    volatile int stop;
    const struct ts_reply *script;
    size_t n_script, next;
    struct ts_request req[TS_MAX_REQ];
    size_t n_req;
    int n_conn;
    pthread_mutex_t mu;
    mbedtls_ssl_config conf;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
};

static uint64_t ts_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------ PKI */

struct ts_pki {
    char ca[600], cert[600], key[600];            /* the good chain */
    char wrong_ca[600], wrong_cert[600], wrong_key[600];
    char pin[128];                                /* sha256// of the good server key */
    char wrong_pin[128];                          /* sha256// of the wrong server key */
    /* a chain whose server certificate expired (2020-2021) under a valid CA */
    char old_ca[600], old_cert[600], old_key[600], old_pin[128];
};

static int ts_write_file(const char *path, const unsigned char *buf)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs((const char *)buf, f);
    return fclose(f);
}

static int ts_pin_of(mbedtls_pk_context *k, char *out, size_t out_len)
{
    unsigned char der[1024], hash[32], b64[64];
    size_t olen = 0;
    int n = mbedtls_pk_write_pubkey_der(k, der, sizeof der);
    if (n <= 0 || mbedtls_sha256(der + sizeof der - n, (size_t)n, hash, 0) ||
        mbedtls_base64_encode(b64, sizeof b64, &olen, hash, 32))
        return -1;
    snprintf(out, out_len, "sha256//%.*s", (int)olen, b64);
    return 0;
}

static int ts_genkey(mbedtls_pk_context *k, mbedtls_ctr_drbg_context *drbg)
{
    mbedtls_pk_init(k);
    if (mbedtls_pk_setup(k, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)))
        return -1;
    return mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*k), mbedtls_ctr_drbg_random, drbg);
}

/* Issue a certificate for subj (signed by issuer_key / issuer_name) as PEM. */
static int ts_issue(mbedtls_pk_context *subj_key, const char *subj, mbedtls_pk_context *issuer_key,
                    const char *issuer, int is_ca, unsigned char serial, const char *not_after,
                    mbedtls_ctr_drbg_context *drbg, unsigned char *pem, size_t pem_len)
{
    mbedtls_x509write_cert w;
    mbedtls_x509write_crt_init(&w);
    unsigned char ser[1] = {serial};
    unsigned char ip[4] = {127, 0, 0, 1};
    mbedtls_x509_san_list san_ip = {.node = {.type = MBEDTLS_X509_SAN_IP_ADDRESS,
                                             .san.unstructured_name = {.len = 4, .p = ip}},
                                    .next = NULL};
    mbedtls_x509_san_list san_dns = {.node = {.type = MBEDTLS_X509_SAN_DNS_NAME,
                                              .san.unstructured_name = {.len = 9, .p = (unsigned char *)"localhost"}},
                                     .next = &san_ip};
    int rc = -1;
    mbedtls_x509write_crt_set_subject_key(&w, subj_key);
    mbedtls_x509write_crt_set_issuer_key(&w, issuer_key);
    mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
    mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
    if (mbedtls_x509write_crt_set_subject_name(&w, subj) || mbedtls_x509write_crt_set_issuer_name(&w, issuer) ||
        mbedtls_x509write_crt_set_serial_raw(&w, ser, 1) ||
        mbedtls_x509write_crt_set_validity(&w, "20200101000000", not_after) ||
        mbedtls_x509write_crt_set_basic_constraints(&w, is_ca, is_ca ? 0 : -1) ||
        mbedtls_x509write_crt_set_subject_key_identifier(&w) ||
        mbedtls_x509write_crt_set_authority_key_identifier(&w) ||
        mbedtls_x509write_crt_set_key_usage(&w, is_ca ? (MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN)
                                                      : MBEDTLS_X509_KU_DIGITAL_SIGNATURE))
        goto out;
    if (!is_ca && mbedtls_x509write_crt_set_subject_alternative_name(&w, &san_dns))
        goto out;
    rc = mbedtls_x509write_crt_pem(&w, pem, pem_len, mbedtls_ctr_drbg_random, drbg);
out:
    mbedtls_x509write_crt_free(&w);
    return rc;
}

/* One CA + one server under it, written as dir/<name>-ca.pem etc. */
static int ts_chain(const char *dir, const char *name, const char *server_not_after, mbedtls_ctr_drbg_context *drbg,
                    char *ca_path, char *cert_path, char *key_path, char *pin, size_t pin_len)
{
    mbedtls_pk_context cak, srvk;
    unsigned char pem[4096];
    char ca_name[128];
    int rc = -1;
    snprintf(ca_name, sizeof ca_name, "CN=kope %s test CA,O=kope tests", name);
    if (ts_genkey(&cak, drbg) || ts_genkey(&srvk, drbg))
        goto out;
    snprintf(ca_path, 600, "%s/%s-ca.pem", dir, name);
    snprintf(cert_path, 600, "%s/%s-server.pem", dir, name);
    snprintf(key_path, 600, "%s/%s-server.key", dir, name);
    if (ts_issue(&cak, ca_name, &cak, ca_name, 1, 1, "20491231235959", drbg, pem, sizeof pem) ||
        ts_write_file(ca_path, pem))
        goto out;
    if (ts_issue(&srvk, "CN=localhost,O=kope tests", &cak, ca_name, 0, 2, server_not_after, drbg, pem, sizeof pem) ||
        ts_write_file(cert_path, pem))
        goto out;
    if (mbedtls_pk_write_key_pem(&srvk, pem, sizeof pem) || ts_write_file(key_path, pem))
        goto out;
    rc = ts_pin_of(&srvk, pin, pin_len);
out:
    mbedtls_pk_free(&cak);
    mbedtls_pk_free(&srvk);
    return rc;
}

static int ts_pki_make(const char *dir, struct ts_pki *p)
{
    mbedtls_entropy_context ent;
    mbedtls_ctr_drbg_context drbg;
    int rc = -1;
    if (psa_crypto_init() != PSA_SUCCESS)
        return -1;
    mbedtls_entropy_init(&ent);
    mbedtls_ctr_drbg_init(&drbg);
    if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent, (const unsigned char *)"kope-ts", 7))
        goto out;
    if (ts_chain(dir, "good", "20491231235959", &drbg, p->ca, p->cert, p->key, p->pin, sizeof p->pin) ||
        ts_chain(dir, "wrong", "20491231235959", &drbg, p->wrong_ca, p->wrong_cert, p->wrong_key, p->wrong_pin,
                 sizeof p->wrong_pin) ||
        ts_chain(dir, "old", "20211231235959", &drbg, p->old_ca, p->old_cert, p->old_key, p->old_pin,
                 sizeof p->old_pin))
        goto out;
    rc = 0;
out:
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&ent);
    return rc;
}

/* ------------------------------------------------------------ serving */

static int ts_write_all(struct ts_server *s, mbedtls_ssl_context *ssl, const char *p, size_t n)
{
    while (n) {
        int w = mbedtls_ssl_write(ssl, (const unsigned char *)p, n > 16384 ? 16384 : n);
        if (w == MBEDTLS_ERR_SSL_WANT_READ || w == MBEDTLS_ERR_SSL_WANT_WRITE)
            continue;
        if (w <= 0 || s->stop)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Read one request; 1 = got one, 0 = client left / stop, -1 = error. */
static int ts_read_request(struct ts_server *s, mbedtls_ssl_context *ssl, struct ts_request *rq)
{
    char *buf = malloc(TS_MAX_REQ_BYTES + 1);
    size_t len = 0, need = 0, hdr_end = 0;
    if (!buf)
        return -1;
    for (;;) {
        if (hdr_end && len >= need)
            break;
        if (len >= TS_MAX_REQ_BYTES)
            goto fail;
        int r = mbedtls_ssl_read(ssl, (unsigned char *)buf + len, TS_MAX_REQ_BYTES - len);
        if (r == MBEDTLS_ERR_SSL_TIMEOUT || r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE ||
            r == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
            if (s->stop)
                goto fail;
            continue;
        }
        if (r <= 0)
            goto fail;
        len += (size_t)r;
        buf[len] = '\0';
        if (!hdr_end) {
            char *e = strstr(buf, "\r\n\r\n");
            if (e) {
                hdr_end = (size_t)(e - buf) + 4;
                const char *cl = strcasestr(buf, "\r\ncontent-length:");
                need = hdr_end + (cl && cl < e ? strtoul(cl + 17, NULL, 10) : 0);
                if (need > TS_MAX_REQ_BYTES)
                    goto fail;
            }
        }
    }
    memset(rq, 0, sizeof *rq);
    sscanf(buf, "%15s %255s", rq->method, rq->path);
    rq->headers = strndup(buf, hdr_end);
    rq->body = strndup(buf + hdr_end, need - hdr_end);
    rq->body_len = need - hdr_end;
    rq->t_ms = ts_now_ms();
    free(buf);
    return 1;
fail:
    free(buf);
    return 0;
}

static void ts_rst(int fd)
{
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

/* Send rep; returns 1 to keep the connection, 0 to close it. */
static int ts_send(struct ts_server *s, mbedtls_ssl_context *ssl, mbedtls_net_context *net, const struct ts_reply *rep)
{
    char head[2048];
    const char *body = rep->body ? rep->body : "";
    size_t blen = strlen(body);
    static const char pre[] = "{\"model\":\"big\",\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"";
    static const char post[] = "\"},\"finish_reason\":\"stop\"}]}";
    if (rep->mode == TS_CLOSE)
        return 0;
    if (rep->mode == TS_BIG)
        blen = sizeof pre - 1 + rep->big_len + sizeof post - 1;
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d Status\r\nContent-Type: application/json\r\n%s%s\r\n",
                     rep->status, rep->headers ? rep->headers : "", rep->no_length ? "Connection: close\r\n" : "");
    if (!rep->no_length)
        n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d Status\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n",
                     rep->status, blen, rep->headers ? rep->headers : "");
    if (ts_write_all(s, ssl, head, (size_t)n))
        return 0;
    switch (rep->mode) {
    case TS_STALL: {
        if (ts_write_all(s, ssl, body, blen / 2))
            return 0;
        unsigned char b[256];
        for (;;) { /* silence until the client gives up */
            int r = mbedtls_ssl_read(ssl, b, sizeof b);
            if (r == MBEDTLS_ERR_SSL_TIMEOUT && !s->stop)
                continue;
            return 0;
        }
    }
    case TS_RESET:
        ts_write_all(s, ssl, body, blen / 2);
        ts_rst(net->fd);
        return 0;
    case TS_BIG: {
        static char chunk[65536];
        memset(chunk, 'x', sizeof chunk);
        if (ts_write_all(s, ssl, pre, sizeof pre - 1))
            return 0;
        for (size_t left = rep->big_len; left;) {
            size_t k = left < sizeof chunk ? left : sizeof chunk;
            if (ts_write_all(s, ssl, chunk, k))
                return 0;
            left -= k;
        }
        ts_write_all(s, ssl, post, sizeof post - 1);
        return !rep->no_length;
    }
    default:
        if (ts_write_all(s, ssl, body, blen))
            return 0;
        return !rep->no_length;
    }
}

static void ts_serve_conn(struct ts_server *s, int fd)
{
    mbedtls_ssl_context ssl;
    mbedtls_net_context net = {.fd = fd};
    mbedtls_ssl_init(&ssl);
    if (mbedtls_ssl_setup(&ssl, &s->conf))
        goto out;
    mbedtls_ssl_set_bio(&ssl, &net, mbedtls_net_send, NULL, mbedtls_net_recv_timeout);
    int r;
    uint64_t t0 = ts_now_ms();
    while ((r = mbedtls_ssl_handshake(&ssl)) != 0) {
        if ((r != MBEDTLS_ERR_SSL_WANT_READ && r != MBEDTLS_ERR_SSL_WANT_WRITE && r != MBEDTLS_ERR_SSL_TIMEOUT) ||
            s->stop || ts_now_ms() - t0 > (uint64_t)test_ms(5000)) /* tests/testutil.h */
            goto out;
    }
    for (;;) {
        struct ts_request rq;
        if (ts_read_request(s, &ssl, &rq) != 1)
            break;
        pthread_mutex_lock(&s->mu);
        const struct ts_reply *rep = s->n_script ? &s->script[s->next < s->n_script ? s->next : s->n_script - 1] : NULL;
        s->next++;
        if (s->n_req < TS_MAX_REQ) {
            s->req[s->n_req++] = rq;
        } else {
            free(rq.headers);
            free(rq.body);
        }
        pthread_mutex_unlock(&s->mu);
        if (!rep || !ts_send(s, &ssl, &net, rep))
            break;
    }
    mbedtls_ssl_close_notify(&ssl);
out:
    mbedtls_ssl_free(&ssl);
    close(fd);
}

static void *ts_main(void *arg)
{
    struct ts_server *s = arg;
    while (!s->stop) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            continue;
        int one = 1; /* no Nagle: latency figures must be kope's, not the test server's */
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s->n_conn++;
        ts_serve_conn(s, c);
    }
    return NULL;
}

/* Start serving cert/key with the script (which must outlive the server).
 * Returns 0 and sets s->port, or -1. */
static int ts_start(struct ts_server *s, const char *cert, const char *key, const struct ts_reply *script, size_t n)
{
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the test */
    memset(s, 0, sizeof *s);
    s->script = script;
    s->n_script = n;
    pthread_mutex_init(&s->mu, NULL);
    mbedtls_ssl_config_init(&s->conf);
    mbedtls_x509_crt_init(&s->cert);
    mbedtls_pk_init(&s->key);
    mbedtls_entropy_init(&s->entropy);
    mbedtls_ctr_drbg_init(&s->drbg);
    if (psa_crypto_init() != PSA_SUCCESS ||
        mbedtls_ctr_drbg_seed(&s->drbg, mbedtls_entropy_func, &s->entropy, (const unsigned char *)"ts", 2) ||
        mbedtls_x509_crt_parse_file(&s->cert, cert) ||
        mbedtls_pk_parse_keyfile(&s->key, key, NULL, mbedtls_ctr_drbg_random, &s->drbg) ||
        mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                    MBEDTLS_SSL_PRESET_DEFAULT) ||
        mbedtls_ssl_conf_own_cert(&s->conf, &s->cert, &s->key))
        return -1;
    mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &s->drbg);
    mbedtls_ssl_conf_read_timeout(&s->conf, 50);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int one = 1;
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof a) || listen(s->fd, 8) ||
        getsockname(s->fd, (struct sockaddr *)&a, &al))
        return -1;
    s->port = ntohs(a.sin_port);
    return pthread_create(&s->th, NULL, ts_main, s) ? -1 : 0;
}

static void ts_stop(struct ts_server *s)
{
    s->stop = 1;
    pthread_join(s->th, NULL);
    close(s->fd);
    for (size_t i = 0; i < s->n_req; i++) {
        free(s->req[i].headers);
        free(s->req[i].body);
    }
    mbedtls_ssl_config_free(&s->conf);
    mbedtls_x509_crt_free(&s->cert);
    mbedtls_pk_free(&s->key);
    mbedtls_ctr_drbg_free(&s->drbg);
    mbedtls_entropy_free(&s->entropy);
    pthread_mutex_destroy(&s->mu);
}

/* The value of header name in rq (static buffer), or NULL. */
/* The environment kope reads its LLM endpoint from (docs/LLM.md), for a
 * server on port whose chain's CA is ca: no retries, a 5 s timeout, no
 * proxy. */
static void ts_llm_env(int port, const char *ca) __attribute__((unused));
static void ts_llm_env(int port, const char *ca)
{
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/v1", port);
    setenv("KOPE_LLM_BASE_URL", url, 1);
    setenv("KOPE_LLM_MODEL", "test-model", 1);
    setenv("KOPE_LLM_CA_FILE", ca, 1);
    setenv("KOPE_LLM_API_KEY", "sk-test", 1);
    setenv("KOPE_LLM_RETRIES", "0", 1);
    setenv("KOPE_LLM_TIMEOUT_MS", "5000", 1);
    unsetenv("https_proxy");
    unsetenv("HTTPS_PROXY");
}

static const char *ts_header(const struct ts_request *rq, const char *name)
{
    static char v[512];
    char key[128];
    snprintf(key, sizeof key, "\r\n%s:", name);
    const char *p = strcasestr(rq->headers, key);
    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "\r\n");
    snprintf(v, sizeof v, "%.*s", (int)n, p);
    return v;
}

/* A closed loopback port: bind, read the port, close. */
static int ts_closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &al))
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

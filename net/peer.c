/*
 * net/peer.c - mutual-TLS peer connections and framed I/O. See peer.h.
 *
 * The socket is mbedTLS's net_sockets context, but TLS reads and writes go
 * through our own callbacks (peer_recv, peer_send): each polls for at most
 * what is left of the tightest limit (idle, handshake, session, rate; see
 * wait_budget), so no sequence of single bytes can stretch a connection
 * past its limits, in either direction, before or after the handshake.
 * One ctr_drbg per conf (mbedTLS locks it internally).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#include "net/crypto.h"
#include "net/neterr.h"
#include "net/peer.h"
#include "net/sync_frame.h"

struct net_peer_conf {
    int is_server;
    int timeout_ms;
    struct net_peer_limits lim; /* resolved: > 0 on, 0 off */
    mbedtls_ssl_config ssl;
    mbedtls_x509_crt ca, cert;
    mbedtls_pk_context key;
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
};

enum peer_limit { LIM_NONE, LIM_IDLE, LIM_HANDSHAKE, LIM_SESSION, LIM_RATE, LIM_EVICTED, LIM_REFUSED };

struct net_peer {
    struct net_peer_conf *conf;
    mbedtls_net_context net;
    mbedtls_ssl_context ssl;
    int broken;               /* a read/write failed: no close_notify */
    int rx_broken;            /* the incoming stream is unusable; writing still works */
    uint64_t t_start;         /* TCP accepted / connected (ms, monotonic) */
    int hs_done;
    int final;                /* net_peer_final: one last frame */
    volatile int evicted;     /* net_peer_evict, from another thread */
    enum peer_limit limit;    /* the limit that ended the last wait */
    uint64_t waited_ms;       /* time spent waiting on the socket (rate) */
    int64_t credit_us;        /* rate: waiting still paid for (wait_budget) */
    uint64_t credit_bytes, credit_waited; /* bytes and waiting already counted in it */
    int credit_init;
    uint8_t wbuf[NET_PEER_WBUF];
    size_t wlen;
    uint64_t sent, received;
    uint64_t cut_after;       /* fault injection: 0 = off */
};

struct net_peer_listener {
    mbedtls_net_context net;
};

static void say(char *err, size_t cap, const char *what, int mrc)
{
    char m[160];
    mbedtls_strerror(mrc, m, sizeof m);
    if (err && cap)
        snprintf(err, cap, "%s: %s (-0x%04x)", what, m, (unsigned)-mrc);
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------ conf */

int net_peer_conf_new(int is_server, const char *ca_pem, const char *cert_pem, const char *key_pem,
                      int timeout_ms, struct net_peer_conf **out, char *err, size_t err_cap)
{
    int rc = NET_ERR_TLS, m;
    struct net_peer_conf *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return NET_ERR_NOMEM;
    c->is_server = is_server;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    net_peer_conf_limits(c, NULL);
    mbedtls_ssl_config_init(&c->ssl);
    mbedtls_x509_crt_init(&c->ca);
    mbedtls_x509_crt_init(&c->cert);
    mbedtls_pk_init(&c->key);
    mbedtls_entropy_init(&c->entropy);
    mbedtls_ctr_drbg_init(&c->drbg);
    if (psa_crypto_init() != PSA_SUCCESS) {
        snprintf(err, err_cap, "PSA crypto init failed");
        goto out;
    }
    static const char pers[] = "kope-peer";
    if ((m = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
                                   (const unsigned char *)pers, sizeof pers - 1))) {
        say(err, err_cap, "random generator", m);
        goto out;
    }
    if ((m = mbedtls_x509_crt_parse(&c->ca, (const unsigned char *)ca_pem, strlen(ca_pem) + 1))) {
        say(err, err_cap, "fleet CA certificate(s) do not parse", m);
        rc = NET_ERR_CA_FILE;
        goto out;
    }
    if ((m = mbedtls_x509_crt_parse(&c->cert, (const unsigned char *)cert_pem, strlen(cert_pem) + 1))) {
        say(err, err_cap, "device certificate does not parse", m);
        rc = NET_ERR_CERT;
        goto out;
    }
    if ((m = mbedtls_pk_parse_key(&c->key, (const unsigned char *)key_pem, strlen(key_pem) + 1, NULL, 0,
                                  mbedtls_ctr_drbg_random, &c->drbg))) {
        say(err, err_cap, "device key does not parse", m);
        rc = NET_ERR_CRYPTO_KEY;
        goto out;
    }
    if ((m = mbedtls_ssl_config_defaults(&c->ssl, is_server ? MBEDTLS_SSL_IS_SERVER : MBEDTLS_SSL_IS_CLIENT,
                                         MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT))) {
        say(err, err_cap, "TLS defaults", m);
        goto out;
    }
    mbedtls_ssl_conf_min_tls_version(&c->ssl, MBEDTLS_SSL_VERSION_TLS1_2);
    mbedtls_ssl_conf_max_tls_version(&c->ssl, MBEDTLS_SSL_VERSION_TLS1_3);
    mbedtls_ssl_conf_authmode(&c->ssl, MBEDTLS_SSL_VERIFY_REQUIRED); /* mutual: both sides */
    mbedtls_ssl_conf_ca_chain(&c->ssl, &c->ca, NULL);
    mbedtls_ssl_conf_rng(&c->ssl, mbedtls_ctr_drbg_random, &c->drbg);
    mbedtls_ssl_conf_read_timeout(&c->ssl, (uint32_t)c->timeout_ms);
    if ((m = mbedtls_ssl_conf_own_cert(&c->ssl, &c->cert, &c->key))) {
        say(err, err_cap, "device certificate and key", m);
        goto out;
    }
    *out = c;
    c = NULL;
    rc = 0;
out:
    net_peer_conf_free(c);
    return rc;
}

void net_peer_conf_free(struct net_peer_conf *c)
{
    if (!c)
        return;
    mbedtls_ssl_config_free(&c->ssl);
    mbedtls_x509_crt_free(&c->ca);
    mbedtls_x509_crt_free(&c->cert);
    mbedtls_pk_free(&c->key);
    mbedtls_ctr_drbg_free(&c->drbg);
    mbedtls_entropy_free(&c->entropy);
    free(c);
}

static int lim_or(int v, int def)
{
    return v < 0 ? 0 : v == 0 ? def : v;
}

void net_peer_conf_limits(struct net_peer_conf *c, const struct net_peer_limits *l)
{
    struct net_peer_limits z = {0, 0, 0, 0};
    if (!l)
        l = &z;
    c->lim.handshake_ms = lim_or(l->handshake_ms, NET_PEER_HANDSHAKE_MS);
    c->lim.session_ms = lim_or(l->session_ms, NET_PEER_SESSION_MS);
    c->lim.min_rate = lim_or(l->min_rate, NET_PEER_MIN_RATE);
    c->lim.rate_grace_ms = lim_or(l->rate_grace_ms, NET_PEER_RATE_GRACE_MS);
}

int net_peer_conf_handshake_ms(const struct net_peer_conf *c)
{
    return c->lim.handshake_ms;
}

/* ------------------------------------------------------------------ limits */

/* How long the next socket wait may last, and which limit ends it. The
 * rate limit: after rate_grace_ms of waiting, every further second of
 * waiting must be paid for by min_rate bytes moved (in or out). Paid time
 * is a bucket that holds at most NET_PEER_RATE_BANK grace periods, so a
 * burst at the start cannot buy a trickle for the rest of the session (a
 * 12 MiB line would otherwise pay for three hours at 1 KiB/s). */
static int64_t wait_budget(struct net_peer *p, enum peer_limit *why)
{
    const struct net_peer_limits *l = &p->conf->lim;
    uint64_t now = now_ms();
    int64_t w = p->conf->timeout_ms, left;
    *why = LIM_IDLE;
    if (p->final)
        return w < 1000 ? w : 1000;
    if (!p->hs_done && l->handshake_ms && (left = (int64_t)(p->t_start + (uint64_t)l->handshake_ms) - (int64_t)now) < w) {
        w = left;
        *why = LIM_HANDSHAKE;
    }
    if (l->session_ms && (left = (int64_t)(p->t_start + (uint64_t)l->session_ms) - (int64_t)now) < w) {
        w = left;
        *why = LIM_SESSION;
    }
    if (l->min_rate) {
        /* plaintext bytes: TLS records of one byte each cost 23 on the
         * wire, which would let a trickler look fast */
        int64_t cap = (int64_t)l->rate_grace_ms * NET_PEER_RATE_BANK * 1000;
        uint64_t moved = p->received + p->sent;
        if (!p->credit_init) {
            p->credit_us = (int64_t)l->rate_grace_ms * 1000;
            p->credit_init = 1;
        }
        p->credit_us += (int64_t)((moved - p->credit_bytes) * 1000000u / (uint64_t)l->min_rate);
        p->credit_us -= (int64_t)(p->waited_ms - p->credit_waited) * 1000;
        if (p->credit_us > cap)
            p->credit_us = cap;
        p->credit_bytes = moved;
        p->credit_waited = p->waited_ms;
        if ((left = p->credit_us / 1000) < w) {
            w = left;
            *why = LIM_RATE;
        }
    }
    return w < 0 ? 0 : w;
}

/* Wait for the socket to be readable (POLLIN) or writable (POLLOUT) within
 * the budget. 0 ready, else an mbedTLS error with p->limit set. */
static int peer_wait(struct net_peer *p, short events)
{
    p->limit = LIM_NONE;
    for (;;) {
        enum peer_limit why;
        if (p->evicted) {
            p->limit = LIM_EVICTED;
            return MBEDTLS_ERR_SSL_TIMEOUT;
        }
        int64_t w = wait_budget(p, &why);
        struct pollfd pfd = {p->net.fd, events, 0};
        uint64_t t0 = now_ms();
        int r = w > 0 ? poll(&pfd, 1, (int)w) : 0;
        p->waited_ms += now_ms() - t0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return events == POLLIN ? MBEDTLS_ERR_NET_RECV_FAILED : MBEDTLS_ERR_NET_SEND_FAILED;
        if (p->evicted) {
            p->limit = LIM_EVICTED;
            return MBEDTLS_ERR_SSL_TIMEOUT;
        }
        if (r == 0) {
            p->limit = why;
            return MBEDTLS_ERR_SSL_TIMEOUT;
        }
        return 0;
    }
}

/* mbedTLS bio callbacks: non-blocking socket calls behind peer_wait. */
static int peer_recv(void *ctx, unsigned char *buf, size_t len, uint32_t timeout)
{
    struct net_peer *p = ctx;
    (void)timeout; /* the conf's idle timeout, folded into wait_budget */
    for (;;) {
        int w = peer_wait(p, POLLIN);
        if (w)
            return w;
        ssize_t n = recv(p->net.fd, buf, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n < 0)
            return errno == ECONNRESET || errno == EPIPE ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
        return (int)n; /* 0: the peer closed TCP */
    }
}

static int peer_send(void *ctx, const unsigned char *buf, size_t len)
{
    struct net_peer *p = ctx;
    for (;;) {
        int w = peer_wait(p, POLLOUT);
        if (w)
            return w == MBEDTLS_ERR_SSL_TIMEOUT ? MBEDTLS_ERR_NET_SEND_FAILED : w;
        ssize_t n = send(p->net.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n < 0)
            return errno == ECONNRESET || errno == EPIPE ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_SEND_FAILED;
        return (int)n;
    }
}

void net_peer_limit_text(const struct net_peer *p, char *buf, size_t cap)
{
    const struct net_peer_limits *l = &p->conf->lim;
    switch (p->limit) {
    case LIM_IDLE: snprintf(buf, cap, "idle for %d ms", p->conf->timeout_ms); break;
    case LIM_HANDSHAKE: snprintf(buf, cap, "TLS handshake not done within %d ms", l->handshake_ms); break;
    case LIM_SESSION: snprintf(buf, cap, "session deadline (%d ms) passed", l->session_ms); break;
    case LIM_RATE:
        snprintf(buf, cap, "below the minimum rate (%llu bytes in %llu ms of waiting; %d bytes/s wanted)",
                 (unsigned long long)(p->received + p->sent), (unsigned long long)p->waited_ms, l->min_rate);
        break;
    case LIM_EVICTED: snprintf(buf, cap, "evicted to make room (session limits)"); break;
    case LIM_REFUSED:
        snprintf(buf, cap, "the peer refused our certificate (it closed right after the TLS handshake): is this "
                           "device enrolled in a fleet the peer trusts? On the peer: `kope fleet trust OUR-CA.crt`");
        break;
    default: snprintf(buf, cap, "%s", ""); break;
    }
}

void net_peer_evict(struct net_peer *p)
{
    p->evicted = 1;
    shutdown(p->net.fd, SHUT_RDWR); /* wakes a poll in the owner's thread */
}

void net_peer_final(struct net_peer *p)
{
    p->final = 1;
}

/* ------------------------------------------------------------------ connections */

static int peer_new(struct net_peer_conf *c, struct net_peer **out)
{
    struct net_peer *p = calloc(1, sizeof *p);
    if (!p)
        return NET_ERR_NOMEM;
    p->conf = c;
    p->t_start = now_ms();
    mbedtls_net_init(&p->net);
    mbedtls_ssl_init(&p->ssl);
    *out = p;
    return 0;
}

static int peer_setup(struct net_peer *p, char *err, size_t err_cap)
{
    int m;
    if ((m = mbedtls_ssl_setup(&p->ssl, &p->conf->ssl))) {
        say(err, err_cap, "TLS setup", m);
        return NET_ERR_TLS;
    }
    if (!p->conf->is_server && (m = mbedtls_ssl_set_hostname(&p->ssl, NULL))) {
        /* explicit: peers are checked by fleet CA, not by host name (peer.h) */
        say(err, err_cap, "TLS setup", m);
        return NET_ERR_TLS;
    }
    mbedtls_ssl_set_bio(&p->ssl, p, peer_send, NULL, peer_recv);
    return 0;
}

static int map_tls_err(struct net_peer *p, int m)
{
    if ((m == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE || m == MBEDTLS_ERR_SSL_INVALID_MAC ||
         m == MBEDTLS_ERR_NET_CONN_RESET || m == MBEDTLS_ERR_NET_RECV_FAILED) &&
        !p->conf->is_server && p->hs_done && p->received == 0) {
        /* TLS 1.3: a client ends its handshake before the server has
         * checked its certificate; the server's refusal is an alert at the
         * first read after it, sealed with the handshake keys the client
         * has already dropped (so mbedTLS reports a bad MAC); when the
         * server's close overtakes the alert (seen under qemu) the client
         * sees a reset before its first byte instead */
        p->limit = LIM_REFUSED;
        return NET_ERR_PEER_CERT;
    }
    if (p->limit != LIM_NONE && (m == MBEDTLS_ERR_SSL_TIMEOUT || m == MBEDTLS_ERR_NET_SEND_FAILED))
        return p->limit == LIM_IDLE ? NET_ERR_TIMEOUT : p->limit == LIM_RATE ? NET_ERR_SLOW
               : p->limit == LIM_EVICTED ? NET_ERR_BUSY : NET_ERR_DEADLINE;
    switch (m) {
    case MBEDTLS_ERR_SSL_CONN_EOF: return NET_ERR_CLOSED;
    case MBEDTLS_ERR_SSL_TIMEOUT: return NET_ERR_TIMEOUT;
    case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY: return NET_ERR_CLOSED;
    case MBEDTLS_ERR_NET_CONN_RESET:
    case MBEDTLS_ERR_NET_RECV_FAILED:
    case MBEDTLS_ERR_NET_SEND_FAILED: return NET_ERR_RESET;
    case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED:
    case MBEDTLS_ERR_SSL_BAD_CERTIFICATE: return NET_ERR_PEER_CERT;
    case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE: return NET_ERR_TLS;
    default: return m == 0 ? NET_ERR_CLOSED : NET_ERR_TLS;
    }
}

int net_peer_handshake(struct net_peer *p, char *err, size_t err_cap)
{
    int m;
    uint64_t t0 = now_ms();
    while ((m = mbedtls_ssl_handshake(&p->ssl)) != 0) {
        if (m == MBEDTLS_ERR_SSL_WANT_READ || m == MBEDTLS_ERR_SSL_WANT_WRITE) {
            if (now_ms() - t0 > (uint64_t)p->conf->timeout_ms) {
                m = MBEDTLS_ERR_SSL_TIMEOUT;
                break;
            }
            continue;
        }
        break;
    }
    if (m == 0) {
        p->hs_done = 1;
        return 0;
    }
    p->broken = 1;
    if (p->limit != LIM_NONE) {
        char why[160];
        net_peer_limit_text(p, why, sizeof why);
        snprintf(err, err_cap, "TLS handshake: %s", why);
        return map_tls_err(p, m);
    }
    uint32_t flags = mbedtls_ssl_get_verify_result(&p->ssl);
    if (flags && flags != (uint32_t)-1) {
        char v[256];
        mbedtls_x509_crt_verify_info(v, sizeof v, "", flags);
        v[strcspn(v, "\n")] = '\0';
        snprintf(err, err_cap, "peer certificate refused: %s", v);
        return NET_ERR_PEER_CERT;
    }
    int rc = map_tls_err(p, m);
    if (!p->conf->is_server && (m == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE || rc == NET_ERR_RESET || rc == NET_ERR_CLOSED)) {
        snprintf(err, err_cap, "the peer %s the TLS handshake: it most likely refused our certificate. Is this device "
                               "enrolled in a fleet the peer trusts? On the peer: `kope fleet trust OUR-FLEET-CA.crt`",
                 m == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE ? "refused" : "hung up during");
        return m == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE ? NET_ERR_PEER_CERT : rc;
    }
    say(err, err_cap, "TLS handshake", m);
    return rc;
}

int net_peer_listen(const char *host, const char *port, struct net_peer_listener **out,
                    int *bound_port, char *err, size_t err_cap)
{
    struct net_peer_listener *l = calloc(1, sizeof *l);
    int m;
    *out = NULL;
    if (!l)
        return NET_ERR_NOMEM;
    mbedtls_net_init(&l->net);
    errno = 0;
    if ((m = mbedtls_net_bind(&l->net, host && *host ? host : NULL, port, MBEDTLS_NET_PROTO_TCP))) {
        int e = errno;
        if (m == MBEDTLS_ERR_NET_BIND_FAILED && e == EADDRINUSE)
            snprintf(err, err_cap, "address %s:%s is already in use (another `kope serve`?): pick another port "
                                   "with --listen, or stop the other server", host && *host ? host : "*", port);
        else if (m == MBEDTLS_ERR_NET_BIND_FAILED && e == EACCES)
            snprintf(err, err_cap, "not allowed to listen on port %s (ports below 1024 need privileges)", port);
        else if (m == MBEDTLS_ERR_NET_UNKNOWN_HOST)
            snprintf(err, err_cap, "cannot listen on %s: no such local address", host ? host : "");
        else
            say(err, err_cap, "listen", m);
        free(l);
        return NET_ERR_LISTEN;
    }
    if (bound_port) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        *bound_port = 0;
        if (getsockname(l->net.fd, (struct sockaddr *)&ss, &sl) == 0)
            *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                          : ((struct sockaddr_in *)&ss)->sin_port);
    }
    *out = l;
    return 0;
}

void net_peer_listener_close(struct net_peer_listener *l)
{
    if (!l)
        return;
    mbedtls_net_free(&l->net);
    free(l);
}

int net_peer_listener_wait(struct net_peer_listener *l, int wait_ms)
{
    struct pollfd pfd = {l->net.fd, POLLIN, 0};
    int pr = poll(&pfd, 1, wait_ms);
    return pr > 0 ? 0 : pr == 0 || errno == EINTR ? NET_ERR_TIMEOUT : NET_ERR_LISTEN;
}

int net_peer_accept(struct net_peer_listener *l, struct net_peer_conf *c, int wait_ms,
                    struct net_peer **out, char *addr, size_t addr_cap)
{
    struct net_peer *p = NULL;
    unsigned char ip[16];
    size_t ip_len = 0;
    int rc;
    struct pollfd pfd = {l->net.fd, POLLIN, 0};
    *out = NULL;
    if (addr && addr_cap)
        addr[0] = '\0';
    int pr = poll(&pfd, 1, wait_ms);
    if (pr == 0 || (pr < 0 && errno == EINTR))
        return NET_ERR_TIMEOUT;
    if (pr < 0)
        return NET_ERR_LISTEN;
    if ((rc = peer_new(c, &p)))
        return rc;
    if (mbedtls_net_accept(&l->net, &p->net, ip, sizeof ip, &ip_len)) {
        net_peer_close(p);
        return NET_ERR_CONNECT;
    }
    if (addr && ip_len == 4)
        snprintf(addr, addr_cap, "%u.%u.%u.%u", ip[0], ip[1], ip[2], ip[3]);
    else if (addr && (ip_len != 16 || !inet_ntop(AF_INET6, ip, addr, (socklen_t)addr_cap)))
        snprintf(addr, addr_cap, "(unknown address)");
    if ((rc = peer_setup(p, NULL, 0))) {
        net_peer_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* Connect one address without blocking past deadline (ms, monotonic): a
 * black-holed address answers no SYN, and the kernel would retry for about
 * two minutes. 0 with the connected (blocking) socket in *fd, or errno
 * (ETIMEDOUT when the deadline passed). */
static int tcp_connect_one(const struct addrinfo *a, uint64_t deadline, int *fd)
{
    int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol), e = 0;
    if (s < 0)
        return errno;
    int fl = fcntl(s, F_GETFL);
    if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) < 0) {
        e = errno;
        goto fail;
    }
    if (connect(s, a->ai_addr, a->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            e = errno;
            goto fail;
        }
        for (;;) {
            uint64_t now = now_ms();
            struct pollfd pf = {s, POLLOUT, 0};
            if (now >= deadline) {
                e = ETIMEDOUT;
                goto fail;
            }
            int r = poll(&pf, 1, (int)(deadline - now));
            if (r > 0)
                break;
            if (r < 0 && errno != EINTR) {
                e = errno;
                goto fail;
            }
        }
        socklen_t len = sizeof e;
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
            e = errno;
        if (e)
            goto fail;
    }
    if (fcntl(s, F_SETFL, fl) < 0) { /* as mbedTLS's own connect leaves it */
        e = errno;
        goto fail;
    }
    *fd = s;
    return 0;
fail:
    close(s);
    return e ? e : EIO;
}

/* TCP to host:port within the handshake deadline (it runs from t_start;
 * without one, the idle timeout), each address in turn. */
static int tcp_connect(struct net_peer *p, const char *host, const char *port, char *err, size_t err_cap)
{
    struct addrinfo hints, *res = NULL;
    const struct net_peer_limits *l = &p->conf->lim;
    int ms = l->handshake_ms ? l->handshake_ms : p->conf->timeout_ms;
    uint64_t deadline = p->t_start + (uint64_t)(ms > 0 ? ms : 30000);
    int e = 0, fd = -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) {
        snprintf(err, err_cap, "host name '%s' did not resolve (check the spelling, or give an address)", host);
        return NET_ERR_DNS;
    }
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        int r = tcp_connect_one(a, deadline, &fd);
        if (!r)
            break;
        if (!e || e == ETIMEDOUT) /* the most telling cause: a refusal beats a timeout */
            e = r;
        if (now_ms() >= deadline)
            break;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        p->net.fd = fd;
        return 0;
    }
    if (e == ETIMEDOUT) {
        snprintf(err, err_cap, "%s:%s did not answer the TCP connect within %d ms (a wrong address, or a "
                 "firewall dropping packets)", host, port, ms);
        return NET_ERR_DEADLINE;
    }
    if (e == ECONNREFUSED)
        snprintf(err, err_cap, "nothing listening at %s:%s (is `kope serve` running there, on that port?)", host, port);
    else if (e == EHOSTUNREACH || e == ENETUNREACH)
        snprintf(err, err_cap, "%s:%s is unreachable (%s): check the address and the network", host, port, strerror(e));
    else
        snprintf(err, err_cap, "connect to %s:%s failed: %s", host, port, strerror(e));
    return NET_ERR_CONNECT;
}

int net_peer_connect(struct net_peer_conf *c, const char *host, const char *port,
                     struct net_peer **out, char *err, size_t err_cap)
{
    struct net_peer *p = NULL;
    int rc;
    *out = NULL;
    if ((rc = peer_new(c, &p)))
        return rc;
    if ((rc = tcp_connect(p, host, port, err, err_cap)))
        goto out;
    if ((rc = peer_setup(p, err, err_cap)) || (rc = net_peer_handshake(p, err, err_cap)))
        goto out;
    *out = p;
    p = NULL;
out:
    net_peer_close(p);
    return rc;
}

void net_peer_name(struct net_peer *p, char *buf, size_t cap)
{
    const mbedtls_x509_crt *c = mbedtls_ssl_get_peer_cert(&p->ssl);
    snprintf(buf, cap, "?");
    if (!c)
        return;
    for (const mbedtls_x509_name *n = &c->subject; n; n = n->next)
        if (MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0) {
            net_text_clean(buf, cap, (const char *)n->val.p, n->val.len);
            return;
        }
}

int net_peer_cert_id(struct net_peer *p, uint8_t id[32])
{
    const mbedtls_x509_crt *c = mbedtls_ssl_get_peer_cert(&p->ssl);
    if (!c)
        return -1;
    net_sha256(c->raw.p, c->raw.len, id);
    return 0;
}

int net_peer_origin(struct net_peer *p, uint8_t origin[32])
{
    const mbedtls_x509_crt *c = mbedtls_ssl_get_peer_cert(&p->ssl);
    unsigned char tmp[NET_PUBKEY_MAX];
    if (!c)
        return -1;
    int n = mbedtls_pk_write_pubkey_der(&c->pk, tmp, sizeof tmp);
    if (n <= 0)
        return -1;
    net_sha256(tmp + sizeof tmp - n, (size_t)n, origin);
    return 0;
}

const char *net_peer_tls_version(struct net_peer *p)
{
    return mbedtls_ssl_get_version(&p->ssl);
}

void net_peer_close(struct net_peer *p)
{
    if (!p)
        return;
    if (!p->broken) {
        net_peer_flush(p);
        mbedtls_ssl_close_notify(&p->ssl);
    }
    mbedtls_ssl_free(&p->ssl);
    mbedtls_net_free(&p->net);
    free(p);
}

void net_peer_abort(struct net_peer *p)
{
    if (!p)
        return;
    p->broken = 1;
    struct linger lg = {1, 0}; /* RST, as a cut link looks to the other side */
    setsockopt(p->net.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    net_peer_close(p);
}

void net_peer_bytes(const struct net_peer *p, uint64_t *sent, uint64_t *received)
{
    *sent = p->sent;
    *received = p->received;
}

/* ------------------------------------------------------------------ frames */

static int write_all(struct net_peer *p, const uint8_t *b, size_t n)
{
    uint64_t t0 = now_ms();
    while (n) {
        int w = mbedtls_ssl_write(&p->ssl, b, n);
        if (w == MBEDTLS_ERR_SSL_WANT_WRITE || w == MBEDTLS_ERR_SSL_WANT_READ ||
            w == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
            if (now_ms() - t0 > (uint64_t)p->conf->timeout_ms) {
                p->broken = 1;
                return NET_ERR_TIMEOUT;
            }
            continue;
        }
        if (w <= 0) {
            p->broken = 1;
            return map_tls_err(p, w);
        }
        t0 = now_ms();
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int net_peer_flush(struct net_peer *p)
{
    if (p->broken)
        return NET_ERR_RESET;
    int rc = write_all(p, p->wbuf, p->wlen);
    p->wlen = 0;
    return rc;
}

int net_peer_write_raw(struct net_peer *p, const void *buf, size_t len)
{
    const uint8_t *b = buf;
    int rc;
    if (p->broken)
        return NET_ERR_RESET;
    p->sent += len;
    if (len >= NET_PEER_WBUF) {
        if ((rc = net_peer_flush(p)))
            return rc;
        return write_all(p, b, len);
    }
    if (p->wlen + len > NET_PEER_WBUF && (rc = net_peer_flush(p)))
        return rc;
    memcpy(p->wbuf + p->wlen, b, len);
    p->wlen += len;
    return 0;
}

int net_peer_frame_write(struct net_peer *p, int type, const void *payload, size_t len)
{
    uint8_t hdr[NET_SYNC_HDR];
    int rc;
    if (len > net_sync_type_max(type))
        return NET_ERR_FRAME_BIG;
    if ((rc = net_sync_payload_check(type, payload, len)))
        return rc;
    net_sync_hdr_write(hdr, type, len);
    if ((rc = net_peer_write_raw(p, hdr, sizeof hdr)))
        return rc;
    return net_peer_write_raw(p, payload, len);
}

void net_peer_fault_cut(struct net_peer *p, uint64_t after_bytes)
{
    p->cut_after = after_bytes;
}

static int read_exact(struct net_peer *p, uint8_t *b, size_t n)
{
    while (n) {
        if (p->cut_after && p->received > p->cut_after) {
            p->broken = 1;
            return NET_ERR_RESET;
        }
        int r = mbedtls_ssl_read(&p->ssl, b, n);
        if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE ||
            r == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
            continue;
        if (r <= 0) {
            /* A limit leaves TLS usable for writing (the ERROR that says
             * which limit); anything else is a broken link. */
            if (p->limit == LIM_NONE || p->limit == LIM_EVICTED || r != MBEDTLS_ERR_SSL_TIMEOUT)
                p->broken = 1;
            else
                p->rx_broken = 1;
            return map_tls_err(p, r);
        }
        b += r;
        n -= (size_t)r;
        p->received += (uint64_t)r;
    }
    return 0;
}

int net_peer_frame_read(struct net_peer *p, int *type, uint8_t **buf, size_t *cap, size_t *len)
{
    return net_peer_frame_read_admit(p, NULL, NULL, type, buf, cap, len);
}

int net_peer_frame_read_admit(struct net_peer *p, net_peer_admit_fn *admit, void *ctx, int *type, uint8_t **buf,
                              size_t *cap, size_t *len)
{
    uint8_t hdr[NET_SYNC_HDR];
    int rc;
    *len = 0;
    if (p->rx_broken)
        return NET_ERR_FRAME;
    if (p->wlen && (rc = net_peer_flush(p)))
        return rc;
    if ((rc = read_exact(p, hdr, sizeof hdr)))
        return rc;
    if (!(rc = net_sync_hdr_parse(hdr, type, len)) && admit)
        rc = admit(ctx, *type, *len);
    if (rc) {
        p->rx_broken = 1; /* the stream cannot be resynchronised; we may still say why */
        return rc;
    }
    /* Grow with what actually arrives (64 KiB at a time): a header that
     * announces the cap costs memory only as fast as the peer sends bytes. */
    size_t got = 0;
    for (;;) {
        size_t target = *len - got > 65536 ? got + 65536 : *len;
        if (*cap < target + 1) {
            size_t ncap = *cap * 2 > target + 1 ? *cap * 2 : target + 1;
            if (ncap > *len + 1)
                ncap = *len + 1;
            uint8_t *nb = realloc(*buf, ncap);
            if (!nb)
                return NET_ERR_NOMEM;
            *buf = nb;
            *cap = ncap;
        }
        if (target == got)
            break;
        if ((rc = read_exact(p, *buf + got, target - got)))
            return rc;
        got = target;
    }
    (*buf)[*len] = '\0';
    if ((rc = net_sync_payload_check(*type, *buf, *len)))
        p->rx_broken = 1;
    return rc;
}

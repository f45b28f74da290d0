/*
 * net/peer.h - mutually authenticated TLS connections between kope peers,
 * carrying sync frames (net/sync_frame.h). mbedTLS 3.6; TLS 1.3 preferred,
 * TLS 1.2 allowed.
 *
 * Both sides present a device certificate issued by the fleet CA and
 * require one from the other side (authmode REQUIRED both ways): a peer
 * whose certificate is unknown, expired or not from a trusted CA fails the
 * handshake. Peers are authenticated by fleet membership, not by host name
 * (device certificates name a device, not an address), so the client does
 * not check the server's name.
 *
 * Limits (struct net_peer_limits), all enforced in the socket callbacks, so
 * a peer that trickles one byte at a time gains nothing: every wait is at
 * most the idle timeout; the TLS handshake must end within handshake_ms of
 * the TCP connection (for a client, of the start of its TCP connect, which
 * is non-blocking and bounded by it too: a black-holed address costs
 * handshake_ms, not the kernel's SYN retries); the whole connection within
 * session_ms; and once
 * rate_grace_ms of waiting on the peer have passed, the bytes moved (both
 * ways) must keep up with min_rate per second of that waiting (time we spend
 * on our own work, such as a store write, does not count against the peer);
 * bytes pay for at most NET_PEER_RATE_BANK grace periods of waiting ahead, so
 * a burst cannot buy a long trickle.
 * Writes are buffered (NET_PEER_WBUF) and flushed by net_peer_flush or
 * before each read.
 *
 * Ownership: net_peer_conf_new / net_peer_listen / net_peer_connect /
 * net_peer_accept return heap objects freed by their _free / _close; a
 * struct net_peer borrows its conf, which must outlive it. One connection
 * is used by one thread at a time; a conf may be shared by many threads.
 */
#ifndef KOPE_NET_PEER_H
#define KOPE_NET_PEER_H

#include <stddef.h>
#include <stdint.h>

#ifndef NET_PEER_WBUF
#define NET_PEER_WBUF (64 * 1024)
#endif

struct net_peer_conf;
struct net_peer;
struct net_peer_listener;

/* Defaults for a zero member of struct net_peer_limits. */
#define NET_PEER_HANDSHAKE_MS 10000
#define NET_PEER_SESSION_MS (30 * 60 * 1000)
#define NET_PEER_MIN_RATE 1024        /* bytes per second of waiting */
#define NET_PEER_RATE_GRACE_MS 10000
#define NET_PEER_RATE_BANK 6          /* paid waiting banked at most: 6 grace periods (60 s) */

struct net_peer_limits {
    int handshake_ms;    /* TCP accept/connect .. TLS handshake done */
    int session_ms;      /* the whole connection */
    int min_rate;        /* bytes/s both ways, per second spent waiting on the peer */
    int rate_grace_ms;   /* waiting allowed before the rate is checked */
};

/* A TLS configuration for one device. ca_pem: the trusted fleet CA
 * certificates (PEM, one or more); cert_pem: this device's certificate;
 * key_pem: its private key (the device key). Buffers are NUL-terminated
 * strings; they are copied. On failure a message goes to err. */
int net_peer_conf_new(int is_server, const char *ca_pem, const char *cert_pem, const char *key_pem,
                      int timeout_ms, struct net_peer_conf **out, char *err, size_t err_cap);
void net_peer_conf_free(struct net_peer_conf *c);
/* Set the limits of connections made from c afterwards (zero members:
 * the defaults above; negative: off). Call before sharing c. */
void net_peer_conf_limits(struct net_peer_conf *c, const struct net_peer_limits *l);
/* The handshake deadline in effect (ms; 0 = off). */
int net_peer_conf_handshake_ms(const struct net_peer_conf *c);

/* Listen on host:port (host "" or NULL = all addresses, port "0" = any:
 * *bound_port says which). */
int net_peer_listen(const char *host, const char *port, struct net_peer_listener **out,
                    int *bound_port, char *err, size_t err_cap);
void net_peer_listener_close(struct net_peer_listener *l);
/* Wait up to wait_ms for a TCP connection (NET_ERR_TIMEOUT if none); the
 * TLS handshake is not done yet: call net_peer_handshake (in the thread that
 * serves it). addr gets the client's address text. */
int net_peer_accept(struct net_peer_listener *l, struct net_peer_conf *c, int wait_ms,
                    struct net_peer **out, char *addr, size_t addr_cap);
/* Wait up to wait_ms for a connection to accept: 0 when one is pending,
 * NET_ERR_TIMEOUT if none (so a server can pick the conf it accepts with). */
int net_peer_listener_wait(struct net_peer_listener *l, int wait_ms);
/* Connect to host:port (each address it resolves to in turn) and complete
 * the handshake, both within handshake_ms: NET_ERR_DEADLINE when the TCP
 * connect got no answer in time. */
int net_peer_connect(struct net_peer_conf *c, const char *host, const char *port,
                     struct net_peer **out, char *err, size_t err_cap);
/* Server side: complete the TLS handshake (client certificate verified). */
int net_peer_handshake(struct net_peer *p, char *err, size_t err_cap);
/* The verified peer certificate's subject CN ("?" if none). */
void net_peer_name(struct net_peer *p, char *buf, size_t cap);
/* "TLSv1.3" etc. */
const char *net_peer_tls_version(struct net_peer *p);
/* Close (sends close_notify when the connection is healthy) and free. NULL ok. */
void net_peer_close(struct net_peer *p);
/* Cut the TCP connection at once, without close_notify (tests: a dropped link). */
void net_peer_abort(struct net_peer *p);
/* From another thread: end a connection's pending and future waits at once
 * (its owner sees NET_ERR_BUSY: "evicted"). The owner still closes it. */
void net_peer_evict(struct net_peer *p);
/* Lift the handshake/session/rate limits for one last frame (an ERROR that
 * says which limit ended the session): each wait is then at most 1 s. */
void net_peer_final(struct net_peer *p);
/* Which limit ended the last wait, in words ("" if none did), e.g.
 * "session deadline (2000 ms) passed". */
void net_peer_limit_text(const struct net_peer *p, char *buf, size_t cap);
/* SHA-256 of the verified peer certificate (DER); -1 if there is none. */
int net_peer_cert_id(struct net_peer *p, uint8_t id[32]);
/* The peer's device origin: SHA-256 of the DER public key its verified
 * certificate holds (docs/RECORDS.md: an origin is its key's hash); -1 if
 * there is none. */
int net_peer_origin(struct net_peer *p, uint8_t origin[32]);

/* Queue one frame (header written here; the payload is checked as a
 * receiver would check it). NET_ERR_FRAME_BIG over the type's cap. */
int net_peer_frame_write(struct net_peer *p, int type, const void *payload, size_t len);
/* Send queued bytes. */
int net_peer_flush(struct net_peer *p);
/* Raw bytes (tests: a peer that sends garbage). Queued like frames. */
int net_peer_write_raw(struct net_peer *p, const void *buf, size_t len);
/* Read one frame, checked (header cap before the payload is read, then
 * net_sync_payload_check). *buf grows as needed (caller frees; it holds
 * the payload plus a NUL); NET_ERR_TIMEOUT when idle for timeout_ms,
 * NET_ERR_DEADLINE / NET_ERR_SLOW / NET_ERR_BUSY when a limit ended the
 * wait (net_peer_limit_text says which), NET_ERR_CLOSED when the peer
 * closed, NET_ERR_RESET on a cut. A frame the header refuses
 * (NET_ERR_FRAME*) leaves the incoming stream unusable, but frames can
 * still be written (the ERROR that says why).
 * _admit: admit(ctx, type, len) is asked after the header and before a
 * payload byte is read (a memory budget); a non-zero return refuses the
 * frame with that code. */
int net_peer_frame_read(struct net_peer *p, int *type, uint8_t **buf, size_t *cap, size_t *len);
typedef int net_peer_admit_fn(void *ctx, int type, size_t len);
int net_peer_frame_read_admit(struct net_peer *p, net_peer_admit_fn *admit, void *ctx, int *type, uint8_t **buf,
                              size_t *cap, size_t *len);

/* Fault injection (tests, benchmarks): once more than after_bytes have been
 * received, the connection behaves as cut (NET_ERR_RESET, no close_notify).
 * 0 = never. */
void net_peer_fault_cut(struct net_peer *p, uint64_t after_bytes);

/* Bytes moved through TLS (payload and headers), for the benchmarks. */
void net_peer_bytes(const struct net_peer *p, uint64_t *sent, uint64_t *received);

#endif /* KOPE_NET_PEER_H */

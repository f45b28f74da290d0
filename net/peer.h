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
 * Every read has an idle timeout (timeout_ms); writes give up after the same
 * time without progress. Writes are buffered (NET_PEER_WBUF) and flushed by
 * net_peer_flush or before each read.
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

/* A TLS configuration for one device. ca_pem: the trusted fleet CA
 * certificates (PEM, one or more); cert_pem: this device's certificate;
 * key_pem: its private key (the device key). Buffers are NUL-terminated
 * strings; they are copied. On failure a message goes to err. */
int net_peer_conf_new(int is_server, const char *ca_pem, const char *cert_pem, const char *key_pem,
                      int timeout_ms, struct net_peer_conf **out, char *err, size_t err_cap);
void net_peer_conf_free(struct net_peer_conf *c);

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
/* Connect to host:port and complete the handshake. */
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
 * NET_ERR_CLOSED when the peer closed, NET_ERR_RESET on a cut. */
int net_peer_frame_read(struct net_peer *p, int *type, uint8_t **buf, size_t *cap, size_t *len);

/* Fault injection (tests, benchmarks): once more than after_bytes have been
 * received, the connection behaves as cut (NET_ERR_RESET, no close_notify).
 * 0 = never. */
void net_peer_fault_cut(struct net_peer *p, uint64_t after_bytes);

/* Bytes moved through TLS (payload and headers), for the benchmarks. */
void net_peer_bytes(const struct net_peer *p, uint64_t *sent, uint64_t *received);

#endif /* KOPE_NET_PEER_H */

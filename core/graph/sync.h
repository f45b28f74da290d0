/*
 * core/graph/sync.h - peer sync of graph shards (docs/SYNC.md): one session over
 * a mutually authenticated connection (net/peer.h), and the server loop.
 *
 * A session exchanges HELLO and version VECTOR frames, then each side sends
 * the records the other lacks (graph_export with the peer's vector as
 * "since", one shard line per LINE frame, ending in END) and the other
 * feeds them to the importer (graph_importer_*) under the fleet trust
 * policy: a run of records is stored only when a checkpoint signed by its
 * origin, carrying a certificate issued by a trusted CA for that origin's
 * key, covers it. The client sends first; then the server.
 *
 * Nothing here trusts the peer: every frame is checked (net/sync_frame.h),
 * every record is checked (core/graph/graph_import.c), every wait has a timeout.
 *
 * Ownership: everything is borrowed; sync_stats is filled by the callee.
 */
#ifndef KOPE_SYNC_H
#define KOPE_SYNC_H

#include <signal.h> /* sig_atomic_t */
#include <stdint.h>
#include <stdio.h>

#define SYNC_PROTO_VERSION 1      /* this kope speaks 1 .. SYNC_PROTO_VERSION */
#define SYNC_PROTO_MIN 1
#ifndef SYNC_MAX_PENDING
#define SYNC_MAX_PENDING 262144   /* records held for one run before its checkpoint */
#endif
#ifndef SYNC_REJECT_MAX
#define SYNC_REJECT_MAX 100000    /* refused records before a session is cut */
#endif
#ifndef SYNC_VECTOR_ENTRIES_MAX
#define SYNC_VECTOR_ENTRIES_MAX 10000
#endif
#ifndef SYNC_MEM_SESSION
#define SYNC_MEM_SESSION (64ll << 20)  /* one session: frame buffer + parse + run buffer */
#endif
#ifndef SYNC_MEM_SERVER
#define SYNC_MEM_SERVER (256ll << 20)  /* every session of a server together */
#endif

/* A memory budget shared by sessions (a server's): bytes reserved now,
 * the most ever reserved, and the cap. Sessions reserve before they read
 * a frame's payload or parse a line, and give back after. */
struct sync_mem {
    int64_t used, peak, max;
};

struct graph;
struct net_peer;
struct net_peer_conf;
struct net_peer_listener;
struct net_trust;

struct sync_opts {
    struct net_trust *trust;  /* required: the fleet CAs records must chain to */
    int64_t max_pending;      /* 0 = SYNC_MAX_PENDING */
    const char *since_override; /* tests only: send as if the peer had this vector */
    int64_t mem_session;      /* this session's memory budget; 0 = SYNC_MEM_SESSION */
    struct sync_mem *pool;    /* a shared budget to reserve from too, or NULL */
};

struct sync_stats {
    int64_t sent;             /* records we sent */
    int64_t accepted;         /* records we stored from the peer */
    int64_t duplicates;
    int64_t rejected;
    int64_t peer_accepted;    /* what the peer reported storing of ours */
    int64_t peer_rejected;
    int64_t lies;             /* origins the peer's vector overstated */
    uint64_t bytes_sent, bytes_received;
    int proto;                /* negotiated protocol version */
    char peer[64];            /* the peer certificate's CN */
    char error[320];          /* first failure, for the log line */
    char peer_error[200];     /* why the peer refused some of ours (its DONE), or "" */
};

/* Run one session on an established connection. is_client: 1 for the side
 * that connected (it sends its delta first). Returns 0 when the exchange
 * completed and nothing was rejected; a protocol/network failure code
 * (NET_ERR_*), or the importer's first failure (KOPE_ERR_*), otherwise;
 * records committed before a failure stay (resume = sync again). */
int sync_session(struct graph *g, struct net_peer *p, int is_client, const struct sync_opts *o,
                 struct sync_stats *st);

/* The server: accept connections until *stop is set, serving each in its
 * own thread with its own store handle (db_path). Sessions never sign (the
 * serving process does not hold the device key open in its threads).
 * on_session, if set, sees every session's outcome (after the log line).
 * Returns when stopped and every session has ended.
 *
 * Slots. A connection is first unauthenticated (TCP accepted, TLS handshake
 * running, bounded by the conf's handshake deadline): at most max_unauth of
 * those at once and max_per_addr from one address. A new connection that
 * finds them full evicts the oldest handshake of its own address, or else of
 * the address holding the most, so a flood of connections that never finish
 * the handshake cannot keep an enrolled peer out: its handshake takes
 * milliseconds. Authenticated sessions have their own max_conns slots, at
 * most max_per_cert per peer certificate and max_auth_per_addr per address
 * (so members colluding from one machine leave the other half free); one
 * over any is refused with an ERROR frame (NET_ERR_BUSY). */
struct sync_slot;
struct sync_gen;
struct sync_server {
    const char *db_path;
    struct net_peer_conf *conf;
    struct net_peer_listener *listener;
    struct sync_opts opts;
    int max_conns;            /* authenticated sessions at once; 0 = 16 */
    int max_unauth;           /* handshakes in progress at once; 0 = 8 */
    int max_per_addr;         /* handshakes in progress from one address; 0 = 4 */
    int max_per_cert;         /* sessions of one peer certificate at once; 0 = 2 */
    int max_auth_per_addr;    /* authenticated sessions from one address at once;
                               * 0 = half of max_conns (at least 1) */
    int64_t mem_budget;       /* all sessions together; 0 = SYNC_MEM_SERVER (peak: mem.peak) */
    struct sync_mem mem;      /* the server's budget (opts.pool points here while serving) */
    int lock_wait_ms;         /* how long a session waits for the store's write
                               * lock (another session's import holds it while
                               * its peer sends); 0 = the store's 5 s */
    FILE *log;                /* one line per session; NULL = stderr */
    /* Optional (NULL: never): asked before each new connection (and every
     * 200 ms while idle) whether the trust changed (`kope fleet trust`,
     * SIGHUP). Returns 1 with a new conf and trust, which the server owns
     * from then on (freed once no connection uses them), 0 if nothing
     * changed, < 0 if the new files are unusable (err is logged, the
     * current ones stay). Connections already open keep the trust they
     * started with. conf and opts.trust above stay the caller's. */
    int (*reload)(void *ctx, struct net_peer_conf **conf, struct net_trust **trust, char *err, size_t err_cap);
    void *reload_ctx;
    volatile sig_atomic_t *stop; /* set from a signal handler: nonzero ends serving */
    void (*on_session)(void *ctx, int rc, const struct sync_stats *st);
    void *ctx;
    int active;               /* internal: connections being served */
    struct sync_slot *slots;  /* internal: one per connection being served */
    uint64_t n_accepted;      /* internal: connections so far (slot age) */
    struct sync_gen *gen;     /* internal: the trust new connections get */
};
int sync_serve(struct sync_server *s);

/* The fleet trust policy for graph_import_opts (ctx = struct net_trust *). */
int sync_trust_check(void *ctx, const uint8_t origin[32], const uint8_t *pubkey, size_t pubkey_len,
                     const char *cert_hex, char *why, size_t why_cap);
/* ... and on revocation records (graph_revoke_fn; ctx = struct net_trust *). */
int sync_revoke_check(void *ctx, const uint8_t origin[32], const uint8_t digest[32], const char *cert_hex,
                      const char *sig_hex, char *why, size_t why_cap);

#endif /* KOPE_SYNC_H */

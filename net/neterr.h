/*
 * net/neterr.h - the net layer's error band (-200 .. -299) and its text.
 *
 * Every net/ function that can fail returns 0 or one of these codes, so a
 * logged number names its layer (see core/err.h for the bands). Codes are
 * split into retryable ones (the link or the server may do better on the next
 * try: timeouts, resets, 429, 5xx) and final ones (retrying cannot help: bad
 * certificate, 401, 400, unknown model). net_err_retryable() says which.
 *
 * This header includes nothing from core/, store/ or platform/.
 */
#ifndef KOPE_NET_ERR_H
#define KOPE_NET_ERR_H

enum net_err {
    NET_ERR_INTERNAL = -200,     /* a bug, or libcurl failed in an unexpected way */
    NET_ERR_NOMEM = -201,
    NET_ERR_ARG = -202,          /* bad setting: URL, scheme, missing model ... */
    NET_ERR_CANCELLED = -203,    /* the caller's cancel callback asked to stop */
    /* retryable: the link */
    NET_ERR_DNS = -210,          /* host name did not resolve */
    NET_ERR_CONNECT = -211,      /* TCP connect refused or unreachable */
    NET_ERR_TIMEOUT = -212,      /* no complete reply within the timeout */
    NET_ERR_RESET = -213,        /* connection dropped or reset mid-transfer */
    NET_ERR_PROXY = -214,        /* the proxy from the environment failed */
    /* final: TLS */
    NET_ERR_TLS = -220,          /* TLS handshake failed (protocol, ciphers) */
    NET_ERR_CERT = -221,         /* server certificate not trusted / wrong name */
    NET_ERR_PIN = -222,          /* server public key does not match the pin */
    NET_ERR_CA_FILE = -223,      /* the CA bundle could not be read */
    NET_ERR_CERT_EXPIRED = -224, /* server certificate outside its validity (expired or not yet valid) */
    /* replies */
    NET_ERR_TOOBIG = -230,       /* reply body over the cap (final) */
    NET_ERR_HTTP_RATE = -231,    /* 429 Too Many Requests (retryable) */
    NET_ERR_HTTP_SERVER = -232,  /* 5xx (retryable) */
    NET_ERR_HTTP_AUTH = -233,    /* 401/403: API key missing or wrong (final) */
    NET_ERR_HTTP_BADREQ = -234,  /* 400/422: the server rejected the request (final) */
    NET_ERR_HTTP_NOTFOUND = -235,/* 404: wrong base URL or unknown model (final) */
    NET_ERR_HTTP = -236,         /* any other unexpected status (final) */
    NET_ERR_REPLY = -237,        /* reply is not the JSON we expect (final) */
    /* peer sync (net/peer.h, net/sync_frame.h, net/fleet.h) */
    NET_ERR_FRAME = -240,        /* malformed sync frame: bad type, bytes or JSON (final) */
    NET_ERR_FRAME_BIG = -241,    /* sync frame over its size cap (final) */
    NET_ERR_PEER = -242,         /* the peer broke the sync protocol (final) */
    NET_ERR_PROTO_VERSION = -243,/* no sync protocol version in common (final) */
    NET_ERR_PEER_CERT = -244,    /* peer/record certificate not from a trusted CA (final) */
    NET_ERR_CLOSED = -245,       /* the peer closed the connection (retryable) */
    NET_ERR_LISTEN = -246,       /* cannot bind or listen on the address (final) */
    NET_ERR_DEADLINE = -247,     /* the handshake or session deadline passed (retryable) */
    NET_ERR_SLOW = -248,         /* the peer moved bytes below the minimum rate (retryable) */
    NET_ERR_BUSY = -249,         /* refused or evicted: session limits or memory budget (retryable) */
};

/* Text for a NET_ERR_* code; "unknown net error" for anything else. Never
 * NULL; static storage. */
const char *net_strerror(int code);

/* 1 if a request that failed with code may succeed when simply repeated
 * (timeouts, resets, DNS/connect failures, 429, 5xx), else 0. */
int net_err_retryable(int code);

#endif /* KOPE_NET_ERR_H */

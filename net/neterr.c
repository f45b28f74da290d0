/*
 * net/neterr.c - text and retry class of the NET_ERR_* band (including the
 * NET_ERR_CRYPTO_* codes of net/crypto.h). See neterr.h.
 */
#include "net/crypto.h"
#include "net/neterr.h"

const char *net_strerror(int code)
{
    switch (code) {
    case NET_ERR_INTERNAL: return "internal error in the net layer";
    case NET_ERR_NOMEM: return "out of memory";
    case NET_ERR_ARG: return "invalid network setting";
    case NET_ERR_CANCELLED: return "request cancelled";
    case NET_ERR_DNS: return "host name did not resolve (DNS)";
    case NET_ERR_CONNECT: return "could not connect (TCP)";
    case NET_ERR_TIMEOUT: return "timed out";
    case NET_ERR_RESET: return "connection dropped mid-transfer";
    case NET_ERR_PROXY: return "proxy failed";
    case NET_ERR_TLS: return "TLS handshake failed";
    case NET_ERR_CERT: return "server certificate not trusted";
    case NET_ERR_PIN: return "server public key does not match the pinned key";
    case NET_ERR_CA_FILE: return "CA bundle could not be read";
    case NET_ERR_CERT_EXPIRED: return "server certificate expired (or not yet valid)";
    case NET_ERR_TOOBIG: return "reply body over the size cap";
    case NET_ERR_HTTP_RATE: return "rate limited by the server (HTTP 429)";
    case NET_ERR_HTTP_SERVER: return "server error (HTTP 5xx)";
    case NET_ERR_HTTP_AUTH: return "not authorized (HTTP 401/403): check the API key";
    case NET_ERR_HTTP_BADREQ: return "request rejected by the server (HTTP 400)";
    case NET_ERR_HTTP_NOTFOUND: return "not found (HTTP 404): wrong base URL or unknown model";
    case NET_ERR_HTTP: return "unexpected HTTP status";
    case NET_ERR_REPLY: return "malformed reply";
    case NET_ERR_FRAME: return "malformed sync frame";
    case NET_ERR_FRAME_BIG: return "sync frame over its size cap";
    case NET_ERR_PEER: return "peer broke the sync protocol";
    case NET_ERR_PROTO_VERSION: return "no sync protocol version in common with the peer";
    case NET_ERR_PEER_CERT: return "certificate not issued by a trusted fleet CA";
    case NET_ERR_CLOSED: return "peer closed the connection";
    case NET_ERR_LISTEN: return "cannot listen on that address";
    case NET_ERR_DEADLINE: return "deadline passed (handshake or whole session)";
    case NET_ERR_SLOW: return "peer too slow (below the minimum transfer rate)";
    case NET_ERR_BUSY: return "server busy (session limits or memory budget): try again later";
    /* net/crypto.h's codes share the band */
    case NET_ERR_CRYPTO: return "cryptographic operation failed";
    case NET_ERR_CRYPTO_KEY: return "key does not parse";
    case NET_ERR_CRYPTO_VERIFY: return "signature does not verify";
    case NET_ERR_CRYPTO_BUF: return "buffer too small";
    default: return "unknown net error";
    }
}

int net_err_retryable(int code)
{
    switch (code) {
    case NET_ERR_DNS:
    case NET_ERR_CONNECT:
    case NET_ERR_TIMEOUT:
    case NET_ERR_RESET:
    case NET_ERR_CLOSED:
    case NET_ERR_DEADLINE:
    case NET_ERR_SLOW:
    case NET_ERR_BUSY:
    case NET_ERR_PROXY:
    case NET_ERR_HTTP_RATE:
    case NET_ERR_HTTP_SERVER:
        return 1;
    default:
        return 0;
    }
}

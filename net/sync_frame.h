/*
 * net/sync_frame.h - the peer sync wire format: length-prefixed frames
 * (docs/SYNC.md). Pure functions over bytes, no I/O: net/peer.c reads and
 * writes frames on a TLS connection, tests/fuzz_sync_frame.c feeds this
 * parser random bytes.
 *
 * A frame is a 5-byte header - type (1 byte), payload length (4 bytes,
 * big-endian) - then the payload. Every payload is UTF-8 text without NUL
 * or newline bytes: a JSON object for the control frames, one graph shard
 * line for NET_SYNC_LINE. Each type has its own hard size cap; a header
 * that announces more is refused before any payload byte is read.
 */
#ifndef KOPE_NET_SYNC_FRAME_H
#define KOPE_NET_SYNC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define NET_SYNC_HDR 5
#ifndef NET_SYNC_LINE_MAX
#define NET_SYNC_LINE_MAX (16u << 20)  /* one shard line (a record, or a blob as a JSON string) */
#endif
#ifndef NET_SYNC_VECTOR_MAX
#define NET_SYNC_VECTOR_MAX (1u << 20) /* {origin: seq}: about 12,000 origins */
#endif
#define NET_SYNC_CTRL_MAX 4096         /* hello, end, done, error */

enum net_sync_type {
    NET_SYNC_HELLO = 1,  /* {"proto":"kope-sync","v":V,"min":M,...} */
    NET_SYNC_VECTOR = 2, /* {"<origin hex>": seq, ...} */
    NET_SYNC_LINE = 3,   /* one shard line (header, blob or record) */
    NET_SYNC_END = 4,    /* {"records":N}: the sender's delta is complete */
    NET_SYNC_DONE = 5,   /* {"accepted":N,"duplicates":N,"rejected":N,"error":".."} */
    NET_SYNC_ERROR = 6,  /* {"error":"..."}: the sender gives up; then closes */
};

/* Cap of a frame type's payload; 0 for an unknown type. */
size_t net_sync_type_max(int type);
/* "hello", "vector", ... or "unknown". */
const char *net_sync_type_name(int type);

/* Parse a header: 0, NET_ERR_FRAME (unknown type) or NET_ERR_FRAME_BIG. */
int net_sync_hdr_parse(const uint8_t hdr[NET_SYNC_HDR], int *type, size_t *len);
void net_sync_hdr_write(uint8_t hdr[NET_SYNC_HDR], int type, size_t len);

/* Check a payload before anyone reads it: valid UTF-8, no NUL or newline,
 * and for control frames a '{' ... '}' shape. 0 or NET_ERR_FRAME. */
int net_sync_payload_check(int type, const uint8_t *p, size_t len);

/* One whole frame from memory (header + payload, checked). On success
 * *payload points into buf and *used is the frame's size. Returns 1 when
 * buf holds only part of a frame, else 0 or a NET_ERR_FRAME* code. */
int net_sync_frame_parse(const uint8_t *buf, size_t n, int *type, const uint8_t **payload,
                         size_t *len, size_t *used);

/* The one sanitiser for text a peer controls (its ERROR and DONE texts, its
 * certificate's name) before it reaches a log line or a terminal: printable
 * ASCII is kept, every other byte (newlines, escapes, UTF-8) becomes '?'.
 * Copies at most len bytes of src (NUL ends it earlier) into dst, always
 * NUL-terminated when cap > 0; returns dst. */
char *net_text_clean(char *dst, size_t cap, const char *src, size_t len);

#endif /* KOPE_NET_SYNC_FRAME_H */

/*
 * net/sync_frame.c - frame headers and payload checks. See sync_frame.h.
 */
#include <string.h>

#include "net/neterr.h"
#include "net/sync_frame.h"

size_t net_sync_type_max(int type)
{
    switch (type) {
    case NET_SYNC_LINE: return NET_SYNC_LINE_MAX;
    case NET_SYNC_VECTOR: return NET_SYNC_VECTOR_MAX;
    case NET_SYNC_HELLO:
    case NET_SYNC_END:
    case NET_SYNC_DONE:
    case NET_SYNC_ERROR: return NET_SYNC_CTRL_MAX;
    default: return 0;
    }
}

const char *net_sync_type_name(int type)
{
    static const char *const names[] = {"unknown", "hello", "vector", "line", "end", "done", "error"};
    return type >= 1 && type <= 6 ? names[type] : names[0];
}

int net_sync_hdr_parse(const uint8_t hdr[NET_SYNC_HDR], int *type, size_t *len)
{
    size_t cap = net_sync_type_max(hdr[0]);
    uint32_t n = (uint32_t)hdr[1] << 24 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 8 | hdr[4];
    *type = hdr[0];
    *len = n;
    if (!cap)
        return NET_ERR_FRAME;
    return n > cap ? NET_ERR_FRAME_BIG : 0;
}

void net_sync_hdr_write(uint8_t hdr[NET_SYNC_HDR], int type, size_t len)
{
    hdr[0] = (uint8_t)type;
    hdr[1] = (uint8_t)(len >> 24);
    hdr[2] = (uint8_t)(len >> 16);
    hdr[3] = (uint8_t)(len >> 8);
    hdr[4] = (uint8_t)len;
}

/* Strict UTF-8 (no overlong forms, no surrogates, <= U+10FFFF), and no NUL
 * or newline: a payload is one line of JSON text. */
static int text_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            if (c == 0 || c == '\n')
                return 0;
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += k + 1;
    }
    return 1;
}

int net_sync_payload_check(int type, const uint8_t *p, size_t len)
{
    if (!net_sync_type_max(type) || len > net_sync_type_max(type))
        return NET_ERR_FRAME;
    if (len < 2 || p[0] != '{' || p[len - 1] != '}')
        return NET_ERR_FRAME; /* every payload, a shard line too, is one JSON object */
    return text_valid(p, len) ? 0 : NET_ERR_FRAME;
}

int net_sync_frame_parse(const uint8_t *buf, size_t n, int *type, const uint8_t **payload,
                         size_t *len, size_t *used)
{
    if (n < NET_SYNC_HDR)
        return 1;
    int rc = net_sync_hdr_parse(buf, type, len);
    if (rc)
        return rc;
    if (n - NET_SYNC_HDR < *len)
        return 1;
    if ((rc = net_sync_payload_check(*type, buf + NET_SYNC_HDR, *len)))
        return rc;
    *payload = buf + NET_SYNC_HDR;
    *used = NET_SYNC_HDR + *len;
    return 0;
}

char *net_text_clean(char *dst, size_t cap, const char *src, size_t len)
{
    size_t i = 0;
    if (!cap)
        return dst;
    for (; src && i < len && src[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[i] = '\0';
    return dst;
}

/*
 * core/util.c - capped file reading, hex, monotonic time. See util.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/util.h"

int util_read_file(const char *path, size_t max, char **out, size_t *len, char *err, size_t err_len)
{
    int rc = KOPE_ERR_IO;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    *out = NULL;
    if (!f) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return KOPE_ERR_IO;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > max + 1)
                ncap = max + 1;
            if (ncap <= n) {
                snprintf(err, err_len, "%s: larger than the %zu-byte limit", path, max);
                rc = KOPE_ERR_TOOBIG;
                goto out;
            }
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                rc = KOPE_ERR_NOMEM;
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                snprintf(err, err_len, "%s: read error: %s", path, strerror(errno));
                goto out;
            }
            break;
        }
        if (n > max) {
            snprintf(err, err_len, "%s: larger than the %zu-byte limit", path, max);
            rc = KOPE_ERR_TOOBIG;
            goto out;
        }
    }
    if (!buf && !(buf = malloc(1))) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    if (f != stdin)
        fclose(f);
    return rc;
}

void util_hex(const uint8_t *in, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[in[i] >> 4];
        out[2 * i + 1] = d[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case is not canonical: rejected */
}

int util_unhex(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return KOPE_ERR_PARSE;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * n] == '\0' ? 0 : KOPE_ERR_PARSE;
}

uint64_t util_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t util_fence_len(const char *s, size_t min)
{
    size_t run = 0, longest = 0;
    for (; s && *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    return longest < min ? min : longest + 1;
}

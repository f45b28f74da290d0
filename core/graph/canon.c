/*
 * core/graph/canon.c - canonical JSON writer over a cJSON tree. The rules are in
 * canon.h; they must never change for a given record format version ("v"),
 * because every stored id depends on them.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/graph/canon.h"
#include "core/err.h"

int canon_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + len;
    while (p < e) {
        /* ASCII fast path: eight bytes at a time */
        while (e - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (w & 0x8080808080808080ull)
                break;
            p += 8;
        }
        if (p >= e)
            break;
        unsigned c = *p;
        size_t n;
        unsigned cp, min;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1; cp = c & 0x1f; min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2; cp = c & 0x0f; min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3; cp = c & 0x07; min = 0x10000;
        } else {
            return 0;
        }
        if ((size_t)(e - p) <= n)
            return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        p += n + 1;
    }
    return 1;
}

int canon_write_string(const char *s, struct buf *b)
{
    size_t len = strlen(s);
    if (!canon_utf8_valid(s, len))
        return KOPE_ERR_CANON;
    buf_addc(b, '"');
    const unsigned char *p = (const unsigned char *)s, *e = p + len, *run = p;
    for (; p < e; p++) {
        unsigned char c = *p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue; /* the common case: copied as part of a run */
        char u[8];
        const char *esc = u;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default: snprintf(u, sizeof u, "\\u%04x", c);
        }
        buf_add(b, run, (size_t)(p - run));
        buf_adds(b, esc);
        run = p + 1;
    }
    buf_add(b, run, (size_t)(e - run));
    return buf_addc(b, '"');
}

static int write_number(double v, struct buf *b)
{
    char tmp[40];
    if (!isfinite(v))
        return KOPE_ERR_CANON;
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        /* integers (seq numbers, counts) are most numbers: no printf */
        long long i = (long long)v; /* -0 becomes 0 here */
        unsigned long long u = i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i;
        char *q = tmp + sizeof tmp;
        *--q = '\0';
        do {
            *--q = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (i < 0)
            *--q = '-';
        return buf_adds(b, q);
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    return buf_adds(b, tmp);
}

static int key_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string); /* strcmp compares as unsigned char: byte order */
}

static int write_value(const cJSON *v, struct buf *b, int depth);

static int write_object(const cJSON *v, struct buf *b, int depth)
{
    int rc = 0;
    size_t n = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        n++;
    const cJSON *stackv[16];
    const cJSON **kids = n <= 16 ? stackv : malloc(n * sizeof *kids);
    if (!kids)
        return KOPE_ERR_NOMEM;
    size_t i = 0;
    for (const cJSON *c = v->child; c; c = c->next) {
        if (!c->string) {
            rc = KOPE_ERR_CANON;
            goto out;
        }
        kids[i++] = c;
    }
    qsort(kids, n, sizeof *kids, key_cmp);
    buf_addc(b, '{');
    for (i = 0; i < n; i++) {
        if (i && strcmp(kids[i - 1]->string, kids[i]->string) == 0) {
            rc = KOPE_ERR_CANON; /* duplicate key: two readings of one record */
            goto out;
        }
        if (i)
            buf_addc(b, ',');
        if ((rc = canon_write_string(kids[i]->string, b)))
            goto out;
        buf_addc(b, ':');
        if ((rc = write_value(kids[i], b, depth + 1)))
            goto out;
    }
    rc = buf_addc(b, '}');
out:
    if (kids != stackv)
        free(kids);
    return rc;
}

static int write_value(const cJSON *v, struct buf *b, int depth)
{
    int rc;
    if (depth > CANON_MAX_DEPTH)
        return KOPE_ERR_CANON;
    switch (v->type & 0xff) {
    case cJSON_False: return buf_adds(b, "false");
    case cJSON_True: return buf_adds(b, "true");
    case cJSON_NULL: return buf_adds(b, "null");
    case cJSON_Number: return write_number(v->valuedouble, b);
    case cJSON_String:
        if (!v->valuestring)
            return KOPE_ERR_CANON;
        return canon_write_string(v->valuestring, b);
    case cJSON_Array:
        buf_addc(b, '[');
        for (const cJSON *c = v->child; c; c = c->next) {
            if (c != v->child)
                buf_addc(b, ',');
            if ((rc = write_value(c, b, depth + 1)))
                return rc;
        }
        return buf_addc(b, ']');
    case cJSON_Object:
        return write_object(v, b, depth);
    default:
        return KOPE_ERR_CANON; /* cJSON_Raw and invalid nodes have no canonical form */
    }
}

int canon_write(const cJSON *v, struct buf *b)
{
    if (!v)
        return KOPE_ERR_CANON;
    int rc = write_value(v, b, 0);
    return rc ? rc : buf_err(b);
}

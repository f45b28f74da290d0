/* core/buf.c - capped growable buffer. See buf.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"

void buf_init(struct buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

void buf_free(struct buf *b)
{
    free(b->p);
    buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->err = 0;
    if (b->p)
        b->p[0] = '\0';
}

static int grow(struct buf *b, size_t need)
{
    if (b->err)
        return b->err;
    if (need > b->max) {
        b->err = KOPE_ERR_TOOBIG;
        return b->err;
    }
    if (need + 1 <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need + 1)
        ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
        b->err = KOPE_ERR_NOMEM;
        return b->err;
    }
    b->p = np;
    b->cap = ncap;
    return 0;
}

int buf_add(struct buf *b, const void *p, size_t n)
{
    int rc = grow(b, b->len + n);
    if (rc)
        return rc;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_addc(struct buf *b, char c)
{
    return buf_add(b, &c, 1);
}

int buf_adds(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return b->err = KOPE_ERR_INTERNAL;
    if ((size_t)n < sizeof small)
        return buf_add(b, small, (size_t)n);
    int rc = grow(b, b->len + (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
    if (!b->p) { /* nothing was added: an empty string, terminated */
        if (grow(b, 0))
            return NULL;
        b->p[0] = '\0';
    }
    char *p = b->p;
    if (len)
        *len = b->len;
    size_t max = b->max;
    buf_init(b, max);
    return p;
}

size_t buf_fence_open(struct buf *b, const char *text, size_t len, const char *lang)
{
    size_t run = 0, longest = 0;
    for (size_t i = 0; text && i < len; i++) {
        run = text[i] == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    size_t fence = longest < 3 ? 3 : longest + 1;
    for (size_t i = 0; i < fence; i++)
        buf_addc(b, '`');
    buf_adds(b, lang ? lang : "");
    buf_addc(b, '\n');
    return fence;
}

void buf_fence_close(struct buf *b, size_t fence)
{
    for (size_t i = 0; i < fence; i++)
        buf_addc(b, '`');
    buf_addc(b, '\n');
}

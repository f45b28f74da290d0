/*
 * core/buf.h - a growable byte buffer with a hard cap (curl's dynbuf idea):
 * anything filled from outside cannot grow without bound. Appends past the
 * cap, or a failed allocation, make the buffer sticky-failed: later appends
 * do nothing and buf_err() says why.
 */
#ifndef KOPE_BUF_H
#define KOPE_BUF_H

#include <stddef.h>

struct buf {
    char *p;     /* NUL-terminated while not failed */
    size_t len;
    size_t cap;  /* allocated */
    size_t max;  /* hard limit on len */
    int err;     /* 0, KOPE_ERR_TOOBIG or KOPE_ERR_NOMEM */
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
int buf_add(struct buf *b, const void *p, size_t n);
int buf_addc(struct buf *b, char c);
int buf_adds(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int buf_err(const struct buf *b) { return b->err; }
/* A fenced code block around untrusted text (a kernel's source: a comment
 * holding a line of three backticks would close a ``` fence and speak
 * outside it, as kope's own markdown): the fence is one backtick longer
 * than the longest run in text[0..len) and at least three. open writes the
 * fence, lang and a newline and returns the fence's length; close writes
 * that many backticks and a newline. */
size_t buf_fence_open(struct buf *b, const char *text, size_t len, const char *lang);
void buf_fence_close(struct buf *b, size_t fence);
/* Hand the bytes to the caller (free() them); the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *len);

#endif

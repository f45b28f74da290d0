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
/* Text quoted as data in a Markdown prompt: `text` (len bytes, any bytes)
 * between fences longer than its longest backtick run (at least 3), after
 * the fence the info string `lang` (may be ""), a newline before the closing
 * fence if text lacks one. Nothing inside can close the block, so a comment
 * in a hostile kernel cannot step out of it and speak as the prompt. */
int buf_code_block(struct buf *b, const char *lang, const char *text, size_t len);
/* Hand the bytes to the caller (free() them); the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *len);

#endif

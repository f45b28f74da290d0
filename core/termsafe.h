/*
 * core/termsafe.h - print stored text (a candidate's source, compiler text,
 * an LLM's or a peer's words) without letting it drive the terminal.
 *
 * Stored text keeps its bytes (records are content-hashed); only what kope
 * prints goes through here. C0 control bytes but \n and \t, DEL, and the C1
 * controls in their UTF-8 form (U+0080..U+009F, bytes C2 80..C2 9F) are
 * written as \xHH; a bare 0x80..0x9F byte (an 8-bit C1 to a Latin-1
 * terminal) is too. Everything else, valid UTF-8 included, passes.
 */
#ifndef KOPE_TERMSAFE_H
#define KOPE_TERMSAFE_H

#include <stddef.h>
#include <stdio.h>

/* Write s[0..len) to f escaped; 0 or -1 on a write error. */
int termsafe_fwrite(FILE *f, const char *s, size_t len);

/* termsafe_fwrite of a NUL-terminated string (NULL prints nothing). */
int termsafe_fputs(const char *s, FILE *f);

/* Open a memory stream for a printer whose output holds stored text; then
 * termsafe_flush writes what it got to out escaped and frees it. NULL when
 * out of memory (the caller prints nothing then). */
struct termsafe_buf {
    char *text;
    size_t len;
};
FILE *termsafe_open(struct termsafe_buf *b);
int termsafe_flush(FILE *mem, struct termsafe_buf *b, FILE *out);

/* The number of control sequences termsafe_fwrite would escape (0: s is safe as it is). */
size_t termsafe_count(const char *s, size_t len);

#endif /* KOPE_TERMSAFE_H */

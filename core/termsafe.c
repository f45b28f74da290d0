/*
 * core/termsafe.c - escape terminal control bytes on print (termsafe.h).
 */
#include "core/termsafe.h"

#include <stdlib.h>
#include <string.h>

/* Length of the control sequence at s (0: none): one C0/DEL/bare C1 byte, or
 * the two bytes of a UTF-8 encoded C1 control. A byte 0x80..0x9F after a
 * lead byte other than C2 is an ordinary continuation byte. */
static size_t ctl_len(const unsigned char *s, size_t left, int in_seq)
{
    unsigned char b = s[0];
    if (b == '\n' || b == '\t')
        return 0;
    if (b < 0x20 || b == 0x7f)
        return 1;
    if (b == 0xc2 && left >= 2 && s[1] >= 0x80 && s[1] <= 0x9f)
        return 2;
    if (b >= 0x80 && b <= 0x9f && !in_seq)
        return 1;
    return 0;
}

/* How many continuation bytes a UTF-8 lead byte b announces. */
static int utf8_follow(unsigned char b)
{
    return b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 ? (b < 0xf0 ? 2 : 0) : b >= 0xc0 ? 1 : 0;
}

static size_t walk(FILE *f, const char *str, size_t len, int *err)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n_esc = 0, i = 0;
    int follow = 0; /* continuation bytes still expected */
    while (i < len) {
        size_t c = ctl_len(s + i, len - i, follow > 0);
        if (c) {
            n_esc++;
            follow = 0;
            for (size_t j = 0; j < c; j++)
                if (f && fprintf(f, "\\x%02x", s[i + j]) < 0)
                    *err = -1;
            i += c;
            continue;
        }
        if (follow > 0 && (s[i] & 0xc0) == 0x80)
            follow--;
        else
            follow = utf8_follow(s[i]);
        if (f && fputc(s[i], f) == EOF)
            *err = -1;
        i++;
    }
    return n_esc;
}

int termsafe_fwrite(FILE *f, const char *s, size_t len)
{
    int err = 0;
    if (s)
        walk(f, s, len, &err);
    return err;
}

int termsafe_fputs(const char *s, FILE *f)
{
    return termsafe_fwrite(f, s, s ? strlen(s) : 0);
}

size_t termsafe_count(const char *s, size_t len)
{
    int err = 0;
    return s ? walk(NULL, s, len, &err) : 0;
}

FILE *termsafe_open(struct termsafe_buf *b)
{
    b->text = NULL;
    b->len = 0;
    return open_memstream(&b->text, &b->len);
}

int termsafe_flush(FILE *mem, struct termsafe_buf *b, FILE *out)
{
    int rc = fclose(mem) == 0 ? termsafe_fwrite(out, b->text, b->len) : -1;
    free(b->text);
    b->text = NULL;
    b->len = 0;
    return rc;
}

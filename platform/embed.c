/*
 * platform/embed.c - the files compiled into kope (platform/embed.h), kept
 * compressed in the binary and unpacked once, on first use, into one heap
 * buffer that lives as long as the process (it stands in for static data:
 * never freed, and the table's data pointers point into it).
 *
 * The generated half (build/ARCH/gen/embed.c, written by cross/embedz.c)
 * holds the packed bytes, the unpacked length, and per file its name,
 * length and offset. The format, LZ77 with byte-aligned ops:
 *   0x00..0x7f  L   then L+1 literal bytes
 *   0x80..0xff  M   then d (2 bytes, little-endian): copy (M-0x80)+4 bytes
 *                   from d bytes back in the output (may overlap, d >= 1)
 * The blob is kope's own, but the decoder still checks every bound: a
 * stream that reads past its end, reaches before the start or writes past
 * the unpacked length is refused, and then every lookup finds nothing.
 * Thread-safe: the unpacking runs under pthread_once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "platform/embed.h"

/* cross/embedz.c's output */
extern const unsigned char embed_packed[];
extern const size_t embed_packed_len, embed_unpacked_len;
extern struct embed_file embed_files[];
extern const size_t embed_offsets[];
extern const size_t embed_n_files;

int embed_unpack(const unsigned char *in, size_t in_len, unsigned char *out, size_t out_len)
{
    size_t i = 0, o = 0;
    while (i < in_len) {
        unsigned op = in[i++];
        if (op < 0x80) {
            size_t n = op + 1u;
            if (n > in_len - i || n > out_len - o)
                return -1;
            memcpy(out + o, in + i, n);
            i += n;
            o += n;
        } else {
            size_t n = (op & 0x7fu) + 4u;
            if (in_len - i < 2)
                return -1;
            size_t d = (size_t)in[i] | (size_t)in[i + 1] << 8;
            i += 2;
            if (d == 0 || d > o || n > out_len - o)
                return -1;
            for (size_t k = 0; k < n; k++, o++) /* byte by byte: the copy may overlap */
                out[o] = out[o - d];
        }
    }
    return o == out_len ? 0 : -1;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int unpacked; /* 1 when the table's data pointers are set */

static void unpack_all(void)
{
    unsigned char *buf = malloc(embed_unpacked_len);
    if (!buf || embed_unpack(embed_packed, embed_packed_len, buf, embed_unpacked_len) != 0) {
        free(buf); /* out of memory (or a broken build): every file is missing */
        return;
    }
    for (size_t k = 0; k < embed_n_files; k++) {
        /* each file is followed by its NUL in the stream (embedz.c) */
        if (embed_offsets[k] + embed_files[k].len >= embed_unpacked_len ||
            buf[embed_offsets[k] + embed_files[k].len] != '\0') {
            free(buf);
            return;
        }
    }
    for (size_t k = 0; k < embed_n_files; k++)
        embed_files[k].data = (const char *)buf + embed_offsets[k];
    unpacked = 1;
}

static int ready(void)
{
    pthread_once(&once, unpack_all);
    return unpacked;
}

const struct embed_file *embed_find(const char *name)
{
    if (!ready())
        return NULL;
    for (size_t k = 0; k < embed_n_files; k++)
        if (strcmp(embed_files[k].name, name) == 0)
            return &embed_files[k];
    return NULL;
}

const struct embed_file *embed_at(size_t k)
{
    return ready() && k < embed_n_files ? &embed_files[k] : NULL;
}

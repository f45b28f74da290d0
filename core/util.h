/*
 * core/util.h - small helpers shared by core files: capped file reading,
 * hex encoding, monotonic time.
 */
#ifndef KOPE_UTIL_H
#define KOPE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Read a whole file of at most max bytes into a NUL-terminated heap buffer
 * (*out, owned by the caller). Returns KOPE_ERR_IO / KOPE_ERR_TOOBIG /
 * KOPE_ERR_NOMEM with a message naming the file in err. */
int util_read_file(const char *path, size_t max, char **out, size_t *len, char *err, size_t err_len);

/* Lower-case hex of n bytes into out (2n+1 bytes). */
void util_hex(const uint8_t *in, size_t n, char *out);
/* Parse exactly 2n hex characters; returns 0 or KOPE_ERR_PARSE. */
int util_unhex(const char *hex, uint8_t *out, size_t n);

/* Monotonic time in nanoseconds. */
uint64_t util_now_ns(void);

/* A Markdown fence (or code span) length for quoting s as data: longer than
 * its longest run of backticks, at least min; the text cannot close it. */
size_t util_fence_len(const char *s, size_t min);

#endif

/*
 * core/graph/spill.c - entries in memory, then in an unlinked temp file. See spill.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/graph/spill.h"

void spill_init(struct spill *s, size_t mem_max, uint64_t total_max)
{
    memset(s, 0, sizeof *s);
    buf_init(&s->mem, mem_max);
    s->total_max = total_max;
}

void spill_free(struct spill *s)
{
    buf_free(&s->mem);
    if (s->f)
        fclose(s->f);
    s->f = NULL;
}

void spill_reset(struct spill *s)
{
    buf_reset(&s->mem);
    if (s->f && (fflush(s->f) != 0 || ftruncate(fileno(s->f), 0) != 0 || fseek(s->f, 0, SEEK_SET) != 0)) {
        fclose(s->f); /* a file we cannot truncate is dropped; the next spill makes another */
        s->f = NULL;
    }
    s->total = 0;
    s->n = 0;
    s->err = 0;
}

static FILE *spill_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/kope-spill.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    FILE *f = fdopen(fd, "w+b");
    if (!f)
        close(fd);
    return f;
}

int spill_add(struct spill *s, const void *p, size_t len)
{
    uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    if (s->err)
        return s->err;
    if (len > UINT32_MAX || s->total + 4 + len > s->total_max)
        return s->err = KOPE_ERR_TOOBIG;
    if (s->mem.len + 4 + len > s->mem.max) {
        /* memory is full: move what it holds to the file, and write entries
         * too large for memory straight there */
        if (!s->f && !(s->f = spill_file()))
            return s->err = KOPE_ERR_IO;
        if (fwrite(s->mem.p ? s->mem.p : "", 1, s->mem.len, s->f) != s->mem.len)
            return s->err = KOPE_ERR_IO;
        buf_reset(&s->mem);
        if (4 + len > s->mem.max) {
            if (fwrite(hdr, 1, 4, s->f) != 4 || fwrite(p, 1, len, s->f) != len)
                return s->err = KOPE_ERR_IO;
            s->total += 4 + len;
            s->n++;
            return 0;
        }
    }
    if (buf_add(&s->mem, hdr, 4) || buf_add(&s->mem, p, len))
        return s->err = buf_err(&s->mem) ? buf_err(&s->mem) : KOPE_ERR_NOMEM;
    s->total += 4 + len;
    s->n++;
    return 0;
}

static size_t be32(const uint8_t *h)
{
    return (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
}

int spill_each(struct spill *s, int (*cb)(void *ctx, const uint8_t *p, size_t len), void *ctx)
{
    int rc = 0;
    if (s->err)
        return s->err;
    if (s->f) {
        uint8_t hdr[4], *e = NULL;
        size_t cap = 0;
        if (fflush(s->f) != 0 || fseek(s->f, 0, SEEK_SET) != 0)
            return KOPE_ERR_IO;
        while (!rc && fread(hdr, 1, 4, s->f) == 4) {
            size_t len = be32(hdr);
            if (len + 1 > cap) {
                uint8_t *ne = realloc(e, len + 1);
                if (!ne) {
                    rc = KOPE_ERR_NOMEM;
                    break;
                }
                e = ne;
                cap = len + 1;
            }
            if (fread(e, 1, len, s->f) != len) {
                rc = KOPE_ERR_IO;
                break;
            }
            rc = cb(ctx, e, len);
        }
        free(e);
        if (!rc && ferror(s->f))
            rc = KOPE_ERR_IO;
        if (fseek(s->f, 0, SEEK_END) != 0 && !rc) /* later adds append */
            rc = KOPE_ERR_IO;
    }
    for (size_t off = 0; !rc && off + 4 <= s->mem.len;) {
        size_t len = be32((const uint8_t *)s->mem.p + off);
        rc = cb(ctx, (const uint8_t *)s->mem.p + off + 4, len);
        off += 4 + len;
    }
    return rc;
}

/*
 * core/arena.c - the per-iteration bump allocator (core/arena.h).
 */
#include "core/arena.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *next;
    size_t size, off;         /* bytes of data, bytes used */
    max_align_t data[];       /* aligned for any type */
};

#define ALIGN (sizeof(max_align_t))

void arena_init(struct arena *a, size_t max)
{
    memset(a, 0, sizeof *a);
    a->max = max;
}

void *arena_alloc(struct arena *a, size_t n)
{
    size_t need = (n + ALIGN - 1) / ALIGN * ALIGN;
    if (need < n || (a->max && (need > a->max || a->used > a->max - need)))
        return NULL;
    if (need == 0)
        need = ALIGN;
    struct arena_block *b = a->head;
    if (!b || b->size - b->off < need) {
        size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
        if (size > (size_t)-1 - sizeof *b)
            return NULL;
        b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->size = size;
        b->off = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->off;
    b->off += need;
    a->used += need;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    if (n == (size_t)-1)
        return NULL;
    char *p = arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void arena_reset(struct arena *a)
{
    /* keep the oldest block (the usual size of one iteration) */
    struct arena_block *b = a->head, *keep = NULL;
    while (b) {
        struct arena_block *next = b->next;
        if (!next)
            keep = b;
        else
            free(b);
        b = next;
    }
    if (keep)
        keep->off = 0;
    a->head = keep;
    a->used = 0;
}

void arena_free(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}

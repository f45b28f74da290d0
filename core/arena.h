/*
 * core/arena.h - a bump allocator for what lives exactly one trial of the
 * loop (core/agent/agent.c run_task): the proposers' candidate sources, the
 * tuner's view of the history, ... are taken from the run's arena and all
 * freed at once when the iteration ends (arena_reset), so no proposer keeps
 * a "valid until my next call" buffer and nothing of one iteration can leak
 * into the next.
 *
 * Blocks are malloc'd on demand (ARENA_BLOCK bytes, or one block of the
 * request's size when it is bigger); reset keeps the first block for the
 * next iteration and frees the rest. A hard cap (max bytes in use) bounds
 * what one iteration may take: past it arena_alloc returns NULL, as on
 * out-of-memory. Every pointer is aligned for any type (max_align_t).
 */
#ifndef KOPE_ARENA_H
#define KOPE_ARENA_H

#include <stddef.h>

#ifndef ARENA_BLOCK
#define ARENA_BLOCK (64 * 1024)
#endif

struct arena_block;
struct arena {
    struct arena_block *head; /* newest block first */
    size_t used;              /* bytes handed out since the last reset */
    size_t max;               /* cap on used; 0 = none */
};

/* An empty arena with cap max bytes per iteration (0 = none). Cannot fail. */
void arena_init(struct arena *a, size_t max);
/* n zeroed bytes valid until the next reset or free; NULL when out of
 * memory or past the cap. n = 0 gives a valid unique pointer. */
void *arena_alloc(struct arena *a, size_t n);
/* A NUL-terminated copy of n bytes of s; NULL as arena_alloc. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* Free everything handed out (keeps one block for reuse). */
void arena_reset(struct arena *a);
/* Free all blocks; the arena is empty (arena_init state) after. */
void arena_free(struct arena *a);

#endif

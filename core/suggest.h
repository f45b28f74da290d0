/*
 * core/suggest.h - "did you mean ...?": the known word nearest to a typo.
 *
 * Used wherever kope refuses a name it does not know (a command, a task
 * name, a key of the config or of a suite file) so that the refusal can
 * name what the user probably meant. Distance is the optimal string
 * alignment distance (insert, delete, substitute, or swap two neighbours:
 * "grpah" -> "graph" is one edit), compared byte by byte, case-sensitive.
 *
 *   struct suggest s;
 *   suggest_init(&s, typed);
 *   for each known name: suggest_add(&s, name);
 *   const char *near = suggest_best(&s);   // NULL: nothing close enough
 *
 * The struct borrows every string; nothing is allocated.
 */
#ifndef KOPE_SUGGEST_H
#define KOPE_SUGGEST_H

#include <stddef.h>

/* Words longer than this are compared by their first SUGGEST_MAX_LEN bytes. */
#ifndef SUGGEST_MAX_LEN
#define SUGGEST_MAX_LEN 64
#endif

struct suggest {
    const char *word; /* what was typed (borrowed) */
    const char *best; /* nearest candidate so far (borrowed), or NULL */
    int dist;         /* its distance */
};

/* Start a search for candidates near word. Cannot fail. */
void suggest_init(struct suggest *s, const char *word);
/* Offer one candidate; the first of equally near ones is kept. */
void suggest_add(struct suggest *s, const char *cand);
/* The nearest candidate if it is near enough to be a typo of word: at most
 * 1 edit for words of up to 4 bytes, 2 up to 8, 3 beyond, and never as many
 * edits as half the word's length rounded up (so "ab" suggests nothing for
 * "xy"); NULL otherwise, and NULL for an exact match. */
const char *suggest_best(const struct suggest *s);

/* Edit distance between a and b (each cut at SUGGEST_MAX_LEN bytes). */
int suggest_distance(const char *a, const char *b);

#endif

/*
 * core/suggest.c - the nearest known word to a typo (see suggest.h).
 *
 * Optimal string alignment distance over two rows plus the one before
 * (the swap of neighbours looks two rows back), on the stack: names are
 * short and capped at SUGGEST_MAX_LEN.
 */
#include <string.h>

#include "core/suggest.h"

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

int suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > SUGGEST_MAX_LEN)
        la = SUGGEST_MAX_LEN;
    if (lb > SUGGEST_MAX_LEN)
        lb = SUGGEST_MAX_LEN;
    int rows[3][SUGGEST_MAX_LEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

void suggest_init(struct suggest *s, const char *word)
{
    s->word = word ? word : "";
    s->best = NULL;
    s->dist = 0;
}

void suggest_add(struct suggest *s, const char *cand)
{
    if (!cand || !*cand)
        return;
    int d = suggest_distance(s->word, cand);
    if (!s->best || d < s->dist) {
        s->best = cand;
        s->dist = d;
    }
}

const char *suggest_best(const struct suggest *s)
{
    size_t n = strlen(s->word);
    int cap = n <= 4 ? 1 : n <= 8 ? 2 : 3;
    if (!s->best || s->dist == 0 || s->dist > cap || (size_t)s->dist * 2 >= n + 1)
        return NULL;
    return s->best;
}

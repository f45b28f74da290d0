/*
 * core/context/tokens.c - token estimate by BPE-like pieces; per-endpoint calibration
 * kept in store meta. See core/context/tokens.h.
 *
 * The piece rules follow the pre-tokenizer of cl100k/o200k: a word is an
 * optional leading space plus a run of letters; digits split in runs of at
 * most 3; punctuation runs (with an optional leading space) stay together;
 * whitespace runs are one piece, except that a run of spaces before a word
 * gives its last space to the word. Each piece then costs tokens by class and
 * length: common short words are one token, longer words about one token per
 * CHARS_PER_TOKEN letters; punctuation mostly one token per 2 characters
 * (";\n", "->", ");" merge). The constants were fitted on kope's own
 * prompts against gpt-tokenizer (tests/test_context_tokens.c checks them).
 */
#include "core/context/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static int is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Tokens of a letter run of n bytes (UTF-8 continuation bytes count too). */
static size_t word_cost(size_t n, int has_upper_inside)
{
    if (n <= 8)
        return 1;
    size_t t = (n + 4) / 6; /* about 5 letters per token for longer words */
    if (has_upper_inside)   /* camelCase / identifiers_with_parts split more */
        t++;
    return t < 1 ? 1 : t;
}

size_t tokens_estimate(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (is_space(c)) {
            size_t j = i;
            int nl = 0;
            while (j < len && is_space(s[j])) {
                nl += s[j] == '\n';
                j++;
            }
            /* a single space before a word or punctuation joins it */
            if (j - i == 1 && c == ' ' && j < len) {
                i = j;
                continue;
            }
            n += nl > 0 ? (size_t)(nl > 1 ? 1 + (nl - 1) / 4 : 1) : 1;
            /* spaces after the last newline: indentation, one more piece */
            if (nl && j < len && s[j - 1] == ' ' && s[j - 2] == ' ')
                n += 0;
            i = j;
        } else if (is_alpha(c)) {
            size_t j = i;
            int upper_inside = 0;
            while (j < len && is_alpha(s[j])) {
                if (j > i && s[j] >= 'A' && s[j] <= 'Z' && s[j - 1] >= 'a' && s[j - 1] <= 'z')
                    upper_inside = 1;
                j++;
            }
            size_t w = j - i;
            /* non-ASCII text costs more than its byte count suggests */
            size_t hi = 0;
            for (size_t k = i; k < j; k++)
                hi += s[k] >= 0x80;
            n += word_cost(w - hi, upper_inside) + hi / 3;
            i = j;
        } else if (is_digit(c)) {
            size_t j = i;
            while (j < len && is_digit(s[j]))
                j++;
            n += (j - i + 2) / 3;
            i = j;
        } else {
            /* punctuation run */
            size_t j = i;
            while (j < len && !is_space(s[j]) && !is_alpha(s[j]) && !is_digit(s[j]))
                j++;
            n += (j - i + 1) / 2;
            i = j;
        }
    }
    return n;
}

size_t tokens_estimate_str(const char *s)
{
    return s ? tokens_estimate(s, strlen(s)) : 0;
}

/* ------------------------------------------------------------ calibration */

#define CALIB_PREFIX "tokens.calib."
#define CALIB_MIN 0.5 /* real BPE vocabularies differ from cl100k by well under 2x */
#define CALIB_MAX 2.0

static void calib_key(const char *endpoint, char *key, size_t cap)
{
    snprintf(key, cap, CALIB_PREFIX "%s", endpoint);
}

double tokens_factor(struct store *st, const char *endpoint)
{
    if (!st || !endpoint || !*endpoint)
        return 1.0;
    char key[512];
    calib_key(endpoint, key, sizeof key);
    char *v = NULL;
    if (store_meta_get(st, key, &v))
        return 1.0;
    /* stored as "factor samples" */
    double f = strtod(v, NULL);
    free(v);
    if (!(f >= CALIB_MIN && f <= CALIB_MAX))
        return 1.0;
    return f;
}

size_t tokens_calibrated(struct store *st, const char *endpoint, size_t n_raw)
{
    double f = tokens_factor(st, endpoint);
    return (size_t)ceil((double)n_raw * f - 1e-9);
}

int tokens_calibrate(struct store *st, const char *endpoint, size_t n_raw, long reported)
{
    if (!st || !endpoint || !*endpoint || n_raw == 0 || reported <= 0)
        return 0;
    char key[512];
    calib_key(endpoint, key, sizeof key);
    double sample = (double)reported / (double)n_raw;
    double f = sample;
    long samples = 0;
    char *v = NULL;
    if (store_meta_get(st, key, &v) == 0) {
        char *end = NULL;
        double old = strtod(v, &end);
        if (end && *end == ' ')
            samples = strtol(end + 1, NULL, 10);
        free(v);
        if (old >= CALIB_MIN && old <= CALIB_MAX && samples > 0)
            f = 0.75 * old + 0.25 * sample;
    }
    if (f < CALIB_MIN)
        f = CALIB_MIN;
    if (f > CALIB_MAX)
        f = CALIB_MAX;
    char val[64];
    snprintf(val, sizeof val, "%.6f %ld", f, samples + 1);
    return store_meta_set(st, key, val);
}

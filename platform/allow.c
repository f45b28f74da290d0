/*
 * platform/allow.c - the source allow-lists (directives, pragmas, attribute
 * names) and their checks; see allow.h. Pure functions over text: no state,
 * no allocation.
 *
 * A pragma is matched token by token against a small grammar: words,
 * decimal numbers and the punctuators ( ) , only. Anything else in the text
 * (a string, an operator, a non-ASCII byte) fails the match, so `comment(lib,
 * "x")`, `clang section text=".init"` or `GCC optimize("O0")` are refused
 * without being named here.
 */
#include <ctype.h>
#include <string.h>

#include "platform/allow.h"

const char *const allow_directives[] = {ALLOW_DIRECTIVES(ALLOW_ELEM_)};
const char *const allow_pragmas[] = {ALLOW_PRAGMAS(ALLOW_ELEM_)};
const char *const allow_attributes[] = {ALLOW_ATTRIBUTES(ALLOW_ELEM_)};
const char *const allow_attribute_namespaces[] = {ALLOW_ATTRIBUTE_NAMESPACES(ALLOW_ELEM_)};
const size_t allow_n_directives = sizeof allow_directives / sizeof allow_directives[0];
const size_t allow_n_pragmas = sizeof allow_pragmas / sizeof allow_pragmas[0];
const size_t allow_n_attributes = sizeof allow_attributes / sizeof allow_attributes[0];
const size_t allow_n_attribute_namespaces =
    sizeof allow_attribute_namespaces / sizeof allow_attribute_namespaces[0];

int allow_directive(const char *name, size_t len)
{
    for (size_t i = 0; i < allow_n_directives; i++)
        if (strlen(allow_directives[i]) == len && memcmp(allow_directives[i], name, len) == 0)
            return 1;
    return 0;
}

int allow_reserved_name(const char *name, size_t len)
{
    return len >= 2 && name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1]));
}

/* ------------------------------------------------------------ pragmas --- */

#define PT_MAX 32 /* tokens in one pragma: more is refused */

struct ptok {
    const char *s;
    size_t n;
    char kind; /* 'w' word, 'n' number, or the punctuator itself */
};

/* Split text into at most PT_MAX tokens; -1 on a byte no allowed pragma has. */
static int ptok_split(const char *t, size_t len, struct ptok *out)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)t[i];
        if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r' || c == '\n') {
            i++;
            continue;
        }
        if (n == PT_MAX)
            return -1;
        size_t j = i;
        char kind;
        if (isalpha(c) || c == '_') {
            while (j < len && (isalnum((unsigned char)t[j]) || t[j] == '_'))
                j++;
            kind = 'w';
        } else if (isdigit(c)) {
            while (j < len && isdigit((unsigned char)t[j]))
                j++;
            if (j < len && (isalpha((unsigned char)t[j]) || t[j] == '_' || t[j] == '.'))
                return -1; /* 4u, 0x10, 1.5: only plain decimals */
            kind = 'n';
        } else if (c == '(' || c == ')' || c == ',') {
            j = i + 1;
            kind = (char)c;
        } else {
            return -1;
        }
        out[n++] = (struct ptok){t + i, j - i, kind};
        i = j;
    }
    return n;
}

static int is_w(const struct ptok *p, const char *w)
{
    return p->kind == 'w' && strlen(w) == p->n && memcmp(p->s, w, p->n) == 0;
}

/* A decimal count a loop pragma takes: 0..65535, no leading zeros games. */
static int is_count(const struct ptok *p)
{
    return p->kind == 'n' && p->n <= 5 && !(p->n > 1 && p->s[0] == '0');
}

/* Is word p one of the '|'-separated words in set? */
static int is_one_of(const struct ptok *p, const char *set)
{
    if (p->kind != 'w')
        return 0;
    for (const char *s = set; *s;) {
        const char *e = strchr(s, '|');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == p->n && memcmp(s, p->s, l) == 0)
            return 1;
        s = e ? e + 1 : s + l;
    }
    return 0;
}

/* One `clang loop` option at p[*i]: NAME ( ARG ). */
static int clang_loop_opt(const struct ptok *p, int n, int *i)
{
    static const struct {
        const char *name, *words; /* words: the allowed word arguments */
        int count;                /* a decimal count is allowed */
    } opts[] = {
        {"vectorize", "enable|disable|assume_safety", 0},
        {"interleave", "enable|disable|assume_safety", 0},
        {"unroll", "enable|disable|full", 0},
        {"vectorize_width", "fixed|scalable", 1},
        {"vectorize_predicate", "enable|disable", 0},
        {"interleave_count", "", 1},
        {"unroll_count", "", 1},
        {"distribute", "enable|disable", 0},
        {"pipeline", "disable", 0},
        {"pipeline_initiation_interval", "", 1},
    };
    int k = *i;
    if (k + 1 >= n || p[k].kind != 'w' || p[k + 1].kind != '(')
        return 0;
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        if (!is_w(&p[k], opts[o].name))
            continue;
        k += 2;
        if (k < n && ((opts[o].count && is_count(&p[k])) || is_one_of(&p[k], opts[o].words)))
            k++;
        else
            return 0;
        /* vectorize_width(N, fixed|scalable) */
        if (opts[o].count && opts[o].words[0] && k + 1 < n && p[k].kind == ',' &&
            is_count(&p[k - 1]) && is_one_of(&p[k + 1], opts[o].words))
            k += 2;
        if (k >= n || p[k].kind != ')')
            return 0;
        *i = k + 1;
        return 1;
    }
    return 0;
}

int allow_pragma(const char *text, size_t len)
{
    struct ptok p[PT_MAX];
    int n = ptok_split(text, len, p);
    if (n < 1)
        return 0;
    if (is_w(&p[0], "GCC") && n >= 2) {
        if (is_w(&p[1], "unroll"))
            return n == 3 && is_count(&p[2]);
        if (is_w(&p[1], "ivdep") || is_w(&p[1], "novector"))
            return n == 2;
        return 0;
    }
    if (is_w(&p[0], "unroll"))
        return n == 1 || (n == 2 && is_count(&p[1])) ||
               (n == 4 && p[1].kind == '(' && is_count(&p[2]) && p[3].kind == ')');
    if (is_w(&p[0], "nounroll"))
        return n == 1;
    if (is_w(&p[0], "STDC"))
        return n == 3 && is_w(&p[1], "FP_CONTRACT") && is_one_of(&p[2], "ON|OFF|DEFAULT");
    if (is_w(&p[0], "clang") && n >= 3 && is_w(&p[1], "loop")) {
        int i = 2;
        while (i < n)
            if (!clang_loop_opt(p, n, &i))
                return 0;
        return 1;
    }
    if (is_w(&p[0], "clang") && n == 6 && is_w(&p[1], "fp") && p[3].kind == '(' &&
        p[5].kind == ')')
        return (is_w(&p[2], "contract") && is_one_of(&p[4], "on|off|fast")) ||
               (is_w(&p[2], "reassociate") && is_one_of(&p[4], "on|off"));
    return 0;
}

/* --------------------------------------------------------- attributes --- */

int allow_attribute(const char *ns, const char *name)
{
    if (ns && *ns) {
        size_t i = 0;
        while (i < allow_n_attribute_namespaces && strcmp(ns, allow_attribute_namespaces[i]) != 0)
            i++;
        if (i == allow_n_attribute_namespaces)
            return 0;
    }
    size_t n = strlen(name);
    if (n > 4 && name[0] == '_' && name[1] == '_' && name[n - 1] == '_' && name[n - 2] == '_') {
        name += 2;
        n -= 4;
    }
    for (size_t i = 0; i < allow_n_attributes; i++)
        if (strlen(allow_attributes[i]) == n && memcmp(allow_attributes[i], name, n) == 0)
            return 1;
    return 0;
}

/* Code point ranges allowed past ASCII (allow.h); inclusive, sorted. */
static const unsigned long text_ranges[][2] = {
    {0x00A0, 0x00AC}, {0x00AE, 0x024F}, /* Latin-1 and Latin Extended, less U+00AD soft hyphen */
    {0x0370, 0x03FF}, {0x0400, 0x04FF}, /* Greek, Cyrillic */
    {0x2010, 0x2027}, {0x2030, 0x205E}, /* punctuation, less U+2028/2029 and U+200B-200F, 202A-202F */
    {0x2070, 0x209F}, {0x20A0, 0x20CF}, /* super/subscripts, currency */
    {0x2100, 0x214F}, {0x2150, 0x218F}, /* letterlike, number forms */
    {0x2190, 0x21FF}, {0x2200, 0x22FF}, /* arrows, mathematical operators */
    {0x2300, 0x23FF}, {0x2460, 0x24FF}, /* technical, enclosed alphanumerics */
    {0x2500, 0x257F}, {0x2580, 0x25FF}, /* box drawing, blocks and shapes */
    {0x2600, 0x26FF}, {0x2700, 0x27BF}, /* symbols, dingbats */
    {0x27C0, 0x27EF}, {0x2980, 0x2AFF}, /* more mathematical symbols */
    {0x3000, 0x303F}, {0x3040, 0x30FF}, /* CJK punctuation, kana */
    {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, /* CJK ideographs, Hangul syllables */
    {0xFF01, 0xFF60},                   /* fullwidth forms */
};

size_t allow_text_char(const unsigned char *s, size_t n, unsigned long *cp)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    *cp = c;
    if (c < 0x80)
        return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r' || c == '\f' ? 1 : 0;
    size_t k = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (!k || k > n || (c >= 0xF5))
        return 0;
    unsigned long v = c & (k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    /* overlong forms, surrogates, past U+10FFFF */
    if ((k == 3 && v < 0x800) || (k == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    for (size_t i = 0; i < sizeof text_ranges / sizeof text_ranges[0]; i++)
        if (v >= text_ranges[i][0] && v <= text_ranges[i][1])
            return k;
    return 0;
}

size_t allow_text_scan(const char *s, size_t n, unsigned long *cp)
{
    size_t i = 0;
    *cp = 0;
    while (i < n) {
        size_t k = allow_text_char((const unsigned char *)s + i, n - i, cp);
        if (!k)
            return i;
        i += k;
    }
    return n;
}

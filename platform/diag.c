/*
 * platform/diag.c - the one cleaner of compiler and linker output (the rule
 * and its reasons are in diag.h). A line is kept only when it matches one
 * of a few shapes; a kept diagnostic's excerpt lines are kept until the
 * first line of any other shape.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "platform/diag.h"

/* "  7 | code", "    | ^~~", "      |   ;": clang's and gcc's excerpts */
static int is_excerpt(const char *l, size_t len)
{
    size_t i = 0;
    while (i < len && l[i] == ' ')
        i++;
    while (i < len && isdigit((unsigned char)l[i]))
        i++;
    while (i < len && l[i] == ' ')
        i++;
    return i < len && l[i] == '|';
}

/* "1 error generated.", "2 warnings and 1 error generated.", gcc's
 * "compilation terminated." */
static int is_summary(const char *l, size_t len)
{
    if (len == 23 && memcmp(l, "compilation terminated.", 23) == 0)
        return 1;
    size_t i = 0;
    for (int part = 0; part < 2; part++) {
        size_t d = i;
        while (i < len && isdigit((unsigned char)l[i]))
            i++;
        if (i == d)
            return 0;
        static const char *const words[] = {" errors", " error", " warnings", " warning"};
        size_t w = 0;
        for (size_t k = 0; k < 4 && !w; k++) {
            size_t wl = strlen(words[k]);
            if (i + wl <= len && memcmp(l + i, words[k], wl) == 0)
                w = wl;
        }
        if (!w)
            return 0;
        i += w;
        if (i + 5 <= len && memcmp(l + i, " and ", 5) == 0 && part == 0) {
            i += 5;
            continue;
        }
        break;
    }
    return len - i == 11 && memcmp(l + i, " generated.", 11) == 0;
}

/* Append line[0..len) to out at *n, with every "DIR/" of the candidate's
 * directory and its parent cut; then a newline. 0, or -1 when full. */
static int put_line(char *out, size_t out_len, size_t *n, const char *line, size_t len,
                    const char *dir, size_t dl, const char *parent, size_t pl)
{
    for (size_t i = 0; i < len;) {
        if (dl && i + dl <= len && memcmp(line + i, dir, dl) == 0) {
            i += dl;
            continue;
        }
        if (pl && i + pl <= len && memcmp(line + i, parent, pl) == 0) {
            i += pl;
            continue;
        }
        if (*n + 2 >= out_len)
            return -1;
        out[(*n)++] = line[i++];
    }
    if (*n + 1 >= out_len)
        return -1;
    out[(*n)++] = '\n';
    out[*n] = '\0';
    return 0;
}

size_t plat_diag_clean(const char *in, const char *cand_path, char *out, size_t out_len)
{
    if (out_len == 0)
        return 0;
    out[0] = '\0';
    size_t n = 0, cl = strlen(cand_path);
    /* "DIR/" and "PARENT/" of the candidate, cut from kept lines */
    char dir[1024] = "", parent[1024] = "";
    const char *slash = strrchr(cand_path, '/');
    if (slash && (size_t)(slash - cand_path) + 1 < sizeof dir) {
        memcpy(dir, cand_path, (size_t)(slash - cand_path) + 1);
        dir[slash - cand_path + 1] = '\0';
        memcpy(parent, dir, sizeof parent);
        parent[strlen(parent) - 1] = '\0';
        char *ps = strrchr(parent, '/');
        if (ps && ps != parent)
            ps[1] = '\0';
        else
            parent[0] = '\0';
    }
    size_t dl = strlen(dir), pl = strlen(parent);
    int keep = 0; /* inside a kept diagnostic: its excerpt lines follow */
    for (const char *l = in; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *line = l;
        l = e ? e + 1 : l + len;
        int take = 0;
        if (cl && len > cl && memcmp(line, cand_path, cl) == 0 && line[cl] == ':') {
            const char *r = line + cl + 1;
            size_t rl = len - cl - 1;
            if (rl > 0 && isdigit((unsigned char)r[0])) {
                take = keep = 1; /* PATH:LINE[:COL]: ... */
            } else if ((rl >= 4 && memcmp(r, " In ", 4) == 0) ||
                       (rl >= 14 && memcmp(r, " At top level:", 14) == 0)) {
                take = 1; /* gcc's context line */
                keep = 0;
            } else {
                keep = 0;
            }
        } else if (keep && is_excerpt(line, len)) {
            take = 1;
        } else if (is_summary(line, len)) {
            take = 1;
            keep = 0;
        } else {
            keep = 0;
        }
        if (take && put_line(out, out_len, &n, line, len, dir, dl, parent, pl) != 0)
            break;
    }
    return n;
}

/* Copy the identifier at s (C identifier characters and '.', '$', '@'),
 * at most cap-1 of them; returns its length. */
static size_t ident_at(const char *s, char *name, size_t cap)
{
    size_t i = 0;
    while (s[i] && i + 1 < cap &&
           (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '$' || s[i] == '@'))
        i++;
    memcpy(name, s, i);
    name[i] = '\0';
    return i;
}

void plat_diag_link(const char *in, char *out, size_t out_len)
{
    static const struct {
        const char *marker, *words;
        int named;
    } forms[] = {
        {"undefined symbol: ", "undefined symbol", 1},       /* lld */
        {"undefined reference to `", "undefined symbol", 1}, /* GNU ld */
        {"duplicate symbol: ", "duplicate symbol", 1},       /* lld */
        {"multiple definition of `", "duplicate symbol", 1}, /* GNU ld */
        {"dependent library", "a dependent library", 0},
        {"out of range", "relocation out of range", 0},
        {"relocation truncated", "relocation out of range", 0},
    };
    for (size_t i = 0; in && i < sizeof forms / sizeof forms[0]; i++) {
        const char *m = strstr(in, forms[i].marker);
        if (!m)
            continue;
        char name[65] = "";
        if (forms[i].named)
            ident_at(m + strlen(forms[i].marker), name, sizeof name);
        snprintf(out, out_len, "link failed: %s%s%s", forms[i].words, name[0] ? " " : "", name);
        return;
    }
    snprintf(out, out_len, "link failed");
}

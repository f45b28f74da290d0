/*
 * core/jsonkeys.c - the key check of hand-written JSON files (jsonkeys.h).
 *
 * A walk over text that cJSON has already accepted: it tracks objects,
 * arrays and strings only, keeps two paths per position - the one matched
 * against the table ("tasks[].shape") and the one shown to the user
 * ("tasks[3].shape") - and stops at the first key or type the table does
 * not allow.
 */
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/jsonkeys.h"
#include "core/suggest.h"

struct scan {
    const char *file, *text;
    size_t len, pos;
    const struct jk_key *keys;
    size_t n;
    char *err;
    size_t err_len;
};

static const char *type_name(enum jk_type t)
{
    switch (t) {
    case JK_STR: return "a string";
    case JK_NUM: return "a number";
    case JK_OBJ: return "an object";
    case JK_ARR: return "an array";
    default: return "any value";
    }
}

/* Does pattern (with "*" segments) match path? */
static int key_match(const char *pat, const char *path)
{
    while (*pat && *path) {
        size_t pl = strcspn(pat, "."), xl = strcspn(path, ".");
        if (!(pl == 1 && pat[0] == '*') && (pl != xl || memcmp(pat, path, pl) != 0))
            return 0;
        pat += pl;
        path += xl;
        if ((*pat == '.') != (*path == '.'))
            return 0;
        pat += *pat == '.';
        path += *path == '.';
    }
    return !*pat && !*path;
}

static int key_find(const struct scan *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strchr(s->keys[i].path, '*') && strcmp(s->keys[i].path, path) == 0)
            return (int)i;
    for (size_t i = 0; i < s->n; i++)
        if (strchr(s->keys[i].path, '*') && key_match(s->keys[i].path, path))
            return (int)i;
    return -1;
}

/* The parent part of a dotted path ("" at the top) into out. */
static void parent_of(const char *path, char *out, size_t cap)
{
    const char *dot = strrchr(path, '.');
    snprintf(out, cap, "%.*s", dot ? (int)(dot - path) : 0, path);
}

/* The known keys next to an unknown one (same parent), for the hint
 * ("base_url, model, ..."), and the one nearest to its name. */
static void sibling_keys(const struct scan *s, const char *path, char *out, size_t cap, struct suggest *near)
{
    char parent[JSONKEYS_PATH_MAX];
    parent_of(path, parent, sizeof parent);
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n; i++) {
        const char *k = s->keys[i].path, *kd = strrchr(k, '.');
        char kparent[JSONKEYS_PATH_MAX];
        parent_of(k, kparent, sizeof kparent);
        if (!parent[0] != !kparent[0] || (parent[0] && !key_match(kparent, parent)))
            continue;
        const char *leaf = kd ? kd + 1 : k;
        if (strcmp(leaf, "*") == 0 || strstr(leaf, "[]"))
            continue;
        suggest_add(near, leaf);
        int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", leaf);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
}

void jsonkeys_where(const char *file, const char *text, size_t off, char *out, size_t cap)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(out, cap, "%s:%zu:%zu", file, line, col);
}

static void skip_ws(struct scan *s)
{
    while (s->pos < s->len && s->text[s->pos] && strchr(" \t\r\n", s->text[s->pos]))
        s->pos++;
}

/* At a '"': past the closing quote. Returns the raw contents' span. */
static void skip_string(struct scan *s, size_t *start, size_t *n)
{
    size_t b = ++s->pos;
    while (s->pos < s->len && s->text[s->pos] != '"')
        s->pos += s->text[s->pos] == '\\' ? 2 : 1;
    *start = b;
    *n = (s->pos < s->len ? s->pos : s->len) - b;
    s->pos++;
}

/* The byte at the walk's position, 0 past the end. */
static char at_pos(const struct scan *s)
{
    return s->pos < s->len ? s->text[s->pos] : '\0';
}

static void skip_value(struct scan *s)
{
    size_t a, b;
    int depth = 0;
    skip_ws(s);
    if (s->pos >= s->len)
        return;
    do {
        char ch = s->text[s->pos];
        if (ch == '"') {
            skip_string(s, &a, &b);
            continue;
        }
        if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']')
            depth--;
        else if (depth == 0 && (ch == ',' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'))
            return;
        s->pos++;
    } while (s->pos < s->len && depth > 0);
    /* a scalar: run to its end */
    while (depth == 0 && s->pos < s->len && !strchr(",}] \t\r\n", s->text[s->pos]))
        s->pos++;
}

static enum jk_type value_type(char ch)
{
    if (ch == '"')
        return JK_STR;
    if (ch == '{')
        return JK_OBJ;
    if (ch == '[')
        return JK_ARR;
    if (ch == '-' || (ch >= '0' && ch <= '9'))
        return JK_NUM;
    return JK_ANY; /* true, false, null */
}

static int too_deep(struct scan *s)
{
    char at[512];
    jsonkeys_where(s->file, s->text, s->pos, at, sizeof at);
    snprintf(s->err, s->err_len, "%s: nested deeper than %d levels", at, JSONKEYS_MAX_DEPTH);
    return KOPE_ERR_PARSE;
}

static int check_object(struct scan *s, const char *match, const char *shown, int depth);

/* The value at s->pos, known by entry k at match/shown. */
static int check_value(struct scan *s, int k, const char *match, const char *shown, int depth)
{
    char at[512];
    enum jk_type want = s->keys[k].type, got = value_type(at_pos(s));
    if (want != JK_ANY && got != want) {
        jsonkeys_where(s->file, s->text, s->pos, at, sizeof at);
        snprintf(s->err, s->err_len, "%s: \"%.200s\" must be %s", at, shown, type_name(want));
        return KOPE_ERR_PARSE;
    }
    if (want == JK_OBJ)
        return check_object(s, match, shown, depth + 1);
    char em[JSONKEYS_PATH_MAX];
    int w = snprintf(em, sizeof em, "%s[]", match);
    int ek = want == JK_ARR && w > 0 && (size_t)w < sizeof em ? key_find(s, em) : -1;
    if (ek < 0) {
        skip_value(s);
        return 0;
    }
    /* an array whose elements the table describes: check each */
    if (depth > JSONKEYS_MAX_DEPTH)
        return too_deep(s);
    s->pos++;
    for (int i = 0;; i++) {
        skip_ws(s);
        if (at_pos(s) == '\0' || at_pos(s) == ']') {
            s->pos++;
            return 0;
        }
        if (at_pos(s) == ',') {
            s->pos++;
            i--;
            continue;
        }
        char es[JSONKEYS_PATH_MAX];
        snprintf(es, sizeof es, "%s[%d]", shown, i);
        int rc = check_value(s, ek, em, es, depth + 1);
        if (rc)
            return rc;
    }
}

/* At a '{' of the object at match/shown (NULL: the root): check its keys. */
static int check_object(struct scan *s, const char *match, const char *shown, int depth)
{
    if (depth > JSONKEYS_MAX_DEPTH)
        return too_deep(s);
    s->pos++;
    for (;;) {
        skip_ws(s);
        if (at_pos(s) == '\0' || at_pos(s) == '}') {
            s->pos++;
            return 0;
        }
        if (at_pos(s) == ',') {
            s->pos++;
            continue;
        }
        if (at_pos(s) != '"')
            return 0; /* not JSON the walk understands: the parser has judged it */
        size_t key_off = s->pos, ks, kn;
        skip_string(s, &ks, &kn);
        skip_ws(s);
        s->pos++; /* ':' */
        skip_ws(s);
        char full[JSONKEYS_PATH_MAX], disp[JSONKEYS_PATH_MAX], at[512];
        int w = snprintf(full, sizeof full, "%s%s%.*s", match ? match : "", match ? "." : "", (int)kn,
                         s->text + ks);
        snprintf(disp, sizeof disp, "%s%s%.*s", shown ? shown : "", shown ? "." : "", (int)kn, s->text + ks);
        int k = w > 0 && (size_t)w < sizeof full ? key_find(s, full) : -1;
        if (k < 0) {
            char sib[512], name[SUGGEST_MAX_LEN + 1];
            struct suggest near;
            snprintf(name, sizeof name, "%.*s", (int)(kn < SUGGEST_MAX_LEN ? kn : SUGGEST_MAX_LEN), s->text + ks);
            suggest_init(&near, name);
            jsonkeys_where(s->file, s->text, key_off, at, sizeof at);
            sibling_keys(s, full, sib, sizeof sib, &near);
            const char *dym = suggest_best(&near);
            snprintf(s->err, s->err_len, "%s: unknown key \"%.200s\"%s%s%s\nhint: kope reads %s%s%s%s%s", at, disp,
                     dym ? " (did you mean \"" : "", dym ? dym : "", dym ? "\"?)" : "",
                     sib[0] ? "these keys" : "no keys", match ? " under " : " at the top", match ? match : "",
                     sib[0] ? ": " : "", sib);
            return KOPE_ERR_PARSE;
        }
        int rc = check_value(s, k, full, disp, depth);
        if (rc)
            return rc;
    }
}

int jsonkeys_check(const char *file, const char *text, size_t len, const struct jk_key *keys, size_t n,
                   char *err, size_t err_len)
{
    struct scan s = {file, text, len, 0, keys, n, err, err_len};
    skip_ws(&s);
    if (s.pos >= len || text[s.pos] != '{')
        return 0; /* not an object: the caller's parser says so */
    return check_object(&s, NULL, NULL, 1);
}

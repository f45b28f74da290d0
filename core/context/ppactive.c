/*
 * core/context/ppactive.c - a kernel source's active configuration (see
 * core/context/ppactive.h).
 *
 * One pass over logical lines (backslash continuations joined for directives,
 * physical lines copied out). A stack of conditional groups says whether the
 * current line is on; the macro table holds the object-like #defines seen on
 * lines that are on. Conditions are evaluated three-valued (true, false,
 * unknown): unknown keeps the group verbatim. Everything is capped: macro
 * count and length, nesting depth, expansion depth.
 */
#include "core/context/ppactive.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

#define PP_MACROS_MAX 256
#define PP_NAME_MAX 64
#define PP_VALUE_MAX 128
#define PP_DEPTH_MAX 64   /* nested groups */
#define PP_EXPAND_MAX 16  /* macro expansion depth in a condition */
#define PP_LINE_MAX 4096  /* a directive's logical line */
#define PP_NEST_MAX 64    /* parentheses and unary operators in one condition */

struct macro {
    char name[PP_NAME_MAX];
    char value[PP_VALUE_MAX];
    int opaque; /* its value is no condition: function-like or too long */
    int maybe;  /* defined or undefined in a verbatim group: maybe defined */
};

struct macros {
    struct macro m[PP_MACROS_MAX];
    size_t n;
    int full; /* a macro did not fit: every unlisted name is unknown */
    /* names the source #defines somewhere: its own (a template's
     * parameters with their "#ifndef X / #define X default" guards), so
     * while not defined they are undefined, not maybe the compiler's */
    char own[PP_MACROS_MAX][PP_NAME_MAX];
    size_t n_own;
};

static int owned(const struct macros *t, const char *name, size_t n)
{
    for (size_t i = 0; i < t->n_own; i++)
        if (strlen(t->own[i]) == n && memcmp(t->own[i], name, n) == 0)
            return 1;
    return 0;
}

static struct macro *macro_find(struct macros *t, const char *name, size_t n)
{
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->m[i].name) == n && memcmp(t->m[i].name, name, n) == 0)
            return &t->m[i];
    return NULL;
}

static int ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* ------------------------------------------------------------ evaluation */

/* A value that may be unknown. */
struct val {
    long long v;
    int known;
};

struct eval {
    const char *p, *end;
    struct macros *mt;
    int depth;
    int nest; /* parentheses and unary operators open: capped, so hostile text cannot recurse deep */
    int bad;  /* a construct it does not know: the whole condition is unknown */
};

static struct val ev_cond(struct eval *e);
static struct val ev_unary(struct eval *e);
static struct val ev_unary_op(struct eval *e);

static void skip_ws(struct eval *e)
{
    while (e->p < e->end && isspace((unsigned char)*e->p))
        e->p++;
}

static int accept(struct eval *e, const char *op)
{
    skip_ws(e);
    size_t n = strlen(op);
    if ((size_t)(e->end - e->p) < n || memcmp(e->p, op, n) != 0)
        return 0;
    /* "<" must not take "<<" or "<=", "&" not "&&", "|" not "||", "=" alone is bad */
    if (n == 1 && e->p + 1 < e->end) {
        char c = e->p[1];
        if ((*op == '<' || *op == '>') && (c == *op || c == '='))
            return 0;
        if ((*op == '&' || *op == '|') && c == *op)
            return 0;
        if (*op == '!' && c == '=')
            return 0;
    }
    e->p += n;
    return 1;
}

static struct val unknown(void)
{
    return (struct val){0, 0};
}

/* A macro's value as a condition, evaluated in its own scanner. */
static struct val ev_macro(struct eval *e, const struct macro *m)
{
    if (m->opaque || m->maybe || e->depth >= PP_EXPAND_MAX)
        return unknown();
    struct eval sub = {m->value, m->value + strlen(m->value), e->mt, e->depth + 1, e->nest, 0};
    struct val v = ev_cond(&sub);
    skip_ws(&sub);
    if (sub.bad || sub.p != sub.end)
        return unknown();
    return v;
}

/* 1 defined, 0 not, -1 unknown: a name the source never defines may be
 * the compiler's or a header's (predefined), one defined in a verbatim group
 * may not be; one the source defines elsewhere is its own. */
static int is_defined(struct macros *mt, const char *name, size_t n)
{
    struct macro *m = n ? macro_find(mt, name, n) : NULL;
    if (m)
        return m->maybe ? -1 : 1;
    return n && owned(mt, name, n) && !mt->full ? 0 : -1;
}

static struct val ev_primary(struct eval *e)
{
    skip_ws(e);
    if (e->p >= e->end) {
        e->bad = 1;
        return unknown();
    }
    if (accept(e, "(")) {
        struct val v = ev_cond(e);
        if (!accept(e, ")"))
            e->bad = 1;
        return v;
    }
    if (isdigit((unsigned char)*e->p)) {
        char *q;
        long long v = strtoll(e->p, &q, 0);
        if (q > e->end) {
            e->bad = 1;
            return unknown();
        }
        e->p = q;
        while (e->p < e->end && strchr("uUlL", *e->p))
            e->p++;
        return (struct val){v, 1};
    }
    if (ident_start(*e->p)) {
        const char *s = e->p;
        while (e->p < e->end && ident_char(*e->p))
            e->p++;
        size_t n = (size_t)(e->p - s);
        if (n == 7 && memcmp(s, "defined", 7) == 0) {
            int paren = accept(e, "(");
            skip_ws(e);
            const char *ns = e->p;
            while (e->p < e->end && ident_char(*e->p))
                e->p++;
            size_t nn = (size_t)(e->p - ns);
            if (!nn || (paren && !accept(e, ")"))) {
                e->bad = 1;
                return unknown();
            }
            int d = is_defined(e->mt, ns, nn);
            return d < 0 ? unknown() : (struct val){d, 1};
        }
        skip_ws(e);
        if (e->p < e->end && *e->p == '(') { /* a function-like macro call */
            e->bad = 1;
            return unknown();
        }
        struct macro *m = macro_find(e->mt, s, n);
        if (m)
            return ev_macro(e, m);
        /* an own name not defined (yet) is 0, as C has it; others unknown */
        return is_defined(e->mt, s, n) == 0 ? (struct val){0, 1} : unknown();
    }
    e->bad = 1;
    return unknown();
}

static struct val ev_unary(struct eval *e)
{
    if (++e->nest > PP_NEST_MAX || e->bad) {
        e->bad = 1;
        return unknown();
    }
    struct val v = ev_unary_op(e);
    e->nest--;
    return v;
}

static struct val ev_unary_op(struct eval *e)
{
    if (accept(e, "!")) {
        struct val v = ev_unary(e);
        return (struct val){!v.v, v.known};
    }
    if (accept(e, "-")) {
        struct val v = ev_unary(e);
        return (struct val){-v.v, v.known};
    }
    if (accept(e, "+"))
        return ev_unary(e);
    if (accept(e, "~")) {
        struct val v = ev_unary(e);
        return (struct val){~v.v, v.known};
    }
    return ev_primary(e);
}

/* Binary operators by precedence level, loosest last. */
static const char *const LEVELS[][4] = {
    {"*", "/", "%", NULL}, {"+", "-", NULL}, {"<<", ">>", NULL}, {"<=", ">=", "<", ">"},
    {"==", "!=", NULL},    {"&", NULL},      {"^", NULL},        {"|", NULL},
};
#define N_LEVELS (sizeof LEVELS / sizeof LEVELS[0])

static struct val apply(struct eval *e, const char *op, struct val a, struct val b)
{
    struct val r = {0, a.known && b.known};
    long long x = a.v, y = b.v;
    if (!strcmp(op, "*")) r.v = x * y;
    else if (!strcmp(op, "/") || !strcmp(op, "%")) {
        if (r.known && y == 0) {
            e->bad = 1;
            return unknown();
        }
        r.v = y ? (*op == '/' ? x / y : x % y) : 0;
    }
    else if (!strcmp(op, "+")) r.v = x + y;
    else if (!strcmp(op, "-")) r.v = x - y;
    else if (!strcmp(op, "<<")) r.v = y >= 0 && y < 63 ? x << y : 0;
    else if (!strcmp(op, ">>")) r.v = y >= 0 && y < 63 ? x >> y : 0;
    else if (!strcmp(op, "<=")) r.v = x <= y;
    else if (!strcmp(op, ">=")) r.v = x >= y;
    else if (!strcmp(op, "<")) r.v = x < y;
    else if (!strcmp(op, ">")) r.v = x > y;
    else if (!strcmp(op, "==")) r.v = x == y;
    else if (!strcmp(op, "!=")) r.v = x != y;
    else if (!strcmp(op, "&")) r.v = x & y;
    else if (!strcmp(op, "^")) r.v = x ^ y;
    else if (!strcmp(op, "|")) r.v = x | y;
    return r;
}

static struct val ev_level(struct eval *e, size_t lv)
{
    struct val a = lv ? ev_level(e, lv - 1) : ev_unary(e);
    for (;;) {
        const char *hit = NULL;
        for (size_t k = 0; k < 4 && LEVELS[lv][k]; k++)
            if (accept(e, LEVELS[lv][k])) {
                hit = LEVELS[lv][k];
                break;
            }
        if (!hit || e->bad)
            return a;
        struct val b = lv ? ev_level(e, lv - 1) : ev_unary(e);
        a = apply(e, hit, a, b);
    }
}

/* && and || with C's short-circuit, which decides some unknowns:
 * false && x is false, true || x is true. */
static struct val ev_and(struct eval *e)
{
    struct val a = ev_level(e, N_LEVELS - 1);
    while (!e->bad && accept(e, "&&")) {
        struct val b = ev_level(e, N_LEVELS - 1);
        if ((a.known && !a.v) || (b.known && !b.v))
            a = (struct val){0, 1};
        else
            a = (struct val){1, a.known && b.known};
    }
    return a;
}

static struct val ev_or(struct eval *e)
{
    struct val a = ev_and(e);
    while (!e->bad && accept(e, "||")) {
        struct val b = ev_and(e);
        if ((a.known && a.v) || (b.known && b.v))
            a = (struct val){1, 1};
        else
            a = (struct val){0, a.known && b.known};
    }
    return a;
}

static struct val ev_cond(struct eval *e)
{
    struct val c = ev_or(e);
    if (!e->bad && accept(e, "?")) {
        struct val t = ev_cond(e);
        if (!accept(e, ":")) {
            e->bad = 1;
            return unknown();
        }
        struct val f = ev_cond(e);
        if (!c.known)
            return unknown();
        return c.v ? t : f;
    }
    return c;
}

/* Evaluate a condition's text: 1 true, 0 false, -1 unknown. */
static int condition(struct macros *mt, const char *s, size_t n)
{
    struct eval e = {s, s + n, mt, 0, 0, 0};
    struct val v = ev_cond(&e);
    skip_ws(&e);
    if (e.bad || e.p != e.end || !v.known)
        return -1;
    return v.v != 0;
}

/* ------------------------------------------------------------ directives */

/* A logical line with comments removed and whitespace squeezed, into out. */
static void clean_line(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
            while (i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r'))
                i++;
            out[o++] = ' ';
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            i++;
            out[o++] = ' ';
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            break;
        } else {
            out[o++] = s[i] == '\t' || s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
        }
    }
    while (o && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

enum dir { D_NONE, D_IF, D_IFDEF, D_IFNDEF, D_ELIF, D_ELSE, D_ENDIF, D_DEFINE, D_UNDEF, D_OTHER };

/* The directive of a cleaned line and where its argument starts. */
static enum dir directive(const char *l, const char **arg)
{
    static const struct { const char *w; enum dir d; } k[] = {
        {"ifndef", D_IFNDEF}, {"ifdef", D_IFDEF}, {"if", D_IF},         {"elif", D_ELIF},
        {"else", D_ELSE},     {"endif", D_ENDIF}, {"define", D_DEFINE}, {"undef", D_UNDEF},
    };
    while (*l == ' ')
        l++;
    if (*l != '#')
        return D_NONE;
    l++;
    while (*l == ' ')
        l++;
    size_t n = 0;
    while (ident_char(l[n]))
        n++;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strlen(k[i].w) == n && memcmp(l, k[i].w, n) == 0) {
            *arg = l + n;
            while (**arg == ' ')
                (*arg)++;
            return k[i].d;
        }
    *arg = l + n;
    return D_OTHER;
}

/* Record "#define NAME VALUE" (arg = "NAME VALUE"), unknown when asked. */
static void define(struct macros *mt, const char *arg, int unsure)
{
    size_t n = 0;
    while (ident_char(arg[n]))
        n++;
    if (!n)
        return;
    struct macro *m = macro_find(mt, arg, n);
    if (!m) {
        if (mt->n >= PP_MACROS_MAX || n >= PP_NAME_MAX) {
            mt->full = 1;
            return;
        }
        m = &mt->m[mt->n++];
        memcpy(m->name, arg, n);
        m->name[n] = '\0';
    }
    const char *v = arg + n;
    m->maybe = unsure;
    m->opaque = *v == '('; /* NAME( is function-like */
    while (*v == ' ')
        v++;
    if (strlen(v) >= PP_VALUE_MAX)
        m->opaque = 1, v = "";
    strcpy(m->value, v);
}

static void undef(struct macros *mt, const char *arg, int unsure)
{
    size_t n = 0;
    while (ident_char(arg[n]))
        n++;
    struct macro *m = macro_find(mt, arg, n);
    if (m && unsure)
        m->maybe = 1;
    else if (m)
        *m = mt->m[--mt->n];

}

/* One conditional group. */
enum mode {
    M_TAKING,   /* the current branch is on */
    M_SEEKING,  /* no branch on yet, the current one is off */
    M_DONE,     /* a branch was on, the rest are off */
    M_VERBATIM, /* undecidable: the group is copied as written */
};

struct group {
    enum mode mode;
    int outer_on;      /* the enclosing text is on (or verbatim and copied) */
    int outer_copy;    /* the enclosing text is copied (on or verbatim) */
};

/* ------------------------------------------------ unused static functions */

#define PP_FUNCS_MAX 48 /* a template has a handful; the scan is O(text x functions^2) */

/* A top-level "static ... name(...) { ... }" of plain (not directive) lines:
 * [start, end) covers it and the comments and blank lines right above it. */
struct func {
    size_t start, end;
    size_t name, name_len;
    int gone;
};

/* Index after a comment or a string/char literal starting at s[i], or i. */
static size_t skip_lit(const char *s, size_t n, size_t i)
{
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
        while (i < n && s[i] != '\n')
            i++;
        return i;
    }
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
        i += 2;
        while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
            i++;
        return i + 2 <= n ? i + 2 : n;
    }
    if (s[i] == '"' || s[i] == '\'') {
        char q = s[i];
        for (i++; i < n && s[i] != q && s[i] != '\n'; i++)
            if (s[i] == '\\')
                i++;
        return i < n ? i + 1 : n;
    }
    return i;
}

/* Is s[i] the first non-blank of a directive line? */
static int at_directive(const char *s, size_t i)
{
    size_t k = i;
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t'))
        k--;
    return s[i] == '#' && (k == 0 || s[k - 1] == '\n');
}

/* Index after the directive line at i (continuations included). */
static size_t skip_directive(const char *s, size_t n, size_t i)
{
    while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n')
            i++;
        i++;
    }
    return i;
}

/* The top-level static function definitions of s. Returns how many, or -1
 * when the text is not plain enough to tell (unbalanced braces, too many). */
static int find_funcs(const char *s, size_t n, struct func *f, int cap)
{
    int nf = 0;
    long depth = 0;
    size_t item = 0; /* where the current top-level item starts */
    size_t body = 0, head_name = 0, head_len = 0;
    int is_func = 0;
    for (size_t i = 0; i < n;) {
        size_t j = skip_lit(s, n, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (depth == 0 && at_directive(s, i)) {
            i = skip_directive(s, n, i);
            item = i;
            continue;
        }
        char c = s[i];
        if (c == '{') {
            if (depth == 0) {
                /* the head: [item, i); a function when it starts with static
                 * and names itself before its first '(' */
                size_t h = item;
                while (h < i) { /* skip blanks and comments before the head */
                    size_t k = skip_lit(s, n, h);
                    if (k != h && s[h] == '/')
                        h = k;
                    else if (isspace((unsigned char)s[h]))
                        h++;
                    else
                        break;
                }
                is_func = 0;
                const char *par = memchr(s + h, '(', i - h);
                if (i - h > 7 && memcmp(s + h, "static", 6) == 0 && isspace((unsigned char)s[h + 6]) && par) {
                    size_t e = (size_t)(par - s);
                    while (e > h && isspace((unsigned char)s[e - 1]))
                        e--;
                    size_t b = e;
                    while (b > h && ident_char(s[b - 1]))
                        b--;
                    if (b < e && ident_start(s[b]) && !memchr(s + h, '=', i - h)) {
                        is_func = 1;
                        head_name = b;
                        head_len = e - b;
                        body = item;
                    }
                }
            }
            depth++;
        } else if (c == '}') {
            if (--depth < 0)
                return -1;
            if (depth == 0) {
                size_t e = i + 1;
                if (e < n && s[e] == '\n')
                    e++;
                if (is_func) {
                    if (nf >= cap)
                        return -1;
                    /* from the line the item starts on */
                    size_t st = body;
                    while (st < e && (s[st] == '\n'))
                        st++;
                    f[nf++] = (struct func){st, e, head_name, head_len, 0};
                }
                is_func = 0;
                item = e;
                i = e;
                continue;
            }
        } else if (c == ';' && depth == 0) {
            item = i + 1;
        }
        i++;
    }
    return depth == 0 ? nf : -1;
}

/* Does name occur as a word in s outside [skip_a, skip_b), comments and
 * strings excepted? Directive lines count: a macro may call it. */
static int referenced(const char *s, size_t n, const char *name, size_t nl, const struct func *f, int nf)
{
    int k = 0; /* the functions are in text order and do not overlap */
    for (size_t i = 0; i < n;) {
        while (k < nf && f[k].end <= i)
            k++;
        /* its own definition (and recursion) and removed functions' calls do not count */
        if (k < nf && i >= f[k].start && (f[k].gone || name == s + f[k].name)) {
            i = f[k].end;
            continue;
        }
        size_t j = skip_lit(s, n, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (ident_start(s[i]) && (i == 0 || !ident_char(s[i - 1]))) {
            size_t e = i;
            while (e < n && ident_char(s[e]))
                e++;
            if (e - i == nl && memcmp(s + i, name, nl) == 0)
                return 1;
            i = e;
            continue;
        }
        i++;
    }
    return 0;
}

/* Remove the top-level static functions nothing calls (a template's helpers
 * for the ops this instance is not), until none is left. Returns a new
 * string, or NULL when it cannot tell (then the caller keeps its text);
 * *removed += lines dropped. */
static char *drop_unused(const char *s, size_t n, size_t *removed)
{
    struct func *f = calloc(PP_FUNCS_MAX, sizeof *f);
    if (!f)
        return NULL;
    int nf = find_funcs(s, n, f, PP_FUNCS_MAX);
    int any = 0;
    for (int changed = 1; nf > 0 && changed;) {
        changed = 0;
        for (int k = 0; k < nf; k++)
            if (!f[k].gone && !referenced(s, n, s + f[k].name, f[k].name_len, f, nf)) {
                f[k].gone = 1;
                changed = any = 1;
            }
    }
    if (nf <= 0 || !any) {
        free(f);
        return NULL;
    }
    struct buf out;
    buf_init(&out, n + 1);
    size_t at = 0;
    for (int k = 0; k < nf; k++) {
        if (!f[k].gone)
            continue;
        buf_add(&out, s + at, f[k].start - at);
        for (size_t i = f[k].start; i < f[k].end; i++)
            *removed += s[i] == '\n';
        at = f[k].end;
    }
    buf_add(&out, s + at, n - at);
    free(f);
    if (buf_err(&out)) {
        buf_free(&out);
        return NULL;
    }
    return buf_detach(&out, NULL);
}

/* ------------------------------------------------------------ the pass */

char *pp_active(const char *src, size_t len, size_t *removed)
{
    struct macros *mt = calloc(1, sizeof *mt);
    struct group st[PP_DEPTH_MAX];
    int depth = 0, ok = 1, verbatim_seen = 0;
    size_t dropped = 0;
    char *line = malloc(PP_LINE_MAX);
    struct buf out;
    *removed = 0;
    buf_init(&out, len + 64);
    if (!mt || !line)
        goto fallback;
    /* the names the source defines anywhere (its own) */
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(src + off, '\n', len - off);
        size_t e = nl ? (size_t)(nl - src) : len;
        const char *arg;
        clean_line(src + off, e - off, line, PP_LINE_MAX);
        if (directive(line, &arg) == D_DEFINE) {
            size_t n = 0;
            while (ident_char(arg[n]))
                n++;
            if (n && n < PP_NAME_MAX && !owned(mt, arg, n)) {
                if (mt->n_own >= PP_MACROS_MAX) {
                    mt->full = 1;
                } else {
                    memcpy(mt->own[mt->n_own], arg, n);
                    mt->own[mt->n_own++][n] = '\0';
                }
            }
        }
        off = e + 1;
    }
    for (size_t off = 0; off < len && ok;) {
        /* a logical line: physical lines joined by a trailing backslash */
        size_t start = off, end = off;
        for (;;) {
            const char *nl = memchr(src + end, '\n', len - end);
            size_t e = nl ? (size_t)(nl - src) : len;
            size_t t = e;
            while (t > end && src[t - 1] == '\r')
                t--;
            end = nl ? e + 1 : len;
            if (!(t > start && src[t - 1] == '\\') || end >= len)
                break;
        }
        off = end;
        int on = depth == 0 || (st[depth - 1].mode == M_TAKING && st[depth - 1].outer_on);
        int verbatim = depth > 0 && st[depth - 1].mode == M_VERBATIM && st[depth - 1].outer_copy;
        int copy = on || verbatim; /* this text goes out as written */
        int unsure = !on;          /* defines inside verbatim groups are undecidable */
        const char *arg = NULL;
        enum dir d = D_NONE;
        const char *p = src + start;
        while (p < src + end && (*p == ' ' || *p == '\t'))
            p++;
        if (p < src + end && *p == '#') {
            clean_line(src + start, end - start, line, PP_LINE_MAX);
            d = directive(line, &arg);
        }
        int emit = copy;
        switch (d) {
        case D_IF: case D_IFDEF: case D_IFNDEF: {
            if (depth >= PP_DEPTH_MAX) {
                ok = 0;
                break;
            }
            struct group *g = &st[depth++];
            g->outer_on = on;
            g->outer_copy = copy;
            if (!on) { /* inside an off or verbatim region: not evaluated */
                g->mode = verbatim ? M_VERBATIM : M_DONE;
                break;
            }
            int c;
            if (d == D_IF) {
                c = condition(mt, arg, strlen(arg));
            } else {
                size_t n = 0;
                while (ident_char(arg[n]))
                    n++;
                c = is_defined(mt, arg, n);
                if (c >= 0 && d == D_IFNDEF)
                    c = !c;
            }
            g->mode = c < 0 ? M_VERBATIM : c ? M_TAKING : M_SEEKING;
            emit = c < 0;
            verbatim_seen |= c < 0;
            break;
        }
        case D_ELIF: case D_ELSE: {
            if (!depth) {
                ok = 0;
                break;
            }
            struct group *g = &st[depth - 1];
            emit = g->mode == M_VERBATIM && g->outer_copy;
            if (g->mode == M_TAKING) {
                g->mode = M_DONE;
            } else if (g->mode == M_SEEKING && g->outer_on) {
                int c = d == D_ELSE ? 1 : condition(mt, arg, strlen(arg));
                if (c < 0) {
                    /* undecidable from here on: the rest of the group as written,
                     * this #elif becoming its #if */
                    g->mode = M_VERBATIM;
                    verbatim_seen = 1;
                    buf_printf(&out, "#if %s\n", arg);
                    emit = 0;
                } else if (c) {
                    g->mode = M_TAKING;
                }
            }
            break;
        }
        case D_ENDIF:
            if (!depth) {
                ok = 0;
                break;
            }
            emit = st[depth - 1].mode == M_VERBATIM && st[depth - 1].outer_copy;
            depth--;
            break;
        case D_DEFINE:
            if (copy)
                define(mt, arg, unsure);
            break;
        case D_UNDEF:
            if (copy)
                undef(mt, arg, unsure);
            break;
        default:
            break;
        }
        if (!ok)
            break;
        if (emit)
            buf_add(&out, src + start, end - start);
        else
            for (size_t i = start; i < end; i++)
                dropped += src[i] == '\n' || i + 1 == end;
    }
    if (!ok || depth != 0 || mt->full)
        goto fallback;
    if (buf_err(&out))
        goto fallback;
    free(mt);
    free(line);
    *removed = dropped;
    size_t alen;
    char *act = buf_detach(&out, &alen);
    /* then what nothing calls (only when no branch was left undecided: a
     * kept group may hold the only call) */
    char *lean = act && !verbatim_seen ? drop_unused(act, alen, removed) : NULL;
    if (lean) {
        free(act);
        act = lean;
    }
    if (act && *removed) /* the gaps left: one blank line at most */
        for (char *r = act, *w = act;; r++) {
            if (r[0] == '\n' && r[1] == '\n' && r[2] == '\n' && w > act) {
                (*removed)++;
                continue;
            }
            if (!(*w++ = *r))
                break;
        }
    return act;
fallback:
    free(mt);
    free(line);
    buf_free(&out);
    *removed = 0;
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, src, len);
        copy[len] = '\0';
    }
    return copy;
}

/*
 * core/context/reply.c - what the agent asks an LLM to answer and what it takes
 * from the answer (core/context/reply.h): the reply format and the extraction of
 * the kernel and the decision. net/ hands over the message's content
 * (net/llm_reply.h); this file is fuzzed (tests/fuzz_llm_reply.c).
 *
 * Everything here works on (pointer, length) line views of the content and
 * copies out only what it keeps, so a hostile reply can cost at most a few
 * passes over a body that net/http.c already capped.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "core/context/reply.h"

size_t reply_format(const char *lang, char *buf, size_t cap)
{
    int w = snprintf(buf, cap,
                     "Answer in exactly this form:\n"
                     "TAGS: <comma-separated transformation tags, e.g. vectorize-lmul4, unroll-2, tail-mask>\n"
                     "RATIONALE: <one short paragraph: why this should be faster and still correct>\n"
                     "```%s\n"
                     "<the complete kernel source, one file>\n"
                     "```\n",
                     lang && *lang ? lang : "c");
    return w > 0 ? (size_t)w : 0;
}

void reply_init(struct reply *r)
{
    memset(r, 0, sizeof *r);
}

void reply_free(struct reply *r)
{
    if (!r)
        return;
    free(r->kernel);
    for (size_t i = 0; i < r->n_tags; i++)
        free(r->tags[i]);
    free(r->rationale);
    reply_init(r);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ------------------------------------------------------------ lines */

struct line {
    const char *p;
    size_t n;       /* without the newline */
};

/* Next line of text[*off..len); 0 at the end. */
static int next_line(const char *text, size_t len, size_t *off, struct line *l)
{
    if (*off >= len)
        return 0;
    const char *s = text + *off;
    const char *nl = memchr(s, '\n', len - *off);
    size_t n = nl ? (size_t)(nl - s) : len - *off;
    *off += n + (nl ? 1 : 0);
    if (n && s[n - 1] == '\r')
        n--;
    l->p = s;
    l->n = n;
    return 1;
}

static int line_blank(struct line l)
{
    for (size_t i = 0; i < l.n; i++)
        if (!isspace((unsigned char)l.p[i]))
            return 0;
    return 1;
}

/* A fence line: up to 3 spaces, then 3+ of ` or ~. Returns its length and
 * char, and the info word (lower case) when info != NULL. */
static size_t fence_of(struct line l, char *ch, char *info, size_t info_len)
{
    size_t i = 0;
    while (i < l.n && i < 3 && l.p[i] == ' ')
        i++;
    if (i >= l.n || (l.p[i] != '`' && l.p[i] != '~'))
        return 0;
    char c = l.p[i];
    size_t k = i;
    while (k < l.n && l.p[k] == c)
        k++;
    if (k - i < 3)
        return 0;
    if (info) {
        size_t j = k, o = 0;
        while (j < l.n && isspace((unsigned char)l.p[j]))
            j++;
        if (j < l.n && l.p[j] == '{') /* ```{.c} style */
            j++;
        if (j < l.n && l.p[j] == '.')
            j++;
        while (j < l.n && o + 1 < info_len && !isspace((unsigned char)l.p[j]) && l.p[j] != '}' &&
               l.p[j] != '`')
            info[o++] = (char)tolower((unsigned char)l.p[j++]);
        info[o] = '\0';
    }
    *ch = c;
    return k - i;
}

/* Is the fence's rest only whitespace (a valid closing fence)? */
static int fence_closes(struct line l, char ch, size_t open_len)
{
    char c;
    size_t n = fence_of(l, &c, NULL, 0);
    if (!n || c != ch || n < open_len)
        return 0;
    size_t i = 0;
    while (i < l.n && l.p[i] == ' ')
        i++;
    for (i += n; i < l.n; i++)
        if (!isspace((unsigned char)l.p[i]))
            return 0;
    return 1;
}

static int lang_is_code(const char *lang)
{
    static const char *const ok[] = {"", "c", "cpp", "c++", "cc", "cxx", "h", "hpp",
                                     "ascendc", "ascend-c", "ascend_c", "cce", NULL};
    for (const char *const *p = ok; *p; p++)
        if (strcmp(lang, *p) == 0)
            return 1;
    return 0;
}

/* Brace balance of C text, skipping comments, strings and char literals.
 * Returns 1 when balanced with at least one pair and never negative. */
static int braces_balanced(const char *s, size_t n)
{
    long depth = 0, pairs = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            i++;
        } else if (c == '"' || c == '\'') {
            for (i++; i < n && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\')
                    i++;
        } else if (c == '{') {
            depth++, pairs++;
        } else if (c == '}') {
            if (--depth < 0)
                return 0;
        }
    }
    return depth == 0 && pairs > 0;
}

/* ------------------------------------------------------------ kernel */

static int set_kernel(struct reply *r, const char *p, size_t n, enum reply_code how, const char *lang)
{
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    r->kernel = malloc(n + 2);
    if (!r->kernel)
        return KOPE_ERR_NOMEM;
    memcpy(r->kernel, p, n);
    r->kernel[n] = '\n';
    r->kernel[n + 1] = '\0';
    r->code = how;
    snprintf(r->kernel_lang, sizeof r->kernel_lang, "%s", lang);
    return 0;
}

/* Does a line start C code at top level? */
static int starts_c(struct line l)
{
    static const char *const pp[] = {"#include", "#define", "#pragma", "#if", "typedef ", NULL};
    for (const char *const *p = pp; *p; p++)
        if (l.n >= strlen(*p) && memcmp(l.p, *p, strlen(*p)) == 0)
            return 1;
    /* a function head at column 0: identifier ... '(' and not prose (no ". ") */
    if (l.n == 0 || !(isalpha((unsigned char)l.p[0]) || l.p[0] == '_'))
        return 0;
    const char *par = memchr(l.p, '(', l.n);
    if (!par || par == l.p)
        return 0;
    for (const char *q = l.p; q < par; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_' || *q == ' ' || *q == '*'))
            return 0;
    return memchr(l.p, ' ', (size_t)(par - l.p)) != NULL && l.p[l.n - 1] != '.' && l.p[l.n - 1] != ':';
}

static int extract_unfenced(const char *text, size_t len, struct reply *r)
{
    size_t off = 0, start = (size_t)-1, end = 0;
    struct line l;
    while (next_line(text, len, &off, &l)) {
        if (start == (size_t)-1 && starts_c(l))
            start = (size_t)(l.p - text);
        if (start != (size_t)-1 && l.n && l.p[0] == '}')
            end = (size_t)(l.p - text) + l.n;
    }
    if (start == (size_t)-1 || end <= start) {
        snprintf(r->no_code, sizeof r->no_code, "no code: the reply has no code block and no C code");
        return 0;
    }
    if (!braces_balanced(text + start, end - start) || !memchr(text + start, ';', end - start)) {
        snprintf(r->no_code, sizeof r->no_code,
                 "no code: unfenced text looks like code but its braces do not balance");
        return 0;
    }
    return set_kernel(r, text + start, end - start, REPLY_CODE_UNFENCED, "");
}

/* Skip a comment, string or char literal starting at s[i]; returns the index
 * after it, or i when s[i] starts none of them. */
static size_t skip_noncode(const char *s, size_t n, size_t i)
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
        return i + 2 < n ? i + 2 : n;
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

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Does C text define the entry point: kope_kernel (or KOPE_KERNEL) as a
 * word outside comments and strings, then a balanced (...) and a '{'? A
 * declaration, a call or a #define names it without defining it. */
static int defines_kernel(const char *s, size_t n)
{
    static const char *const names[] = {"kope_kernel", "KOPE_KERNEL"};
    for (size_t i = 0; i < n;) {
        size_t j = skip_noncode(s, n, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (!ident_char(s[i])) {
            i++;
            continue;
        }
        size_t w = i;
        while (i < n && ident_char(s[i]))
            i++;
        int named = 0;
        for (size_t k = 0; k < 2; k++)
            named |= i - w == strlen(names[k]) && memcmp(s + w, names[k], i - w) == 0;
        if (!named)
            continue;
        size_t k = i;
        while (k < n && isspace((unsigned char)s[k]))
            k++;
        if (k >= n || s[k] != '(')
            continue;
        long depth = 0;
        for (; k < n; k++) {
            size_t c = skip_noncode(s, n, k);
            if (c != k) {
                k = c - 1;
                continue;
            }
            if (s[k] == '(')
                depth++;
            else if (s[k] == ')' && --depth == 0)
                break;
        }
        for (k++; k < n;) { /* whitespace and comments up to the body */
            size_t c = skip_noncode(s, n, k);
            if (c != k && s[k] == '/')
                k = c;
            else if (isspace((unsigned char)s[k]))
                k++;
            else
                break;
        }
        if (k < n && s[k] == '{')
            return 1;
    }
    return 0;
}

static size_t count_lines(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c + (n && s[n - 1] != '\n');
}

/* One C-like code block of the reply, as the choice sees it. */
struct block {
    int no;           /* 1-based among all fenced blocks */
    size_t start, len;
    char lang[16];
};

/* The choice among a reply's code blocks: the one that defines kope_kernel;
 * failing that, the longest (the screen then says it defines nothing). */
struct choice {
    int n_blocks;     /* fenced blocks of any language */
    int n_defs;       /* C-like blocks defining kope_kernel */
    struct block def[2], longest;
    int have_longest;
};

static void choice_add(struct choice *c, const char *text, const struct block *b)
{
    if (defines_kernel(text + b->start, b->len)) {
        if (c->n_defs < 2)
            c->def[c->n_defs] = *b;
        c->n_defs++;
    }
    if (!c->have_longest || b->len >= c->longest.len) {
        c->have_longest = 1;
        c->longest = *b;
    }
}

static int extract_kernel(const char *text, size_t len, struct reply *r)
{
    size_t off = 0;
    int open = 0, unclosed = 0;
    char ch = 0, lang[16] = "", other[16] = "";
    size_t open_len = 0, body_start = 0;
    struct choice c;
    struct line l;
    memset(&c, 0, sizeof c);
    while (next_line(text, len, &off, &l)) {
        if (!open) {
            char info[16];
            size_t n = fence_of(l, &ch, info, sizeof info);
            if (n) {
                open = 1, open_len = n, body_start = off;
                snprintf(lang, sizeof lang, "%s", info);
            }
        } else if (fence_closes(l, ch, open_len)) {
            open = 0, c.n_blocks++;
            struct block b = {c.n_blocks, body_start, (size_t)(l.p - text) - body_start, ""};
            snprintf(b.lang, sizeof b.lang, "%s", lang);
            if (lang_is_code(lang))
                choice_add(&c, text, &b);
            else if (!other[0])
                snprintf(other, sizeof other, "%s", lang);
        }
    }
    if (open) { /* an unclosed fence runs to the end: take it only if it is whole C */
        c.n_blocks++;
        struct block b = {c.n_blocks, body_start, len > body_start ? len - body_start : 0, ""};
        snprintf(b.lang, sizeof b.lang, "%s", lang);
        if (lang_is_code(lang) && braces_balanced(text + b.start, b.len))
            choice_add(&c, text, &b);
        else
            unclosed = 1;
    }
    if (c.n_defs > 1) {
        snprintf(r->no_code, sizeof r->no_code,
                 "no code: %d code blocks define kope_kernel (blocks %d and %d): send exactly one kernel "
                 "block, without a second copy or a test program", c.n_defs, c.def[0].no, c.def[1].no);
        return 0;
    }
    if (c.have_longest) {
        const struct block *b = c.n_defs ? &c.def[0] : &c.longest;
        if (b->len == 0 || line_blank((struct line){text + b->start, b->len})) {
            snprintf(r->no_code, sizeof r->no_code, "no code: the code block is empty");
            return 0;
        }
        if (c.n_blocks > 1)
            snprintf(r->taken, sizeof r->taken, "took code block %d of %d (```%s, %zu lines): %s", b->no,
                     c.n_blocks, b->lang, count_lines(text + b->start, b->len),
                     c.n_defs ? "the one that defines kope_kernel"
                              : "the longest, though no block defines kope_kernel");
        return set_kernel(r, text + b->start, b->len, REPLY_CODE_FENCED, b->lang);
    }
    if (unclosed) {
        snprintf(r->no_code, sizeof r->no_code,
                 "no code: the code block is not closed and incomplete (reply cut off?)");
        return 0;
    }
    if (c.n_blocks) {
        snprintf(r->no_code, sizeof r->no_code, "no code: only code blocks in other languages (%s)",
                 other[0] ? other : "?");
        return 0;
    }
    return extract_unfenced(text, len, r);
}

/* ------------------------------------------------------------ decision */

/* Strip markdown decoration: spaces, '*', '_', '#', '-', '>' at the start. */
static struct line undecorate(struct line l)
{
    while (l.n && strchr(" \t*_#->", l.p[0]))
        l.p++, l.n--;
    return l;
}

/* If l starts with key (case-insensitive) followed by optional decoration and
 * ':', return the rest after it in *rest. */
static int keyed(struct line l, const char *key, struct line *rest)
{
    l = undecorate(l);
    size_t k = strlen(key);
    if (l.n < k || strncasecmp(l.p, key, k) != 0)
        return 0;
    size_t i = k;
    while (i < l.n && (l.p[i] == '*' || l.p[i] == '_' || l.p[i] == ' '))
        i++;
    if (i >= l.n || l.p[i] != ':')
        return 0;
    i++;
    while (i < l.n && (l.p[i] == '*' || l.p[i] == '_' || l.p[i] == ' ' || l.p[i] == '\t'))
        i++;
    rest->p = l.p + i;
    rest->n = l.n - i;
    return 1;
}

static int add_tags(struct reply *r, struct line v)
{
    size_t i = 0;
    while (i < v.n && r->n_tags < REPLY_MAX_TAGS) {
        char tag[REPLY_MAX_TAG_LEN + 1];
        size_t o = 0;
        while (i < v.n && (v.p[i] == ',' || v.p[i] == ';' || isspace((unsigned char)v.p[i]) ||
                           v.p[i] == '`' || v.p[i] == '*'))
            i++;
        size_t s = i;
        while (i < v.n && v.p[i] != ',' && v.p[i] != ';')
            i++;
        size_t e = i;
        while (e > s && (isspace((unsigned char)v.p[e - 1]) || v.p[e - 1] == '`' || v.p[e - 1] == '*' ||
                         v.p[e - 1] == '.'))
            e--;
        for (size_t j = s; j < e && o < REPLY_MAX_TAG_LEN; j++) {
            unsigned char c = (unsigned char)v.p[j];
            if (isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-')
                tag[o++] = (char)tolower(c);
            else if ((c == ' ' || c == '\t' || c == '/') && o && tag[o - 1] != '-')
                tag[o++] = '-';
        }
        while (o && tag[o - 1] == '-')
            o--;
        if (!o)
            continue;
        tag[o] = '\0';
        int dup = 0;
        for (size_t k = 0; k < r->n_tags; k++)
            dup |= strcmp(r->tags[k], tag) == 0;
        if (dup)
            continue;
        if (!(r->tags[r->n_tags] = dup_n(tag, o)))
            return KOPE_ERR_NOMEM;
        r->n_tags++;
    }
    return 0;
}

static int extract_decision(const char *text, size_t len, struct reply *r)
{
    size_t off = 0, open_len = 0;
    int in_fence = 0, have_tags = 0, in_rat = 0;
    char ch = 0;
    char *rat = NULL;
    size_t rat_len = 0;
    struct line l, v;
    while (next_line(text, len, &off, &l)) {
        char c;
        if (in_fence) {
            if (fence_closes(l, ch, open_len))
                in_fence = 0;
            continue;
        }
        size_t fl = fence_of(l, &c, NULL, 0);
        if (fl) {
            in_fence = 1, ch = c, open_len = fl, in_rat = 0;
            continue;
        }
        if (keyed(l, "tags", &v)) {
            in_rat = 0;
            if (!have_tags) {
                have_tags = 1;
                if (add_tags(r, v))
                    goto nomem;
            }
            continue;
        }
        if (!rat && keyed(l, "rationale", &v)) {
            if (!(rat = malloc(REPLY_MAX_RATIONALE + 1)))
                goto nomem;
            in_rat = 1;
            l = v;
        } else if (in_rat && (line_blank(l) || keyed(l, "code", &v) || keyed(l, "kernel", &v))) {
            in_rat = 0;
            continue;
        }
        if (in_rat && rat_len < REPLY_MAX_RATIONALE) {
            if (rat_len && rat_len < REPLY_MAX_RATIONALE)
                rat[rat_len++] = ' ';
            size_t n = l.n;
            while (n && isspace((unsigned char)l.p[0]))
                l.p++, n--;
            while (n && isspace((unsigned char)l.p[n - 1]))
                n--;
            if (n > REPLY_MAX_RATIONALE - rat_len)
                n = REPLY_MAX_RATIONALE - rat_len;
            memcpy(rat + rat_len, l.p, n);
            rat_len += n;
        }
    }
    if (rat) {
        while (rat_len && isspace((unsigned char)rat[rat_len - 1]))
            rat_len--;
        rat[rat_len] = '\0';
        if (rat_len)
            r->rationale = rat;
        else
            free(rat);
    }
    return 0;
nomem:
    free(rat);
    return KOPE_ERR_NOMEM;
}

int reply_extract(const char *text, struct reply *r)
{
    reply_free(r);
    if (!text || !*text) {
        snprintf(r->no_code, sizeof r->no_code, "no code: the reply is empty");
        return 0;
    }
    size_t len = strlen(text);
    int rc = extract_kernel(text, len, r);
    if (!rc)
        rc = extract_decision(text, len, r);
    return rc;
}

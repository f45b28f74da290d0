/*
 * platform/k3/screen.c - what a candidate's source may say, checked before
 * and after the preprocessor, and the compiler's own account of the files it
 * read.
 *
 * 1. The source screen (k3_screen_source) reads the C text the way the
 *    compiler does in its first phases (line splices joined, comments and
 *    literals skipped, digraphs read) and allows only what is on a list
 *    (platform/allow.h): the directives, the pragmas with their arguments
 *    (also inside _Pragma("...")), the attribute names in __attribute__((...))
 *    and [[...]], the headers of K3_ALLOWED_HEADERS. It refuses by name asm,
 *    thread-local storage, the file probes (__has_include, __has_embed),
 *    macros with reserved names, a '#' outside a directive, raw strings, and
 *    identifiers of process, file, network, allocation, output and timer
 *    functions. A tokenizer is fooled by macro token pasting, hence 2.
 * 2. The preprocessed screen (k3_screen_preprocessed) reads the compiler's
 *    own -E -dD output of the same file with the same flags: the lines its
 *    line markers attribute to the candidate's file (#line and line markers
 *    are refused in the source, and a '#' a macro produces is printed after
 *    a blank, so a marker cannot be forged) get the same word, attribute and
 *    pragma rules after macro expansion, and every macro the candidate
 *    defines must have a name no allowed header uses (so no macro of the
 *    candidate expands inside a header, where these rules do not look).
 * 3. k3_screen_includes and k3_diag_clean (below): the files the compiler
 *    opened, and what of its diagnostics is kept.
 * The compiled object is checked again (platform/k3/objcheck.c): that check
 * is the authority; these are first filters that name what they refuse, so
 * the agent learns why.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/diag.h"
#include "platform/allow.h"
#include "platform/k3/k3.h"

/* ----------------------------------------------------------- the lists --- */

/* The one allow-list of headers, made from K3_ALLOWED_HEADERS (k3.h). */
const char *const k3_allowed_headers[] = {K3_ALLOWED_HEADERS(K3_HEADER_ELEM_, K3_HEADER_ELEM_)};
#define allowed_headers k3_allowed_headers

/* Identifiers refused anywhere in the source (as whole tokens). The object
 * check's allow-list of undefined symbols is what decides; naming these
 * here tells the agent early and plainly. */
static const char *const forbidden_calls[] = {
    /* processes */
    "fork", "vfork", "clone", "clone3", "system", "popen", "execl", "execle", "execlp",
    "execv", "execve", "execvp", "execvpe", "fexecve", "posix_spawn", "posix_spawnp",
    "kill", "raise", "abort", "exit", "_exit", "_Exit", "atexit", "at_quick_exit",
    "signal", "sigaction", "ptrace", "syscall", "setjmp", "longjmp", "pthread_create",
    "dlopen", "dlsym", "getenv", "setenv", "prctl", "sleep", "usleep", "nanosleep",
    /* files */
    "open", "openat", "creat", "fopen", "freopen", "fdopen", "read", "write", "pread",
    "pwrite", "close", "unlink", "remove", "rename", "ioctl", "mknod", "chmod",
    /* network */
    "socket", "connect", "bind", "listen", "accept", "accept4", "send", "sendto",
    "sendmsg", "recv", "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname",
    /* memory */
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "memalign", "valloc", "pvalloc", "alloca", "__builtin_alloca",
    "__builtin_alloca_with_align", "mmap", "munmap", "mprotect", "brk", "sbrk",
    /* output */
    "printf", "fprintf", "dprintf", "sprintf", "snprintf", "vprintf", "puts", "fputs",
    "putchar", "fputc", "putc", "fwrite", "perror", "stdout", "stderr",
    /* timers (a candidate must not read or patch them) */
    "clock_gettime", "gettimeofday", "time", "clock", "rdtime", "rdcycle",
    "__builtin_readcyclecounter", "__builtin_frame_address",
    "__builtin_return_address", "__builtin_extract_return_addr",
    "__builtin___clear_cache", "__builtin_longjmp", "__builtin_setjmp",
    /* the harness's own symbols */
    "main", "kope_icount_begin", "kope_icount_end", "kope_base_scalar",
    "kope_base_autovec", "__wrap_malloc", "__real_malloc",
};

static const char *const asm_words[] = {"asm", "__asm", "__asm__"};
static const char *const state_words[] = {"_Thread_local", "thread_local", "__thread"};
/* the preprocessor's file probes: they answer whether a host path exists */
static const char *const probe_words[] = {"__has_include", "__has_include_next", "__has_embed"};
static const char *const ctor_attrs[] = {"constructor", "destructor", "init_priority"};

static int in_list(const char *w, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(w, list[i]) == 0)
            return 1;
    return 0;
}
#define IN(w, list) in_list((w), (list), sizeof(list) / sizeof((list)[0]))

/* --------------------------------------------- phases 1-2: the text --- */

/* The candidate's text as the compiler tokenizes it: every line splice
 * (a backslash, optional blanks, a newline: gcc and clang both join those)
 * removed and \r\n made \n. splice[] holds the offsets in s where a physical
 * line ended in a splice, for line numbers. */
struct src {
    char *s;
    size_t len;
    size_t *splice;
    size_t n_splice;
};

static void src_free(struct src *t)
{
    free(t->s);
    free(t->splice);
}

/* 0, -1 when a lone \r is found (*bad_at: its offset in in), -2 out of memory. */
static int src_phase2(const char *in, size_t len, struct src *t, size_t *bad_at)
{
    memset(t, 0, sizeof *t);
    t->s = malloc(len + 1);
    t->splice = malloc((len / 2 + 1) * sizeof *t->splice);
    if (!t->s || !t->splice)
        return -2;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (in[i] == '\r' && !(i + 1 < len && in[i + 1] == '\n')) {
            *bad_at = i; /* a line end to one compiler, a blank to another */
            return -1;
        }
        if (in[i] == '\\') {
            size_t j = i + 1;
            while (j < len && (in[j] == ' ' || in[j] == '\t' || in[j] == '\f' || in[j] == '\v'))
                j++;
            if (j + 1 < len && in[j] == '\r' && in[j + 1] == '\n')
                j++;
            if (j < len && in[j] == '\n') {
                t->splice[t->n_splice++] = n;
                i = j + 1;
                continue;
            }
        }
        if (in[i] == '\r') { /* of \r\n */
            i++;
            continue;
        }
        t->s[n++] = in[i++];
    }
    t->s[n] = '\0';
    t->len = n;
    return 0;
}

/* ---------------------------------------------------------- the lexer --- */

enum tk { T_EOF, T_NL, T_ID, T_NUM, T_STR, T_CHR, T_RAW, T_PUNCT };

struct tok {
    enum tk k;
    size_t at, n;  /* where in the text, how long */
    int bol;       /* first token of its line */
    int pfx;       /* a literal with an encoding prefix (L"", u8"", ...) */
    unsigned char p; /* T_PUNCT: the punctuator, digraphs read ('#', '[', ...);
                        'H' for ## and %:%: */
};

struct lexer {
    const char *s;
    size_t len, i;
    int bol;    /* only blanks and comments so far on this line */
    int in_dir; /* inside a directive: a newline is a T_NL token */
};

static int is_idc(int c)
{
    return isalnum(c) || c == '_' || c == '$'; /* gcc and clang take '$' in names */
}

static struct tok lex_next(struct lexer *lx)
{
    const char *s = lx->s;
    for (;;) {
        if (lx->i >= lx->len)
            return (struct tok){.k = T_EOF, .at = lx->len};
        char c = s[lx->i];
        if (c == '\n') {
            lx->i++;
            lx->bol = 1;
            if (lx->in_dir) {
                lx->in_dir = 0;
                return (struct tok){.k = T_NL, .at = lx->i - 1};
            }
        } else if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
            lx->i++;
        } else if (c == '/' && lx->i + 1 < lx->len && s[lx->i + 1] == '/') {
            while (lx->i < lx->len && s[lx->i] != '\n')
                lx->i++;
        } else if (c == '/' && lx->i + 1 < lx->len && s[lx->i + 1] == '*') {
            /* one blank, whatever it spans: a directive goes on after it */
            const char *e = lx->i + 2 < lx->len ? strstr(s + lx->i + 2, "*/") : NULL;
            lx->i = e ? (size_t)(e - s) + 2 : lx->len;
        } else {
            break;
        }
    }
    struct tok t = {.at = lx->i, .bol = lx->bol};
    lx->bol = 0;
    size_t i = lx->i;
    unsigned char c = (unsigned char)s[i];
    if (isalpha(c) || c == '_' || c == '$') {
        while (i < lx->len && is_idc((unsigned char)s[i]))
            i++;
        size_t n = i - lx->i;
        const char *w = s + lx->i;
        char q = i < lx->len ? s[i] : 0;
        if (q == '"' && ((n == 1 && w[0] == 'R') || (n == 2 && w[1] == 'R' && strchr("LuU", w[0])) ||
                         (n == 3 && memcmp(w, "u8R", 3) == 0))) {
            t.k = T_RAW; /* gcc reads R"(...)" in gnu C: its quotes are not this lexer's */
            t.n = n + 1;
            lx->i = i + 1;
            return t;
        }
        if ((q == '"' || q == '\'') && ((n == 1 && strchr("LuU", w[0])) || (n == 2 && memcmp(w, "u8", 2) == 0))) {
            t.pfx = 1;
            c = (unsigned char)q; /* the literal below, prefix included */
        } else {
            t.k = T_ID;
            t.n = n;
            lx->i = i;
            return t;
        }
    }
    if (c == '"' || c == '\'') {
        while (i < lx->len && s[i] != (char)c)
            i++; /* to the quote (a prefix first) */
        i++;
        while (i < lx->len && s[i] != (char)c && s[i] != '\n') {
            if (s[i] == '\\' && i + 1 < lx->len && s[i + 1] != '\n')
                i++;
            i++;
        }
        if (i < lx->len && s[i] == (char)c)
            i++;
        t.k = c == '"' ? T_STR : T_CHR;
        t.n = i - lx->i;
        lx->i = i;
        return t;
    }
    if (isdigit(c) || (c == '.' && i + 1 < lx->len && isdigit((unsigned char)s[i + 1]))) {
        /* a pp-number: it swallows letters, dots and exponent signs */
        i++;
        while (i < lx->len) {
            if ((s[i] == '+' || s[i] == '-') && strchr("eEpP", s[i - 1]))
                i++;
            else if (is_idc((unsigned char)s[i]) || s[i] == '.')
                i++;
            else
                break;
        }
        t.k = T_NUM;
        t.n = i - lx->i;
        lx->i = i;
        return t;
    }
    t.k = T_PUNCT;
    char d = i + 1 < lx->len ? s[i + 1] : 0;
    t.n = 1;
    t.p = c;
    if (c == '%' && d == ':') {
        t.n = 2;
        t.p = '#';
        if (i + 3 < lx->len && s[i + 2] == '%' && s[i + 3] == ':')
            t.n = 4, t.p = 'H';
    } else if (c == '#' && d == '#') {
        t.n = 2, t.p = 'H';
    } else if (c == '<' && d == ':') {
        t.n = 2, t.p = '[';
    } else if (c == ':' && d == '>') {
        t.n = 2, t.p = ']';
    } else if (c == '<' && d == '%') {
        t.n = 2, t.p = '{';
    } else if (c == '%' && d == '>') {
        t.n = 2, t.p = '}';
    }
    lx->i = i + t.n;
    return t;
}

static struct tok lex_peek(const struct lexer *lx)
{
    struct lexer copy = *lx;
    return lex_next(&copy);
}

/* --------------------------------------------------------- the screen --- */

enum dir { D_NONE, D_OTHER, D_DEFINE_OBJ, D_DEFINE_FN };

struct screen {
    struct lexer lx;
    const struct src *src;    /* source mode: for line numbers */
    const int *line_map;      /* preprocessed mode: source line of each line of lx.s */
    size_t n_lines;
    int pp;                   /* preprocessed mode: directives are gone */
    enum dir dir;
    int has_kernel;
    enum plat_screen_rule *rule;
    char *detail;
    size_t dl;
};

/* The source line of text offset at. */
static int scr_line(const struct screen *sc, size_t at)
{
    size_t nl = 0;
    for (size_t i = 0; i < at && i < sc->lx.len; i++)
        nl += sc->lx.s[i] == '\n';
    if (sc->pp)
        return nl < sc->n_lines ? sc->line_map[nl] : 0;
    size_t sp = 0;
    while (sp < sc->src->n_splice && sc->src->splice[sp] <= at)
        sp++;
    return (int)(1 + nl + sp);
}

/* Refuse: "line N: what 'text'" (the text made printable and capped: it is
 * the candidate's, and goes into records and prompts). Returns 1. */
static int refuse(struct screen *sc, enum plat_screen_rule r, size_t at, const char *what,
                  const char *text, size_t n)
{
    char q[72];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < sizeof q; i++)
        q[k++] = isprint((unsigned char)text[i]) ? text[i] : '?';
    if (k < n)
        q[k++] = '.', q[k++] = '.', q[k++] = '.';
    q[k] = '\0';
    *sc->rule = r;
    if (n)
        snprintf(sc->detail, sc->dl, "line %d: %s '%s'", scr_line(sc, at), what, q);
    else
        snprintf(sc->detail, sc->dl, "line %d: %s", scr_line(sc, at), what);
    return 1;
}

static int refuse_tok(struct screen *sc, enum plat_screen_rule r, const struct tok *t, const char *what)
{
    return refuse(sc, r, t->at, what, sc->lx.s + t->at, t->n);
}

/* An identifier token as a NUL-terminated word (capped: a longer name is
 * not one of the short words compared against). */
static void tok_word(const struct screen *sc, const struct tok *t, char *w, size_t cap)
{
    size_t n = t->n < cap - 1 ? t->n : cap - 1;
    memcpy(w, sc->lx.s + t->at, n);
    w[n] = '\0';
}

static int screen_word(struct screen *sc, const struct tok *t);

/* Balanced ( ... ) after an attribute name: its identifiers get the word
 * rules. The lexer stands after the '('. */
static int attr_args(struct screen *sc)
{
    int depth = 1;
    for (;;) {
        struct tok t = lex_next(&sc->lx);
        if (t.k == T_EOF || t.k == T_NL)
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, &t, "attribute not closed on its line");
        if (t.k == T_PUNCT && t.p == '(')
            depth++;
        else if (t.k == T_PUNCT && t.p == ')' && --depth == 0)
            return 0;
        else if (t.k == T_ID && screen_word(sc, &t))
            return 1;
        else if (t.k == T_RAW || (t.k == T_PUNCT && (t.p == '#' || t.p == 'H')))
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, &t, "in an attribute");
    }
}

/* One attribute name (ns: its C23 namespace or "") against the list. */
static int attr_name(struct screen *sc, const struct tok *t, const char *ns)
{
    char w[64];
    tok_word(sc, t, w, sizeof w);
    if (allow_attribute(ns, w))
        return 0;
    char bare[64];
    size_t n = strlen(w);
    snprintf(bare, sizeof bare, "%.*s", n > 4 && w[0] == '_' && w[1] == '_' ? (int)n - 4 : (int)n,
             n > 4 && w[0] == '_' && w[1] == '_' ? w + 2 : w);
    if (IN(bare, ctor_attrs))
        return refuse_tok(sc, PLAT_SCREEN_CTOR, t, "attribute");
    return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, t,
                      *ns ? "attribute (namespace or name) not on the allow-list"
                          : "attribute not on the allow-list");
}

/* __attribute__((a, b(args), ...)): the lexer stands after the keyword. */
static int attr_gnu(struct screen *sc, const struct tok *kw)
{
    struct tok a = lex_next(&sc->lx), b = lex_next(&sc->lx);
    if (!(a.k == T_PUNCT && a.p == '(' && b.k == T_PUNCT && b.p == '('))
        return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, kw, "attribute without its (( ))");
    for (;;) {
        struct tok t = lex_next(&sc->lx);
        if (t.k == T_PUNCT && t.p == ',')
            continue;
        if (t.k == T_PUNCT && t.p == ')') {
            struct tok e = lex_next(&sc->lx);
            if (e.k == T_PUNCT && e.p == ')')
                return 0;
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, kw, "attribute without its (( ))");
        }
        if (t.k != T_ID)
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, t.k == T_EOF || t.k == T_NL ? kw : &t,
                              "malformed attribute");
        if (attr_name(sc, &t, ""))
            return 1;
        struct tok n = lex_peek(&sc->lx);
        if (n.k == T_PUNCT && n.p == '(') {
            lex_next(&sc->lx);
            if (attr_args(sc))
                return 1;
        }
    }
}

/* [[ns::a, b(args), ...]]: the lexer stands after the second '['. */
static int attr_c23(struct screen *sc, const struct tok *open)
{
    for (;;) {
        struct tok t = lex_next(&sc->lx);
        if (t.k == T_PUNCT && t.p == ',')
            continue;
        if (t.k == T_PUNCT && t.p == ']') {
            struct tok e = lex_next(&sc->lx);
            if (e.k == T_PUNCT && e.p == ']')
                return 0;
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, open, "attribute without its ]]");
        }
        if (t.k != T_ID)
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, t.k == T_EOF || t.k == T_NL ? open : &t,
                              "malformed attribute");
        char ns[32] = "";
        struct tok c1 = lex_peek(&sc->lx);
        if (c1.k == T_PUNCT && c1.p == ':') {
            lex_next(&sc->lx);
            struct tok c2 = lex_next(&sc->lx), name = lex_next(&sc->lx);
            if (!(c2.k == T_PUNCT && c2.p == ':') || name.k != T_ID)
                return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, &t, "malformed attribute");
            tok_word(sc, &t, ns, sizeof ns);
            if (!ns[0] || t.n >= sizeof ns)
                return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, &t, "attribute namespace");
            t = name;
        }
        if (attr_name(sc, &t, ns))
            return 1;
        struct tok n = lex_peek(&sc->lx);
        if (n.k == T_PUNCT && n.p == '(') {
            lex_next(&sc->lx);
            if (attr_args(sc))
                return 1;
        }
    }
}

/* _Pragma("text"): a plain string literal whose text is an allowed pragma.
 * The lexer stands after _Pragma. */
static int pragma_operator(struct screen *sc, const struct tok *kw)
{
    struct tok a = lex_next(&sc->lx), str = lex_next(&sc->lx), b = lex_next(&sc->lx);
    if (!(a.k == T_PUNCT && a.p == '(' && str.k == T_STR && !str.pfx && str.n >= 2 &&
          b.k == T_PUNCT && b.p == ')'))
        return refuse_tok(sc, PLAT_SCREEN_PRAGMA, kw, "_Pragma without one plain string literal");
    const char *s = sc->lx.s + str.at;
    if (s[str.n - 1] != '"')
        return refuse_tok(sc, PLAT_SCREEN_PRAGMA, kw, "_Pragma without one plain string literal");
    char text[256];
    size_t n = 0;
    for (size_t i = 1; i + 1 < str.n; i++) {
        char c = s[i];
        if (c == '\\') { /* destringize: \" and \\ only (no pragma here needs more) */
            if (i + 2 >= str.n || (s[i + 1] != '"' && s[i + 1] != '\\'))
                return refuse_tok(sc, PLAT_SCREEN_PRAGMA, &str, "_Pragma with an escape");
            c = s[++i];
        }
        if (n + 1 >= sizeof text)
            return refuse_tok(sc, PLAT_SCREEN_PRAGMA, &str, "_Pragma text too long");
        text[n++] = c;
    }
    if (!allow_pragma(text, n))
        return refuse(sc, PLAT_SCREEN_PRAGMA, str.at, "pragma not on the allow-list", text, n);
    return 0;
}

/* The rules for one identifier wherever it appears. */
static int screen_word(struct screen *sc, const struct tok *t)
{
    char w[128];
    tok_word(sc, t, w, sizeof w);
    if (strcmp(w, "kope_kernel") == 0 || strcmp(w, "KOPE_KERNEL") == 0)
        sc->has_kernel = 1;
    if (IN(w, asm_words))
        return refuse_tok(sc, PLAT_SCREEN_ASM, t, "inline assembly");
    if (IN(w, state_words))
        return refuse_tok(sc, PLAT_SCREEN_STATE, t, "thread-local storage");
    if (IN(w, probe_words))
        return refuse_tok(sc, PLAT_SCREEN_HEADER, t, "file probe");
    if (IN(w, forbidden_calls))
        return refuse_tok(sc, PLAT_SCREEN_CALL, t, "forbidden identifier");
    if (strcmp(w, "__declspec") == 0 || strcmp(w, "__pragma") == 0)
        return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, t,
                          "not allowed (write __attribute__((...)) or _Pragma(\"...\"))");
    if (strcmp(w, "__attribute__") == 0 || strcmp(w, "__attribute") == 0)
        return attr_gnu(sc, t);
    if (strcmp(w, "_Pragma") == 0)
        return pragma_operator(sc, t);
    return 0;
}

/* #include: only <h> or "h" of the allow-list. The lexer stands after the
 * directive's name. */
static int screen_include(struct screen *sc, const struct tok *name)
{
    struct lexer *lx = &sc->lx;
    while (lx->i < lx->len) { /* blanks and comments, not the newline */
        const char *s = lx->s;
        if (s[lx->i] == ' ' || s[lx->i] == '\t' || s[lx->i] == '\f' || s[lx->i] == '\v') {
            lx->i++;
        } else if (s[lx->i] == '/' && lx->i + 1 < lx->len && s[lx->i + 1] == '*') {
            const char *e = strstr(s + lx->i + 2, "*/");
            lx->i = e ? (size_t)(e - s) + 2 : lx->len;
        } else {
            break;
        }
    }
    char close = 0;
    if (lx->i < lx->len && lx->s[lx->i] == '<')
        close = '>';
    else if (lx->i < lx->len && lx->s[lx->i] == '"')
        close = '"';
    if (!close)
        return refuse_tok(sc, PLAT_SCREEN_HEADER, name, "#include of a macro is not allowed");
    size_t b = ++lx->i;
    while (lx->i < lx->len && lx->s[lx->i] != close && lx->s[lx->i] != '\n')
        lx->i++;
    size_t hn = lx->i - b;
    if (lx->i < lx->len && lx->s[lx->i] == close)
        lx->i++;
    char h[128];
    int ok = hn < sizeof h;
    if (ok) {
        memcpy(h, lx->s + b, hn);
        h[hn] = '\0';
        ok = IN(h, allowed_headers);
    }
    if (!ok)
        return refuse(sc, PLAT_SCREEN_HEADER, b, "header outside the allow-list (" K3_ALLOWED_HEADERS_TEXT ")",
                      lx->s + b, hn);
    return 0;
}

/* #pragma: the rest of the line, its tokens joined by one blank. */
static int screen_pragma(struct screen *sc, const struct tok *name)
{
    char text[256];
    size_t n = 0;
    for (;;) {
        struct tok t = lex_next(&sc->lx);
        if (t.k == T_EOF || t.k == T_NL)
            break;
        if (n + t.n + 2 >= sizeof text)
            return refuse_tok(sc, PLAT_SCREEN_PRAGMA, name, "pragma too long");
        if (n)
            text[n++] = ' ';
        memcpy(text + n, sc->lx.s + t.at, t.n);
        n += t.n;
    }
    sc->dir = D_NONE;
    if (!allow_pragma(text, n))
        return refuse(sc, PLAT_SCREEN_PRAGMA, name->at, "pragma not on the allow-list", text, n);
    return 0;
}

/* A directive: the lexer stands after the '#' that starts a line. */
static int screen_directive(struct screen *sc, const struct tok *hash)
{
    sc->lx.in_dir = 1;
    struct tok t = lex_next(&sc->lx);
    if (t.k == T_EOF || t.k == T_NL) { /* the null directive */
        sc->dir = D_NONE;
        return 0;
    }
    sc->dir = D_OTHER;
    if (t.k == T_NUM)
        return refuse(sc, PLAT_SCREEN_DIRECTIVE, hash->at, "line marker directive", sc->lx.s + hash->at,
                      t.at + t.n - hash->at);
    if (t.k != T_ID)
        return refuse_tok(sc, PLAT_SCREEN_DIRECTIVE, hash, "directive");
    char w[32];
    tok_word(sc, &t, w, sizeof w);
    if (!allow_directive(sc->lx.s + t.at, t.n)) {
        int reads = strcmp(w, "embed") == 0 || strcmp(w, "include_next") == 0 || strcmp(w, "import") == 0;
        return refuse_tok(sc, reads ? PLAT_SCREEN_HEADER : PLAT_SCREEN_DIRECTIVE, &t,
                          "directive not on the allow-list (" ALLOW_DIRECTIVES_TEXT " )");
    }
    if (strcmp(w, "include") == 0)
        return screen_include(sc, &t);
    if (strcmp(w, "pragma") == 0)
        return screen_pragma(sc, &t);
    if (strcmp(w, "define") == 0 || strcmp(w, "undef") == 0) {
        struct tok m = lex_next(&sc->lx);
        if (m.k != T_ID)
            return refuse_tok(sc, PLAT_SCREEN_DIRECTIVE, &t, "malformed");
        if (allow_reserved_name(sc->lx.s + m.at, m.n))
            return refuse_tok(sc, PLAT_SCREEN_DIRECTIVE, &m, "macro with a reserved name (__x, _X)");
        if (screen_word(sc, &m))
            return 1;
        if (w[0] == 'd')
            sc->dir = sc->lx.i < sc->lx.len && sc->lx.s[sc->lx.i] == '(' ? D_DEFINE_FN : D_DEFINE_OBJ;
    }
    return 0;
}

/* The token loop both screens share. */
static int screen_tokens(struct screen *sc)
{
    for (;;) {
        struct tok t = lex_next(&sc->lx);
        if (t.k == T_EOF)
            return 0;
        if (t.k == T_NL) {
            sc->dir = D_NONE;
            continue;
        }
        if (t.k == T_RAW)
            return refuse_tok(sc, PLAT_SCREEN_ATTRIBUTE, &t, "raw string literal");
        if (t.k == T_ID) {
            if (screen_word(sc, &t))
                return 1;
            continue;
        }
        if (t.k != T_PUNCT)
            continue;
        if (t.p >= 0x80)
            return refuse(sc, PLAT_SCREEN_ATTRIBUTE, t.at, "non-ASCII byte outside comments and strings",
                          "", 0);
        if (t.p == '#' && t.bol && sc->dir == D_NONE && !sc->pp) {
            if (screen_directive(sc, &t))
                return 1;
        } else if (t.p == '#' || t.p == 'H') {
            /* '#' stringizes and '##' pastes inside a function-like macro, '##'
             * in an object-like one; anywhere else a '#' could only be made
             * to look like a directive or line marker */
            if (sc->pp || !(sc->dir == D_DEFINE_FN || (sc->dir == D_DEFINE_OBJ && t.p == 'H')))
                return refuse_tok(sc, PLAT_SCREEN_DIRECTIVE, &t, "'#' outside a directive");
        } else if (t.p == '[') {
            struct tok n = lex_peek(&sc->lx);
            if (n.k == T_PUNCT && n.p == '[') {
                lex_next(&sc->lx);
                if (attr_c23(sc, &t))
                    return 1;
            }
        }
    }
}

int k3_screen_source(const char *src, size_t len, enum plat_screen_rule *rule, char *detail,
                     size_t detail_len)
{
    *rule = PLAT_SCREEN_NONE;
    if (detail_len)
        detail[0] = '\0';
    if (len > PLAT_SRC_MAX) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source is %zu bytes, over the %d-byte cap", len, PLAT_SRC_MAX);
        return 1;
    }
    if (memchr(src, '\0', len)) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source contains a NUL byte");
        return 1;
    }
    if (len >= 3 && (unsigned char)src[0] == 0xEF && (unsigned char)src[1] == 0xBB &&
        (unsigned char)src[2] == 0xBF) {
        src += 3; /* UTF-8 byte order mark: the compiler skips it too */
        len -= 3;
    }
    /* every character, comments and strings included, on the text
     * allow-list (platform/allow.h): no bidirectional or zero-width control
     * can make the source read one way and compile another */
    unsigned long cp = 0;
    size_t at = allow_text_scan(src, len, &cp);
    if (at < len) {
        int line = 1;
        for (size_t i = 0; i < at; i++)
            line += src[i] == '\n';
        *rule = PLAT_SCREEN_CHARACTER;
        snprintf(detail, detail_len,
                 "line %d: character U+%04lX is not on the source's text allow-list (printable ASCII, "
                 "and in comments and strings letters, punctuation and symbols; no control or "
                 "bidirectional character)", line, cp);
        return 1;
    }
    struct src text;
    size_t bad = 0;
    int p2 = src_phase2(src, len, &text, &bad);
    if (p2 == -2) {
        src_free(&text);
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "out of memory screening the source");
        return 1;
    }
    if (p2 == -1) {
        int line = 1;
        for (size_t i = 0; i < bad; i++)
            line += src[i] == '\n';
        src_free(&text);
        *rule = PLAT_SCREEN_ATTRIBUTE;
        snprintf(detail, detail_len, "line %d: carriage return not followed by a line feed", line);
        return 1;
    }
    struct screen sc = {
        .lx = {text.s, text.len, 0, 1, 0}, .src = &text, .rule = rule, .detail = detail, .dl = detail_len,
    };
    int r = screen_tokens(&sc);
    if (!r && !sc.has_kernel) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, detail_len, "no definition of kope_kernel (KOPE_KERNEL)");
        r = 1;
    }
    src_free(&text);
    return r;
}

/* ------------------------------------------ the preprocessed screen --- */

/* The identifiers the allowed headers use (k3.h struct k3_names): a sorted
 * array of words. A candidate's macro with one of these names could expand
 * inside a header, out of the preprocessed screen's sight. */
static int names_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void k3_names_free(struct k3_names *nm)
{
    if (!nm)
        return;
    free(nm->buf);
    free(nm->v);
    memset(nm, 0, sizeof *nm);
}

int k3_names_has(const struct k3_names *nm, const char *w)
{
    return nm && nm->n && bsearch(&w, nm->v, nm->n, sizeof *nm->v, names_cmp) != NULL;
}

/* Append one word to the buffer (words '\0'-separated, capped). */
static int names_push(const char *w, size_t n, char **buf, size_t *len, size_t *cap)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap * 2 : 1 << 16;
        char *nb = nc <= K3_NAMES_MAX ? realloc(*buf, nc) : NULL;
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, w, n);
    *len += n;
    (*buf)[(*len)++] = '\0';
    return 0;
}

/* Add the identifiers of one header to the word buffer: the names a macro
 * defined before the header could replace. Not a macro's parameters (local
 * to its definition), not the path of an #include, not #error text. */
static int names_add_file(const char *path, char **buf, size_t *len, size_t *cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *in = malloc(K3_NAMES_FILE_MAX + 1);
    size_t n = in ? fread(in, 1, K3_NAMES_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!in || n > K3_NAMES_FILE_MAX) {
        free(in);
        return -1;
    }
    struct src t;
    size_t bad;
    for (size_t i = 0; i < n; i++)
        if (in[i] == '\r' || in[i] == '\0')
            in[i] = ' '; /* headers are not hostile: only their words matter */
    int rc = src_phase2(in, n, &t, &bad) ? -1 : 0;
    free(in);
    struct lexer lx = {t.s, t.len, 0, 1, 0};
    enum { H_CODE, H_SKIP, H_PARAMS, H_BODY } st = H_CODE;
    struct tok par[32]; /* the parameters of the #define being read */
    int npar = 0;
    for (struct tok k; !rc && (k = lex_next(&lx)).k != T_EOF;) {
        if (k.k == T_NL) {
            st = H_CODE;
            continue;
        }
        if (k.k == T_PUNCT && k.p == '#' && k.bol && st == H_CODE) {
            lx.in_dir = 1;
            struct tok d = lex_next(&lx);
            if (d.k == T_NL || d.k == T_EOF)
                continue;
            const char *w = t.s + d.at;
            int is = d.k == T_ID;
            if (is && ((d.n == 7 && memcmp(w, "include", 7) == 0) || (d.n == 12 && memcmp(w, "include_next", 12) == 0) ||
                       (d.n == 5 && memcmp(w, "error", 5) == 0) || (d.n == 7 && memcmp(w, "warning", 7) == 0))) {
                st = H_SKIP;
            } else if (is && d.n == 6 && memcmp(w, "define", 6) == 0) {
                struct tok m = lex_next(&lx);
                if (m.k == T_ID)
                    rc = names_push(t.s + m.at, m.n, buf, len, cap);
                npar = 0;
                st = m.k == T_ID && lx.i < lx.len && t.s[lx.i] == '(' ? H_PARAMS : H_BODY;
            }
            continue;
        }
        if (st == H_PARAMS && k.k == T_PUNCT && k.p == ')') {
            st = H_BODY;
            continue;
        }
        if (k.k != T_ID || st == H_SKIP)
            continue;
        if (st == H_PARAMS) {
            if (npar < (int)(sizeof par / sizeof par[0]))
                par[npar++] = k;
            continue;
        }
        if (st == H_BODY) {
            int is_par = 0;
            for (int i = 0; i < npar && !is_par; i++)
                is_par = par[i].n == k.n && memcmp(t.s + par[i].at, t.s + k.at, k.n) == 0;
            if (is_par)
                continue;
        }
        rc = names_push(t.s + k.at, k.n, buf, len, cap);
    }
    src_free(&t);
    return rc;
}

int k3_names_load(const char *paths, struct k3_names *nm)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    memset(nm, 0, sizeof *nm);
    for (const char *p = paths; p && *p && !rc;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char path[K3_PATH_MAX + 64];
        if (l > 0 && l < sizeof path) {
            memcpy(path, p, l);
            path[l] = '\0';
            rc = names_add_file(path, &buf, &len, &cap);
        }
        p = e ? e + 1 : p + l;
    }
    if (rc) {
        free(buf);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == '\0';
    const char **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        free(buf);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        v[k++] = buf + i;
    qsort(v, k, sizeof *v, names_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    nm->buf = buf;
    nm->v = v;
    nm->n = u;
    return 0;
}

/* A line marker of -E output, "# N \"path\" flags", at column 0 (a '#' that
 * comes from a macro is printed after a blank by gcc and clang, so only the
 * preprocessor itself writes one here). The path is unescaped into path. */
static int pp_marker(const char *l, size_t n, long *line, char *path, size_t cap)
{
    if (n < 5 || l[0] != '#' || l[1] != ' ' || !isdigit((unsigned char)l[2]))
        return 0;
    size_t i = 2;
    long v = 0;
    while (i < n && isdigit((unsigned char)l[i]) && v < 100000000)
        v = v * 10 + (l[i++] - '0');
    if (i + 1 >= n || l[i] != ' ' || l[i + 1] != '"')
        return 0;
    i += 2;
    size_t k = 0;
    while (i < n && l[i] != '"') {
        if (l[i] == '\\' && i + 1 < n)
            i++;
        if (k + 1 < cap)
            path[k++] = l[i];
        i++;
    }
    path[k] = '\0';
    *line = v;
    return i < n;
}

int k3_screen_preprocessed(const char *pp, size_t len, const char *cand_path,
                           const struct k3_names *hdr, enum plat_screen_rule *rule, char *detail,
                           size_t dl)
{
    int rc = 1;
    *rule = PLAT_SCREEN_NONE;
    if (dl)
        detail[0] = '\0';
    /* the candidate's lines, and the source line of each */
    char *text = malloc(len + 1);
    size_t max_lines = 1;
    for (size_t i = 0; i < len; i++)
        max_lines += pp[i] == '\n';
    int *map = malloc(max_lines * sizeof *map);
    struct screen sc = {.pp = 1, .rule = rule, .detail = detail, .dl = dl};
    if (!text || !map) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, dl, "out of memory screening the preprocessed source");
        goto out;
    }
    size_t tn = 0, nl = 0;
    int in_cand = 0, seen_cand = 0;
    long line = 1;
    char path[K3_PATH_MAX + 64];
    for (size_t b = 0; b < len;) {
        const char *l = pp + b;
        const char *e = memchr(l, '\n', len - b);
        size_t n = e ? (size_t)(e - l) : len - b;
        b += n + 1;
        long mline;
        if (pp_marker(l, n, &mline, path, sizeof path)) {
            in_cand = strcmp(path, cand_path) == 0;
            seen_cand |= in_cand;
            line = mline;
            continue;
        }
        long this_line = line++;
        if (!in_cand)
            continue;
        if (n > 0 && l[0] == '#') {
            /* what the preprocessor itself prints of the candidate's file:
             * pragmas (also those _Pragma made) and, with -dD, its macros */
            size_t i = 1;
            while (i < n && (l[i] == ' ' || l[i] == '\t'))
                i++;
            size_t w = i;
            while (i < n && is_idc((unsigned char)l[i]))
                i++;
            size_t wl = i - w;
            map[0] = (int)this_line; /* refuse() reports the line from map[0] */
            sc.line_map = map;
            sc.n_lines = 1;
            sc.lx.s = "";
            sc.lx.len = 0;
            if (wl == 6 && memcmp(l + w, "pragma", 6) == 0) {
                if (!allow_pragma(l + i, n - i)) {
                    refuse(&sc, PLAT_SCREEN_PRAGMA, 0, "pragma not on the allow-list (after the "
                           "preprocessor)", l + i, n - i);
                    goto out;
                }
                continue;
            }
            if ((wl == 6 && memcmp(l + w, "define", 6) == 0) || (wl == 5 && memcmp(l + w, "undef", 5) == 0)) {
                while (i < n && l[i] == ' ')
                    i++;
                size_t m = i;
                while (i < n && is_idc((unsigned char)l[i]))
                    i++;
                char name[128];
                snprintf(name, sizeof name, "%.*s", (int)(i - m < sizeof name ? i - m : sizeof name - 1), l + m);
                if (allow_reserved_name(name, strlen(name)) || k3_names_has(hdr, name)) {
                    refuse(&sc, PLAT_SCREEN_DIRECTIVE, 0, allow_reserved_name(name, strlen(name))
                           ? "macro with a reserved name (__x, _X)"
                           : "macro named like an identifier of the allowed headers (it would "
                             "expand inside them): rename it", name, strlen(name));
                    goto out;
                }
                continue;
            }
            refuse(&sc, PLAT_SCREEN_DIRECTIVE, 0, "in the preprocessed source", l, n);
            goto out;
        }
        memcpy(text + tn, l, n);
        tn += n;
        text[tn++] = '\n';
        map[nl++] = (int)this_line;
    }
    text[tn] = '\0';
    if (!seen_cand) {
        *rule = PLAT_SCREEN_DIRECTIVE;
        snprintf(detail, dl, "the preprocessed source has no line of the candidate's file "
                 "(line markers off?): it cannot be screened");
        goto out;
    }
    sc.lx = (struct lexer){text, tn, 0, 1, 0};
    sc.line_map = map;
    sc.n_lines = nl;
    rc = screen_tokens(&sc);
out:
    free(text);
    free(map);
    return rc;
}

/* ------------------------------------------- includes, by the compiler --- */

/* The source screen's tokenizer reads directives by hand, and the compiler
 * accepts spellings it does not (a comment or a form feed between '#' and
 * "include"). So the compiler is asked: the candidate is compiled with -H
 * (every header opened, one line each, depth as leading dots) and -MD (every
 * file read, #embed included). A header the candidate itself includes (depth
 * 1) must be one the allow-list resolves to; any other file read must be the
 * candidate, the generated prototype header, or a file the allowed headers
 * themselves read (the closure, taken once from a probe compile). */

/* Is path one of the '\n'-separated entries of list? */
static int path_in(const char *list, const char *path, size_t plen)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == plen && memcmp(p, path, plen) == 0)
            return 1;
        p = e ? e + 1 : p + l;
    }
    return 0;
}

/* The next header line of -H output from *pos ("... /path": depth as dots),
 * skipping every other line; 0 at the end of out. */
static int hline_next(const char **pos, size_t *depth, const char **path, size_t *plen)
{
    while (**pos) {
        const char *l = *pos, *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        size_t dots = 0;
        while (dots < len && l[dots] == '.')
            dots++;
        *pos = e ? e + 1 : l + len;
        if (dots > 0 && dots < len && l[dots] == ' ') {
            *depth = dots;
            *path = l + dots + 1;
            *plen = len - dots - 1;
            return 1;
        }
    }
    return 0;
}

int k3_includes_collect(const char *out, char *direct, size_t direct_len, char *all, size_t all_len)
{
    size_t dn = 0, an = 0, dots, pl;
    const char *path;
    int rc = 0;
    if (direct_len)
        direct[0] = '\0';
    if (all_len)
        all[0] = '\0';
    for (const char *l = out; hline_next(&l, &dots, &path, &pl);) {
        {
            char *dst = dots == 1 ? direct : all;
            size_t *n = dots == 1 ? &dn : &an, cap = dots == 1 ? direct_len : all_len;
            if (*n + pl + 2 > cap)
                rc = -1;
            else {
                memcpy(dst + *n, path, pl);
                *n += pl;
                dst[(*n)++] = '\n';
                dst[*n] = '\0';
            }
        }
    }
    return rc;
}

int k3_screen_includes(const char *out, const char *deps, const char *allowed_direct,
                       const char *closure, const char *own, enum plat_screen_rule *rule,
                       char *detail, size_t dl)
{
    /* -H lines: depth 1 = what the candidate (or the -include'd prototype)
     * included itself */
    size_t dots, pl;
    const char *path;
    for (const char *l = out; hline_next(&l, &dots, &path, &pl);) {
        {
            int ok = dots == 1 ? path_in(allowed_direct, path, pl) || path_in(own, path, pl)
                               : path_in(closure, path, pl) || path_in(own, path, pl);
            if (!ok) {
                const char *base = path + pl;
                while (base > path && base[-1] != '/')
                    base--;
                *rule = PLAT_SCREEN_HEADER;
                snprintf(detail, dl, "the compiler opened '%.*s', outside the allow-list (%s)",
                         (int)(path + pl - base), base, K3_ALLOWED_HEADERS_TEXT);
                return 1;
            }
        }
    }
    /* -MD: "target: dep dep \\\n dep ..." - every file read, #embed too.
     * Fail closed: a list that is missing, unreadable (deps NULL), cut
     * short, unparsable or without the candidate's own file is no evidence
     * that nothing else was read (a compiler that deleted its list, or was
     * made to write none, must not pass as "read nothing"). */
    size_t dlen = deps ? strlen(deps) : 0;
    const char *p = deps ? strchr(deps, ':') : NULL;
    const char *why = !deps ? "missing or unreadable (a fatal error, such as an #include it "
                              "cannot open, stops clang before it writes one)"
                      : !p || p == deps ? "unparsable"
                      : dlen < 2 || deps[dlen - 1] != '\n' || deps[dlen - 2] == '\\' ? "cut short"
                                                                                  : NULL;
    if (!why) {
        /* own's first line is the candidate's file */
        char first[1024];
        size_t ol = own ? strcspn(own, "\n") : 0;
        int found = 0;
        if (ol && ol < sizeof first) {
            memcpy(first, own, ol);
            first[ol] = '\0';
            for (const char *q = p; (q = strstr(q, first)) && !found; q++)
                found = (q[-1] == ' ' || q[-1] == '\t') &&
                        (q[ol] == ' ' || q[ol] == '\n' || q[ol] == '\\' || q[ol] == '\r');
        }
        if (!found)
            why = "without the candidate's own file";
    }
    if (why) {
        *rule = PLAT_SCREEN_HEADER;
        snprintf(detail, dl, "the compiler's dependency list is %s: what it read cannot be "
                 "checked, so the candidate is refused", why);
        return 1;
    }
    while (p && *p) {
        p++;
        while (*p == ' ' || *p == '\\' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        const char *b = p;
        while (*p && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' &&
               !(*p == '\\' && (p[1] == '\n' || p[1] == '\r')))
            p++;
        pl = (size_t)(p - b);
        if (pl == 0)
            break;
        if (b[pl - 1] == ':') /* -MP phony targets, not produced here, but harmless */
            continue;
        if (!path_in(closure, b, pl) && !path_in(own, b, pl) && !path_in(allowed_direct, b, pl)) {
            const char *base = b + pl;
            while (base > b && base[-1] != '/')
                base--;
            *rule = PLAT_SCREEN_HEADER;
            snprintf(detail, dl, "the compiler read '%.*s' (an #include or #embed outside the "
                     "allow-list: %s)", (int)(b + pl - base), base, K3_ALLOWED_HEADERS_TEXT);
            return 1;
        }
        p--; /* the loop's p++ steps over the separator */
    }
    return 0;
}

/* ------------------------------------------------- diagnostics kept --- */

/* The one cleaner every target uses (platform/diag.c: an allow-list of
 * lines attributed to the candidate's own file); the K3 candidate's file is
 * cand.c, so its diagnostics read "cand.c:LINE:COL: ...". */
size_t k3_diag_clean(const char *in, const char *cand_path, char *out, size_t out_len)
{
    return plat_diag_clean(in, cand_path, out, out_len);
}

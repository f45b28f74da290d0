/*
 * platform/ascend/screen.c - what an Ascend C candidate may say.
 *
 * The candidate is one C++ file compiled by the toolkit (bisheng) for the AI
 * cores *and* for the host side of the kernel-launch library, which is linked
 * into kope's host program. Device code cannot reach the host OS, but host
 * code in the same file could (a static constructor calling system(), say).
 * So before anything is built the source must:
 *   - include only "kernel_operator.h", "kope_ascend.h" and the Ascend C
 *     library headers under "lib/" (matmul, ...), nothing else;
 *   - name no process, file, network or allocation call, no asm, no
 *     constructor/destructor or section attribute;
 *   - define kope_kernel as a `__global__ __aicore__` function;
 *   - hold no host-side code (issue 11): every function body at file or
 *     class scope belongs to an `__aicore__` function (bisheng compiles
 *     those for the AI Core only), and no file-scope variable needs code at
 *     load time (only `constexpr`, or `const` without a call; class-scope
 *     `static` data only `constexpr`). A host function or a global object's
 *     constructor in this file would run inside the host program, which
 *     keeps the reference and writes the report;
 *   - use only listed attributes and pragmas (platform/allow.h, shared
 *     with the K3 screen): __attribute__((...)) and [[...]] names from the
 *     attribute allow-list, #pragma from the pragma allow-list; the file
 *     probes __has_include, __has_include_next, __has_embed and __declspec
 *     refused wherever they appear;
 *   - hide nothing from this scan: no preprocessor directive but #include
 *     of the allowed headers, `#define NAME number`, conditionals, an
 *     allowed #pragma and the null directive (a macro could paste a
 *     forbidden word together or carry an attribute; #import and #embed
 *     read files), no backslash
 *     outside literals (a line splice joins words), no digraph `%:`, no
 *     trigraph `??`, no raw string literal, no `_Pragma`.
 * A token scan with a scope stack, not a parser: comments and string
 * literals are skipped, so a forbidden word inside a comment is harmless and
 * one in code is caught. It refuses some honest C++ (a template head with a
 * call in it, a const table at file scope): the prompt asks for the plain
 * form.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "platform/allow.h"
#include "platform/ascend/ascend.h"

static const char *const forbidden_calls[] = {
    "system", "popen", "fork", "vfork", "execv", "execve", "execvp", "execl", "execlp", "exec",
    "open", "openat", "fopen", "freopen", "creat", "unlink", "remove", "rename", "socket",
    "connect", "bind", "listen", "accept", "send", "recv", "mmap", "mprotect", "dlopen",
    "dlsym", "syscall", "kill", "ptrace", "getenv", "setenv", "putenv", "malloc", "calloc",
    "realloc", "free", "printf", "fprintf", "puts", "write", "read", "exit", "_exit", "abort",
    "signal", "sigaction", "longjmp", "setjmp", "pthread_create", "thread", "aclrtMalloc",
    "aclrtMemcpy", "aclInit", NULL};

static int word_eq(const char *w, size_t wl, const char *s)
{
    return strlen(s) == wl && memcmp(w, s, wl) == 0;
}

static int reject(enum plat_screen_rule *rule, enum plat_screen_rule r, char *detail, size_t dl,
                  int line, const char *what, size_t wl)
{
    *rule = r;
    snprintf(detail, dl, "line %d: %s '%.*s'", line,
             r == PLAT_SCREEN_HEADER ? "header not allowed" :
             r == PLAT_SCREEN_CALL ? "forbidden call" :
             r == PLAT_SCREEN_ASM ? "inline assembly" :
             r == PLAT_SCREEN_CTOR ? "host-side code (constructor, destructor, host function)" :
             r == PLAT_SCREEN_STATE ? "host-side state" : "not allowed",
             (int)(wl > 80 ? 80 : wl), what);
    return 1;
}

/* Skip blanks (no comments: the caller's scan handles those) from i. */
static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* The attribute names of a GNU (gnu=1: after __attribute__) or C++11
 * (after the first '[' of "[[") attribute list at i, against the
 * allow-list (platform/allow.h). 0 when every name is on it; 1 with the
 * offending name in *bad (its length in *bl), or the list's start when it is
 * malformed. Only checks: the caller's scan goes on over the same text. */
static int attr_names_ok(const char *s, size_t len, size_t i, int gnu, const char **bad, size_t *bl)
{
    *bad = s + i;
    *bl = 9;
    i = skip_ws(s, len, i);
    if (i >= len || s[i] != (gnu ? '(' : '['))
        return 1;
    i = skip_ws(s, len, i + 1);
    if (gnu && (i >= len || s[i++] != '('))
        return 1;
    for (;;) {
        i = skip_ws(s, len, i);
        if (i >= len)
            return 1;
        if (s[i] == ',') {
            i++;
            continue;
        }
        if (s[i] == (gnu ? ')' : ']')) {
            i = skip_ws(s, len, i + 1);
            return !(i < len && s[i] == (gnu ? ')' : ']'));
        }
        if (!(isalpha((unsigned char)s[i]) || s[i] == '_'))
            return 1;
        size_t a = i;
        while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_'))
            i++;
        char ns[32] = "", name[64];
        size_t k = skip_ws(s, len, i);
        if (!gnu && k + 1 < len && s[k] == ':' && s[k + 1] == ':') {
            snprintf(ns, sizeof ns, "%.*s", (int)(i - a < sizeof ns ? i - a : sizeof ns - 1), s + a);
            k = skip_ws(s, len, k + 2);
            a = i = k;
            while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_'))
                i++;
        }
        snprintf(name, sizeof name, "%.*s", (int)(i - a < sizeof name ? i - a : sizeof name - 1), s + a);
        if (!name[0] || !allow_attribute(ns, name)) {
            *bad = s + a;
            *bl = i - a ? i - a : 1;
            return 1;
        }
        i = skip_ws(s, len, i);
        if (i < len && s[i] == '(') { /* the arguments: balanced, not names */
            int depth = 0;
            do {
                depth += s[i] == '(';
                depth -= s[i] == ')';
                i++;
            } while (i < len && depth > 0);
        }
    }
}

/* One statement at file or class scope, as far as the screen needs it. */
struct stmt {
    int tokens, line;
    int aicore, global, kernel, constexpr_, const_, using_, typedef_, static_assert_, static_;
    int structish;     /* struct/class/union/enum before any '(' */
    int paren, eq, string, extern_, namespace_;
    int done;          /* already judged (a brace initializer) */
};

enum scope_kind { SC_NS, SC_CLASS };

/* A directive the screen can see through: #include (checked by the caller),
 * conditionals, #undef, and #define NAME <number>. */
static int directive_ok(const char *d, size_t dl, const char *rest, size_t rl)
{
    static const char *const cond[] = {"if", "ifdef", "ifndef", "elif", "else", "endif", "undef", NULL};
    for (const char *const *c = cond; *c; c++)
        if (word_eq(d, dl, *c))
            return 1;
    if (!word_eq(d, dl, "define"))
        return 0;
    size_t i = 0;
    while (i < rl && (rest[i] == ' ' || rest[i] == '\t')) i++;
    if (i >= rl || !(isalpha((unsigned char)rest[i]) || rest[i] == '_'))
        return 0;
    while (i < rl && (isalnum((unsigned char)rest[i]) || rest[i] == '_')) i++;
    while (i < rl && (rest[i] == ' ' || rest[i] == '\t')) i++;
    int open = i < rl && rest[i] == '(';
    if (open) i++;
    if (i < rl && rest[i] == '-') i++;
    if (i >= rl || !isdigit((unsigned char)rest[i]))
        return 0;
    while (i < rl && (isalnum((unsigned char)rest[i]) || rest[i] == '.')) i++;
    if (open && (i >= rl || rest[i++] != ')'))
        return 0;
    while (i < rl && (rest[i] == ' ' || rest[i] == '\t')) i++;
    return i == rl || (i + 1 < rl && rest[i] == '/' && rest[i + 1] == '/');
}

int asc_screen_source(const char *src, size_t len, enum plat_screen_rule *rule, char *detail,
                      size_t detail_len)
{
    *rule = PLAT_SCREEN_NONE;
    detail[0] = '\0';
    if (len > PLAT_SRC_MAX) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source over %d bytes", PLAT_SRC_MAX);
        return 1;
    }
    {
        /* the text allow-list shared with the K3 screen (platform/allow.h) */
        unsigned long cp = 0;
        size_t at = allow_text_scan(src, len, &cp);
        if (at < len) {
            int l = 1;
            for (size_t i = 0; i < at; i++)
                l += src[i] == '\n';
            *rule = PLAT_SCREEN_CHARACTER;
            snprintf(detail, detail_len, "line %d: character U+%04lX is not on the source's text allow-list "
                     "(no control or bidirectional character)", l, cp);
            return 1;
        }
    }
    int line = 1, bol = 1, saw_kernel = 0, saw_global = 0, saw_aicore = 0;
    /* scopes: file/namespace and class bodies are judged statement by
     * statement; inside a function body or a brace initializer (body > 0)
     * only the word rules apply */
    enum scope_kind sc[64];
    int sc_typedef[64]; /* `typedef struct {...} S;`: the typedef outlives the body */
    int nsc = 1, body = 0, body_is_init = 0;
    struct stmt st;
    sc[0] = SC_NS;
    memset(&st, 0, sizeof st);
#define ST_TOKEN() do { if (!body && st.tokens++ == 0) st.line = line; } while (0)
    size_t i = 0;
    while (i < len) {
        char c = src[i];
        if (c == '\n') { line++; bol = 1; i++; continue; }
        if (c == '/' && i + 1 < len && src[i + 1] == '/') {
            while (i < len && src[i] != '\n') {
                if (src[i] == '\\') { /* a splice would continue the comment onto the next line's code */
                    size_t k = i + 1;
                    while (k < len && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r')) k++;
                    if (k >= len || src[k] == '\n')
                        return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line,
                                      "\\ ending a // comment", 20);
                }
                i++;
            }
            continue;
        }
        if (c == '/' && i + 1 < len && src[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(src[i] == '*' && src[i + 1] == '/')) {
                if (src[i] == '\n') line++;
                i++;
            }
            i += 2;
            continue;
        }
        if (c == '\'' && i > 0 && isalnum((unsigned char)src[i - 1])) {
            i++; /* a digit separator (1'000), or a prefix (L'x'): scanned as code */
            continue;
        }
        if (c == '"' || c == '\'') {
            char q = c;
            i++;
            while (i < len && src[i] != q && src[i] != '\n') {
                if (src[i] == '\\') i++;
                i++;
            }
            i++;
            bol = 0;
            ST_TOKEN();
            if (!body) st.string = 1;
            continue;
        }
        if (c == '\\')
            return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, "\\ (line splice) outside a literal", 33);
        if ((c == '%' && i + 1 < len && src[i + 1] == ':') || (c == '?' && i + 1 < len && src[i + 1] == '?'))
            return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, src + i, 2);
        if (bol && c == '#') {
            size_t j = i + 1;
            while (j < len && (src[j] == ' ' || src[j] == '\t')) j++;
            size_t d = j;
            while (j < len && (isalnum((unsigned char)src[j]) || src[j] == '_')) j++;
            size_t dl = j - d, eol = j;
            while (eol < len && src[eol] != '\n') eol++;
            if (word_eq(src + d, dl, "include")) {
                while (j < len && (src[j] == ' ' || src[j] == '\t')) j++;
                size_t k = j + 1;
                while (k < len && src[k] != '"' && src[k] != '>' && src[k] != '\n') k++;
                size_t hl = k > j + 1 ? k - j - 1 : 0;
                const char *h = src + j + 1;
                int ok = j < len && (src[j] == '"' || src[j] == '<') &&
                         ((hl == 17 && memcmp(h, "kernel_operator.h", 17) == 0) ||
                          (hl == 13 && memcmp(h, "kope_ascend.h", 13) == 0) ||
                          (hl > 4 && memcmp(h, "lib/", 4) == 0 && memmem(h, hl, "..", 2) == NULL));
                if (!ok)
                    return reject(rule, PLAT_SCREEN_HEADER, detail, detail_len, line, h, hl);
            } else if (dl == 6 && memcmp(src + d, "pragma", 6) == 0) {
                if (!allow_pragma(src + j, eol - j))
                    return reject(rule, PLAT_SCREEN_PRAGMA, detail, detail_len, line, src + i, eol - i);
            } else if (dl == 0 && skip_ws(src, eol, j) == eol) {
                /* the null directive */
            } else if (!directive_ok(src + d, dl, src + j, eol - j)) {
                return reject(rule, word_eq(src + d, dl, "import") || word_eq(src + d, dl, "embed") ||
                                            word_eq(src + d, dl, "include_next")
                                        ? PLAT_SCREEN_HEADER : PLAT_SCREEN_ATTRIBUTE,
                              detail, detail_len, line, src + i, eol - i);
            }
            for (size_t k = j; k < eol;) { /* a conditional's words: no file probes */
                size_t e = k;
                while (e < eol && (isalnum((unsigned char)src[e]) || src[e] == '_'))
                    e++;
                if (e > k && (word_eq(src + k, e - k, "__has_include") ||
                              word_eq(src + k, e - k, "__has_include_next") ||
                              word_eq(src + k, e - k, "__has_embed")))
                    return reject(rule, PLAT_SCREEN_HEADER, detail, detail_len, line, src + k, e - k);
                k = e > k ? e : k + 1;
            }
            i = eol; /* the rest of the directive */
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)src[j]) || src[j] == '_')) j++;
            const char *w = src + i;
            size_t wl = j - i;
            if (j < len && src[j] == '"' && w[wl - 1] == 'R') /* R"( )" hides its quotes from this scan */
                return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, "raw string literal", 18);
            if (word_eq(w, wl, "__has_include") || word_eq(w, wl, "__has_include_next") ||
                word_eq(w, wl, "__has_embed"))
                return reject(rule, PLAT_SCREEN_HEADER, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "__declspec"))
                return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "__attribute__") || word_eq(w, wl, "__attribute")) {
                const char *bad;
                size_t bl;
                if (attr_names_ok(src, len, j, 1, &bad, &bl)) {
                    int ctor = word_eq(bad, bl, "constructor") || word_eq(bad, bl, "destructor") ||
                               word_eq(bad, bl, "__constructor__") || word_eq(bad, bl, "__destructor__");
                    return reject(rule, ctor ? PLAT_SCREEN_CTOR : PLAT_SCREEN_ATTRIBUTE, detail, detail_len,
                                  line, bad, bl);
                }
            }
            if (word_eq(w, wl, "asm") || word_eq(w, wl, "__asm__") || word_eq(w, wl, "__asm"))
                return reject(rule, PLAT_SCREEN_ASM, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "constructor") || word_eq(w, wl, "destructor") ||
                word_eq(w, wl, "init_priority"))
                return reject(rule, PLAT_SCREEN_CTOR, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "section") || word_eq(w, wl, "alias") || word_eq(w, wl, "ifunc") ||
                word_eq(w, wl, "weakref") || word_eq(w, wl, "visibility") || word_eq(w, wl, "_Pragma") ||
                word_eq(w, wl, "__pragma"))
                return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, w, wl);
            for (const char *const *f = forbidden_calls; *f; f++) {
                if (word_eq(w, wl, *f)) {
                    size_t k = j;
                    while (k < len && isspace((unsigned char)src[k])) k++;
                    if (k < len && src[k] == '(')
                        return reject(rule, PLAT_SCREEN_CALL, detail, detail_len, line, w, wl);
                }
            }
            if (word_eq(w, wl, "kope_kernel")) saw_kernel = 1;
            if (word_eq(w, wl, "__global__")) saw_global = 1;
            if (word_eq(w, wl, "__aicore__")) saw_aicore = 1;
            ST_TOKEN();
            if (!body) {
                if (word_eq(w, wl, "__aicore__")) st.aicore = 1;
                if (word_eq(w, wl, "__global__")) st.global = 1;
                if (word_eq(w, wl, "kope_kernel")) st.kernel = 1;
                if (word_eq(w, wl, "constexpr")) st.constexpr_ = 1;
                if (word_eq(w, wl, "const")) st.const_ = 1;
                if (word_eq(w, wl, "using")) st.using_ = 1;
                if (word_eq(w, wl, "typedef")) st.typedef_ = 1;
                if (word_eq(w, wl, "static_assert")) st.static_assert_ = 1;
                if (word_eq(w, wl, "static")) st.static_ = 1;
                if (word_eq(w, wl, "extern")) st.extern_ = 1;
                if (word_eq(w, wl, "namespace")) st.namespace_ = 1;
                if (!st.paren && (word_eq(w, wl, "struct") || word_eq(w, wl, "class") ||
                                  word_eq(w, wl, "union") || word_eq(w, wl, "enum")))
                    st.structish = 1;
            }
            i = j;
            bol = 0;
            continue;
        }
        if (!isspace((unsigned char)c))
            bol = 0;
        if (c == '[' && skip_ws(src, len, i + 1) < len && src[skip_ws(src, len, i + 1)] == '[') {
            const char *bad;
            size_t bl;
            if (attr_names_ok(src, len, skip_ws(src, len, i + 1), 0, &bad, &bl))
                return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, bad, bl);
        }
        if (body) {
            /* inside a function body or an initializer: only braces matter */
            if (c == '{') {
                body++;
            } else if (c == '}' && --body == 0) {
                if (!body_is_init)
                    memset(&st, 0, sizeof st); /* a function definition needs no ';' */
            }
            i++;
            continue;
        }
        if (c == '(') st.paren = 1;
        if (c == '=' && !(i + 1 < len && src[i + 1] == '=')) st.eq = 1;
        if (c == '{') {
            if (st.namespace_ || (st.extern_ && st.string && !st.paren && st.tokens == 2)) {
                if (nsc >= 64)
                    return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, "nesting", 7);
                sc[nsc++] = SC_NS;
                memset(&st, 0, sizeof st);
            } else if (st.paren && !st.structish) {
                /* a function body (or a lambda in an initializer): device
                 * code only */
                if (!st.aicore) {
                    if (st.kernel)
                        break; /* kope_kernel without __aicore__: NO_KERNEL below */
                    return reject(rule, PLAT_SCREEN_CTOR, detail, detail_len, st.line,
                                  "host-side function (not __aicore__)", 35);
                }
                body = 1;
                body_is_init = 0;
            } else if (st.structish && !st.eq) {
                if (nsc >= 64)
                    return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, "nesting", 7);
                sc_typedef[nsc] = st.typedef_;
                sc[nsc++] = SC_CLASS;
                memset(&st, 0, sizeof st);
            } else {
                /* a brace initializer: judged as the variable it starts */
                if (sc[nsc - 1] == SC_NS ? !(st.constexpr_ || (st.const_ && !st.paren))
                                         : (st.static_ && !st.constexpr_))
                    return reject(rule, PLAT_SCREEN_STATE, detail, detail_len, st.line,
                                  "variable initialised at load time (use constexpr)", 50);
                st.done = 1;
                body = 1;
                body_is_init = 1;
            }
        } else if (c == '}') {
            int td = 0;
            if (nsc > 1 && sc[--nsc] == SC_CLASS)
                td = sc_typedef[nsc];
            memset(&st, 0, sizeof st);
            st.typedef_ = td;
        } else if (c == ';') {
            if (st.tokens && !st.done) {
                int ok;
                if (sc[nsc - 1] == SC_NS)
                    ok = st.using_ || st.typedef_ || st.static_assert_ || st.constexpr_ || st.aicore ||
                         (st.const_ && !st.paren) || (st.structish && !st.eq && !st.paren);
                else
                    ok = !st.static_ || st.constexpr_ || st.aicore || st.using_ || st.typedef_;
                if (!ok)
                    return reject(rule, PLAT_SCREEN_STATE, detail, detail_len, st.line,
                                  sc[nsc - 1] == SC_NS ? "file-scope variable or host declaration"
                                                       : "static data member (use constexpr)",
                                  sc[nsc - 1] == SC_NS ? 39 : 34);
            }
            memset(&st, 0, sizeof st);
        }
        i++;
    }
#undef ST_TOKEN
    if (!saw_kernel || !saw_global || !saw_aicore || (st.kernel && !st.aicore && st.paren)) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, detail_len, "no `extern \"C\" __global__ __aicore__ void kope_kernel(...)`%s",
                 saw_kernel ? " (kope_kernel is not marked __global__ __aicore__)" : "");
        return 1;
    }
    return 0;
}

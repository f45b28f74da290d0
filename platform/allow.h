/*
 * platform/allow.h - what a candidate's source may say, as allow-lists: the
 * preprocessor directives, the pragmas (with their arguments) and the
 * attribute names. Shared by every target's source screen (the K3 one in
 * platform/k3/screen.c, the Ascend one in platform/ascend/screen.c), so it
 * lives in neither target's folder.
 *
 * Everything not on a list is refused by its name. The lists are X-macros so
 * the arrays, the text a refusal quotes and the check that docs/K3-HARNESS.md
 * names every entry (tests/test_k3_allow.c) are made from one place.
 *
 * These are checks on text. They are a first filter: the compiled object is
 * checked again by the target (platform/k3/objcheck.c), which is the authority.
 */
#ifndef KOPE_PLATFORM_ALLOW_H
#define KOPE_PLATFORM_ALLOW_H

#include <stddef.h>

/* Directives a candidate may write (besides the null directive, a lone '#').
 * error and warning are kept: the built-in templates guard their parameters
 * with #error, and the text they print is the candidate's own. Refused, among
 * others: embed, include_next, import (read files), line and the GNU line
 * marker `# 123 "file"` (they would break the attribution of the
 * preprocessed output to the candidate's file), ident, sccs (put text into
 * the object), assert, unassert. */
#define ALLOW_DIRECTIVES(X) \
    X("define") X("undef") X("if") X("ifdef") X("ifndef") X("elif") X("elifdef") \
    X("elifndef") X("else") X("endif") X("include") X("pragma") X("error") X("warning")

/* Pragmas, as their leading words; the arguments each takes are checked by
 * allow_pragma (docs/K3-HARNESS.md lists them):
 *   GCC unroll N | GCC ivdep | GCC novector
 *   unroll | unroll N | unroll(N) | nounroll
 *   clang loop OPT(ARG) ... with OPT one of vectorize interleave unroll
 *     (enable|disable, vectorize/interleave also assume_safety, unroll also
 *     full), vectorize_width(N|fixed|scalable|N,fixed|N,scalable),
 *     vectorize_predicate(enable|disable), interleave_count(N),
 *     unroll_count(N), distribute(enable|disable), pipeline(disable),
 *     pipeline_initiation_interval(N)
 *   STDC FP_CONTRACT ON|OFF|DEFAULT
 *   clang fp contract(on|off|fast) | clang fp reassociate(on|off)
 * N is a decimal literal (no macro: what a macro expands to inside a pragma
 * is not screened). */
#define ALLOW_PRAGMAS(X) \
    X("GCC unroll") X("GCC ivdep") X("GCC novector") X("unroll") X("nounroll") \
    X("clang loop") X("STDC FP_CONTRACT") X("clang fp")

/* Attribute names (GNU __attribute__((...)) and C23 [[...]], with or
 * without the __x__ spelling; C23 ones with no namespace or gnu::/clang::).
 * Refused, among others: constructor, destructor, section, alias, weak,
 * weakref, ifunc, target_clones (makes an ifunc), target, optimize, naked,
 * cleanup, visibility, symver, used, retain, tls_model, mode, noipa,
 * riscv_vector_cc (another calling convention), overloadable. */
#define ALLOW_ATTRIBUTES(X) \
    X("always_inline") X("noinline") X("flatten") X("hot") X("cold") X("unused") \
    X("maybe_unused") X("aligned") X("packed") X("const") X("pure") X("may_alias") \
    X("vector_size") X("noreturn") X("nonnull") X("returns_nonnull") X("assume_aligned") \
    X("nodiscard") X("warn_unused_result") X("fallthrough") X("likely") X("unlikely") \
    X("deprecated") X("nothrow") X("riscv_rvv_vector_bits")

/* Namespaces a C23 attribute may carry: [[gnu::aligned(8)]]. */
#define ALLOW_ATTRIBUTE_NAMESPACES(X) X("gnu") X("__gnu__") X("clang") X("_Clang")

#define ALLOW_ELEM_(s) s,
#define ALLOW_TEXT_(s) " " s
/* "define undef ... warning": what a refusal quotes */
#define ALLOW_DIRECTIVES_TEXT ALLOW_DIRECTIVES(ALLOW_TEXT_)
extern const char *const allow_directives[];
extern const char *const allow_pragmas[];
extern const char *const allow_attributes[];
extern const char *const allow_attribute_namespaces[];
extern const size_t allow_n_directives, allow_n_pragmas, allow_n_attributes,
    allow_n_attribute_namespaces;

/* Is the directive name (len bytes, not NUL-terminated) on the list? */
int allow_directive(const char *name, size_t len);

/* Is the pragma text (what follows `pragma`, up to the end of the line;
 * blanks anywhere) on the list, with arguments of the right form? */
int allow_pragma(const char *text, size_t len);

/* Is the attribute name on the list? "__aligned__" counts as "aligned". ns
 * is the C23 namespace (NULL or "" for none). */
int allow_attribute(const char *ns, const char *name);

/* Is the identifier reserved for the implementation (starts with "__" or
 * with '_' and an upper-case letter)? A candidate may not define or undefine
 * such a macro: headers are written in them. */
int allow_reserved_name(const char *name, size_t len);

/* Text: the characters a candidate's source (comments and strings
 * included) and a suite's free text may hold, as an allow-list. Printable
 * ASCII and tab, newline, carriage return, form feed; and UTF-8 (strict: no
 * overlong form, no surrogate) of the code points people write in comments
 * (Latin, Greek and Cyrillic letters, general punctuation without its
 * format controls, super/subscripts, currency, letterlike, arrows, math
 * operators, technical, box drawing, shapes, CJK and Hangul, fullwidth).
 * Not on it: every other control (C0, DEL, C1), the bidirectional and
 * zero-width format characters (U+200B-U+200F, U+202A-U+202E,
 * U+2066-U+2069: "Trojan Source" code that shows one thing and compiles
 * another), soft hyphen, byte order marks, private use, tags, and anything
 * not decoded. Returns the byte length (1-4) of the allowed character at s
 * (n bytes available), 0 when it is not allowed; *cp gets the code point
 * decoded, or the first byte when it does not decode. */
size_t allow_text_char(const unsigned char *s, size_t n, unsigned long *cp);

/* The offset of the first character of s (n bytes) allow_text_char
 * refuses, or n when all are allowed; *cp as there. */
size_t allow_text_scan(const char *s, size_t n, unsigned long *cp);

#endif

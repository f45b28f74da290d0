/*
 * tests/test_k3_allow.c - the allow-lists of the K3 source screens (issue
 * 21): directives, pragmas, attributes, the file probes, the lexical rules
 * that keep the screen reading what the compiler reads, and the
 * preprocessed screen's attribution of -E output. For every list: refused
 * items of each kind, named in the refusal, and the honest constructs that
 * must pass. Pure function calls (no compiler): the end-to-end classes,
 * through a real compile and the object check, are in test_k3_hostile.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "platform/allow.h"
#include "platform/k3/k3.h"
#include "platform/platform.h"
#include "testutil.h"

#define KERN "#include \"kernel_abi.h\"\nvoid kope_kernel(void) {}\n"

/* src must be refused with rule, its detail naming want. */
static void refused(const char *src, enum plat_screen_rule rule, const char *want)
{
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    int rc = k3_screen_source(src, strlen(src), &r, d, sizeof d);
    if (rc != 1 || r != rule || !strstr(d, want))
        fail_msg("expected %s naming '%s' for:\n%s\ngot rc=%d %s: %s", plat_screen_rule_name(rule), want,
                 src, rc, plat_screen_rule_name(r), d);
}

static void passes(const char *src)
{
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    if (k3_screen_source(src, strlen(src), &r, d, sizeof d) != 0)
        fail_msg("refused: %s: %s\n%s", plat_screen_rule_name(r), d, src);
}

static void test_directives(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        enum plat_screen_rule rule;
        const char *name;
    } bad[] = {
        {"#embed \"/etc/passwd\"\n", PLAT_SCREEN_HEADER, "embed"},
        {"#include_next <math.h>\n", PLAT_SCREEN_HEADER, "include_next"},
        {"#import <math.h>\n", PLAT_SCREEN_HEADER, "import"},
        {"#line 7 \"other.c\"\n", PLAT_SCREEN_DIRECTIVE, "line"},
        {"# 7 \"other.c\" 1\n", PLAT_SCREEN_DIRECTIVE, "# 7"},
        {"#ident \"x\"\n", PLAT_SCREEN_DIRECTIVE, "ident"},
        {"#sccs \"x\"\n", PLAT_SCREEN_DIRECTIVE, "sccs"},
        {"#assert machine(riscv)\n", PLAT_SCREEN_DIRECTIVE, "assert"},
        {"#unassert machine\n", PLAT_SCREEN_DIRECTIVE, "unassert"},
        {"#frobnicate\n", PLAT_SCREEN_DIRECTIVE, "frobnicate"},
        /* spellings the compiler reads as the same directive */
        {"#/**/embed \"/etc/passwd\"\n", PLAT_SCREEN_HEADER, "embed"},
        {"%:embed \"/etc/passwd\"\n", PLAT_SCREEN_HEADER, "embed"},
        {"# /*\n */ line 3\n", PLAT_SCREEN_DIRECTIVE, "line"},
        {"#li\\\nne 3\n", PLAT_SCREEN_DIRECTIVE, "line"},
        {"#li\\  \nne 3\n", PLAT_SCREEN_DIRECTIVE, "line"},
        /* macros with reserved names: headers are written in them */
        {"#define _GNU_SOURCE 1\n", PLAT_SCREEN_DIRECTIVE, "_GNU_SOURCE"},
        {"#define __STDC_WANT_LIB_EXT1__ 1\n", PLAT_SCREEN_DIRECTIVE, "__STDC_WANT_LIB_EXT1__"},
        {"#undef __attribute__\n", PLAT_SCREEN_DIRECTIVE, "__attribute__"},
    };
    char src[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(src, sizeof src, "%s" KERN, bad[i].src);
        refused(src, bad[i].rule, bad[i].name);
    }
    passes("#define N 8\n#undef N\n#define F(x) #x\n#define CAT(a, b) a##b\n#define P(a) a ## _t\n"
           "#if defined(N) && N > 2\n#elif 1\n#else\n#error \"LMUL must be 1, 2 or 4\"\n#endif\n"
           "#ifdef N\n#endif\n#ifndef N\n#warning no N\n#endif\n#\n"
           "#include <stddef.h>\n#include <riscv_vector.h>\n" KERN);
    /* the list a refusal quotes is the list */
    for (size_t i = 0; i < allow_n_directives; i++)
        assert_non_null(strstr(ALLOW_DIRECTIVES_TEXT, allow_directives[i]));
}

static void test_file_probes(void **state)
{
    (void)state;
    refused("#if __has_include(</etc/passwd>)\n#endif\n" KERN, PLAT_SCREEN_HEADER, "__has_include");
    refused("#if __has_include_next(<math.h>)\n#endif\n" KERN, PLAT_SCREEN_HEADER, "__has_include_next");
    refused("#if __has_embed(\"/etc/passwd\")\n#endif\n" KERN, PLAT_SCREEN_HEADER, "__has_embed");
    /* wherever it appears */
    refused("#define P __has_include\n" KERN, PLAT_SCREEN_HEADER, "__has_include");
    refused(KERN "int x = __has_include(<math.h>);\n", PLAT_SCREEN_HEADER, "__has_include");
}

static void test_pragmas(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "comment(lib, \"/etc/passwd\")", "weak memcpy", "redefine_extname memcpy kope_kernel",
        "GCC optimize(\"O0\")", "GCC target(\"arch=rv64gc\")", "clang section text=\".init\"",
        "clang attribute push(__attribute__((constructor)), apply_to=function)",
        "push_macro(\"N\")", "pop_macro(\"N\")", "pack(1)", "GCC visibility push(default)",
        "GCC poison x", "GCC system_header", "once", "GCC unroll N", "GCC unroll 4u", "unroll 0x10",
        "clang loop vectorize(on)", "clang loop distribute(enable) bogus(1)", "STDC FENV_ACCESS ON",
        "GCC dependency \"/etc/passwd\"", "clang fp exceptions(strict)", "omp parallel",
    };
    char src[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(src, sizeof src, "#pragma %s\n" KERN, bad[i]);
        /* named by its first word */
        char first[32];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(bad[i], " ("), bad[i]);
        refused(src, PLAT_SCREEN_PRAGMA, first);
    }
    static const char *const good[] = {
        "GCC unroll 4", "GCC unroll 16", "unroll", "unroll 8", "unroll(2)", "nounroll", "GCC ivdep",
        "GCC novector", "clang loop vectorize(enable)", "clang loop unroll(full)",
        "clang loop vectorize(assume_safety) interleave(enable) interleave_count(4)",
        "clang loop vectorize_width(8, scalable)", "clang loop vectorize_width(fixed)",
        "clang loop unroll_count(4) pipeline(disable)", "STDC FP_CONTRACT ON", "STDC FP_CONTRACT OFF",
        "clang fp contract(fast)", "clang fp reassociate(on)",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(src, sizeof src, "#pragma %s\n" KERN, good[i]);
        passes(src);
        snprintf(src, sizeof src, KERN "void f(void) {\n  _Pragma(\"%s\")\n  for (int i = 0; i < 4; i++) {}\n}\n",
                 good[i]);
        passes(src);
    }
    /* the pragma operator: a plain literal whose text is on the list */
    passes("#define UNROLL4 _Pragma(\"GCC unroll 4\")\n" KERN);
    refused("_Pragma(\"comment(lib, \\\"x\\\")\")\n" KERN, PLAT_SCREEN_PRAGMA, "comment");
    refused("#define PR(x) _Pragma(#x)\n" KERN, PLAT_SCREEN_PRAGMA, "_Pragma");
    refused("_Pragma(L\"GCC unroll 4\")\n" KERN, PLAT_SCREEN_PRAGMA, "_Pragma");
    refused("_Pragma(\"GCC unroll\" \" 4\")\n" KERN, PLAT_SCREEN_PRAGMA, "_Pragma");
    refused("__pragma(unroll)\n" KERN, PLAT_SCREEN_ATTRIBUTE, "__pragma");
    /* a pragma spelled over a splice and a comment is still read */
    refused("#pra\\\ngma /* x */ weak memcpy\n" KERN, PLAT_SCREEN_PRAGMA, "weak");
}

static void test_attributes(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        enum plat_screen_rule rule;
        const char *name;
    } bad[] = {
        {"__attribute__((constructor)) static void f(void) {}\n", PLAT_SCREEN_CTOR, "constructor"},
        {"__attribute__((__destructor__)) static void f(void) {}\n", PLAT_SCREEN_CTOR, "__destructor__"},
        {"[[gnu::constructor]] static void f(void) {}\n", PLAT_SCREEN_CTOR, "constructor"},
        {"<:<:gnu::constructor:>:> static void f(void) {}\n", PLAT_SCREEN_CTOR, "constructor"},
        {"[ [gnu::constructor] ] static void f(void) {}\n", PLAT_SCREEN_CTOR, "constructor"},
        {"__attribute__((section(\".init_array\"))) static void (*p)(void);\n", PLAT_SCREEN_ATTRIBUTE, "section"},
        {"__attribute__((weak)) void *memcpy(void *d, const void *s, unsigned long n) { return d; }\n",
         PLAT_SCREEN_ATTRIBUTE, "weak"},
        {"static void g(void) {}\nvoid h(void) __attribute__((alias(\"g\")));\n", PLAT_SCREEN_ATTRIBUTE, "alias"},
        {"static void *r(void) { return 0; }\nvoid h(void) __attribute__((ifunc(\"r\")));\n",
         PLAT_SCREEN_ATTRIBUTE, "ifunc"},
        {"__attribute__((target_clones(\"default\", \"arch=+v\"))) static int t(void) { return 0; }\n",
         PLAT_SCREEN_ATTRIBUTE, "target_clones"},
        {"__attribute__((aligned(8), visibility(\"default\"))) int v;\n", PLAT_SCREEN_ATTRIBUTE, "visibility"},
        {"static void c(int *p) {}\nvoid f(void) { __attribute__((cleanup(c))) int x = 0; }\n",
         PLAT_SCREEN_ATTRIBUTE, "cleanup"},
        {"__attribute__((used)) static int u = 1;\n", PLAT_SCREEN_ATTRIBUTE, "used"},
        {"__attribute__((retain)) static int u = 1;\n", PLAT_SCREEN_ATTRIBUTE, "retain"},
        {"__attribute__((naked)) static void n(void) {}\n", PLAT_SCREEN_ATTRIBUTE, "naked"},
        {"__attribute__((riscv_vector_cc)) static void n(void) {}\n", PLAT_SCREEN_ATTRIBUTE, "riscv_vector_cc"},
        {"[[riscv::vector_cc]] static void n(void) {}\n", PLAT_SCREEN_ATTRIBUTE, "vector_cc"},
        {"[[omp::directive(parallel)]] static void n(void) {}\n", PLAT_SCREEN_ATTRIBUTE, "directive"},
        {"__declspec(dllexport) void n(void);\n", PLAT_SCREEN_ATTRIBUTE, "__declspec"},
        /* a macro name where an attribute goes: only listed names pass */
        {"#define CT constructor\n__attribute__((CT)) static void f(void) {}\n", PLAT_SCREEN_ATTRIBUTE, "CT"},
        {"#define A(x) __attribute__((x))\n", PLAT_SCREEN_ATTRIBUTE, "x"},
        {"__attribute__ ((aligned(8))\n", PLAT_SCREEN_ATTRIBUTE, "attribute"},
    };
    char src[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(src, sizeof src, "%s" KERN, bad[i].src);
        refused(src, bad[i].rule, bad[i].name);
    }
    passes("static inline __attribute__((always_inline)) int a(int x) { return x; }\n"
           "static __attribute__((noinline, hot)) int b(int x) { return x; }\n"
           "static __attribute__((__always_inline__, __unused__)) inline int c(int x) { return x; }\n"
           "static const float tab[8] __attribute__((aligned(32))) = {0};\n"
           "typedef float v4 __attribute__((vector_size(16), may_alias));\n"
           "[[maybe_unused]] static int d(void) { return 0; }\n"
           "[[gnu::always_inline]] static inline int e(void) { return 0; }\n"
           "[[gnu::aligned(16), clang::always_inline]] static inline int g(void) { return 0; }\n"
           "#define INLINE static inline __attribute__((always_inline))\n"
           "#define ALIGNED(n) __attribute__((aligned(n)))\n"
           "int h(int *a, int *b) __attribute__((nonnull(1, 2), pure));\n"
           "static int arr[2][2]; int k(int i) { return arr[i][arr[0][0]]; }\n" KERN);
    for (size_t i = 0; i < allow_n_attributes; i++)
        assert_true(allow_attribute(NULL, allow_attributes[i]));
    assert_true(allow_attribute("gnu", "__aligned__"));
    assert_false(allow_attribute("riscv", "aligned"));
}

/* What the compiler reads must be what the screen reads. */
static void test_lexical(void **state)
{
    (void)state;
    /* a '#' outside a directive could be made to look like one */
    refused("#define H #\n" KERN, PLAT_SCREEN_DIRECTIVE, "#");
    refused("#define H %:\n" KERN, PLAT_SCREEN_DIRECTIVE, "%:");
    refused("#define P(x) x\nint a; P(#) 1 \"math.h\"\n" KERN, PLAT_SCREEN_DIRECTIVE, "#");
    refused("int a; /*\n*/ # include \"/etc/passwd\"\n" KERN, PLAT_SCREEN_DIRECTIVE, "#");
    /* gcc reads R"(...)" in gnu C: its quotes hide code from a C lexer */
    refused("static const char *s = R\"x(\")x\"; __attribute__((constructor)) static void f(void) {}\n" KERN,
            PLAT_SCREEN_ATTRIBUTE, "raw string");
    /* a lone CR is a line end to one compiler and a blank to another */
    refused("// comment\r__attribute__((constructor)) static void f(void) {}\n" KERN, PLAT_SCREEN_ATTRIBUTE,
            "carriage return");
    /* backslash, blanks, newline is a splice to gcc and clang: a string
     * closed on the next line does not swallow the code after it */
    refused("static const char *s = \"abc\\  \n\"; __attribute__((constructor)) static void f(void) {}\n" KERN,
            PLAT_SCREEN_CTOR, "constructor");
    refused("static void f(void) { __as\\\nm__ volatile(\"nop\"); }\n" KERN, PLAT_SCREEN_ASM, "__asm__");
    /* line numbers count spliced lines */
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    const char *src = "int a = 1 + \\\n 2;\n\nstatic void f(void) { asm(\"nop\"); }\n" KERN;
    assert_int_equal(k3_screen_source(src, strlen(src), &r, d, sizeof d), 1);
    assert_non_null(strstr(d, "line 4:"));
    /* digraphs, comments, literals, $ in names, form feeds: honest */
    passes("%:include <stddef.h>\n/* asm */ // __attribute__((constructor))\n"
           "static const char *m = \"asm __has_include #\";\nstatic int q$x = '#';\n\f\n"
           "static int t<:2:> = <%1, 2%>;\n" KERN);
}

/* ----------------------------------------- the preprocessed screen --- */

static int pp(const char *text, const struct k3_names *nm, enum plat_screen_rule *r, char *d, size_t dl)
{
    return k3_screen_preprocessed(text, strlen(text), "/w/c1/cand.c", nm, r, d, dl);
}

#define PP_HEAD "# 1 \"/w/c1/cand.c\"\n# 1 \"<built-in>\" 1\n# 1 \"/w/rt/proto.h\" 1\n" \
                "void kope_kernel(void);\n# 2 \"/w/c1/cand.c\" 2\n"

static void test_preprocessed(void **state)
{
    (void)state;
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    /* what token pasting made, in the candidate's lines */
    assert_int_equal(pp(PP_HEAD "static void f(void) { __asm__ volatile(\"ecall\"); }\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_ASM);
    assert_non_null(strstr(d, "line 2:"));
    assert_int_equal(pp(PP_HEAD "\n\nvoid h(void) __attribute__((ifunc(\"r\")));\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_ATTRIBUTE);
    assert_non_null(strstr(d, "ifunc"));
    assert_non_null(strstr(d, "line 4:"));
    assert_int_equal(pp(PP_HEAD "__attribute__((section(\".init_array\"))) static void (*p)(void);\n", NULL,
                        &r, d, sizeof d), 1);
    assert_non_null(strstr(d, "section"));
    assert_int_equal(pp(PP_HEAD "static _Thread_local int t;\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_STATE);
    assert_int_equal(pp(PP_HEAD "extern int system(const char *);\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_CALL);
    /* a pragma _Pragma made */
    assert_int_equal(pp(PP_HEAD "#pragma comment(lib, \"x\")\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_PRAGMA);
    assert_int_equal(pp(PP_HEAD "#pragma GCC unroll 4\n# 2 \"/w/c1/cand.c\"\nint x;\n", NULL, &r, d, sizeof d), 0);
    /* the same tokens in a header's lines are the header's */
    assert_int_equal(pp(PP_HEAD "# 1 \"/usr/include/math.h\" 1\nextern double sin(double) __asm__(\"x\") "
                        "__attribute__((__nothrow__, __leaf__));\n#pragma GCC system_header\n"
                        "# 3 \"/w/c1/cand.c\" 2\nint x;\n", NULL, &r, d, sizeof d), 0);
    /* a marker a macro made is printed after a blank: refused, not obeyed */
    assert_int_equal(pp(PP_HEAD " # 1 \"/usr/include/math.h\" 1\n__asm__(\"ecall\");\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_DIRECTIVE);
    assert_int_equal(pp(PP_HEAD "#ident \"x\"\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_DIRECTIVE);
    /* no line of the candidate: nothing was screened, so refused */
    assert_int_equal(pp("int x;\n", NULL, &r, d, sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_DIRECTIVE);
    assert_int_equal(pp("# 1 \"/w/c1/other.c\"\n__asm__(\"\");\n", NULL, &r, d, sizeof d), 1);
    /* -dD: the candidate's macros, by the names the headers use */
    struct k3_names nm;
    char list[1024];
    const char *hdr = tpath("hdr.h");
    FILE *f = fopen(hdr, "w");
    assert_non_null(f);
    fputs("/* F and etc in a comment */\n#define __GLIBC_USE(F) __GLIBC_USE_ ## F\n"
          "#include <bits/etc.h>\n#error no etc here\nextern float sqrtf(float __x);\n"
          "#define NAN (__builtin_nanf(\"\"))\n", f);
    fclose(f);
    snprintf(list, sizeof list, "%s\n", hdr);
    assert_int_equal(k3_names_load(list, &nm), 0);
    assert_true(k3_names_has(&nm, "sqrtf"));
    assert_false(k3_names_has(&nm, "F")); /* a macro parameter there, not a name */
    assert_false(k3_names_has(&nm, "etc")); /* an #include path */
    assert_int_equal(pp(PP_HEAD "#define sqrtf(x) x; __attribute__((constructor)) void g(void)\n", &nm, &r, d,
                        sizeof d), 1);
    assert_int_equal(r, PLAT_SCREEN_DIRECTIVE);
    assert_non_null(strstr(d, "sqrtf"));
    assert_int_equal(pp(PP_HEAD "#undef NAN\n", &nm, &r, d, sizeof d), 1);
    assert_int_equal(pp(PP_HEAD "#define _X 1\n", &nm, &r, d, sizeof d), 1);
    assert_int_equal(pp(PP_HEAD "#define F(x) x\n#define LMUL 4\nint y;\n", &nm, &r, d, sizeof d), 0);
    k3_names_free(&nm);
}

/* docs/K3-HARNESS.md names every entry of every list. */

/* The text allow-list (platform/allow.h allow_text_char): every character
 * of a source, comments and strings included. Trojan Source (the outsider
 * red team's bidi override that made a live branch read as dead code), zero
 * width characters, controls and bytes that do not decode are refused by
 * code point; the letters, punctuation and math people write in comments
 * pass. The Ascend screen uses the same list. */
static void test_text_characters(void **state)
{
    (void)state;
    static const struct {
        const char *src, *cp;
    } bad[] = {
        {KERN "/* if (0) { \xe2\x80\xae } dead */\n", "U+202E"},   /* right-to-left override */
        {KERN "/* \xe2\x81\xa6 isolate */\n", "U+2066"},           /* left-to-right isolate */
        {KERN "/* zero\xe2\x80\x8bwidth */\n", "U+200B"},          /* zero-width space */
        {KERN "/* soft\xc2\xadhyphen */\n", "U+00AD"},
        {KERN "/* \xc2\x9b" "31m C1 CSI */\n", "U+009B"},
        {KERN "/* \x1b]0;title\x07 */\n", "U+001B"},
        {KERN "/* overlong \xc0\xaf */\n", "U+00C0"},
        {KERN "/* surrogate \xed\xa0\x80 */\n", "U+00ED"},
        {KERN "/* private \xee\x80\x80 */\n", "U+E000"},
        {KERN "const char *s = \"\xe2\x80\xae\";\n", "U+202E"},    /* in a string too */
        {KERN "/* cut \xe2\x80", "U+00E2"},                        /* truncated sequence */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i].src, PLAT_SCREEN_CHARACTER, bad[i].cp);
    passes(KERN "/* caf\xc3\xa9, 3 \xc3\x97 4 \xe2\x89\xa4 12 \xe2\x80\x94 \xe2\x86\x92 \xce\xbb, "
           "\xe6\xbc\xa2\xe5\xad\x97, \xe2\x80\x9cquoted\xe2\x80\x9d, \xe2\x80\xa6 */\n\t\f\r\n");
    unsigned long cp;
    assert_int_equal(allow_text_char((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp), 0); /* emoji: not on it */
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(allow_text_char((const unsigned char *)"\xe2\x88\x91", 3, &cp), 3);
    assert_int_equal(allow_text_scan("ok\x7f", 3, &cp), 2);
}

static void test_docs_name_every_list(void **state)
{
    (void)state;
    const char *root = getenv("KOPE_SRC");
    if (!root)
        skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/K3-HARNESS.md", root);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = malloc(1 << 20);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    const char *sec = strstr(text, "### Allow-lists");
    assert_non_null(sec);
#define CHECK_(w) \
    if (!strstr(sec, w)) \
        fail_msg("docs/K3-HARNESS.md's allow-list section does not name '%s'", w);
#define CHECK2_(num, w) CHECK_(w)
    ALLOW_DIRECTIVES(CHECK_)
    ALLOW_ATTRIBUTES(CHECK_)
    ALLOW_ATTRIBUTE_NAMESPACES(CHECK_)
    K3_ALLOWED_SYMBOLS(CHECK_)
    K3_ALLOWED_RELOCS(CHECK2_)
    K3_ALLOWED_CSRS(CHECK2_)
    static const char *const pragma_words[] = {"GCC unroll", "GCC ivdep", "GCC novector", "nounroll",
        "clang loop", "vectorize_width", "vectorize_predicate", "interleave_count", "unroll_count",
        "pipeline_initiation_interval", "distribute", "STDC FP_CONTRACT", "clang fp contract",
        "clang fp reassociate"};
    for (size_t i = 0; i < sizeof pragma_words / sizeof pragma_words[0]; i++)
        CHECK_(pragma_words[i]);
    for (size_t i = 0; i < allow_n_pragmas; i++)
        CHECK_(allow_pragmas[i]);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directives),
        cmocka_unit_test(test_file_probes),
        cmocka_unit_test(test_pragmas),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_lexical),
        cmocka_unit_test(test_preprocessed),
        cmocka_unit_test(test_text_characters),
        cmocka_unit_test(test_docs_name_every_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_k3_hostile.c - the K3 harness against hostile kernels (issue
 * 11): candidates written to fool the verdict rather than by mistake. One
 * test per class of attack; each asserts the defence's own reason, so taking
 * the defence out makes the test fail (checked once by hand for each, see
 * docs/K3-HARNESS.md "Hostile kernels"). Honest constructs the defences must
 * not refuse (bcmp, fixed-point intrinsics with an explicit rounding mode)
 * are here too.
 *
 * Runs under qemu-riscv64 on x86_64 hosts, natively on a board; one
 * platform is opened for the whole group.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "platform/k3/k3.h"
#include "platform/platform.h"
#include "testutil.h"

#include "k3_fixture.h"

static int group_setup(void **state)
{
    (void)state;
    return k3_group_open("k3hostile");
}

static void compile_verify(const struct plat_task *t, const char *src, struct plat_build *b,
                           struct plat_verify *v)
{
    int rc = platform_compile(P, t, src, strlen(src), b);
    if (rc)
        fprintf(stderr, "compile: %s\n", P->err);
    assert_int_equal(rc, 0);
    memset(v, 0, sizeof *v);
    if (b->ok) {
        rc = platform_verify(P, t, b, v);
        if (rc)
            fprintf(stderr, "verify: %s\n", P->err);
        assert_int_equal(rc, 0);
    } else {
        v->reason = b->reason;
        v->screen_rule = b->screen_rule;
        snprintf(v->detail, sizeof v->detail, "%s", b->detail);
    }
    fprintf(stderr, "  -> %s / %s: %s\n", plat_fail_name(v->reason),
            plat_screen_rule_name(v->screen_rule), v->detail);
}

static void run(enum plat_op op, const char *src, struct plat_build *b, struct plat_verify *v)
{
    struct plat_task t;
    task_init(&t, op);
    compile_verify(&t, src, b, v);
}

#define ADD_HEAD \
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n" \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n" \
    "                 const struct kope_scalars *s) {\n"
#define BODY "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n"

static void expect_screen(const char *src, enum plat_screen_rule rule, struct plat_build *keep)
{
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, src, &b, &v);
    assert_false(b.ok);
    assert_int_equal(v.reason, PLAT_FAIL_SCREEN_REJECTED);
    assert_int_equal(v.screen_rule, rule);
    if (keep)
        *keep = b;
    else
        platform_build_free(P, &b);
}

/* ------------------------------------------- system instructions (a) --- */

static void test_misaligned_ecall(void **state)
{
    (void)state;
    /* asm hidden from the source screen by token pasting, laid out so the
     * linear decode sees `lui ra, 0x730` then `c.unimp`: the bytes from
     * offset 2 read 73 00 00 00, an ecall reachable by jumping into the
     * middle of the lui. Only a scan at every 2-byte offset sees it. */
    P->set.flags |= PLAT_SET_UNSAFE_NO_SOURCE_SCREEN; /* the object check alone */
    expect_screen("#define CAT(a, b) a##b\n" ADD_HEAD
                  "  CAT(__as, m__) volatile(\".option push\\n.option norvc\\n j 1f\\n"
                  ".option pop\\n .4byte 0x007300b7\\n .2byte 0\\n1:\\n\");\n" BODY,
                  PLAT_SCREEN_SYSTEM_INSN, NULL);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
}

/* A kernel that leaves the FP rounding mode changed is blamed; the harness
 * restores it (the asm is hidden from the screen: `fsrmi 1` is an allowed
 * CSR write, so only the run-time check sees what it leaves behind). */
static void test_leaves_rounding_mode_changed(void **state)
{
    (void)state;
    struct plat_build b;
    struct plat_verify v;
    P->set.flags |= PLAT_SET_UNSAFE_NO_SOURCE_SCREEN; /* the preprocessed screen sees __asm__ */
    run(PLAT_OP_ADD, "#define CAT(a, b) a##b\n" ADD_HEAD
        "  CAT(__as, m__) volatile(\"fsrmi 1\");\n" BODY, &b, &v);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
    assert_true(b.ok);
    assert_int_equal(v.reason, PLAT_FAIL_STATEFUL);
    assert_non_null(strstr(v.detail, "rounding mode"));
    platform_build_free(P, &b);
}

/* ---------------------------------------------- honest code allowed --- */

static void test_honest_bcmp_and_vxrm_pass(void **state)
{
    (void)state;
    /* clang lowers memcmp(...) == 0 to a call to bcmp */
    const char *bcmp_src =
        "#include <string.h>\n" ADD_HEAD
        "  (void)s; int same = n >= 8 && memcmp(x, y, 8 * sizeof *x) == 0;\n"
        "  for (size_t i = 0; i < n; i++) out[i] = same ? 2 * x[i] : x[i] + y[i];\n}\n";
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, bcmp_src, &b, &v);
    assert_true(b.ok);
    assert_true(v.pass);
    platform_build_free(P, &b);
    /* a fixed-point intrinsic with an explicit rounding mode: csrwi vxrm */
    const char *vxrm_src =
        "#include <riscv_vector.h>\n" ADD_HEAD
        "  (void)s;\n"
        "  for (size_t i = 0; i < n;) {\n"
        "    size_t vl = __riscv_vsetvl_e32m4(n - i);\n"
        "    vint32m4_t a = __riscv_vreinterpret_v_f32m4_i32m4(__riscv_vle32_v_f32m4(x + i, vl));\n"
        "    vint32m4_t h = __riscv_vaadd_vv_i32m4(a, a, __RISCV_VXRM_RNU, vl); /* == a */\n"
        "    vfloat32m4_t xa = __riscv_vreinterpret_v_i32m4_f32m4(h);\n"
        "    __riscv_vse32_v_f32m4(out + i, __riscv_vfadd_vv_f32m4(xa, __riscv_vle32_v_f32m4(y + i, vl), vl), vl);\n"
        "    i += vl;\n  }\n}\n";
    run(PLAT_OP_ADD, vxrm_src, &b, &v);
    assert_true(b.ok);
    assert_true(v.pass);
    platform_build_free(P, &b);
}

/* ----------------------------------------- includes, by the compiler --- */

/* Spellings of #include the compiler accepts and a hand tokenizer did not:
 * a comment or a form feed between '#' and the directive, and #embed. Each
 * names a host file whose content must never reach the stored diagnostics. */
static void test_include_spellings_refused_by_compiler(void **state)
{
    (void)state;
    const char *secret = tpath("secret.h");
    FILE *f = fopen(secret, "w");
    assert_non_null(f);
    fputs("kope_secret_4711 leaked tokens here\n", f);
    fclose(f);
    static const char *const forms[][2] = {
        {"#/**/include \"", "\"\n"}, {"# /* x */ include \"", "\"\n"}, {"#\finclude \"", "\"\n"},
        {"const unsigned char e[] = {\n#/**/embed \"", "\"\n};\n"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src, "%s%s%s" ADD_HEAD BODY, forms[i][0], secret, forms[i][1]);
        struct plat_build b;
        struct plat_verify v;
        run(PLAT_OP_ADD, src, &b, &v);
        assert_false(b.ok);
        /* a compiler without #embed (gcc-14, the board's native one) stops at
         * the directive itself: the file is never opened, which is the
         * defence too. Only that answer is accepted besides the screen's. */
        int no_embed = strstr(forms[i][0], "embed") && v.reason == PLAT_FAIL_COMPILE_ERROR &&
                       strstr(b.diag, "invalid preprocessing directive");
        /* in the compile sandbox the host file is not there at all: the
         * compiler says so about the candidate's own line */
        int unseen = v.reason == PLAT_FAIL_COMPILE_ERROR &&
                     (strstr(b.diag, "not found") || strstr(b.diag, "No such file"));
        if (!no_embed && !unseen) {
            assert_int_equal(v.reason, PLAT_FAIL_SCREEN_REJECTED);
            assert_int_equal(v.screen_rule, PLAT_SCREEN_HEADER);
        }
        assert_null(strstr(b.diag, "kope_secret_4711"));
        assert_null(strstr(b.detail, "kope_secret_4711"));
        platform_build_free(P, &b);
    }
    /* a header outside the list through the same trick */
    expect_screen("#/**/include <stdio.h>\n" ADD_HEAD BODY, PLAT_SCREEN_HEADER, NULL);
}

/* Diagnostics keep only what concerns the candidate's own file. */
static void test_diagnostics_quote_no_other_file(void **state)
{
    (void)state;
    char out[1024];
    const char *in =
        ". /usr/include/math.h\n"
        "In file included from /w/c1/cand.c:1:\n"
        "/etc/passwd:1:5: error: unknown type name 'root'\n"
        "    1 | root:x:0:0:root:/root:/bin/bash\n"
        "      |     ^\n"
        "/w/c1/cand.c:7:3: error: use of undeclared identifier 'q'\n"
        "    7 |   q = 1;\n"
        "      |   ^\n"
        "/usr/include/math.h:40:9: note: expanded from macro 'X'\n"
        "   40 | #define X secret_of_header\n"
        "2 errors generated.\n";
    k3_diag_clean(in, "/w/c1/cand.c", out, sizeof out);
    fprintf(stderr, "%s", out);
    assert_null(strstr(out, "root"));
    assert_null(strstr(out, "secret_of_header"));
    assert_null(strstr(out, "/w/c1"));
    assert_non_null(strstr(out, "cand.c:7:3: error: use of undeclared identifier 'q'"));
    assert_non_null(strstr(out, "q = 1;"));
    assert_non_null(strstr(out, "2 errors generated."));
    /* and capped */
    char small[40];
    k3_diag_clean(in, "/w/c1/cand.c", small, sizeof small);
    assert_true(strlen(small) < sizeof small);
}

/* The one allow-list: the screen's table, kernel_abi.h's comment and the
 * docs name the same headers. */
static void test_allow_list_is_one_list(void **state)
{
    (void)state;
    char path[4096], *text = malloc(1 << 20);
    assert_non_null(text);
    static const char *const files[] = {"platform/kernel_abi.h", "docs/K3-HARNESS.md"};
    const char *root = getenv("KOPE_SRC");
    if (!root)
        skip();
    for (size_t f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", root, files[f]);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        size_t n = fread(text, 1, (1 << 20) - 1, fp);
        text[n] = '\0';
        fclose(fp);
        for (int i = 0; i < K3_N_ALLOWED_HEADERS; i++)
            if (!strstr(text, k3_allowed_headers[i]))
                fail_msg("%s does not name allowed header %s", files[f], k3_allowed_headers[i]);
    }
    for (int i = 0; i < K3_N_ALLOWED_HEADERS; i++)
        assert_non_null(strstr(K3_ALLOWED_HEADERS_TEXT, k3_allowed_headers[i]));
    free(text);
}

/* ------------------------------------------ allow-lists (issue 21) --- */

/* The source screens' verdict (src_rule naming src_want), and, with both
 * source screens off, the object check's alone (obj_rule naming obj_want;
 * NULL: not asserted): every class is stopped by each layer that can see it. */
static void expect_layers(const char *src, enum plat_screen_rule src_rule, const char *src_want,
                          enum plat_screen_rule obj_rule, const char *obj_want)
{
    struct plat_build b;
    expect_screen(src, src_rule, &b);
    if (!strstr(b.detail, src_want))
        fail_msg("source screens: '%s' does not name '%s'", b.detail, src_want);
    platform_build_free(P, &b);
    if (!obj_want)
        return;
    P->set.flags |= PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
    expect_screen(src, obj_rule, &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
    if (!strstr(b.detail, obj_want))
        fail_msg("object check: '%s' does not name '%s'", b.detail, obj_want);
    platform_build_free(P, &b);
}

/* An attribute spelled by token pasting, past the source screen's tokenizer. */
#define PASTE "#define CAT(a, b) a##b\n#define ATTR CAT(__attri, bute__)\n"

static void test_startup_hooks_refused(void **state)
{
    (void)state;
    /* an ifunc: its resolver runs before main, in whatever process links it */
    expect_layers(PASTE "#include <stddef.h>\nstatic int impl(void) { return 1; }\n"
                  "static void *resolve(void) { return (void *)impl; }\n"
                  "static int pick(void) ATTR((CAT(if, unc)(\"resolve\")));\n" ADD_HEAD
                  "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i] * (float)(pick() - 1);\n}\n",
                  PLAT_SCREEN_ATTRIBUTE, "ifunc", PLAT_SCREEN_SYMBOL, "indirect function");
    /* a constructor through .init_array, the section attribute pasted */
    expect_layers(PASTE "static void hook(void) { }\n"
                  "ATTR((CAT(sec, tion)(\".init_array\"), CAT(us, ed))) static void (*const p)(void) = hook;\n"
                  ADD_HEAD BODY, PLAT_SCREEN_ATTRIBUTE, "section", PLAT_SCREEN_CTOR, ".init_array");
    /* .preinit_array, and a function placed in .init */
    expect_layers(PASTE "static void hook(void) { }\n"
                  "ATTR((CAT(sec, tion)(\".preinit_array\"), CAT(us, ed))) static void (*const p)(void) = hook;\n"
                  ADD_HEAD BODY, PLAT_SCREEN_ATTRIBUTE, "section", PLAT_SCREEN_CTOR, ".preinit_array");
    expect_layers(PASTE "ATTR((CAT(sec, tion)(\".init\"), CAT(us, ed))) static void hook(void) { }\n"
                  ADD_HEAD BODY, PLAT_SCREEN_ATTRIBUTE, "section", PLAT_SCREEN_CTOR, ".init");
    /* a weak definition standing in for a libc symbol */
    expect_layers(PASTE "ATTR((CAT(we, ak))) void *memset(void *d, int c, size_t n) { (void)c; (void)n; return d; }\n"
                  ADD_HEAD BODY, PLAT_SCREEN_ATTRIBUTE, "weak", PLAT_SCREEN_SYMBOL, "weak");
}

/* Issue 21's first class with the object check out of the way: a start-up
 * hook that would run in the judge (the candidate is linked into the judging
 * program), write the report's last word itself and exit 0. The check of the
 * linked program against the same link with a null kernel
 * (k3_screen_program) refuses it on its own, naming the array, and nothing
 * of it is ever run: the build is not ok, so it cannot pass. */
#define JUDGE_PAYLOAD \
    "long write(int, const void *, unsigned long);\nvoid _exit(int);\n" \
    "static void hook(void) { write(3, \"done\\n\", 5); _exit(0); }\n"

static void test_startup_hooks_refused_in_linked_program(void **state)
{
    (void)state;
    static const struct {
        const char *how, *want;
    } hooks[] = {
        {"__attribute__((constructor)) static void ctor(void) { hook(); }\n", ".init_array"},
        {"__attribute__((destructor)) static void dtor(void) { hook(); }\n", ".fini_array"},
        {"__attribute__((section(\".preinit_array\"), used)) static void (*const p)(void) = hook;\n",
         ".preinit_array"},
    };
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src, "%s%s%s%s", JUDGE_PAYLOAD, hooks[i].how, ADD_HEAD, BODY);
        struct plat_build b;
        expect_screen(src, PLAT_SCREEN_CTOR, &b);
        if (!strstr(b.detail, hooks[i].want))
            fail_msg("program check: '%s' does not name '%s'", b.detail, hooks[i].want);
        platform_build_free(P, &b);
    }
}

/* The flag as setup and teardown: a failed assertion leaves the test by
 * longjmp, and the flag must not outlive it into the next test. */
static int no_object_screen_on(void **state)
{
    (void)state;
    P->set.flags |= PLAT_SET_UNSAFE_NO_OBJECT_SCREEN; /* the linked-program check alone */
    return 0;
}

static int no_object_screen_off(void **state)
{
    (void)state;
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_OBJECT_SCREEN;
    return 0;
}

static void test_tls_and_got_refused(void **state)
{
    (void)state;
    /* thread-local storage, the keyword pasted */
    expect_layers("#define CAT(a, b) a##b\nstatic CAT(_Thread, _local) float last;\n" ADD_HEAD
                  "  (void)s; for (size_t i = 0; i < n; i++) { out[i] = x[i] + y[i] + last * 0; }\n  last = out[0];\n}\n",
                  PLAT_SCREEN_STATE, "_Thread_local", PLAT_SCREEN_STATE, "thread-local");
    /* a libc global through the GOT (position-independent code) */
    expect_layers("extern char **environ;\n" ADD_HEAD
                  "  (void)s; char **volatile e = environ; (void)e;\n"
                  "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n",
                  PLAT_SCREEN_SYMBOL, "environ", PLAT_SCREEN_NONE, NULL);
}

/* The GOT relocation alone: an allowed symbol (memcpy) reached through the
 * GOT by asm, so only the relocation list can say no. */
static void test_got_relocation_refused(void **state)
{
    (void)state;
    P->set.flags |= PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
    struct plat_build b;
    expect_screen("#define CAT(a, b) a##b\n" ADD_HEAD
                  "  CAT(__as, m__) volatile(\".option push\\n.option pic\\nla t0, memcpy\\n.option pop\" ::: \"t0\");\n" BODY,
                  PLAT_SCREEN_RELOCATION, &b);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
    assert_non_null(strstr(b.detail, "R_RISCV_GOT_HI20"));
    platform_build_free(P, &b);
}

/* Directives and pragmas that read host files or change what the linker
 * does, through a real compile. */
static void test_file_directives_refused(void **state)
{
    (void)state;
    expect_layers("#if __has_include(</etc/passwd>)\n#define HAVE 1\n#endif\n" ADD_HEAD BODY,
                  PLAT_SCREEN_HEADER, "__has_include", PLAT_SCREEN_NONE, NULL);
    expect_layers("static const unsigned char e[] = {\n#embed \"/etc/passwd\"\n};\n" ADD_HEAD BODY,
                  PLAT_SCREEN_HEADER, "embed", PLAT_SCREEN_NONE, NULL);
    struct plat_desc d;
    platform_describe(P, &d);
    /* clang records a linker comment as .deplibs, which lld would open;
     * gcc ignores the pragma, so there is nothing for the object check */
    int clang = strstr(d.cc, "clang") != NULL;
    expect_layers("#pragma comment(lib, \"/etc/passwd\")\n" ADD_HEAD BODY, PLAT_SCREEN_PRAGMA, "comment",
                  PLAT_SCREEN_SECTION, clang ? "dependent libraries" : NULL);
    /* honest: unroll pragmas and an attribute on the list still build */
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
        "static inline __attribute__((always_inline)) float add1(float a, float b) { return a + b; }\n"
        "#define UNROLL4 _Pragma(\"GCC unroll 4\")\n"
        "static const float zero[4] __attribute__((aligned(16))) = {0, 0, 0, 0};\n"
        "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
        "                 const struct kope_scalars *s) {\n  (void)s;\n  UNROLL4\n"
        "  for (size_t i = 0; i < n; i++) out[i] = add1(x[i], y[i]) + zero[i & 3];\n"
        "#pragma clang loop unroll(disable)\n  for (size_t i = 0; i < 1; i++) out[i] += 0;\n}\n", &b, &v);
    assert_true(b.ok);
    assert_true(v.pass);
    platform_build_free(P, &b);
}

/* ------------------------------- the judge is not the kernel's process --- */

/* The byte pattern of glibc's riscv64 syscall(): eight register moves and an
 * ecall. A kernel finds it in the static harness binary by scanning forward
 * from its own address and calls it through a pointer: plain C, no asm, no
 * forbidden name, so no source screen can see it. Since session 7 the object
 * check refuses the call through a pointer (a jalr with no call relocation,
 * tests/test_redteam.c test_insider2_indirect_calls_refused), so the tests
 * using it run with the object check off (no_object_screen_on): they test
 * the layers behind it, which must hold for any way to a system call a
 * later kernel finds. Whatever it does with a system call must not change
 * the verdict or reach the host. */
#define FIND_SC \
    "#include <stddef.h>\n#include <stdint.h>\n#include \"kernel_abi.h\"\n" \
    "typedef long (*sc_fn)(long, long, long, long, long, long);\n" \
    "static const unsigned char pat[22] = {0x2a,0x83,0x2e,0x85,0xb2,0x85,0x36,0x86,0xba,0x86,\n" \
    "  0x3e,0x87,0xc2,0x87,0x46,0x88,0x9a,0x88,0x73,0,0,0};\n" \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s);\n" \
    "static sc_fn find_sc(void) {\n" \
    "  const unsigned char *p = (const unsigned char *)(uintptr_t)&kope_kernel;\n" \
    "  for (size_t off = 0; off < (16u << 20); off += 2) {\n" \
    "    size_t i = 0; while (i < 22 && p[off + i] == pat[i]) i++;\n" \
    "    if (i == 22) return (sc_fn)(uintptr_t)(p + off);\n" \
    "  }\n  return 0;\n}\n"
#define KHEAD \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n" \
    "                 const struct kope_scalars *s) {\n  (void)s; sc_fn sc = find_sc();\n"

static void test_forged_report_by_raw_syscall(void **state)
{
    (void)state;
    /* writes a passing report to every plausible descriptor, then ends its
     * process before the harness can say otherwise */
    const char *src = FIND_SC KHEAD
        "  static const char msg[] = \"case task 4096 1 4096 0 0 0 1 none 0 0 0 0\\ndone\\n\";\n"
        "  (void)x; (void)y; (void)out; (void)n;\n"
        "  for (long fd = 3; fd < 16; fd++) sc(64, fd, (long)msg, sizeof msg - 1, 0, 0);\n"
        "  sc(94, 0, 0, 0, 0, 0);\n}\n";
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, src, &b, &v);
    assert_true(b.ok); /* nothing for the screens to see */
    assert_false(v.pass);
    platform_build_free(P, &b);
}

static void test_rewrites_judge_inputs(void **state)
{
    (void)state;
    /* undoes the read-only protection of its inputs (mprotect by raw system
     * call), zeroes them and returns zeros: a reference computed from the
     * buffers the kernel saw would agree */
    const char *src = FIND_SC KHEAD
        "  uintptr_t pg = 4096;\n"
        "  const float *in[2] = {x, y};\n"
        "  for (int k = 0; k < 2; k++) {\n"
        "    uintptr_t lo = (uintptr_t)in[k] & ~(pg - 1), hi = ((uintptr_t)(in[k] + n) + pg - 1) & ~(pg - 1);\n"
        "    sc(226, (long)lo, (long)(hi - lo), 3, 0, 0);\n"
        "    float *w = (float *)(uintptr_t)in[k]; for (size_t i = 0; i < n; i++) w[i] = 0;\n"
        "  }\n"
        "  for (size_t i = 0; i < n; i++) out[i] = 0;\n}\n";
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, src, &b, &v);
    assert_true(b.ok);
    assert_false(v.pass);
    assert_int_equal(v.reason, PLAT_FAIL_INPUT_MODIFIED);
    platform_build_free(P, &b);
}

/* ------------------------------------------------- the host is out of reach --- */

static void test_raw_syscalls_cannot_touch_the_host(void **state)
{
    (void)state;
    /* a fork that execs a host shell, a file created outside the work dir,
     * a TCP connection to a listener of ours on loopback; then it computes
     * the right answer, so the verdict alone says nothing */
    const char *marker = tpath("escape-exec");
    const char *opened = tpath("escape-open");
    unlink(marker);
    unlink(opened);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(ls >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    assert_int_equal(listen(ls, 4), 0);
    char src[8192];
    /* argv is filled element by element: as an initialised array (local or
     * static const) its pointers need relocating, which puts it in writable
     * .data or .data.rel.ro, and the object check refuses that before the
     * isolation this test is about is ever reached */
    snprintf(src, sizeof src, FIND_SC KHEAD
        "  static const char sh[] = \"/bin/sh\", c[] = \"-c\", cmd[] = \"echo escaped > %s\";\n"
        "  static const char path[] = \"%s\";\n"
        "  const char *volatile argv[4]; argv[0] = sh; argv[1] = c; argv[2] = cmd; argv[3] = 0;\n"
        "  if (sc(220, 17, 0, 0, 0, 0) == 0) { sc(221, (long)sh, (long)argv, 0, 0, 0); sc(93, 0, 0, 0, 0, 0); }\n"
        "  long fd = sc(56, -100, (long)path, 0101, 0644, 0);\n"
        "  if (fd >= 0) sc(64, fd, (long)path, 4, 0, 0);\n"
        "  long so = sc(198, 2, 1, 0, 0, 0);\n"
        "  unsigned char addr[16] = {2, 0, %u, %u, 127, 0, 0, 1};\n"
        "  if (so >= 0) sc(203, so, (long)addr, 16, 0, 0);\n"
        "  for (int i = 0; i < 20000; i++) sc(124, 0, 0, 0, 0, 0); /* sched_yield: let the child run */\n"
        "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n",
        marker, opened, (unsigned)(ntohs(sa.sin_port) >> 8), (unsigned)(ntohs(sa.sin_port) & 0xff));
    struct plat_desc d;
    platform_describe(P, &d);
    if (strstr(d.note, "NO-NAMESPACES")) {
        fprintf(stderr, "skip: namespaces unavailable here (%s): the run is labelled degraded\n", d.note);
        close(ls);
        skip();
    }
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, src, &b, &v);
    assert_true(b.ok);
    usleep(200 * 1000);
    assert_int_equal(access(marker, F_OK), -1); /* no host program ran */
    assert_int_equal(access(opened, F_OK), -1); /* no file outside the work dir */
    int cs = accept(ls, NULL, NULL);
    if (cs >= 0)
        close(cs);
    assert_true(cs < 0); /* no connection reached us */
    /* and the isolation is what stopped it: without it, the same kernel
     * reaches the host. Natively on riscv64 (a board, the board VM) the
     * harness puts the kernel process under its seccomp allow-list whatever
     * the namespaces: there that layer alone must still stop every one */
    int native_seccomp = 0;
#if defined(__riscv)
    native_seccomp = !test_emulated();
#endif
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    P->set.flags |= PLAT_SET_UNSAFE_NO_ISOLATION;
    assert_int_equal(platform_verify(P, &t, &b, &v), 0);
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_ISOLATION;
    usleep(300 * 1000);
    if (native_seccomp) {
        fprintf(stderr, "  native: without namespaces, the kernel process's seccomp alone\n");
        assert_int_equal(access(marker, F_OK), -1);
        assert_int_equal(access(opened, F_OK), -1);
        cs = accept(ls, NULL, NULL);
        if (cs >= 0)
            close(cs);
        assert_true(cs < 0);
    } else {
        assert_true(access(marker, F_OK) == 0 || access(opened, F_OK) == 0);
    }
    unlink(marker);
    unlink(opened);
    close(ls);
    platform_build_free(P, &b);
}

/* ---------------------------------------------- work skipped when unchecked --- */

static uint64_t icount_of(const char *src, int *ok)
{
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    struct plat_build b;
    struct plat_measure m;
    assert_int_equal(platform_compile(P, &t, src, strlen(src), &b), 0);
    assert_true(b.ok);
    assert_int_equal(platform_measure(P, &t, &b, &m), 0);
    fprintf(stderr, "  -> measure ok=%d %s: %s icount=%llu has=%d\n", m.ok, plat_fail_name(m.reason),
            m.detail, (unsigned long long)m.icount, m.has_icount);
    platform_build_free(P, &b);
    *ok = m.ok;
    if (m.ok && !m.has_icount && m.emulated)
        skip(); /* emulated without the icount plugin: nothing is claimed */
    return m.icount;
}

#define VADD_BODY \
    "  for (size_t i = 0; i < n;) { size_t vl = __riscv_vsetvl_e32m8(n - i);\n" \
    "    __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(x + i, vl),\n" \
    "      __riscv_vle32_v_f32m8(y + i, vl), vl), vl); i += vl; }\n"

/* The honest RVV add's icount: what a kernel that skips work is held to. */
static uint64_t honest_icount(void)
{
    int ok;
    const char *honest = "#include <riscv_vector.h>\n#include <string.h>\n" ADD_HEAD "  (void)s;\n" VADD_BODY "}\n";
    uint64_t ref = icount_of(honest, &ok);
    assert_true(ok);
    return ref;
}

static void test_work_skipped_when_unchecked(void **state)
{
    (void)state;
    int ok;
    uint64_t ref = honest_icount();
    /* computes only while the output still holds the harness's poison */
    const char *poison_only = "#include <riscv_vector.h>\n#include <string.h>\n" ADD_HEAD
        "  (void)s; uint32_t b; memcpy(&b, out + n - 1, 4); if (b != 0x7fc0deadu) return;\n" VADD_BODY "}\n";
    /* keeps a call counter 128 KiB below its stack pointer (no static
     * state, so the object check passes it): works for the first three calls
     * of a process, then skips, then works again from the seventh */
    const char *below_sp = "#include <riscv_vector.h>\n#include <stdint.h>\n" ADD_HEAD
        "  (void)s; volatile char probe = 0;\n"
        "  volatile uint32_t *cnt = (volatile uint32_t *)(((uintptr_t)&probe - 128 * 1024) & ~(uintptr_t)63);\n"
        "  if (cnt[0] != 0x6b6f7065u) { cnt[0] = 0x6b6f7065u; cnt[1] = 0; }\n"
        "  uint32_t c = ++cnt[1]; (void)probe;\n"
        "  if (c > 3 && c < 7) return;\n" VADD_BODY "}\n";
    const char *srcs[] = {poison_only, below_sp};
    for (int i = 0; i < 2; i++) {
        uint64_t ic = icount_of(srcs[i], &ok);
        /* either refused, or counted doing the whole work */
        if (ok)
            assert_true(ic >= ref * 9 / 10);
    }
}

/* The icount is a count between two marker functions of the harness. A
 * kernel that found them (their address is a fixed offset from its return
 * address in a given build; declared directly here, with the screens off,
 * since how it found them is not what is tested) can close its own region
 * before doing the work, or fork a helper that writes a small region of its
 * own. Either is refused ("icount refused"), never counted small. */
#define MARK_HEAD \
    "#include <riscv_vector.h>\n#include <stddef.h>\n#include \"kernel_abi.h\"\n" \
    "void kope_icount_begin(int); void kope_icount_end(int); int fork(void); void _exit(int);\n" \
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n" \
    "                 const struct kope_scalars *s) {\n  (void)s;\n"

static void test_icount_markers_forged(void **state)
{
    (void)state;
    uint64_t ref = honest_icount();
    static const char *const forged[] = {
        /* closes the open region at once, then works uncounted */
        MARK_HEAD "  kope_icount_end(0);\n" VADD_BODY "}\n",
        /* restarts the region after the work: only the tail is counted */
        MARK_HEAD VADD_BODY "  kope_icount_begin(0);\n}\n",
        /* a forked helper closes the region it inherited at once and exits,
         * writing a block with one tiny region */
        MARK_HEAD "  if (fork() == 0) { kope_icount_end(0); _exit(0); }\n" VADD_BODY "}\n",
        /* the session-5 red team's class: the work done by a forked child
         * (the shared output is its to write), the counted parent only waits;
         * the child's block closes no region of its own, so without the
         * plugin's fork count the parent's tiny region was claimed */
        MARK_HEAD "  int pid = fork();\n  if (pid == 0) {\n" VADD_BODY "    _exit(0);\n  }\n"
        "  int waitpid(int, int *, int); int st; if (pid > 0) waitpid(pid, &st, 0);\n}\n",
    };
    P->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN;
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        struct plat_task t;
        task_init(&t, PLAT_OP_ADD);
        struct plat_build b;
        struct plat_measure m;
        assert_int_equal(platform_compile(P, &t, forged[i], strlen(forged[i]), &b), 0);
        assert_true(b.ok);
        assert_int_equal(platform_measure(P, &t, &b, &m), 0);
        fprintf(stderr, "  -> forged %zu: ok=%d %s: %s icount=%llu (honest %llu)\n", i, m.ok,
                plat_fail_name(m.reason), m.detail, (unsigned long long)m.icount,
                (unsigned long long)ref);
        platform_build_free(P, &b);
        if (m.ok) /* natively (no plugin, fork refused by seccomp): nothing small is claimed */
            assert_true(!m.has_icount || m.icount >= ref * 9 / 10);
        else
            assert_non_null(strstr(m.detail, "icount refused"));
    }
    P->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
}

/* Under qemu-user a guest's system calls are the emulator's: it can write
 * any file the plugin writes. This kernel (plain C, syscall() found by its
 * bytes, so no screen sees it) replaces the plugin's file with one of its
 * own, read-only so the plugins' real blocks cannot be appended at exit:
 * a tiny count for its own process, large ones for the judge's baselines.
 * Only the run's key tells the two apart: every block must carry its tag
 * (the plugin's keyfd=), so the forgery is refused, never counted. */
static void test_forged_plugin_output(void **state)
{
    (void)state;
    uint64_t ref = honest_icount();
    const char *src = FIND_SC
        "static char *put(char *p, const char *s) { while (*s) *p++ = *s++; return p; }\n"
        "static char *num(char *p, long v) { char d[24]; int k = 0; do { d[k++] = (char)('0' + v % 10); v /= 10; } while (v);\n"
        "  while (k) *p++ = d[--k]; return p; }\n"
        "static char *region(char *p, int i, long n) { p = put(p, \"region \"); p = num(p, i);\n"
        "  p = put(p, \" insns \"); p = num(p, n); p = put(p, \" vector_ops 0 vector_mem 0 vsetvl 0 vcost \");\n"
        "  p = num(p, n); return put(p, \" unmodelled 0\\n\"); }\n"
        "static char *total(char *p, int regions, long pid) {\n"
        "  p = put(p, \"total insns 99 vector_ops 0 vector_mem 0 vsetvl 0 vcost 99 unmodelled 0 regions \");\n"
        "  p = num(p, regions); p = put(p, \" dropped 0 vcpus 1 stray 0 pid \"); p = num(p, pid); return put(p, \"\\n\"); }\n"
        KHEAD
        "  static const char path[] = \"measure.icount\";\n"
        "  char buf[1024], *p = buf;\n"
        "  p = put(p, \"kope-icount 2\\n\"); p = region(p, 0, 10); p = total(p, 1, sc(172, 0, 0, 0, 0, 0));\n"
        "  p = put(p, \"kope-icount 2\\n\");\n"
        "  for (int i = 0; i < 3; i++) p = region(p, i, 1000000);\n"
        "  p = total(p, 3, sc(173, 0, 0, 0, 0, 0));\n"
        "  sc(35, -100, (long)path, 0, 0, 0);\n"
        "  long fd = sc(56, -100, (long)path, 01101, 0400, 0);\n"
        "  if (fd >= 0) { sc(64, fd, (long)buf, p - buf, 0, 0); sc(57, fd, 0, 0, 0, 0); }\n"
        "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n";
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    struct plat_build b;
    struct plat_measure m;
    assert_int_equal(platform_compile(P, &t, src, strlen(src), &b), 0);
    assert_true(b.ok); /* nothing for the screens to see */
    assert_int_equal(platform_measure(P, &t, &b, &m), 0);
    fprintf(stderr, "  -> forged plugin file: ok=%d %s: %s icount=%llu (honest %llu)\n", m.ok,
            plat_fail_name(m.reason), m.detail, (unsigned long long)m.icount, (unsigned long long)ref);
    platform_build_free(P, &b);
    if (m.ok) /* natively there is no plugin: nothing small may be claimed */
        assert_true(!m.has_icount || m.icount >= ref * 9 / 10);
    else
        assert_non_null(strstr(m.detail, "icount refused"));
}

/* ------------------------------------------------ verification covers it --- */

static void test_wrong_for_special_values(void **state)
{
    (void)state;
    static const struct {
        enum plat_op op;
        const char *body;
    } bad[] = {
        /* tanh through exp(2x): Inf/Inf = NaN once e^2x overflows */
        {PLAT_OP_TANH, "for (size_t i = 0; i < rows * cols; i++) { float e = expf(2 * x[i]);\n"
                       "  out[i] = (e - 1) / (e + 1); }\n"},
        /* sigmoid as e^x / (1 + e^x): NaN for large x */
        {PLAT_OP_SIGMOID, "for (size_t i = 0; i < rows * cols; i++) { float e = expf(x[i]);\n"
                          "  out[i] = e / (1 + e); }\n"},
        /* exp with its input clamped to [-20, 20]: finite where f32 overflows */
        {PLAT_OP_EXP, "for (size_t i = 0; i < rows * cols; i++) { float v = x[i];\n"
                      "  v = v > 20 ? 20 : v < -20 ? -20 : v; out[i] = expf(v); }\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "#include <math.h>\n#include \"kernel_abi.h\"\n"
                 "void kope_kernel(size_t rows, size_t cols, const float *x, float *out,\n"
                 "  const float *g, const float *b, const struct kope_scalars *s) {\n"
                 "  (void)g; (void)b; (void)s;\n  %s}\n", bad[i].body);
        struct plat_build b;
        struct plat_verify v;
        run(bad[i].op, src, &b, &v);
        assert_true(b.ok);
        assert_false(v.pass);
        assert_true(v.reason == PLAT_FAIL_NAN_INF || v.reason == PLAT_FAIL_WRONG_RESULT);
        assert_non_null(strstr(v.detail, "special"));
        platform_build_free(P, &b);
    }
}

/* Matmul kernels wrong only for special values: one that skips zero terms
 * (a sparse fast path: 0 x Inf is NaN, skipped it is not), one that turns
 * NaN results into 0, one that clamps its inputs to the f32 range (drops
 * Inf). Each passes every ordinary case and fails on "...special"; the
 * honest triple loop passes the same cases, wide magnitudes included (their
 * tolerance scales with sum |a||b|). */
#define GEMM_HEAD \
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n" \
    "void kope_kernel(size_t batch, size_t m, size_t n, size_t k, const float *a,\n" \
    "                 const float *b, float *c) {\n" \
    "  for (size_t t = 0; t < batch; t++, a += m * k, b += k * n, c += m * n)\n" \
    "    for (size_t i = 0; i < m; i++)\n" \
    "      for (size_t j = 0; j < n; j++) {\n" \
    "        float s = 0;\n"

static void test_matmul_wrong_for_special_values(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        /* honest */
        "        for (size_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];\n",
        /* skips zero terms of A */
        "        for (size_t p = 0; p < k; p++) { float av = a[i * k + p]; if (av == 0) continue;\n"
        "          s += av * b[p * n + j]; }\n",
        /* flushes a NaN result to 0 */
        "        for (size_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];\n"
        "        if (s != s) s = 0;\n",
        /* clamps its inputs to the finite f32 range */
        "        for (size_t p = 0; p < k; p++) { float av = a[i * k + p], bv = b[p * n + j];\n"
        "          av = av > 3e38f ? 3e38f : av < -3e38f ? -3e38f : av;\n"
        "          bv = bv > 3e38f ? 3e38f : bv < -3e38f ? -3e38f : bv; s += av * bv; }\n",
    };
    static const enum plat_op ops[] = {PLAT_OP_GEMM, PLAT_OP_GEMV};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
            char src[2048];
            snprintf(src, sizeof src, GEMM_HEAD "%s        c[i * n + j] = s;\n      }\n}\n", bodies[i]);
            struct plat_build b;
            struct plat_verify v;
            run(ops[o], src, &b, &v);
            assert_true(b.ok);
            if (i == 0) {
                assert_true(v.pass);
            } else {
                assert_false(v.pass);
                assert_non_null(strstr(v.detail, "special"));
                /* every ordinary case passed: only the special values tell */
                for (int c = 0; c < v.n_cases; c++)
                    if (!strstr(v.cases[c].label, "special"))
                        assert_true(v.cases[c].pass);
            }
            platform_build_free(P, &b);
        }
}

static void test_right_only_for_first_rows(void **state)
{
    (void)state;
    /* sum of rows, right for the first 2048 rows only: the emulation cap
     * used to verify a 4096-row task at 2048 rows */
    const char *src =
        "#include \"kernel_abi.h\"\n"
        "void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {\n"
        "  float *o = out; size_t r0 = rows < 2048 ? rows : 2048;\n"
        "  for (size_t r = 0; r < rows; r++) { float s = 0;\n"
        "    if (r < r0) for (size_t c = 0; c < cols; c++) s += x[r * cols + c];\n"
        "    o[r] = s; }\n}\n";
    struct plat_task t;
    task_init(&t, PLAT_OP_SUM);
    t.rows = 4096;
    t.cols = 1024;
    struct plat_build b;
    struct plat_verify v;
    compile_verify(&t, src, &b, &v);
    assert_false(v.pass);
    assert_false(v.reduced_shape);
    platform_build_free(P, &b);
    /* a task too big to verify whole under qemu says so */
    const char *gemm =
        "#include \"kernel_abi.h\"\n"
        "void kope_kernel(size_t batch, size_t m, size_t n, size_t k, const float *a,\n"
        "                 const float *b, float *c) {\n"
        "  for (size_t t = 0; t < batch; t++, a += m * k, b += k * n, c += m * n)\n"
        "    for (size_t i = 0; i < m; i++) for (size_t j = 0; j < n; j++) { float s = 0;\n"
        "      for (size_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j]; c[i * n + j] = s; }\n}\n";
    task_init(&t, PLAT_OP_GEMM);
    t.m = 512; t.n = 256; t.k = 256;
    /* 1.7e7 scalar multiply-adds under qemu: 2.5 s of CPU, but 12 s of
     * wall time at a load of 20 on 2 cores (measured): past the group's 20 s
     * timeout when the machine is shared */
    int timeout = P->set.timeout_ms;
    P->set.timeout_ms = 90000;
    compile_verify(&t, gemm, &b, &v);
    P->set.timeout_ms = timeout;
    if (v.emulated) {
        assert_true(v.pass);
        assert_true(v.reduced_shape);
    }
    platform_build_free(P, &b);
}

/* Issue 22's tail-policy bug: a row sum that accumulates with a
 * tail-agnostic vfadd (the intrinsics' default policy) on a short last strip
 * and then reduces over the whole register group. Where tail elements stay
 * undisturbed (qemu's default) the group's tail still holds the earlier
 * strips' partial sums and the answer is right; conforming hardware may
 * write the tail as all ones (a NaN in f32), as qemu does with
 * rvv_ta_all_1s: the harness runs every candidate that way, so the bug is
 * caught. The same kernel with a tail-undisturbed add (_tu) is right and
 * must pass. */
static void test_tail_agnostic_bug_caught(void **state)
{
    (void)state;
    static const char *const adds[] = {
        "__riscv_vfadd_vv_f32m4(acc, v, vl)",         /* ta: the bug */
        "__riscv_vfadd_vv_f32m4_tu(acc, acc, v, vl)", /* tu: right */
    };
    for (int i = 0; i < 2; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "#include <riscv_vector.h>\n#include \"kernel_abi.h\"\n"
                 "void kope_kernel(size_t rows, size_t cols, const float *x, void *out) {\n"
                 "  float *o = out; size_t vlm = __riscv_vsetvlmax_e32m4();\n"
                 "  for (size_t r = 0; r < rows; r++) {\n"
                 "    vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vlm);\n"
                 "    for (size_t c = 0; c < cols;) { size_t vl = __riscv_vsetvl_e32m4(cols - c);\n"
                 "      vfloat32m4_t v = __riscv_vle32_v_f32m4(x + r * cols + c, vl);\n"
                 "      acc = %s; c += vl; }\n"
                 "    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, 1);\n"
                 "    o[r] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m4_f32m1(acc, z, vlm));\n"
                 "  }\n}\n", adds[i]);
        struct plat_build b;
        struct plat_verify v;
        run(PLAT_OP_SUM, src, &b, &v);
        assert_true(b.ok);
        if (i == 0) {
            assert_false(v.pass);
            assert_true(v.reason == PLAT_FAIL_NAN_INF || v.reason == PLAT_FAIL_WRONG_RESULT);
        } else {
            assert_true(v.pass);
        }
        platform_build_free(P, &b);
    }
}

/* Scalar arguments are varied per case over wide ranges (verdict.h,
 * h_case_scalars): a kernel that ignores one (hard-codes the value it was
 * first tried with) fails some case while the task case passes. */
static void test_ignored_scalars_caught(void **state)
{
    (void)state;
    static const struct {
        enum plat_op op;
        const char *src;
    } bad[] = {
        /* layernorm with eps hard-coded at the default */
        {PLAT_OP_LAYERNORM,
         "#include <math.h>\n#include \"kernel_abi.h\"\n"
         "void kope_kernel(size_t rows, size_t cols, const float *x, float *out, const float *g,\n"
         "                 const float *b, const struct kope_scalars *s) {\n  (void)s;\n"
         "  for (size_t r = 0; r < rows; r++) { const float *xr = x + r * cols; float m = 0, v = 0;\n"
         "    for (size_t j = 0; j < cols; j++) m += xr[j];\n    m /= cols;\n"
         "    for (size_t j = 0; j < cols; j++) v += (xr[j] - m) * (xr[j] - m);\n"
         "    float inv = 1.0f / sqrtf(v / cols + 1e-5f);\n"
         "    for (size_t j = 0; j < cols; j++) out[r * cols + j] = (xr[j] - m) * inv * g[j] + b[j]; }\n}\n"},
        /* clamp to the default bounds, whatever lo and hi say */
        {PLAT_OP_CLAMP,
         ADD_HEAD "  (void)y; (void)s;\n"
         "  for (size_t i = 0; i < n; i++) out[i] = x[i] < -1.0f ? -1.0f : x[i] > 1.5f ? 1.5f : x[i];\n}\n"},
        /* axpy right for the alpha range it saw ([-2, 2]) */
        {PLAT_OP_AXPY,
         ADD_HEAD "  float a = s->alpha > 2 ? 2 : s->alpha < -2 ? -2 : s->alpha;\n"
         "  for (size_t i = 0; i < n; i++) out[i] = a * x[i] + y[i];\n}\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct plat_build b;
        struct plat_verify v;
        run(bad[i].op, bad[i].src, &b, &v);
        assert_true(b.ok);
        assert_false(v.pass);
        assert_true(v.cases[0].pass); /* the task case's scalars are the defaults */
        platform_build_free(P, &b);
    }
}

/* The result may not depend on what the output held before the call: a
 * kernel that adds into its output (reading the NaN poison as 0) is right
 * on every poisoned call and wrong once the same inputs meet an output
 * prefilled with finite values. */
static void test_accumulates_into_output(void **state)
{
    (void)state;
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, ADD_HEAD "  (void)s;\n"
        "  for (size_t i = 0; i < n; i++) { float o = out[i]; out[i] = (o == o ? o : 0.0f) + x[i] + y[i]; }\n}\n",
        &b, &v);
    assert_true(b.ok);
    assert_false(v.pass);
    assert_non_null(strstr(v.detail, "prior-fill"));
    platform_build_free(P, &b);
}

/* A per-process call counter (kept 128 KiB below the stack pointer: no
 * static state, so the object check passes it) that turns the kernel wrong
 * after its 1,000th call: one verify process makes more checked calls than
 * that (H_CALLS_PER_PROCESS), so it is caught. */
static void test_wrong_after_1000_calls(void **state)
{
    (void)state;
    struct plat_build b;
    struct plat_verify v;
    run(PLAT_OP_ADD, "#include <stdint.h>\n" ADD_HEAD
        "  (void)s; volatile char probe = 0;\n"
        "  volatile uint32_t *cnt = (volatile uint32_t *)(((uintptr_t)&probe - 128 * 1024) & ~(uintptr_t)63);\n"
        "  if (cnt[0] != 0x6b6f7065u) { cnt[0] = 0x6b6f7065u; cnt[1] = 0; }\n"
        "  uint32_t c = ++cnt[1]; (void)probe;\n"
        "  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i] + (c > 1000 ? 1.0f : 0.0f);\n}\n",
        &b, &v);
    assert_true(b.ok);
    assert_false(v.pass);
    assert_non_null(strstr(v.detail, "call-"));
    platform_build_free(P, &b);
}

static void test_constant_output_refused(void **state)
{
    (void)state;
    /* with a tolerance loose enough for zeros to pass, zeros still are not
     * an answer when the reference varies */
    const char *src = ADD_HEAD "  (void)s; (void)x; (void)y; for (size_t i = 0; i < n; i++) out[i] = 0;\n}\n";
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.rtol = 2;
    t.atol = 100;
    struct plat_build b;
    struct plat_verify v;
    compile_verify(&t, src, &b, &v);
    assert_false(v.pass);
    assert_int_equal(v.reason, PLAT_FAIL_WRONG_RESULT);
    platform_build_free(P, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misaligned_ecall),
        cmocka_unit_test(test_leaves_rounding_mode_changed),
        cmocka_unit_test(test_honest_bcmp_and_vxrm_pass),
        cmocka_unit_test(test_include_spellings_refused_by_compiler),
        cmocka_unit_test(test_diagnostics_quote_no_other_file),
        cmocka_unit_test(test_allow_list_is_one_list),
        cmocka_unit_test(test_startup_hooks_refused),
        cmocka_unit_test_setup_teardown(test_startup_hooks_refused_in_linked_program, no_object_screen_on,
                                        no_object_screen_off),
        cmocka_unit_test(test_tls_and_got_refused),
        cmocka_unit_test(test_got_relocation_refused),
        cmocka_unit_test(test_file_directives_refused),
        cmocka_unit_test_setup_teardown(test_forged_report_by_raw_syscall, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test_setup_teardown(test_rewrites_judge_inputs, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test_setup_teardown(test_raw_syscalls_cannot_touch_the_host, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test(test_work_skipped_when_unchecked),
        cmocka_unit_test(test_icount_markers_forged),
        cmocka_unit_test_setup_teardown(test_forged_plugin_output, no_object_screen_on, no_object_screen_off),
        cmocka_unit_test(test_wrong_for_special_values),
        cmocka_unit_test(test_matmul_wrong_for_special_values),
        cmocka_unit_test(test_right_only_for_first_rows),
        cmocka_unit_test(test_constant_output_refused),
        cmocka_unit_test(test_tail_agnostic_bug_caught),
        cmocka_unit_test(test_ignored_scalars_caught),
        cmocka_unit_test(test_accumulates_into_output),
        cmocka_unit_test(test_wrong_after_1000_calls),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

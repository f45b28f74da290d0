/*
 * tests/test_k3_objcheck.c - the ELF checks of platform/k3/objcheck.c on
 * real objects and programs: each allow-list (sections by type, flags and
 * name; symbol types, bindings, visibility; the one global definition;
 * relocation types) against an object assembled to break exactly that
 * rule, the honest kernels passing, malformed bytes refused without reading
 * past them; and the linked kernel program against the same stub linked
 * with a null kernel: an honest kernel of another size passes, a
 * constructor, an ifunc and a second kope_kernel do not.
 *
 * Builds with clang-19 for riscv64 (as the K3 target does off the board)
 * and links statically with lld; skips when either is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <elf.h>

#include "platform/k3/objcheck.h"
#include "platform/platform.h"
#include "testutil.h"

#define RV_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"

static int have_toolchain(void)
{
    static int have = -1;
    if (have < 0) {
        char out[256];
        have = run_cmd(out, sizeof out, "command -v clang-19 && command -v ld.lld-19 || command -v ld.lld") == 0;
    }
    return have;
}

/* Write text to DIR/name and build it: obj (-c) or, with link, a static
 * program from the stub and it. Returns the output's path. */
static const char *build(const char *name, const char *ext, const char *text, const char *how)
{
    char src[4096], out[8192];
    snprintf(src, sizeof src, "%s", tpath("%s.%s", name, ext));
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    const char *dst = tpath("%s.out", name);
    int rc = run_cmd(out, sizeof out, RV_CC " -O2 %s '%s' %s -o '%s'", how, src,
                     strstr(how, "-static") ? "-lm" : "", dst);
    if (rc != 0)
        fail_msg("build of %s failed: %s", name, out);
    return dst;
}

static const char *obj_c(const char *name, const char *text)
{
    return build(name, "c", text, "-c");
}

static const char *obj_s(const char *name, const char *text)
{
    return build(name, "s", text, "-c");
}

static void obj_refused(const char *path, enum plat_screen_rule rule, const char *want)
{
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    int rc = k3_screen_object(path, &r, d, sizeof d);
    if (rc != 1 || r != rule || !strstr(d, want))
        fail_msg("%s: expected %s naming '%s', got rc=%d %s: %s", path, plat_screen_rule_name(rule), want,
                 rc, plat_screen_rule_name(r), d);
}

#define KERNEL_S ".text\n.globl kope_kernel\n.type kope_kernel, @function\nkope_kernel:\n  ret\n" \
                 ".size kope_kernel, .-kope_kernel\n"

static void test_object_lists(void **state)
{
    (void)state;
    if (!have_toolchain())
        skip();
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    /* honest: static helpers, a static const table, libm, a vector loop */
    const char *good = obj_c("good",
        "#include <math.h>\n#include <stddef.h>\n#include <riscv_vector.h>\n"
        "static const float tab[4] = {1, 2, 3, 4};\n"
        "static inline __attribute__((always_inline)) float h(float v) { return expf(v) * tab[(int)v & 3]; }\n"
        "void kope_kernel(size_t n, const float *x, float *o) {\n"
        "  for (size_t i = 0; i < n;) { size_t vl = __riscv_vsetvl_e32m8(n - i);\n"
        "    __riscv_vse32_v_f32m8(o + i, __riscv_vle32_v_f32m8(x + i, vl), vl); i += vl; }\n"
        "  if (n) o[0] = h(x[0]);\n}\n");
    if (k3_screen_object(good, &r, d, sizeof d) != 0)
        fail_msg("honest object refused: %s", d);
    /* sections */
    obj_refused(obj_s("initarr", KERNEL_S ".section .init_array,\"aw\"\n.dword kope_kernel\n"), PLAT_SCREEN_CTOR,
                ".init_array");
    obj_refused(obj_s("initprog", KERNEL_S ".section .init_array.00100,\"a\",@progbits\n.dword kope_kernel\n"),
                PLAT_SCREEN_CTOR, ".init_array.00100");
    obj_refused(obj_s("inittype", KERNEL_S ".section .rodata.x,\"a\",@init_array\n.dword kope_kernel\n"),
                PLAT_SCREEN_CTOR, ".rodata.x");
    obj_refused(obj_s("ctors", KERNEL_S ".section .ctors,\"a\",@progbits\n.dword kope_kernel\n"), PLAT_SCREEN_CTOR,
                ".ctors");
    obj_refused(obj_s("fini", KERNEL_S ".section .fini,\"ax\",@progbits\n  ret\n"), PLAT_SCREEN_CTOR, ".fini");
    obj_refused(obj_s("data", KERNEL_S ".data\n.word 1\n"), PLAT_SCREEN_STATE, ".data");
    obj_refused(obj_s("relro", KERNEL_S ".section .data.rel.ro,\"aw\"\n.dword kope_kernel\n"), PLAT_SCREEN_STATE,
                ".data.rel.ro");
    obj_refused(obj_s("tbss", KERNEL_S ".section .tbss,\"awT\",@nobits\n.zero 4\n"), PLAT_SCREEN_STATE, ".tbss");
    obj_refused(obj_s("other", KERNEL_S ".section .mine,\"a\"\n.word 1\n"), PLAT_SCREEN_SECTION, ".mine");
    obj_refused(obj_s("xro", KERNEL_S ".section .rodata.c,\"ax\",@progbits\n  ret\n"), PLAT_SCREEN_SECTION,
                "code outside");
    obj_refused(obj_s("xstack", KERNEL_S ".section .note.GNU-stack,\"x\",@progbits\n"), PLAT_SCREEN_SECTION,
                "executable stack");
    obj_refused(obj_s("note", KERNEL_S ".section .note.kope,\"a\",@note\n.word 0\n"), PLAT_SCREEN_SECTION, "note");
    obj_refused(obj_s("retain", KERNEL_S ".section .text.keep,\"axR\",@progbits\n  ret\n"), PLAT_SCREEN_SECTION,
                ".text.keep");
    /* symbols */
    obj_refused(obj_s("ifunc", KERNEL_S ".type pick, @gnu_indirect_function\npick:\n  ret\n"), PLAT_SCREEN_SYMBOL,
                "indirect function");
    obj_refused(obj_s("weak", ".text\n.weak kope_kernel\n.type kope_kernel, @function\nkope_kernel:\n  ret\n"),
                PLAT_SCREEN_SYMBOL, "weak");
    obj_refused(obj_s("weakref", KERNEL_S ".weak environ\n  la a0, environ\n"), PLAT_SCREEN_SYMBOL, "weak");
    obj_refused(obj_s("second", KERNEL_S ".globl helper\n.type helper, @function\nhelper:\n  ret\n"),
                PLAT_SCREEN_SYMBOL, "helper");
    obj_refused(obj_s("prot", KERNEL_S ".protected kope_kernel\n"), PLAT_SCREEN_SYMBOL, "visibility");
    obj_refused(obj_s("common", KERNEL_S ".comm buf, 64, 8\n"), PLAT_SCREEN_STATE, "common");
    obj_refused(obj_s("undef", KERNEL_S "  call getpid\n"), PLAT_SCREEN_SYMBOL, "getpid");
    obj_refused(obj_s("dataker", ".section .rodata\n.globl kope_kernel\n.type kope_kernel, @object\nkope_kernel:\n"
                                 ".word 0\n"), PLAT_SCREEN_NO_KERNEL, "function in .text");
    obj_refused(obj_s("nokernel", ".text\nf:\n  ret\n"), PLAT_SCREEN_NO_KERNEL, "does not define");
    /* relocations: an allowed symbol through the GOT, a TLS access */
    obj_refused(obj_s("got", KERNEL_S ".option pic\n  la a0, memcpy\n"), PLAT_SCREEN_RELOCATION, "R_RISCV_GOT_HI20");
    obj_refused(obj_s("tprel", KERNEL_S ".reloc ., R_RISCV_TPREL_HI20, kope_kernel\n  lui a0, 0\n"),
                PLAT_SCREEN_RELOCATION, "R_RISCV_TPREL_HI20");
    obj_refused(obj_s("irel", KERNEL_S ".section .rodata\n.reloc ., R_RISCV_IRELATIVE, kope_kernel\n.dword 0\n"),
                PLAT_SCREEN_RELOCATION, "R_RISCV_IRELATIVE");
    obj_refused(obj_s("none", KERNEL_S ".reloc ., R_RISCV_NONE, kope_kernel\n  nop\n"), PLAT_SCREEN_RELOCATION,
                "R_RISCV_NONE");
    /* machine code: ecall linear and misaligned, a counter read */
    obj_refused(obj_s("ecall", KERNEL_S "  ecall\n"), PLAT_SCREEN_SYSTEM_INSN, "ecall");
    obj_refused(obj_s("rdcycle", KERNEL_S "  rdcycle a0\n"), PLAT_SCREEN_SYSTEM_INSN, "system instruction");
}

/* Malformed bytes: refused, never read past (ASan runs catch a read). */
static void test_object_malformed(void **state)
{
    (void)state;
    if (!have_toolchain())
        skip();
    const char *good = obj_s("mal", KERNEL_S);
    FILE *f = fopen(good, "rb");
    assert_non_null(f);
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 64 && n < sizeof buf);
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    assert_int_equal(k3_screen_object_mem(buf, n, &r, d, sizeof d), 0);
    for (size_t cut = 0; cut < n; cut += cut < 80 ? 1 : 37) {
        unsigned char *copy = malloc(cut ? cut : 1); /* exact size: a read past it is an ASan error */
        memcpy(copy, buf, cut);
        int rc = k3_screen_object_mem(copy, cut, &r, d, sizeof d);
        free(copy);
        if (rc == 0 && cut < n)
            fail_msg("a %zu-byte prefix of a %zu-byte object passed", cut, n);
    }
    /* every section header made to point past the end */
    unsigned char *copy = malloc(n);
    for (size_t at = 64; at + 8 <= n; at += 8) {
        memcpy(copy, buf, n);
        memset(copy + at, 0xff, 8);
        (void)k3_screen_object_mem(copy, n, &r, d, sizeof d);
    }
    free(copy);
    assert_int_equal(k3_screen_object_mem((const unsigned char *)"not an elf", 10, &r, d, sizeof d), 1);
    assert_int_equal(k3_screen_object(tpath("absent.o"), &r, d, sizeof d), PLAT_ERR_IO);
}

/* ------------------------------------------- the linked kernel program --- */

#define STUB "void kope_kernel(float *o, int n);\nint main(void) {\n  float o[4];\n" \
             "  kope_kernel(o, 4);\n  return o[0] == 0 ? 0 : 1;\n}\n"

static const char *program(const char *name, const char *kernel)
{
    char how[8192];
    const char *stub = tpath("stub.c");
    FILE *f = fopen(stub, "w");
    assert_non_null(f);
    fputs(STUB, f);
    fclose(f);
    snprintf(how, sizeof how, "-static -fuse-ld=lld '%s'", stub);
    return build(name, "c", kernel, how);
}

/* A copy of prog whose .comment section is made a RELA section holding one
 * R_RISCV_IRELATIVE with main as its resolver. */
static const char *with_irelative(const char *prog)
{
    FILE *f = fopen(prog, "rb");
    assert_non_null(f);
    size_t cap = 64u << 20;
    unsigned char *b = malloc(cap);
    assert_non_null(b);
    size_t n = fread(b, 1, cap, f);
    fclose(f);
    assert_true(n > sizeof(Elf64_Ehdr) && n < cap);
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    Elf64_Shdr sh[128];
    assert_true(eh.e_shnum < 128 && eh.e_shoff + eh.e_shnum * sizeof(Elf64_Shdr) <= n);
    memcpy(sh, b + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
    const char *shstr = (const char *)b + sh[eh.e_shstrndx].sh_offset;
    uint64_t main_at = 0;
    for (unsigned i = 0; i < eh.e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB) {
            const char *str = (const char *)b + sh[sh[i].sh_link].sh_offset;
            for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++) {
                Elf64_Sym sym;
                memcpy(&sym, b + sh[i].sh_offset + k * sizeof sym, sizeof sym);
                if (strcmp(str + sym.st_name, "main") == 0)
                    main_at = sym.st_value;
            }
        }
    assert_true(main_at != 0);
    int done = 0;
    for (unsigned i = 0; i < eh.e_shnum && !done; i++)
        if (strcmp(shstr + sh[i].sh_name, ".comment") == 0 && sh[i].sh_size >= sizeof(Elf64_Rela)) {
            Elf64_Rela r = {.r_offset = 0, .r_info = ELF64_R_INFO(0, 58), .r_addend = (int64_t)main_at};
            memcpy(b + sh[i].sh_offset, &r, sizeof r);
            sh[i].sh_type = SHT_RELA;
            sh[i].sh_entsize = sizeof(Elf64_Rela);
            sh[i].sh_size = sizeof(Elf64_Rela);
            sh[i].sh_flags = 0;
            done = 1;
        }
    assert_true(done);
    memcpy(b + eh.e_shoff, sh, eh.e_shnum * sizeof(Elf64_Shdr));
    const char *out = tpath("irelative.out");
    f = fopen(out, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    free(b);
    return out;
}

static void prog_refused(const char *prog, const char *obj, const struct k3_prog_ref *ref,
                         enum plat_screen_rule rule, const char *want)
{
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    int rc = k3_screen_program(prog, obj, ref, &r, d, sizeof d);
    if (rc != 1 || r != rule || !strstr(d, want))
        fail_msg("%s: expected %s naming '%s', got rc=%d %s: %s", prog, plat_screen_rule_name(rule), want, rc,
                 plat_screen_rule_name(r), d);
}

/* k3_object_spills: whole-register vector stores/loads and sp-relative
 * scalar ones, each form counted once, other memory traffic not at all;
 * and a kernel clang must spill (six LMUL-8 values live at once, four
 * groups in the register file) against one it need not. */
static void test_object_spills(void **state)
{
    (void)state;
    if (!have_toolchain())
        skip();
    const char *o = obj_s("spills", ".text\n.globl kope_kernel\n.type kope_kernel, @function\nkope_kernel:\n"
                                   "  vs1r.v v8, (a0)\n  vs8r.v v16, (a1)\n  vl1re32.v v8, (a0)\n"
                                   "  vse32.v v8, (a0)\n  vle32.v v8, (sp)\n" /* unit-stride: not spills */
                                   "  sd ra, 8(sp)\n  ld s0, 0(sp)\n" /* compressed: c.sdsp, c.ldsp */
                                   ".option push\n.option norvc\n"
                                   "  sd s1, 16(sp)\n  fsw ft0, 4(sp)\n  flw ft1, 4(sp)\n"
                                   "  sd a1, 0(a0)\n  ld a2, 0(a1)\n" /* not off sp */
                                   ".option pop\n  ret\n.size kope_kernel, .-kope_kernel\n");
    struct k3_spills sp;
    assert_int_equal(k3_object_spills(o, &sp), 0);
    assert_int_equal(sp.vreg_stores, 2);
    assert_int_equal(sp.vreg_loads, 1);
    assert_int_equal(sp.stack_stores, 3);
    assert_int_equal(sp.stack_loads, 2);
    static const char *const lots =
        "#include <riscv_vector.h>\n#include <stddef.h>\n"
        "void kope_kernel(size_t n, const float *x, float *o) {\n"
        "  size_t vl = __riscv_vsetvl_e32m8(n);\n"
        "  vfloat32m8_t a = __riscv_vle32_v_f32m8(x, vl), b = __riscv_vle32_v_f32m8(x + 64, vl),\n"
        "    c = __riscv_vle32_v_f32m8(x + 128, vl), d = __riscv_vle32_v_f32m8(x + 192, vl),\n"
        "    e = __riscv_vle32_v_f32m8(x + 256, vl), f = __riscv_vle32_v_f32m8(x + 320, vl);\n"
        "  __riscv_vse32_v_f32m8(o, __riscv_vfmul_vv_f32m8(a, f, vl), vl);\n"
        "  __riscv_vse32_v_f32m8(o + 64, __riscv_vfmul_vv_f32m8(b, e, vl), vl);\n"
        "  __riscv_vse32_v_f32m8(o + 128, __riscv_vfmul_vv_f32m8(c, d, vl), vl);\n"
        "  __riscv_vse32_v_f32m8(o + 192, __riscv_vfmul_vv_f32m8(a, b, vl), vl);\n"
        "  __riscv_vse32_v_f32m8(o + 256, __riscv_vfmul_vv_f32m8(e, f, vl), vl);\n"
        "  __riscv_vse32_v_f32m8(o + 320, __riscv_vfmul_vv_f32m8(c, a, vl), vl);\n}\n";
    assert_int_equal(k3_object_spills(obj_c("spilling", lots), &sp), 0);
    assert_true(sp.vreg_stores > 0 && sp.vreg_loads > 0);
    static const char *const few =
        "#include <riscv_vector.h>\n#include <stddef.h>\n"
        "void kope_kernel(size_t n, const float *x, float *o) {\n"
        "  for (size_t i = 0, vl; i < n; i += vl) { vl = __riscv_vsetvl_e32m8(n - i);\n"
        "    __riscv_vse32_v_f32m8(o + i, __riscv_vfadd_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), 1.0f, vl), vl); }\n}\n";
    assert_int_equal(k3_object_spills(obj_c("nospill", few), &sp), 0);
    assert_int_equal(sp.vreg_stores, 0);
    assert_int_equal(sp.vreg_loads, 0);
    /* not an object: -1, counts 0 */
    const char *junk = tpath("junk.o");
    test_write_text(junk, "not an ELF file at all, just text");
    assert_int_equal(k3_object_spills(junk, &sp), -1);
    assert_int_equal(sp.vreg_stores + sp.stack_stores, 0);
}

static void test_linked_program(void **state)
{
    (void)state;
    if (!have_toolchain())
        skip();
    char err[256];
    struct k3_prog_ref ref;
    k3_prog_ref_init(&ref);
    enum plat_screen_rule r;
    char d[PLAT_DETAIL_MAX];
    /* not taken yet: no verdict */
    assert_true(k3_screen_program(tpath("x"), NULL, &ref, &r, d, sizeof d) < 0);
    char null_prog[4096]; /* tpath's ring is reused below */
    snprintf(null_prog, sizeof null_prog, "%s", program("null", K3_NULL_KERNEL_SRC));
    if (k3_prog_ref_take(null_prog, &ref, err, sizeof err) != 0)
        fail_msg("null program: %s", err);
    assert_non_null(ref.arrays[1]); /* crt's frame_dummy and the like */
    /* an honest kernel, big enough to move every address after it */
    const char *honest = "#include <math.h>\n"
                         "static float big(float v) {\n  float s = 0;\n"
                         "  for (int i = 0; i < 64; i++) s += sinf(v + i) * cosf(v - i) + expf(-v * i);\n"
                         "  return s;\n}\n"
                         "void kope_kernel(float *o, int n) { for (int i = 0; i < n; i++) o[i] = big(i) * 0; }\n";
    const char *hp = program("honest", honest);
    const char *ho = obj_c("honest_o", honest);
    if (k3_screen_program(hp, ho, &ref, &r, d, sizeof d) != 0)
        fail_msg("honest program refused: %s", d);
    /* a constructor: one more init_array entry */
    const char *ctor = "static volatile int seen;\n__attribute__((constructor)) static void hook(void) { seen = 1; }\n"
                       "void kope_kernel(float *o, int n) { for (int i = 0; i < n; i++) o[i] = seen - 1; }\n";
    prog_refused(program("ctor", ctor), obj_c("ctor_o", ctor), &ref, PLAT_SCREEN_CTOR, ".init_array");
    /* a destructor: fini_array */
    const char *dtor = "static volatile int seen;\n__attribute__((destructor)) static void bye(void) { seen = 1; }\n"
                       "void kope_kernel(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 0; }\n";
    prog_refused(program("dtor", dtor), NULL, &ref, PLAT_SCREEN_CTOR, ".fini_array");
    /* an IRELATIVE relocation: the static start-up code would call its
     * resolver before main. (lld links a call to a local ifunc straight to
     * its resolver, with no IRELATIVE, and the object check refuses the ifunc
     * symbol anyway; GNU ld would emit one: made here by patching the null
     * program's .comment into a .rela.iplt holding one, resolver main.) */
    prog_refused(with_irelative(null_prog), NULL, &ref, PLAT_SCREEN_RELOCATION, "IRELATIVE");
    /* a second function named kope_kernel (a static one in another file) */
    const char *two = "void kope_kernel(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 0; }\n";
    char how[8192];
    const char *extra = tpath("extra.c");
    FILE *f = fopen(extra, "w");
    assert_non_null(f);
    fputs("static void kope_kernel(void) { }\nvoid (*keep_it)(void) = kope_kernel;\n", f);
    fclose(f);
    snprintf(how, sizeof how, "-static -fuse-ld=lld '%s' '%s'", tpath("stub.c"), extra);
    prog_refused(build("two", "c", two, how), NULL, &ref, PLAT_SCREEN_SYMBOL, "kope_kernel");
    /* the null program itself passes against itself */
    assert_int_equal(k3_screen_program(null_prog, NULL, &ref, &r, d, sizeof d), 0);
    k3_prog_ref_free(&ref);
    k3_prog_ref_free(&ref); /* twice is fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object_lists),
        cmocka_unit_test(test_object_malformed),
        cmocka_unit_test(test_linked_program),
        cmocka_unit_test(test_object_spills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

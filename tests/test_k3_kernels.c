/*
 * tests/test_k3_kernels.c - kope's built-in RVV kernel templates: the table
 * (platform/k3/k3_templates.c) is consistent, and *every* valid instance
 * kope ships verifies under qemu-riscv64 (VLEN 256) against the harness's
 * double-precision references on awkward sizes.
 *
 * Each instance is produced exactly as the tuner will produce it
 * (k3_point_source: #defines + embedded template text), must pass the
 * harness's source screen and object check (platform/k3/screen.c), is
 * cross-compiled with clang-19, and all of them are linked into one checker
 * program
 * (tests/k3_kernels_main.c) so qemu starts once. Builds run through a
 * generated makefile with -j2. Skips (does not fail) when clang-19 or
 * qemu-riscv64 is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/context/ppactive.h"
#include "platform/embed.h"
#include "platform/platform.h"
#include "platform/k3/k3.h"
#include "platform/k3/k3_templates.h"

#define RV_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
/* as the harness runs candidates: agnostic tails and masked-off elements as all ones */
#define RV_RUN "qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true," \
               "rvv_ta_all_1s=true,rvv_ma_all_1s=true"

/* The source tree: $KOPE_SRC, else the part of $KOPE_BIN before "/build/"
 * (tests/run.sh sets it), else the current directory if it is the tree. */
static int src_root(char *buf, size_t cap)
{
    const char *s = getenv("KOPE_SRC");
    if (s && *s)
        return snprintf(buf, cap, "%s", s) < (int)cap ? 0 : -1;
    const char *bin = getenv("KOPE_BIN");
    const char *b = bin ? strstr(bin, "/build/") : NULL;
    if (!b) {
        if (access("tests/k3_kernels_main.c", R_OK) != 0 || !getcwd(buf, cap))
            return -1;
        return 0;
    }
    if ((size_t)(b - bin) >= cap)
        return -1;
    memcpy(buf, bin, (size_t)(b - bin));
    buf[b - bin] = '\0';
    return 0;
}

static int have(const char *cmd)
{
    char c[256];
    snprintf(c, sizeof c, "command -v %s >/dev/null 2>&1", cmd);
    return system(c) == 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

/* ------------------------------------------------------------- table --- */

static void test_table_covers_every_op(void **state)
{
    (void)state;
    size_t total = 0;
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct k3_template *t = k3_template_for((enum plat_op)op);
        assert_non_null(t);
        assert_non_null(embed_find(t->file));
        /* the space core's tuner walks is this template's (platform_ops.space) */
        assert_ptr_equal(platform_space("k3", (enum plat_op)op), &t->sp);
        assert_int_equal(t->sp.op, op);
        int v[K3_PARAM_MAX];
        plat_point_default(&t->sp, v);
        assert_true(plat_point_valid(&t->sp, v));
        size_t nv = plat_space_count_valid(&t->sp);
        assert_true(nv >= 1 && nv <= plat_space_size(&t->sp));
        total += nv;
        for (int i = 0; i < t->sp.n_params; i++) {
            const struct plat_param *p = &t->sp.params[i];
            int has_def = 0;
            for (int j = 0; j < p->n_values; j++)
                has_def |= p->values[j] == p->def;
            assert_true(has_def);
        }
    }
    assert_null(k3_template_at(PLAT_OP_COUNT));
    print_message("templates: %d ops, %zu valid instances\n", PLAT_OP_COUNT, total);
}

static void test_points_print_and_parse(void **state)
{
    (void)state;
    char label[256], defs[256];
    int v[K3_PARAM_MAX], w[K3_PARAM_MAX];
    const struct k3_template *t = k3_template_for(PLAT_OP_GEMM), *t2 = NULL;
    plat_point_default(&t->sp, v);
    assert_int_equal(k3_point_label(t, v, label, sizeof label), 0);
    assert_string_equal(label, "gemm LMUL=4 MR=4 KC=0");
    assert_int_equal(k3_point_defines(t, v, defs, sizeof defs), 0);
    assert_string_equal(defs, "-DLMUL=4 -DMR=4 -DKC=0");
    assert_int_equal(k3_point_parse("gemm MR=8 LMUL=1", &t2, w), 0);
    assert_ptr_equal(t2, t);
    assert_int_equal(plat_point_get(&t->sp, w, "MR"), 8);
    assert_int_equal(plat_point_get(&t->sp, w, "KC"), 0);
    /* register budget: MR=8 at LMUL=4 needs 32 accumulators */
    assert_int_not_equal(k3_point_parse("gemm MR=8 LMUL=4", &t2, w), 0);
    assert_int_not_equal(k3_point_parse("gemm NOPE=1", &t2, w), 0);
    assert_int_not_equal(k3_point_parse("gemm MR=3", &t2, w), 0);
    assert_int_not_equal(k3_point_parse("frobnicate", &t2, w), 0);
    assert_int_not_equal(k3_point_defines(t, v, defs, 8), 0); /* too small */

    t = k3_template_for(PLAT_OP_ADD);
    plat_point_default(&t->sp, v);
    assert_int_equal(k3_point_defines(t, v, defs, sizeof defs), 0);
    assert_string_equal(defs, "-DOP=OP_ADD -DLMUL=8 -DUNROLL=2");
    size_t len = 0;
    char *src = k3_point_source(t, v, &len);
    assert_non_null(src);
    assert_int_equal(strlen(src), len);
    assert_non_null(strstr(src, "#define OP OP_ADD\n#define LMUL 8\n#define UNROLL 2\n"));
    assert_non_null(strstr(src, "KOPE_KERNEL"));
    /* only the headers a candidate may include */
    for (const char *p = strstr(src, "#include"); p; p = strstr(p + 1, "#include")) {
        assert_true(strncmp(p, "#include <stddef.h>", 19) == 0 ||
                    strncmp(p, "#include <stdint.h>", 19) == 0 ||
                    strncmp(p, "#include <string.h>", 19) == 0 ||
                    strncmp(p, "#include <math.h>", 17) == 0 ||
                    strncmp(p, "#include <riscv_vector.h>", 25) == 0 ||
                    strncmp(p, "#include \"kernel_abi.h\"", 23) == 0);
    }
    free(src);
}

/* Every template file passes the allow-list by itself too. */
static void test_templates_stay_inside_the_screen(void **state)
{
    (void)state;
    static const char *const banned[] = {"asm", "__attribute__", "constructor",
                                         "malloc", "fopen", "syscall", "printf", NULL};
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct embed_file *f = embed_find(k3_template_for((enum plat_op)op)->file);
        for (int i = 0; banned[i]; i++)
            if (strstr(f->data, banned[i]))
                fail_msg("%s contains '%s'", f->name, banned[i]);
    }
}

/* ------------------------------------------------------ qemu verify --- */

static void test_every_instance_verifies_under_qemu(void **state)
{
    (void)state;
    char root[1024], dir[1200], path[1400], cmd[4096];
    const char *objcopy = have("llvm-objcopy-19") ? "llvm-objcopy-19" : "riscv64-linux-gnu-objcopy";
    if (!have("clang-19") || !have("qemu-riscv64") || !have(objcopy)) {
        print_message("skip: clang-19, qemu-riscv64 or %s not installed\n", objcopy);
        skip();
    }
    assert_int_equal(src_root(root, sizeof root), 0);
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/kk", tmp && *tmp ? tmp : ".");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);

    /* the harness's references, as the binary carries them */
    static const char *const emb[] = {"platform/judge/ref.c", "platform/judge/hargs.h"};
    for (size_t i = 0; i < 2; i++) {
        const struct embed_file *f = embed_find(emb[i]);
        assert_non_null(f);
        snprintf(path, sizeof path, "%s/%s", dir, strrchr(emb[i], '/') + 1);
        assert_int_equal(write_file(path, f->data, f->len), 0);
    }

    snprintf(path, sizeof path, "%s/table.inc", dir);
    FILE *tab = fopen(path, "w");
    snprintf(path, sizeof path, "%s/kk.mk", dir);
    FILE *mk = fopen(path, "w");
    assert_non_null(tab);
    assert_non_null(mk);
    /* -O3: the flags the harness builds candidates with */
    fprintf(mk, "CC = " RV_CC "\nKFLAGS = -O3 -I%s/platform\nOBJCOPY = %s\n", root, objcopy);
    fprintf(mk, "all: checker\n");
    size_t n = 0;
    char objs[64 * 1024];
    size_t objs_len = 0;
    objs[0] = '\0';
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct k3_template *t = k3_template_for((enum plat_op)op);
        size_t size = plat_space_size(&t->sp);
        for (size_t idx = 0; idx < size; idx++) {
            int v[K3_PARAM_MAX];
            if (plat_space_point(&t->sp, idx, v) != 1)
                continue;
            size_t len;
            char *src = k3_point_source(t, v, &len);
            assert_non_null(src);
            enum plat_screen_rule rule;
            char detail[PLAT_DETAIL_MAX];
            if (k3_screen_source(src, len, &rule, detail, sizeof detail))
                fail_msg("instance %zu rejected by the source screen: %s", n, detail);
            snprintf(path, sizeof path, "%s/k%zu.c", dir, n);
            assert_int_equal(write_file(path, src, len), 0);
            free(src);
            char label[256];
            assert_int_equal(k3_point_label(t, v, label, sizeof label), 0);
            double rtol, atol;
            plat_op_default_tol(t->sp.op, &rtol, &atol);
            fprintf(tab, "void kk_%zu(void);\n", n);
            /* build as shipped (kope_kernel), then rename for the batch link */
            fprintf(mk, "k%zu.o: k%zu.c\n\t$(CC) $(KFLAGS) -c $< -o k%zu.raw.o\n"
                        "\t$(OBJCOPY) --redefine-sym kope_kernel=kk_%zu k%zu.raw.o $@\n",
                    n, n, n, n, n);
            int w = snprintf(objs + objs_len, sizeof objs - objs_len, " k%zu.o", n);
            assert_true(w > 0 && (size_t)w < sizeof objs - objs_len);
            objs_len += (size_t)w;
            n++;
        }
    }
    fprintf(tab, "static const struct kk_entry kk_table[] = {\n");
    n = 0;
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct k3_template *t = k3_template_for((enum plat_op)op);
        size_t size = plat_space_size(&t->sp);
        for (size_t idx = 0; idx < size; idx++) {
            int v[K3_PARAM_MAX];
            char label[256];
            double rtol, atol;
            if (plat_space_point(&t->sp, idx, v) != 1)
                continue;
            k3_point_label(t, v, label, sizeof label);
            plat_op_default_tol(t->sp.op, &rtol, &atol);
            fprintf(tab, "  {\"%s\", %d, kk_%zu, %.17g, %.17g},\n", label, op, n, rtol, atol);
            n++;
        }
    }
    fprintf(tab, "};\nstatic const size_t kk_count = %zu;\n", n);
    fprintf(mk, "checker: main.o ref.o%s\n\t$(CC) -static $^ -lm -o $@\n", objs);
    fprintf(mk, "main.o: %s/tests/k3_kernels_main.c table.inc\n"
                "\t$(CC) -O1 -I. $(KFLAGS) -DKK_TABLE='\"table.inc\"' -c $< -o $@\n", root);
    fprintf(mk, "ref.o: ref.c hargs.h\n\t$(CC) -O2 -I. $(KFLAGS) -c $< -o $@\n");
    assert_int_equal(fclose(tab), 0);
    assert_int_equal(fclose(mk), 0);

    snprintf(cmd, sizeof cmd, "cd '%s' && make -s -j2 -f kk.mk > build.log 2>&1 || "
                              "{ head -c 4000 build.log; exit 1; }", dir);
    assert_int_equal(system(cmd), 0);
    /* every object passes the harness's object check (no writable state,
     * no symbol outside the allow-list, only kope_kernel defined) */
    for (size_t i = 0; i < n; i++) {
        enum plat_screen_rule rule;
        char detail[PLAT_DETAIL_MAX];
        snprintf(path, sizeof path, "%s/k%zu.raw.o", dir, i);
        if (k3_screen_object(path, &rule, detail, sizeof detail))
            fail_msg("instance %zu rejected by the object check: %s", i, detail);
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && " RV_RUN " ./checker > check.log 2>&1; rc=$?; "
                              "grep -v '^ok ' check.log | head -40; exit $rc", dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/check.log", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    size_t ok = 0, bad = 0;
    int summary = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "summary %zu %zu", &ok, &bad) == 2)
            summary = 1;
    fclose(f);
    print_message("built-in instances under qemu: %zu ok, %zu failed (of %zu)\n", ok, bad, n);
    assert_true(summary);
    assert_int_equal(bad, 0);
    assert_int_equal(ok, n);
    assert_int_equal(rc, 0);
}

/* ------------------------------------------ the prompt's active configuration --- */

/* What the prompt shows of a template instance (core/context/ppactive.h) is
 * the same kernel: for every op's default point the shown text compiles to
 * the same assembly as the instance, while the switched-off branches are
 * gone; every valid instance's shown text still passes the source screen. */
static void test_active_configuration_is_the_same_kernel(void **state)
{
    (void)state;
    char root[1024], dir[1200], path[1400], cmd[4096];
    /* every valid instance: decidable, smaller, screened like a candidate */
    size_t n_inst = 0, n_shrunk = 0;
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct k3_template *t = k3_template_for((enum plat_op)op);
        size_t size = plat_space_size(&t->sp);
        for (size_t idx = 0; idx < size; idx++) {
            int v[K3_PARAM_MAX];
            if (plat_space_point(&t->sp, idx, v) != 1)
                continue;
            size_t len, removed;
            char *src = k3_point_source(t, v, &len);
            assert_non_null(src);
            char *act = pp_active(src, len, &removed);
            assert_non_null(act);
            enum plat_screen_rule rule;
            char detail[PLAT_DETAIL_MAX];
            if (k3_screen_source(act, strlen(act), &rule, detail, sizeof detail))
                fail_msg("active configuration of instance %zu rejected by the screen: %s", n_inst, detail);
            /* every condition of a template is its own macros': all decided */
            for (const char *p = act; (p = strchr(p, '#')); p++)
                if (strncmp(p, "#if", 3) == 0 || strncmp(p, "#elif", 5) == 0 || strncmp(p, "#else", 5) == 0)
                    fail_msg("instance %zu keeps a conditional: %.60s", n_inst, p);
            n_shrunk += removed > 0 && strlen(act) < len;
            n_inst++;
            free(act);
            free(src);
        }
    }
    assert_int_equal(n_shrunk, n_inst);
    if (!have("clang-19")) {
        print_message("skip the compile check: clang-19 not installed\n");
        skip();
    }
    assert_int_equal(src_root(root, sizeof root), 0);
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/active", tmp && *tmp ? tmp : ".");
    snprintf(path, sizeof path, "%s/a.mk", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    FILE *mk = fopen(path, "w");
    assert_non_null(mk);
    fprintf(mk, "CC = " RV_CC "\nKFLAGS = -O3 -I%s/platform\nall:", root);
    for (int op = 0; op < PLAT_OP_COUNT; op++)
        fprintf(mk, " same%d", op);
    fprintf(mk, "\n");
    for (int op = 0; op < PLAT_OP_COUNT; op++) {
        const struct k3_template *t = k3_template_for((enum plat_op)op);
        int v[K3_PARAM_MAX];
        plat_point_default(&t->sp, v);
        size_t len, removed;
        char *src = k3_point_source(t, v, &len);
        assert_non_null(src);
        char *act = pp_active(src, len, &removed);
        assert_non_null(act);
        /* the same file name in two directories: the assembly names it */
        snprintf(cmd, sizeof cmd, "mkdir -p '%s/i%d' '%s/a%d'", dir, op, dir, op);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/i%d/k.c", dir, op);
        assert_int_equal(write_file(path, src, len), 0);
        snprintf(path, sizeof path, "%s/a%d/k.c", dir, op);
        assert_int_equal(write_file(path, act, strlen(act)), 0);
        fprintf(mk, "same%d:\n\tcd i%d && $(CC) $(KFLAGS) -S k.c -o k.s\n\tcd a%d && $(CC) $(KFLAGS) -S k.c -o k.s\n"
                    "\tcmp i%d/k.s a%d/k.s\n", op, op, op, op, op);
        free(act);
        free(src);
    }
    assert_int_equal(fclose(mk), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && make -s -j2 -f a.mk > build.log 2>&1 || "
                              "{ head -c 4000 build.log; exit 1; }", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_covers_every_op),
        cmocka_unit_test(test_points_print_and_parse),
        cmocka_unit_test(test_templates_stay_inside_the_screen),
        cmocka_unit_test(test_every_instance_verifies_under_qemu),
        cmocka_unit_test(test_active_configuration_is_the_same_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

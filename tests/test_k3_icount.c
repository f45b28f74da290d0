/*
 * tests/test_k3_icount.c - the qemu instruction-count plugin and its host
 * API (platform/k3/k3_icount.[ch], platform/k3/qemu/icount_plugin.c):
 * the report parser accepts what the plugin writes and refuses anything
 * else; under qemu-riscv64, counts cover the marked kernel call only and
 * are identical over three runs. Skips when clang-19, qemu-riscv64 or the
 * built plugin is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testutil.h"

#include "platform/platform.h"
#include "platform/k3/k3_icount.h"
#include "platform/k3/k3_templates.h"

#define RV_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
#define RV_RUN "qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true"

static void test_parse(void **state)
{
    (void)state;
    struct k3_icount ic;
    const char *good = "kope-icount 1\n"
                       "region 0 insns 3 vector_ops 0 vector_mem 0 vsetvl 0\n"
                       "region 1 insns 400 vector_ops 32 vector_mem 96 vsetvl 32\n"
                       "total insns 25712 vector_ops 221 vector_mem 411 vsetvl 222 regions 2 dropped 0\n";
    assert_int_equal(k3_icount_parse(good, strlen(good), &ic), 0);
    assert_int_equal(ic.n_regions, 2);
    assert_int_equal(ic.region[1].insns, 400);
    assert_int_equal(ic.region[1].vector_mem, 96);
    assert_int_equal(ic.total.vsetvl, 222);
    static const char *const bad[] = {
        "",
        "region 0 insns 3 vector_ops 0 vector_mem 0 vsetvl 0\n", /* no header */
        "kope-icount 1\nregion 0 insns 3 vector_ops 0 vector_mem 0 vsetvl 0\n", /* no total */
        ("kope-icount 1\nregion 1 insns 3 vector_ops 0 vector_mem 0 vsetvl 0\n"
         "total insns 3 vector_ops 0 vector_mem 0 vsetvl 0 regions 1 dropped 0\n"), /* gap */
        "kope-icount 1\ntotal insns 3 vector_ops 0 vector_mem 0 vsetvl 0 regions 4 dropped 0\n",
        "kope-icount 1\nregion 0 insns x\ntotal insns 3 vector_ops 0 vector_mem 0 vsetvl 0 regions 1 dropped 0\n",
        "kope-icount 1\nsurprise\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(k3_icount_parse(bad[i], strlen(bad[i]), &ic), PLAT_ERR_PROTOCOL);
    char arg[64];
    assert_int_equal(k3_icount_plugin_arg("/p/x.so", "/t/o", arg, sizeof arg), 0);
    assert_string_equal(arg, "/p/x.so,out=/t/o");
    assert_int_not_equal(k3_icount_plugin_arg("/p/x,y.so", "/t/o", arg, sizeof arg), 0);
    assert_int_not_equal(k3_icount_plugin_arg("/p/x.so", "/t/o", arg, 8), 0);
}

/* The guest: four regions between the markers: empty (the marker overhead),
 * add n=4096, exp n=4096, gemm 64x64x64 (default template instances). */
static const char guest_main[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include \"kernel_abi.h\"\n"
    "__attribute__((noinline)) void kope_icount_begin(int r) { __asm__ volatile(\"\" : : \"r\"(r) : \"memory\"); }\n"
    "__attribute__((noinline)) void kope_icount_end(int r) { __asm__ volatile(\"\" : : \"r\"(r) : \"memory\"); }\n"
    "kope_elementwise_fn k_add; kope_activation_fn k_exp; kope_matmul_fn k_gemm;\n"
    "int main(void) {\n"
    "  size_t n = 4096; float *x = malloc(n * 4), *y = malloc(n * 4), *o = malloc(n * 4);\n"
    "  for (size_t i = 0; i < n; i++) { x[i] = (float)(i % 17) * 0.25f - 2.0f; y[i] = 1.0f; }\n"
    "  struct kope_scalars s = {0.5f, -1.0f, 1.0f, 1e-5f};\n"
    "  kope_icount_begin(0); kope_icount_end(0);\n"
    "  kope_icount_begin(1); k_add(n, x, y, o, &s); kope_icount_end(1);\n"
    "  kope_icount_begin(2); k_exp(1, n, x, o, NULL, NULL, &s); kope_icount_end(2);\n"
    "  kope_icount_begin(3); k_gemm(1, 64, 64, 64, x, y, o); kope_icount_end(3);\n"
    "  printf(\"%g\\n\", o[5]); return 0; }\n";

static int write_instance(const char *dir, const char *file, enum plat_op op)
{
    char path[1200];
    int v[K3_PARAM_MAX];
    const struct k3_template *t = k3_template_for(op);
    k3_point_default(t, v);
    size_t len;
    char *src = k3_point_source(t, v, &len);
    if (!src)
        return -1;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    int rc = f && fwrite(src, 1, len, f) == len ? 0 : -1;
    if (f && fclose(f))
        rc = -1;
    free(src);
    return rc;
}

static void test_counts_kernel_only_and_repeatable(void **state)
{
    (void)state;
    char plugin[1024], dir[1024], cmd[8192], err[512];
    if (system("command -v clang-19 >/dev/null && command -v qemu-riscv64 >/dev/null") != 0 ||
        k3_icount_plugin_find(NULL, plugin, sizeof plugin) != 0) {
        print_message("skip: clang-19, qemu-riscv64 or %s missing\n", K3_ICOUNT_PLUGIN_NAME);
        skip();
    }
    const char *root = test_src_root(); /* $KOPE_SRC: $KOPE_BIN is a wrapper when cross-testing */
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/ic", tmp && *tmp ? tmp : ".");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/main.c", dir);
    FILE *f = fopen(cmd, "w");
    assert_non_null(f);
    fputs(guest_main, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(write_instance(dir, "add.c", PLAT_OP_ADD), 0);
    assert_int_equal(write_instance(dir, "exp.c", PLAT_OP_EXP), 0);
    assert_int_equal(write_instance(dir, "gemm.c", PLAT_OP_GEMM), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for k in add exp gemm; do " RV_CC " -O2 -I%s/platform -Dkope_kernel=k_$k "
             "-c $k.c -o $k.o || exit 1; done && " RV_CC " -O2 -static -I%s/platform main.c add.o exp.o gemm.o "
             "-o guest", dir, root, root);
    assert_int_equal(system(cmd), 0);

    char guest[1200];
    snprintf(guest, sizeof guest, "%s/guest", dir);
    const char *argv[] = {guest, NULL};
    struct k3_icount ic[3];
    for (int run = 0; run < 3; run++) {
        int st;
        int rc = k3_icount_run(RV_RUN, plugin, argv, dir, 60000, &ic[run], &st, err, sizeof err);
        if (rc)
            fail_msg("run %d: %s", run, err);
        assert_int_equal(st, 0);
        assert_int_equal(ic[run].n_regions, 4);
    }
    for (int run = 1; run < 3; run++) {
        assert_int_equal(ic[run].total.insns, ic[0].total.insns);
        for (int r = 0; r < 4; r++)
            assert_memory_equal(&ic[run].region[r], &ic[0].region[r], sizeof ic[0].region[r]);
    }
    /* the empty region is the fixed marker overhead; start-up is not counted */
    assert_true(ic[0].region[0].insns <= 4);
    assert_int_equal(ic[0].region[0].vector_ops, 0);
    uint64_t in_regions = 0;
    for (int r = 0; r < 4; r++)
        in_regions += ic[0].region[r].insns;
    assert_true(ic[0].total.insns > in_regions);
    static const char *const names[] = {"empty", "add n=4096", "exp n=4096", "gemm 64x64x64"};
    for (int r = 1; r < 4; r++) {
        assert_true(ic[0].region[r].vector_ops > 0);
        assert_true(ic[0].region[r].vector_mem > 0);
    }
    for (int r = 0; r < 4; r++)
        print_message("icount %-14s insns %8llu vector_ops %7llu vector_mem %7llu vsetvl %6llu\n",
                      names[r], (unsigned long long)ic[0].region[r].insns,
                      (unsigned long long)ic[0].region[r].vector_ops,
                      (unsigned long long)ic[0].region[r].vector_mem,
                      (unsigned long long)ic[0].region[r].vsetvl);
    print_message("icount whole run (start-up included): %llu\n",
                  (unsigned long long)ic[0].total.insns);

    /* a static qemu cannot load plugins: refused before running */
    int st;
    assert_int_equal(k3_icount_run("qemu-riscv64-static -cpu rv64", plugin, argv, dir, 1000,
                                   &ic[0], &st, err, sizeof err), PLAT_ERR_NO_RUNNER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_counts_kernel_only_and_repeatable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

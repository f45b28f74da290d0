/*
 * tests/test_install.c - a board install keeps its peers (issue 24):
 * cross/install.sh (what `make install` runs) puts kope, the riscv64
 * sysroot's OpenBLAS and SLEEF (archives + headers) and, where kernels run
 * under qemu, the icount plugin into a fresh prefix; the prefix is then
 * MOVED, and the moved kope must find every peer beside itself
 * (EXE_DIR/../lib/kope, platform/k3/peers.h), say so in `kope version`, and
 * measure with the OpenBLAS and SLEEF baselines present. It runs from a
 * folder with no build tree, so only the install can supply the peers.
 * Without the beside-the-binary lookup in peers.c the moved kope finds no
 * sysroot and the test fails (checked by hand).
 *
 * Also: a deps_sysroot setting that holds nothing is reported as such,
 * never silently replaced by another copy.
 */
#include <limits.h>
#include <sys/stat.h>

#include "testutil.h"

static char out[1 << 16];
static char bin[PATH_MAX], runner[1024], moved[PATH_MAX], plugin[PATH_MAX + 32];

static const char *kernel_add =
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
    "                 const struct kope_scalars *s) {\n"
    "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n";

static const char *kernel_exp =
    "#include <stddef.h>\n#include <math.h>\n#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t rows, size_t cols, const float *x, float *out,\n"
    "                 const float *gamma, const float *beta, const struct kope_scalars *s) {\n"
    "  (void)gamma; (void)beta; (void)s;\n"
    "  for (size_t i = 0; i < rows * cols; i++) out[i] = expf(x[i]);\n}\n";

/* Install into TMP/pfx, move it to TMP/moved, and work in TMP/work (no
 * build tree above it). */
static int group_setup(void **state)
{
    (void)state;
    /* cross-testing, KOPE_BIN is a qemu wrapper; the binary is KOPE_BIN_TARGET */
    const char *b = getenv("KOPE_BIN_TARGET");
    if (!b || !*b)
        b = getenv("KOPE_BIN");
    if (!b || !*b || !realpath(b, bin))
        return 0; /* the tests skip */
    const char *r = getenv("RUNNER");
    snprintf(runner, sizeof runner, "%s", r ? r : "");
    char sysroot[PATH_MAX + 64];
    snprintf(sysroot, sizeof sysroot, "%s/build/deps/sysroot-riscv64", test_src_root());
    /* the plugin the build made next to kope, where kernels run under qemu */
    snprintf(plugin, sizeof plugin, "%s", bin);
    char *slash = strrchr(plugin, '/');
    snprintf(slash + 1, sizeof plugin - (size_t)(slash + 1 - plugin), "libkope-icount.so");
    if (access(plugin, R_OK) != 0)
        plugin[0] = '\0';
    char o[4096];
    int rc = run_cmd(o, sizeof o, "bash %s/cross/install.sh %s %s %s %s", test_src_root(), tpath("pfx"), bin,
                     sysroot, plugin);
    if (rc != 0) {
        fprintf(stderr, "install.sh exited %d: %s\n", rc, o);
        return -1;
    }
    if (rename(tpath("pfx"), tpath("moved")) != 0 || !realpath(tpath("moved"), moved))
        return -1;
    if (mkdir(tpath("work"), 0700) != 0 || chdir(tpath("work")) != 0)
        return -1;
    test_write_text("kope.json", "{}\n");
    test_write_text("add.c", kernel_add);
    test_write_text("exp.c", kernel_exp);
    return 0;
}

/* The moved kope, with args; output into out. */
static int moved_kope(const char *args)
{
    return run_cmd(out, sizeof out, "%s %s/bin/kope %s", runner, moved, args);
}

static void test_moved_install_finds_its_peers(void **state)
{
    (void)state;
    if (!bin[0])
        skip();
    assert_int_not_equal(access(tpath("pfx"), F_OK), 0); /* really moved */
    assert_int_equal(moved_kope("version"), 0);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "peer openblas %s/lib/kope/sysroot-riscv64/lib/libopenblas.a RISCV64_ZVL256B "
             "(beside the binary)\n", moved);
    if (!strstr(out, want))
        fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "peer sleef %s/lib/kope/sysroot-riscv64/lib/libsleef.a (beside the binary)\n",
             moved);
    assert_non_null(strstr(out, want));
    if (plugin[0]) {
        snprintf(want, sizeof want, "peer icount-plugin %s/lib/kope/libkope-icount.so (beside the binary)\n",
                 moved);
        assert_non_null(strstr(out, want));
    }
}

static void test_moved_install_measures_with_every_peer(void **state)
{
    (void)state;
    if (!bin[0])
        skip();
    int rc = moved_kope("measure add.c --task add-res-896");
    if (rc != 0)
        fail_msg("measure add exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "OpenBLAS peer where BLAS is exact"));
    assert_non_null(strstr(out, "(sysroot: beside the binary)"));
    assert_non_null(strstr(out, "\n  openblas "));
    if (plugin[0]) /* counted: the row carries the plugin's figures */
        assert_non_null(strstr(out, "icount plugin loaded (beside the binary)"));
    rc = moved_kope("measure exp.c --task exp-scores-4096");
    if (rc != 0)
        fail_msg("measure exp exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "SLEEF peer for vector math"));
    assert_non_null(strstr(out, "\n  sleef-m1 "));
    assert_non_null(strstr(out, "\n  sleef-m2 "));
}

static void test_bad_setting_is_not_replaced(void **state)
{
    (void)state;
    if (!bin[0])
        skip();
    test_write_text("bad.json", "{\"platform\": {\"k3\": {\"deps_sysroot\": \"/nonexistent-kope\"}}}\n");
    assert_int_equal(moved_kope("--config bad.json version"), 0);
    assert_non_null(strstr(out, "peer openblas none (platform.k3.deps_sysroot /nonexistent-kope has no "
                                "lib/libopenblas.a)"));
    assert_non_null(strstr(out, "peer sleef none"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_install_finds_its_peers),
        cmocka_unit_test(test_moved_install_measures_with_every_peer),
        cmocka_unit_test(test_bad_setting_is_not_replaced),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}

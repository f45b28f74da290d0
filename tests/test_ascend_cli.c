/*
 * tests/test_ascend_cli.c - `kope probe --platform ascend` and `kope measure
 * --platform ascend` through the real binary ($KOPE_BIN): on a host without
 * CANN (this machine) probe exits 1 naming what is missing; with the fake
 * toolkit (tests/fake-cann) it reports the fake SoC, labelled emulated, and
 * stores a probe record with target "ascend"; measure puts an Ascend C file
 * through compile/verify/measure; config keys platform.ascend.* are read.
 * Nothing here touches an NPU: every pass is against the fake toolkit.
 */
#include "testutil.h"

static char g_src[1024];

static int setup(void **state)
{
    (void)state;
    /* $KOPE_SRC first: cross-testing, $KOPE_BIN is the qemu wrapper in /tmp */
    const char *src = getenv("KOPE_SRC");
    if (src && *src && strlen(src) < sizeof g_src) {
        snprintf(g_src, sizeof g_src, "%s", src);
        return 0;
    }
    const char *bin = getenv("KOPE_BIN");
    const char *b = bin ? strstr(bin, "/build/") : NULL;
    if (!b || (size_t)(b - bin) >= sizeof g_src)
        return 0; /* tests skip without the binary */
    memcpy(g_src, bin, (size_t)(b - bin));
    g_src[b - bin] = '\0';
    return 0;
}

#define NEED_BIN()                                                       \
    do {                                                                 \
        if (!g_src[0]) {                                                 \
            print_message("skip: no source tree ($KOPE_SRC or $KOPE_BIN)\n"); \
            skip();                                                      \
        }                                                                \
    } while (0)

/* Environment prefix: no CANN variables, an empty HOME, and PATH with the
 * fake npu-smi only when with_npu. */
static const char *env(int fake, int with_npu)
{
    static char e[4096];
    snprintf(e, sizeof e,
             "env -u ASCEND_TOOLKIT_HOME %s HOME=%s PATH=%s%s/usr/local/bin:/usr/bin:/bin KOPE_DB=%s",
             fake ? "" : "-u ASCEND_HOME_PATH", tpath("home"),
             with_npu ? g_src : "", with_npu ? "/tests/fake-cann/driver:" : "", tpath("kope.db"));
    if (fake) {
        size_t l = strlen(e);
        snprintf(e + l, sizeof e - l, " ASCEND_HOME_PATH=%s/tests/fake-cann", g_src);
    }
    return e;
}

static void test_probe_no_cann(void **state)
{
    (void)state;
    NEED_BIN();
    if (access("/usr/local/Ascend/ascend-toolkit/latest", F_OK) == 0 ||
        access("/usr/local/Ascend/cann", F_OK) == 0)
        skip(); /* a real toolkit here: not the host this test describes */
    char out[8192];
    int rc = run_cmd(out, sizeof out, "%s %s probe --platform ascend --no-store", env(0, 0), kope_bin());
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no usable CANN toolkit"));
    assert_non_null(strstr(out, "ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME are unset"));
    assert_non_null(strstr(out, "set_env.sh"));
    assert_non_null(strstr(out, "/usr/local/Ascend/{ascend-toolkit/latest,cann,cann-*}"));
    assert_non_null(strstr(out, "npu-smi not found"));
    assert_non_null(strstr(out, "never on real Ascend hardware"));
    /* a wrong explicit location is named as such */
    rc = run_cmd(out, sizeof out, "%s ASCEND_HOME_PATH=%s %s probe --platform ascend --no-store",
                 env(0, 0), tpath("missing-cann"), kope_bin());
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "missing-cann is not a directory"));
    /* toolkit but no NPU: what was found, then why it fails */
    rc = run_cmd(out, sizeof out, "%s %s probe --platform ascend --no-store", env(1, 0), kope_bin());
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "toolkit found"));
    assert_non_null(strstr(out, "but no NPU"));
    /* an unknown platform is a usage error */
    rc = run_cmd(out, sizeof out, "%s %s probe --platform tpu --no-store", env(0, 0), kope_bin());
    assert_int_equal(rc, 2);
}

static void test_probe_fake_record(void **state)
{
    (void)state;
    NEED_BIN();
    char out[8192];
    int rc = run_cmd(out, sizeof out, "%s %s probe --platform ascend --no-store", env(1, 1), kope_bin());
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "target     ascend (EMULATED"));
    assert_non_null(strstr(out, "soc        Ascend910B3"));
    assert_non_null(strstr(out, "ai cores   20 (cube), vector cores 40"));
    assert_non_null(strstr(out, "UB 192 KiB"));
    assert_non_null(strstr(out, "FAKE toolkit"));
    /* stored: a probe record with target ascend */
    assert_int_equal(run_cmd(out, sizeof out, "%s %s init", env(1, 1), kope_bin()), 0);
    rc = run_cmd(out, sizeof out, "%s %s probe --platform ascend", env(1, 1), kope_bin());
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "record     probe "));
    rc = run_cmd(out, sizeof out, "%s %s graph export | grep '\"kind\":\"probe\"'", env(1, 1), kope_bin());
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"target\":\"ascend\""));
    assert_non_null(strstr(out, "Ascend910B3"));
}

static void test_measure_fake(void **state)
{
    (void)state;
    NEED_BIN();
    static char out[65536];
    int rc = run_cmd(out, sizeof out, "%s %s measure %s/tests/ascend-kernels/add_ok.cpp --task add-res-896 "
                     "--platform ascend", env(1, 1), kope_bin(), g_src);
    if (rc)
        fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "target ascend: FAKE toolkit"));
    assert_non_null(strstr(out, "verify: PASS (emulated)"));
    assert_non_null(strstr(out, "n=1021"));
    assert_non_null(strstr(out, "measure: EMULATED"));
    assert_non_null(strstr(out, "msprof op Task Duration"));
    /* a wrong kernel: exit 1, named */
    rc = run_cmd(out, sizeof out, "%s %s measure %s/tests/ascend-kernels/add_wrong.cpp --task add-res-896 "
                 "--platform ascend", env(1, 1), kope_bin(), g_src);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "verify: FAIL wrong_result"));
    /* a compile error: exit 1 with the compiler's words */
    rc = run_cmd(out, sizeof out, "%s %s measure %s/tests/ascend-kernels/add_compile_error.cpp --task "
                 "add-res-896 --platform ascend", env(1, 1), kope_bin(), g_src);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "compile: compile_error"));
    assert_non_null(strstr(out, "undeclared_tile_count"));
}

static void test_config_keys(void **state)
{
    (void)state;
    NEED_BIN();
    const char *cfg = tpath("kope.json");
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "{\"platform\": {\"name\": \"ascend\", \"ascend\": {\"home\": \"%s/tests/fake-cann\", "
               "\"npu_smi\": \"%s/tests/fake-cann/driver/npu-smi\", \"soc\": \"Ascend910B3\"}}}\n",
            g_src, g_src);
    fclose(f);
    char out[8192];
    /* no environment at all: the config alone finds the fake toolkit and NPU */
    int rc = run_cmd(out, sizeof out, "%s %s --config %s probe --no-store", env(0, 0), kope_bin(), cfg);
    if (rc)
        fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "from setting platform.ascend.home"));
    assert_non_null(strstr(out, "soc        Ascend910B3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_no_cann),
        cmocka_unit_test(test_probe_fake_record),
        cmocka_unit_test(test_measure_fake),
        cmocka_unit_test(test_config_keys),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

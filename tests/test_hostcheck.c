/*
 * tests/test_hostcheck.c - a riscv64 kope refuses a CPU it would compute
 * garbage on (VLEN < 256: OpenBLAS RISCV64_ZVL256B is silently wrong there)
 * or cannot run on (no V extension), and says why; `--version` still works.
 * The cases need the riscv64 binary and qemu-riscv64 with a chosen vector
 * length: on other builds they are skipped with that reason.
 */
#include "testutil.h"

#include "platform/hostcheck.h"

static char out[16384];

static const char *target_bin(void)
{
    const char *arch = getenv("KOPE_ARCH"), *bin = getenv("KOPE_BIN_TARGET");
    if (!arch || strcmp(arch, "riscv64") != 0 || !bin || !*bin) {
        print_message("skip: needs the riscv64 kope run under qemu-riscv64 with a chosen vector length "
                      "(make test ARCH=riscv64); this is KOPE_ARCH=%s\n", arch ? arch : "(unset)");
        return NULL;
    }
    return bin;
}

#define QEMU "qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu rv64,zba=true,zbb=true,zbs=true,"

static void test_this_cpu_passes(void **s)
{
    (void)s;
    char msg[512];
    unsigned vlen = 7;
    /* whatever runs this test program can run its own build */
    assert_int_equal(plat_host_check(msg, sizeof msg, &vlen), 0);
    assert_string_equal(msg, "");
}

static void test_vlen128_refused(void **s)
{
    (void)s;
    const char *bin = target_bin();
    if (!bin)
        skip(); /* target_bin() said why */
    int rc = run_cmd(out, sizeof out, "cd %s && " QEMU "v=true,vlen=128,elen=64,vext_spec=v1.0 %s graph stats",
                     getenv("KOPE_TEST_TMP"), bin);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "VLEN=128"));
    assert_non_null(strstr(out, "RISCV64_ZVL256B"));
    rc = run_cmd(out, sizeof out, QEMU "v=true,vlen=128,elen=64,vext_spec=v1.0 %s --version", bin);
    assert_int_equal(rc, 0);
    /* `kope version` says it too, and fails */
    rc = run_cmd(out, sizeof out, QEMU "v=true,vlen=128,elen=64,vext_spec=v1.0 %s version", bin);
    assert_int_equal(rc, 1);
}

static void test_no_vector_unit_refused(void **s)
{
    (void)s;
    const char *bin = target_bin();
    if (!bin)
        skip();
    int rc = run_cmd(out, sizeof out, QEMU "v=false %s graph stats", bin);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no V extension"));
}

static void test_vlen256_runs(void **s)
{
    (void)s;
    const char *bin = target_bin();
    if (!bin)
        skip();
    int rc = run_cmd(out, sizeof out, QEMU "v=true,vlen=256,elen=64,vext_spec=v1.0 %s version", bin);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "vector length 256 bits"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_cpu_passes),
        cmocka_unit_test(test_vlen128_refused),
        cmocka_unit_test(test_no_vector_unit_refused),
        cmocka_unit_test(test_vlen256_runs),
    };
    return cmocka_run_group_tests_name("hostcheck", tests, NULL, NULL);
}

/*
 * tests/test_k3_probe.c - `kope probe` and the K3 probe (platform/k3/probe.c,
 * platform/k3/embed/probe.c): parsing of the probe program's report, the
 * OpenBLAS VLEN refusal, a real probe under qemu (labelled emulated, no
 * speed claimed), the native probe on a riscv64 kernel (the board VM of
 * `make test-board`: labelled a virtual machine, no speed claimed; a board:
 * its peak and bandwidth), and the CLI storing a `probe` record.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "platform/hostcheck.h"
#include "platform/platform.h"
#include "platform/k3/k3_probe.h"
#include "testutil.h"

static const char native_report[] =
    "kope-probe 1\n"
    "isa rv64imafdcv_zicbom_zicboz_zba_zbb_zbs\n"
    "isa_source cpuinfo\n"
    "vlen_bits 256\n"
    "cores 8\n"
    "cache 1 Data 65536\n"
    "cache 1 Instruction 65536\n"
    "cache 2 Unified 1048576\n"
    "cache 3 Unified 4194304\n"
    "fma_gflops_core 32.000\n"
    "fma_gflops_all 256.000\n"
    "triad_gbs_core 8.000\n"
    "triad_gbs_all 16.000\n"
    "method fma test\n"
    "done\n";

static void test_parse(void **state)
{
    (void)state;
    struct plat_probe r;
    memset(&r, 0, sizeof r);
    assert_int_equal(k3_probe_parse(native_report, 0, &r), 0);
    assert_false(r.emulated);
    assert_string_equal(r.isa, "rv64imafdcv_zicbom_zicboz_zba_zbb_zbs");
    assert_int_equal(r.vlen_bits, 256);
    assert_int_equal(r.n_cores, 8);
    assert_int_equal(r.l1d_bytes, 65536);
    assert_int_equal(r.l2_bytes, 1048576);
    assert_int_equal(r.l3_bytes, 4194304);
    assert_true(r.peak_gflops_core == 32.0 && r.peak_gflops_all == 256.0);
    assert_true(r.triad_gbs == 16.0);
    assert_non_null(strstr(r.note, "ridge at 16.00 flop/byte"));

    /* emulated: only ISA and VLEN survive */
    memset(&r, 0, sizeof r);
    assert_int_equal(k3_probe_parse(native_report, 1, &r), 0);
    assert_true(r.emulated);
    assert_int_equal(r.vlen_bits, 256);
    assert_int_equal(r.n_cores, 0);
    assert_int_equal(r.l2_bytes, 0);
    assert_true(r.peak_gflops_core == 0 && r.peak_gflops_all == 0 && r.triad_gbs == 0);
    assert_non_null(strstr(r.note, "emulated"));

    /* a cut-off report is not a probe */
    memset(&r, 0, sizeof r);
    assert_int_equal(k3_probe_parse("kope-probe 1\nvlen_bits 256\n", 0, &r), PLAT_ERR_PROTOCOL);
    assert_int_equal(k3_probe_parse("vlen_bits 256\ndone\n", 0, &r), PLAT_ERR_PROTOCOL);
    assert_int_equal(k3_probe_parse("", 0, &r), PLAT_ERR_PROTOCOL);
}

static void make_sysroot(const char *dir, const char *versions, const char *config)
{
    char path[1024];
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/include", dir);
    mkdir(path, 0700);
    if (versions) {
        snprintf(path, sizeof path, "%s/VERSIONS", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(versions, f);
        fclose(f);
    }
    if (config) {
        snprintf(path, sizeof path, "%s/include/openblas_config.h", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(config, f);
        fclose(f);
    }
}

static void test_openblas_vlen_refusal(void **state)
{
    (void)state;
    char dir[1024], why[256], target[64];
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/sr256", tmp && *tmp ? tmp : ".");
    make_sysroot(dir, "# kope sysroot\nopenblas-0.3.29+ds\nopenblas TARGET=RISCV64_ZVL256B\n", NULL);
    assert_int_equal(k3_openblas_min_vlen(dir, target, sizeof target), 256);
    assert_string_equal(target, "RISCV64_ZVL256B");
    assert_int_equal(k3_openblas_fits(dir, 256, why, sizeof why), 1);
    assert_int_equal(k3_openblas_fits(dir, 512, why, sizeof why), 1);
    assert_int_equal(k3_openblas_fits(dir, 128, why, sizeof why), 0);
    assert_non_null(strstr(why, "VLEN >= 256"));

    snprintf(dir, sizeof dir, "%s/sr128", tmp && *tmp ? tmp : ".");
    make_sysroot(dir, NULL, "#define OPENBLAS_CHAR_CORENAME \"RISCV64_ZVL128B\"\n");
    assert_int_equal(k3_openblas_min_vlen(dir, target, sizeof target), 128);
    assert_int_equal(k3_openblas_fits(dir, 128, why, sizeof why), 1);

    snprintf(dir, sizeof dir, "%s/srgen", tmp && *tmp ? tmp : ".");
    make_sysroot(dir, "openblas TARGET=RISCV64_GENERIC\n", NULL);
    assert_int_equal(k3_openblas_min_vlen(dir, target, sizeof target), 0);
    assert_int_equal(k3_openblas_fits(dir, 128, why, sizeof why), 1);
    assert_int_equal(k3_openblas_fits(NULL, 128, why, sizeof why), 1);
}

static int tools_present(void)
{
    return system("command -v clang-19 >/dev/null && command -v qemu-riscv64 >/dev/null") == 0;
}

static void test_probe_under_qemu(void **state)
{
    (void)state;
    if (!tools_present()) {
        print_message("skip: clang-19 or qemu-riscv64 missing\n");
        skip();
    }
    struct platform *p = NULL;
    char err[512];
    struct plat_probe r;
    struct plat_settings s;
    plat_settings_init(&s);
    s.runner = "qemu-riscv64 -cpu rv64,v=true,vlen=128,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true";
    int rc = platform_open("k3", &s, &p, err, sizeof err);
    if (rc)
        fail_msg("platform_open: %s", err);
    rc = platform_probe(p, &r);
    if (rc)
        fail_msg("probe: %s", p->err);
    platform_close(p);
    /* the emulated CPU's VLEN is seen; nothing about speed is claimed */
    assert_true(r.emulated);
    assert_int_equal(r.vlen_bits, 128);
    assert_non_null(strstr(r.isa, "rv64"));
    assert_true(r.peak_gflops_core == 0 && r.peak_gflops_all == 0 && r.triad_gbs == 0);
    assert_non_null(strstr(r.note, "emulated"));
    /* VLEN 128: a RISCV64_ZVL256B OpenBLAS (the deps default) is refused,
     * and no OpenBLAS at all is not usable either */
    assert_int_equal(r.openblas_ok, 0);
    print_message("probe (qemu vlen=128): isa %s vlen %d openblas_ok %d; %s\n", r.isa,
                  r.vlen_bits, r.openblas_ok, r.note);
}

/* 1 when this program runs natively on a riscv64 kernel (no qemu-user):
 * kope's probe then runs directly, on a board or in the board VM */
static int native_riscv64(void)
{
#if defined(__riscv)
    return !test_emulated();
#else
    return 0;
#endif
}

/* The native probe: no runner, the kernel's own VLEN. In a virtual machine
 * nothing about speed is claimed and the note says why; on a board the
 * peak and the bandwidth are measured. */
static void test_probe_native(void **state)
{
    (void)state;
    if (!native_riscv64()) {
        print_message("skip: needs a native riscv64 kernel (make test-board, or a board); this is %s\n",
                      test_emulated() ? "qemu-user" : "not riscv64");
        skip();
    }
    char msg[256];
    unsigned vlen = 0;
    assert_int_equal(plat_host_check(msg, sizeof msg, &vlen), 0);
    struct platform *p = NULL;
    char err[512];
    struct plat_probe r;
    struct plat_settings s;
    plat_settings_init(&s);
    if (platform_open("k3", &s, &p, err, sizeof err))
        fail_msg("platform_open: %s", err);
    int rc = platform_probe(p, &r);
    if (rc)
        fail_msg("probe: %s", p->err);
    platform_close(p);
    print_message("probe (native): isa %s vlen %d emulated %d openblas_ok %d; %s\n", r.isa, r.vlen_bits,
                  r.emulated, r.openblas_ok, r.note);
    assert_int_equal(r.vlen_bits, (int)vlen);
    assert_non_null(strstr(r.isa, "rv64"));
    /* openblas_ok is not checked here: it depends on a deps sysroot beside
     * the program (a board may have none); test_openblas_vlen_refusal
     * checks the VLEN fit itself */
    if (test_native_vm()) {
        assert_true(r.emulated);
        assert_true(r.peak_gflops_core == 0 && r.peak_gflops_all == 0 && r.triad_gbs == 0);
        assert_non_null(strstr(r.note, "virtual machine: not a speed"));
    } else {
        assert_false(r.emulated);
        assert_true(r.peak_gflops_core > 0 && r.triad_gbs > 0);
        assert_null(strstr(r.note, "virtual machine"));
    }
}

static void test_cli_probe_stores_a_record(void **state)
{
    (void)state;
    const char *bin = getenv("KOPE_BIN");
    if (!bin || !(tools_present() || native_riscv64())) {
        print_message("skip: KOPE_BIN, clang-19 or qemu-riscv64 missing\n");
        skip();
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --db p.db probe > out1.txt 2>&1", bin);
    assert_int_equal(system(cmd), 0);
    /* what is claimed: nothing under emulation or in a virtual machine, the
     * board's own peak natively on one */
    const char *label = !native_riscv64() ? "grep -q 'EMULATED' out1.txt && grep -q 'fp32 fma   not claimed' out1.txt"
                        : test_native_vm()
                            ? "grep -q 'native in a virtual machine' out1.txt && grep -q 'fp32 fma   not claimed' out1.txt"
                            : "! grep -q 'not claimed' out1.txt";
    snprintf(cmd, sizeof cmd, "%s && grep -q 'not stored: no store' out1.txt", label);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(system("test -e p.db"), 0); /* probing creates no store */
    snprintf(cmd, sizeof cmd, "'%s' --db p.db init > /dev/null 2>&1 && '%s' --db p.db probe > out2.txt 2>&1",
             bin, bin);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(system("grep -q '^record     probe [0-9a-f]\\{64\\}$' out2.txt"), 0);
    snprintf(cmd, sizeof cmd, "'%s' --db p.db graph show $(awk '/^record/{print $3}' out2.txt) "
                              "| grep -q '\"kind\":.*\"probe\"'", bin);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' probe --bogus > /dev/null 2>&1", bin);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_openblas_vlen_refusal),
        cmocka_unit_test(test_probe_under_qemu),
        cmocka_unit_test(test_probe_native),
        cmocka_unit_test(test_cli_probe_stores_a_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

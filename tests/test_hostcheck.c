/*
 * tests/test_hostcheck.c - a riscv64 kope refuses to run K3 kernels on a CPU
 * it would compute garbage on (VLEN < 256: OpenBLAS RISCV64_ZVL256B is
 * silently wrong there), while every command that runs no kernel works
 * there; it refuses a CPU it cannot run on at all (no V extension), and
 * says why; `--version` still works.
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
#define V128 QEMU "v=true,vlen=128,elen=64,vext_spec=v1.0 "
    /* what runs kernels is refused, and says why */
    int rc = run_cmd(out, sizeof out, "cd %s && " V128 "%s probe", getenv("KOPE_TEST_TMP"), bin);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "refusing to run K3 kernels on this CPU"));
    assert_non_null(strstr(out, "VLEN=128"));
    assert_non_null(strstr(out, "RISCV64_ZVL256B"));
    rc = run_cmd(out, sizeof out, "cd %s && " V128 "%s run --task silu-4864 --offline --budget 1",
                 getenv("KOPE_TEST_TMP"), bin);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "VLEN=128"));
    rc = run_cmd(out, sizeof out, "cd %s && " V128 "%s measure k.c --task silu-4864", getenv("KOPE_TEST_TMP"), bin);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "VLEN=128"));
    /* what runs no kernel works: a store, the graph, the suite */
    rc = run_cmd(out, sizeof out, "cd %s && " V128 "%s --db v128.db init && " V128 "%s --db v128.db graph stats && "
                 V128 "%s tasks", getenv("KOPE_TEST_TMP"), bin, bin, bin);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "suite k3-core: 64 tasks"));
    rc = run_cmd(out, sizeof out, V128 "%s --version", bin);
    assert_int_equal(rc, 0);
    /* `kope version` says what works here */
    rc = run_cmd(out, sizeof out, V128 "%s version", bin);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "vector length 128 bits"));
    assert_non_null(strstr(out, "kernels: not on this CPU"));
#undef V128
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
    /* --version still answers (from the check's own V-free code: main may be
     * vectorised, and died of SIGILL here in the board VM's v=false boot) */
    rc = run_cmd(out, sizeof out, QEMU "v=false %s --version", bin);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "kope 0."));
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

/* ---- virtual-machine detection (plat_vm_detect), on fixture trees laid
 * out like the real /proc and /sys: runs on every build. */

static const char *fixture(const char *name)
{
    static char root[512];
    snprintf(root, sizeof root, "%s/%s", getenv("KOPE_TEST_TMP"), name);
    return root;
}

static void put(const char *root, const char *rel, const char *data, size_t len)
{
    char path[1024], dir[1100];
    snprintf(path, sizeof path, "%s%s", root, rel);
    snprintf(dir, sizeof dir, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(dir), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

#define CPUINFO_QEMU "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdcvh_zba_zbb_zbs\n" \
                     "mmu\t\t: sv57\nmvendorid\t: 0x0\nmarchid\t\t: 0x70216\n"
#define CPUINFO_K3 "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdcv_zba_zbb_zbs\n" \
                   "mvendorid\t: 0x710\nmarchid\t\t: 0x8000000058000002\n"

static void test_vm_qemu_virt_detected(void **s)
{
    (void)s;
    char why[256];
    const char *r = fixture("virt");
    /* what qemu-system-riscv64 -machine virt shows (read in the board VM) */
    put(r, "/proc/device-tree/compatible", "riscv-virtio\0", 13);
    put(r, "/proc/device-tree/model", "riscv-virtio,qemu\0", 18);
    put(r, "/proc/cpuinfo", CPUINFO_QEMU, strlen(CPUINFO_QEMU));
    assert_int_equal(plat_vm_detect(r, why, sizeof why), 1);
    assert_non_null(strstr(why, "riscv-virtio"));
    /* a machine that hides the device tree is still caught by its vendor id */
    const char *r2 = fixture("virt-no-dt");
    put(r2, "/proc/cpuinfo", CPUINFO_QEMU, strlen(CPUINFO_QEMU));
    assert_int_equal(plat_vm_detect(r2, why, sizeof why), 1);
    assert_non_null(strstr(why, "mvendorid 0x0"));
}

static void test_vm_board_not_detected(void **s)
{
    (void)s;
    char why[256];
    const char *r = fixture("k3");
    static const char compat[] = "spacemit,k3-pico-itx\0spacemit,k3\0";
    put(r, "/proc/device-tree/compatible", compat, sizeof compat - 1);
    put(r, "/proc/device-tree/model", "SpacemiT K3\0", 12);
    put(r, "/proc/cpuinfo", CPUINFO_K3, strlen(CPUINFO_K3));
    assert_int_equal(plat_vm_detect(r, why, sizeof why), 0);
    /* and says what it saw, for the board engineer reading `kope probe` */
    assert_non_null(strstr(why, "spacemit,k3-pico-itx"));
    assert_non_null(strstr(why, "0x710"));
    /* nothing readable at all: no sign, no claim of one */
    assert_int_equal(plat_vm_detect(fixture("empty"), why, sizeof why), 0);
}

static void test_vm_hypervisor_signs(void **s)
{
    (void)s;
    char why[256];
    const char *r = fixture("kvm");
    put(r, "/sys/class/dmi/id/sys_vendor", "QEMU\n", 5);
    assert_int_equal(plat_vm_detect(r, why, sizeof why), 1);
    assert_non_null(strstr(why, "QEMU"));
    const char *x = fixture("xen");
    put(x, "/sys/hypervisor/type", "xen\n", 4);
    assert_int_equal(plat_vm_detect(x, why, sizeof why), 1);
    const char *h = fixture("x86-guest");
    put(h, "/proc/cpuinfo", "flags\t\t: fpu vme sse2 hypervisor lahf_lm\n", 42);
    assert_int_equal(plat_vm_detect(h, why, sizeof why), 1);
    assert_non_null(strstr(why, "hypervisor"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_cpu_passes),
        cmocka_unit_test(test_vlen128_refused),
        cmocka_unit_test(test_no_vector_unit_refused),
        cmocka_unit_test(test_vlen256_runs),
        cmocka_unit_test(test_vm_qemu_virt_detected),
        cmocka_unit_test(test_vm_board_not_detected),
        cmocka_unit_test(test_vm_hypervisor_signs),
    };
    return cmocka_run_group_tests_name("hostcheck", tests, NULL, NULL);
}

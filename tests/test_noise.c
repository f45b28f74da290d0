/*
 * tests/test_noise.c - the native noise floor (platform/noise.c): the A/A
 * floor from two medians, the "no difference" verdict fed with samples, and
 * the sysfs readers against a fake sysfs root (a directory tree under
 * $KOPE_TEST_TMP holding sys/devices/system/cpu/cpuN/cpufreq/...).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "platform/noise.h"

static void test_floor(void **state)
{
    (void)state;
    assert_true(plat_noise_floor(100, 100) == 0);
    /* symmetric, relative to the faster of the two */
    assert_true(plat_noise_floor(100, 103) > 0.0299 && plat_noise_floor(100, 103) < 0.0301);
    assert_true(plat_noise_floor(103, 100) == plat_noise_floor(100, 103));
    /* no floor without two positive times */
    assert_true(plat_noise_floor(0, 100) < 0);
    assert_true(plat_noise_floor(100, -1) < 0);
}

static void test_verdict_fed_with_samples(void **state)
{
    (void)state;
    /* A/A: the same kernel measured twice, 1000 ns and 1040 ns -> floor 4% */
    double floor = plat_noise_floor(1000, 1040);
    /* a baseline 1030 ns against a 1000 ns candidate: 1.03x, inside */
    assert_int_equal(plat_noise_same(1030.0 / 1000, floor), 1);
    assert_string_equal(plat_noise_verdict(1030.0 / 1000, floor), "no difference");
    /* 0.97x (the candidate 3% slower) is inside too: both directions */
    assert_string_equal(plat_noise_verdict(970.0 / 1000, floor), "no difference");
    /* exactly at the floor still counts as noise */
    assert_string_equal(plat_noise_verdict(1.04, floor), "no difference");
    /* outside: a real speedup, a real slowdown */
    assert_string_equal(plat_noise_verdict(1.10, floor), "faster");
    assert_string_equal(plat_noise_verdict(1 / 1.10, floor), "slower");
    /* no A/A floor: ratios stand as measured; no ratio: nothing claimed */
    assert_int_equal(plat_noise_same(1.01, -1), 0);
    assert_string_equal(plat_noise_verdict(1.01, -1), "faster");
    assert_string_equal(plat_noise_verdict(0, floor), "not claimed");
    /* a noisier A/A makes the same ratio "no difference" */
    assert_string_equal(plat_noise_verdict(1.10, plat_noise_floor(1000, 1150)), "no difference");
}

static char root[400];

/* Write root/sys/devices/system/cpu/cpuN/cpufreq/FILE. */
static void put(int cpu, const char *file, const char *text)
{
    char p[600];
    snprintf(p, sizeof p, "%s/sys/devices/system/cpu/cpu%d/cpufreq/%s", root, cpu, file);
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_sysfs_readers(void **state)
{
    (void)state;
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(root, sizeof root, "%s/fake-sysfs", tmp ? tmp : "/tmp");
    mkdir(root, 0755);
    put(2, "scaling_governor", "performance\n");
    put(2, "scaling_cur_freq", "1600000\n");
    put(2, "scaling_min_freq", "400000\n");
    put(2, "scaling_max_freq", "1600000\n");

    struct plat_cpu_state st;
    assert_int_equal(plat_cpu_state_read(root, 2, &st), 4);
    assert_string_equal(st.governor, "performance");
    assert_int_equal(st.cur_khz, 1600000);
    assert_int_equal(st.min_khz, 400000);
    assert_int_equal(st.max_khz, 1600000);
    char line[200];
    plat_cpu_state_print(&st, line, sizeof line);
    assert_string_equal(line, "cpu=2 governor=performance freq=1600000kHz (min 400000 max 1600000)");

    /* a CPU without cpufreq (a VM): every field unreadable, said so */
    assert_int_equal(plat_cpu_state_read(root, 3, &st), 0);
    plat_cpu_state_print(&st, line, sizeof line);
    assert_string_equal(line, "cpu=3 governor=unreadable freq=unreadable (min ? max ?)");

    /* only cpuinfo_cur_freq readable (scaling_cur_freq absent); junk in the
     * governor and the max: not taken */
    put(4, "cpuinfo_cur_freq", "1200000\n");
    put(4, "scaling_governor", "perf ormance; rm -rf\n");
    put(4, "scaling_max_freq", "12abc\n");
    assert_int_equal(plat_cpu_state_read(root, 4, &st), 1);
    assert_int_equal(st.cur_khz, 1200000);
    assert_string_equal(st.governor, "");
    assert_int_equal(st.max_khz, 0);

}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_verdict_fed_with_samples),
        cmocka_unit_test(test_sysfs_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

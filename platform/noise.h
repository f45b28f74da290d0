/*
 * platform/noise.h - when a native speedup means something.
 *
 * Natively (a board, or the board VM, labelled as such) every time has noise:
 * frequency scaling, other processes, cache state. The harness times the
 * candidate twice, in two fresh kernel processes (an A/A measurement); the
 * relative gap between the two medians is the task's noise floor, and a
 * ratio against a baseline inside it is "no difference", not a speedup.
 * The CPU's frequency state (governor, current/min/max frequency) is read
 * from sysfs for the core the harness pinned itself to, when readable, and
 * goes into the outcome's method with the floor.
 *
 * Pure functions and file reads only: no platform state, so tests feed
 * samples and a fake sysfs root directly.
 */
#ifndef KOPE_PLATFORM_NOISE_H
#define KOPE_PLATFORM_NOISE_H

#include <stddef.h>

/* The A/A noise floor of two medians of the same kernel: max/min - 1
 * (0.03 = the two runs differ by 3%). Returns -1 when either is not a
 * positive time (no floor: nothing can be called "no difference"). */
double plat_noise_floor(double median_a_ns, double median_b_ns);

/* 1 when ratio (baseline time / candidate time) is inside the floor: the
 * candidate is neither faster nor slower by more than the A/A gap, in either
 * direction (ratio r and 1/r are treated alike). 0 when outside, or when
 * floor < 0 (not measured) or ratio <= 0 (not claimed). */
int plat_noise_same(double ratio, double floor);

/* "faster", "slower", "no difference" (inside the floor) or "not claimed"
 * (ratio <= 0). With no floor (floor < 0) a ratio is faster/slower as is. */
const char *plat_noise_verdict(double ratio, double floor);

/* The frequency state of one CPU as sysfs shows it. Each field is empty or
 * 0 when its file is missing or unreadable (a VM without cpufreq, a locked
 * down board): that is recorded as "unreadable", never guessed. */
struct plat_cpu_state {
    int cpu;
    char governor[32];      /* cpufreq/scaling_governor, "" = unreadable */
    long cur_khz;           /* cpufreq/scaling_cur_freq (else cpuinfo_cur_freq) */
    long min_khz, max_khz;  /* cpufreq/scaling_min_freq, scaling_max_freq */
};

/* Read cpu's state under root (NULL or "" = "/"; tests pass a fake tree
 * holding sys/devices/system/cpu/cpuN/cpufreq/...). Every file read is
 * capped at 64 bytes. Returns the number of fields read (0..4); st is
 * always filled (cpu set, unreadable fields empty). */
int plat_cpu_state_read(const char *root, int cpu, struct plat_cpu_state *st);

/* One line for the method: "cpu=2 governor=performance freq=1600000kHz
 * (min 400000 max 1600000)", with "unreadable" for what was not read.
 * Returns the length written (snprintf rules: cut to fit n). */
int plat_cpu_state_print(const struct plat_cpu_state *st, char *buf, size_t n);

#endif

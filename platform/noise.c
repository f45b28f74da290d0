/*
 * platform/noise.c - the A/A noise floor, its verdict, and the CPU frequency
 * state from sysfs (see noise.h).
 */
#include "platform/noise.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double plat_noise_floor(double median_a_ns, double median_b_ns)
{
    if (!(median_a_ns > 0) || !(median_b_ns > 0))
        return -1;
    double hi = median_a_ns > median_b_ns ? median_a_ns : median_b_ns;
    double lo = median_a_ns > median_b_ns ? median_b_ns : median_a_ns;
    return hi / lo - 1;
}

int plat_noise_same(double ratio, double floor)
{
    if (!(floor >= 0) || !(ratio > 0))
        return 0;
    double r = ratio >= 1 ? ratio : 1 / ratio; /* slower by x is as far as faster by x */
    return r - 1 <= floor;
}

const char *plat_noise_verdict(double ratio, double floor)
{
    if (!(ratio > 0))
        return "not claimed";
    if (plat_noise_same(ratio, floor))
        return "no difference";
    return ratio > 1 ? "faster" : ratio < 1 ? "slower" : "no difference";
}

/* Read root/path (at most 63 bytes), trailing whitespace cut; 0 on success. */
static int read_small(const char *root, const char *path, char *buf, size_t n)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char tmp[64];
    ssize_t got = read(fd, tmp, sizeof tmp - 1);
    close(fd);
    if (got <= 0)
        return -1;
    tmp[got] = '\0';
    while (got > 0 && (tmp[got - 1] == '\n' || tmp[got - 1] == ' ' || tmp[got - 1] == '\t'))
        tmp[--got] = '\0';
    if (got == 0)
        return -1;
    snprintf(buf, n, "%s", tmp);
    return 0;
}

/* A positive kHz value from root/path, else 0. */
static long read_khz(const char *root, const char *path)
{
    char b[64], *end;
    if (read_small(root, path, b, sizeof b))
        return 0;
    long v = strtol(b, &end, 10);
    return end != b && *end == '\0' && v > 0 ? v : 0;
}

int plat_cpu_state_read(const char *root, int cpu, struct plat_cpu_state *st)
{
    memset(st, 0, sizeof *st);
    st->cpu = cpu;
    if (!root || !*root)
        root = "";
    char p[160];
    int n = 0;
#define CPUFREQ(file) snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cpufreq/%s", cpu, file)
    CPUFREQ("scaling_governor");
    if (read_small(root, p, st->governor, sizeof st->governor) == 0) {
        /* a governor name is one word of letters, digits, '_' or '-' */
        n++;
        for (const char *c = st->governor; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '_' || *c == '-')) {
                st->governor[0] = '\0';
                n--;
                break;
            }
    }
    CPUFREQ("scaling_cur_freq");
    st->cur_khz = read_khz(root, p);
    if (!st->cur_khz) {
        CPUFREQ("cpuinfo_cur_freq");
        st->cur_khz = read_khz(root, p);
    }
    CPUFREQ("scaling_min_freq");
    st->min_khz = read_khz(root, p);
    CPUFREQ("scaling_max_freq");
    st->max_khz = read_khz(root, p);
#undef CPUFREQ
    return n + (st->cur_khz > 0) + (st->min_khz > 0) + (st->max_khz > 0);
}

int plat_cpu_state_print(const struct plat_cpu_state *st, char *buf, size_t n)
{
    char cur[32] = "unreadable", mn[24] = "?", mx[24] = "?";
    if (st->cur_khz)
        snprintf(cur, sizeof cur, "%ldkHz", st->cur_khz);
    if (st->min_khz)
        snprintf(mn, sizeof mn, "%ld", st->min_khz);
    if (st->max_khz)
        snprintf(mx, sizeof mx, "%ld", st->max_khz);
    return snprintf(buf, n, "cpu=%d governor=%s freq=%s (min %s max %s)", st->cpu,
                    st->governor[0] ? st->governor : "unreadable", cur, mn, mx);
}

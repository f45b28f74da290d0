/*
 * bench/rss.c - run a command N times; print its peak RSS (KiB, from
 * wait4's rusage: the child's own high-water mark) and the median and
 * minimum wall time. Used by bench/footprint.sh.
 *
 *   build/x86_64/bench/rss [-n N] [-q] -- CMD ARGS...
 * prints: "maxrss_kib K median_ms M min_ms m runs N"
 * -q sends the command's stdout to /dev/null. Exit 1 if any run failed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = 1, quiet = 0, i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "-q") == 0)
            quiet = 1;
    }
    if (i + 1 >= argc || n < 1 || n > 1000) {
        fprintf(stderr, "usage: rss [-n N] [-q] -- CMD ARGS...\n");
        return 2;
    }
    char **cmd = argv + i + 1;
    double *t = calloc((size_t)n, sizeof *t);
    long maxrss = 0;
    for (int r = 0; r < n; r++) {
        double t0 = now_ms();
        pid_t pid = fork();
        if (pid == 0) {
            if (quiet) {
                int fd = open("/dev/null", O_WRONLY);
                dup2(fd, 1);
            }
            execvp(cmd[0], cmd);
            _exit(127);
        }
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rss: %s failed\n", cmd[0]);
            return 1;
        }
        t[r] = now_ms() - t0;
        if (ru.ru_maxrss > maxrss)
            maxrss = ru.ru_maxrss;
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("maxrss_kib %ld median_ms %.3f min_ms %.3f runs %d\n", maxrss, t[n / 2], t[0], n);
    free(t);
    return 0;
}

/*
 * bench/harness.c - what the K3 target loop costs per candidate, against
 * named baselines measured in the same run.
 *
 *   build/x86_64/bench/harness [N]        (default N = 5 repetitions)
 *
 * Prints:
 *   - compile time per candidate (screen + compile + object check + link
 *     with the prebuilt harness objects) vs baseline "plain `cc -c` of the
 *     same file" (the compiler alone, no link, no checks);
 *   - the preprocessed screen's cost (issue 21: -E -dD of the candidate and
 *     the token screen over it): the same compile with both source screens
 *     off (PLAT_SET_UNSAFE_NO_SOURCE_SCREEN), interleaved in the same run;
 *   - loop overhead per candidate excluding compile: verify (task + awkward
 *     cases + reseeded re-check) and measure (pre-check, timing, baselines,
 *     post-check) of a trivial kernel, vs baseline "bare runner start": the
 *     runner (qemu-riscv64, or nothing natively) executing a static riscv64
 *     program that returns at once;
 *   - the isolation's cost: verify + measure with the harness run isolated
 *     (namespaces, minimal root, seccomp: platform/proc.c) against the same
 *     with PLAT_SET_UNSAFE_NO_ISOLATION, interleaved in the same run (the
 *     judge/kernel-process split is in both: it is the harness itself);
 *   - icount repeatability: N measure runs of the same build must report
 *     the same instruction count (only when the qemu plugin is present).
 * All figures are medians over N; wall-clock on this machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/embed.h"
#include "platform/platform.h"

static const char *kernel_src =
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
    "                 const struct kope_scalars *s) {\n"
    "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of every finished child process (kope waits for each harness
 * run, each run for its processes): under load from other builds wall time
 * is mostly waiting for a core, CPU time is what a run itself costs. */
static double children_cpu_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Wall time of a shell command (the baselines), or -1. */
static double time_cmd(const char *cmd)
{
    double t0 = now_ms();
    int st = system(cmd);
    double dt = now_ms() - t0;
    return (st == 0) ? dt : -1;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5;
    if (n < 1 || n > 100)
        n = 5;
    char dir[] = "/tmp/kope-bench-harness-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char work[600], src_path[600], cmd[2048], err[512];
    snprintf(work, sizeof work, "%s/work", dir);
    snprintf(src_path, sizeof src_path, "%s/kernel.c", dir);

    struct plat_settings set;
    plat_settings_init(&set);
    set.work_dir = work;
    struct platform *p = NULL;
    double t_open = now_ms();
    int rc = platform_open("k3", &set, &p, err, sizeof err);
    t_open = now_ms() - t_open;
    if (rc) {
        fprintf(stderr, "platform_open: %s\n", err);
        return 1;
    }
    struct plat_desc d;
    platform_describe(p, &d);
    printf("bench/harness: K3 target loop per candidate (%d repetitions, medians)\n", n);
    printf("  target: %s\n  cc: %s\n  runner: %s\n", d.note, d.cc, d.runner[0] ? d.runner : "(native)");
    printf("  platform open (toolchain check): %.0f ms, once per session\n", t_open);

    struct plat_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "bench-add-4096");
    t.op = PLAT_OP_ADD;
    t.family = plat_op_family(t.op);
    t.n = 4096;
    plat_op_default_tol(t.op, &t.rtol, &t.atol);

    FILE *f = fopen(src_path, "w");
    if (!f || fputs(kernel_src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", src_path);
        return 1;
    }
    /* the plain-compile baseline needs kernel_abi.h: the one kope embeds */
    const struct embed_file *abi = embed_find("platform/kernel_abi.h");
    char abi_path[700];
    snprintf(abi_path, sizeof abi_path, "%s/kernel_abi.h", dir);
    f = fopen(abi_path, "w");
    if (!abi || !f || fwrite(abi->data, 1, abi->len, f) != abi->len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", abi_path);
        return 1;
    }

    /* first compile builds the harness objects: reported on its own */
    struct plat_build b;
    double t0 = now_ms();
    rc = platform_compile(p, &t, kernel_src, strlen(kernel_src), &b);
    double first = now_ms() - t0;
    if (rc || !b.ok) {
        fprintf(stderr, "compile failed: %s %s\n", p->err, b.diag);
        return 1;
    }
    platform_build_free(p, &b);
    printf("  first compile (also builds harness + baselines for the op): %.0f ms, once per op\n", first);

    double *cc = calloc((size_t)n, sizeof *cc), *plain = calloc((size_t)n, sizeof *plain);
    double *ver = calloc((size_t)n, sizeof *ver), *mea = calloc((size_t)n, sizeof *mea);
    double *bare = calloc((size_t)n, sizeof *bare), *noiso = calloc((size_t)n, sizeof *noiso);
    double *cpu = calloc((size_t)n, sizeof *cpu), *nopp = calloc((size_t)n, sizeof *nopp);
    double *cc_cpu = calloc((size_t)n, sizeof *cc_cpu), *nopp_cpu = calloc((size_t)n, sizeof *nopp_cpu);
    unsigned long long *ic = calloc((size_t)n, sizeof *ic);
    struct plat_verify *v = malloc(sizeof *v);
    struct plat_measure *m = malloc(sizeof *m);
    if (!cc || !plain || !ver || !mea || !bare || !noiso || !cpu || !nopp || !cc_cpu || !nopp_cpu || !ic || !v || !m)
        return 1;
    int have_icount = 1;
    for (int i = 0; i < n; i++) {
        double cc0 = children_cpu_ms();
        rc = platform_compile(p, &t, kernel_src, strlen(kernel_src), &b);
        if (rc || !b.ok)
            return 1;
        cc[i] = b.compile_ms;
        cc_cpu[i] = children_cpu_ms() - cc0;
        {
            struct plat_build b2;
            p->set.flags |= PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
            cc0 = children_cpu_ms();
            rc = platform_compile(p, &t, kernel_src, strlen(kernel_src), &b2);
            nopp_cpu[i] = children_cpu_ms() - cc0;
            p->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SOURCE_SCREEN;
            if (rc || !b2.ok)
                return 1;
            nopp[i] = b2.compile_ms;
            platform_build_free(p, &b2);
        }
        snprintf(cmd, sizeof cmd, "%.300s -I%.500s -c %.500s -o %.500s/plain.o", d.cc, dir,
                 src_path, dir);
        plain[i] = time_cmd(cmd);
        if (plain[i] < 0) {
            fprintf(stderr, "the plain-compile baseline failed: %s\n", cmd);
            return 1;
        }
        double c0 = children_cpu_ms();
        t0 = now_ms();
        if (platform_verify(p, &t, &b, v) || !v->pass) {
            fprintf(stderr, "verify failed: %s\n", v->detail);
            return 1;
        }
        ver[i] = now_ms() - t0;
        t0 = now_ms();
        if (platform_measure(p, &t, &b, m) || !m->ok) {
            fprintf(stderr, "measure failed: %s\n", m->detail);
            return 1;
        }
        mea[i] = now_ms() - t0;
        cpu[i] = children_cpu_ms() - c0;
        ic[i] = m->icount;
        /* the same two runs without the isolation layers */
        p->set.flags |= PLAT_SET_UNSAFE_NO_ISOLATION;
        t0 = now_ms();
        if (platform_verify(p, &t, &b, v) || !v->pass || platform_measure(p, &t, &b, m) || !m->ok) {
            fprintf(stderr, "unisolated run failed: %s\n", v->detail);
            return 1;
        }
        noiso[i] = now_ms() - t0;
        p->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_ISOLATION;
        have_icount &= m->has_icount;
        /* baseline: the runner starting a static program that exits at once */
        snprintf(cmd, sizeof cmd, "%.300s %.500s/true-rv >/dev/null 2>&1", d.runner, dir);
        if (i == 0) {
            char build[2048];
            snprintf(build, sizeof build,
                     "printf 'int main(void){return 0;}' > %.500s/true.c && %.300s -static "
                     "%.500s/true.c -o %.500s/true-rv", dir, d.cc, dir, dir);
            if (system(build) != 0)
                fprintf(stderr, "cannot build the bare-start baseline\n");
        }
        bare[i] = time_cmd(cmd);
        platform_build_free(p, &b);
    }
    double mc = median(cc, n), mp = median(plain, n), mv = median(ver, n), mm = median(mea, n);
    double mb = median(bare, n), mcpu = median(cpu, n);
    printf("\n  compile per candidate:     %7.0f ms  vs plain `cc -c` of the same file %5.0f ms"
           "  -> %.2fx\n", mc, mp, mp > 0 ? mc / mp : 0);
    double mpp = median(nopp, n);
    double mcc = median(cc_cpu, n), mppc = median(nopp_cpu, n);
    printf("  preprocessed screen:       %+7.0f ms  (compile %.0f ms vs %.0f ms with both source screens "
           "off, same run) -> %.2fx\n", mc - mpp, mc, mpp, mpp > 0 ? mc / mpp : 0);
    printf("  the same in CPU time:      %+7.0f ms  (%.0f ms vs %.0f ms, every compiler process) -> %.2fx\n",
           mcc - mppc, mcc, mppc, mppc > 0 ? mcc / mppc : 0);
    printf("  verify per candidate:      %7.0f ms  (%d cases + reseeded re-check, one kernel process)\n",
           mv, v->n_cases);
    printf("  measure per candidate:     %7.0f ms  (counted call, candidate + %d baselines timed, "
           "every sample checked, post-check)\n", mm, m->n_baselines);
    printf("  loop overhead excl. compile: %5.0f ms  vs bare runner start %5.1f ms -> %.1fx%s\n",
           mv + mm, mb, mb > 0 ? (mv + mm) / mb : 0, d.emulated ? "  (emulated)" : "");
    printf("  verify+measure CPU time:   %7.1f ms  (user+system of every process of the two runs)\n",
           mcpu);
    double mn = median(noiso, n);
    printf("  isolation cost:            %7.0f ms verify+measure isolated vs %5.0f ms without "
           "(PLAT_SET_UNSAFE_NO_ISOLATION) -> %.2fx\n", mv + mm, mn, mn > 0 ? (mv + mm) / mn : 0);
    if (have_icount) {
        int same = 1;
        for (int i = 1; i < n; i++)
            same &= ic[i] == ic[0];
        printf("  icount repeatability:      %d runs, candidate icount %llu: %s\n", n, ic[0],
               same ? "identical" : "DIFFERENT (not repeatable!)");
        if (!same)
            for (int i = 0; i < n; i++)
                printf("    run %d: %llu\n", i, ic[i]);
    } else {
        printf("  icount repeatability:      no icount plugin loaded (not measured)\n");
    }
    free(cc); free(plain); free(ver); free(mea); free(bare); free(noiso); free(cpu); free(nopp); free(cc_cpu); free(nopp_cpu); free(ic); free(v);
    free(m);
    platform_close(p);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}

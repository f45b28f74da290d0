/*
 * bench/harness_cost.c - verify + measure of one trivial candidate through
 * the platform API, repeated: the per-candidate cost of the K3 target loop,
 * in CPU time (user + system of every process of the runs) and wall time.
 *
 *   build/x86_64/bench/harness_cost WORK_DIR [REPS [PLUGIN [noiso [gemm]]]]
 *
 * gemm: a plain triple-loop gemm, 64 x 64 x 64, instead of the add (a task
 * whose kernel and references, not qemu's start-up, dominate the runs).
 *
 * One line per repetition: "verify MS (rc pass) measure MS (rc ok) cpu MS
 * ic=N compile MS cpu_all MS": cpu is verify + measure, cpu_all adds a
 * compile of the same source (a new build each time, as a trial makes). It is the driver bench/harness-vs.sh builds against older trees
 * too (so it uses only API those trees have: the platform calls and
 * settings of issue 3 on), to print this tree's cost against theirs in the
 * same run. CPU time is the figure to read on a loaded machine: wall time
 * there is mostly waiting for a core.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "platform/platform.h"

static double cpu_ms(void)
{
    struct rusage r;
    if (getrusage(RUSAGE_CHILDREN, &r) != 0)
        return 0;
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *src =
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t n, const float *x, const float *y, float *out,\n"
    "                 const struct kope_scalars *s) {\n"
    "  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];\n}\n";

static const char *src_gemm =
    "#include <stddef.h>\n#include \"kernel_abi.h\"\n"
    "void kope_kernel(size_t batch, size_t m, size_t n, size_t k, const float *a,\n"
    "                 const float *b, float *c) {\n"
    "  for (size_t t = 0; t < batch; t++)\n"
    "    for (size_t i = 0; i < m; i++) for (size_t j = 0; j < n; j++) { float s = 0;\n"
    "      for (size_t p = 0; p < k; p++) s += a[t*m*k + i*k + p] * b[t*k*n + p*n + j];\n"
    "      c[t*m*n + i*n + j] = s; }\n}\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: harness_cost WORK_DIR [REPS [PLUGIN [noiso]]]\n");
        return 2;
    }
    struct plat_settings set;
    plat_settings_init(&set);
    set.work_dir = argv[1];
    if (argc > 3 && argv[3][0])
        set.icount_plugin = argv[3];
#ifdef PLAT_SET_UNSAFE_NO_ISOLATION
    if (argc > 4 && strcmp(argv[4], "noiso") == 0)
        set.flags |= PLAT_SET_UNSAFE_NO_ISOLATION;
#endif
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    struct platform *p;
    char err[512];
    if (platform_open("k3", &set, &p, err, sizeof err)) {
        fprintf(stderr, "harness_cost: %s\n", err);
        return 1;
    }
    struct plat_task t;
    memset(&t, 0, sizeof t);
    int gemm = argc > 5 && strcmp(argv[5], "gemm") == 0;
    snprintf(t.name, sizeof t.name, gemm ? "gemm-64" : "add-4096");
    t.op = gemm ? PLAT_OP_GEMM : PLAT_OP_ADD;
    t.family = plat_op_family(t.op);
    if (gemm) {
        t.m = t.n = t.k = 64;
        t.batch = 1;
        src = src_gemm;
    } else {
        t.n = 4096;
    }
    plat_op_default_tol(t.op, &t.rtol, &t.atol);
    static struct plat_build b;
    if (platform_compile(p, &t, src, strlen(src), &b) || !b.ok) {
        fprintf(stderr, "harness_cost: the candidate did not compile\n");
        platform_close(p);
        return 1;
    }
    static struct plat_verify v;
    static struct plat_measure m;
    for (int i = 0; i < reps; i++) {
        double c0 = cpu_ms(), t0 = wall_ms();
        int r1 = platform_verify(p, &t, &b, &v);
        double t1 = wall_ms();
        int r2 = platform_measure(p, &t, &b, &m);
        double t2 = wall_ms(), c1 = cpu_ms();
        static struct plat_build b2;
        double t3 = wall_ms();
        int r3 = platform_compile(p, &t, src, strlen(src), &b2);
        double t4 = wall_ms(), c2 = cpu_ms();
        if (r3 || !b2.ok) {
            fprintf(stderr, "harness_cost: the candidate did not compile\n");
            platform_close(p);
            return 1;
        }
        platform_build_free(p, &b2);
        printf("verify %.1f (%d %d) measure %.1f (%d %d) cpu %.1f ic=%llu compile %.1f cpu_all %.1f\n",
               t1 - t0, r1, v.pass, t2 - t1, r2, m.ok, c1 - c0, (unsigned long long)m.icount, t4 - t3,
               c2 - c0);
    }
    platform_close(p);
    return 0;
}

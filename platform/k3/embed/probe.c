/*
 * probe.c - the riscv64 program behind `kope probe` (embedded in kope,
 * compiled for the target with -pthread -static, run natively on a board or
 * under qemu-riscv64). It prints what it measured as "key value" lines on
 * stdout, for platform/k3/probe.c to parse:
 *
 *   kope-probe 1
 *   isa STRING            from /proc/cpuinfo when it has an isa line, else
 *                         from the compiler's target macros
 *   isa_source cpuinfo|compiler
 *   vlen_bits N           vsetvlmax(e8, m1) * 8
 *   cores N               online CPUs
 *   cache LEVEL TYPE BYTES  one per sysfs cache of cpu0
 *   fma_gflops_core X     FP32 vfmacc, 12 independent accumulators at LMUL 2
 *   fma_gflops_all X      the same loop on every core at once
 *   triad_gbs_core X      STREAM triad a = b + s*c (3 * 4 bytes per element)
 *   triad_gbs_all X       the same split over every core
 *   method TEXT
 *   done
 *
 * Usage: probe [quick]   (quick: tiny loops, for emulation where the numbers
 * mean nothing and only the program's health is checked).
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <riscv_vector.h>

#define MAX_THREADS 256

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
}

/* ------------------------------------------------------------ identity --- */

static void print_isa(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[1024];
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "isa", 3) == 0 && strchr(line, ':')) {
                char *v = strchr(line, ':') + 1;
                while (*v == ' ' || *v == '\t')
                    v++;
                v[strcspn(v, "\n")] = '\0';
                printf("isa %s\nisa_source cpuinfo\n", v);
                fclose(f);
                return;
            }
        }
        fclose(f);
    }
    char isa[128] = "rv64imafdc";
#ifdef __riscv_vector
    strcat(isa, "v");
#endif
#ifdef __riscv_zba
    strcat(isa, "_zba");
#endif
#ifdef __riscv_zbb
    strcat(isa, "_zbb");
#endif
#ifdef __riscv_zbs
    strcat(isa, "_zbs");
#endif
    printf("isa %s\nisa_source compiler\n", isa);
}

static long read_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static void print_caches(void)
{
    for (int i = 0; i < 8; i++) {
        char path[128], type[32] = "", size[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        long level = read_long(path);
        if (level < 0)
            break;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(type, sizeof type, f))
                type[0] = '\0';
            fclose(f);
        }
        type[strcspn(type, "\n")] = '\0';
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (f) {
            if (!fgets(size, sizeof size, f))
                size[0] = '\0';
            fclose(f);
        }
        char *end;
        long long bytes = strtoll(size, &end, 10);
        if (*end == 'K')
            bytes <<= 10;
        else if (*end == 'M')
            bytes <<= 20;
        printf("cache %ld %s %lld\n", level, type[0] ? type : "Unknown", bytes);
    }
}

/* ----------------------------------------------------------------- FMA --- */

/* 12 independent vfmacc chains at LMUL 2 (24 of 32 registers): enough to
 * cover FMA latency x pipes on in-order and out-of-order cores alike.
 * Returns the flops done. */
static double fma_loop(long iters, float *sink)
{
    size_t vl = __riscv_vsetvlmax_e32m2();
    vfloat32m2_t a = __riscv_vfmv_v_f_f32m2(1.0000001f, vl);
    vfloat32m2_t b = __riscv_vfmv_v_f_f32m2(0.9999999f, vl);
    vfloat32m2_t c0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), c1 = c0, c2 = c0, c3 = c0, c4 = c0,
                 c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    for (long i = 0; i < iters; i++) {
        c0 = __riscv_vfmacc_vv_f32m2(c0, a, b, vl);
        c1 = __riscv_vfmacc_vv_f32m2(c1, a, b, vl);
        c2 = __riscv_vfmacc_vv_f32m2(c2, a, b, vl);
        c3 = __riscv_vfmacc_vv_f32m2(c3, a, b, vl);
        c4 = __riscv_vfmacc_vv_f32m2(c4, a, b, vl);
        c5 = __riscv_vfmacc_vv_f32m2(c5, a, b, vl);
        c6 = __riscv_vfmacc_vv_f32m2(c6, a, b, vl);
        c7 = __riscv_vfmacc_vv_f32m2(c7, a, b, vl);
        c8 = __riscv_vfmacc_vv_f32m2(c8, a, b, vl);
        c9 = __riscv_vfmacc_vv_f32m2(c9, a, b, vl);
        c10 = __riscv_vfmacc_vv_f32m2(c10, a, b, vl);
        c11 = __riscv_vfmacc_vv_f32m2(c11, a, b, vl);
    }
    c0 = __riscv_vfadd_vv_f32m2(c0, c1, vl);
    c2 = __riscv_vfadd_vv_f32m2(c2, c3, vl);
    c4 = __riscv_vfadd_vv_f32m2(c4, c5, vl);
    c6 = __riscv_vfadd_vv_f32m2(c6, c7, vl);
    c8 = __riscv_vfadd_vv_f32m2(c8, c9, vl);
    c10 = __riscv_vfadd_vv_f32m2(c10, c11, vl);
    c0 = __riscv_vfadd_vv_f32m2(__riscv_vfadd_vv_f32m2(c0, c2, vl),
                                __riscv_vfadd_vv_f32m2(__riscv_vfadd_vv_f32m2(c4, c6, vl),
                                                       __riscv_vfadd_vv_f32m2(c8, c10, vl), vl), vl);
    *sink += __riscv_vfmv_f_s_f32m2_f32(c0);
    return 2.0 * 12.0 * (double)vl * (double)iters;
}

/* ----------------------------------------------------------- triad --- */

static void triad(float *a, const float *b, const float *c, float s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m8(n - i);
        vfloat32m8_t vb = __riscv_vle32_v_f32m8(b + i, vl);
        vfloat32m8_t vc = __riscv_vle32_v_f32m8(c + i, vl);
        __riscv_vse32_v_f32m8(a + i, __riscv_vfmacc_vf_f32m8(vb, s, vc, vl), vl);
        i += vl;
    }
}

/* ------------------------------------------------------------ threads --- */

struct job {
    int cpu;
    int kind;          /* 0 FMA, 1 triad */
    long iters;        /* FMA iterations, or triad repeats */
    float *a, *b, *c;  /* this thread's slice */
    size_t n;
    pthread_barrier_t *bar;
    double secs, work; /* best time of one repeat (triad) / total (FMA); flops or bytes */
    float sink;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    pin(j->cpu);
    if (j->kind == 1) /* first touch on this core */
        for (size_t i = 0; i < j->n; i++) {
            j->a[i] = 0.0f;
            j->b[i] = 1.0f;
            j->c[i] = 2.0f;
        }
    pthread_barrier_wait(j->bar);
    if (j->kind == 0) {
        double t0 = now_s();
        j->work = fma_loop(j->iters, &j->sink);
        j->secs = now_s() - t0;
    } else {
        j->secs = 1e30;
        for (long r = 0; r < j->iters; r++) {
            pthread_barrier_wait(j->bar);
            double t0 = now_s();
            triad(j->a, j->b, j->c, 3.0f, j->n);
            double t = now_s() - t0;
            if (t < j->secs)
                j->secs = t;
        }
        j->work = 3.0 * 4.0 * (double)j->n;
        j->sink = j->a[j->n / 2];
    }
    return NULL;
}

/* Run the kind on `threads` cores; returns work / time in units per second.
 * For triad the time is the slowest thread's best repeat. */
static double run_parallel(int threads, int kind, long iters, size_t n_total, float *sink)
{
    static struct job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t bar;
    float *a = NULL, *b = NULL, *c = NULL;
    if (kind == 1) {
        a = malloc(n_total * sizeof *a);
        b = malloc(n_total * sizeof *b);
        c = malloc(n_total * sizeof *c);
        if (!a || !b || !c) {
            free(a); free(b); free(c);
            return 0.0;
        }
    }
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    size_t per = n_total / (size_t)threads;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct job){.cpu = t, .kind = kind, .iters = iters, .bar = &bar};
        if (kind == 1) {
            jobs[t].a = a + (size_t)t * per;
            jobs[t].b = b + (size_t)t * per;
            jobs[t].c = c + (size_t)t * per;
            jobs[t].n = per;
        }
        pthread_create(&tid[t], NULL, run_job, &jobs[t]);
    }
    double work = 0.0, worst = 0.0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        work += jobs[t].work;
        if (jobs[t].secs > worst)
            worst = jobs[t].secs;
        *sink += jobs[t].sink;
    }
    pthread_barrier_destroy(&bar);
    free(a); free(b); free(c);
    return worst > 0.0 ? work / worst : 0.0;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    if (cores > MAX_THREADS)
        cores = MAX_THREADS;
    float sink = 0.0f;

    printf("kope-probe 1\n");
    print_isa();
    printf("vlen_bits %zu\n", __riscv_vsetvlmax_e8m1() * 8);
    printf("cores %ld\n", cores);
    print_caches();
    fflush(stdout);

    /* FMA: calibrate to ~0.2 s per core natively */
    long iters = quick ? 2000 : 1000;
    if (!quick) {
        for (;;) {
            double t0 = now_s();
            fma_loop(iters, &sink);
            if (now_s() - t0 > 0.2 || iters > (1L << 40))
                break;
            iters *= 2;
        }
    }
    double g1 = 0.0, gall = 0.0;
    for (int rep = 0; rep < (quick ? 1 : 3); rep++) { /* best of 3 */
        double g = run_parallel(1, 0, iters, 0, &sink);
        if (g > g1) g1 = g;
        g = run_parallel((int)cores, 0, iters, 0, &sink);
        if (g > gall) gall = g;
    }
    printf("fma_gflops_core %.3f\nfma_gflops_all %.3f\n", g1 * 1e-9, gall * 1e-9);
    fflush(stdout);

    /* triad: 3 arrays of 32 MiB natively (far beyond any cache), best of 5 */
    size_t n = quick ? (size_t)1 << 16 : (size_t)8 << 20;
    long reps = quick ? 2 : 5;
    double b1 = run_parallel(1, 1, reps, n, &sink);
    double ball = run_parallel((int)cores, 1, reps, n - n % (size_t)cores, &sink);
    printf("triad_gbs_core %.3f\ntriad_gbs_all %.3f\n", b1 * 1e-9, ball * 1e-9);
    printf("method fma %ldx12 vfmacc.vv m2 best of %d; triad m8 %zu floats/array best of %ld, "
           "12 B/elem; CLOCK_MONOTONIC_RAW%s\n",
           iters, quick ? 1 : 3, n, reps, quick ? "; quick (emulated)" : "");
    printf("sink %g\ndone\n", (double)sink);
    return 0;
}

/*
 * harness.c - the riscv64 program that checks and times one candidate kernel
 * (embedded in kope; compiled for the target and linked with the candidate,
 * ref.c, base.c twice and blas.c). One process per run; kope's host side
 * (platform/k3/k3.c) runs it in a sandboxed child and reads its report file.
 *
 *   harness mode=verify|measure op=NAME n= rows= cols= m= k= batch=
 *           rtol= atol= seed= report=PATH [min_ms= max_rep= max_work= flags=]
 *
 * Defences, each aimed at a known way candidates fool benchmarks:
 *   - outputs are filled with a NaN bit pattern before every call, so skipped
 *     elements are seen (UNWRITTEN_OUTPUT), and end exactly at a PROT_NONE
 *     guard page, so a write past the end faults (OUT_OF_BOUNDS_WRITE); bytes
 *     before the output hold a canary checked after the call;
 *   - inputs are read-only during the call (INPUT_MODIFIED) and also end at a
 *     guard page (reading past them is a crash);
 *   - awkward cases: lengths 1, 2, VL-1, VL+1 at LMUL 1 and 8, primes,
 *     rows of different lengths in successive calls, non-square and K=1;
 *   - inputs are regenerated with a new seed in the *same* buffers and the
 *     result re-checked, after verification and again after timing, so a
 *     kernel that caches by pointer or by call count fails (STATEFUL);
 *   - allocation inside the kernel is counted through -Wl,--wrap=malloc...
 *     and stopped at a cap (MEMORY_LIMIT);
 *   - faults are classified by address in a SIGSEGV handler on its own stack
 *     (a stack overflow still reports).
 * The report goes to a file, never stdout: the candidate cannot forge it
 * without calling write/open, which the source screen and object check refuse.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#endif

#include "kernel_abi.h"
#include "harness.h"

#if defined(__riscv_vector)
#include <riscv_vector.h>
#endif

void kope_kernel(void); /* real signature depends on the family; cast at call */
void kope_icount_begin(int region);
void kope_icount_end(int region);

static const char *const op_names[H_OP_COUNT] = {H_OP_NAMES};

/* ------------------------------------------------------------ report --- */

static int g_report = -1;

static void report(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    if (g_report >= 0) {
        ssize_t w = write(g_report, buf, (size_t)n);
        (void)w;
    }
}

static void fail_exit(const char *reason, int sig, const char *detail)
{
    report("fail %s %d %s\n", reason, sig, detail);
    _exit(H_EXIT_FAIL);
}

/* ---------------------------------------------- memory wrap (in kernel) --- */

static volatile int g_in_kernel;
static size_t g_kernel_alloc;
#ifndef H_KERNEL_ALLOC_CAP
#define H_KERNEL_ALLOC_CAP ((size_t)64 << 20)
#endif

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static void kernel_alloc_note(size_t n)
{
    if (!g_in_kernel)
        return;
    g_kernel_alloc += n;
    if (n > H_KERNEL_ALLOC_CAP || g_kernel_alloc > H_KERNEL_ALLOC_CAP)
        fail_exit("memory_limit", 0, "kernel allocated past the cap");
}

void *__wrap_malloc(size_t n) { kernel_alloc_note(n); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m)
{
    kernel_alloc_note(m && n > (size_t)-1 / m ? (size_t)-1 : n * m);
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) { kernel_alloc_note(n); return __real_realloc(p, n); }

/* ------------------------------------------------------ guarded buffers --- */

enum { R_OUT_GUARD = 1, R_IN_GUARD, R_INPUT };

struct region {
    unsigned char *lo, *hi;
    int kind;
};
#define MAX_REGIONS 16
static struct region g_regions[MAX_REGIONS];
static int g_n_regions;

struct gbuf {
    unsigned char *map;
    size_t map_len, data_len; /* data_len: bytes before the guard page */
    unsigned char *p;         /* the buffer: ends at the guard page */
    size_t bytes;
};

static size_t g_page;

static void region_add(unsigned char *lo, size_t len, int kind)
{
    if (g_n_regions < MAX_REGIONS)
        g_regions[g_n_regions++] = (struct region){lo, lo + len, kind};
}

static int gbuf_alloc(struct gbuf *b, size_t bytes, int input)
{
    /* outputs get one extra leading page of canary, so a write just before
     * the buffer lands in memory we check rather than in a neighbour */
    size_t pages = (bytes + g_page - 1) / g_page + (input ? 0 : 1);
    if (pages == 0)
        pages = 1;
    b->data_len = pages * g_page;
    b->map_len = b->data_len + g_page;
    b->map = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b->map == MAP_FAILED) {
        b->map = NULL;
        return -1;
    }
    if (mprotect(b->map + b->data_len, g_page, PROT_NONE))
        return -1;
    b->bytes = bytes;
    b->p = b->map + b->data_len - bytes;
    region_add(b->map + b->data_len, g_page, input ? R_IN_GUARD : R_OUT_GUARD);
    if (input)
        region_add(b->map, b->data_len, R_INPUT);
    return 0;
}

static void gbuf_free(struct gbuf *b)
{
    if (b->map)
        munmap(b->map, b->map_len);
    memset(b, 0, sizeof *b);
}

static void gbuf_protect(struct gbuf *b, int ro)
{
    if (b->map)
        mprotect(b->map, b->data_len, ro ? PROT_READ : PROT_READ | PROT_WRITE);
}

/* -------------------------------------------------------------- faults --- */

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    unsigned char *addr = si->si_addr;
    if (!g_in_kernel)
        fail_exit("harness", sig, "fault outside the kernel call");
    for (int i = 0; i < g_n_regions; i++) {
        if (addr >= g_regions[i].lo && addr < g_regions[i].hi) {
            if (g_regions[i].kind == R_OUT_GUARD)
                fail_exit("out_of_bounds_write", sig, "wrote past the end of the output");
            if (g_regions[i].kind == R_IN_GUARD)
                fail_exit("crash", sig, "read past the end of an input");
            if (g_regions[i].kind == R_INPUT && sig == SIGSEGV)
                fail_exit("input_modified", sig, "wrote into a read-only input");
        }
    }
    fail_exit("crash", sig, sig == SIGSEGV ? "segmentation fault in the kernel" : "signal in the kernel");
}

static void faults_install(void)
{
    static char altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ seccomp --- */

/* After set-up, the process may only do what checking and timing need:
 * memory management, writing its report, clocks, signals, exiting. Every
 * other system call (clone/fork, execve, openat, socket, connect, kill, ...)
 * fails with EPERM rather than killing the process, so a board whose libc
 * needs one more call degrades instead of failing every candidate.
 * qemu-user refuses PR_SET_SECCOMP (it would filter qemu itself), so under
 * emulation this reports "seccomp=unavailable" and the screen stands alone. */
static const char *seccomp_install(void)
{
#if defined(__linux__) && defined(SECCOMP_MODE_FILTER) && \
    (defined(__riscv) || defined(__x86_64__) || defined(__aarch64__))
#if defined(__riscv)
#define H_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__x86_64__)
#define H_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#define H_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, H_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_mmap), ALLOW(SYS_munmap),
        ALLOW(SYS_mprotect), ALLOW(SYS_brk), ALLOW(SYS_madvise), ALLOW(SYS_mremap),
        ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigaction), ALLOW(SYS_clock_gettime),
        ALLOW(SYS_gettimeofday), ALLOW(SYS_getcpu), ALLOW(SYS_ioctl), ALLOW(SYS_futex),
        ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_tgkill), ALLOW(SYS_close),
        ALLOW(SYS_fstat), ALLOW(SYS_sched_yield),
#ifdef SYS_newfstatat
        ALLOW(SYS_newfstatat),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
#undef ALLOW
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return "unavailable(no_new_privs)";
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return errno == EINVAL ? "unavailable(qemu-user or kernel without seccomp)" : "unavailable";
    return "on(allow-list, others EPERM)";
#else
    return "unavailable(not built in)";
#endif
}

/* ------------------------------------------------------------- cycles --- */

/* Cycles through perf_event_open when the kernel allows it (user space
 * only); -1 otherwise (qemu-user, perf_event_paranoid, no PMU driver). */
static int g_perf_fd = -1;

static void perf_open(void)
{
#if defined(__linux__) && defined(SYS_perf_event_open)
    struct perf_event_attr pa;
    memset(&pa, 0, sizeof pa);
    pa.size = sizeof pa;
    pa.type = PERF_TYPE_HARDWARE;
    pa.config = PERF_COUNT_HW_CPU_CYCLES;
    pa.disabled = 1;
    pa.exclude_kernel = 1;
    pa.exclude_hv = 1;
    g_perf_fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
#endif
}

/* ---------------------------------------------------------------- rng --- */

static uint64_t g_rng;

static float rng_f(float lo, float hi)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    double u = (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

static void fill(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rng_f(lo, hi);
}

/* ---------------------------------------------------------------- cases --- */

static int g_op;
static int g_family; /* 0 elementwise, 1 activation, 2 reduction, 3 matmul */

static int op_family(int op)
{
    if (op <= H_OP_CLAMP) return 0;
    if (op <= H_OP_RMSNORM) return 1;
    if (op <= H_OP_ARGMAX) return 2;
    return 3;
}

static int op_rowwise(int op)
{
    return op == H_OP_SOFTMAX || op == H_OP_LAYERNORM || op == H_OP_RMSNORM;
}

struct hcase {
    char label[48];
    size_t n, rows, cols, m, k, batch;
    float shift; /* added to x: large-magnitude inputs for the row-wise ops */
};

#define MAX_CASES 20
static struct hcase g_cases[MAX_CASES];
static int g_n_cases;

static void case_add(const char *label, size_t n, size_t rows, size_t cols,
                     size_t m, size_t k, size_t batch)
{
    if (g_n_cases >= MAX_CASES)
        return;
    struct hcase *c = &g_cases[g_n_cases++];
    snprintf(c->label, sizeof c->label, "%s", label);
    c->n = n; c->rows = rows; c->cols = cols; c->m = m; c->k = k; c->batch = batch;
    c->shift = 0;
}

/* Awkward cases for the op's shape kind. v1/v8: elements per vector register
 * at LMUL 1 and 8 (8 and 64 at VLEN 256). */
static void cases_awkward(size_t v1, size_t v8)
{
    char l[48];
    if (g_op == H_OP_GEMV) {
        size_t mk[][2] = {{1, 1}, {3, 1}, {v1 + 1, v1 - 1}, {5, v8 + 1}, {2, 1021}, {67, 129}};
        for (size_t i = 0; i < sizeof mk / sizeof mk[0]; i++) {
            snprintf(l, sizeof l, "m=%zu,k=%zu", mk[i][0], mk[i][1]);
            case_add(l, 1, 0, 0, mk[i][0], mk[i][1], 1);
        }
    } else if (g_family == 3) {
        size_t s[][4] = {{1, 1, 1, 1}, {5, 7, 1, 1}, {3, v1 + 1, 2 * v1 - 1, 1},
                         {v8 + 1, 5, 3, 1}, {17, 33, 65, 1}, {2, v8 + 1, v1 - 1, 1},
                         {5, 9, 7, 2}, {1, 67, 129, 1}};
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
            snprintf(l, sizeof l, "m=%zu,n=%zu,k=%zu,b=%zu", s[i][0], s[i][1], s[i][2], s[i][3]);
            case_add(l, s[i][1], 0, 0, s[i][0], s[i][2], s[i][3]);
        }
    } else if (g_family == 2 || op_rowwise(g_op)) {
        /* successive calls with rows of different lengths */
        size_t rc[][2] = {{1, 1}, {1, 2}, {2, v1 - 1}, {3, v1 + 1}, {2, v8 - 1},
                          {2, v8 + 1}, {3, 97}, {1, 1021}};
        for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
            snprintf(l, sizeof l, "rows=%zu,cols=%zu", rc[i][0], rc[i][1]);
            case_add(l, 0, rc[i][0], rc[i][1], 0, 0, 0);
        }
        /* classic numerical bugs: softmax without subtracting the row max
         * overflows (exp(100) is inf in f32); layernorm's one-pass
         * E[x^2] - E[x]^2 in f32 cancels when the mean is large */
        if (g_op == H_OP_SOFTMAX && g_n_cases < MAX_CASES) {
            case_add("rows=2,cols=97,x+90", 0, 2, 97, 0, 0, 0);
            g_cases[g_n_cases - 1].shift = 90.0f;
        }
        if (g_op == H_OP_LAYERNORM && g_n_cases < MAX_CASES) {
            case_add("rows=2,cols=1021,x+100", 0, 2, 1021, 0, 0, 0);
            g_cases[g_n_cases - 1].shift = 100.0f;
        }
    } else {
        size_t ns[] = {1, 2, v1 - 1, v1 + 1, v8 - 1, v8 + 1, 97, 1021};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            snprintf(l, sizeof l, "n=%zu", ns[i]);
            case_add(l, ns[i], 1, ns[i], 0, 0, 0);
        }
        if (g_family == 1)
            case_add("rows=3,cols=7", 21, 3, 7, 0, 0, 0);
    }
}

/* -------------------------------------------------------------- operands --- */

static struct gbuf g_in[4], g_out;
static struct h_args g_args;
static double *g_ref;
static float g_params_alpha;

static size_t case_out_count(const struct hcase *c)
{
    switch (g_family) {
    case 0: return c->n;
    case 1: return c->rows * c->cols;
    case 2: return c->rows;
    default: return c->batch * c->m * c->n;
    }
}

static void operands_free(void)
{
    for (int i = 0; i < 4; i++)
        gbuf_free(&g_in[i]);
    gbuf_free(&g_out);
    g_n_regions = 0;
    free(g_ref);
    g_ref = NULL;
}

/* (Re)generate input values in the existing buffers from the current rng. */
static void operands_fill(const struct hcase *c, int variant)
{
    struct h_args *a = &g_args;
    for (int i = 0; i < 4; i++)
        gbuf_protect(&g_in[i], 0);
    if (g_family == 3) {
        fill((float *)g_in[0].p, g_in[0].bytes / 4, -1, 1);
        fill((float *)g_in[1].p, g_in[1].bytes / 4, -1, 1);
    } else {
        float lo = -4, hi = 4;
        if (g_op == H_OP_EXP || g_op == H_OP_SOFTMAX) { lo = -10; hi = 10; }
        if (c->shift != 0) { lo = c->shift - (g_op == H_OP_SOFTMAX ? 10 : 1); hi = c->shift + (g_op == H_OP_SOFTMAX ? 10 : 1); }
        if (g_family == 2 && (variant & 1)) { lo = -6; hi = -1; } /* all negative: max/argmax */
        fill((float *)g_in[0].p, g_in[0].bytes / 4, lo, hi);
        if (g_in[1].p)
            fill((float *)g_in[1].p, g_in[1].bytes / 4, -4, 4);
        if (g_in[2].p)
            fill((float *)g_in[2].p, g_in[2].bytes / 4, 0.5f, 1.5f);
        if (g_in[3].p)
            fill((float *)g_in[3].p, g_in[3].bytes / 4, -0.5f, 0.5f);
    }
    a->alpha = rng_f(-2, 2);
    g_params_alpha = a->alpha;
}

static int operands_setup(const struct hcase *c)
{
    operands_free();
    struct h_args *a = &g_args;
    memset(a, 0, sizeof *a);
    a->op = g_op;
    a->lo = -1.0f; a->hi = 1.5f; a->eps = 1e-5f;
    size_t n_in0 = 0, n_in1 = 0, n_g = 0;
    switch (g_family) {
    case 0:
        a->n = c->n;
        n_in0 = c->n;
        n_in1 = (g_op == H_OP_SCALE || g_op == H_OP_CLAMP) ? 0 : c->n;
        break;
    case 1:
        a->rows = c->rows; a->cols = c->cols;
        n_in0 = c->rows * c->cols;
        n_g = (g_op == H_OP_LAYERNORM || g_op == H_OP_RMSNORM) ? c->cols : 0;
        break;
    case 2:
        a->rows = c->rows; a->cols = c->cols;
        n_in0 = c->rows * c->cols;
        break;
    default:
        a->m = c->m; a->n = c->n; a->k = c->k; a->batch = c->batch;
        n_in0 = c->batch * c->m * c->k;
        n_in1 = c->batch * c->k * c->n;
    }
    a->out_count = case_out_count(c);
    if (gbuf_alloc(&g_in[0], n_in0 * 4, 1))
        return -1;
    if (n_in1 && gbuf_alloc(&g_in[1], n_in1 * 4, 1))
        return -1;
    if (n_g && gbuf_alloc(&g_in[2], n_g * 4, 1))
        return -1;
    if (n_g && g_op == H_OP_LAYERNORM && gbuf_alloc(&g_in[3], n_g * 4, 1))
        return -1;
    if (gbuf_alloc(&g_out, a->out_count * 4, 0))
        return -1;
    g_ref = malloc((a->out_count ? a->out_count : 1) * sizeof(double));
    if (!g_ref)
        return -1;
    if (g_family == 3) {
        a->a = (const float *)g_in[0].p;
        a->b = (const float *)g_in[1].p;
    } else {
        a->x = (const float *)g_in[0].p;
        a->y = g_in[1].p ? (const float *)g_in[1].p : NULL;
        a->gamma = g_in[2].p ? (const float *)g_in[2].p : NULL;
        a->beta = g_in[3].p ? (const float *)g_in[3].p : NULL;
    }
    a->out = g_out.p;
    return 0;
}

/* NaN-fill the output and the canary before it. */
static void out_poison(void)
{
    memset(g_out.map, 0xA5, (size_t)(g_out.p - g_out.map));
    uint32_t bits = H_FILL_BITS;
    for (size_t i = 0; i < g_args.out_count; i++)
        memcpy(g_out.p + 4 * i, &bits, 4);
}

/* The FP rounding mode is thread state the psABI preserves across calls: a
 * kernel that leaves it changed would skew everything computed after it (the
 * reference, the baselines), so it is blamed (STATEFUL) and frm restored.
 * vxrm (fixed-point rounding) is not preserved across calls and clang sets
 * it before every fixed-point intrinsic with an explicit mode (`csrwi vxrm`,
 * allowed by the object check): it is simply reset. */
#if defined(__riscv)
static unsigned long frm_read(void)
{
    unsigned long v;
    __asm__ volatile("frrm %0" : "=r"(v));
    return v;
}
static void csr_restore(unsigned long frm)
{
    __asm__ volatile("fsrm %0" : : "r"(frm));
#if defined(__riscv_vector)
    __asm__ volatile("csrwi vxrm, 0");
#endif
}
#else
static unsigned long frm_read(void) { return 0; }
static void csr_restore(unsigned long frm) { (void)frm; }
#endif

static void call_candidate_p(int protect)
{
    unsigned long frm0 = frm_read();
    struct h_args *a = &g_args;
    struct kope_scalars s = {.alpha = a->alpha, .lo = a->lo, .hi = a->hi, .eps = a->eps};
    void (*fn)(void) = kope_kernel;
    if (protect)
        for (int i = 0; i < 4; i++)
            gbuf_protect(&g_in[i], 1);
    g_in_kernel = 1;
    switch (g_family) {
    case 0:
        ((kope_elementwise_fn *)fn)(a->n, a->x, a->y, a->out, &s);
        break;
    case 1:
        ((kope_activation_fn *)fn)(a->rows, a->cols, a->x, a->out, a->gamma, a->beta, &s);
        break;
    case 2:
        ((kope_reduction_fn *)fn)(a->rows, a->cols, a->x, a->out);
        break;
    default:
        ((kope_matmul_fn *)fn)(a->batch, a->m, a->n, a->k, a->a, a->b, a->out);
    }
    g_in_kernel = 0;
    unsigned long frm1 = frm_read();
    csr_restore(frm0);
    if (frm1 != frm0) {
        char d[96];
        snprintf(d, sizeof d, "left the FP rounding mode changed (frm %lu -> %lu)", frm0, frm1);
        fail_exit("stateful", 0, d);
    }
    if (protect)
        for (int i = 0; i < 4; i++)
            gbuf_protect(&g_in[i], 0);
}

/* Checked calls make inputs read-only; timed calls skip the two mprotect
 * system calls per buffer so they do not pollute the time. */
static void call_candidate(void) { call_candidate_p(1); }

/* ---------------------------------------------------------------- check --- */

struct check {
    const char *reason;
    double max_abs, max_rel, norm;
    size_t first_bad;
};

static void check_output(double rtol, double atol, struct check *ck)
{
    const struct h_args *a = &g_args;
    memset(ck, 0, sizeof *ck);
    ck->reason = "none";
    int rank = 0; /* 3 unwritten, 2 nan_inf, 1 wrong */
    double se = 0, sr = 0;
    for (size_t i = 0; i < (size_t)(g_out.p - g_out.map); i++)
        if (g_out.map[i] != 0xA5) {
            ck->reason = "out_of_bounds_write";
            return;
        }
    for (size_t i = 0; i < a->out_count; i++) {
        uint32_t bits;
        memcpy(&bits, g_out.p + 4 * i, 4);
        double ref = g_ref[i], got, err;
        int bad = 0;
        if (bits == H_FILL_BITS) {
            bad = 3;
            err = INFINITY;
        } else if (g_op == H_OP_ARGMAX) {
            int32_t idx;
            memcpy(&idx, &bits, 4);
            const float *row = a->x + i * a->cols;
            got = idx;
            err = fabs(got - ref);
            if (idx < 0 || (size_t)idx >= a->cols || row[idx] != row[(size_t)ref])
                bad = 1;
            else
                err = 0; /* an equal maximum elsewhere is also right */
        } else {
            float f;
            memcpy(&f, &bits, 4);
            got = f;
            err = fabs(got - ref);
            if (!isfinite(got) && isfinite(ref))
                bad = 2;
            else if (!(err <= atol + rtol * fabs(ref)))
                bad = 1;
        }
        if (isfinite(err)) {
            if (err > ck->max_abs) ck->max_abs = err;
            double rel = err / (fabs(ref) > 1e-30 ? fabs(ref) : 1e-30);
            if (rel > ck->max_rel) ck->max_rel = rel;
            se += err * err;
        } else {
            ck->max_abs = ck->max_rel = INFINITY;
            se = INFINITY;
        }
        sr += ref * ref;
        if (bad > rank) {
            if (rank == 0)
                ck->first_bad = i;
            rank = bad;
        }
    }
    ck->norm = sqrt(se) / (sqrt(sr) > 1e-30 ? sqrt(sr) : 1e-30);
    if (rank == 3) ck->reason = "unwritten_output";
    else if (rank == 2) ck->reason = "nan_inf";
    else if (rank == 1) ck->reason = "wrong_result";
}

static void report_case(const char *label, const struct hcase *c, const struct check *ck)
{
    report("case %s %zu %zu %zu %zu %zu %zu %d %s %.6g %.6g %.6g %zu\n", label, c->n,
           c->rows, c->cols, c->m, c->k, c->batch, strcmp(ck->reason, "none") == 0,
           ck->reason, ck->max_abs, ck->max_rel, ck->norm, ck->first_bad);
}

/* Run + check one case with inputs from seed; returns 1 if it passed. */
static int run_case(const char *label, const struct hcase *c, uint64_t seed, int variant,
                    double rtol, double atol, int fresh)
{
    struct check ck;
    if (fresh && operands_setup(c))
        fail_exit("harness", 0, "cannot map operand buffers (memory limit?)");
    g_rng = seed ? seed : 1;
    operands_fill(c, variant);
    out_poison();
    call_candidate();
    /* the reference is computed after the call, from inputs the kernel could
     * not write (read-only during the call): nothing for it to tamper with */
    h_ref_run(&g_args, g_ref);
    check_output(rtol, atol, &ck);
    report_case(label, c, &ck);
    return strcmp(ck.reason, "none") == 0;
}

/* --------------------------------------------------------------- timing --- */

static double now_ns(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_RAW
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) void kope_icount_begin(int region)
{
    __asm__ volatile("" : : "r"(region) : "memory");
}

__attribute__((noinline)) void kope_icount_end(int region)
{
    __asm__ volatile("" : : "r"(region) : "memory");
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static unsigned char *g_flush;
#define FLUSH_BYTES (32u << 20)

static void flush_caches(void)
{
    if (!g_flush)
        g_flush = malloc(FLUSH_BYTES);
    if (g_flush)
        for (size_t i = 0; i < FLUSH_BYTES; i += 64)
            g_flush[i]++;
}

#define MAX_SAMPLES 4096

/* Time fn: warm-up, calibrate calls per sample so a sample is >= 20 us,
 * then samples until min_ms of total time (and at least 6), first sample
 * discarded; reports median, min, (p90-p10)/median. */
static void time_fn(const char *name, void (*fn)(void), int min_ms, int max_rep, int flags,
                    int region)
{
    static double samples[MAX_SAMPLES];
    int quick = (flags & H_FLAG_QUICK) != 0;
    int warm = quick ? 1 : 2, number = 1, min_reps = quick ? 3 : 6;
    for (int i = 0; i < warm; i++)
        fn();
    for (; !quick;) {
        double t0 = now_ns();
        for (int i = 0; i < number; i++)
            fn();
        double dt = now_ns() - t0;
        if (dt >= 20000.0 || number >= (1 << 20))
            break;
        number *= 2;
    }
    if (max_rep > MAX_SAMPLES) max_rep = MAX_SAMPLES;
    if (quick) max_rep = min_reps;
    if (max_rep < min_reps) max_rep = min_reps;
    int reps = 0;
    double total = 0;
    int count_cycles = region == 0 && g_perf_fd >= 0;
    if (count_cycles) {
        ioctl(g_perf_fd, PERF_EVENT_IOC_RESET, 0);
        ioctl(g_perf_fd, PERF_EVENT_IOC_ENABLE, 0);
    }
    while (reps < max_rep && (reps < min_reps || total < min_ms * 1e6)) {
        if (flags & H_FLAG_FLUSH)
            flush_caches();
        double t0 = now_ns();
        for (int i = 0; i < number; i++)
            fn();
        double dt = now_ns() - t0;
        total += dt;
        samples[reps++] = dt / number;
    }
    if (count_cycles) {
        uint64_t cyc = 0;
        ioctl(g_perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (read(g_perf_fd, &cyc, sizeof cyc) == (ssize_t)sizeof cyc && reps * number > 0)
            report("cycles %llu\n", (unsigned long long)(cyc / ((uint64_t)reps * (uint64_t)number)));
    }
    int kept = reps - 1;
    double *s = samples + 1;
    qsort(s, (size_t)kept, sizeof *s, cmp_d);
    double med = kept % 2 ? s[kept / 2] : 0.5 * (s[kept / 2 - 1] + s[kept / 2]);
    double p10 = s[kept / 10], p90 = s[(kept * 9) / 10 < kept ? (kept * 9) / 10 : kept - 1];
    report("time %s %.1f %.1f %.4f %d %d\n", name, med, s[0], med > 0 ? (p90 - p10) / med : 0,
           kept * number, warm);
    /* one counted call for the icount plugin */
    report("icount_region %d %s\n", region, name);
    kope_icount_begin(region);
    fn();
    kope_icount_end(region);
}

/* A baseline's cost counts only if it computes the task's op: one call on
 * the task's inputs, checked against the reference with the candidate's
 * tolerances. A wrong one is reported and not timed (no time line, no
 * icount region), so no ratio is ever made against it. */
static int baseline_verified(const char *name, void (*fn)(void), double rtol, double atol)
{
    struct check ck;
    out_poison();
    fn();
    h_ref_run(&g_args, g_ref);
    check_output(rtol, atol, &ck);
    int ok = strcmp(ck.reason, "none") == 0;
    if (ok)
        report("method checked %s=ok\n", name);
    else
        report("method checked %s=%s max_rel=%.3g: not timed\n", name, ck.reason, ck.max_rel);
    return ok;
}

static void t_candidate(void) { call_candidate_p(0); }
static void t_scalar(void) { kope_base_scalar(&g_args); }
static void t_autovec(void) { kope_base_autovec(&g_args); }
static void t_blas(void) { h_blas_run(&g_args); }

/* ----------------------------------------------------------------- main --- */

static const char *arg(int argc, char **argv, const char *key, const char *def)
{
    size_t kl = strlen(key);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], key, kl) == 0 && argv[i][kl] == '=')
            return argv[i] + kl + 1;
    return def;
}

static size_t argz(int argc, char **argv, const char *key)
{
    return (size_t)strtoull(arg(argc, argv, key, "0"), NULL, 10);
}

int main(int argc, char **argv)
{
    const char *mode = arg(argc, argv, "mode", "verify");
    const char *opname = arg(argc, argv, "op", "");
    const char *rpath = arg(argc, argv, "report", NULL);
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    if (!rpath)
        return 2;
    g_report = open(rpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (g_report < 0)
        return 2;
    g_op = -1;
    for (int i = 0; i < H_OP_COUNT; i++)
        if (strcmp(op_names[i], opname) == 0)
            g_op = i;
    if (g_op < 0)
        fail_exit("harness", 0, "unknown op");
    g_family = op_family(g_op);
    double rtol = strtod(arg(argc, argv, "rtol", "1e-4"), NULL);
    double atol = strtod(arg(argc, argv, "atol", "1e-5"), NULL);
    uint64_t seed = strtoull(arg(argc, argv, "seed", "12345"), NULL, 10);
    int flags = atoi(arg(argc, argv, "flags", "0"));
    int min_ms = atoi(arg(argc, argv, "min_ms", "200"));
    int max_rep = atoi(arg(argc, argv, "max_rep", "1000"));
    double max_work = strtod(arg(argc, argv, "max_work", "0"), NULL);
    faults_install();

    /* the task's own shape, scaled down only when the caller caps the work
     * (under emulation): batch, M or rows are halved first, then N keeping
     * N mod 256; K and cols, which decide the inner tails, are kept. */
    struct hcase task;
    memset(&task, 0, sizeof task);
    snprintf(task.label, sizeof task.label, "task");
    task.n = argz(argc, argv, "n");
    task.rows = argz(argc, argv, "rows");
    task.cols = argz(argc, argv, "cols");
    task.m = argz(argc, argv, "m");
    task.k = argz(argc, argv, "k");
    task.batch = argz(argc, argv, "batch");
    if (g_family == 0 || (g_family == 1 && !op_rowwise(g_op))) {
        task.rows = 1;
        task.cols = task.n;
    }
    if (g_op == H_OP_GEMV) { task.n = 1; task.batch = 1; }
    if (g_family == 3 && task.batch == 0) task.batch = 1;
    if (max_work > 0) {
        size_t b0 = task.batch, m0 = task.m, r0 = task.rows, n0 = task.n;
        for (;;) {
            double w = g_family == 3 ? (double)task.batch * task.m * task.n * task.k
                                     : (double)(task.rows ? task.rows : 1) * (task.cols ? task.cols : task.n);
            if (w <= max_work) break;
            if (g_family == 3 && task.batch > 1) task.batch = (task.batch + 1) / 2;
            else if (g_family == 3 && task.m > 1) task.m = (task.m + 1) / 2;
            else if (g_family == 3 && task.n > 512) /* keep n mod 256: the tails */
                task.n = (task.n / 2) / 256 * 256 + task.n % 256;
            else if ((g_family == 2 || op_rowwise(g_op)) && task.rows > 1) task.rows = (task.rows + 1) / 2;
            else break;
        }
        if (task.batch != b0 || task.m != m0 || task.rows != r0 || task.n != n0) {
            snprintf(task.label, sizeof task.label, "task-scaled");
            /* figures (icount included) are then for this shape, and say so */
            report("method shape-scaled-to batch=%zu m=%zu n=%zu k=%zu rows=%zu cols=%zu "
                   "(emulation work cap %.0f)\n", task.batch, task.m, task.n, task.k, task.rows,
                   task.cols, max_work);
        }
    }

    size_t v1 = 8, v8 = 64;
#if defined(__riscv_vector)
    v1 = __riscv_vsetvlmax_e32m1();
    v8 = __riscv_vsetvlmax_e32m8();
#endif
    report("method vl_e32m1=%zu vl_e32m8=%zu\n", v1, v8);

    if (strcmp(mode, "verify") == 0) {
        report("method seccomp=%s\n", seccomp_install());
        case_add(task.label, task.n, task.rows, task.cols, task.m, task.k, task.batch);
        cases_awkward(v1, v8);
        for (int i = 0; i < g_n_cases; i++) {
            int ok = run_case(g_cases[i].label, &g_cases[i], seed + 7919u * (uint64_t)i, i, rtol, atol, 1);
            if (i == 0 && ok) {
                /* same buffers, new values: a kernel that caches fails here */
                if (!run_case("task-reseeded", &g_cases[0], seed ^ 0x9e3779b97f4a7c15ull, 1, rtol, atol, 0))
                    report("fail stateful 0 result changed only when the inputs were reseeded in place\n");
            }
        }
        report("done\n");
        return 0;
    }

    /* measure: check with fresh inputs, time, check again with fresh inputs */
    if (!(flags & H_FLAG_NO_PIN)) {
        int cpu = sched_getcpu();
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (sched_setaffinity(0, sizeof set, &set) == 0)
                report("method pinned cpu=%d\n", cpu);
        }
    }
    perf_open();
    report("method cycles=%s seccomp=%s\n", g_perf_fd >= 0 ? "perf_event_open(user)" : "unavailable",
           seccomp_install());
    if (flags & H_FLAG_QUICK)
        report("method timer=CLOCK_MONOTONIC_RAW quick: warmup=1 samples=3 (emulated: time is not claimed)\n");
    else
        report("method timer=CLOCK_MONOTONIC_RAW warmup=2 samples>=20us min_ms=%d max_rep=%d "
               "first-discarded flush=%d\n", min_ms, max_rep, (flags & H_FLAG_FLUSH) != 0);
    if (!run_case("pre-timing", &task, seed * 31 + 1, 0, rtol, atol, 1)) {
        report("done\n");
        return 0;
    }
    time_fn("candidate", t_candidate, min_ms, max_rep, flags, 0);
    if (!(flags & H_FLAG_NO_BASELINES)) {
        if (baseline_verified("scalar-O2", t_scalar, rtol, atol))
            time_fn("scalar-O2", t_scalar, min_ms, max_rep, flags, 1);
        if (baseline_verified("autovec-O3", t_autovec, rtol, atol))
            time_fn("autovec-O3", t_autovec, min_ms, max_rep, flags, 2);
        if (h_blas_available(g_op)) {
            if (baseline_verified("openblas", t_blas, rtol, atol))
                time_fn("openblas", t_blas, min_ms, max_rep, flags, 3);
        } else if (g_family == 3) {
            report("method openblas=not used (not linked, or built for a wider VLEN than %zu)\n",
                   v1 * 32);
        }
    }
    if (!run_case("post-timing", &task, seed * 31 + 2, 1, rtol, atol, 0))
        report("fail stateful 0 wrong after timing with inputs reseeded in place\n");
    report("done\n");
    return 0;
}

/*
 * harness.c - the K3 JUDGE program: the riscv64 program that checks and
 * times one candidate kernel, with NO candidate code in it (embedded in
 * kope; compiled for the target and linked with ref.c, base.c twice,
 * blas.c, sleef.c or a user op's user.c - once per op, not per candidate).
 * kope's host side (platform/k3/k3.c) runs it in an isolated child
 * (platform/proc.c) and reads its report from fd 3.
 *
 *   harness mode=verify|measure op=NAME n= rows= cols= m= k= batch=
 *           rtol= atol= seed= [min_ms= max_rep= max_work= flags=
 *           size_seed= recheck=] [kr=RUNNER-WORD ... kprog=PATH [kplugin=ARG]]
 *
 * The JUDGE (this program) owns the case list, the master copy of every
 * input, the double-precision reference, the comparison, the clock and the
 * report (fd 3). The candidate only ever runs in the KERNEL PROGRAM
 * (kserve.c linked with the candidate's object, given by kope as fd 5), which
 * the judge starts for each phase by fork + exec (kproc_exec): a neutral argv
 * {"kernel"}, an empty environment, only the descriptors of kproto.h, and
 * natively a seccomp allow-list installed before the exec, so what the
 * candidate makes run before main (constructors, ifunc resolvers, a libc
 * function it overrides) already runs under it and never in the judge. Under
 * qemu-user (kr= given) the judge execs the host's qemu with the kernel
 * program instead, and gives that qemu's icount plugin a key of its own
 * ("icount_key PID HEX" on the report). The operands live in one memfd
 * arena the kernel program maps at the judge's own addresses (inputs
 * read-only, guard pages, outputs writable; the layout table is the arena's
 * first pages), so h_args pointers mean the same in both programs. Nothing
 * the kernel process writes is trusted: the judge compares the shared output
 * with its own reference, the shared inputs with its master copy, and reads
 * the kernel's status page only as a reason to fail. The judge is not
 * dumpable (a kernel process cannot open /proc/<judge>/fd or read its
 * memory). The trusted baselines run in the judge itself under emulation,
 * natively in plain forks of it (kproc_main).
 *
 * Defences, each aimed at a known way candidates fool benchmarks:
 *   - outputs are filled with a NaN bit pattern before every call whose
 *     result or cost is recorded (checked calls, every timed sample, the
 *     counted call), so skipped elements are seen (UNWRITTEN_OUTPUT), and end
 *     exactly at a PROT_NONE guard page (OUT_OF_BOUNDS_WRITE); bytes before
 *     the output hold a canary checked after the call;
 *   - every timed sample and the counted (icount) call are checked like a
 *     verification call; the counted call runs in a fresh kernel process with
 *     fresh inputs, so no state (stack below sp, harness memory found by
 *     scanning) survives into it;
 *   - inputs are read-only in the kernel process, end at a guard page, and
 *     are compared with the judge's master copy after each call;
 *   - awkward cases: lengths 1, 2, VL-1, VL+1 at LMUL 1 and 8, primes,
 *     rows of different lengths in successive calls, non-square and K=1, and
 *     special values (NaN, +-Inf, +-0, denormals, overflow and saturation
 *     magnitudes, all-equal rows, long rows) with the reference's semantics;
 *   - scalar arguments (alpha, lo/hi, eps) vary per case over wide ranges
 *     (verdict.h, h_case_scalars);
 *   - every passing case runs again with its output prefilled with finite
 *     values: the result must be bit for bit the same (no reading or
 *     accumulating into the output);
 *   - one verify process makes more than 1,100 checked calls (the small
 *     cases, round after round), more than a call counter could hide
 *     behind;
 *   - inputs are regenerated with a new seed in the *same* buffers of the
 *     same kernel process and the result re-checked, after verification and
 *     again after timing (STATEFUL);
 *   - in the kernel program (kserve.c): allocation inside the kernel is
 *     counted through -Wl,--wrap=malloc... and stopped at a cap
 *     (MEMORY_LIMIT), RLIMIT_AS behind it; faults are classified by address
 *     in a SIGSEGV handler on its own stack (a stack overflow still
 *     reports); the FP rounding mode is checked after every call;
 *   - natively, the kernel program runs under a seccomp allow-list from its
 *     first instruction.
 *   - in the kernel program, every call goes through kcall.S: FP/vector
 *     control state and v0-v31 reset before it, canaries in s0-s11/fs0-fs11
 *     and sp/gp/tp checked after it (STATEFUL, the register named);
 *   - verify adds three sizes drawn from size_seed= (verdict.h,
 *     h_cases_drawn), which kope draws per run and records; recheck=1 is
 *     kope's re-run at another VLEN (round 1 only);
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
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#endif

#include "hargs.h"
#include "kproto.h" /* the kernel program's descriptors, commands, status page, arena table */
#include "verdict.h" /* case list, special values, per-element verdict: shared with host.cpp */
#include "kcall.h"   /* kcall_reg_name: the kernel program's call (kserve.c) names the register */

#if defined(__riscv_vector)
#include <riscv_vector.h>
#endif

void kope_icount_begin(int region);
void kope_icount_end(int region);

static const char *const op_names[H_OP_COUNT] = {H_OP_NAMES};

/* ------------------------------------------------------------ report --- */

static int g_report = -1; /* fd 3 from kope; closed in every kernel process */

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

/* What a kernel process says about its own end: a code from kproto.h in
 * the arena's status page. The judge turns it into a `fail` line with this
 * table's own text; a kernel process that forges it only chooses how it
 * fails. */
static const char *const k_reason[KS_COUNT][2] = {
    {"harness", "kernel process ended without a reason"},
    {"memory_limit", "kernel allocated past the cap"},
    {"out_of_bounds_write", "wrote past the end of the output"},
    {"crash", "read past the end of an input"},
    {"input_modified", "wrote into a read-only input"},
    {"crash", "segmentation fault in the kernel"},
    {"crash", "signal in the kernel"},
    {"stateful", "left the FP rounding mode changed"},
    {"harness", "fault in the harness's kernel process outside the call"},
    {"crash", "the kernel program could not map its operands (a constructor in the way?)"},
    {"stateful", "abi: left a callee-saved register changed:"}, /* + its name (kcall.h) */
};
static struct ks_status *g_kstat; /* in the arena: shared with every kernel process */
static int g_is_kernel_proc;      /* a baseline's forked process (trusted code) */
static volatile int g_in_kernel;  /* never set in the judge program: a fault in a
                                     baseline's process is the harness's */

static void kernel_fail(int code, int sig)
{
    if (g_kstat) {
        g_kstat->code = code;
        g_kstat->sig = sig;
    }
    _exit(H_EXIT_FAIL);
}

/* ------------------------------------------------------ guarded buffers --- */

enum { R_OUT_GUARD = KS_R_OUT_GUARD, R_IN_GUARD = KS_R_IN_GUARD, R_INPUT = KS_R_INPUT,
       R_OUTPUT = KS_R_OUTPUT, R_TABLE = KS_R_TABLE, R_STATUS = KS_R_STATUS };

struct region {
    unsigned char *lo, *hi;
    int kind;
};
#define MAX_REGIONS KS_MAX_REGIONS /* every case of a verify run is mapped at once */
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

/* ------------------------------------------------------ operand arena --- */

/* Every buffer a kernel process sees (inputs, outputs, their guard pages,
 * the verify sets, the status page) is carved out of one memfd mapped
 * MAP_SHARED at a fixed hint: the kernel program maps the same memfd at the
 * same addresses (kserve.c), so the h_args pointers of the layout table
 * (kproto.h, the arena's first pages) mean the same in both programs. A
 * bump allocator; operands_free rewinds it. The memfd is a file: RLIMIT_FSIZE
 * (set by kope) must allow H_ARENA_BYTES. */
#ifndef H_ARENA_BYTES
#define H_ARENA_BYTES ((size_t)1 << 30)
#endif
#define H_ARENA_HINT ((uintptr_t)0x200000000ull)
#ifndef H_KERNEL_FSIZE
#define H_KERNEL_FSIZE ((rlim_t)64 << 20) /* RLIMIT_FSIZE of a kernel process */
#endif
static unsigned char *g_arena;
static int g_arena_fd = -1;
static size_t g_arena_used, g_arena_floor; /* floor: the table and status pages */
static int g_regions_floor;
static struct ks_table *g_tab;

static void arena_init(void)
{
    g_arena_fd = (int)syscall(SYS_memfd_create, "kope-operands", MFD_CLOEXEC);
    if (g_arena_fd < 0 || ftruncate(g_arena_fd, (off_t)H_ARENA_BYTES) != 0)
        fail_exit("harness", 0, "cannot make the operand memfd (RLIMIT_FSIZE?)");
    void *m = mmap((void *)H_ARENA_HINT, H_ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                   g_arena_fd, 0);
    if (m == MAP_FAILED)
        fail_exit("harness", 0, "cannot map the operand arena (memory limit?)");
    g_arena = m;
    size_t tl = (sizeof(struct ks_table) + g_page - 1) / g_page * g_page;
    g_tab = (struct ks_table *)g_arena;
    g_kstat = (struct ks_status *)(g_arena + tl);
    region_add(g_arena, tl, R_TABLE);
    region_add(g_arena + tl, g_page, R_STATUS);
    g_arena_used = g_arena_floor = tl + g_page;
    g_regions_floor = g_n_regions;
}

/* pages bytes of the arena, or NULL when it is full */
static unsigned char *arena_take(size_t bytes)
{
    if (bytes > H_ARENA_BYTES - g_arena_used)
        return NULL;
    unsigned char *p = g_arena + g_arena_used;
    g_arena_used += bytes;
    return p;
}

/* Rewind to the table and status pages; the pages given back are made
 * readable and writable again and dropped (MADV_REMOVE; qemu-user ignores
 * it, which costs only memory: every buffer is filled or poisoned before a
 * call reads it) */
static void arena_rewind(void)
{
    if (g_arena_used > g_arena_floor) {
        mprotect(g_arena + g_arena_floor, g_arena_used - g_arena_floor, PROT_READ | PROT_WRITE);
        madvise(g_arena + g_arena_floor, g_arena_used - g_arena_floor, MADV_REMOVE);
    }
    g_arena_used = g_arena_floor;
    g_n_regions = g_regions_floor;
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
    /* shared: the judge fills inputs and reads outputs the kernel process
     * sees and writes (the judge never trusts them: master copy, reference) */
    b->map = arena_take(b->map_len);
    if (!b->map)
        return -1;
    if (mprotect(b->map + b->data_len, g_page, PROT_NONE))
        return -1;
    b->bytes = bytes;
    b->p = b->map + b->data_len - bytes;
    region_add(b->map + b->data_len, g_page, input ? R_IN_GUARD : R_OUT_GUARD);
    region_add(b->map, b->data_len, input ? R_INPUT : R_OUTPUT);
    return 0;
}

/* the arena is rewound as a whole (operands_free) */
static void gbuf_free(struct gbuf *b)
{
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
    if (!g_is_kernel_proc)
        fail_exit("harness", sig, "fault in the judge");
    if (!g_in_kernel)
        kernel_fail(KS_HARNESS, sig);
    for (int i = 0; i < g_n_regions; i++) {
        if (addr >= g_regions[i].lo && addr < g_regions[i].hi) {
            if (g_regions[i].kind == R_OUT_GUARD)
                kernel_fail(KS_OOB_WRITE, sig);
            if (g_regions[i].kind == R_IN_GUARD)
                kernel_fail(KS_READ_PAST, sig);
            if (g_regions[i].kind == R_INPUT && sig == SIGSEGV)
                kernel_fail(KS_INPUT_WRITE, sig);
        }
    }
    kernel_fail(sig == SIGSEGV ? KS_SEGV : KS_SIGNAL, sig);
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
    /* SIGABRT and SIGTRAP too: in the judge (PID 1 under qemu-user, see
     * main) an unhandled fatal signal would hang rather than end the run */
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ seccomp --- */

/* The kernel program's allow-list, installed natively in the forked child
 * just before it execs the kernel program (kproc_exec), so the static
 * loader, libc's start-up and whatever the candidate makes run before main
 * already run under it. Allowed: read on the command pipe only, write on
 * the answer pipe only, execveat only on KS_FD_PROG with AT_EMPTY_PATH (the
 * one exec: that descriptor is close-on-exec, and nothing that could make
 * another descriptor of that number - openat, dup*, fcntl, pipe, socket,
 * memfd_create - is allowed), tgkill only on the process itself (raise),
 * memory management, signals, exiting, the start-up calls of a static glibc
 * (set_tid_address, set_robust_list, rseq, prlimit64, getrandom, futex,
 * riscv_hwprobe), clocks, close, fstat. Everything else fails with EPERM
 * rather than killing the process: a libc that probes one more call
 * degrades instead of failing every candidate (its verdict is the same).
 * qemu-user refuses PR_SET_SECCOMP (it would filter qemu itself): under
 * emulation the kernel qemu runs under kope's runner filter and the
 * namespaces only. */
#if defined(__linux__) && defined(SECCOMP_MODE_FILTER) && \
    (defined(__riscv) || defined(__x86_64__) || defined(__aarch64__))
#define H_HAVE_SECCOMP 1
#if defined(__riscv)
#define H_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__x86_64__)
#define H_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#define H_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#endif

static int kernel_seccomp_install(pid_t self)
{
#ifdef H_HAVE_SECCOMP
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* syscall nr with argument i equal to v: allowed, else EPERM (5 slots) */
#define ALLOW_ARG(nr, i, v) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4), LD_ARG(i), \
                  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(v), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, H_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        LD_NR,
        /* execveat(KS_FD_PROG, "", argv, envp, AT_EMPTY_PATH) */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 6), LD_ARG(0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KS_FD_PROG, 0, 3), LD_ARG(4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        LD_NR, ALLOW_ARG(SYS_read, 0, KS_FD_CMD),
        LD_NR, ALLOW_ARG(SYS_write, 0, KS_FD_DONE),
        LD_NR, ALLOW_ARG(SYS_tgkill, 0, self),
        LD_NR,
        ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mprotect), ALLOW(SYS_brk),
        ALLOW(SYS_madvise), ALLOW(SYS_mremap), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
        ALLOW(SYS_rt_sigreturn), ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigaction),
        ALLOW(SYS_sigaltstack), ALLOW(SYS_set_tid_address), ALLOW(SYS_set_robust_list),
#ifdef SYS_rseq
        ALLOW(SYS_rseq),
#endif
#ifdef SYS_riscv_hwprobe
        ALLOW(SYS_riscv_hwprobe),
#endif
        ALLOW(SYS_prlimit64), ALLOW(SYS_getrandom), ALLOW(SYS_futex), ALLOW(SYS_clock_gettime),
        ALLOW(SYS_gettimeofday), ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_close),
#ifdef SYS_close_range
        ALLOW(SYS_close_range),
#endif
#ifdef SYS_arch_prctl
        ALLOW(SYS_arch_prctl), /* x86_64 only: glibc sets the TLS base with it */
#endif
        ALLOW(SYS_fstat), ALLOW(SYS_sched_yield),
#ifdef SYS_newfstatat
        ALLOW(SYS_newfstatat),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
#undef ALLOW
#undef ALLOW_ARG
#undef LD_ARG
#undef LD_NR
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
#else
    (void)self;
    return -1;
#endif
}

/* The label for the method line: what the kernel processes get. */
static const char *seccomp_probe(int emulated)
{
    if (emulated)
        return "unavailable(qemu-user: the kernel qemu runs under kope's runner filter)";
#ifdef H_HAVE_SECCOMP
    /* SECCOMP_GET_ACTION_AVAIL answers without installing anything */
    uint32_t act = SECCOMP_RET_ERRNO;
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
        return "on(allow-list before the exec, others EPERM)";
    return "unavailable(kernel without seccomp)";
#else
    return "unavailable(not built in)";
#endif
}

/* ------------------------------------------------------------- cycles --- */

/* Cycles through perf_event_open when the kernel allows it (user space
 * only); -1 otherwise (qemu-user, perf_event_paranoid, no PMU driver). */
static int g_perf_fd = -1;

static void perf_open(pid_t pid)
{
#if defined(__linux__) && defined(SYS_perf_event_open)
    if (g_perf_fd >= 0)
        close(g_perf_fd);
    g_perf_fd = -1;
    struct perf_event_attr pa;
    memset(&pa, 0, sizeof pa);
    pa.size = sizeof pa;
    pa.type = PERF_TYPE_HARDWARE;
    pa.config = PERF_COUNT_HW_CPU_CYCLES;
    pa.disabled = 1;
    pa.exclude_kernel = 1;
    pa.exclude_hv = 1;
    g_perf_fd = (int)syscall(SYS_perf_event_open, &pa, pid, -1, -1, 0);
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
/* A user's own op (op=user): its family comes as family=, row-wise as
 * rowwise=, its input range as lo= hi= (both 0: the default). */
static int g_user_rowwise;
static float g_user_lo, g_user_hi;

static int op_family(int op)
{
    if (op <= H_OP_CLAMP) return 0;
    if (op <= H_OP_RMSNORM) return 1;
    if (op <= H_OP_ARGMAX) return 2;
    return 3;
}

static int op_rowwise(int op)
{
    return op == H_OP_SOFTMAX || op == H_OP_LAYERNORM || op == H_OP_RMSNORM ||
           (op == H_OP_USER && g_user_rowwise);
}

static struct h_case g_cases[H_MAX_CASES];
static int g_n_cases;

static void case_add(const char *label, size_t n, size_t rows, size_t cols,
                     size_t m, size_t k, size_t batch)
{
    if (g_n_cases < H_MAX_CASES)
        h_case_set(&g_cases[g_n_cases++], label, n, rows, cols, m, k, batch);
}

/* Awkward cases for the op's shape kind (verdict.h). v1/v8: elements per
 * vector register at LMUL 1 and 8 (8 and 64 at VLEN 256). */
static void cases_awkward(size_t v1, size_t v8)
{
    h_cases_awkward(g_op, g_family, op_rowwise(g_op), v1, v8, g_cases, &g_n_cases, H_MAX_CASES);
}

/* -------------------------------------------------------------- operands --- */

/* The judge's view: g_in[] and g_out are MAP_SHARED (the kernel process
 * sees the same pages), g_master[] the judge's private copy of every input,
 * g_mref the h_args over the master copies, from which the reference is
 * computed. */
static struct gbuf g_in[4], g_out;
static float *g_master[4];
static struct h_args g_args;  /* over the shared buffers: what the kernel gets */
static struct h_args g_mref;  /* over the master copies: what the reference reads */
static double *g_ref;         /* mmap'd: unmapped before every fork */
static double *g_mag;         /* matmul special cases: sum |a||b| per output, after g_ref */
static int g_special;         /* the current operands hold special values */

/* Verification maps every case's operands before it forks the one kernel
 * process that runs them all (a fork per case costs more than the cases):
 * one set per case, swapped into the globals above by set_select. */
struct opset {
    struct gbuf in[4], out;
    float *master[4];
    struct h_args args, mref;
};
#define MAX_SETS 20
static struct opset g_sets[MAX_SETS];
static int g_n_sets;
static size_t g_ref_bytes;
static float g_params_alpha;

static size_t case_out_count(const struct h_case *c)
{
    switch (g_family) {
    case 0: return c->n;
    case 1: return c->rows * c->cols;
    case 2: return c->rows;
    default: return c->batch * c->m * c->n;
    }
}

/* The reference lives in its own mapping, dropped before any fork: a kernel
 * process must not find the answer of its own call in memory it inherited. */
static void ref_drop(void)
{
    if (g_ref)
        munmap(g_ref, g_ref_bytes);
    g_ref = NULL;
    g_mag = NULL;
}

static void ref_compute(void)
{
    ref_drop();
    size_t cnt = g_args.out_count ? g_args.out_count : 1;
    int mag = g_family == 3 && g_special;
    g_ref_bytes = cnt * sizeof(double) * (mag ? 2 : 1);
    void *m = mmap(NULL, g_ref_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        fail_exit("harness", 0, "cannot map the reference (memory limit?)");
    g_ref = m;
    h_ref_run(&g_mref, g_ref);
    if (mag) {
        /* the reference of |A| x |B|: the scale of the accumulation error */
        g_mag = g_ref + cnt;
        h_matmul_abs(&g_mref, g_mag);
    }
}

/* The reference of the current inputs, computed once per kernel process and
 * input fill: every fork (kproc_start), refill (operands_fill) and set
 * switch (set_select) drops it. Timed samples on unchanged inputs are checked
 * against the same one (under qemu a matmul's reference is most of a
 * check's cost). */
static void ref_ensure(void)
{
    if (!g_ref)
        ref_compute();
}

static void operands_free(void)
{
    for (int i = 0; i < 4; i++) {
        gbuf_free(&g_in[i]);
        free(g_master[i]);
        g_master[i] = NULL;
    }
    gbuf_free(&g_out);
    arena_rewind();
    ref_drop();
}

/* Copy the master inputs into the shared buffers the kernel reads. */
static void inputs_publish(void)
{
    for (int i = 0; i < 4; i++)
        if (g_in[i].p)
            memcpy(g_in[i].p, g_master[i], g_in[i].bytes);
}

/* Did the kernel process change a shared input (it can only if it undid
 * the read-only protection with a raw system call)? */
static int inputs_changed(void)
{
    for (int i = 0; i < 4; i++)
        if (g_in[i].p && memcmp(g_in[i].p, g_master[i], g_in[i].bytes) != 0)
            return 1;
    return 0;
}

/* Which verify case the next fill is for (its scalars, h_case_scalars):
 * 0 = the task case, and every measure fill. */
static int g_case_idx;

/* (Re)generate input values (master copies, then published) from the
 * current rng. */
static void operands_fill(const struct h_case *c, int variant)
{
    struct h_args *a = &g_args;
    ref_drop();
    g_special = c->special;
    if (g_family == 3) {
        fill(g_master[0], g_in[0].bytes / 4, -1, 1);
        fill(g_master[1], g_in[1].bytes / 4, -1, 1);
        if (c->special) /* verdict.h */
            h_matmul_specials(g_op, c->m, c->n, c->k, c->special, g_master[0], g_master[1]);
    } else {
        float lo = -4, hi = 4;
        if (g_op == H_OP_EXP || g_op == H_OP_SOFTMAX) { lo = -10; hi = 10; }
        if (c->shift != 0) { lo = c->shift - (g_op == H_OP_SOFTMAX ? 10 : 1); hi = c->shift + (g_op == H_OP_SOFTMAX ? 10 : 1); }
        if (g_family == 2 && (variant & 1)) { lo = -6; hi = -1; } /* all negative: max/argmax */
        if (g_op == H_OP_USER && g_user_hi > g_user_lo) { lo = g_user_lo; hi = g_user_hi; }
        size_t nx = g_in[0].bytes / 4;
        fill(g_master[0], nx, lo, hi);
        if (g_in[1].p)
            fill(g_master[1], g_in[1].bytes / 4, g_op == H_OP_USER ? lo : -4, g_op == H_OP_USER ? hi : 4);
        if (c->special) /* verdict.h: every 7th element, degenerate rows */
            h_fill_specials(g_op, g_family, op_rowwise(g_op), g_user_hi > g_user_lo,
                            g_op == H_OP_USER ? lo + 0.75f * (hi - lo) : 3.0f, g_master[0], nx,
                            c->rows, c->cols, g_in[1].p ? g_master[1] : NULL, g_in[1].bytes / 4);
        if (g_in[2].p) /* gamma of both signs and near zero: a kernel using |gamma| fails */
            fill(g_master[2], g_in[2].bytes / 4, -1.5f, 1.5f);
        if (g_in[3].p)
            fill(g_master[3], g_in[3].bytes / 4, -0.5f, 0.5f);
    }
    /* the scalars: the task case's defaults, or case g_case_idx's row of
     * the wide table (verdict.h), so a kernel ignoring one fails a case */
    h_case_scalars(g_case_idx, rng_f(-2, 2), &a->alpha, &a->lo, &a->hi, &a->eps);
    g_params_alpha = a->alpha;
    g_mref.alpha = a->alpha;
    g_mref.lo = a->lo;
    g_mref.hi = a->hi;
    g_mref.eps = a->eps;
    inputs_publish();
}

static void set_select(int i)
{
    struct opset *o = &g_sets[i];
    ref_drop();
    g_special = i < g_n_cases ? g_cases[i].special : 0;
    memcpy(g_in, o->in, sizeof g_in);
    g_out = o->out;
    memcpy(g_master, o->master, sizeof g_master);
    g_args = o->args;
    g_mref = o->mref;
}

static void set_save(int i)
{
    struct opset *o = &g_sets[i];
    memcpy(o->in, g_in, sizeof g_in);
    o->out = g_out;
    memcpy(o->master, g_master, sizeof g_master);
    o->args = g_args;
    o->mref = g_mref;
}

/* Map the operands of case c into the globals; keep_old: the previous
 * globals stay mapped (saved in a set) instead of being freed. */
static int operands_setup_k(const struct h_case *c, int keep_old);
static int operands_setup(const struct h_case *c) { return operands_setup_k(c, 0); }
static int operands_setup_k(const struct h_case *c, int keep_old)
{
    if (!keep_old)
        operands_free();
    else {
        memset(g_in, 0, sizeof g_in);
        memset(&g_out, 0, sizeof g_out);
        memset(g_master, 0, sizeof g_master);
        ref_drop();
    }
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
    for (int i = 0; i < 4; i++)
        if (g_in[i].p && !(g_master[i] = malloc(g_in[i].bytes ? g_in[i].bytes : 4)))
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
    g_mref = *a;
    if (g_family == 3) {
        g_mref.a = g_master[0];
        g_mref.b = g_master[1];
    } else {
        g_mref.x = g_master[0];
        g_mref.y = g_master[1];
        g_mref.gamma = g_master[2];
        g_mref.beta = g_master[3];
    }
    g_mref.out = NULL;
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

/* The candidate is not in this program: this function only names it (a
 * kproc whose fn is call_candidate is a kernel program, exec'd). It is
 * never called; if it were, that is the harness's own bug. */
static void call_candidate(void)
{
    fail_exit("harness", 0, "the candidate was called in the judge (it is not linked here)");
}

static void t_scalar(void) { kope_base_scalar(&g_args); }
static void t_autovec(void) { kope_base_autovec(&g_args); }
static void t_blas(void) { h_blas_run(&g_args); }
static void t_sleef_m1(void) { h_sleef_run_m1(&g_args); }
static void t_sleef_m2(void) { h_sleef_run_m2(&g_args); }

/* ----------------------------------------------------- kernel process --- */

/* One kernel process at a time. The candidate's is the KERNEL PROGRAM
 * (kserve.c + the candidate's object), started by kproc_exec: fork, fixed
 * descriptors, limits, natively the seccomp allow-list, exec. A baseline's
 * (trusted code, natively) is a plain fork of the judge serving the same
 * commands (kproc_main). Both serve CALL n (n calls), COUNT (one call
 * between the icount markers), SETS (one call on each verify operand set of
 * a mask, each with its own poisoned output, checked by the judge after the
 * command: one round trip instead of n), QUIT, answering one byte each. */
enum { CMD_CALL = KS_CMD_CALL, CMD_COUNT = KS_CMD_COUNT, CMD_SETS = KS_CMD_SETS, CMD_QUIT = KS_CMD_QUIT };

static int g_cur_set = -1; /* verify: the set the judge selected for the next command */

struct kproc {
    pid_t pid;
    int cmd_fd, done_fd;
    void (*fn)(void);
    int local; /* trusted baseline run in the judge itself (emulated: no fork) */
};

/* Stack below sp is where a kernel could keep a counter that survives calls
 * in one process: cleared before every command of the candidate's process
 * when timing is claimed (natively). Under emulation no time is claimed and
 * every call whose result or cost counts is checked (the counted one in a
 * fresh process), so the 256 KiB memset, ~1 ms per command under qemu, is
 * skipped there. kserve does it, told by the command's scrub field. */
static int g_scrub;

/* How the judge starts the kernel program (main's arguments, from kope):
 * natively by execveat on KJ_FD_PROG; under qemu-user (kr= given) by
 * exec'ing the host's emulator: g_krun is its argv prefix (qemu-riscv64
 * -cpu ...), g_kprog the kernel program's path, g_kplugin the icount
 * plugin's argument (measure runs), to which ",keyfd=7" is added. */
#define H_KRUN_MAX 16
static const char *g_krun[H_KRUN_MAX];
static int g_n_krun;
static const char *g_kprog, *g_kplugin;

static void kproc_main(struct kproc *k, int cmd_rd, int done_wr)
{
    g_is_kernel_proc = 1;
    close(g_report);
    g_report = -1;
    for (int i = 0; i < 4; i++)
        gbuf_protect(&g_in[i], 1);
    for (int s = 0; s < g_n_sets; s++)
        for (int i = 0; i < 4; i++)
            gbuf_protect(&g_sets[s].in[i], 1);
    for (;;) {
        struct ks_cmd m;
        ssize_t r = read(cmd_rd, &m, sizeof m);
        if (r != (ssize_t)sizeof m || m.kind == CMD_QUIT)
            _exit(0);
        if (m.set >= 0 && m.set < g_n_sets)
            g_args = g_sets[m.set].args;
        g_args.alpha = m.alpha;
        g_args.lo = m.lo;
        g_args.hi = m.hi;
        g_args.eps = m.eps;
        if (m.kind == CMD_COUNT) {
            kope_icount_begin(m.region);
            k->fn();
            kope_icount_end(m.region);
        } else if (m.kind == CMD_SETS) {
            for (int32_t i = 0; i < m.count && i < g_n_sets; i++) {
                if (!((uint32_t)m.region & (1u << i)))
                    continue;
                g_args = g_sets[i].args;
                k->fn();
            }
        } else {
            for (int32_t i = 0; i < m.count; i++)
                k->fn();
        }
        char b = 1;
        if (write(done_wr, &b, 1) != 1)
            _exit(0);
    }
}

/* The layout table kserve maps its operands from: every region of the
 * arena, the current operands and every verify set, written before each
 * exec (a kernel process that wrote the shared table changed only what its
 * own successors would have read). */
static void table_write(void)
{
    memset(g_tab, 0, sizeof *g_tab);
    g_tab->magic = KS_TABLE_MAGIC;
    g_tab->base = (uint64_t)(uintptr_t)g_arena;
    g_tab->used = g_arena_used;
    g_tab->status = (uint64_t)(uintptr_t)g_kstat;
    g_tab->family = g_family;
    for (int i = 0; i < g_n_regions; i++) {
        g_tab->region[i].addr = (uint64_t)(uintptr_t)g_regions[i].lo;
        g_tab->region[i].len = (uint64_t)(g_regions[i].hi - g_regions[i].lo);
        g_tab->region[i].kind = g_regions[i].kind;
    }
    g_tab->n_regions = g_n_regions;
    g_tab->cur = g_args;
    for (int i = 0; i < g_n_sets && i < KS_MAX_SETS; i++)
        g_tab->sets[i] = g_sets[i].args;
    g_tab->n_sets = g_n_sets;
}

/* Move each source descriptor to its kproto.h number and close every other
 * one: first all to high copies (a source may sit on a target number),
 * then into place, then everything from 8 up. */
static void kfds_place(const int src[5])
{
    int hi[5];
    for (int i = 0; i < 5; i++)
        hi[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD, 32) : -1;
    for (int i = 0; i < 5; i++) {
        if (hi[i] >= 0)
            dup2(hi[i], 3 + i);
        else
            close(3 + i);
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 8u, ~0u, 0u) == 0)
        return;
#endif
    for (int fd = 8; fd < 4096; fd++)
        close(fd);
}

static void kproc_key_hex(const unsigned char key[16], char out[33])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hx[key[i] >> 4];
        out[2 * i + 1] = hx[key[i] & 15];
    }
    out[32] = '\0';
}

/* In the forked child: never returns. */
static void kproc_exec(int cmd_rd, int done_wr, int key_rd)
{
    int native = g_n_krun == 0;
    int src[5] = {cmd_rd, done_wr, g_arena_fd, native ? KJ_FD_PROG : -1, key_rd};
    kfds_place(src);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* files: the 64 MiB a harness run had before the arena; the judge's own
     * limit is 1 GiB only because the arena is a memfd it sizes (mapping it
     * needs no file size) */
    struct rlimit fl = {H_KERNEL_FSIZE, H_KERNEL_FSIZE};
    setrlimit(RLIMIT_FSIZE, &fl);
    char *argv[] = {"kernel", NULL};
    char *envp[] = {NULL};
    if (native) {
        /* RLIMIT_AS: the allocation cap of last resort (a candidate can
         * replace any function of its own program, the malloc wrap too):
         * the operands, the program and its stack, the 64 MiB malloc cap */
        struct rlimit rl = {g_arena_used + ((size_t)512 << 20), g_arena_used + ((size_t)512 << 20)};
        setrlimit(RLIMIT_AS, &rl);
        fcntl(KS_FD_PROG, F_SETFD, FD_CLOEXEC);
        /* a kernel without seccomp: the method line says so (seccomp_probe) */
        (void)kernel_seccomp_install(getpid());
        syscall(SYS_execveat, KS_FD_PROG, "", argv, envp, AT_EMPTY_PATH);
        g_kstat->sig = -errno; /* why, for the judge's detail (the status page is shared) */
        _exit(127);
    }
    /* under qemu-user: the host's emulator with the same -cpu, the guest's
     * argv[0] "kernel" (-0), the plugin with this process's own key */
    char *qv[H_KRUN_MAX + 8];
    char plug[1200];
    int n = 0;
    for (int i = 0; i < g_n_krun; i++)
        qv[n++] = (char *)g_krun[i];
    qv[n++] = "-0";
    qv[n++] = "kernel";
    if (g_kplugin && key_rd >= 0) {
        snprintf(plug, sizeof plug, "%s,keyfd=%d", g_kplugin, KS_FD_KEY);
        qv[n++] = "-plugin";
        qv[n++] = plug;
    }
    qv[n++] = (char *)g_kprog;
    qv[n] = NULL;
    execve(qv[0], qv, envp);
    g_kstat->sig = -errno;
    _exit(127);
}

static void kproc_start_local(struct kproc *k, void (*fn)(void))
{
    memset(k, 0, sizeof *k);
    k->fn = fn;
    k->local = 1;
    k->pid = getpid();
}

static void kproc_start(struct kproc *k, void (*fn)(void))
{
    int c[2], d[2], key[2] = {-1, -1};
    unsigned char kb[16];
    int exec = fn == call_candidate;
    k->local = 0;
    ref_drop(); /* never in a kernel process's inherited memory */
    if (pipe2(c, O_CLOEXEC) || pipe2(d, O_CLOEXEC))
        fail_exit("harness", 0, "pipe");
    /* under qemu, a measure run: a fresh key for this kernel process's
     * plugin, on a pipe it reads before the guest's first instruction */
    if (exec && g_n_krun && g_kplugin) {
        if (getrandom(kb, sizeof kb, 0) != (ssize_t)sizeof kb || pipe2(key, O_CLOEXEC) ||
            write(key[1], kb, sizeof kb) != (ssize_t)sizeof kb)
            fail_exit("harness", 0, "cannot make the kernel process's icount key");
        close(key[1]);
    }
    g_kstat->code = KS_NONE;
    g_kstat->sig = 0;
    g_kstat->set = -1;
    g_kstat->ready = 0;
    k->fn = fn;
    if (exec)
        table_write();
    pid_t pid = fork();
    if (pid < 0)
        fail_exit("harness", 0, "cannot fork the kernel process");
    if (pid == 0) {
        if (exec)
            kproc_exec(c[0], d[1], key[0]);
        close(c[1]);
        close(d[0]);
        kproc_main(k, c[0], d[1]);
    }
    close(c[0]);
    close(d[1]);
    if (key[0] >= 0) {
        char hex[33];
        close(key[0]);
        kproc_key_hex(kb, hex);
        memset(kb, 0, sizeof kb);
        report("icount_key %ld %s\n", (long)pid, hex);
    }
    k->pid = pid;
    k->cmd_fd = c[1];
    k->done_fd = d[0];
}

/* After a kernel process has ended: as PID 1 of its PID namespace (kope's
 * isolated runs), the judge kills whatever that process started (a raw
 * clone that would outlive it, e.g. to rewrite the icount file after the
 * plugin appended to it) and reaps the orphans. kill(-1) from PID 1 reaches
 * every other process of the namespace and nothing outside it; outside a
 * namespace it would reach all of the user's processes, hence the test. */
static void kproc_sweep(void)
{
    if (getpid() != 1)
        return;
    kill(-1, SIGKILL);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* The kernel process ended during a command: report why (its status page
 * names a reason from the table; a signal or a plain exit is a crash). */
static void kproc_died(struct kproc *k)
{
    int st = 0;
    while (waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
        ;
    k->pid = -1;
    kproc_sweep();
    int code = g_kstat->code, sig = g_kstat->sig, set = g_kstat->set;
    /* which verify case: the judge's own choice, or during a SETS command
     * the kernel process's word (it only changes this text) */
    if (g_cur_set >= 0)
        set = g_cur_set;
    char d[160], where[64] = "";
    if (set >= 0 && set < g_n_sets && set < g_n_cases)
        snprintf(where, sizeof where, " (case %s)", g_cases[set].label);
    if (WIFEXITED(st) && WEXITSTATUS(st) == H_EXIT_FAIL && code > 0 && code < KS_COUNT) {
        snprintf(d, sizeof d, "%s%s%s%s", k_reason[code][1], code == KS_ABI ? " " : "",
                 code == KS_ABI ? kcall_reg_name(sig) : "", where);
        if (code == KS_ABI)
            sig = 0;
        fail_exit(k_reason[code][0], sig, d);
    }
    if (WIFSIGNALED(st)) {
        snprintf(d, sizeof d, "the kernel's process died of signal %d%s", WTERMSIG(st), where);
        fail_exit("crash", WTERMSIG(st), d);
    }
    /* 127: the exec failed (or the candidate's start-up said so: a crash
     * either way, never the judge's word) */
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !g_kstat->ready && g_kstat->sig < 0)
        snprintf(d, sizeof d, "the kernel program did not start: its exec failed: %s%s", strerror(-g_kstat->sig),
                 where);
    else if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !g_kstat->ready)
        snprintf(d, sizeof d, "the kernel program did not start (exit 127 before serving)%s", where);
    else
        snprintf(d, sizeof d, "the kernel's process exited during a call%s", where);
    fail_exit("crash", 0, d);
}

/* Send one command and wait for its answer; returns the judge's wall time
 * of the command in ns. */
static double now_ns(void);
static double kproc_cmd(struct kproc *k, int kind, int count, int region)
{
    struct ks_cmd m = {kind, count, region, g_cur_set, g_args.alpha, g_args.lo, g_args.hi, g_args.eps,
                       g_scrub, 0};
    if (k->local) {
        double t0 = now_ns();
        if (kind == CMD_COUNT) {
            kope_icount_begin(region);
            k->fn();
            kope_icount_end(region);
        } else {
            for (int32_t i = 0; i < count; i++)
                k->fn();
        }
        return now_ns() - t0;
    }
    double t0 = now_ns();
    if (write(k->cmd_fd, &m, sizeof m) != (ssize_t)sizeof m)
        kproc_died(k);
    char b;
    ssize_t r;
    while ((r = read(k->done_fd, &b, 1)) < 0 && errno == EINTR)
        ;
    double t1 = now_ns();
    if (r != 1)
        kproc_died(k);
    return t1 - t0;
}

static void kproc_stop(struct kproc *k)
{
    if (k->local || k->pid <= 0)
        return;
    struct ks_cmd m = {CMD_QUIT, 0, 0, -1, 0, 0, 0, 0, 0, 0};
    ssize_t w = write(k->cmd_fd, &m, sizeof m);
    (void)w;
    close(k->cmd_fd);
    close(k->done_fd);
    int st;
    while (waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
        ;
    k->pid = -1;
    kproc_sweep();
}

/* ---------------------------------------------------------------- check --- */

struct check {
    const char *reason;
    double max_abs, max_rel, norm;
    size_t first_bad;
};

/* The canary before the output (out_poison), 8 bytes at a time, the tail
 * byte by byte. */
static int canary_ok(void)
{
    size_t gap = (size_t)(g_out.p - g_out.map), i = 0;
    for (; i + 8 <= gap; i += 8) {
        uint64_t w;
        memcpy(&w, g_out.map + i, 8);
        if (w != 0xA5A5A5A5A5A5A5A5ull)
            return 0;
    }
    for (; i < gap; i++)
        if (g_out.map[i] != 0xA5)
            return 0;
    return 1;
}

static void check_output(double rtol, double atol, struct check *ck)
{
    const struct h_args *a = &g_args;
    memset(ck, 0, sizeof *ck);
    ck->reason = "none";
    int rank = 0; /* 3 unwritten, 2 nan_inf, 1 wrong */
    double se = 0, sr = 0;
    if (inputs_changed()) {
        ck->reason = "input_modified";
        return;
    }
    if (!canary_ok()) {
        ck->reason = "out_of_bounds_write";
        return;
    }
    /* matmul special cases: the accumulation's own error bound (verdict.h) */
    double mag_rtol = h_mag_rtol(rtol, a->k);
    uint32_t first_bits = 0;
    int constant = 1;
    double ref_lo = INFINITY, ref_hi = -INFINITY, ref_amax = 0;
    for (size_t i = 0; i < a->out_count; i++) {
        uint32_t bits;
        memcpy(&bits, g_out.p + 4 * i, 4);
        if (i == 0)
            first_bits = bits;
        else if (bits != first_bits)
            constant = 0;
        double ref = g_ref[i], got, err;
        int bad = 0;
        /* the common case first, with as few floating-point operations as
         * it takes (under qemu each is a softfloat call, and the judge checks
         * every timed sample): a finite output (exponent bits not all ones)
         * against a reference whose f32 value is finite (below FLT_MAX plus
         * half an ulp: NaN fails the test too). Same verdict (h_elem_verdict's
         * finite branch) and statistics as the general path below. */
        if (bits != H_FILL_BITS && g_op != H_OP_ARGMAX && ((bits >> 23) & 0xffu) != 0xffu &&
            fabs(ref) < 3.4028235677973366e38) {
            float f;
            memcpy(&f, &bits, 4);
            double aref = fabs(ref);
            err = fabs((double)f - ref);
            if (!(err <= atol + (g_mag ? mag_rtol * g_mag[i] : rtol * aref)))
                bad = 1;
            if (constant) { /* only a constant output needs the range */
                if (ref < ref_lo) ref_lo = ref;
                if (ref > ref_hi) ref_hi = ref;
                if (aref > ref_amax) ref_amax = aref;
            }
            if (err > ck->max_abs) ck->max_abs = err;
            double den = aref > 1e-30 ? aref : 1e-30;
            if (err > ck->max_rel * den) ck->max_rel = err / den;
            se += err * err;
            sr += ref * ref;
            if (bad > rank) {
                if (rank == 0)
                    ck->first_bad = i;
                rank = bad;
            }
            continue;
        }
        if (bits == H_FILL_BITS) {
            bad = 3;
            err = INFINITY;
        } else if (g_op == H_OP_ARGMAX) {
            int32_t idx;
            memcpy(&idx, &bits, 4);
            const float *row = g_mref.x + i * a->cols;
            got = idx;
            err = fabs(got - ref);
            if (!h_argmax_ok(idx, row, a->cols, ref))
                bad = 1;
            else
                err = 0; /* an equal maximum elsewhere is also right */
        } else {
            float f;
            memcpy(&f, &bits, 4);
            got = f;
            bad = h_elem_verdict(f, ref, atol + (g_mag ? mag_rtol * g_mag[i] : rtol * fabs(ref)), &err);
        }
        if (bad != 3 && g_op != H_OP_ARGMAX && !h_ref_is_special(ref)) {
            if (ref < ref_lo) ref_lo = ref;
            if (ref > ref_hi) ref_hi = ref;
            if (fabs(ref) > ref_amax) ref_amax = fabs(ref);
        }
        if (isfinite(err)) {
            if (err > ck->max_abs) ck->max_abs = err;
            double rel = err / (fabs(ref) > 1e-30 ? fabs(ref) : 1e-30);
            if (rel > ck->max_rel && isfinite(rel)) ck->max_rel = rel;
            se += err * err;
            if (isfinite(ref))
                sr += ref * ref;
        } else {
            ck->max_abs = ck->max_rel = INFINITY;
            se = INFINITY;
        }
        if (bad > rank) {
            if (rank == 0)
                ck->first_bad = i;
            rank = bad;
        }
    }
    ck->norm = sqrt(se) / (sqrt(sr) > 1e-30 ? sqrt(sr) : 1e-30);
    /* a constant output (all zeros, one repeated value) where the reference
     * varies is wrong however loose the tolerance is */
    if (rank == 0 && constant && h_constant_wrong(g_op, a->out_count, ref_lo, ref_hi, ref_amax, rtol, atol)) {
        rank = 1;
        ck->first_bad = 0;
    }
    if (rank == 3) ck->reason = "unwritten_output";
    else if (rank == 2) ck->reason = "nan_inf";
    else if (rank == 1) ck->reason = "wrong_result";
}

/* A failing case's line ends with the values at first_bad (hargs.h): what
 * the kernel wrote (its bits: a NaN's payload or the unwritten fill pattern
 * is the clue), the reference, and the input operand(s) at the same index
 * where the output index is an input index (elementwise and activations;
 * a reduction's or a matmul's output depends on a whole row or more). The
 * inputs come from the judge's master copy, never the kernel's view. */
static void report_case(const char *label, const struct h_case *c, const struct check *ck)
{
    int pass = strcmp(ck->reason, "none") == 0;
    char vals[160] = "";
    size_t i = ck->first_bad;
    if (!pass && g_ref && i < g_args.out_count && strcmp(ck->reason, "input_modified") != 0 &&
        strcmp(ck->reason, "out_of_bounds_write") != 0) {
        uint32_t bits;
        memcpy(&bits, g_out.p + 4 * i, 4);
        int o = snprintf(vals, sizeof vals, " got=0x%08x ref=%.9g", (unsigned)bits, g_ref[i]);
        if (g_family <= 1 && g_mref.x && o > 0 && (size_t)o < sizeof vals)
            o += snprintf(vals + o, sizeof vals - (size_t)o, " x=%.9g", (double)g_mref.x[i]);
        if (g_family == 0 && g_op != H_OP_SCALE && g_op != H_OP_CLAMP && g_mref.y && o > 0 &&
            (size_t)o < sizeof vals)
            snprintf(vals + o, sizeof vals - (size_t)o, " y=%.9g", (double)g_mref.y[i]);
    }
    report("case %s %zu %zu %zu %zu %zu %zu %d %s %.6g %.6g %.6g %zu%s\n", label, c->n,
           c->rows, c->cols, c->m, c->k, c->batch, pass, ck->reason, ck->max_abs, ck->max_rel,
           ck->norm, ck->first_bad, vals);
}

static double g_rtol, g_atol;

/* Poison, one call (or one counted call) in k, then reference and check,
 * with the inputs already in place. Returns 1 if it passed. */
static int checked_call(struct kproc *k, const char *label, const struct h_case *c, int counted,
                        int region)
{
    struct check ck;
    out_poison();
    kproc_cmd(k, counted ? CMD_COUNT : CMD_CALL, 1, region);
    /* the reference is computed now (or was, for these inputs, since this
     * kernel process was forked), from the judge's own copy of the inputs,
     * in memory no kernel process has ever seen */
    ref_ensure();
    check_output(g_rtol, g_atol, &ck);
    report_case(label, c, &ck);
    return strcmp(ck.reason, "none") == 0;
}

/* The output of the last call that passed check_output, with the inputs
 * it was checked on unchanged since: the judge's private copy. */
static unsigned char *g_good;
static size_t g_good_bytes;

static void good_save(void)
{
    size_t bytes = g_args.out_count * 4;
    if (bytes > g_good_bytes) {
        free(g_good);
        g_good = malloc(bytes);
        g_good_bytes = g_good ? bytes : 0;
    }
    if (g_good)
        memcpy(g_good, g_out.p, bytes);
}

/* A timed sample on the same inputs as the passing check before it: an
 * output bit for bit equal to the one that passed (inputs unchanged, canary
 * intact) gets the same verdict check_output would give, at the cost of a
 * memcmp (under qemu the full check of every sample was most of the judge's
 * work); anything else gets the full check. */
static void check_sample(double rtol, double atol, struct check *ck)
{
    size_t bytes = g_args.out_count * 4;
    if (g_good && bytes <= g_good_bytes && !inputs_changed() && canary_ok() &&
        memcmp(g_out.p, g_good, bytes) == 0) {
        memset(ck, 0, sizeof *ck);
        ck->reason = "none";
        return;
    }
    check_output(rtol, atol, ck);
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

/* Time fn by the judge's clock around each command: warm-up, calls per
 * sample calibrated so a sample is >= 1 ms (the command round trip,
 * measured empty in the same process, is taken off), samples until min_ms
 * of total time (and at least 6), first sample discarded; reports median,
 * min, (p90-p10)/median.
 *
 * The candidate runs in ONE kernel process, forked with fresh inputs in
 * place; its first command is the counted call (icount region 0): poisoned,
 * checked, and made before the candidate has run anything else in that
 * process, so nothing it could keep (stack below sp, memory found by
 * scanning, inputs it predicted) predates it - as in a fresh process, without
 * paying for one. Then every timed sample starts from a poisoned output and
 * is checked against the reference of the current inputs (computed after the
 * fork), and the inputs are reseeded in place and checked once more
 * (post-timing). A baseline is first checked on the task's inputs, then
 * timed and counted at the end; under emulation (quick) in the judge itself
 * (kproc_start_local), natively in a process of its own.
 * count_region < 0: no counted call. */
static int time_fn(const char *name, void (*fn)(void), int min_ms, int max_rep, int flags,
                   const struct h_case *c, int count_region)
{
    static double samples[MAX_SAMPLES];
    int quick = (flags & H_FLAG_QUICK) != 0, cand = fn == call_candidate;
    int again = cand && strcmp(name, "candidate") != 0; /* the A/A repeat: no second method line */
    g_scrub = cand && !quick;
    int warm = quick ? 1 : 2, number = 1, min_reps = quick ? 3 : 6;
    struct kproc k;
    if (!cand && quick)
        kproc_start_local(&k, fn);
    else
        kproc_start(&k, fn);
    if (cand) {
        perf_open(k.pid);
        if (count_region >= 0)
            report("icount_region %d %s %ld\n", count_region, name, (long)k.pid);
        /* the counted call (or, without one, the pre-timing check): the
         * reference of these inputs is computed after the fork */
        if (!checked_call(&k, count_region >= 0 ? "counted" : "pre-timing", c, count_region >= 0,
                          count_region >= 0 ? count_region : 0)) {
            kproc_stop(&k);
            return 0;
        }
        good_save(); /* the timed samples run on these inputs */
    } else {
        /* a baseline's cost counts only if it computes the task's op: one
         * call on the task's inputs, checked against the reference with the
         * candidate's tolerances; a wrong one is reported and not timed (no
         * time line, no icount region), so no ratio is made against it */
        struct check ck;
        out_poison();
        kproc_cmd(&k, CMD_CALL, 1, 0);
        ref_ensure();
        check_output(g_rtol, g_atol, &ck);
        if (strcmp(ck.reason, "none") != 0) {
            report("method checked %s=%s max_rel=%.3g: not timed\n", name, ck.reason, ck.max_rel);
            kproc_stop(&k);
            return 0;
        }
        report("method checked %s=ok\n", name);
    }
    /* quick: the checked (or counted) call just made is the warm-up */
    if (!quick)
        kproc_cmd(&k, CMD_CALL, warm, 0);
    double rt = 0; /* the empty command's round trip */
    if (!quick) {
        double r[5];
        for (int i = 0; i < 5; i++)
            r[i] = kproc_cmd(&k, CMD_CALL, 0, 0);
        qsort(r, 5, sizeof r[0], cmp_d);
        rt = r[2];
        for (;;) {
            double dt = kproc_cmd(&k, CMD_CALL, number, 0) - rt;
            if (dt >= 1e6 || number >= (1 << 20))
                break;
            number *= 2;
        }
    }
    if (max_rep > MAX_SAMPLES) max_rep = MAX_SAMPLES;
    if (quick) max_rep = min_reps;
    if (max_rep < min_reps) max_rep = min_reps;
    int reps = 0, ok = 1;
    double total = 0;
    int count_cycles = cand && g_perf_fd >= 0;
    uint64_t cyc_total = 0;
    char label[48];
    while (reps < max_rep && (reps < min_reps || total < min_ms * 1e6)) {
        if (flags & H_FLAG_FLUSH)
            flush_caches();
        if (cand)
            out_poison();
        if (count_cycles) {
            ioctl(g_perf_fd, PERF_EVENT_IOC_RESET, 0);
            ioctl(g_perf_fd, PERF_EVENT_IOC_ENABLE, 0);
        }
        double dt = kproc_cmd(&k, CMD_CALL, number, 0) - rt;
        if (count_cycles) {
            uint64_t cyc = 0;
            ioctl(g_perf_fd, PERF_EVENT_IOC_DISABLE, 0);
            if (read(g_perf_fd, &cyc, sizeof cyc) == (ssize_t)sizeof cyc)
                cyc_total += cyc;
        }
        if (dt < 0)
            dt = 0;
        total += dt;
        samples[reps++] = dt / number;
        if (cand) {
            struct check ck;
            check_sample(g_rtol, g_atol, &ck);
            if (strcmp(ck.reason, "none") != 0) {
                snprintf(label, sizeof label, "timed-%d", reps);
                report_case(label, c, &ck);
                ok = 0;
                break;
            }
        }
    }
    if (cand && ok) {
        if (!again)
            report("method every timed sample poisoned and checked (%d samples of %d calls)\n", reps,
                   number);
        /* same process, same buffers, new values: a kernel that kept state
         * across the timed calls fails here */
        g_rng ^= 0x5bd1e995u;
        operands_fill(c, 1);
        if (!checked_call(&k, "post-timing", c, 0, 0))
            ok = 0;
    }
    if (ok && !cand && count_region >= 0) {
        /* a baseline's counted call: trusted code, at the end of its timing */
        report("icount_region %d %s %ld\n", count_region, name, (long)k.pid);
        kproc_cmd(&k, CMD_COUNT, 1, count_region);
    }
    kproc_stop(&k);
    if (!ok)
        return 0;
    if (count_cycles && !again && reps * number > 0)
        report("cycles %llu\n", (unsigned long long)(cyc_total / ((uint64_t)reps * (uint64_t)number)));
    int kept = reps - 1;
    double *sm = samples + 1;
    qsort(sm, (size_t)kept, sizeof *sm, cmp_d);
    double med = kept % 2 ? sm[kept / 2] : 0.5 * (sm[kept / 2 - 1] + sm[kept / 2]);
    double p10 = sm[kept / 10], p90 = sm[(kept * 9) / 10 < kept ? (kept * 9) / 10 : kept - 1];
    report("time %s %.1f %.1f %.4f %d %d\n", name, med, sm[0], med > 0 ? (p90 - p10) / med : 0,
           kept * number, warm);
    return 1;
}

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

/* Fill the current set's output with finite values (the canary before it
 * as out_poison writes it): the prior-fill round. The same bits read as
 * int32 for argmax. */
static void out_prefill(void)
{
    out_poison();
    static const uint32_t pat[] = {0x3fc00000u /* 1.5 */, 0xc0f00000u /* -7.5 */, 0u, 0x449a5000u /* 1234.5 */};
    for (size_t i = 0; i < g_args.out_count; i++)
        memcpy(g_out.p + 4 * i, &pat[i % 4], 4);
}

/* Checked calls one verify process makes before the task case is run again
 * (reseeded in place): more than a per-process call counter could hide
 * behind (a kernel that misbehaves after its 1,000th call). */
#define H_CALLS_PER_PROCESS 1100
/* Only cases this small take part in the repeated rounds (elements of
 * output and of the largest input): under qemu each call is emulated. */
#define H_SMALL_CASE 2048
/* The prior-fill round leaves out a case above this much work (multiply-
 * adds, or elements of its largest operand): under qemu a second call of a
 * full-shape matmul task doubles the kernel's share of the verify run. */
#define H_PRIOR_FILL_WORK 2e6
/* recheck=1 (kope's verify at another VLEN, k3_vlen_recheck): round 1 of
 * every case only, the task case cut to this much work (batch, M or rows
 * halved first; N mod 256, K and cols, which decide the tails, kept). What
 * depends on the VLEN (strip-mining, tails, register-group sizes, vlenb)
 * shows there; the repeated rounds test state, which the run at the first
 * VLEN has, and more rows of the same length add nothing VLEN-specific. */
#define H_RECHECK_MAX_WORK 1e5
static int g_recheck;

/* Verify every case in one kernel process, forked once all the cases'
 * operands are mapped (and before any reference exists). Round 1: every
 * case, NaN-poisoned output, checked against its reference. Round 2 (the
 * cases that passed): the same inputs with the outputs prefilled with
 * finite values: the result must be bit for bit round 1's (a kernel that
 * accumulates into its output, or reads it, fails). Then rounds of the
 * small cases, poisoned, until the process has made H_CALLS_PER_PROCESS
 * checked calls (bit-equal to round 1, else the full check). Last, the task
 * case again with new values in the same buffers (a kernel that caches
 * fails). */
static void verify_all(uint64_t seed)
{
    g_n_sets = 0;
    for (int i = 0; i < g_n_cases && i < MAX_SETS; i++) {
        if (operands_setup_k(&g_cases[i], 1))
            fail_exit("harness", 0, "cannot map operand buffers (memory limit?)");
        g_rng = seed + 7919u * (uint64_t)i;
        if (!g_rng)
            g_rng = 1;
        g_case_idx = i;
        operands_fill(&g_cases[i], i);
        set_save(i);
        g_n_sets++;
    }
    g_case_idx = 0;
    struct kproc k;
    kproc_start(&k, call_candidate);
    /* every case's output poisoned, one call on each set in one command,
     * then each checked against its reference (computed now, after the
     * fork) */
    uint32_t all = g_n_sets >= 32 ? 0xffffffffu : (1u << g_n_sets) - 1;
    for (int i = 0; i < g_n_sets; i++) {
        set_select(i);
        out_poison();
    }
    g_cur_set = -1;
    kproc_cmd(&k, CMD_SETS, g_n_sets, (int)all);
    int calls = g_n_sets;
    int ok0 = 1;
    uint32_t passed = 0, small = 0;
    static unsigned char *round1[MAX_SETS];
    for (int i = 0; i < g_n_sets; i++) {
        struct check ck;
        set_select(i);
        ref_ensure();
        check_output(g_rtol, g_atol, &ck);
        report_case(g_cases[i].label, &g_cases[i], &ck);
        int ok = strcmp(ck.reason, "none") == 0;
        if (i == 0)
            ok0 = ok;
        /* the judge's copy of the passing output (memory of the judge only,
         * made after the fork) */
        size_t bytes = g_args.out_count * 4;
        size_t in_max = 0;
        for (int j = 0; j < 4; j++)
            if (g_in[j].bytes / 4 > in_max)
                in_max = g_in[j].bytes / 4;
        double work = g_family == 3 ? (double)g_args.batch * g_args.m * g_args.n * g_args.k
                                    : (double)(in_max > g_args.out_count ? in_max : g_args.out_count);
        if (ok && work > H_PRIOR_FILL_WORK) {
            ok = 0; /* passed, but too big for the repeated rounds */
            all &= ~(1u << i);
        }
        if (ok && (round1[i] = malloc(bytes ? bytes : 1))) {
            memcpy(round1[i], g_out.p, bytes);
            passed |= 1u << i;
            if (i > 0 && g_args.out_count <= H_SMALL_CASE && in_max <= H_SMALL_CASE)
                small |= 1u << i;
        }
    }
    /* round 2, then the small rounds; round tells which */
    char label[96];
    int bad = !ok0 || passed != all, round_bad = 0;
    for (int round = 2; !bad && passed && !g_recheck; round++) {
        uint32_t mask = round == 2 ? passed : small;
        if (round > 2 && (calls >= H_CALLS_PER_PROCESS || !mask))
            break;
        for (int i = 0; i < g_n_sets; i++)
            if (mask & (1u << i)) {
                set_select(i);
                if (round == 2)
                    out_prefill();
                else
                    out_poison();
            }
        kproc_cmd(&k, CMD_SETS, g_n_sets, (int)mask);
        for (int i = 0; i < g_n_sets && !bad; i++) {
            if (!(mask & (1u << i)))
                continue;
            calls++;
            set_select(i);
            size_t bytes = g_args.out_count * 4;
            if (!inputs_changed() && canary_ok() && memcmp(g_out.p, round1[i], bytes) == 0)
                continue;
            struct check ck;
            ref_ensure();
            check_output(g_rtol, g_atol, &ck);
            if (strcmp(ck.reason, "none") == 0) {
                /* right, yet not the bits the same inputs gave before */
                ck.reason = "wrong_result";
                for (size_t e = 0; e < g_args.out_count; e++)
                    if (memcmp(g_out.p + 4 * e, round1[i] + 4 * e, 4) != 0) {
                        ck.first_bad = e;
                        break;
                    }
            }
            if (round == 2)
                snprintf(label, sizeof label, "%s,prior-fill", g_cases[i].label);
            else
                snprintf(label, sizeof label, "%s,call-%d", g_cases[i].label, calls);
            report_case(label, &g_cases[i], &ck);
            bad = round_bad = 1;
        }
    }
    if (!bad && small)
        report("method %d checked calls in one verify process\n", calls);
    for (int i = 0; i < g_n_sets; i++) {
        free(round1[i]);
        round1[i] = NULL;
    }
    if (ok0 && !round_bad && !g_recheck) {
        /* the task case again with new values in the same buffers of the
         * same process: a kernel that caches fails here (a failure of the
         * repeated rounds above is the verdict already; a recheck at another
         * VLEN tests the VLEN, and this run tested state) */
        set_select(0);
        g_cur_set = 0;
        g_rng = (seed + 0) ^ 0x9e3779b97f4a7c15ull;
        operands_fill(&g_cases[0], 1);
        set_save(0);
        if (!checked_call(&k, "task-reseeded", &g_cases[0], 0, 0))
            report("fail stateful 0 result changed only when the inputs were reseeded in place\n");
    }
    g_cur_set = -1;
    kproc_stop(&k);
}

int main(int argc, char **argv)
{
    const char *mode = arg(argc, argv, "mode", "verify");
    const char *opname = arg(argc, argv, "op", "");
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    /* the report is fd 3, opened by kope on a file with no name left: the
     * kernel processes close it, and without a name they cannot reopen it */
    g_report = 3;
    if (fcntl(g_report, F_GETFD) < 0)
        return 2;
    fcntl(g_report, F_SETFD, FD_CLOEXEC);
    /* a dead kernel process must be an EPIPE, not the judge's end: under
     * qemu-user the judge is PID 1 of its namespace, and qemu "dies" of an
     * unhandled signal by sending it to itself and waiting, which PID 1
     * never receives */
    signal(SIGPIPE, SIG_IGN);
    /* not dumpable: a kernel process (same uid) cannot open /proc/<judge>/fd,
     * /proc/<judge>/mem or ptrace the judge */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* how to start the kernel program: natively on fd 5 (from kope, as is
     * fd 3); under qemu-user the emulator's argv prefix (kr=, one argument
     * each, in order), the program's path (kprog=) and, in measure runs,
     * the plugin's argument (kplugin=) */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "kr=", 3) == 0 && g_n_krun < H_KRUN_MAX)
            g_krun[g_n_krun++] = argv[i] + 3;
        else if (strncmp(argv[i], "kr=", 3) == 0)
            fail_exit("harness", 0, "too many kr= arguments");
    }
    g_kprog = arg(argc, argv, "kprog", NULL);
    g_kplugin = arg(argc, argv, "kplugin", NULL);
    if (g_n_krun ? !g_kprog || g_krun[0][0] != '/' : fcntl(KJ_FD_PROG, F_GETFD) < 0)
        fail_exit("harness", 0, "no kernel program (fd 5, or kr= and kprog=)");
    if (g_n_krun == 0)
        fcntl(KJ_FD_PROG, F_SETFD, FD_CLOEXEC);
    arena_init();
    g_op = -1;
    for (int i = 0; i < H_OP_COUNT; i++)
        if (strcmp(op_names[i], opname) == 0)
            g_op = i;
    if (strcmp(opname, "user") == 0) {
        g_op = H_OP_USER;
        g_family = atoi(arg(argc, argv, "family", "-1"));
        g_user_rowwise = atoi(arg(argc, argv, "rowwise", "0")) == 1;
        g_user_lo = strtof(arg(argc, argv, "lo", "0"), NULL);
        g_user_hi = strtof(arg(argc, argv, "hi", "0"), NULL);
        if (g_family < 0 || g_family > 3)
            fail_exit("harness", 0, "user op without a family");
    } else if (g_op >= 0) {
        g_family = op_family(g_op);
    }
    if (g_op < 0)
        fail_exit("harness", 0, "unknown op");
    g_rtol = strtod(arg(argc, argv, "rtol", "1e-4"), NULL);
    g_atol = strtod(arg(argc, argv, "atol", "1e-5"), NULL);
    uint64_t seed = strtoull(arg(argc, argv, "seed", "12345"), NULL, 10);
    int flags = atoi(arg(argc, argv, "flags", "0"));
    int min_ms = atoi(arg(argc, argv, "min_ms", "200"));
    int max_rep = atoi(arg(argc, argv, "max_rep", "1000"));
    double max_work = strtod(arg(argc, argv, "max_work", "0"), NULL);
    /* verify: the seed of the drawn sizes (verdict.h, h_cases_drawn; 0 = none),
     * and recheck=1 for kope's re-run at another VLEN (round 1 only) */
    uint64_t size_seed = strtoull(arg(argc, argv, "size_seed", "0"), NULL, 10);
    g_recheck = atoi(arg(argc, argv, "recheck", "0")) == 1;
    if (g_recheck && (max_work <= 0 || max_work > H_RECHECK_MAX_WORK))
        max_work = H_RECHECK_MAX_WORK;
    faults_install();

    /* the task's own shape, scaled down only when the caller caps the work
     * (under emulation): batch, M or rows are halved first, then N keeping
     * N mod 256; K and cols, which decide the inner tails, are kept. */
    struct h_case task;
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
            /* figures (icount included) are then for this shape, and say so;
             * in verify mode the outcome is "verified at reduced shape" */
            report("method shape-scaled-to batch=%zu m=%zu n=%zu k=%zu rows=%zu cols=%zu "
                   "(emulation work cap %.0f)\n", task.batch, task.m, task.n, task.k, task.rows,
                   task.cols, max_work);
            if (strcmp(mode, "verify") == 0)
                report("reduced_shape\n");
        }
    }

    size_t v1 = 8, v8 = 64;
#if defined(__riscv_vector)
    v1 = __riscv_vsetvlmax_e32m1();
    v8 = __riscv_vsetvlmax_e32m8();
#endif
    report("method vl_e32m1=%zu vl_e32m8=%zu\n", v1, v8);
    report("method verdict in the judge program; the candidate only in the kernel program "
           "(exec'd: argv {kernel}, empty environment, fixed descriptors)\n");
    /* kernel processes run with seccomp natively; said early, since kope
     * cuts the method lines from the end to fit its record */
    report("method seccomp(kernel process)=%s\n", seccomp_probe(g_n_krun > 0));

    if (strcmp(mode, "verify") == 0) {
        case_add(task.label, task.n, task.rows, task.cols, task.m, task.k, task.batch);
        cases_awkward(v1, v8);
        h_cases_drawn(g_op, g_family, op_rowwise(g_op), size_seed, g_cases, &g_n_cases, H_MAX_CASES);
        verify_all(seed);
        report("done\n");
        return 0;
    }

    /* measure: check with fresh inputs, time (every sample checked), check
     * again with inputs reseeded in place, then the counted calls */
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
    if (flags & H_FLAG_QUICK)
        report("method timer=CLOCK_MONOTONIC_RAW (judge) quick: warmup=1 samples=3 (emulated: time is not claimed)\n");
    else
        report("method timer=CLOCK_MONOTONIC_RAW (judge, round trip taken off) warmup=2 samples>=1ms "
               "min_ms=%d max_rep=%d first-discarded flush=%d\n", min_ms, max_rep,
               (flags & H_FLAG_FLUSH) != 0);
    if (operands_setup(&task))
        fail_exit("harness", 0, "cannot map operand buffers (memory limit?)");
    g_rng = seed * 31 + 5;
    operands_fill(&task, 0);
    /* the candidate, in one kernel process: the counted call first (fresh
     * inputs, checked), timed with every sample checked, reseeded in place
     * and checked ("post-timing") */
    if (!time_fn("candidate", call_candidate, min_ms, max_rep, flags, &task, 0)) {
        report("done\n");
        return 0;
    }
    report("method cycles=%s\n", g_perf_fd >= 0 ? "perf_event_open(user, kernel process)" : "unavailable");
    /* Under emulation the baselines are counted in the judge itself, and a
     * process forked after that inherits the plugin's counts of them (a
     * second block of the judge's regions under a pid it never named, which
     * kope refuses as a forgery): so there the A/A repeat is forked before
     * the baselines. Natively every baseline has its own process and the
     * repeat comes after them (below), seeing what they left in the caches. */
    if ((flags & H_FLAG_AA) && (flags & H_FLAG_QUICK))
        time_fn("candidate-aa", call_candidate, min_ms, max_rep, flags, &task, -1);
    if (flags & H_FLAG_QUICK)
        report("method baselines run in the judge (trusted code; emulated: no time claimed)\n");
    /* the baselines, each checked, timed and counted: icount regions number
     * the time lines, the candidate is 0 */
    void (*bfn[5])(void) = {t_scalar, t_autovec, t_blas, t_sleef_m1, t_sleef_m2};
    const char *bname[5] = {"scalar-O2", "autovec-O3", "openblas", "sleef-m1", "sleef-m2"};
    int n_timed = 1;
    if (!(flags & H_FLAG_NO_BASELINES)) {
        for (int b = 0; b < 5; b++) {
            if (b == 2 && !h_blas_available(g_op)) {
                if (g_family == 3)
                    report("method openblas=not used (not linked, or built for a wider VLEN than %zu)\n",
                           v1 * 32);
                continue;
            }
            if (b >= 3 && !h_sleef_available(g_op))
                continue;
            if (time_fn(bname[b], bfn[b], min_ms, max_rep, flags, &task, n_timed))
                n_timed++;
        }
    }
    /* A/A: the same candidate timed again the same way, in a fresh kernel
     * process after the baselines (so it sees what they left in the caches
     * and the clock); the host turns the gap of the two medians into the
     * task's noise floor. Last, so the icount regions still number the
     * time lines before it. */
    if ((flags & H_FLAG_AA) && !(flags & H_FLAG_QUICK))
        time_fn("candidate-aa", call_candidate, min_ms, max_rep, flags, &task, -1);
    report("done\n");
    return 0;
}

/*
 * kserve.c - the K3 kernel program: this file linked with the candidate's
 * object (kope_kernel) and nothing else of kope's. The judge (harness.c, a
 * different program with no candidate code in it) starts it by fork + exec
 * with a neutral argv ({"kernel", NULL}), an empty environment and only the
 * descriptors of kproto.h; natively the seccomp allow-list is installed by
 * the judge before the exec, so whatever the candidate makes run before main
 * (constructors, ifunc resolvers, a libc function it overrides) already runs
 * under it.
 *
 * Nothing of value is here: no report channel, no reference, no master copy
 * of an input, no counter output, no key. kserve maps the judge's operand
 * arena (a memfd) at the judge's own addresses, so the h_args pointers of
 * the layout table mean the same in both programs: inputs read-only, the
 * guard pages after every buffer PROT_NONE, outputs and the status page
 * writable. Then it serves the judge's commands (kproto.h) and answers one
 * byte each. A candidate that undoes a protection with a raw mprotect can
 * only change its inputs (the judge compares them with its master copy) or
 * its status page (which only chooses how it fails).
 *
 * Kept here because only the candidate's process needs them: the fault
 * classification by address (a SIGSEGV handler on its own stack), the
 * allocation count (-Wl,--wrap=malloc,calloc,realloc, stopped at a cap), the
 * FP rounding-mode check after every call, the stack scrub, and the icount
 * markers around the counted call.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel_abi.h"
#include "kproto.h"
#include "kcall.h" /* kcall_family: the trampoline every call goes through (kcall.S) */

void kope_kernel(void); /* real signature depends on the family; cast at call */
void kope_icount_begin(int region);
void kope_icount_end(int region);

static struct ks_table g_tab;     /* a private copy: the kernel cannot change it for us */
static struct ks_status *g_stat;  /* in the arena, shared with the judge */
static volatile int g_in_kernel;
static struct h_args g_args;
static int g_family;              /* from the table: the call's signature */

static void kernel_fail(int code, int sig)
{
    if (g_stat) {
        g_stat->code = code;
        g_stat->sig = sig;
    }
    _exit(H_EXIT_FAIL);
}

/* ---------------------------------------------- memory wrap (in kernel) --- */

static size_t g_kernel_alloc;
#ifndef KS_KERNEL_ALLOC_CAP
#define KS_KERNEL_ALLOC_CAP ((size_t)64 << 20)
#endif

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

/* A kernel can override these in its own program (it is its program): the
 * count is a courtesy; RLIMIT_AS, set by the judge before the exec, is the
 * cap of last resort. */
static void kernel_alloc_note(size_t n)
{
    if (!g_in_kernel)
        return;
    g_kernel_alloc += n;
    if (n > KS_KERNEL_ALLOC_CAP || g_kernel_alloc > KS_KERNEL_ALLOC_CAP)
        kernel_fail(KS_MEMORY, 0);
}

void *__wrap_malloc(size_t n) { kernel_alloc_note(n); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m)
{
    kernel_alloc_note(m && n > (size_t)-1 / m ? (size_t)-1 : n * m);
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) { kernel_alloc_note(n); return __real_realloc(p, n); }

/* -------------------------------------------------------------- faults --- */

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;
    if (!g_in_kernel)
        kernel_fail(KS_HARNESS, sig);
    for (int i = 0; i < g_tab.n_regions && i < KS_MAX_REGIONS; i++) {
        const struct ks_region *r = &g_tab.region[i];
        if (addr < r->addr || addr - r->addr >= r->len)
            continue;
        if (r->kind == KS_R_OUT_GUARD)
            kernel_fail(KS_OOB_WRITE, sig);
        if (r->kind == KS_R_IN_GUARD)
            kernel_fail(KS_READ_PAST, sig);
        if (r->kind == KS_R_INPUT && sig == SIGSEGV)
            kernel_fail(KS_INPUT_WRITE, sig);
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
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ operands --- */

/* Map the judge's arena at the judge's addresses: the table first (read
 * anywhere, to learn where), then the whole used range PROT_NONE with
 * MAP_FIXED_NOREPLACE (a candidate's constructor holding one of those pages
 * makes this fail: it then fails itself), then each region's protection. */
static int arena_map(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t tl = ((sizeof g_tab + (size_t)pg - 1) / (size_t)pg) * (size_t)pg;
    void *t = mmap(NULL, tl, PROT_READ, MAP_SHARED, KS_FD_ARENA, 0);
    if (t == MAP_FAILED)
        return -1;
    memcpy(&g_tab, t, sizeof g_tab);
    munmap(t, tl);
    if (g_tab.magic != KS_TABLE_MAGIC || g_tab.n_regions < 0 || g_tab.n_regions > KS_MAX_REGIONS ||
        g_tab.n_sets < 0 || g_tab.n_sets > KS_MAX_SETS || g_tab.used < tl ||
        g_tab.base % (uint64_t)pg || g_tab.used % (uint64_t)pg)
        return -1;
    void *want = (void *)(uintptr_t)g_tab.base;
    void *m = mmap(want, g_tab.used, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE, KS_FD_ARENA, 0);
    if (m == MAP_FAILED)
        return -1;
    if (m != want) { /* a kernel (or emulator) that took the hint as a hint */
        munmap(m, g_tab.used);
        return -1;
    }
    for (int i = 0; i < g_tab.n_regions; i++) {
        const struct ks_region *r = &g_tab.region[i];
        int prot = r->kind == KS_R_TABLE || r->kind == KS_R_INPUT ? PROT_READ
                   : r->kind == KS_R_OUTPUT || r->kind == KS_R_STATUS ? PROT_READ | PROT_WRITE
                                                                       : PROT_NONE;
        if (r->addr < g_tab.base || r->len > g_tab.used || r->addr - g_tab.base > g_tab.used - r->len)
            return -1;
        if (prot != PROT_NONE && mprotect((void *)(uintptr_t)r->addr, r->len, prot) != 0)
            return -1;
        if (r->kind == KS_R_STATUS && r->addr == g_tab.status)
            g_stat = (struct ks_status *)(uintptr_t)r->addr;
    }
    return g_stat ? 0 : -1;
}

/* ------------------------------------------------------------- calling --- */

/* The FP rounding mode is thread state the psABI preserves across calls:
 * left changed, it is blamed (KS_FRM). vxrm is not preserved and is reset. */
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

/* KS_CMD_COUNT: the icount region, which kcall.S marks right around the
 * kernel (-1: not a counted call) */
static int g_count_region = -1;

static void call_candidate(void)
{
    unsigned long frm0 = frm_read();
    struct h_args *a = &g_args;
    struct kope_scalars s = {.alpha = a->alpha, .lo = a->lo, .hi = a->hi, .eps = a->eps};
    g_in_kernel = 1;
    /* kcall.S: fcsr, vxrm/vxsat, v0-v31 and vtype reset before the call,
     * s0-s11, fs0-fs11, sp, gp, tp checked after it (kcall.h); off riscv64
     * (the host build of tests/test_k3_split.c) a plain call */
    int reg = kcall_family(kope_kernel, g_family, a, &s, g_count_region);
    g_in_kernel = 0;
    unsigned long frm1 = frm_read();
    csr_restore(frm0);
    if (reg != KCALL_OK)
        kernel_fail(KS_ABI, reg);
    if (frm1 != (KCALL_CHECKED ? 0 : frm0)) /* kcall.S starts every call at frm 0 */
        kernel_fail(KS_FRM, 0);
}

__attribute__((noinline)) void kope_icount_begin(int region)
{
    __asm__ volatile("" : : "r"(region) : "memory");
}

__attribute__((noinline)) void kope_icount_end(int region)
{
    __asm__ volatile("" : : "r"(region) : "memory");
}

/* Stack below sp is where a kernel could keep a counter across calls. */
static __attribute__((noinline)) void stack_scrub(void)
{
    volatile unsigned char pad[256 * 1024];
    memset((void *)pad, 0, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

static void args_take(const struct ks_cmd *m, const struct h_args *from)
{
    g_args = *from;
    g_args.alpha = m->alpha;
    g_args.lo = m->lo;
    g_args.hi = m->hi;
    g_args.eps = m->eps;
}

/* The command loop. The counted call is made through k->fn, as the judge
 * made it when the kernel was linked into it: the instructions between the
 * icount markers are the same, so a kernel's count does not change with
 * the split. */
struct kserve {
    void (*fn)(void);
};

static void serve(struct kserve *k)
{
    for (;;) {
        struct ks_cmd m;
        ssize_t r = read(KS_FD_CMD, &m, sizeof m);
        if (r != (ssize_t)sizeof m || m.kind == KS_CMD_QUIT)
            _exit(0);
        if (m.scrub)
            stack_scrub();
        args_take(&m, m.set >= 0 && m.set < g_tab.n_sets ? &g_tab.sets[m.set] : &g_tab.cur);
        if (m.kind == KS_CMD_COUNT) {
            g_count_region = m.region; /* kcall.S marks the kernel alone */
            k->fn();
            g_count_region = -1;
        } else if (m.kind == KS_CMD_SETS) {
            for (int32_t i = 0; i < m.count && i < g_tab.n_sets; i++) {
                if (!((uint32_t)m.region & (1u << i)))
                    continue;
                g_stat->set = i;
                if (m.scrub)
                    stack_scrub();
                /* with the scalars of that set's own fill */
                g_args = g_tab.sets[i];
                k->fn();
            }
            g_stat->set = -1;
        } else {
            for (int32_t i = 0; i < m.count; i++)
                k->fn();
        }
        char b = 1;
        if (write(KS_FD_DONE, &b, 1) != 1)
            _exit(0);
    }
}

int main(void)
{
    static struct kserve k = {call_candidate};
    faults_install();
    if (arena_map() != 0)
        kernel_fail(KS_SETUP, 0);
    /* the arena's memfd, and any descriptor above the answer pipe the judge
     * failed to close. Through libc's generic syscall(): the program holds
     * one either way for a candidate that looks for it (every layer around
     * the kernel process assumes it can make any system call), and
     * tests/test_k3_hostile.c's raw-system-call kernels find it */
    if (syscall(SYS_close_range, (unsigned)KS_FD_ARENA, ~0u, 0u) != 0)
        close(KS_FD_ARENA);
    g_family = g_tab.family;
    g_stat->ready = 1;
    /* through a volatile pointer: the compiler must not see that k.fn is
     * call_candidate and turn the load + indirect call into a direct one
     * (one instruction fewer between the markers than the judge made) */
    struct kserve *volatile kp = &k;
    serve(kp);
    return 0;
}

/*
 * platform/k3/k3.c - the K3 target (RISC-V RVV, VLEN 256): toolchain
 * selection, compile, verify and measure, as struct platform_ops plat_k3_ops.
 *
 * Toolchain: on a riscv64 host the native compiler ("cc", else "clang") is
 * used if it compiles an RVV intrinsic test, and candidates run directly.
 * Anywhere else: clang-19 cross-compiles for rv64gcv_zba_zbb_zbs and
 * qemu-riscv64 (VLEN 256) runs the result; every result is then labelled
 * emulated and times are never claimed as speed. Compiler, flags and runner
 * come from the settings (config platform.k3.cc / cflags / runner).
 *
 * Build layout (work dir, one per open platform):
 *   rt/          harness sources written from the embedded table, and their
 *                objects, compiled once: harness.o ref.o blas.o, plus
 *                base_{scalar,autovec}_OP.o per op on first use
 *   c<id>/       one candidate: cand.c, cand.o, harness program, reports
 * Per candidate only cand.c is compiled and the program linked.
 *
 * The harness protocol is in embed/harness.h. Every run goes through
 * proc_run (platform/proc.c) with limits; harness runs are isolated
 * (PROC_ISOLATE: namespaces, a minimal read-only filesystem where only c<id>/
 * is writable, seccomp on the runner). The report comes back on the child's
 * fd 3, a file kope unlinks before the run starts: no process of the run can
 * open it by name. The icount comes only from the plugin's own file, one
 * block per kernel process, checked against the counted calls the harness's
 * judge says it made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "platform/embed.h"
#include "platform/hostcheck.h"
#include "platform/k3/k3.h"
#include "platform/k3/k3_icount.h"
#include "platform/report.h"
#define KOPE_HARNESS_HOST_ONLY
#include "platform/k3/embed/harness.h"

_Static_assert((int)H_OP_COUNT == (int)PLAT_OP_COUNT, "harness op list must match enum plat_op");
_Static_assert((int)H_OP_GEMV == (int)PLAT_OP_GEMV && (int)H_OP_SOFTMAX == (int)PLAT_OP_SOFTMAX,
               "harness op order must match enum plat_op");

#define K3_CROSS_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
#define K3_NATIVE_MARCH "-march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
#define K3_QEMU "qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true"

/* Defaults; all overridable through struct plat_settings. */
#define K3_TIMEOUT_MS_NATIVE 30000
#define K3_TIMEOUT_MS_EMULATED 60000
#define K3_COMPILE_TIMEOUT_MS 60000
#define K3_MEM_LIMIT ((uint64_t)4 << 30)
#define K3_OUTPUT_CAP ((uint64_t)1 << 20)
#define K3_MIN_REPEAT_MS_NATIVE 200
#define K3_MIN_REPEAT_MS_EMULATED 20
/* Under qemu, the task case of matmul and row-wise ops is cut (batch, M or
 * rows halved, then N keeping N mod 256; K and cols kept) to this many
 * multiply-adds or elements: qemu runs vector code ~100x slower than a board. */
#define K3_MAX_WORK_EMULATED 2e6
/* Verification under qemu runs the task case up to this much work (every
 * vector, row-wise and reduction task of the built-in suite and most GEMVs
 * at their full shape: a few seconds); above it the case is cut the same way
 * and the outcome says "verified at reduced shape". */
#define K3_MAX_WORK_VERIFY_EMULATED 1.7e7
#define K3_REPORT_MAX (256u << 10)

static const char *const rt_files[] = {"harness.c", "harness.h", "ref.c", "base.c", "blas.c"};

/* ------------------------------------------------------------- helpers --- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int set_err(struct platform *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_err(struct platform *p, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    p->rc = rc;
    return rc;
}

static int file_write(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    int rc = (w == len) ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Is argv[0] of cmd an executable in PATH (or a path)? */
static int cmd_found(const char *cmd)
{
    char first[256];
    size_t n = strcspn(cmd, " \t");
    if (n == 0 || n >= sizeof first)
        return 0;
    memcpy(first, cmd, n);
    first[n] = '\0';
    if (strchr(first, '/'))
        return access(first, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char dir[1024];
    while (*path) {
        size_t dl = strcspn(path, ":");
        if (dl && dl + n + 2 < sizeof dir) {
            memcpy(dir, path, dl);
            dir[dl] = '/';
            memcpy(dir + dl + 1, first, n + 1);
            if (access(dir, X_OK) == 0)
                return 1;
        }
        path += dl;
        if (*path == ':')
            path++;
    }
    return 0;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    char sub[K3_PATH_MAX + 256];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

/* ----------------------------------------------------- running commands --- */

#define MAX_ARGS 96

struct cmd {
    char *argv[MAX_ARGS];
    int argc;
    char words[4][K3_CMD_MAX * 2]; /* storage for split command strings */
    int n_words;
    char extra[48][K3_PATH_MAX];   /* storage for formatted arguments */
    int n_extra;
    int overflow;
};

static void cmd_init(struct cmd *c)
{
    c->argc = 0;
    c->n_words = 0;
    c->n_extra = 0;
    c->overflow = 0;
    c->argv[0] = NULL;
}

static void cmd_split(struct cmd *c, const char *s)
{
    if (!s || !*s)
        return;
    if (c->n_words >= 4 ||
        proc_argv_split(s, c->words[c->n_words], sizeof c->words[0], c->argv, &c->argc, MAX_ARGS))
        c->overflow = 1;
    c->n_words++;
}

static void cmd_arg(struct cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_arg(struct cmd *c, const char *fmt, ...)
{
    if (c->n_extra >= 48 || c->argc + 1 >= MAX_ARGS) {
        c->overflow = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->extra[c->n_extra], K3_PATH_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= K3_PATH_MAX)
        c->overflow = 1;
    c->argv[c->argc++] = c->extra[c->n_extra++];
    c->argv[c->argc] = NULL;
}

/* Run a compiler command; diagnostics (capped) into diag. Returns 0 when the
 * compiler ran (res says how it ended), PLAT_ERR_* otherwise. */
static int run_tool(struct platform *p, struct cmd *c, char *diag, size_t diag_len,
                    struct proc_result *res)
{
    if (c->overflow)
        return set_err(p, PLAT_ERR_INTERNAL, "command line too long");
    int timeout = p->set.compile_timeout_ms > 0 ? p->set.compile_timeout_ms : K3_COMPILE_TIMEOUT_MS;
    struct proc_spec r = {
        .argv = c->argv, .cwd = NULL, .timeout_ms = timeout, .cpu_s = timeout / 1000 + 1,
        .mem_bytes = (uint64_t)4 << 30, .fsize_bytes = (uint64_t)256 << 20,
        .output_cap = (uint64_t)1 << 20, .out = diag, .out_len = diag_len,
    };
    return proc_run(&r, res, p->err, sizeof p->err);
}

static int tool_ok(const struct proc_result *res)
{
    return res->exited && res->exit_code == 0 && !res->timed_out && !res->flooded;
}

/* ------------------------------------------------------ toolchain probe --- */

/* Compile and (natively) run a tiny RVV intrinsic program. */
static int toolchain_check(struct platform *p, struct k3 *k)
{
    char dir[256], src[K3_PATH_MAX + 64], exe[K3_PATH_MAX + 64];
    char diag[1024];
    snprintf(dir, sizeof dir, "%s/rt", k->work);
    snprintf(src, sizeof src, "%s/rvv_check.c", dir);
    snprintf(exe, sizeof exe, "%s/rvv_check", dir);
    static const char prog[] =
        "#include <riscv_vector.h>\n"
        "int main(void) { size_t vl = __riscv_vsetvlmax_e32m1();\n"
        "  vfloat32m1_t v = __riscv_vfmv_v_f_f32m1(1.0f, vl);\n"
        "  return __riscv_vfmv_f_s_f32m1_f32(v) == 1.0f ? 0 : 1; }\n";
    if (file_write(src, prog, sizeof prog - 1))
        return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", src);
    struct cmd c;
    struct proc_result res;
    int rc = 0;
    /* Cross clang links with lld when it can: bookworm's riscv64 GNU ld has
     * crashed on static links here. Try lld first, then the default linker. */
    snprintf(k->ldflags, sizeof k->ldflags, "%s", !k->native && k->is_clang ? "-fuse-ld=lld" : "");
    for (int attempt = 0; attempt < 2; attempt++) {
        cmd_init(&c);
        cmd_split(&c, k->cc);
        cmd_split(&c, k->cflags);
        cmd_split(&c, k->ldflags);
        cmd_arg(&c, "%s", src);
        cmd_arg(&c, "-o");
        cmd_arg(&c, "%s", exe);
        cmd_arg(&c, "-static");
        rc = run_tool(p, &c, diag, sizeof diag, &res);
        if (rc)
            return rc;
        if (tool_ok(&res) || !k->ldflags[0])
            break;
        k->ldflags[0] = '\0';
    }
    if (!tool_ok(&res)) {
        char msg[400];
        snprintf(msg, sizeof msg, "%.390s", diag);
        return set_err(p, PLAT_ERR_NO_TOOLCHAIN,
                       "compiler '%.200s' cannot build RVV intrinsics (riscv_vector.h): %.200s", k->cc, msg);
    }
    /* and run it: a board without V, or a runner with bad options, fails here
     * once instead of on every candidate */
    cmd_init(&c);
    cmd_split(&c, k->runner);
    cmd_arg(&c, "%s", exe);
    /* isolated like every harness run: this is where kope learns (and
     * `describe` says) whether the namespaces are available here */
    struct proc_spec r = {.argv = c.argv, .timeout_ms = 20000, .cpu_s = 20,
                          .out = diag, .out_len = sizeof diag, .flags = PROC_ISOLATE,
                          .rw_dir = dir, .cwd = dir};
    rc = proc_run(&r, &res, p->err, sizeof p->err);
    if (rc)
        return rc;
    snprintf(k->isolation, sizeof k->isolation, "%s", res.isolation);
    if (!tool_ok(&res)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.290s", diag);
        return set_err(p, res.signaled ? PLAT_ERR_NO_TOOLCHAIN : PLAT_ERR_NO_RUNNER,
                       "an RVV test program does not run%s%.200s (%s): %.250s",
                       k->runner[0] ? " under " : "", k->runner,
                       res.signaled ? strsignal(res.signal) : "exit status", msg);
    }
    return 0;
}

static void blas_find(struct k3 *k, const char *setting)
{
    char cand[4][K3_PATH_MAX];
    int n = 0;
    if (setting && *setting)
        snprintf(cand[n++], K3_PATH_MAX, "%.200s", setting);
    char exe[K3_PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) {
        exe[el] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0'; /* build/ARCH */
            snprintf(cand[n++], K3_PATH_MAX, "%.200s/../deps/sysroot-riscv64", exe);
            /* tests and benches live one level deeper: build/ARCH/tests */
            snprintf(cand[n++], K3_PATH_MAX, "%.200s/../../deps/sysroot-riscv64", exe);
        }
    }
    snprintf(cand[n++], K3_PATH_MAX, "build/deps/sysroot-riscv64");
    k->blas_dir[0] = '\0';
    for (int i = 0; i < n; i++) {
        char lib[K3_PATH_MAX + 32];
        snprintf(lib, sizeof lib, "%.250s/lib/libopenblas.a", cand[i]);
        if (file_exists(lib)) {
            /* the deps recipe builds OpenBLAS for RISCV64_ZVL256B and keeps
             * the target-named archive next to libopenblas.a */
            char dir[K3_PATH_MAX + 16];
            snprintf(dir, sizeof dir, "%.250s/lib", cand[i]);
            DIR *d = opendir(dir);
            struct dirent *e;
            k->blas_zvl256b = 0;
            while (d && (e = readdir(d)))
                if (strstr(e->d_name, "zvl256b"))
                    k->blas_zvl256b = 1;
            if (d)
                closedir(d);
            char *abs = realpath(cand[i], NULL);
            snprintf(k->blas_dir, sizeof k->blas_dir, "%.250s", abs ? abs : cand[i]);
            free(abs);
            return;
        }
    }
}

/* A runner given as a relative path ("./qemu-riscv64 ...") would break once
 * a harness run changes into its build dir: make its first word absolute. */
static void runner_absolute(struct k3 *k)
{
    size_t n = strcspn(k->runner, " \t");
    if (n == 0 || k->runner[0] == '/' || !memchr(k->runner, '/', n) || n >= K3_PATH_MAX)
        return;
    char first[K3_PATH_MAX], out[K3_CMD_MAX];
    memcpy(first, k->runner, n);
    first[n] = '\0';
    char *abs = realpath(first, NULL);
    size_t al = abs ? strlen(abs) : 0, rl = strlen(k->runner + n);
    if (abs && al + rl < sizeof out) {
        memcpy(out, abs, al);
        memcpy(out + al, k->runner + n, rl + 1);
        memcpy(k->runner, out, al + rl + 1);
    }
    free(abs);
}

/* The icount plugin: the setting, else libkope-icount.so next to the kope
 * binary (the Makefile builds it there), or one level up (tests, benches). */
static void plugin_find(struct k3 *k, const char *setting)
{
    k->plugin[0] = '\0';
    if (setting) { /* "" turns it off */
        char *abs = *setting && access(setting, R_OK) == 0 ? realpath(setting, NULL) : NULL;
        if (abs)
            snprintf(k->plugin, sizeof k->plugin, "%.250s", abs);
        free(abs);
        return;
    }
    char exe[K3_PATH_MAX], cand[K3_PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el <= 0)
        return;
    exe[el] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    static const char *const rel[] = {"libkope-icount.so", "../libkope-icount.so"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(cand, sizeof cand, "%.400s/%s", exe, rel[i]);
        if (access(cand, R_OK) == 0) {
            char *abs = realpath(cand, NULL);
            snprintf(k->plugin, sizeof k->plugin, "%.250s", abs ? abs : cand);
            free(abs);
            return;
        }
    }
}

/* Does /proc/cpuinfo describe RISC-V harts ("isa : rv64...")? */
static int cpuinfo_is_riscv(void)
{
    char line[256];
    int yes = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    while (!yes && fgets(line, sizeof line, f))
        yes = strncmp(line, "isa", 3) == 0 && strstr(line, ": rv") != NULL;
    fclose(f);
    return yes;
}

/* Ops where a BLAS routine computes exactly the task (embed/blas.c says
 * which routine and where a copy is part of its work): the matmul family,
 * axpy, scale, add, l2norm. Where not, OpenBLAS is not linked and its
 * baseline is absent. */
static int blas_peer_op(enum plat_op op)
{
    return op == PLAT_OP_GEMM || op == PLAT_OP_GEMM_NT || op == PLAT_OP_GEMV || op == PLAT_OP_AXPY ||
           op == PLAT_OP_SCALE || op == PLAT_OP_ADD || op == PLAT_OP_L2NORM;
}

/* The VLEN the emulator runs with: its vlen= option, else qemu's default 128. */
static int runner_vlen(const struct k3 *k)
{
    if (k->native && !k->runner[0]) { /* natively (a board, the board VM): vlenb */
        char msg[512];
        unsigned vlen = 0;
        plat_host_check(msg, sizeof msg, &vlen);
        return (int)vlen;
    }
    const char *vl = strstr(k->runner, "vlen=");
    return vl ? atoi(vl + 5) : 128;
}

static int k3_open(struct platform *p)
{
    struct k3 *k = calloc(1, sizeof *k);
    if (!k)
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    p->priv = k;
    struct utsname u;
    /* uname says riscv64 under qemu-user too (the riscv64 kope's own tests
     * run that way): only a real RISC-V kernel lists the harts' ISA in
     * /proc/cpuinfo, qemu-user 7.2 shows the host's. Emulated, kope takes
     * the cross path (host clang, qemu runner, icount) and claims no time. */
    k->native = uname(&u) == 0 && strcmp(u.machine, "riscv64") == 0 && cpuinfo_is_riscv();
    const struct plat_settings *s = &p->set;

    if (s->cc && *s->cc)
        snprintf(k->cc, sizeof k->cc, "%s", s->cc);
    else if (k->native)
        snprintf(k->cc, sizeof k->cc, "%s", cmd_found("cc") ? "cc" : "clang");
    else
        snprintf(k->cc, sizeof k->cc, "%s", K3_CROSS_CC);
    if (s->cflags)
        snprintf(k->cflags, sizeof k->cflags, "%s", s->cflags);
    else
        snprintf(k->cflags, sizeof k->cflags, "%s", k->native ? "-O3 " K3_NATIVE_MARCH : "-O3");
    if (s->runner)
        snprintf(k->runner, sizeof k->runner, "%s", s->runner);
    else
        snprintf(k->runner, sizeof k->runner, "%s", k->native ? "" : K3_QEMU);
    runner_absolute(k);
    /* Natively inside a virtual machine (the board VM of tests/board, a
     * cloud RISC-V guest) candidates still compile and run directly, but
     * wall time there is the emulator's: label it, claim no ratio from it. */
    if (k->native)
        k->vm = plat_vm_detect("", k->vm_why, sizeof k->vm_why);
    k->emulated = !k->native || strstr(k->runner, "qemu") != NULL || k->vm;
    k->is_clang = strstr(k->cc, "clang") != NULL;

    if (!cmd_found(k->cc))
        return set_err(p, PLAT_ERR_NO_TOOLCHAIN,
                       "compiler '%.200s' not found in PATH (set platform.k3.cc)", k->cc);
    if (k->runner[0] && !cmd_found(k->runner))
        return set_err(p, PLAT_ERR_NO_RUNNER,
                       "runner '%.200s' not found in PATH (install qemu-user, or set platform.k3.runner)",
                       k->runner);

    /* A fresh directory per open platform, inside the configured work dir
     * or $TMPDIR: two kope processes never share build files. */
    const char *base = s->work_dir && *s->work_dir ? s->work_dir : getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (strlen(base) > 150)
        return set_err(p, PLAT_ERR_WORKDIR, "work dir path too long (max 150): %.200s", base);
    if (s->work_dir && *s->work_dir)
        mkdir(base, 0700); /* may exist */
    snprintf(k->work, sizeof k->work, "%s/kope-k3-XXXXXX", base);
    if (!mkdtemp(k->work))
        return set_err(p, PLAT_ERR_WORKDIR, "mkdtemp %.300s: %.100s", k->work, strerror(errno));
    k->own_work = 1;
    /* absolute: harness runs chdir into their build dir */
    char *abs = realpath(k->work, NULL);
    if (!abs || strlen(abs) >= sizeof k->work) {
        free(abs);
        return set_err(p, PLAT_ERR_WORKDIR, "work dir %.300s: cannot make it absolute", k->work);
    }
    memcpy(k->work, abs, strlen(abs) + 1);
    free(abs);
    snprintf(k->rt, sizeof k->rt, "%s/rt", k->work);
    if (mkdir(k->rt, 0700) != 0 && errno != EEXIST)
        return set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", k->rt, strerror(errno));
    blas_find(k, s->deps_sysroot);
    if (strstr(k->runner, "qemu")) /* the plugin is qemu-user's: never natively in a VM */
        plugin_find(k, s->icount_plugin);
    int dl = s->dlen_bits;
    if (dl && (dl < 32 || (dl & (dl - 1)) || (k->emulated && dl > runner_vlen(k))))
        return set_err(p, PLAT_ERR_BAD_TASK, "platform.k3.dlen %d: needs a power of two from 32 "
                       "to the emulated VLEN (%d)", dl, runner_vlen(k));
    return toolchain_check(p, k);
}

static void k3_close(struct platform *p)
{
    struct k3 *k = p->priv;
    if (!k)
        return;
    if (k->own_work && k->work[0])
        rm_tree(k->work);
    free(k->inc_direct);
    free(k->inc_closure);
    free(k);
    p->priv = NULL;
}

static int k3_describe(struct platform *p, struct plat_desc *out)
{
    struct k3 *k = p->priv;
    snprintf(out->name, sizeof out->name, "k3");
    snprintf(out->arch, sizeof out->arch, "riscv64");
    snprintf(out->isa, sizeof out->isa, "rv64gcv_zba_zbb_zbs");
    /* under qemu-user: the runner's vlen= (256 by default); natively the
     * hardware's, read by the start-up check */
    out->vlen_bits = runner_vlen(k);
    out->emulated = k->emulated;
    snprintf(out->cc, sizeof out->cc, "%.150s %.100s", k->cc, k->cflags);
    snprintf(out->runner, sizeof out->runner, "%.250s", k->runner);
    char vm[PLAT_DETAIL_MAX];
    snprintf(vm, sizeof vm, "native riscv64 in a virtual machine: not a speed (%.100s)", k->vm_why);
    snprintf(out->note, sizeof out->note, "%.150s%.80s%.25s",
             k->vm ? vm
             : k->emulated ? "emulated (qemu-user): correctness and instruction counts only, "
                             "times are not speeds"
                           : "native riscv64",
             k->blas_dir[0] ? "; OpenBLAS peer where BLAS is exact" : "; no OpenBLAS baseline found",
             k->plugin[0] ? "; icount plugin loaded" : "");
    size_t nl = strlen(out->note);
    snprintf(out->note + nl, sizeof out->note - nl, "; isolation=%s%s", k->isolation,
             strstr(k->isolation, "NO-") ? " (DEGRADED: see docs/K3-HARNESS.md)" : "");
    return 0;
}

/* ------------------------------------------------------ harness objects --- */

static int rt_compile(struct platform *p, const char *src, const char *obj, const char *flags,
                      const char *defs)
{
    struct k3 *k = p->priv;
    char diag[2048];
    struct cmd c;
    cmd_init(&c);
    cmd_split(&c, k->cc);
    cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
    cmd_split(&c, flags);
    cmd_split(&c, defs);
    cmd_arg(&c, "-I%s", k->rt);
    if (k->blas_dir[0])
        cmd_arg(&c, "-I%s/include", k->blas_dir);
    cmd_arg(&c, "-c");
    cmd_arg(&c, "%s/%s", k->rt, src);
    cmd_arg(&c, "-o");
    cmd_arg(&c, "%s/%s", k->rt, obj);
    struct proc_result res;
    int rc = run_tool(p, &c, diag, sizeof diag, &res);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.290s", diag);
        return set_err(p, PLAT_ERR_HARNESS, "harness file %s does not build: %.300s", src, msg);
    }
    return 0;
}

/* Where the allowed headers resolve with the candidate's own flags, and
 * every file they read in turn (k3_screen_includes compares a candidate's
 * compile against these). One -fsyntax-only compile per open platform. */
#define K3_INC_LIST_MAX (64u << 10)
static int rt_includes_probe(struct platform *p)
{
    struct k3 *k = p->priv;
    char src[K3_PATH_MAX + 64], text[1024];
    size_t n = 0;
    for (int i = 0; i < K3_N_ALLOWED_HEADERS; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "#include %c%s%c\n",
                              strcmp(k3_allowed_headers[i], "kernel_abi.h") ? '<' : '"',
                              k3_allowed_headers[i], strcmp(k3_allowed_headers[i], "kernel_abi.h") ? '>' : '"');
    snprintf(src, sizeof src, "%s/inc_probe.c", k->rt);
    if (n >= sizeof text || file_write(src, text, n))
        return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", src);
    char *out = malloc(K3_INC_LIST_MAX);
    free(k->inc_direct);
    free(k->inc_closure);
    k->inc_direct = malloc(K3_INC_LIST_MAX);
    k->inc_closure = malloc(K3_INC_LIST_MAX);
    if (!out || !k->inc_direct || !k->inc_closure) {
        free(out);
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    }
    struct cmd c;
    struct proc_result res;
    cmd_init(&c);
    cmd_split(&c, k->cc);
    cmd_split(&c, k->cflags);
    cmd_split(&c, "-std=gnu11 -H -fsyntax-only");
    cmd_arg(&c, "-I%s", k->rt);
    cmd_arg(&c, "%s", src);
    int rc = run_tool(p, &c, out, K3_INC_LIST_MAX, &res);
    if (!rc && (!tool_ok(&res) || res.truncated ||
                k3_includes_collect(out, k->inc_direct, K3_INC_LIST_MAX, k->inc_closure,
                                    K3_INC_LIST_MAX) != 0 || !k->inc_direct[0]))
        rc = set_err(p, PLAT_ERR_HARNESS, "the allowed headers do not compile with '%.200s': %.300s",
                     k->cc, out);
    free(out);
    return rc;
}

static int rt_build(struct platform *p)
{
    struct k3 *k = p->priv;
    char path[K3_PATH_MAX + 64], name[96];
    if (k->rt_built)
        return 0;
    for (size_t i = 0; i < sizeof rt_files / sizeof rt_files[0]; i++) {
        snprintf(name, sizeof name, "platform/k3/embed/%s", rt_files[i]);
        const struct embed_file *e = embed_find(name);
        if (!e)
            return set_err(p, PLAT_ERR_HARNESS, "embedded file %s missing", name);
        snprintf(path, sizeof path, "%s/%s", k->rt, rt_files[i]);
        if (file_write(path, e->data, e->len))
            return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    }
    /* one prototype header per family, force-included into candidates so a
     * kope_kernel with the wrong signature is a compile error, not a crash */
    static const char *const fam_fn[PLAT_FAM_COUNT] = {
        "kope_elementwise_fn", "kope_activation_fn", "kope_reduction_fn", "kope_matmul_fn"};
    for (int f = 0; f < PLAT_FAM_COUNT; f++) {
        char text[256];
        int n = snprintf(text, sizeof text,
                         "/* generated by kope: the signature task family %s requires */\n"
                         "#include \"kernel_abi.h\"\n%s kope_kernel;\n",
                         plat_family_name((enum plat_family)f), fam_fn[f]);
        snprintf(path, sizeof path, "%s/proto_%s.h", k->rt, plat_family_name((enum plat_family)f));
        if (file_write(path, text, (size_t)n))
            return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    }
    const struct embed_file *abi = embed_find("platform/kernel_abi.h");
    if (!abi)
        return set_err(p, PLAT_ERR_HARNESS, "embedded kernel_abi.h missing");
    snprintf(path, sizeof path, "%s/kernel_abi.h", k->rt);
    if (file_write(path, abi->data, abi->len))
        return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    int rc = rt_includes_probe(p);
    if (!rc)
        rc = rt_compile(p, "harness.c", "harness.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "ref.c", "ref.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "blas.c", "blas_none.o", "-O2", NULL);
    if (!rc && k->blas_dir[0])
        rc = rt_compile(p, "blas.c", "blas.o", "-O2",
                        k->blas_zvl256b ? "-DHAVE_OPENBLAS -DKOPE_BLAS_MIN_VLEN=256" : "-DHAVE_OPENBLAS");
    if (rc)
        return rc;
    k->rt_built = 1;
    return 0;
}

/* Baselines for one op: scalar (-O2, vectorizer off) and auto-vectorized (-O3). */
static int rt_base(struct platform *p, enum plat_op op)
{
    struct k3 *k = p->priv;
    char obj[64], defs[128];
    for (int v = 0; v < 2; v++) {
        if (k->base_built[v] & (1u << op))
            continue;
        snprintf(obj, sizeof obj, "base_%s_%d.o", v ? "autovec" : "scalar", (int)op);
        snprintf(defs, sizeof defs, "-DKOPE_BASE_OP=%d -DKOPE_BASE_NAME=%s", (int)op,
                 v ? "kope_base_autovec" : "kope_base_scalar");
        const char *flags = v ? "-O3"
                              : (k->is_clang ? "-O2 -fno-vectorize -fno-slp-vectorize"
                                             : "-O2 -fno-tree-vectorize");
        int rc = rt_compile(p, "base.c", obj, flags, defs);
        if (rc)
            return rc;
        k->base_built[v] |= 1u << op;
    }
    return 0;
}

/* ------------------------------------------------------------- compile --- */

static int k3_compile(struct platform *p, const struct plat_task *t, const char *src, size_t len,
                      struct plat_build *out)
{
    struct k3 *k = p->priv;
    double t0 = now_ms();
    int rc = 0;
    int screen = !(p->set.flags & PLAT_SET_UNSAFE_NO_SCREEN);

    /* gate 1: the source screen, before anything is built or written */
    if (screen && k3_screen_source(src, len, &out->screen_rule, out->detail, sizeof out->detail)) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        goto out;
    }
    if (len > PLAT_SRC_MAX) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        out->screen_rule = PLAT_SCREEN_TOO_BIG;
        snprintf(out->detail, sizeof out->detail, "source over %d bytes", PLAT_SRC_MAX);
        goto out;
    }
    rc = rt_build(p);
    if (!rc)
        rc = rt_base(p, t->op);
    if (rc)
        return rc;
    out->id = ++k->next_id;
    char dir[256], file[K3_PATH_MAX + 64], obj[K3_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)out->id);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", dir, strerror(errno));
    snprintf(file, sizeof file, "%s/cand.c", dir);
    snprintf(obj, sizeof obj, "%s/cand.o", dir);
    if (file_write(file, src, len))
        return set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", file);

    /* compile the candidate alone; -H and -MD make the compiler list every
     * file it reads, which k3_screen_includes judges */
    char deps[K3_PATH_MAX + 64], proto[K3_PATH_MAX + 64];
    snprintf(deps, sizeof deps, "%s/cand.d", dir);
    snprintf(proto, sizeof proto, "%s/proto_%s.h", k->rt, plat_family_name(t->family));
    struct cmd c;
    struct proc_result res;
    cmd_init(&c);
    cmd_split(&c, k->cc);
    cmd_split(&c, k->cflags);
    cmd_split(&c, "-std=gnu11 -fno-common -Werror=implicit-function-declaration");
    if (screen)
        cmd_split(&c, "-H -MD");
    if (screen) {
        cmd_arg(&c, "-MF");
        cmd_arg(&c, "%s", deps);
    }
    cmd_arg(&c, "-I%s", k->rt);
    cmd_arg(&c, "-include");
    cmd_arg(&c, "%s", proto);
    cmd_arg(&c, "-c");
    cmd_arg(&c, "%s", file);
    cmd_arg(&c, "-o");
    cmd_arg(&c, "%s", obj);
    char *raw = malloc(K3_INC_LIST_MAX);
    if (!raw)
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    rc = run_tool(p, &c, raw, K3_INC_LIST_MAX, &res);
    if (rc) {
        free(raw);
        return rc;
    }
    if (screen) {
        char own[3 * K3_PATH_MAX + 256], *dtext = NULL;
        snprintf(own, sizeof own, "%s\n%s\n%s/kernel_abi.h\n", file, proto, k->rt);
        FILE *df = fopen(deps, "rb");
        if (df) {
            dtext = malloc(K3_INC_LIST_MAX);
            size_t dn = dtext ? fread(dtext, 1, K3_INC_LIST_MAX - 1, df) : 0;
            if (dtext)
                dtext[dn] = '\0';
            fclose(df);
        }
        /* a truncated header list cannot be judged: refused as well */
        int bad = res.truncated ||
                  k3_screen_includes(raw, dtext, k->inc_direct, k->inc_closure, own,
                                     &out->screen_rule, out->detail, sizeof out->detail);
        free(dtext);
        if (bad) {
            if (out->screen_rule == PLAT_SCREEN_NONE) {
                out->screen_rule = PLAT_SCREEN_HEADER;
                snprintf(out->detail, sizeof out->detail, "compiler output over %u bytes",
                         K3_INC_LIST_MAX);
            }
            out->reason = PLAT_FAIL_SCREEN_REJECTED;
            free(raw); /* nothing the compiler said about another file is kept */
            goto out;
        }
    }
    size_t kept = k3_diag_clean(raw, file, out->diag, sizeof out->diag);
    out->diag_truncated = res.truncated || kept + 1 >= sizeof out->diag;
    free(raw);
    if (!tool_ok(&res)) {
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        snprintf(out->detail, sizeof out->detail, "%s",
                 res.timed_out ? "compiler timed out" : "compiler rejected the source");
        goto out;
    }

    /* gate 2: the object check */
    if (screen) {
        rc = k3_screen_object(obj, &out->screen_rule, out->detail, sizeof out->detail);
        if (rc < 0)
            return set_err(p, rc, "object check: %.300s", out->detail);
        if (rc == 1) {
            rc = 0;
            out->reason = PLAT_FAIL_SCREEN_REJECTED;
            goto out;
        }
    }

    /* link the harness program */
    snprintf(out->path, sizeof out->path, "%s/harness", dir);
    cmd_init(&c);
    cmd_split(&c, k->cc);
    cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
    cmd_split(&c, k->ldflags);
    cmd_split(&c, "-static -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc");
    cmd_arg(&c, "%s/harness.o", k->rt);
    cmd_arg(&c, "%s/ref.o", k->rt);
    /* OpenBLAS is linked only where it is a baseline (blas_peer_op):
     * scanning the static archive is a third of the link time */
    int blas = k->blas_dir[0] && blas_peer_op(t->op);
    cmd_arg(&c, "%s/%s", k->rt, blas ? "blas.o" : "blas_none.o");
    cmd_arg(&c, "%s/base_scalar_%d.o", k->rt, (int)t->op);
    cmd_arg(&c, "%s/base_autovec_%d.o", k->rt, (int)t->op);
    cmd_arg(&c, "%s", obj);
    if (blas) {
        cmd_arg(&c, "-L%s/lib", k->blas_dir);
        cmd_arg(&c, "-lopenblas");
    }
    cmd_arg(&c, "-lm");
    cmd_arg(&c, "-o");
    cmd_arg(&c, "%s", out->path);
    char link_diag[1024];
    rc = run_tool(p, &c, link_diag, sizeof link_diag, &res);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        snprintf(out->detail, sizeof out->detail, "link failed");
        size_t dl = strlen(out->diag);
        snprintf(out->diag + dl, sizeof out->diag - dl, "%s", link_diag);
        out->path[0] = '\0';
        goto out;
    }
    out->ok = 1;
out:
    out->compile_ms = now_ms() - t0;
    return 0;
}

static void k3_build_free(struct platform *p, struct plat_build *b)
{
    struct k3 *k = p->priv;
    if (!k || !b->id)
        return;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)b->id);
    rm_tree(dir);
    b->path[0] = '\0';
    b->ok = 0;
}

/* ------------------------------------------------------- harness runs --- */

/* What a harness run produced, before it is turned into a result struct. */
struct hrun {
    struct proc_result res;
    char out[1024];               /* first bytes of the run's stdout/stderr: never
                                     copied into a verdict (the candidate wrote it) */
    struct plat_report r;         /* what the judge reported (platform/report.h) */
    int reduced_shape;            /* verify: the task case was cut (emulation cap) */
    int icount_expected;          /* counted calls the judge made ("icount_region") */
    int icount_blocks;            /* counted blocks in the plugin's file */
    char icount_err[160];         /* why the plugin's file was refused, "" = fine */
};

/* The plugin's file: one block per process that ran under it, appended at
 * its exit ("kope-icount N" ... "total ..."). Blocks without a region (the
 * judge, timing processes) are skipped; each counted kernel process has
 * exactly one region, in the judge's order. Anything else - a block with
 * more regions, dropped regions, more than one vCPU (a thread racing the
 * counters), fewer or more counted blocks than the judge's counted calls -
 * and nothing is claimed. */
static void icount_take(char *text, size_t len, struct hrun *h)
{
    char *p = text, *end = text + len;
    int j = 0;
    while (p < end) {
        char *next = strstr(p + 1, "kope-icount ");
        size_t bl = next ? (size_t)(next - p) : (size_t)(end - p);
        struct k3_icount ic;
        if (k3_icount_parse(p, bl, &ic) != 0) {
            snprintf(h->icount_err, sizeof h->icount_err, "the plugin's file does not parse");
            return;
        }
        char save = p[bl];
        p[bl] = '\0';
        const char *vc = strstr(p, " vcpus ");
        int vcpus = vc ? atoi(vc + 7) : 1;
        p[bl] = save;
        if (ic.dropped || ic.n_regions > 1 || vcpus > 1) {
            snprintf(h->icount_err, sizeof h->icount_err,
                     "a counted process had %d regions, %llu dropped, %d vCPUs", ic.n_regions,
                     (unsigned long long)ic.dropped, vcpus);
            return;
        }
        if (ic.n_regions == 1) {
            if (j <= PLAT_MAX_BASELINES) {
                h->r.icount[j][0] = ic.region[0].insns;
                h->r.icount[j][1] = ic.region[0].vector_ops;
                h->r.icount[j][2] = ic.region[0].vector_mem;
                h->r.icount[j][3] = ic.region[0].unmodelled ? 0 : ic.region[0].vcost;
            }
            j++;
        }
        p = next ? next : end;
    }
    h->icount_blocks = j;
    if (j != h->icount_expected)
        snprintf(h->icount_err, sizeof h->icount_err,
                 "the plugin counted %d calls, the judge made %d", j, h->icount_expected);
    else
        h->r.has_icount = j > 0;
}

static int harness_run(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                       const char *mode, struct hrun *h)
{
    struct k3 *k = p->priv;
    memset(h, 0, sizeof *h);
    char dir[256], report[K3_PATH_MAX + 64], icount_out[K3_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)b->id);
    snprintf(report, sizeof report, "%s/%s.report", dir, mode);
    snprintf(icount_out, sizeof icount_out, "%s/%s.icount", dir, mode);
    unlink(report);
    unlink(icount_out);
    /* the report: a file with no name once the run starts, given as fd 3 */
    int rfd = open(report, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (rfd < 0)
        return set_err(p, PLAT_ERR_WORKDIR, "cannot create %.300s: %.100s", report, strerror(errno));
    unlink(report);
    const struct plat_settings *s = &p->set;
    struct cmd c;
    cmd_init(&c);
    cmd_split(&c, k->runner);
    if (k->emulated && k->plugin[0] && strcmp(mode, "measure") == 0) {
        char plug[K3_PATH_MAX * 2 + 128];
        if (k3_icount_plugin_arg(k->plugin, icount_out, runner_vlen(k), s->dlen_bits, plug,
                                 sizeof plug))
            return set_err(p, PLAT_ERR_INTERNAL, "icount plugin: a path holds a comma or is too long");
        cmd_arg(&c, "-plugin");
        cmd_arg(&c, "%s", plug);
    }
    cmd_arg(&c, "%s", b->path);
    cmd_arg(&c, "mode=%s", mode);
    cmd_arg(&c, "op=%s", plat_op_name(t->op));
    cmd_arg(&c, "n=%llu", (unsigned long long)t->n);
    cmd_arg(&c, "rows=%llu", (unsigned long long)t->rows);
    cmd_arg(&c, "cols=%llu", (unsigned long long)t->cols);
    cmd_arg(&c, "m=%llu", (unsigned long long)t->m);
    cmd_arg(&c, "k=%llu", (unsigned long long)t->k);
    cmd_arg(&c, "batch=%llu", (unsigned long long)t->batch);
    cmd_arg(&c, "rtol=%.17g", t->rtol);
    cmd_arg(&c, "atol=%.17g", t->atol);
    cmd_arg(&c, "seed=%llu", (unsigned long long)(0x6b6f7065ull + b->id * 1000003ull));
    cmd_arg(&c, "min_ms=%d", s->min_repeat_ms > 0 ? s->min_repeat_ms
                             : k->emulated ? K3_MIN_REPEAT_MS_EMULATED : K3_MIN_REPEAT_MS_NATIVE);
    cmd_arg(&c, "max_rep=%d", s->max_repeats > 0 ? s->max_repeats : 1000);
    cmd_arg(&c, "max_work=%.0f", !k->emulated ? 0.0
                                 : strcmp(mode, "verify") == 0 ? K3_MAX_WORK_VERIFY_EMULATED
                                                               : K3_MAX_WORK_EMULATED);
    int hf = 0;
    if (s->flags & PLAT_SET_FLUSH_CACHE) hf |= H_FLAG_FLUSH;
    if (s->flags & PLAT_SET_NO_BASELINES) hf |= H_FLAG_NO_BASELINES;
    if (s->flags & PLAT_SET_NO_PIN) hf |= H_FLAG_NO_PIN;
    if (k->emulated) hf |= H_FLAG_QUICK;
    cmd_arg(&c, "flags=%d", hf);
    if (c.overflow) {
        close(rfd);
        return set_err(p, PLAT_ERR_INTERNAL, "harness command line too long");
    }
    int timeout = s->timeout_ms > 0 ? s->timeout_ms
                  : k->emulated ? K3_TIMEOUT_MS_EMULATED : K3_TIMEOUT_MS_NATIVE;
    struct proc_spec r = {
        .argv = c.argv, .cwd = dir, .timeout_ms = timeout, .cpu_s = timeout / 1000 + 1,
        .mem_bytes = s->mem_limit_bytes ? s->mem_limit_bytes : K3_MEM_LIMIT,
        .fsize_bytes = (uint64_t)64 << 20,
        .output_cap = s->output_cap_bytes ? s->output_cap_bytes : K3_OUTPUT_CAP,
        .out = h->out, .out_len = sizeof h->out,
        .fd3 = rfd, .flags = (s->flags & PLAT_SET_UNSAFE_NO_ISOLATION) ? 0u : PROC_ISOLATE,
        .rw_dir = dir,
        .ro_paths = {k->plugin[0] && strcmp(mode, "measure") == 0 ? k->plugin : NULL},
    };
    int rc = proc_run(&r, &h->res, p->err, sizeof p->err);
    if (rc) {
        close(rfd);
        return rc;
    }
    snprintf(k->isolation, sizeof k->isolation, "%s", h->res.isolation);
    /* the report (an empty one just means the run died early) */
    char *text = malloc(K3_REPORT_MAX + 1);
    if (!text) {
        close(rfd);
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    }
    ssize_t n = pread(rfd, text, K3_REPORT_MAX, 0);
    close(rfd);
    text[n > 0 ? n : 0] = '\0';
    for (const char *q = text; (q = strstr(q, "icount_region ")); q++)
        if (q == text || q[-1] == '\n')
            h->icount_expected++;
    h->reduced_shape = strstr(text, "\nreduced_shape\n") != NULL;
    plat_report_parse(text, &h->r);
    /* counts come from the plugin's file only, never from the report */
    memset(h->r.icount, 0, sizeof h->r.icount);
    h->r.has_icount = 0;
    FILE *f = k->emulated && k->plugin[0] && strcmp(mode, "measure") == 0 ? fopen(icount_out, "rb")
                                                                       : NULL;
    if (f) {
        size_t m = fread(text, 1, K3_REPORT_MAX, f);
        text[m] = '\0';
        fclose(f);
        if (m == K3_REPORT_MAX)
            snprintf(h->icount_err, sizeof h->icount_err, "the plugin's file is over %u bytes",
                     K3_REPORT_MAX);
        else
            icount_take(text, m, h);
    } else if (h->icount_expected && k->emulated && k->plugin[0]) {
        snprintf(h->icount_err, sizeof h->icount_err, "the plugin wrote no counts");
    }
    free(text);
    return 0;
}

/* The run's fate, most specific first: our kills, the harness's own verdict,
 * then signals, then the per-case results. */
static void classify(const struct hrun *h, enum plat_fail *reason, int *sig, char *detail,
                     size_t dl)
{
    *reason = PLAT_FAIL_NONE;
    *sig = 0;
    if (h->res.flooded) {
        *reason = PLAT_FAIL_OUTPUT_FLOOD;
        snprintf(detail, dl, "printed over %llu bytes; killed", (unsigned long long)h->res.output_bytes);
    } else if (h->res.timed_out || h->res.cpu_limit) {
        *reason = PLAT_FAIL_TIMEOUT;
        snprintf(detail, dl, "%s after %.0f ms", h->res.cpu_limit ? "CPU limit reached" : "no result",
                 h->res.wall_ms);
    } else if (h->r.fail != PLAT_FAIL_NONE) {
        *reason = h->r.fail;
        *sig = h->r.fail_sig;
        snprintf(detail, dl, "%s", h->r.fail_detail);
    } else if (h->res.signaled) {
        *reason = PLAT_FAIL_CRASH;
        *sig = h->res.signal;
        snprintf(detail, dl, "killed by signal %d (%s)", h->res.signal, strsignal(h->res.signal));
    } else if (!h->r.done) {
        *reason = PLAT_FAIL_HARNESS;
        /* what the run printed is the candidate's text: not repeated here */
        snprintf(detail, dl, "run ended without a report (exit %d, %llu bytes of output)",
                 h->res.exit_code, (unsigned long long)h->res.output_bytes);
    } else {
        for (int i = 0; i < h->r.n_cases; i++)
            if (!h->r.cases[i].pass) {
                *reason = h->r.cases[i].reason;
                snprintf(detail, dl, "case %s: %s at element %llu", h->r.cases[i].label,
                         plat_fail_name(h->r.cases[i].reason), (unsigned long long)h->r.cases[i].first_bad);
                break;
            }
    }
}

static int k3_verify(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                     struct plat_verify *out)
{
    struct k3 *k = p->priv;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    int rc = harness_run(p, t, b, "verify", h);
    if (rc)
        goto out;
    out->emulated = k->emulated;
    out->wall_ms = h->res.wall_ms;
    out->n_cases = h->r.n_cases;
    memcpy(out->cases, h->r.cases, sizeof h->r.cases);
    for (int i = 0; i < h->r.n_cases; i++) {
        const struct plat_case *c = &h->r.cases[i];
        /* the worst error is an accuracy figure: special-value cases (1e30 +
         * y, overflow) are judged by their own rule and left out of it */
        if (strstr(c->label, "special") && c->pass)
            continue;
        if (c->max_abs > out->max_abs) out->max_abs = c->max_abs;
        if (c->max_rel > out->max_rel) out->max_rel = c->max_rel;
        if (c->norm_err > out->norm_err) out->norm_err = c->norm_err;
    }
    classify(h, &out->reason, &out->signal, out->detail, sizeof out->detail);
    out->reduced_shape = h->reduced_shape;
    out->pass = out->reason == PLAT_FAIL_NONE && h->r.done && h->r.n_cases > 0;
    if (!out->pass && out->reason == PLAT_FAIL_NONE) {
        out->reason = PLAT_FAIL_HARNESS;
        snprintf(out->detail, sizeof out->detail, "no case was reported");
    }
out:
    free(h);
    return rc;
}

static int k3_measure(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                      struct plat_measure *out)
{
    struct k3 *k = p->priv;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return set_err(p, PLAT_ERR_NOMEM, "out of memory");
    int rc = harness_run(p, t, b, "measure", h);
    if (rc)
        goto out;
    out->emulated = k->emulated;
    out->wall_ms = h->res.wall_ms;
    classify(h, &out->reason, &out->signal, out->detail, sizeof out->detail);
    /* a wrong result after timing, when the same kernel was right before, is state */
    if (out->reason == PLAT_FAIL_WRONG_RESULT || out->reason == PLAT_FAIL_UNWRITTEN_OUTPUT) {
        for (int i = 0; i < h->r.n_cases; i++)
            if (i > 0 && !h->r.cases[i].pass && h->r.cases[0].pass &&
                (strcmp(h->r.cases[i].label, "post-timing") == 0 ||
                 strncmp(h->r.cases[i].label, "timed-", 6) == 0 ||
                 strcmp(h->r.cases[i].label, "counted") == 0)) {
                out->reason = PLAT_FAIL_STATEFUL;
                snprintf(out->detail, sizeof out->detail,
                         "right before timing, %s in the %s call", plat_fail_name(h->r.cases[i].reason),
                         h->r.cases[i].label);
                break;
            }
    }
    if (out->reason == PLAT_FAIL_NONE && h->icount_err[0]) {
        out->reason = PLAT_FAIL_HARNESS;
        snprintf(out->detail, sizeof out->detail, "icount refused: %s", h->icount_err);
    }
    out->ok = out->reason == PLAT_FAIL_NONE && h->r.done && h->r.n_times > 0;
    if (!out->ok && out->reason == PLAT_FAIL_NONE) {
        out->reason = PLAT_FAIL_HARNESS;
        snprintf(out->detail, sizeof out->detail, "no timing was reported");
    }
    /* the isolation first: what the figures can be trusted for */
    int mn = snprintf(out->method, sizeof out->method, "isolation=%.100s%s; ",
                      h->res.isolation[0] ? h->res.isolation : "none",
                      k->vm ? "; virtual machine: not a speed"
                      : k->emulated ? "; EMULATED: qemu wall time, not a speed" : "");
    if (mn > 0 && (size_t)mn < sizeof out->method) { /* the judge's lines, cut to fit */
        size_t room = sizeof out->method - 1 - (size_t)mn, ml = strlen(h->r.method);
        memcpy(out->method + mn, h->r.method, ml < room ? ml : room);
        out->method[(size_t)mn + (ml < room ? ml : room)] = '\0';
    }
    out->has_icount = h->r.has_icount;
    out->cycles = h->r.cycles;
    plat_task_work(t, &out->flops, &out->bytes);
    for (int i = 0; i < h->r.n_times; i++) {
        if (i == 0) {
            out->median_ns = h->r.times[0].med;
            out->min_ns = h->r.times[0].min;
            out->spread = h->r.times[0].spread;
            out->repeats = h->r.times[0].reps;
            out->warmup = h->r.times[0].warm;
            out->icount = h->r.icount[0][0];
            out->icount_vector = h->r.icount[0][1];
            out->icount_vmem = h->r.icount[0][2];
            out->vcost = h->r.icount[0][3];
            continue;
        }
        if (out->n_baselines >= PLAT_MAX_BASELINES)
            break;
        struct plat_baseline *bl = &out->base[out->n_baselines++];
        snprintf(bl->name, sizeof bl->name, "%s", h->r.times[i].name);
        bl->median_ns = h->r.times[i].med;
        bl->min_ns = h->r.times[i].min;
        bl->icount = h->r.icount[i][0];
        bl->vcost = h->r.icount[i][3];
        const char *metric = "";
        if (!k->emulated && out->median_ns > 0) {
            bl->ratio = bl->median_ns / out->median_ns;
            metric = "time";
        } else if (k->emulated && h->r.has_icount) {
            bl->ratio = plat_emulated_ratio(out->vcost, out->icount, bl->vcost, bl->icount, &metric);
        } else {
            bl->ratio = 0; /* not claimed */
        }
        plat_metric_merge(out->ratio_metric, metric);
    }
out:
    free(h);
    return rc;
}

/* The k3 claim of a passing outcome: its ratio against the claimed same-run
 * baseline ("speedup": autovec-O3 when measured; natively by time, under
 * emulation by the vector-cost model, never time). One number per outcome,
 * so every caller of the graph's best (run, context, report, export) agrees.
 * An emulated outcome counted without vcost (recorded before the model
 * existed, or unmodelled: a register-form vsetvl) holds an icount ratio,
 * which makes LMUL free; it ranks below every vcost claim (x 1e-6) and
 * only among its kind, so the tuner never keeps it over a modelled point. */
static double k3_rank(const struct plat_outcome *o)
{
    double sp = o->num(o->ctx, "speedup", 0);
    int icount_only = o->num(o->ctx, "vcost", 0) <= 0 && o->num(o->ctx, "icount", 0) > 0;
    return icount_only ? sp * 1e-6 : sp;
}

const struct platform_ops plat_k3_ops = {
    .name = "k3",
    .open = k3_open,
    .close = k3_close,
    .describe = k3_describe,
    .compile = k3_compile,
    .verify = k3_verify,
    .measure = k3_measure,
    .probe = k3_probe, /* platform/k3/probe.c */
    .build_free = k3_build_free,
    .rank = k3_rank,
};

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
 *                base_{scalar,autovec}_OP.o per op on first use; for a
 *                user's own op, user_F.o per family and uref_HASH.c with
 *                uref_HASH_{s,v}.o per reference (rt_user)
 *   c<id>/       one candidate: cand.c, cand.o, harness program, reports
 * Per candidate only cand.c is compiled and the program linked.
 *
 * The harness protocol is in platform/judge/hargs.h. Every run goes through
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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform/diag.h"
#include "platform/embed.h"
#include "platform/hostcheck.h"
#include "platform/k3/k3.h"
#include "platform/k3/k3_icount.h"
#include "platform/k3/k3_templates.h"
#include "platform/k3/peers.h"
#include "platform/noise.h"
#include "platform/judge/report.h"
#include "platform/workdir.h"
#define KOPE_HARNESS_HOST_ONLY
#include "platform/judge/hargs.h"

_Static_assert((int)H_OP_COUNT == (int)PLAT_OP_COUNT, "harness op list must match enum plat_op");
_Static_assert((int)H_OP_USER == (int)PLAT_OP_USER, "the harness's user op must be PLAT_OP_USER");
_Static_assert((int)H_OP_GEMV == (int)PLAT_OP_GEMV && (int)H_OP_SOFTMAX == (int)PLAT_OP_SOFTMAX,
               "harness op order must match enum plat_op");

#define K3_CROSS_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
#define K3_NATIVE_MARCH "-march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
/* rvv_ta_all_1s/rvv_ma_all_1s: tail and masked-off elements are written as
 * all ones wherever the policy is agnostic, as conforming hardware may (qemu
 * leaves them undisturbed by default, so a kernel that reads them passed) */
#define K3_QEMU "qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true," \
                "rvv_ta_all_1s=true,rvv_ma_all_1s=true"

/* Defaults; all overridable through struct plat_settings. */
#define K3_TIMEOUT_MS_NATIVE 30000
#define K3_TIMEOUT_MS_EMULATED 60000
#define K3_COMPILE_TIMEOUT_MS 60000
/* natively in a virtual machine the compiler itself runs emulated: the board
 * VM's gcc took up to a minute for the harness on a loaded host */
#define K3_COMPILE_TIMEOUT_MS_VM 600000
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

/* The harness sources rt/ gets: the K3 harness program and its baselines
 * (platform/k3/embed/), and the judge's shared rules and references
 * (platform/judge/, which the Ascend host program builds too). */
static const struct { const char *from, *to; } rt_files[] = {
    {"platform/k3/embed/harness.c", "harness.c"}, {"platform/judge/hargs.h", "hargs.h"},
    {"platform/judge/verdict.h", "verdict.h"},    {"platform/judge/ref.c", "ref.c"},
    {"platform/k3/embed/base.c", "base.c"},       {"platform/k3/embed/blas.c", "blas.c"},
    {"platform/k3/embed/sleef.c", "sleef.c"},     {"platform/k3/embed/user.c", "user.c"},
    {"platform/k3/embed/kserve.c", "kserve.c"},   {"platform/k3/embed/kproto.h", "kproto.h"},
    {"platform/k3/embed/kcall.S", "kcall.S"},     {"platform/k3/embed/kcall.h", "kcall.h"},
};

/* ------------------------------------------------------------- helpers --- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The path of command cmd (its first word) in PATH, into out: 0, or -1 when
 * it is not found or the path does not fit. */
static int cmd_path(const char *cmd, char *out, size_t cap)
{
    size_t n = strcspn(cmd, " \t");
    if (n == 0 || n >= cap)
        return -1;
    if (memchr(cmd, '/', n)) {
        snprintf(out, cap, "%.*s", (int)n, cmd);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t dl = strcspn(path, ":");
        if (dl && dl + n + 2 <= cap) {
            snprintf(out, cap, "%.*s/%.*s", (int)dl, path, (int)n, cmd);
            if (access(out, X_OK) == 0)
                return 0;
        }
        path += dl;
        if (*path == ':')
            path++;
    }
    return -1;
}

/* Is argv[0] of cmd an executable in PATH (or a path)? */
static int cmd_found(const char *cmd)
{
    char path[1024];
    return cmd_path(cmd, path, sizeof path) == 0;
}

/* ----------------------------------------------------- running commands --- */

/* Run a compiler or linker command in the compile sandbox (platform/proc.h
 * PROC_VIEW): the toolchain view found at open, kope's rt/ read-only (unless
 * rw_dir is rt/ itself), the deps sysroot when with_deps (OpenBLAS, SLEEF:
 * links and the harness objects that include their headers), and rw_dir as
 * the only writable place, also TMPDIR and the working directory. Output
 * (capped) into diag. Returns 0 when the compiler ran (res says how it
 * ended), PLAT_ERR_NO_TOOLCHAIN when the sandbox could not be built,
 * PLAT_ERR_* otherwise. PLAT_SET_UNSAFE_NO_ISOLATION runs it bare (the
 * benchmark's baseline). */
static int run_tool(struct platform *p, struct proc_cmd *c, char *diag, size_t diag_len,
                    struct proc_result *res, const char *rw_dir, int with_deps)
{
    if (c->overflow)
        return plat_set_err(p, PLAT_ERR_INTERNAL, "command line too long");
    struct k3 *k = p->priv;
    int timeout = p->set.compile_timeout_ms > 0 ? p->set.compile_timeout_ms
                  : k->vm ? K3_COMPILE_TIMEOUT_MS_VM : K3_COMPILE_TIMEOUT_MS;
    int bare = (p->set.flags & PLAT_SET_UNSAFE_NO_ISOLATION) != 0;
    const char *extra[4] = {NULL, NULL, NULL, NULL}, *view[PROC_VIEW_MAX + 1];
    int ne = 0;
    if (k->tool_extra[0]) /* a tool outside the compiler's own view (objcopy) */
        extra[ne++] = k->tool_extra;
    if (strcmp(rw_dir, k->rt) != 0)
        extra[ne++] = k->rt;
    if (with_deps && k->blas_dir[0])
        extra[ne++] = k->blas_dir;
    if (toolview_list(k->view, extra, view, PROC_VIEW_MAX + 1) < 0)
        return plat_set_err(p, PLAT_ERR_INTERNAL, "the compile view has too many paths");
    struct proc_spec r = {
        .argv = c->argv, .cwd = rw_dir, .timeout_ms = timeout, .cpu_s = timeout / 1000 + 1,
        .mem_bytes = (uint64_t)4 << 30, .fsize_bytes = (uint64_t)256 << 20,
        .output_cap = (uint64_t)1 << 20, .out = diag, .out_len = diag_len,
        .flags = bare ? 0u : PROC_ISOLATE | PROC_VIEW, .rw_dir = rw_dir, .view = view,
    };
    int rc = proc_run(&r, res, p->err, sizeof p->err);
    if (rc)
        return rc;
    snprintf(k->compile_isolation, sizeof k->compile_isolation, "%s",
             bare ? "none(unsafe-no-isolation)" : res->isolation);
    static const char view_failed[] = "kope: cannot build the compile view";
    if (!bare && res->exited && res->exit_code == PROC_VIEW_FAILED &&
        strncmp(diag, view_failed, sizeof view_failed - 1) == 0) {
        char why[400];
        snprintf(why, sizeof why, "%.390s", diag);
        why[strcspn(why, "\n")] = '\0';
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "%s\nhint: the compiler runs in a sandbox that "
                            "sees only the toolchain's own paths (docs/K3-HARNESS.md, \"The sandbox\"); "
                            "check that they are readable", why);
    }
    return 0;
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
    if (proc_file_write(src, prog, sizeof prog - 1))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", src);
    struct proc_cmd c;
    struct proc_result res;
    int rc = 0;
    /* The compile sandbox's view of the toolchain: asked of the compiler
     * once, here, with kope's own probes (platform/toolview.h). */
    char verr[400] = "";
    toolview_init(k->view);
    rc = toolview_add_cc(k->view, k->cc, k->cflags, verr, sizeof verr);
    if (rc)
        return plat_set_err(p, rc, "cannot find what compiler '%.200s' needs for its sandbox: %.300s",
                            k->cc, verr);
    /* Cross clang links with lld when it can: bookworm's riscv64 GNU ld has
     * crashed on static links here. Try lld first, then the default linker.
     * Each with --no-dependent-libraries first (lld's: a candidate's
     * `#pragma comment(lib, PATH)` must not make the linker open PATH); a
     * linker that does not know it (GNU ld, which reads no dependent
     * libraries at all) links without. */
    static const char *const tries[][2] = {
        {"-fuse-ld=lld", "-Wl,--no-dependent-libraries"}, {"-fuse-ld=lld", ""},
        {"", "-Wl,--no-dependent-libraries"}, {"", ""}};
    int first = !k->native && k->is_clang ? 0 : 2;
    for (int attempt = first; attempt < 4; attempt++) {
        snprintf(k->ldflags, sizeof k->ldflags, "%s", tries[attempt][0]);
        proc_cmd_init(&c);
        proc_cmd_split(&c, k->cc);
        proc_cmd_split(&c, k->cflags);
        proc_cmd_split(&c, k->ldflags);
        proc_cmd_split(&c, tries[attempt][1]);
        proc_cmd_arg(&c, "%s", src);
        proc_cmd_arg(&c, "-o");
        proc_cmd_arg(&c, "%s", exe);
        proc_cmd_arg(&c, "-static");
        rc = run_tool(p, &c, diag, sizeof diag, &res, dir, 0);
        if (rc)
            return rc;
        k->ld_no_deplibs = tries[attempt][1][0] != '\0';
        if (tool_ok(&res))
            break;
    }
    if (!tool_ok(&res)) {
        char msg[400];
        snprintf(msg, sizeof msg, "%.390s", diag);
        /* the same compile outside the sandbox: if that works, the view
         * misses a path the compiler needs, and kope says so instead of
         * compiling candidates where they could read the host */
        int outside = 0;
        if (!res.timed_out && !(p->set.flags & PLAT_SET_UNSAFE_NO_ISOLATION)) {
            p->set.flags |= PLAT_SET_UNSAFE_NO_ISOLATION;
            char d2[256];
            struct proc_result r2;
            outside = run_tool(p, &c, d2, sizeof d2, &r2, dir, 0) == 0 && tool_ok(&r2);
            p->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_ISOLATION;
        }
        if (outside) {
            char vp[300];
            toolview_print(k->view, vp, sizeof vp);
            return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN,
                                "compiler '%.200s' builds RVV intrinsics, but not in its sandbox (%.100s): "
                                "%.200s\nhint: the sandbox sees only %.300s; a compiler that needs more "
                                "(a wrapper script calling other programs) cannot be sandboxed",
                                k->cc, k->compile_isolation, msg, vp);
        }
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN,
                       "compiler '%.200s' cannot build RVV intrinsics (riscv_vector.h): %.200s", k->cc,
                       res.timed_out ? "timed out (raise platform.k3.compile_timeout_ms)" : msg);
    }
    /* and run it: a board without V, or a runner with bad options, fails here
     * once instead of on every candidate */
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->runner);
    proc_cmd_arg(&c, "%s", exe);
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
        return plat_set_err(p, res.signaled ? PLAT_ERR_NO_TOOLCHAIN : PLAT_ERR_NO_RUNNER,
                       "an RVV test program does not run%s%.200s (%s): %.250s",
                       k->runner[0] ? " under " : "", k->runner,
                       res.signaled ? strsignal(res.signal) : "exit status", msg);
    }
    return 0;
}

/* The riscv64 sysroot (OpenBLAS, SLEEF) and, under qemu, the icount plugin,
 * in peers.h's order: the setting, the compiled-in prefix, beside the
 * binary, the build tree. Where each came from goes into describe's note. */
static void peers_find(struct k3 *k, const struct plat_settings *s, int want_plugin)
{
    struct k3_peers pe;
    k3_peers_find(s->deps_sysroot, s->icount_plugin, want_plugin, &pe);
    int have = pe.sysroot[0] && pe.sysroot_from != K3_PEER_BAD_SETTING;
    snprintf(k->blas_dir, sizeof k->blas_dir, "%s", have ? pe.sysroot : "");
    k->blas_zvl256b = have && pe.zvl256b;
    k->sleef = have && pe.sleef;
    k->blas_from = k3_peer_from_name(pe.sysroot_from);
    snprintf(k->plugin, sizeof k->plugin, "%s", pe.plugin);
    k->plugin_from = k3_peer_from_name(pe.plugin_from);
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

/* Ops where a BLAS routine computes exactly the task (embed/blas.c says
 * which routine and where a copy is part of its work): the matmul family,
 * axpy, scale, add, l2norm. Where not, OpenBLAS is not linked and its
 * baseline is absent. */
static int blas_peer_op(enum plat_op op)
{
    return op == PLAT_OP_GEMM || op == PLAT_OP_GEMM_NT || op == PLAT_OP_GEMV || op == PLAT_OP_AXPY ||
           op == PLAT_OP_SCALE || op == PLAT_OP_ADD || op == PLAT_OP_L2NORM;
}

/* Ops where SLEEF's vector math is the peer (embed/sleef.c composes each
 * from SLEEF's exp, tanh and erf): the transcendental activations and
 * softmax. Elsewhere libsleef is not linked. */
static int sleef_peer_op(enum plat_op op)
{
    return op == PLAT_OP_EXP || op == PLAT_OP_TANH || op == PLAT_OP_SIGMOID || op == PLAT_OP_SILU ||
           op == PLAT_OP_GELU_TANH || op == PLAT_OP_GELU_ERF || op == PLAT_OP_SOFTMAX;
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

/* platform.k3.model: "vcost" (the default, always computed) or "mca:CPU"
 * (platform/k3/mca.h: llvm-mca cycles recorded beside vcost; the ratios
 * stay by vcost this session). An mca model without llvm-mca-22, or off
 * qemu (no plugin), falls back to vcost and the phrase says why: every
 * emulated outcome's method names the model in use. A malformed model
 * text fails the open. */
static int model_open(struct platform *p, struct k3 *k)
{
    const char *model = plat_setting_str(p, "model");
    k3_mca_init(&k->mca);
    snprintf(k->model, sizeof k->model, "model=vcost");
    if (!model || !*model || strcmp(model, "vcost") == 0)
        return 0;
    char err[200];
    int rc = k3_mca_open(&k->mca, model, k->work, plat_setting_str(p, "mca_cache"), err, sizeof err);
    if (rc == PLAT_ERR_BAD_TASK || rc == PLAT_ERR_WORKDIR)
        return plat_set_err(p, rc, "platform.k3.model: %s", err);
    if (rc == 0 && !k->plugin[0]) {
        rc = PLAT_ERR_UNSUPPORTED;
        snprintf(err, sizeof err, "no qemu icount plugin to record blocks");
    }
    if (rc) {
        snprintf(k->model, sizeof k->model, "model=vcost (%.50s asked: %.120s)", model, err);
        return 0;
    }
    k->mca_on = 1;
    snprintf(k->model, sizeof k->model, "model=%.60s (llvm-mca-22 cycles beside vcost; ratios by vcost)",
             model);
    return 0;
}
static int vlens_parse(struct k3 *k, const char *text); /* below, with the VLEN recheck */

static int k3_open(struct platform *p)
{
    struct k3 *k = calloc(1, sizeof *k);
    if (!k)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    p->priv = k;
    if (!(k->view = malloc(sizeof *k->view)))
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    toolview_init(k->view);
    k->work_lock = -1;
    if (getrandom(&k->fill_key, sizeof k->fill_key, 0) != (ssize_t)sizeof k->fill_key)
        k->fill_key = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    /* uname says riscv64 under qemu-user too (the riscv64 kope's own tests
     * run that way): only a real RISC-V kernel lists the harts' ISA in
     * /proc/cpuinfo, qemu-user 7.2 shows the host's. Emulated, kope takes
     * the cross path (host clang, qemu runner, icount) and claims no time. */
    k->native = k3_host_native();
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
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN,
                       "compiler '%.200s' not found in PATH (set platform.k3.cc)", k->cc);
    if (k->runner[0] && !cmd_found(k->runner))
        return plat_set_err(p, PLAT_ERR_NO_RUNNER,
                       "runner '%.200s' not found in PATH (install qemu-user, or set platform.k3.runner)",
                       k->runner);

    /* A fresh directory per open platform, inside the configured work dir
     * or $TMPDIR: two kope processes never share build files. */
    const char *base = s->work_dir && *s->work_dir ? s->work_dir : getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (strlen(base) > 150)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "work dir path too long (max 150): %.200s", base);
    if (s->work_dir && *s->work_dir)
        mkdir(base, 0700); /* may exist */
    /* kope-k3-PID-XXXXXX: the folders of dead kope processes go first */
    if (plat_workdir_make(base, "kope-k3", k->work, sizeof k->work, &k->work_lock) != 0)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdtemp %.150s/kope-k3-*: %.100s", base, strerror(errno));
    k->own_work = 1;
    /* absolute: harness runs chdir into their build dir */
    char *abs = realpath(k->work, NULL);
    if (!abs || strlen(abs) >= sizeof k->work) {
        free(abs);
        return plat_set_err(p, PLAT_ERR_WORKDIR, "work dir %.300s: cannot make it absolute", k->work);
    }
    memcpy(k->work, abs, strlen(abs) + 1);
    free(abs);
    snprintf(k->rt, sizeof k->rt, "%s/rt", k->work);
    if (mkdir(k->rt, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", k->rt, strerror(errno));
    /* the plugin is qemu-user's: never natively in a VM */
    peers_find(k, s, strstr(k->runner, "qemu") != NULL);
    int mrc = model_open(p, k);
    if (mrc)
        return mrc;
    /* platform.k3.verify_seed: a string ("123", "0x..."), since a JSON
     * number holds 53 bits only; replays the drawn sizes of a recorded
     * verify_seed */
    const char *vs = plat_setting_str(p, "verify_seed");
    k->verify_seed = vs && *vs ? strtoull(vs, NULL, 0) : 0;
    if (vlens_parse(k, plat_setting_str(p, "verify_vlens")) != 0)
        return plat_set_err(p, PLAT_ERR_BAD_TASK, "platform.k3.verify_vlens: ascending powers of two "
                            "from 128 to 1024, comma-separated, e.g. \"128,256,512,1024\"");
    int dl = s->dlen_bits;
    if (dl && (dl < 32 || (dl & (dl - 1)) || (k->emulated && dl > runner_vlen(k))))
        return plat_set_err(p, PLAT_ERR_BAD_TASK, "platform.k3.dlen %d: needs a power of two from 32 "
                       "to the emulated VLEN (%d)", dl, runner_vlen(k));
    return toolchain_check(p, k);
}

static void null_ref_put(struct k3_prog_ref *ref, int own);

static void k3_close(struct platform *p)
{
    struct k3 *k = p->priv;
    if (!k)
        return;
    if (k->own_work && k->work[0])
        plat_workdir_remove(k->work, k->work_lock);
    null_ref_put(k->null_ref, 1);
    free(k->inc_direct);
    free(k->inc_closure);
    free(k->view);
    k3_names_free(k->hdr_names);
    free(k->hdr_names);
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
    snprintf(out->note, sizeof out->note, "%.150s%.40s%.40s",
             k->vm ? vm
             : k->emulated ? "emulated (qemu-user): correctness and instruction counts only, "
                             "times are not speeds"
                           : "native riscv64",
             k->blas_dir[0] ? "; OpenBLAS peer where BLAS is exact" : "; no OpenBLAS baseline found",
             k->sleef ? "; SLEEF peer for vector math" : "; no SLEEF baseline found");
    /* where each peer came from (peers.h): a copied binary that lost its
     * lib/kope says so here, not only by a missing baseline row */
    size_t pl = strlen(out->note);
    if (!k->blas_dir[0] && k->blas_from == k3_peer_from_name(K3_PEER_BAD_SETTING))
        pl += (size_t)snprintf(out->note + pl, sizeof out->note - pl,
                               " (platform.k3.deps_sysroot has no lib/libopenblas.a)");
    else if (k->blas_dir[0])
        pl += (size_t)snprintf(out->note + pl, sizeof out->note - pl, " (sysroot: %.40s)", k->blas_from);
    if (k->plugin[0] && pl < sizeof out->note)
        snprintf(out->note + pl, sizeof out->note - pl, "; icount plugin loaded (%.40s)", k->plugin_from);
    size_t nl = strlen(out->note);
    snprintf(out->note + nl, sizeof out->note - nl, "; isolation=%s%s; compile-isolation=%s%s",
             k->isolation, strstr(k->isolation, "NO-") ? " (DEGRADED: see docs/K3-HARNESS.md)" : "",
             k->compile_isolation,
             strstr(k->compile_isolation, "NO-") ? " (DEGRADED: the compiler can read host files)" : "");
    return 0;
}

/* ------------------------------------------------------ harness objects --- */

static int rt_compile(struct platform *p, const char *src, const char *obj, const char *flags,
                      const char *defs)
{
    struct k3 *k = p->priv;
    char diag[2048];
    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->cc);
    proc_cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
    proc_cmd_split(&c, flags);
    proc_cmd_split(&c, defs);
    proc_cmd_arg(&c, "-I%s", k->rt);
    if (k->blas_dir[0])
        proc_cmd_arg(&c, "-I%s/include", k->blas_dir);
    proc_cmd_arg(&c, "-c");
    proc_cmd_arg(&c, "%s/%s", k->rt, src);
    proc_cmd_arg(&c, "-o");
    proc_cmd_arg(&c, "%s/%s", k->rt, obj);
    struct proc_result res;
    int rc = run_tool(p, &c, diag, sizeof diag, &res, k->rt, 1);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.290s", diag);
        return plat_set_err(p, PLAT_ERR_HARNESS, "harness file %s does not build: %.300s", src, msg);
    }
    return 0;
}

/* Append to list ('\n'-separated, cap bytes) every file of the make-style
 * dependency file path ("t.o: a.c b.h \\\n c.h") not already in it, except
 * skip (the probe source). 0, or -1 when unreadable or over cap. */
static int deps_into_closure(const char *path, const char *skip, char *list, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *text = malloc(cap);
    size_t n = text ? fread(text, 1, cap - 1, f) : 0;
    int full = text && n == cap - 1;
    fclose(f);
    if (!text || full) {
        free(text);
        return -1;
    }
    text[n] = '\0';
    size_t ln = strlen(list);
    char *p = strchr(text, ':');
    int rc = 0;
    for (p = p ? p + 1 : text + n; *p;) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\\') {
            p++; /* separators, and the backslash of a continued line */
            continue;
        }
        char *b = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' &&
               !(*p == '\\' && (p[1] == '\n' || p[1] == '\r')))
            p++;
        size_t pl = (size_t)(p - b);
        if ((strlen(skip) == pl && memcmp(skip, b, pl) == 0) || b[pl - 1] == ':')
            continue;
        int seen = 0;
        for (const char *q = list; *q && !seen;) {
            const char *e = strchr(q, '\n');
            size_t l = e ? (size_t)(e - q) : strlen(q);
            seen = l == pl && memcmp(q, b, pl) == 0;
            q = e ? e + 1 : q + l;
        }
        if (seen)
            continue;
        if (ln + pl + 2 > cap) {
            rc = -1;
            break;
        }
        memcpy(list + ln, b, pl);
        ln += pl;
        list[ln++] = '\n';
        list[ln] = '\0';
    }
    free(text);
    return rc;
}

/* Where the allowed headers resolve with the candidate's own flags, and
 * every file they read in turn (k3_screen_includes compares a candidate's
 * compile against these). One preprocessor run (-H -M) per open platform. */
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
    if (n >= sizeof text || proc_file_write(src, text, n))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", src);
    char *out = malloc(K3_INC_LIST_MAX);
    free(k->inc_direct);
    free(k->inc_closure);
    k->inc_direct = malloc(K3_INC_LIST_MAX);
    k->inc_closure = malloc(K3_INC_LIST_MAX);
    if (!out || !k->inc_direct || !k->inc_closure) {
        free(out);
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    }
    struct proc_cmd c;
    struct proc_result res;
    char dfile[K3_PATH_MAX + 64];
    snprintf(dfile, sizeof dfile, "%s/inc_probe.d", k->rt);
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->cc);
    proc_cmd_split(&c, k->cflags);
    /* -H lists the headers opened; -M -MF every file read, which also names
     * what the compiler reads without an #include: GCC's implicit
     * /usr/include/stdc-predef.h on glibc (the board VM's native gcc-14 had
     * every candidate refused for it) */
    proc_cmd_split(&c, "-std=gnu11 -H -M");
    proc_cmd_arg(&c, "-MF");
    proc_cmd_arg(&c, "%s", dfile);
    proc_cmd_arg(&c, "-I%s", k->rt);
    proc_cmd_arg(&c, "%s", src);
    int rc = run_tool(p, &c, out, K3_INC_LIST_MAX, &res, k->rt, 0);
    if (!rc && (!tool_ok(&res) || res.truncated ||
                k3_includes_collect(out, k->inc_direct, K3_INC_LIST_MAX, k->inc_closure,
                                    K3_INC_LIST_MAX) != 0 || !k->inc_direct[0]))
        rc = plat_set_err(p, PLAT_ERR_HARNESS, "the allowed headers do not compile with '%.200s': %.300s",
                     k->cc, out);
    if (!rc && deps_into_closure(dfile, src, k->inc_closure, K3_INC_LIST_MAX) != 0)
        rc = plat_set_err(p, PLAT_ERR_HARNESS, "the allowed headers' dependency list %.300s: "
                     "unreadable or over %u bytes", dfile, K3_INC_LIST_MAX);
    free(out);
    return rc;
}

static int rt_build(struct platform *p)
{
    struct k3 *k = p->priv;
    char path[K3_PATH_MAX + 64];
    if (k->rt_built)
        return 0;
    for (size_t i = 0; i < sizeof rt_files / sizeof rt_files[0]; i++) {
        const struct embed_file *e = embed_find(rt_files[i].from);
        if (!e)
            return plat_set_err(p, PLAT_ERR_HARNESS, "embedded file %s missing", rt_files[i].from);
        snprintf(path, sizeof path, "%s/%s", k->rt, rt_files[i].to);
        if (proc_file_write(path, e->data, e->len))
            return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
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
        if (proc_file_write(path, text, (size_t)n))
            return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    }
    const struct embed_file *abi = embed_find("platform/kernel_abi.h");
    if (!abi)
        return plat_set_err(p, PLAT_ERR_HARNESS, "embedded kernel_abi.h missing");
    snprintf(path, sizeof path, "%s/kernel_abi.h", k->rt);
    if (proc_file_write(path, abi->data, abi->len))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    snprintf(path, sizeof path, "%s/null_kernel.c", k->rt);
    if (proc_file_write(path, K3_NULL_KERNEL_SRC, strlen(K3_NULL_KERNEL_SRC)))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    int rc = rt_includes_probe(p);
    if (!rc)
        rc = rt_compile(p, "harness.c", "harness.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "kserve.c", "kserve.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "kcall.S", "kcall.o", NULL, NULL);
    if (!rc)
        rc = rt_compile(p, "ref.c", "ref.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "null_kernel.c", "null_kernel.o", "-O2", NULL);
    if (!rc)
        rc = rt_compile(p, "blas.c", "blas_none.o", "-O2", NULL);
    if (!rc && k->blas_dir[0])
        rc = rt_compile(p, "blas.c", "blas.o", "-O2",
                        k->blas_zvl256b ? "-DHAVE_OPENBLAS -DKOPE_BLAS_MIN_VLEN=256" : "-DHAVE_OPENBLAS");
    if (!rc)
        rc = rt_compile(p, "sleef.c", "sleef_none.o", "-O2", NULL);
    if (!rc && k->sleef)
        rc = rt_compile(p, "sleef.c", "sleef.o", "-O2", "-DHAVE_SLEEF");
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

/* A user op's objects (platform.h struct plat_user_op, embed/user.c): its
 * reference screened like a candidate's source, then built twice with the
 * family's prototype forced in (a wrong signature does not build):
 * kope_user_scalar with the scalar baseline's flags (the judge's reference and
 * the scalar baseline) and kope_user_autovec with -O3 (the autovec baseline);
 * and user.c for the family. Named by a hash of source and family, so a
 * reference is built once per open platform. Returns 0 (tag set to the
 * hash), 1 when the reference is refused or does not build (out says why,
 * "reference" in its detail: core checks every reference on its own before a
 * run, so this is never a recorded candidate's fate), or PLAT_ERR_*. */
/* The name of a user op's reference objects (rt/u<tag>/): a hash of its
 * source and family. "" when the task has no reference. */
static void user_tag(const struct plat_task *t, char tag[24])
{
    const struct plat_user_op *u = t->user;
    tag[0] = '\0';
    if (!u || !u->ref)
        return;
    uint64_t h = 1469598103934665603ull; /* FNV-1a: a name for the objects, not a check */
    for (size_t i = 0; i < u->ref_len; i++)
        h = (h ^ (unsigned char)u->ref[i]) * 1099511628211ull;
    h = (h ^ (unsigned)t->family) * 1099511628211ull;
    snprintf(tag, 24, "%016llx", (unsigned long long)h);
}

static int rt_user(struct platform *p, const struct plat_task *t, char tag[24],
                   struct plat_build *out)
{
    struct k3 *k = p->priv;
    const struct plat_user_op *u = t->user;
    if (!u || !u->ref || (unsigned)t->family >= PLAT_FAM_COUNT)
        return plat_set_err(p, PLAT_ERR_BAD_TASK, "task %.64s: user op without its reference", t->name);
    user_tag(t, tag);
    char obj[64], src[K3_PATH_MAX + 64], path[K3_PATH_MAX + 64];
    snprintf(obj, sizeof obj, "user_%d.o", (int)t->family);
    snprintf(path, sizeof path, "%s/%s", k->rt, obj);
    if (!file_exists(path)) {
        char defs[40];
        snprintf(defs, sizeof defs, "-DKOPE_USER_FAMILY=%d", (int)t->family);
        int rc = rt_compile(p, "user.c", obj, "-O2", defs);
        if (rc)
            return rc;
    }
    /* the reference is a task file's text (hostile like a candidate): its
     * compile writes only into a directory of its own */
    char udir[K3_PATH_MAX];
    snprintf(udir, sizeof udir, "%s/u%s", k->rt, tag);
    snprintf(path, sizeof path, "%s/uref_v.o", udir);
    if (file_exists(path))
        return 0;
    if (mkdir(udir, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", udir, strerror(errno));
    if (k3_screen_source(u->ref, u->ref_len, &out->screen_rule, out->detail, sizeof out->detail)) {
        char d[PLAT_DETAIL_MAX];
        snprintf(d, sizeof d, "%s", out->detail);
        snprintf(out->detail, sizeof out->detail, "the task's reference: %.200s", d);
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        return 1;
    }
    snprintf(src, sizeof src, "%s/uref.c", udir);
    if (proc_file_write(src, u->ref, u->ref_len))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", src);
    for (int v = 0; v < 2; v++) {
        struct proc_cmd c;
        struct proc_result res;
        char raw[PLAT_DIAG_MAX], proto[K3_PATH_MAX + 64];
        snprintf(proto, sizeof proto, "%s/proto_%s.h", k->rt, plat_family_name(t->family));
        snprintf(path, sizeof path, "%s/uref_%c.o", udir, v ? 'v' : 's');
        proc_cmd_init(&c);
        proc_cmd_split(&c, k->cc);
        proc_cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
        proc_cmd_split(&c, v ? "-O3" : k->is_clang ? "-O2 -fno-vectorize -fno-slp-vectorize"
                                               : "-O2 -fno-tree-vectorize");
        proc_cmd_split(&c, "-std=gnu11 -fno-common -Werror=implicit-function-declaration");
        proc_cmd_split(&c, k->is_clang ? "-fno-crash-diagnostics" : NULL);
        proc_cmd_arg(&c, "-Dkope_kernel=%s", v ? "kope_user_autovec" : "kope_user_scalar");
        proc_cmd_arg(&c, "-I%s", k->rt);
        proc_cmd_arg(&c, "-include");
        proc_cmd_arg(&c, "%s", proto);
        proc_cmd_arg(&c, "-c");
        proc_cmd_arg(&c, "%s", src);
        proc_cmd_arg(&c, "-o");
        proc_cmd_arg(&c, "%s", path);
        int rc = run_tool(p, &c, raw, sizeof raw, &res, udir, 0);
        if (rc)
            return rc;
        if (!tool_ok(&res)) {
            /* a killed or crashed compiler's words are not kept at all */
            if (res.exited)
                k3_diag_clean(raw, src, out->diag, sizeof out->diag);
            out->reason = PLAT_FAIL_COMPILE_ERROR;
            snprintf(out->detail, sizeof out->detail, "the task's reference does not build with "
                     "the %s signature", plat_family_name(t->family));
            unlink(path);
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- compile --- */

/* The compiler and the flags of every run over the candidate's file (the
 * preprocessed screen and the compile): made in one place, so the tokens
 * screened are the tokens compiled. */
static void cand_cmd_init(struct proc_cmd *c, const struct k3 *k, const char *proto)
{
    proc_cmd_init(c);
    proc_cmd_split(c, k->cc);
    proc_cmd_split(c, k->cflags);
    /* gcc reports every error (clang stops at 20): a source with thousands
     * overflows K3_INC_LIST_MAX, and a cut header list is refused as a
     * header, not reported as the compile error it is (the board's gcc-14). */
    proc_cmd_split(c, "-std=gnu11 -fno-common -Werror=implicit-function-declaration");
    /* clang writes a crash reproducer (the preprocessed source, a script
     * with host paths) unless told not to; gcc writes none unless asked
     * (-freport-bug) */
    proc_cmd_split(c, k->is_clang ? "-fno-crash-diagnostics" : "-fmax-errors=20");
    proc_cmd_arg(c, "-I%s", k->rt);
    proc_cmd_arg(c, "-include");
    proc_cmd_arg(c, "%s", proto);
}

#ifndef K3_PP_MAX
#define K3_PP_MAX (16u << 20) /* the preprocessed candidate read back */
#endif

/* Gate 1b: the candidate's file through the preprocessor (-E -dD, the
 * compile's own flags), and its tokens screened after macro expansion
 * (k3_screen_preprocessed). Returns 0 with out->reason set when refused or
 * when the preprocessor rejects the file (its diagnostics kept, cleaned),
 * 0 with out->reason NONE when clean, PLAT_ERR_* otherwise. */
static int cand_screen_pp(struct platform *p, const char *file, const char *proto, const char *dir,
                          struct plat_build *out)
{
    struct k3 *k = p->priv;
    if (!k->hdr_names) {
        /* the allowed headers' identifiers, once per open platform */
        size_t dn = strlen(k->inc_direct), cn = strlen(k->inc_closure);
        char *paths = malloc(dn + cn + 1);
        k->hdr_names = calloc(1, sizeof *k->hdr_names);
        int bad = !paths || !k->hdr_names;
        if (!bad) {
            memcpy(paths, k->inc_direct, dn);
            memcpy(paths + dn, k->inc_closure, cn + 1);
            bad = k3_names_load(paths, k->hdr_names) != 0;
        }
        free(paths);
        if (bad) {
            free(k->hdr_names);
            k->hdr_names = NULL;
            return plat_set_err(p, PLAT_ERR_HARNESS, "cannot read the allowed headers for their names");
        }
    }
    char ifile[K3_PATH_MAX + 64], raw[PLAT_DIAG_MAX];
    snprintf(ifile, sizeof ifile, "%s/cand.i", dir);
    struct proc_cmd c;
    struct proc_result res;
    cand_cmd_init(&c, k, proto);
    proc_cmd_split(&c, "-E -dD");
    proc_cmd_arg(&c, "%s", file);
    proc_cmd_arg(&c, "-o");
    proc_cmd_arg(&c, "%s", ifile);
    int rc = run_tool(p, &c, raw, sizeof raw, &res, dir, 0);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        /* a preprocessing error is the compile error it would be */
        size_t kept = k3_diag_clean(raw, file, out->diag, sizeof out->diag);
        out->diag_truncated = res.truncated || kept + 1 >= sizeof out->diag;
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        snprintf(out->detail, sizeof out->detail, "%s",
                 res.timed_out ? "compiler timed out" : "the preprocessor rejected the source");
        unlink(ifile);
        return 0;
    }
    FILE *f = fopen(ifile, "rb");
    char *text = f ? malloc(K3_PP_MAX + 1) : NULL;
    size_t n = text ? fread(text, 1, K3_PP_MAX + 1, f) : 0;
    int read_err = !f || !text || ferror(f);
    if (f)
        fclose(f);
    unlink(ifile);
    if (read_err) { /* no preprocessed text is a refusal, never a pass */
        free(text);
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        out->screen_rule = PLAT_SCREEN_DIRECTIVE;
        snprintf(out->detail, sizeof out->detail, "the preprocessed source could not be read back");
        return 0;
    }
    if (n > K3_PP_MAX) {
        free(text);
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        out->screen_rule = PLAT_SCREEN_TOO_BIG;
        snprintf(out->detail, sizeof out->detail, "preprocessed source over %u bytes", K3_PP_MAX);
        return 0;
    }
    if (k3_screen_preprocessed(text, n, file, k->hdr_names, &out->screen_rule, out->detail,
                               sizeof out->detail))
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
    free(text);
    return 0;
}

/* Link the JUDGE program for task t: harness.c's judge, the reference, the
 * op's baselines, OpenBLAS and SLEEF where they are peers, a user op's
 * reference objects by utag - and no candidate code at all - into prog, in
 * the compile sandbox with rw_dir writable. 0 when the linker ran (res says
 * how it ended). */
static int link_judge(struct platform *p, const struct plat_task *t, const char *utag,
                      const char *prog, const char *rw_dir, struct proc_result *res, char *diag,
                      size_t dl)
{
    struct k3 *k = p->priv;
    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->cc);
    proc_cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
    proc_cmd_split(&c, k->ldflags);
    proc_cmd_split(&c, "-static");
    proc_cmd_split(&c, k->ld_no_deplibs ? "-Wl,--no-dependent-libraries" : NULL);
    proc_cmd_arg(&c, "%s/harness.o", k->rt);
    proc_cmd_arg(&c, "%s/ref.o", k->rt);
    /* OpenBLAS is linked only where it is a baseline (blas_peer_op):
     * scanning the static archive is a third of the link time */
    int blas = k->blas_dir[0] && blas_peer_op(t->op);
    proc_cmd_arg(&c, "%s/%s", k->rt, blas ? "blas.o" : "blas_none.o");
    int sleef = k->sleef && sleef_peer_op(t->op);
    proc_cmd_arg(&c, "%s/%s", k->rt, sleef ? "sleef.o" : "sleef_none.o");
    if (t->op == PLAT_OP_USER) { /* the reference and both baselines are the user's file */
        proc_cmd_arg(&c, "%s/user_%d.o", k->rt, (int)t->family);
        proc_cmd_arg(&c, "%s/u%s/uref_s.o", k->rt, utag);
        proc_cmd_arg(&c, "%s/u%s/uref_v.o", k->rt, utag);
    } else {
        proc_cmd_arg(&c, "%s/base_scalar_%d.o", k->rt, (int)t->op);
        proc_cmd_arg(&c, "%s/base_autovec_%d.o", k->rt, (int)t->op);
    }
    if (blas) {
        proc_cmd_arg(&c, "-L%s/lib", k->blas_dir);
        proc_cmd_arg(&c, "-lopenblas");
    }
    if (sleef) {
        proc_cmd_arg(&c, "-L%s/lib", k->blas_dir);
        proc_cmd_arg(&c, "-lsleef");
    }
    proc_cmd_arg(&c, "-lm");
    proc_cmd_arg(&c, "-o");
    proc_cmd_arg(&c, "%s", prog);
    return run_tool(p, &c, diag, dl, res, rw_dir, blas || sleef);
}

/* Link the KERNEL program: kserve.o (the command loop, fault classes, the
 * malloc count through --wrap, the icount markers) and kcall.o (kcall.S:
 * the trampoline every call goes through) with obj as kope_kernel,
 * and libc, into prog. 0 when the linker ran. */
static int link_kernel(struct platform *p, const char *obj, const char *prog, const char *rw_dir,
                       struct proc_result *res, char *diag, size_t dl)
{
    struct k3 *k = p->priv;
    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->cc);
    proc_cmd_split(&c, k->native ? K3_NATIVE_MARCH : NULL);
    proc_cmd_split(&c, k->ldflags);
    proc_cmd_split(&c, "-static -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc");
    /* lld: a `#pragma comment(lib, PATH)` in the candidate must not make
     * the linker open PATH (GNU ld reads no dependent libraries at all) */
    proc_cmd_split(&c, k->ld_no_deplibs ? "-Wl,--no-dependent-libraries" : NULL);
    proc_cmd_arg(&c, "%s/kserve.o", k->rt);
    proc_cmd_arg(&c, "%s/kcall.o", k->rt); /* the call: clean state before, callee-saved checked after */
    proc_cmd_arg(&c, "%s", obj);
    proc_cmd_arg(&c, "-lm");
    proc_cmd_arg(&c, "-o");
    proc_cmd_arg(&c, "%s", prog);
    return run_tool(p, &c, diag, dl, res, rw_dir, 0);
}

/* Where task t's judge program lives: rt/judge_<op>, or for a user op
 * rt/u<tag>/judge next to its reference objects. Never in a build's own
 * c<id>/, which a kernel process under qemu can write: the judge of a later
 * run of that build would be the candidate's. */
static void judge_path(const struct k3 *k, const struct plat_task *t, char *path, size_t cap)
{
    if (t->op == PLAT_OP_USER || (int)t->op < 0 || (int)t->op >= PLAT_OP_COUNT) {
        char tag[24];
        user_tag(t, tag);
        snprintf(path, cap, "%s/u%s/judge", k->rt, tag);
    } else {
        snprintf(path, cap, "%s/judge_%d", k->rt, (int)t->op);
    }
}

/* The judge program for task t, into path (cap bytes, judge_path): linked
 * once per op (a user op's once per reference). A judge that has the name
 * kope_kernel is the build's own bug and refused: the candidate is never
 * linked here. */
static int judge_get(struct platform *p, const struct plat_task *t, const char *utag,
                     char *path, size_t cap)
{
    struct k3 *k = p->priv;
    int user = t->op == PLAT_OP_USER || (int)t->op < 0 || (int)t->op >= PLAT_OP_COUNT;
    judge_path(k, t, path, cap);
    if (user ? file_exists(path) : (k->judge_built & (1u << t->op)) != 0)
        return 0;
    char diag[4096], err[200];
    struct proc_result res;
    int rc = link_judge(p, t, utag, path, k->rt, &res, diag, sizeof diag);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        diag[strcspn(diag, "\n")] = '\0';
        return plat_set_err(p, PLAT_ERR_HARNESS, "the judge program does not link: %.300s", diag);
    }
    rc = k3_program_defines(path, "kope_kernel", err, sizeof err);
    if (rc < 0)
        return plat_set_err(p, rc, "judge program: %.150s", err);
    if (rc == 1)
        return plat_set_err(p, PLAT_ERR_HARNESS, "the judge program defines kope_kernel");
    if (!user)
        k->judge_built |= 1u << t->op;
    return 0;
}

/* The reference k3_screen_program compares a kernel program with: kserve.o
 * linked with rt/null_kernel.o as the kernel, the same way. One for every
 * op (the kernel program holds kserve and libc only). */
static int null_ref_get(struct platform *p, struct k3_prog_ref **out)
{
    struct k3 *k = p->priv;
    *out = NULL;
    if (k->null_ref) {
        *out = k->null_ref;
        return 0;
    }
    char prog[K3_PATH_MAX + 64], nobj[K3_PATH_MAX + 64], diag[4096], err[200];
    snprintf(nobj, sizeof nobj, "%s/null_kernel.o", k->rt);
    snprintf(prog, sizeof prog, "%s/null_program", k->rt);
    struct proc_result res;
    int rc = link_kernel(p, nobj, prog, k->rt, &res, diag, sizeof diag);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        diag[strcspn(diag, "\n")] = '\0';
        return plat_set_err(p, PLAT_ERR_HARNESS, "the null kernel program does not link: %.300s", diag);
    }
    struct k3_prog_ref *ref = malloc(sizeof *ref);
    if (!ref)
        return plat_set_err(p, PLAT_ERR_INTERNAL, "out of memory");
    k3_prog_ref_init(ref);
    rc = k3_prog_ref_take(prog, ref, err, sizeof err);
    if (rc) {
        free(ref);
        return plat_set_err(p, rc, "null kernel program: %.150s", err);
    }
    k->null_ref = ref;
    *out = ref;
    return 0;
}

static void null_ref_put(struct k3_prog_ref *ref, int own)
{
    if (own && ref) {
        k3_prog_ref_free(ref);
        free(ref);
    }
}

static int k3_compile(struct platform *p, const struct plat_task *t, const char *src, size_t len,
                      struct plat_build *out)
{
    struct k3 *k = p->priv;
    double t0 = proc_now_ms();
    int rc = 0;
    int screen = !(p->set.flags & PLAT_SET_UNSAFE_NO_SCREEN);
    int obj_screen = screen && !(p->set.flags & PLAT_SET_UNSAFE_NO_OBJECT_SCREEN);
    int src_screen = obj_screen && !(p->set.flags & PLAT_SET_UNSAFE_NO_SOURCE_SCREEN);

    /* gate 1: the source screen, before anything is built or written */
    if (src_screen && k3_screen_source(src, len, &out->screen_rule, out->detail, sizeof out->detail)) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        goto out;
    }
    if (len > PLAT_SRC_MAX) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        out->screen_rule = PLAT_SCREEN_TOO_BIG;
        snprintf(out->detail, sizeof out->detail, "source over %d bytes", PLAT_SRC_MAX);
        goto out;
    }
    char utag[24] = "";
    rc = rt_build(p);
    if (!rc && t->op != PLAT_OP_USER)
        rc = rt_base(p, t->op);
    if (rc)
        return rc;
    out->id = ++k->next_id;
    char dir[256], file[K3_PATH_MAX + 64], obj[K3_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)out->id);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", dir, strerror(errno));
    snprintf(file, sizeof file, "%s/cand.c", dir);
    snprintf(obj, sizeof obj, "%s/cand.o", dir);
    if (proc_file_write(file, src, len))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", file);

    /* compile the candidate alone, in the compile sandbox (run_tool: the
     * toolchain's view, rt/ read-only, only c<id>/ writable); -H and -MD
     * make the compiler list every file it reads, which k3_screen_includes
     * judges */
    char deps[K3_PATH_MAX + 64], proto[K3_PATH_MAX + 64];
    snprintf(deps, sizeof deps, "%s/cand.d", dir);
    snprintf(proto, sizeof proto, "%s/proto_%s.h", k->rt, plat_family_name(t->family));

    /* gate 1b: the same file after the preprocessor, where token pasting
     * has made what it makes */
    if (src_screen) {
        rc = cand_screen_pp(p, file, proto, dir, out);
        if (rc)
            return rc;
        if (out->reason != PLAT_FAIL_NONE)
            goto out;
    }

    /* compile the candidate alone; -H and -MD make the compiler list every
     * file it reads, which k3_screen_includes judges */
    struct proc_cmd c;
    struct proc_result res;
    cand_cmd_init(&c, k, proto);
    if (screen)
        proc_cmd_split(&c, "-H -MD");
    if (screen) {
        proc_cmd_arg(&c, "-MF");
        proc_cmd_arg(&c, "%s", deps);
    }
    proc_cmd_arg(&c, "-c");
    proc_cmd_arg(&c, "%s", file);
    proc_cmd_arg(&c, "-o");
    proc_cmd_arg(&c, "%s", obj);
    char *raw = malloc(K3_INC_LIST_MAX);
    if (!raw)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    rc = run_tool(p, &c, raw, K3_INC_LIST_MAX, &res, dir, 0);
    if (rc) {
        free(raw);
        return rc;
    }
    /* A compiler that did not finish on its own (killed at the timeout or
     * the output cap, by a signal, or crashed inside: clang reports a crash
     * of its frontend and exits 1) left no complete dependency list and
     * said things about no file in particular: none of it is kept. */
    int crashed = res.exited && (strstr(raw, "frontend command failed") ||
                                 strstr(raw, "internal compiler error") ||
                                 strstr(raw, "PLEASE submit a bug report"));
    if (!res.exited || res.timed_out || res.flooded || crashed) {
        free(raw);
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        snprintf(out->detail, sizeof out->detail, "%s",
                 res.timed_out ? "compiler timed out"
                 : res.flooded ? "compiler output over the cap"
                 : crashed ? "compiler crashed (nothing it said is kept)"
                 : res.cpu_limit ? "compiler over its CPU time limit" : "compiler killed by a signal");
        goto out;
    }
    if (screen) {
        char own[3 * K3_PATH_MAX + 256], *dtext = NULL;
        snprintf(own, sizeof own, "%s\n%s\n%s/kernel_abi.h\n", file, proto, k->rt);
        /* fail closed: a list that is missing, unreadable, over the cap or
         * cut short reaches k3_screen_includes as NULL or refused there */
        FILE *df = fopen(deps, "rb");
        if (df) {
            dtext = malloc(K3_INC_LIST_MAX);
            size_t dn = dtext ? fread(dtext, 1, K3_INC_LIST_MAX - 1, df) : 0;
            if (dtext && (ferror(df) || dn == K3_INC_LIST_MAX - 1)) {
                free(dtext);
                dtext = NULL;
            } else if (dtext) {
                dtext[dn] = '\0';
                if (strlen(dtext) != dn) { /* a NUL inside: not a list kope can read */
                    free(dtext);
                    dtext = NULL;
                }
            }
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
        snprintf(out->detail, sizeof out->detail, "compiler rejected the source");
        goto out;
    }

    /* gate 2: the object check */
    if (obj_screen) {
        rc = k3_screen_object(obj, &out->screen_rule, out->detail, sizeof out->detail);
        if (rc < 0)
            return plat_set_err(p, rc, "object check: %.300s", out->detail);
        if (rc == 1) {
            rc = 0;
            out->reason = PLAT_FAIL_SCREEN_REJECTED;
            goto out;
        }
    }
    /* the object the judge links unchanged: core hashes it into the outcome,
     * and an export ships exactly it (k3_object_export) */
    snprintf(out->object, sizeof out->object, "%s", obj);
    /* the stack traffic the feedback after a pass shows (a spill is not
     * visible in the cost figure); counting is best-effort, never a verdict */
    struct k3_spills sp;
    if (k3_object_spills(obj, &sp) == 0) {
        out->has_spills = 1;
        out->vreg_spills = sp.vreg_stores;
        out->vreg_reloads = sp.vreg_loads;
        out->stack_stores = sp.stack_stores;
        out->stack_loads = sp.stack_loads;
    }

    /* a user op's reference objects, after the candidate's own checks: when
     * the candidate is the reference (core's check of it), its own compile
     * names what is wrong with it */
    if (t->op == PLAT_OP_USER) {
        rc = rt_user(p, t, utag, out);
        if (rc == 1) {
            rc = 0;
            goto out;
        }
        if (rc)
            return rc;
    }

    /* link the kernel program (kserve + the candidate); the judge program
     * is linked once per op (judge_get), never with candidate code */
    snprintf(out->path, sizeof out->path, "%s/kernel", dir);
    char link_diag[4096];
    rc = link_kernel(p, obj, out->path, dir, &res, link_diag, sizeof link_diag);
    if (rc)
        return rc;
    if (!tool_ok(&res)) {
        /* kope's words only: the linker's own text can quote any file it
         * was made to open */
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        if (res.timed_out)
            snprintf(out->detail, sizeof out->detail, "link failed: linker timed out");
        else
            plat_diag_link(link_diag, out->detail, sizeof out->detail);
        size_t dl = strlen(out->diag);
        snprintf(out->diag + dl, sizeof out->diag - dl, "%s\n", out->detail);
        out->path[0] = '\0';
        goto out;
    }
    /* gate 3: the kernel program against the same link with a null kernel:
     * what runs outside main and the kernel call (init/fini arrays, .init,
     * .fini, IRELATIVE resolvers, entry, TLS, interpreter) must be kserve's
     * and libc's own, whatever the object check let through. (The judge
     * runs none of it either way: it is another program.) */
    if (screen) {
        struct k3_prog_ref *ref = NULL;
        rc = null_ref_get(p, &ref);
        if (rc)
            return rc;
        rc = k3_screen_program(out->path, obj, ref, &out->screen_rule, out->detail, sizeof out->detail);
        if (rc < 0)
            return plat_set_err(p, rc, "program check: %.300s", out->detail);
        if (rc == 1) {
            rc = 0;
            out->reason = PLAT_FAIL_SCREEN_REJECTED;
            out->path[0] = '\0';
            goto out;
        }
    }
    /* the judge program this build is run by (cached per op) */
    char judge[K3_PATH_MAX + 64];
    rc = judge_get(p, t, utag, judge, sizeof judge);
    if (rc)
        return rc;
    out->ok = 1;
out:
    out->compile_ms = proc_now_ms() - t0;
    return 0;
}

static void k3_build_free(struct platform *p, struct plat_build *b)
{
    struct k3 *k = p->priv;
    if (!k || !b->id)
        return;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)b->id);
    proc_rm_tree(dir);
    b->path[0] = '\0';
    b->ok = 0;
}

/* ------------------------------------------------------- object export --- */

/* The objcopy that reads this toolchain's riscv64 objects: clang-N's own
 * llvm-objcopy-N first, then any llvm-objcopy, then binutils' (the cross
 * one off a RISC-V machine, the native one on it). "" when none is found. */
static void objcopy_find(const struct k3 *k, char *out, size_t cap)
{
    char ver[16] = "", llvm[32];
    const char *c = strstr(k->cc, "clang-");
    size_t n = c ? strspn(c + 6, "0123456789") : 0;
    if (n && n < sizeof ver)
        memcpy(ver, c + 6, n), ver[n] = '\0';
    snprintf(llvm, sizeof llvm, "llvm-objcopy-%s", ver);
    const char *cand[] = {ver[0] ? llvm : NULL, "llvm-objcopy",
                          k->native ? "objcopy" : "riscv64-linux-gnu-objcopy"};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof cand / sizeof cand[0] && !out[0]; i++)
        if (cand[i] && cmd_found(cand[i]))
            snprintf(out, cap, "%s", cand[i]);
}

/* platform_ops.object_export: the judged object checked again by the object
 * check, renamed by objcopy inside the build's own directory, compared with
 * the judged one (platform/k3/export.c: only the name changed), then copied
 * to path. */
static int k3_object_export(struct platform *p, const struct plat_build *b, const char *symbol,
                            const char *path, int *refused, char *why, size_t why_len)
{
    struct k3 *k = p->priv;
    enum plat_screen_rule rule;
    char detail[PLAT_DETAIL_MAX], tool[64], shipped[K3_PATH_MAX + 64], diag[1024];
    *refused = 1;
    if (!b->ok || !b->object[0]) {
        snprintf(why, why_len, "the build has no judged object");
        return 0;
    }
    if (!symbol[0] || strspn(symbol, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
                          strlen(symbol) || (symbol[0] >= '0' && symbol[0] <= '9'))
        return plat_set_err(p, PLAT_ERR_BAD_TASK, "export symbol '%.80s' is not a C identifier", symbol);
    int rc = k3_screen_object(b->object, &rule, detail, sizeof detail);
    if (rc < 0)
        return plat_set_err(p, rc, "object check: %.300s", detail);
    if (rc == 1) {
        snprintf(why, why_len, "the object check refuses it [%s]: %s", plat_screen_rule_name(rule), detail);
        return 0;
    }
    objcopy_find(k, tool, sizeof tool);
    if (!tool[0])
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "no objcopy that reads riscv64 objects (llvm-objcopy, "
                            "%s)\nhint: apt-get install llvm-19 (or binutils-riscv64-linux-gnu)",
                            k->native ? "objcopy" : "riscv64-linux-gnu-objcopy");
    char bdir[K3_PATH_MAX + 32];
    snprintf(bdir, sizeof bdir, "%s/c%llu", k->work, (unsigned long long)b->id);
    snprintf(shipped, sizeof shipped, "%s/export.o", bdir);
    /* objcopy reads the candidate's object (hostile bytes): it runs in the
     * compile sandbox, whose view is the compiler's, so its own path (found
     * in PATH here; /usr/lib, where its libraries live, is in the view) is
     * added to the view for this run */
    char tool_path[K3_PATH_MAX];
    if (cmd_path(tool, tool_path, sizeof tool_path) != 0)
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "%s: not found in PATH", tool);
    struct proc_cmd c;
    struct proc_result res;
    proc_cmd_init(&c);
    proc_cmd_arg(&c, "%s", tool_path);
    proc_cmd_arg(&c, "--redefine-sym");
    proc_cmd_arg(&c, "kope_kernel=%s", symbol);
    proc_cmd_arg(&c, "%s", b->object);
    proc_cmd_arg(&c, "%s", shipped);
    snprintf(k->tool_extra, sizeof k->tool_extra, "%s", tool_path);
    rc = run_tool(p, &c, diag, sizeof diag, &res, bdir, 0);
    k->tool_extra[0] = '\0';
    if (rc)
        return rc;
    if (!tool_ok(&res))
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "%s --redefine-sym failed: %.300s", tool, diag);
    rc = k3_object_compare(b->object, shipped, "kope_kernel", symbol, path, detail, sizeof detail);
    if (rc < 0)
        return plat_set_err(p, rc, "renamed object: %.300s", detail);
    if (rc == 1) {
        snprintf(why, why_len, "the renamed object is not the judged one: %s (renamed by %s; llvm-objcopy "
                 "keeps every section in place)", detail, tool);
        return 0;
    }
    *refused = 0;
    return 0;
}

/* ------------------------------------------------------- harness runs --- */

/* Kernel processes of one measure run that may hold a count (the candidate,
 * its A/A repeat: a few; more is refused as a protocol error) */
#define K3_KKEYS_MAX 8

/* What a harness run produced, before it is turned into a result struct. */
struct hrun {
    struct proc_result res;
    char out[1024];               /* first bytes of the run's stdout/stderr: never
                                     copied into a verdict (the candidate wrote it) */
    struct plat_report r;         /* what the judge reported (platform/judge/report.h) */
    int reduced_shape;            /* verify: the task case was cut (emulation cap) */
    int icount_expected;          /* counted calls the judge made ("icount_region") */
    long icount_pid[PLAT_MAX_BASELINES + 1]; /* the process the judge made each in */
    int icount_blocks;            /* counted blocks in the plugin's file */
    char icount_err[160];         /* why the plugin's file was refused, "" = fine */
    unsigned char key[16];        /* the run's icount key (plugin keyfd=4): the judge's blocks */
    int n_kkeys;                  /* kernel processes' keys the judge announced */
    long kkey_pid[K3_KKEYS_MAX];  /* "icount_key PID HEX": that process's plugin key */
    unsigned char kkey[K3_KKEYS_MAX][16];
    uint64_t mca_cycles[PLAT_MAX_BASELINES + 1]; /* per counted call, 0 = not modelled */
    char mca_why[200];            /* why a counted call has no cycles, "" = all have */
};

/* llvm-mca cycles of counted call j, region r of the authenticated block
 * body[len] (platform/k3/mca.h); a call without them says why once. */
static void mca_take(struct k3 *k, struct hrun *h, int j, const char *body, size_t len, int r)
{
    char why[160];
    uint64_t c = 0;
    int rc = k3_mca_region_cycles(&k->mca, body, len, (unsigned)r, &c, why, sizeof why);
    h->mca_cycles[j] = rc ? 0 : c;
    if (rc && !h->mca_why[0])
        snprintf(h->mca_why, sizeof h->mca_why, "counted call %d: %.150s", j, why);
}

/* The plugin's file: one block per process that ran under it, appended at
 * its exit ("kope-icount N" ... "total ... pid P"). Each counted call was
 * announced by the judge as "icount_region IDX NAME PID": the candidate's in
 * its kernel process, the baselines' (emulated) in the judge itself. A block
 * with regions must come from a process the judge named and hold exactly
 * the regions the judge announced for it, in order; a block with no region
 * (a verify process, a forked helper that never reached a marker) is
 * skipped. Anything else - a block from a process the judge did not name
 * (a candidate's fork calling the markers), a second block for one pid,
 * dropped regions, a marker executed out of turn ("stray": a kernel closing
 * its own region early), more than one vCPU (a thread racing the counters),
 * an announced call no block holds - and nothing is claimed. */
static void icount_take(char *text, size_t len, struct hrun *h, struct k3 *k)
{
    char *p = text, *end = text + len;
    int filled[PLAT_MAX_BASELINES + 1] = {0};
    long seen_pid[PLAT_MAX_BASELINES + 1];
    int n_seen = 0;
    while (p < end) {
        char *next = strstr(p + 1, "kope-icount ");
        size_t bl = next ? (size_t)(next - p) : (size_t)(end - p);
        struct k3_icount ic;
        /* every block must carry the run's tag: a guest can write the
         * plugin's file too (qemu-user), only the key tells them apart */
        size_t body = 0;
        long kpid = -1; /* the kernel process whose key authenticated the block */
        int ok = k3_icount_block_auth(p, bl, h->key, &body) == 0;
        if (!ok) {
            /* a kernel process's block (its own qemu, its own key, which the
             * judge announced): the pid it claims picks the key, and must be
             * the pid inside what that key authenticates */
            char save0 = p[bl];
            p[bl] = '\0';
            const char *pq = strstr(p, " pid ");
            long claim = pq ? atol(pq + 5) : -1;
            p[bl] = save0;
            for (int i = 0; i < h->n_kkeys && !ok; i++)
                if (h->kkey_pid[i] == claim && claim > 0 &&
                    k3_icount_block_auth(p, bl, h->kkey[i], &body) == 0) {
                    ok = 1;
                    kpid = claim;
                }
        }
        if (!ok || k3_icount_parse(p, body, &ic) != 0) {
            snprintf(h->icount_err, sizeof h->icount_err,
                     "a block of the plugin's file is not authenticated by the run's key");
            return;
        }
        bl = body;
        char save = p[bl];
        p[bl] = '\0';
        const char *vc = strstr(p, " vcpus "), *st = strstr(p, " stray "), *pp = strstr(p, " pid "),
                   *fk = strstr(p, " forks ");
        int vcpus = vc ? atoi(vc + 7) : 1;
        long stray = st ? atol(st + 7) : 0, pid = pp ? atol(pp + 5) : -1, forks = fk ? atol(fk + 7) : -1;
        p[bl] = save;
        if (kpid > 0 && pid != kpid) {
            snprintf(h->icount_err, sizeof h->icount_err,
                     "a kernel process's block names another pid than its key's");
            return;
        }
        /* the candidate's counted process must not have started another:
         * a forked helper can do the work where no region counts it (found
         * by the session-5 red team: 10,356 instructions claimed for 7e6 of
         * work, a forged 26x best); a block that does not say is refused */
        if (h->icount_expected > 0 && pid == h->icount_pid[0] && forks != 0) {
            snprintf(h->icount_err, sizeof h->icount_err,
                     "the candidate's counted process %s", forks < 0 ? "does not say whether it forked"
                                                                   : "started another process");
            return;
        }
        if (ic.dropped || vcpus > 1 || stray) {
            snprintf(h->icount_err, sizeof h->icount_err,
                     "a process had %llu dropped regions, %d vCPUs, %ld stray markers",
                     (unsigned long long)ic.dropped, vcpus, stray);
            return;
        }
        if (ic.n_regions > 0) {
            int want = 0;
            for (int j = 0; j < h->icount_expected; j++)
                want += h->icount_pid[j] == pid;
            for (int i = 0; i < n_seen; i++)
                if (seen_pid[i] == pid)
                    want = -1;
            if (pid <= 0 || want != ic.n_regions || n_seen > PLAT_MAX_BASELINES) {
                snprintf(h->icount_err, sizeof h->icount_err,
                         "a block of %d regions from pid %ld, where the judge made %d", ic.n_regions,
                         pid, want);
                return;
            }
            seen_pid[n_seen++] = pid;
            int r = 0;
            for (int j = 0; j < h->icount_expected; j++) {
                if (h->icount_pid[j] != pid)
                    continue;
                h->r.icount[j][0] = ic.region[r].insns;
                h->r.icount[j][1] = ic.region[r].vector_ops;
                h->r.icount[j][2] = ic.region[r].vector_mem;
                h->r.icount[j][3] = ic.region[r].unmodelled ? 0 : ic.region[r].vcost;
                h->r.icount[j][4] = ic.region[r].vsetvl;
                h->r.hot[j][0] = ic.region[r].hot_execs;
                h->r.hot[j][1] = ic.region[r].hot_insns;
                h->r.hot[j][2] = ic.region[r].hot_vector_ops;
                h->r.hot[j][3] = ic.region[r].hot_vector_mem;
                h->r.hot[j][4] = ic.region[r].hot_vsetvl;
                if (k->mca_on)
                    mca_take(k, h, j, p, bl, r);
                filled[j] = 1;
                r++;
            }
        }
        p = next ? next : end;
    }
    int j = 0;
    while (j < h->icount_expected && filled[j])
        j++;
    h->icount_blocks = n_seen;
    if (j != h->icount_expected)
        snprintf(h->icount_err, sizeof h->icount_err,
                 "the plugin has no count for the judge's counted call %d of %d", j + 1,
                 h->icount_expected);
    else
        h->r.has_icount = j > 0;
}

/* The plugin's counts, read from the run's folder: a regular file only,
 * never through a link, never blocking on a FIFO (a run could leave either
 * where the plugin writes). Returns the bytes read, -1 when it is not one. */
static ssize_t counts_read(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -2;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == cap)
            break;
    }
    close(fd);
    return (ssize_t)got;
}

static int harness_run_in(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                          const char *mode, struct hrun *h, const char *run)
{
    struct k3 *k = p->priv;
    memset(h, 0, sizeof *h);
    char dir[256], report[K3_PATH_MAX + 64], icount_out[K3_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/c%llu", k->work, (unsigned long long)b->id);
    snprintf(report, sizeof report, "%s/%s.report", dir, mode);
    snprintf(icount_out, sizeof icount_out, "%s/%s.icount", run, mode);
    unlink(report);
    /* the report: a file with no name once the run starts, given as fd 3 */
    int rfd = open(report, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (rfd < 0)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot create %.300s: %.100s", report, strerror(errno));
    unlink(report);
    const struct plat_settings *s = &p->set;
    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_split(&c, k->runner);
    int keyfd = -1;
    if (k->emulated && k->plugin[0] && strcmp(mode, "measure") == 0) {
        char plug[K3_PATH_MAX * 2 + 128];
        if (k3_icount_plugin_arg(k->plugin, icount_out, runner_vlen(k), s->dlen_bits, plug,
                                 sizeof plug - 16)) {
            close(rfd);
            return plat_set_err(p, PLAT_ERR_INTERNAL, "icount plugin: a path holds a comma or is too long");
        }
        /* a fresh key per run, on the child's fd 4: the plugin reads it and
         * closes the descriptor before the guest's first instruction */
        int kp[2];
        if (getrandom(h->key, sizeof h->key, 0) != (ssize_t)sizeof h->key || pipe2(kp, O_CLOEXEC) != 0) {
            close(rfd);
            return plat_set_err(p, PLAT_ERR_INTERNAL, "icount key: %.100s", strerror(errno));
        }
        ssize_t kw = write(kp[1], h->key, sizeof h->key);
        close(kp[1]);
        keyfd = kp[0];
        if (kw != (ssize_t)sizeof h->key) {
            close(rfd);
            close(keyfd);
            return plat_set_err(p, PLAT_ERR_INTERNAL, "icount key: cannot write the key pipe");
        }
        size_t pl = strlen(plug);
        snprintf(plug + pl, sizeof plug - pl, ",keyfd=4%s", k->mca_on ? ",blocks=1" : "");
        proc_cmd_arg(&c, "-plugin");
        proc_cmd_arg(&c, "%s", plug);
    }
    /* the judge program (cached per op; a user op's in the build's dir) */
    char judge[K3_PATH_MAX + 64];
    judge_path(k, t, judge, sizeof judge);
    proc_cmd_arg(&c, "%s", judge);
    proc_cmd_arg(&c, "mode=%s", mode);
    if (t->op == PLAT_OP_USER) { /* embed/harness.c: family, shape kind, input range */
        proc_cmd_arg(&c, "op=user");
        proc_cmd_arg(&c, "family=%d", (int)t->family);
        proc_cmd_arg(&c, "rowwise=%d", plat_task_rowwise(t));
        if (t->user && t->user->in_hi > t->user->in_lo) {
            proc_cmd_arg(&c, "lo=%.9g", t->user->in_lo);
            proc_cmd_arg(&c, "hi=%.9g", t->user->in_hi);
        }
    } else {
        proc_cmd_arg(&c, "op=%s", plat_op_name(t->op));
    }
    proc_cmd_arg(&c, "n=%llu", (unsigned long long)t->n);
    proc_cmd_arg(&c, "rows=%llu", (unsigned long long)t->rows);
    proc_cmd_arg(&c, "cols=%llu", (unsigned long long)t->cols);
    proc_cmd_arg(&c, "m=%llu", (unsigned long long)t->m);
    proc_cmd_arg(&c, "k=%llu", (unsigned long long)t->k);
    proc_cmd_arg(&c, "batch=%llu", (unsigned long long)t->batch);
    proc_cmd_arg(&c, "rtol=%.17g", t->rtol);
    proc_cmd_arg(&c, "atol=%.17g", t->atol);
    /* the inputs' seed: the same for a candidate's verify and measure in
     * this session, not one a kernel can work out from its id */
    uint64_t seed = k->fill_key ^ (b->id * 0x9e3779b97f4a7c15ull);
    seed = (seed ^ (seed >> 31)) * 0xbf58476d1ce4e5b9ull;
    proc_cmd_arg(&c, "seed=%llu", (unsigned long long)((seed ^ (seed >> 29)) & 0xffffffffffffull));
    proc_cmd_arg(&c, "min_ms=%d", s->min_repeat_ms > 0 ? s->min_repeat_ms
                             : k->emulated ? K3_MIN_REPEAT_MS_EMULATED : K3_MIN_REPEAT_MS_NATIVE);
    proc_cmd_arg(&c, "max_rep=%d", s->max_repeats > 0 ? s->max_repeats : 1000);
    proc_cmd_arg(&c, "max_work=%.0f", !k->emulated ? 0.0
                                 : strcmp(mode, "verify") != 0 ? K3_MAX_WORK_EMULATED
                                 : (s->flags & PLAT_SET_FULL_SHAPE) ? 0.0 /* the user accepts the time */
                                                                    : K3_MAX_WORK_VERIFY_EMULATED);
    int hf = 0;
    if (s->flags & PLAT_SET_FLUSH_CACHE) hf |= H_FLAG_FLUSH;
    if (s->flags & PLAT_SET_NO_BASELINES) hf |= H_FLAG_NO_BASELINES;
    if (s->flags & PLAT_SET_NO_PIN) hf |= H_FLAG_NO_PIN;
    if (k->emulated) hf |= H_FLAG_QUICK;
    /* the A/A noise floor: on the machine itself (a board, or the board VM,
     * whose times are labelled), not under qemu-user, where counts are exact */
    if (strcmp(mode, "measure") == 0 && ((k->native && !k->runner[0]) || (s->flags & PLAT_SET_AA)))
        hf |= H_FLAG_AA;
    proc_cmd_arg(&c, "flags=%d", hf);
    proc_cmd_split(&c, k->run_extra[0] ? k->run_extra : NULL); /* k3_verify's (size_seed=, recheck=) */
    /* how the judge starts the kernel program: under a runner (qemu-user)
     * by exec'ing the runner, one kr= per word (the first an absolute
     * path), with the program's path and, in measure runs, the plugin's
     * argument, to which the judge adds its own per-process key; natively
     * by execveat on fd 5 */
    int kfd = open(b->path, O_RDONLY | O_CLOEXEC);
    if (kfd < 0) {
        close(rfd);
        if (keyfd >= 0)
            close(keyfd);
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot open %.300s: %.100s", b->path, strerror(errno));
    }
    /* a qemu-user runner: the judge is its guest and execs it again for each
     * kernel process; any other runner (a wrapper) runs a native judge */
    int kqemu = k->runner[0] && strstr(k->runner, "qemu") != NULL;
    if (kqemu) {
        char rexe[K3_PATH_MAX];
        if (cmd_path(k->runner, rexe, sizeof rexe) != 0) {
            close(rfd);
            close(kfd);
            if (keyfd >= 0)
                close(keyfd);
            return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "runner '%.200s' not found in PATH", k->runner);
        }
        proc_cmd_arg(&c, "kr=%s", rexe);
        const char *w = k->runner + strcspn(k->runner, " \t");
        while (*w) {
            w += strspn(w, " \t");
            size_t wl = strcspn(w, " \t");
            if (wl)
                proc_cmd_arg(&c, "kr=%.*s", (int)wl, w);
            w += wl;
        }
        proc_cmd_arg(&c, "kprog=%s", b->path);
        if (keyfd >= 0) {
            char kplug[K3_PATH_MAX * 2 + 128];
            if (k3_icount_plugin_arg(k->plugin, icount_out, runner_vlen(k), s->dlen_bits, kplug,
                                     sizeof kplug - 16) == 0)
                /* the kernel's own qemu: its blocks too when llvm-mca models them */
                proc_cmd_arg(&c, "kplugin=%s%s", kplug, k->mca_on ? ",blocks=1" : "");
        }
    }
    if (c.overflow) {
        close(rfd);
        close(kfd);
        if (keyfd >= 0)
            close(keyfd);
        return plat_set_err(p, PLAT_ERR_INTERNAL, "harness command line too long");
    }
    int timeout = s->timeout_ms > 0 ? s->timeout_ms
                  : k->emulated ? K3_TIMEOUT_MS_EMULATED : K3_TIMEOUT_MS_NATIVE;
    if (k->emulated && (s->flags & PLAT_SET_FULL_SHAPE) && s->timeout_ms <= 0 && strcmp(mode, "verify") == 0)
        timeout *= 10; /* a whole large task under qemu: minutes, not seconds */
    /* The CPU limit bounds a kernel that computes forever, whatever the
     * machine's load; the wall clock only catches one that blocks without
     * using CPU. Under emulation on a loaded machine a run waits for a core
     * most of the time (a 10 s verify took 60 s of wall time at load 15), so
     * there the default wall bound is 4x the CPU bound: no verdict depends on
     * how busy the machine is. An explicit timeout_ms is taken as given. */
    int cpu_s = timeout / 1000 + 1;
    if (k->emulated && s->timeout_ms <= 0)
        timeout *= 4;
    struct proc_spec r = {
        .argv = c.argv, .cwd = run, .timeout_ms = timeout, .cpu_s = cpu_s,
        .mem_bytes = s->mem_limit_bytes ? s->mem_limit_bytes : K3_MEM_LIMIT,
        /* the operand arena is a memfd of 1 GiB (harness.c H_ARENA_BYTES):
         * a file, so RLIMIT_FSIZE must allow it */
        .fsize_bytes = (uint64_t)1 << 30,
        .output_cap = s->output_cap_bytes ? s->output_cap_bytes : K3_OUTPUT_CAP,
        .out = h->out, .out_len = sizeof h->out,
        .fd3 = rfd, .fd4 = keyfd, .fd5 = kfd,
        /* the judge execs: under a runner the host's emulator (any path of
         * the minimal read-only root: docs/K3-HARNESS.md says what that
         * widens), natively only the kernel program's descriptor (6 in the
         * kernel process, kproto.h) */
        .flags = (s->flags & PLAT_SET_UNSAFE_NO_ISOLATION) ? 0u
                 : PROC_ISOLATE | (kqemu ? PROC_EXEC_ANY : PROC_EXEC_FD),
        .exec_fd = 6,
        .rw_dir = run,
    };
    /* NULL-ended: the judge (in rt/, which the run does not otherwise see),
     * the plugin (measure) */
    int n_ro = 0;
    r.ro_paths[n_ro++] = judge;
    r.ro_paths[n_ro++] = b->path; /* the kernel program: qemu execs it by name */
    if (k->plugin[0] && strcmp(mode, "measure") == 0)
        r.ro_paths[n_ro++] = k->plugin;
    int rc = proc_run(&r, &h->res, p->err, sizeof p->err);
    close(kfd);
    if (keyfd >= 0)
        close(keyfd);
    if (rc) {
        close(rfd);
        return rc;
    }
    snprintf(k->isolation, sizeof k->isolation, "%s", h->res.isolation);
    /* the report (an empty one just means the run died early) */
    char *text = malloc(K3_REPORT_MAX + 1);
    if (!text) {
        close(rfd);
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    }
    ssize_t n = pread(rfd, text, K3_REPORT_MAX, 0);
    close(rfd);
    text[n > 0 ? n : 0] = '\0';
    /* "icount_region IDX NAME PID": where the judge made each counted call */
    for (const char *q = text; (q = strstr(q, "icount_region ")); q++) {
        if (q != text && q[-1] != '\n')
            continue;
        int idx = -1;
        long pid = -1;
        char name[64];
        if (sscanf(q, "icount_region %d %63s %ld", &idx, name, &pid) != 3 ||
            idx != h->icount_expected || h->icount_expected > PLAT_MAX_BASELINES) {
            snprintf(h->icount_err, sizeof h->icount_err, "the judge's counted calls do not parse");
            break;
        }
        h->icount_pid[h->icount_expected++] = pid;
    }
    /* "icount_key PID HEX": the key the judge gave that kernel process's
     * plugin (the judge holds no candidate code: its word is trusted) */
    for (const char *q = text; (q = strstr(q, "icount_key ")); q++) {
        if (q != text && q[-1] != '\n')
            continue;
        long pid = -1;
        char hex[40];
        if (sscanf(q, "icount_key %ld %39s", &pid, hex) != 2 || strlen(hex) != 32 ||
            h->n_kkeys >= K3_KKEYS_MAX) {
            snprintf(h->icount_err, sizeof h->icount_err, "the judge's icount keys do not parse");
            break;
        }
        for (int i = 0; i < 16; i++) {
            unsigned v = 0;
            if (sscanf(hex + 2 * i, "%2x", &v) != 1)
                v = 0;
            h->kkey[h->n_kkeys][i] = (unsigned char)v;
        }
        h->kkey_pid[h->n_kkeys++] = pid;
    }
    h->reduced_shape = strstr(text, "\nreduced_shape\n") != NULL;
    plat_report_parse(text, &h->r);
    /* counts come from the plugin's file only, never from the report */
    memset(h->r.icount, 0, sizeof h->r.icount);
    h->r.has_icount = 0;
    ssize_t got = k->emulated && k->plugin[0] && strcmp(mode, "measure") == 0
                      ? counts_read(icount_out, text, K3_REPORT_MAX)
                      : -1;
    if (got == -2) {
        snprintf(h->icount_err, sizeof h->icount_err, "the plugin's file is not a regular file");
    } else if (got >= 0) {
        size_t m = (size_t)got;
        text[m] = '\0';
        if (m == K3_REPORT_MAX)
            snprintf(h->icount_err, sizeof h->icount_err, "the plugin's file is over %u bytes",
                     K3_REPORT_MAX);
        else if (!h->icount_err[0])
            icount_take(text, m, h, k);
    } else if (h->icount_expected && k->emulated && k->plugin[0]) {
        snprintf(h->icount_err, sizeof h->icount_err, "the plugin wrote no counts");
    }
    free(text);
    return 0;
}

/* A folder of its own per run, the only one it may write, removed after:
 * nothing a run leaves (a file for the next run to read, a replaced
 * program, a FIFO or a link where kope reads the plugin's counts) reaches
 * the next run or kope. The build's folder, with the kernel program, is
 * read-only to the run (the insider red team's cache across runs and
 * rewritten program). */
static int harness_run(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                       const char *mode, struct hrun *h)
{
    struct k3 *k = p->priv;
    char run[K3_PATH_MAX];
    snprintf(run, sizeof run, "%s/c%llu/run%lu-%s", k->work, (unsigned long long)b->id, ++k->run_seq, mode);
    if (mkdir(run, 0700) != 0) {
        memset(h, 0, sizeof *h);
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot create %.300s: %.100s", run, strerror(errno));
    }
    int rc = harness_run_in(p, t, b, mode, h, run);
    plat_workdir_remove(run, -1);
    return rc;
}

/* The run's fate: the rule every target shares (platform/judge/report.h). */
static void classify(const struct hrun *h, enum plat_fail *reason, int *sig, char *detail,
                     size_t dl)
{
    plat_run_classify(&h->res, &h->r, NULL, "harness", reason, sig, detail, dl);
}

/* ------------------------------------------------ verification widened --- */

/* The VLENs a verdict must hold at (k->vlens, platform.k3.verify_vlens;
 * this by default): candidates are compiled for rv64gcv, whose zvl128b is
 * all they may assume, and the exported library runs on whatever RVV 1.0
 * machine the user has (qemu 7.2 goes up to 1024). */
static const int k3_vlens[K3_MAX_VLENS] = {128, 256, 512, 1024};

/* platform.k3.verify_vlens ("128,256,512,1024": ascending powers of two
 * from 128 to 1024) into k->vlens; -1 when malformed. */
static int vlens_parse(struct k3 *k, const char *text)
{
    k->n_vlens = 0;
    if (!text) {
        memcpy(k->vlens, k3_vlens, sizeof k3_vlens);
        k->n_vlens = K3_MAX_VLENS;
        return 0;
    }
    const char *q = text;
    while (*q) {
        char *end;
        long v = strtol(q, &end, 10);
        if (end == q || v < 128 || v > 1024 || (v & (v - 1)) || k->n_vlens >= K3_MAX_VLENS ||
            (k->n_vlens && v <= k->vlens[k->n_vlens - 1]))
            return -1;
        k->vlens[k->n_vlens++] = (int)v;
        q = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return k->n_vlens ? 0 : -1;
}

/* runner with its "vlen=N" replaced by vlen, into out[cap]; -1 when the
 * runner has no vlen= (a user's own runner: its one VLEN is all there is)
 * or out is too small. */
static int runner_at_vlen(const char *runner, int vlen, char *out, size_t cap)
{
    const char *v = strstr(runner, "vlen=");
    if (!v)
        return -1;
    const char *e = v + 5;
    while (*e >= '0' && *e <= '9')
        e++;
    int n = snprintf(out, cap, "%.*svlen=%d%s", (int)(v - runner), runner, vlen, e);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    /* The agnostic policy may write tail and masked-off elements as all
     * ones or leave them undisturbed (RVV 1.0): the VLEN-256 run and the
     * others use all ones (rvv_ta_all_1s/rvv_ma_all_1s), the VLEN-512 run
     * qemu's undisturbed, so a kernel relying on either is caught (the
     * outsider red team's tail-agnostic-ones-reliance). */
    if (vlen == 512) {
        static const char *const ones[] = {",rvv_ta_all_1s=true", ",rvv_ma_all_1s=true"};
        for (size_t i = 0; i < 2; i++) {
            char *o = strstr(out, ones[i]);
            if (o)
                memmove(o, o + strlen(ones[i]), strlen(o + strlen(ones[i])) + 1);
        }
    }
    return 0;
}

/* The seed of one verify's drawn sizes (verdict.h, h_cases_drawn): the
 * setting platform.k3.verify_seed when given, else fresh from the host's
 * getrandom, so a kernel cannot know them; never 0 (0 = none drawn). */
static uint64_t verify_seed_draw(const struct k3 *k)
{
    uint64_t seed = k->verify_seed;
    if (!seed && getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return seed ? seed : 1;
}

/* out from one verify run's report h. */
static void verify_fill(const struct k3 *k, const struct hrun *h, struct plat_verify *out)
{
    out->emulated = k->emulated;
    out->n_cases = h->r.n_cases;
    memcpy(out->cases, h->r.cases, sizeof h->r.cases);
    out->max_abs = out->max_rel = out->norm_err = 0;
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
    out->pass = out->reason == PLAT_FAIL_NONE && h->r.done && h->r.n_cases > 0;
    if (!out->pass && out->reason == PLAT_FAIL_NONE) {
        out->reason = PLAT_FAIL_HARNESS;
        snprintf(out->detail, sizeof out->detail, "no case was reported");
    }
}

/* After the run at the runner's VLEN passed: the candidate again under qemu
 * at every other VLEN of k->vlens, with the same drawn sizes and recheck=1
 * (harness.c: round 1 of every case, the task case cut to 1e5 work; the
 * repeated rounds test state, which does not depend on the VLEN, and the
 * run at the runner's VLEN had them). The case list follows the VLEN (its
 * VL-1, VL+1 lengths come from vsetvlmax). A failure is the verdict, its
 * detail prefixed with the VLEN, its cases the failing run's. Writes the
 * VLENs verified, comma-separated, into done[cap]. Baselines are never run
 * here (verify runs none; OpenBLAS is built for zvl256b). */
static int k3_vlen_recheck(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                           struct hrun *h, struct plat_verify *out, char *done, size_t cap)
{
    struct k3 *k = p->priv;
    int v0 = runner_vlen(k), rc = 0;
    unsigned ok = 0;
    char saved[sizeof k->runner], at[sizeof k->runner];
    snprintf(done, cap, "%d", v0);
    memcpy(saved, k->runner, sizeof saved);
    double wall = out->wall_ms;
    for (int i = 0; i < k->n_vlens && out->pass; i++) {
        int vl = k->vlens[i];
        if (vl == v0 || runner_at_vlen(saved, vl, at, sizeof at) != 0)
            continue;
        memcpy(k->runner, at, sizeof at);
        snprintf(k->run_extra, sizeof k->run_extra, "size_seed=%llu recheck=1",
                 (unsigned long long)out->size_seed);
        rc = harness_run(p, t, b, "verify", h);
        memcpy(k->runner, saved, sizeof saved);
        k->run_extra[0] = '\0';
        if (rc)
            return rc;
        wall += h->res.wall_ms;
        /* a failure: the failing run's cases and words, after its VLEN (the
         * seed and the first run's shape flag kept) */
        struct plat_verify *w = malloc(sizeof *w);
        if (!w)
            return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
        *w = *out;
        verify_fill(k, h, w);
        if (!w->pass) {
            snprintf(out->detail, sizeof out->detail, "at VLEN %d (emulated): %.200s", vl, w->detail);
            memcpy(w->detail, out->detail, sizeof w->detail);
            snprintf(w->method, sizeof w->method, "failed at VLEN %d (emulated) after passing at %s",
                     vl, done);
            *out = *w;
        }
        free(w);
        if (!out->pass)
            break;
        ok |= 1u << i;
    }
    /* the VLENs verified, in ascending order */
    size_t dl = 0;
    done[0] = '\0';
    int own = 1; /* the runner's own VLEN is in the list */
    for (int i = 0; i < k->n_vlens && out->pass; i++) {
        if (k->vlens[i] > v0 && own) { /* in its place */
            dl += (size_t)snprintf(done + dl, dl < cap ? cap - dl : 0, "%s%d", dl ? "," : "", v0);
            own = 0;
        }
        if (k->vlens[i] == v0)
            own = 0;
        if ((ok & (1u << i)) || k->vlens[i] == v0)
            dl += (size_t)snprintf(done + dl, dl < cap ? cap - dl : 0, "%s%d", dl ? "," : "", k->vlens[i]);
    }
    if (own && out->pass)
        snprintf(done + dl, dl < cap ? cap - dl : 0, "%s%d", dl ? "," : "", v0);
    out->wall_ms = wall;
    return 0;
}

/* Verify: the cases at the runner's VLEN (natively, the machine's), the
 * fixed list plus sizes drawn from a fresh seed; then, under qemu, again at
 * the other VLENs (k3_vlen_recheck). */
static int k3_verify(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                     struct plat_verify *out)
{
    struct k3 *k = p->priv;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    out->size_seed = verify_seed_draw(k);
    snprintf(k->run_extra, sizeof k->run_extra, "size_seed=%llu", (unsigned long long)out->size_seed);
    int rc = harness_run(p, t, b, "verify", h);
    k->run_extra[0] = '\0';
    if (rc)
        goto out;
    out->wall_ms = h->res.wall_ms;
    verify_fill(k, h, out);
    out->reduced_shape = h->reduced_shape;
    int v0 = runner_vlen(k);
    char done[64];
    snprintf(done, sizeof done, "%d", v0);
    out->method[0] = '\0';
    int qemu = k->runner[0] && strstr(k->runner, "qemu") != NULL;
    if (out->pass && qemu && (rc = k3_vlen_recheck(p, t, b, h, out, done, sizeof done)))
        goto out;
    if (!out->method[0])
        snprintf(out->method, sizeof out->method, "%s at VLEN %s (%s%s)",
                 out->pass ? "verified" : "failed", done, qemu ? "emulated" : "native",
                 qemu && !strstr(k->runner, "vlen=") && out->pass ? "; the runner sets no vlen= to vary"
                                                                 : "");
    size_t ml = strlen(out->method);
    snprintf(out->method + ml, sizeof out->method - ml, "; drawn sizes seed %llu",
             (unsigned long long)out->size_seed);
out:
    free(h);
    return rc;
}

/* The A/A noise floor (the candidate timed twice: the first time line and
 * "candidate-aa") and the frequency state of the core the harness pinned
 * itself to, as one method phrase (platform/noise.h); "" when the harness
 * made no second timing. */
static void noise_phrase(const struct hrun *h, struct plat_measure *out, char *buf, size_t n)
{
    buf[0] = '\0';
    double aa = 0;
    for (int i = 1; i < h->r.n_times; i++)
        if (strcmp(h->r.times[i].name, "candidate-aa") == 0)
            aa = h->r.times[i].med;
    if (h->r.n_times < 1 || (out->noise_floor = plat_noise_floor(h->r.times[0].med, aa)) < 0)
        return;
    out->has_noise_floor = 1;
    char cpu[160] = "cpu=unpinned";
    const char *pin = strstr(h->r.method, "pinned cpu=");
    if (pin) {
        struct plat_cpu_state st;
        plat_cpu_state_read(NULL, atoi(pin + 11), &st);
        plat_cpu_state_print(&st, cpu, sizeof cpu);
    }
    snprintf(buf, n, "; A/A noise floor %.1f%% (candidate timed twice: %.0f, %.0f ns); %s",
             out->noise_floor * 100, h->r.times[0].med, aa, cpu);
}

static int k3_measure(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                      struct plat_measure *out)
{
    struct k3 *k = p->priv;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
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
    /* the isolation first: what the figures can be trusted for; then the
     * noise floor (natively), before the judge's lines, which are cut first */
    char noise[300];
    noise_phrase(h, out, noise, sizeof noise);
    /* under emulation the cost model in use, and why a call has no mca cycles */
    char model[420] = "";
    if (k->emulated && !k->vm)
        snprintf(model, sizeof model, "; %s%s%.200s", k->model, h->mca_why[0] ? "; mca: " : "", h->mca_why);
    int mn = snprintf(out->method, sizeof out->method, "isolation=%.100s; compile=%.70s%s%s%s%s; ",
                      h->res.isolation[0] ? h->res.isolation : "none",
                      k->compile_isolation[0] ? k->compile_isolation : "none",
                      strstr(k->compile_isolation, "NO-") ? " DEGRADED" : "",
                      k->vm ? "; virtual machine: not a speed"
                      : k->emulated ? "; EMULATED: qemu wall time, not a speed" : "", model, noise);
    if (mn > 0 && (size_t)mn < sizeof out->method) { /* the judge's lines, cut to fit */
        size_t room = sizeof out->method - 1 - (size_t)mn, ml = strlen(h->r.method);
        memcpy(out->method + mn, h->r.method, ml < room ? ml : room);
        out->method[(size_t)mn + (ml < room ? ml : room)] = '\0';
    }
    out->has_icount = h->r.has_icount;
    out->cycles = h->r.cycles;
    plat_task_work(t, &out->flops, &out->bytes);
    for (int i = 0; i < h->r.n_times; i++) {
        if (i > 0 && strcmp(h->r.times[i].name, "candidate-aa") == 0)
            continue; /* the A/A timing: noise_phrase's, not a baseline */
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
            out->icount_vsetvl = h->r.icount[0][4];
            out->hot_execs = h->r.hot[0][0];
            out->hot_insns = h->r.hot[0][1];
            out->hot_vector = h->r.hot[0][2];
            out->hot_vmem = h->r.hot[0][3];
            out->hot_vsetvl = h->r.hot[0][4];
            out->mca_cycles = h->r.has_icount ? h->mca_cycles[0] : 0; /* refused counts: none */
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
        bl->mca_cycles = h->r.has_icount ? h->mca_cycles[i] : 0;
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
    /* natively, a time ratio inside the A/A floor is no difference; under
     * emulation (PLAT_SET_AA, tests) ratios are by count, exact: none is */
    for (int i = 0; i < out->n_baselines && out->has_noise_floor; i++)
        out->base[i].no_difference = !k->emulated && strcmp(out->ratio_metric, "time") == 0 &&
                                     plat_noise_same(out->base[i].ratio, out->noise_floor);
    /* Under qemu only the plugin's counts measure anything (its wall time is
     * no speed): without them a passing kernel has no figure at all. */
    if (out->ok && k->emulated && !k->vm && !h->r.has_icount)
        snprintf(out->detail, sizeof out->detail, PLAT_NOT_MEASURED "%s" PLAT_TO_MEASURE "%s",
                 k->plugin[0] ? "the icount plugin counted nothing" : "no qemu icount plugin was found, "
                                "and under qemu only instruction counts measure",
                 k->plugin[0] ? "check the plugin and its qemu (docs/K3-KERNELS.md)"
                              : "build it with `make` in kope's source tree (it writes libkope-icount.so "
                                "next to kope), or set platform.k3.icount_plugin in kope.json");
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

extern const struct plat_prompt k3_prompt; /* platform/k3/prompt.c */

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
    .object_export = k3_object_export,
    .rank = k3_rank,
    .space = k3_space, /* platform/k3/k3_templates.c */
    .prompt = &k3_prompt,
    .peers = k3_peers_lines, /* platform/k3/peers.c */
};

/*
 * platform/ascend/ascend.c - the Ascend target: Ascend C candidates built
 * with Huawei's CANN toolkit and run on an Ascend NPU, as struct platform_ops
 * plat_ascend_ops.
 *
 * open      discovery (discover.c); fails with PLAT_ERR_NO_TOOLCHAIN naming
 *           every missing piece when there is no usable toolkit + cmake.
 * compile   one CANN kernel-launch project per candidate, c<id>/:
 *             kernel.cpp      the candidate
 *             CMakeLists.txt  embed/CMakeLists.txt: ascendc_library() from the
 *                             toolkit's ascendc_kernel_cmake for the SoC, and
 *                             the host program from rt/
 *           configured and built with cmake (kernel library first, so a
 *           candidate's own errors are what the diagnostics show).
 * verify    runs build/kope_host mode=verify on the NPU: task shape, awkward
 *           shapes, reseeded re-run; references on the host CPU (ref.c from
 *           the K3 harness, the same file, so both targets check the same
 *           numbers); report file in the K3 harness protocol.
 * measure   kope_host mode=measure (device events around each launch), and
 *           when msprof is present `msprof op ... kope_host mode=profile`,
 *           whose OpBasicInfo.csv "Task Duration(us)" becomes the candidate's
 *           time (device-side, without launch overhead).
 * probe     SoC, AI/vector core counts, UB/L2/HBM sizes, what the toolkit
 *           can do.
 *
 * rt/ (once per open platform): host.cpp, kope_ascend.h, CMakeLists.txt from
 * platform/ascend/embed/, and hargs.h, verdict.h + ref.c from platform/judge/.
 *
 * On a toolkit marked KOPE_FAKE_TOOLKIT (tests/fake-cann) every result is
 * labelled emulated and no speed ratio is claimed. Nothing here has run on
 * real Ascend hardware yet (docs/ASCEND.md).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "platform/ascend/ascend.h"
#include "platform/diag.h"
#include "platform/embed.h"
#include "platform/judge/report.h"
#include "platform/workdir.h"
/* the case list the host program runs (one copy, shared with it and the K3 harness) */
#define KOPE_HARNESS_HOST_ONLY
#include "platform/judge/verdict.h"

#define ASC_COMPILE_TIMEOUT_MS 300000 /* bisheng is slow: minutes for big kernels */
#define ASC_RUN_TIMEOUT_MS 120000     /* above the NPU's own AI Core timeout */
#define ASC_OUTPUT_CAP ((uint64_t)1 << 20)
#define ASC_MIN_REPEAT_MS 200
#define ASC_MAX_WORK_EMULATED 2e6     /* the fake runs kernels on the CPU: cut big shapes */
#define ASC_REPORT_MAX (256u << 10)
#define ASC_WARMUP 5
#define ASC_LAUNCHES 20               /* msprof op --launch-count */
#define ASC_HONESTY "kope's Ascend driver was tested only with its fake toolkit (tests/fake-cann), " \
                    "never on real Ascend hardware: docs/ASCEND.md"

static const struct { const char *from, *to; } rt_files[] = {
    {"platform/ascend/embed/host.cpp", "host.cpp"},
    {"platform/ascend/embed/kope_ascend.h", "kope_ascend.h"},
    {"platform/ascend/embed/CMakeLists.txt", "CMakeLists.txt"},
    {"platform/judge/hargs.h", "hargs.h"},
    {"platform/judge/verdict.h", "verdict.h"},
    {"platform/judge/ref.c", "ref.c"},
};

/* ------------------------------------------------------------- helpers --- */

static int run_ok(const struct proc_result *r)
{
    return r->exited && r->exit_code == 0 && !r->timed_out && !r->flooded;
}

/* ---------------------------------------------------------- open/close --- */

static int rt_write(struct platform *p, struct ascend *a)
{
    char path[ASC_PATH_MAX];
    snprintf(path, sizeof path, "%.190s/rt", a->work);
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", path, strerror(errno));
    for (size_t i = 0; i < sizeof rt_files / sizeof rt_files[0]; i++) {
        const struct embed_file *e = embed_find(rt_files[i].from);
        if (!e)
            return plat_set_err(p, PLAT_ERR_HARNESS, "embedded file %s missing", rt_files[i].from);
        snprintf(path, sizeof path, "%.190s/rt/%s", a->work, rt_files[i].to);
        if (proc_file_write(path, e->data, e->len))
            return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    }
    return 0;
}

static int build_step(struct platform *p, struct proc_cmd *c, struct plat_build *out, const char *what,
                      const char *dir, int *failed);

static int asc_open(struct platform *p)
{
    struct ascend *a = calloc(1, sizeof *a);
    if (!a)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    p->priv = a;
    a->work_lock = -1;
    const struct plat_settings *s = &p->set;
    struct asc_toolkit *tk = &a->tk;
    /* platform.ascend.*: the CANN toolkit root (NULL = $ASCEND_HOME_PATH,
     * $ASCEND_TOOLKIT_HOME, default paths), npu-smi (NULL = PATH,
     * /usr/local/sbin, /usr/local/bin), the SoC ("Ascend910B3"; NULL =
     * "Ascend" + the Name npu-smi reports) and the device (0 = the first) */
    asc_discover(tk, plat_setting_str(p, "home"), plat_setting_str(p, "npu_smi"), plat_setting_str(p, "soc"));
    a->device = (int)plat_setting_num(p, "device", 0);
    if (!tk->home[0] || !tk->cmake_dir[0] || !tk->compiler[0] || !tk->cmake[0])
        return plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "no usable CANN toolkit: %.370s. (%s)",
                       tk->missing, ASC_HONESTY);
    if (s->work_dir && *s->work_dir) {
        if (strlen(s->work_dir) >= sizeof a->work)
            return plat_set_err(p, PLAT_ERR_WORKDIR, "work dir path too long (max %zu)", sizeof a->work - 1);
        snprintf(a->work, sizeof a->work, "%s", s->work_dir);
        mkdir(a->work, 0700);
    } else {
        const char *tmp = getenv("TMPDIR");
        char base[160];
        snprintf(base, sizeof base, "%.150s", tmp && *tmp ? tmp : "/tmp");
        if (plat_workdir_make(base, "kope-ascend", a->work, sizeof a->work, &a->work_lock) != 0)
            return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdtemp %.150s/kope-ascend-*: %.100s", base, strerror(errno));
        a->own_work = 1;
    }
    int rc = rt_write(p, a);
    if (rc)
        return rc;
    /* the compile sandbox, once: where kope learns (and describe says)
     * whether builds are isolated here, and refuses to start when the
     * namespaces exist but the view cannot be built */
    char dir[ASC_PATH_MAX];
    snprintf(dir, sizeof dir, "%.190s/sandbox-check", a->work);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", dir, strerror(errno));
    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_arg(&c, "%s", tk->cmake);
    proc_cmd_arg(&c, "--version");
    struct plat_build *b = calloc(1, sizeof *b);
    if (!b)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    int failed = 0;
    rc = build_step(p, &c, b, "cmake --version in the compile sandbox", dir, &failed);
    if (!rc && failed)
        rc = plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "cmake (%.200s) does not run in the compile sandbox: "
                          "%.100s\nhint: it sees the system directories, the toolkit and the candidate's "
                          "folder only (docs/ASCEND.md)", tk->cmake, b->detail);
    free(b);
    proc_rm_tree(dir);
    return rc;
}

static void asc_close(struct platform *p)
{
    struct ascend *a = p->priv;
    if (!a)
        return;
    if (a->own_work && a->work[0])
        plat_workdir_remove(a->work, a->work_lock);
    free(a);
    p->priv = NULL;
}

static int asc_describe(struct platform *p, struct plat_desc *out)
{
    struct ascend *a = p->priv;
    const struct asc_toolkit *tk = &a->tk;
    struct utsname u;
    snprintf(out->name, sizeof out->name, "ascend");
    snprintf(out->arch, sizeof out->arch, "%.31s", uname(&u) == 0 ? u.machine : "unknown");
    snprintf(out->isa, sizeof out->isa, "%s", tk->soc[0] ? tk->soc : "unknown SoC");
    out->emulated = tk->fake;
    snprintf(out->cc, sizeof out->cc, "%.200s (CANN %.40s)", tk->compiler, tk->version);
    snprintf(out->runner, sizeof out->runner, "%s", tk->msprof[0] ? "msprof op" : "");
    snprintf(out->note, sizeof out->note, "%s; NPU %s%s; %s",
             tk->fake ? "FAKE toolkit (tests/fake-cann): kernels run on the host CPU, "
                        "results are not NPU results"
                      : "CANN toolkit",
             tk->npu_found ? tk->npu_name : "none found",
             tk->npu_found && strcmp(tk->npu_health, "OK") != 0 ? " (not healthy)" : "",
             tk->msprof[0] ? "timed by msprof op" : "timed by device events");
    if (a->aclnn_off) {
        size_t l = strlen(out->note);
        snprintf(out->note + l, sizeof out->note - l, "; aclnn baseline off: %.100s", a->aclnn_diag);
    }
    size_t l = strlen(out->note);
    snprintf(out->note + l, sizeof out->note - l, "; compile-isolation=%.100s%s", a->compile_isolation,
             strstr(a->compile_isolation, "NO-") ? " (DEGRADED: the build can read host files)" : "");
    return 0;
}

/* -------------------------------------------------------------- compile --- */

static int block_dim_for(const struct ascend *a, const struct plat_task *t)
{
    int n = t->family == PLAT_FAM_MATMUL ? a->tk.ai_cores
                                         : (a->tk.vector_cores ? a->tk.vector_cores : a->tk.ai_cores);
    if (n <= 0)
        n = 8;
    return n > 65535 ? 65535 : n;
}

/* Build steps run in the compile sandbox (platform/proc.h PROC_VIEW): the
 * system directories (cmake, make, the host compiler live there and run one
 * another), the toolkit and kope's rt/ read-only, the candidate's c<id>/ the
 * only writable place; namespaces, a cleared environment but for the
 * toolkit's own variables below, limits. The candidate's kernel file is
 * compiled by the toolkit's compiler, so it reads only what that view
 * holds; what is kept of the build's output is what plat_diag_clean keeps:
 * the lines about kernel.cpp. */
#define ASC_BUILD_OUT_MAX (256u << 10)
static const char *const asc_env_pass[] = {
    "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
    "LD_LIBRARY_PATH", "PYTHONPATH", "CFLAGS", "CXXFLAGS",
};
_Static_assert(sizeof asc_env_pass / sizeof asc_env_pass[0] <= PROC_ENV_ADD_MAX,
               "the toolkit's variables must fit proc.h's env_add of an isolated run");

/* Run one build step in dir; on a failed step fill out (COMPILE_ERROR) and
 * set *failed. Returns 0, or PLAT_ERR_* (the sandbox could not be built:
 * PLAT_ERR_NO_TOOLCHAIN). */
static int build_step(struct platform *p, struct proc_cmd *c, struct plat_build *out, const char *what,
                      const char *dir, int *failed)
{
    struct ascend *a = p->priv;
    *failed = 0;
    if (c->overflow)
        return plat_set_err(p, PLAT_ERR_INTERNAL, "command line too long");
    int timeout = p->set.compile_timeout_ms > 0 ? p->set.compile_timeout_ms : ASC_COMPILE_TIMEOUT_MS;
    int bare = (p->set.flags & PLAT_SET_UNSAFE_NO_ISOLATION) != 0;
    char rt[ASC_PATH_MAX], cmake_prefix[ASC_PATH_MAX] = "";
    snprintf(rt, sizeof rt, "%.190s/rt", a->work);
    /* a cmake outside the system directories: its install prefix (bin/..)
     * holds its modules */
    char *cm = realpath(a->tk.cmake, NULL);
    if (cm && strncmp(cm, "/usr/", 5) != 0) {
        snprintf(cmake_prefix, sizeof cmake_prefix, "%s", cm);
        for (int up = 0; up < 2; up++) {
            char *sl = strrchr(cmake_prefix, '/');
            if (sl && sl != cmake_prefix)
                *sl = '\0';
        }
    }
    free(cm);
    char env_buf[sizeof asc_env_pass / sizeof asc_env_pass[0]][1024];
    char *env[sizeof asc_env_pass / sizeof asc_env_pass[0] + 1];
    int ne = 0;
    for (size_t i = 0; i < sizeof asc_env_pass / sizeof asc_env_pass[0]; i++) {
        const char *v = getenv(asc_env_pass[i]);
        int w = v ? snprintf(env_buf[ne], sizeof env_buf[0], "%s=%s", asc_env_pass[i], v) : -1;
        if (w > 0 && (size_t)w < sizeof env_buf[0]) /* a longer value is left out, not cut */
            env[ne] = env_buf[ne], ne++;
    }
    env[ne] = NULL;
    char *raw = malloc(ASC_BUILD_OUT_MAX);
    if (!raw)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    struct proc_spec r = {.argv = c->argv, .cwd = dir, .timeout_ms = timeout, .cpu_s = timeout / 1000 + 1,
                          .fsize_bytes = (uint64_t)1 << 30, .output_cap = (uint64_t)8 << 20,
                          .out = raw, .out_len = ASC_BUILD_OUT_MAX, .env_add = env,
                          .flags = bare ? 0u : PROC_ISOLATE | PROC_VIEW, .rw_dir = dir,
                          .ro_paths = {a->tk.home, rt, cmake_prefix[0] ? cmake_prefix : NULL}};
    struct proc_result res;
    int rc = proc_run(&r, &res, p->err, sizeof p->err);
    if (rc) {
        free(raw);
        return plat_set_err(p, rc, "%s: %.400s", what, p->err);
    }
    snprintf(a->compile_isolation, sizeof a->compile_isolation, "%s",
             bare ? "none(unsafe-no-isolation)" : res.isolation);
    static const char view_failed[] = "kope: cannot build the compile view";
    if (!bare && res.exited && res.exit_code == PROC_VIEW_FAILED &&
        strncmp(raw, view_failed, sizeof view_failed - 1) == 0) {
        raw[strcspn(raw, "\n")] = '\0';
        rc = plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "%s: %.300s\nhint: the build runs in a sandbox that sees "
                          "the system directories, the toolkit and the candidate's folder only "
                          "(docs/ASCEND.md)", what, raw);
        free(raw);
        return rc;
    }
    if (res.exited && res.exit_code == 127 && strstr(raw, "kope: cannot run")) {
        raw[strcspn(raw, "\n")] = '\0';
        rc = plat_set_err(p, PLAT_ERR_NO_TOOLCHAIN, "%s: %.400s", what, raw);
        free(raw);
        return rc;
    }
    if (!run_ok(&res)) {
        *failed = 1;
        out->reason = PLAT_FAIL_COMPILE_ERROR;
        snprintf(out->detail, sizeof out->detail, "%s %s", what,
                 res.timed_out ? "timed out" : "failed");
        /* only what the compiler said about the candidate's own file */
        char kfile[ASC_PATH_MAX];
        snprintf(kfile, sizeof kfile, "%.200s/kernel.cpp", dir);
        size_t kept = res.exited ? plat_diag_clean(raw, kfile, out->diag, sizeof out->diag) : 0;
        out->diag_truncated = res.truncated || kept + 1 >= sizeof out->diag;
    }
    free(raw);
    return 0;
}

static int asc_compile(struct platform *p, const struct plat_task *t, const char *src, size_t len,
                       struct plat_build *out)
{
    struct ascend *a = p->priv;
    const struct asc_toolkit *tk = &a->tk;
    double t0 = proc_now_ms();
    int rc = 0, failed = 0;
    if (t->op == PLAT_OP_USER) /* its reference is RVV-target C (platform.h struct plat_user_op) */
        return plat_set_err(p, PLAT_ERR_UNSUPPORTED, "task %.64s: a user's own op runs on k3 only", t->name);
    if (len > PLAT_SRC_MAX) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        out->screen_rule = PLAT_SCREEN_TOO_BIG;
        snprintf(out->detail, sizeof out->detail, "source over %d bytes", PLAT_SRC_MAX);
        goto out;
    }
    if (!(p->set.flags & PLAT_SET_UNSAFE_NO_SCREEN) &&
        asc_screen_source(src, len, &out->screen_rule, out->detail, sizeof out->detail)) {
        out->reason = PLAT_FAIL_SCREEN_REJECTED;
        goto out;
    }
    if (!tk->soc[0])
        return plat_set_err(p, PLAT_ERR_NO_RUNNER,
                       "no SoC version to build for: no NPU found (%.300s) and platform.ascend.soc "
                       "is not set", tk->missing);
    out->id = ++a->next_id;
    char dir[256], path[ASC_PATH_MAX], build[300];
    snprintf(dir, sizeof dir, "%.200s/c%llu", a->work, (unsigned long long)out->id);
    snprintf(build, sizeof build, "%s/build", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return plat_set_err(p, PLAT_ERR_WORKDIR, "mkdir %.300s: %.100s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/kernel.cpp", dir);
    if (proc_file_write(path, src, len))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);
    const struct embed_file *cm = embed_find("platform/ascend/embed/CMakeLists.txt");
    snprintf(path, sizeof path, "%s/CMakeLists.txt", dir);
    if (!cm || proc_file_write(path, cm->data, cm->len))
        return plat_set_err(p, PLAT_ERR_WORKDIR, "cannot write %.300s", path);

    struct proc_cmd c;
    proc_cmd_init(&c);
    proc_cmd_arg(&c, "%s", tk->cmake);
    proc_cmd_arg(&c, "-S");
    proc_cmd_arg(&c, "%s", dir);
    proc_cmd_arg(&c, "-B");
    proc_cmd_arg(&c, "%s", build);
    proc_cmd_arg(&c, "-DSOC_VERSION=%s", tk->soc);
    proc_cmd_arg(&c, "-DASCEND_CANN_PACKAGE_PATH=%s", tk->home);
    proc_cmd_arg(&c, "-DKOPE_RT=%.190s/rt", a->work);
    proc_cmd_arg(&c, "-DKOPE_FAMILY=%d", (int)t->family);
    proc_cmd_arg(&c, "-DKOPE_HAVE_ACLNN=%d", tk->has_aclnn && !a->aclnn_off ? 1 : 0);
    rc = build_step(p, &c, out, "cmake configure", dir, &failed);
    if (rc || failed)
        goto out;
    /* the candidate alone first: its diagnostics are the ones that matter */
    static const char *const targets[] = {"kope_kernels", "kope_host"};
    for (int i = 0; i < 2; i++) {
        proc_cmd_init(&c);
        proc_cmd_arg(&c, "%s", tk->cmake);
        proc_cmd_arg(&c, "--build");
        proc_cmd_arg(&c, "%s", build);
        proc_cmd_arg(&c, "--target");
        proc_cmd_arg(&c, "%s", targets[i]);
        rc = build_step(p, &c, out, i == 0 ? "kernel build (ascendc_library)"
                                           : "host program build (launch signature vs the family ABI)",
                        dir, &failed);
        if (!rc && failed && i == 1 && tk->has_aclnn && !a->aclnn_off) {
            /* The vendor-baseline code is written against the documented
             * aclnn signatures; if this toolkit's headers differ, the host
             * program must still build: retry once without it, and if that
             * works keep it off for this platform (method says so). */
            char diag1[PLAT_DIAG_MAX];
            memcpy(diag1, out->diag, sizeof diag1);
            struct plat_build retry = *out;
            int f2 = 0;
            proc_cmd_init(&c);
            proc_cmd_arg(&c, "%s", tk->cmake);
            proc_cmd_arg(&c, "-DKOPE_HAVE_ACLNN=0");
            proc_cmd_arg(&c, "%s", build);
            rc = build_step(p, &c, &retry, "cmake reconfigure without aclnn", dir, &f2);
            if (!rc && !f2) {
                proc_cmd_init(&c);
                proc_cmd_arg(&c, "%s", tk->cmake);
                proc_cmd_arg(&c, "--build");
                proc_cmd_arg(&c, "%s", build);
                proc_cmd_arg(&c, "--target");
                proc_cmd_arg(&c, "kope_host");
                rc = build_step(p, &c, &retry, "host program build", dir, &f2);
            }
            if (rc)
                goto out;
            if (!f2) {
                a->aclnn_off = 1;
                /* kope's words: the compiler's are about kope's host.cpp and
                 * the toolkit's headers, and nothing of a build is kept but
                 * the candidate's own lines */
                snprintf(a->aclnn_diag, sizeof a->aclnn_diag,
                         "the vendor-baseline code does not build against this toolkit's aclnn headers "
                         "(compile error)");
                failed = 0;
                memset(out->diag, 0, sizeof out->diag);
                out->reason = PLAT_FAIL_NONE;
                out->detail[0] = '\0';
            } else {
                memcpy(out->diag, diag1, sizeof out->diag); /* the candidate's fault after all */
            }
        }
        if (rc || failed)
            goto out;
    }
    snprintf(out->path, sizeof out->path, "%s/kope_host", build);
    if (access(out->path, X_OK) != 0)
        return plat_set_err(p, PLAT_ERR_HARNESS, "build finished but %.300s is missing", out->path);
    out->diag[0] = '\0';
    out->diag_truncated = 0;
    out->ok = 1;
out:
    out->compile_ms = proc_now_ms() - t0;
    return rc;
}

static void asc_build_free(struct platform *p, struct plat_build *b)
{
    struct ascend *a = p->priv;
    if (!a || !b->id)
        return;
    char dir[256];
    snprintf(dir, sizeof dir, "%.200s/c%llu", a->work, (unsigned long long)b->id);
    proc_rm_tree(dir);
    b->path[0] = '\0';
    b->ok = 0;
}

/* ----------------------------------------------------------- host runs --- */

/* What one host-program run produced (report protocol of the K3 harness). */
struct hrun {
    struct proc_result res;
    char out[1024];
    struct plat_report r;         /* what the host program printed (platform/judge/report.h) */
    char refused[200];            /* why the report is not trusted ("" = it is) */
};

/* The cases kope asks the host program for, in the order it runs them
 * (verdict.h: the same functions build host.cpp's list). verify: the task
 * case, its reseeded re-run, the awkward and special cases; measure: the
 * pre-timing check and, when that passed, the post-timing one. */
static int expected_cases(const struct plat_task *t, const char *mode, double max_work,
                          struct h_case *out, int cap)
{
    int rowwise = plat_op_is_rowwise(t->op), n = 0;
    struct h_case task;
    h_ascend_task_case((int)t->op, (int)t->family, rowwise, t->n, t->rows, t->cols, t->m, t->k,
                       t->batch, max_work, &task);
    if (strcmp(mode, "verify") == 0) {
        out[n++] = task;
        out[n] = task;
        snprintf(out[n++].label, sizeof out[0].label, "task-reseeded");
        h_cases_awkward((int)t->op, (int)t->family, rowwise, 8, 64, out, &n, cap);
    } else if (strcmp(mode, "measure") == 0) {
        out[n] = task;
        snprintf(out[n++].label, sizeof out[0].label, "pre-timing");
        out[n] = task;
        snprintf(out[n++].label, sizeof out[0].label, "post-timing");
    }
    return n;
}

/* Whether the report is exactly what kope asked for; why not into h->refused.
 * The host program is kope's, but it links the candidate's kernel library:
 * a report that is not the list of cases kope asked for, in order, with their
 * shapes, each once, ended by one `done` with nothing after it, is not a
 * verdict (a forged or edited report, a case dropped or renamed). */
static void report_check(struct hrun *h, const char *text, const struct plat_task *t,
                         const char *mode, double max_work)
{
    char labels[PLAT_MAX_CASES + 1][48], tnames[PLAT_MAX_BASELINES + 2][PLAT_NAME_MAX];
    int nl = 0, nt = 0, dones = 0, case_lines = 0;
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len && dones) {
            snprintf(h->refused, sizeof h->refused, "a line after `done`: %.60s", l);
            return;
        }
        if (len == 4 && memcmp(l, "done", 4) == 0) {
            dones++;
        } else if (len > 5 && memcmp(l, "case ", 5) == 0) {
            char lab[48] = "";
            case_lines++;
            if (sscanf(l + 5, "%47s", lab) == 1) {
                for (int i = 0; i < nl; i++)
                    if (strcmp(labels[i], lab) == 0) {
                        snprintf(h->refused, sizeof h->refused, "case %s reported twice", lab);
                        return;
                    }
                if (nl <= PLAT_MAX_CASES)
                    snprintf(labels[nl++], sizeof labels[0], "%s", lab);
            }
        } else if (len > 5 && memcmp(l, "time ", 5) == 0) {
            char nm[PLAT_NAME_MAX] = "";
            if (sscanf(l + 5, "%63s", nm) == 1) {
                for (int i = 0; i < nt; i++)
                    if (strcmp(tnames[i], nm) == 0) {
                        snprintf(h->refused, sizeof h->refused, "timing %s reported twice", nm);
                        return;
                    }
                if (nt < PLAT_MAX_BASELINES + 2)
                    snprintf(tnames[nt++], sizeof tnames[0], "%s", nm);
            }
        }
        l += len + (e ? 1 : 0);
    }
    if (case_lines != h->r.n_cases) {
        snprintf(h->refused, sizeof h->refused, "%d case lines, %d readable", case_lines, h->r.n_cases);
        return;
    }
    /* a case passes exactly when its reason is none: a PASS flag that
     * disagrees is what a candidate interposing a libc function of the host
     * program (strcmp decides the flag) would produce */
    for (int i = 0; i < h->r.n_cases; i++)
        if (h->r.cases[i].pass != (h->r.cases[i].reason == PLAT_FAIL_NONE)) {
            snprintf(h->refused, sizeof h->refused, "case %.40s: PASS flag %d with reason %s",
                     h->r.cases[i].label, h->r.cases[i].pass, plat_fail_name(h->r.cases[i].reason));
            return;
        }
    /* the list is checked on a finished run that reports no failure of its
     * own: a run that stopped early (crash, timeout) is a failure anyway */
    if (!h->r.done || h->r.fail != PLAT_FAIL_NONE)
        return;
    struct h_case exp[H_MAX_CASES + 2];
    int ne = expected_cases(t, mode, max_work, exp, H_MAX_CASES + 2);
    if (strcmp(mode, "measure") == 0 && h->r.n_cases >= 1 && !h->r.cases[0].pass)
        ne = 1; /* no timing, no post-timing check after a failed pre-timing one */
    if (strcmp(mode, "profile") == 0)
        return;
    if (h->r.n_cases != ne) {
        snprintf(h->refused, sizeof h->refused, "%d cases reported, %d asked for", h->r.n_cases, ne);
        return;
    }
    for (int i = 0; i < ne; i++) {
        const struct plat_case *c = &h->r.cases[i];
        const struct h_case *x = &exp[i];
        if (strcmp(c->label, x->label) != 0 || c->n != x->n || c->rows != x->rows ||
            c->cols != x->cols || c->m != x->m || c->k != x->k || c->batch != x->batch) {
            snprintf(h->refused, sizeof h->refused, "case %d is %.40s (%llu %llu %llu %llu %llu %llu), "
                     "asked for %.40s", i + 1, c->label, (unsigned long long)c->n,
                     (unsigned long long)c->rows, (unsigned long long)c->cols, (unsigned long long)c->m,
                     (unsigned long long)c->k, (unsigned long long)c->batch, x->label);
            return;
        }
    }
}

static void host_args(struct platform *p, struct proc_cmd *c, const struct plat_task *t,
                      const struct plat_build *b, const char *mode, const char *report)
{
    struct ascend *a = p->priv;
    const struct plat_settings *s = &p->set;
    proc_cmd_arg(c, "%s", b->path);
    proc_cmd_arg(c, "mode=%s", mode);
    proc_cmd_arg(c, "op=%s", plat_op_name(t->op));
    proc_cmd_arg(c, "n=%llu", (unsigned long long)t->n);
    proc_cmd_arg(c, "rows=%llu", (unsigned long long)t->rows);
    proc_cmd_arg(c, "cols=%llu", (unsigned long long)t->cols);
    proc_cmd_arg(c, "m=%llu", (unsigned long long)t->m);
    proc_cmd_arg(c, "k=%llu", (unsigned long long)t->k);
    proc_cmd_arg(c, "batch=%llu", (unsigned long long)t->batch);
    proc_cmd_arg(c, "rtol=%.17g", t->rtol);
    proc_cmd_arg(c, "atol=%.17g", t->atol);
    proc_cmd_arg(c, "seed=%llu", (unsigned long long)(0x6b6f7065ull + b->id * 1000003ull));
    proc_cmd_arg(c, "report=%s", report);
    proc_cmd_arg(c, "device=%d", a->device);
    proc_cmd_arg(c, "block_dim=%d", block_dim_for(a, t));
    proc_cmd_arg(c, "max_work=%.0f", a->tk.fake ? ASC_MAX_WORK_EMULATED : 0.0);
    proc_cmd_arg(c, "min_ms=%d", s->min_repeat_ms > 0 ? s->min_repeat_ms : ASC_MIN_REPEAT_MS);
    proc_cmd_arg(c, "max_rep=%d", s->max_repeats > 0 ? s->max_repeats : 1000);
    proc_cmd_arg(c, "warmup=%d", ASC_WARMUP);
    proc_cmd_arg(c, "launches=%d", ASC_LAUNCHES);
    proc_cmd_arg(c, "no_baselines=%d", (s->flags & PLAT_SET_NO_BASELINES) ? 1 : 0);
}

/* Run the host program (optionally under `msprof op`); parse its report. */
static int host_run(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                    const char *mode, const char *prof_dir, struct hrun *h)
{
    struct ascend *a = p->priv;
    memset(h, 0, sizeof *h);
    if (!a->tk.npu_found)
        return plat_set_err(p, PLAT_ERR_NO_RUNNER, "no Ascend NPU to run on: %.400s", a->tk.missing);
    char dir[256], report[ASC_PATH_MAX];
    snprintf(dir, sizeof dir, "%.200s/c%llu", a->work, (unsigned long long)b->id);
    snprintf(report, sizeof report, "%s/%s.report", dir, mode);
    unlink(report);
    struct proc_cmd c;
    proc_cmd_init(&c);
    if (prof_dir) {
        proc_cmd_arg(&c, "%s", a->tk.msprof);
        proc_cmd_arg(&c, "op");
        proc_cmd_arg(&c, "--output=%s", prof_dir);
        proc_cmd_arg(&c, "--kernel-name=kope_kernel");
        proc_cmd_arg(&c, "--warm-up=%d", ASC_WARMUP);
        proc_cmd_arg(&c, "--launch-count=%d", ASC_LAUNCHES);
    }
    host_args(p, &c, t, b, mode, report);
    if (c.overflow)
        return plat_set_err(p, PLAT_ERR_INTERNAL, "host program command line too long");
    const struct plat_settings *s = &p->set;
    struct proc_spec r = {
        .argv = c.argv, .cwd = dir,
        .timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : ASC_RUN_TIMEOUT_MS,
        .output_cap = s->output_cap_bytes ? s->output_cap_bytes : ASC_OUTPUT_CAP,
        .out = h->out, .out_len = sizeof h->out,
    };
    int rc = proc_run(&r, &h->res, p->err, sizeof p->err);
    if (rc)
        return rc;
    FILE *f = fopen(report, "rb");
    if (f) {
        char *text = malloc(ASC_REPORT_MAX + 1);
        if (!text) {
            fclose(f);
            return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
        }
        size_t n = fread(text, 1, ASC_REPORT_MAX, f);
        text[n] = '\0';
        fclose(f);
        char *copy = strdup(text); /* plat_report_parse cuts text up */
        if (!copy) {
            free(text);
            return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
        }
        plat_report_parse(text, &h->r);
        report_check(h, copy, t, mode, a->tk.fake ? ASC_MAX_WORK_EMULATED : 0.0);
        free(copy);
        free(text);
    }
    return 0;
}

/* The run's fate: the rule every target shares (platform/judge/report.h), with
 * kope's own check of the report (report_check) as the refusal. */
static void classify(const struct hrun *h, enum plat_fail *reason, int *sig, char *detail, size_t dl)
{
    plat_run_classify(&h->res, &h->r, h->refused, "host program", reason, sig, detail, dl);
}

static int asc_verify(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                      struct plat_verify *out)
{
    struct ascend *a = p->priv;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    int rc = host_run(p, t, b, "verify", NULL, h);
    if (rc)
        goto out;
    out->emulated = a->tk.fake;
    out->wall_ms = h->res.wall_ms;
    out->n_cases = h->r.n_cases;
    memcpy(out->cases, h->r.cases, sizeof h->r.cases);
    for (int i = 0; i < h->r.n_cases; i++) {
        const struct plat_case *c = &h->r.cases[i];
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
out:
    free(h);
    return rc;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* `msprof op` around mode=profile: the device-side Task Duration of each
 * collected launch. Returns the number of samples (0 = not available; why in
 * why). Never fails the measurement: events timing stands without it. */
static int msprof_time(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                       double *ns, int max, char *why, size_t why_len)
{
    struct ascend *a = p->priv;
    if (!a->tk.msprof[0]) {
        snprintf(why, why_len, "msprof not in the toolkit");
        return 0;
    }
    char prof[300];
    snprintf(prof, sizeof prof, "%.200s/c%llu/msprof", a->work, (unsigned long long)b->id);
    proc_rm_tree(prof);
    if (mkdir(prof, 0700) != 0) {
        snprintf(why, why_len, "cannot make the msprof output dir");
        return 0;
    }
    struct hrun *h = malloc(sizeof *h);
    if (!h) {
        snprintf(why, why_len, "out of memory");
        return 0;
    }
    int n = 0;
    int rc = host_run(p, t, b, "profile", prof, h);
    if (rc) {
        snprintf(why, why_len, "msprof op did not run: %.150s", p->err);
        p->err[0] = '\0';
        p->rc = 0;
    } else if (!run_ok(&h->res) || !h->r.done) {
        snprintf(why, why_len, "msprof op failed (exit %d): %.150s", h->res.exit_code, h->out);
    } else {
        n = asc_msprof_collect(prof, "kope_kernel", ns, max);
        if (n <= 0) {
            snprintf(why, why_len, "msprof op left no OpBasicInfo.csv with a Task Duration column");
            n = 0;
        }
    }
    free(h);
    return n;
}

static int asc_measure(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                       struct plat_measure *out)
{
    struct ascend *a = p->priv;
    double *ns = NULL;
    struct hrun *h = malloc(sizeof *h);
    if (!h)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    int rc = host_run(p, t, b, "measure", NULL, h);
    if (rc)
        goto out;
    out->emulated = a->tk.fake;
    out->wall_ms = h->res.wall_ms;
    classify(h, &out->reason, &out->signal, out->detail, sizeof out->detail);
    if (out->reason == PLAT_FAIL_WRONG_RESULT || out->reason == PLAT_FAIL_UNWRITTEN_OUTPUT) {
        for (int i = 0; i < h->r.n_cases; i++)
            if (strcmp(h->r.cases[i].label, "post-timing") == 0 && !h->r.cases[i].pass && h->r.cases[0].pass) {
                out->reason = PLAT_FAIL_STATEFUL;
                snprintf(out->detail, sizeof out->detail,
                         "right before timing, wrong after it with inputs reseeded in place");
            }
    }
    out->ok = out->reason == PLAT_FAIL_NONE && h->r.done && h->r.n_times > 0;
    if (!out->ok && out->reason == PLAT_FAIL_NONE) {
        out->reason = PLAT_FAIL_HARNESS;
        snprintf(out->detail, sizeof out->detail, "no timing was reported");
    }
    plat_task_work(t, &out->flops, &out->bytes);
    if (h->r.n_times > 0) {
        out->median_ns = h->r.times[0].med;
        out->min_ns = h->r.times[0].min;
        out->spread = h->r.times[0].spread;
        out->repeats = h->r.times[0].reps;
        out->warmup = h->r.times[0].warm;
    }
    /* same-run baselines (the vendor aclnn operator), by device events like
     * the candidate's event timing: the ratio compares like with like even
     * when the candidate's own time below comes from msprof */
    double cand_events_ns = out->median_ns;
    for (int i = 1; i < h->r.n_times && out->n_baselines < PLAT_MAX_BASELINES; i++) {
        struct plat_baseline *bl = &out->base[out->n_baselines++];
        snprintf(bl->name, sizeof bl->name, "%s", h->r.times[i].name);
        bl->median_ns = h->r.times[i].med;
        bl->min_ns = h->r.times[i].min;
        bl->ratio = !a->tk.fake && cand_events_ns > 0 ? bl->median_ns / cand_events_ns : 0;
    }
    char prof_note[200] = "";
    if (out->ok) {
        ns = malloc(ASC_MSPROF_MAX_SAMPLES * sizeof *ns);
        int n = ns ? msprof_time(p, t, b, ns, ASC_MSPROF_MAX_SAMPLES, prof_note, sizeof prof_note) : 0;
        if (n > 0) {
            qsort(ns, (size_t)n, sizeof *ns, cmp_d);
            double med = n % 2 ? ns[n / 2] : 0.5 * (ns[n / 2 - 1] + ns[n / 2]);
            double p10 = ns[n / 10], p90 = ns[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
            snprintf(prof_note, sizeof prof_note,
                     "time=msprof op Task Duration median of %d launches (device events median %.0f ns)",
                     n, out->median_ns);
            out->median_ns = med;
            out->min_ns = ns[0];
            out->spread = med > 0 ? (p90 - p10) / med : 0;
            out->repeats = n;
            out->warmup = ASC_WARMUP;
        } else if (!prof_note[0]) {
            snprintf(prof_note, sizeof prof_note, "msprof op unavailable");
        }
    }
    snprintf(out->method, sizeof out->method, "compile=%.70s%s; %.190s; %.90s%.45s%.50s",
             a->compile_isolation, strstr(a->compile_isolation, "NO-") ? " DEGRADED" : "",
             h->r.method, prof_note,
             a->tk.fake ? "; FAKE TOOLKIT: CPU emulation, not NPU speed" : "",
             a->aclnn_off ? "; aclnn baseline off: headers differ from the docs" : "");
out:
    free(ns);
    free(h);
    return rc;
}

/* --------------------------------------------------------------- probe --- */

static int asc_probe(struct platform *p, struct plat_probe *out)
{
    struct ascend *a = p->priv;
    const struct asc_toolkit *tk = &a->tk;
    snprintf(out->target, sizeof out->target, "ascend");
    out->emulated = tk->fake;
    snprintf(out->soc, sizeof out->soc, "%s", tk->soc);
    snprintf(out->isa, sizeof out->isa, "%s", tk->soc[0] ? tk->soc : "unknown");
    out->n_cores = tk->ai_cores;
    out->vector_cores = tk->vector_cores;
    out->ub_bytes = tk->ub_bytes;
    out->l1d_bytes = tk->l1_bytes;  /* the AI Core's L1 buffer */
    out->l2_bytes = tk->l2_bytes;
    out->hbm_bytes = tk->hbm_bytes;
    snprintf(out->toolkit, sizeof out->toolkit,
             "CANN %.20s at %.60s (from %.30s); bisheng %.7s; ascendc_kernel_cmake %.7s; msprof op %.3s; "
             "aclnn vendor ops %.3s; cmake %.7s",
             tk->version, tk->home, tk->home_from, tk->compiler[0] ? "yes" : "MISSING",
             tk->cmake_dir[0] ? "yes" : "MISSING", tk->msprof[0] ? "yes" : "no",
             tk->has_aclnn ? (a->aclnn_off ? "off" : "yes") : "no", tk->cmake[0] ? "yes" : "MISSING");
    snprintf(out->method, sizeof out->method, "npu-smi info (%.90s); %s/<SoC>.ini",
             tk->npu_smi[0] ? tk->npu_smi : "absent", tk->platform_config[0] ? "platform_config" : "no platform_config");
    snprintf(out->note, sizeof out->note, "%s%s",
             tk->fake ? "FAKE toolkit: every number comes from tests/fake-cann, not from hardware. " : "",
             ASC_HONESTY);
    if (!tk->npu_found)
        return plat_set_err(p, PLAT_ERR_NO_RUNNER, "toolkit found (%.200s) but no NPU: %.250s",
                       out->toolkit, tk->missing);
    if (!tk->ai_cores)
        return plat_set_err(p, PLAT_ERR_NO_RUNNER, "NPU %s found but its core counts are unknown: %.300s",
                       tk->npu_name, tk->missing);
    return 0;
}

/* -------------------------------------------------------------- starter --- */

/* embed/starters/<family>.cpp: every op of the family, correct, untuned. */
static int asc_starter(struct platform *p, const struct plat_task *t, char **src, size_t *len,
                       char *label, size_t label_len)
{
    char name[96];
    const char *fam = plat_family_name(t->family);
    snprintf(name, sizeof name, "platform/ascend/embed/starters/%s.cpp", fam);
    const struct embed_file *e = embed_find(name);
    if (!e || (unsigned)t->op >= PLAT_OP_COUNT)
        return plat_set_err(p, PLAT_ERR_UNSUPPORTED, "no Ascend starter for op %d", (int)t->op);
    *src = malloc(e->len + 1);
    if (!*src)
        return plat_set_err(p, PLAT_ERR_NOMEM, "out of memory");
    memcpy(*src, e->data, e->len + 1);
    *len = e->len;
    snprintf(label, label_len, "ascend-starter-%s", fam);
    return 0;
}

extern const struct plat_prompt ascend_prompt; /* platform/ascend/prompt.c */

const struct platform_ops plat_ascend_ops = {
    .name = "ascend",
    .open = asc_open,
    .close = asc_close,
    .describe = asc_describe,
    .compile = asc_compile,
    .verify = asc_verify,
    .measure = asc_measure,
    .probe = asc_probe,
    .build_free = asc_build_free,
    .starter = asc_starter,
    .prompt = &ascend_prompt,
};

/*
 * core/cli/cli_k3.c - `kope tasks` and `kope measure`: list a suite, and put one
 * kernel file through compile -> verify -> measure on the configured target.
 *
 * The target's settings come from the config file (platform.k3.*) through
 * cli_platform_settings(), the one place config keys become plain
 * struct plat_settings values; platform/ never reads the config itself.
 * Exit codes: 0 = the kernel passed, 1 = it failed (a candidate outcome) or
 * the platform failed, 2 = usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/err.h"
#include "core/task/task.h"
#include "core/util.h"
#include "platform/platform.h"

#define KERNEL_FILE_MAX (PLAT_SRC_MAX + 1)

const char *cli_platform_name(struct cli *c, const char *override)
{
    if (override && *override)
        return override;
    struct kope_config *cfg = cli_config(c);
    return cfg ? kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET) : PLAT_DEFAULT_TARGET;
}

/* platform.<name>.<key> */
static const char *plat_key(char *buf, size_t cap, const char *name, const char *key)
{
    snprintf(buf, cap, "platform.%.40s.%s", name, key);
    return buf;
}

/* plat_settings.own_str/own_num: a target's own keys, platform.<target>.<key> */
static const char *own_str(const void *own, const char *target, const char *key)
{
    char k[96];
    return kope_config_str(own, plat_key(k, sizeof k, target, key), NULL);
}

static double own_num(const void *own, const char *target, const char *key, double dflt)
{
    char k[96];
    return kope_config_num(own, plat_key(k, sizeof k, target, key), dflt);
}

void cli_platform_settings_for(struct cli *c, const char *name, struct plat_settings *s)
{
    plat_settings_init(s);
    struct kope_config *cfg = cli_config(c);
    if (!cfg)
        return;
    char k[96];
    s->cc = kope_config_str(cfg, plat_key(k, sizeof k, name, "cc"), NULL);
    s->cflags = kope_config_str(cfg, plat_key(k, sizeof k, name, "cflags"), NULL);
    s->runner = kope_config_str(cfg, plat_key(k, sizeof k, name, "runner"), NULL);
    s->work_dir = kope_config_str(cfg, plat_key(k, sizeof k, name, "work_dir"), NULL);
    s->deps_sysroot = kope_config_str(cfg, plat_key(k, sizeof k, name, "deps_sysroot"), NULL);
    s->icount_plugin = kope_config_str(cfg, plat_key(k, sizeof k, name, "icount_plugin"), NULL);
    s->timeout_ms = (int)kope_config_num(cfg, plat_key(k, sizeof k, name, "timeout_ms"), 0);
    s->compile_timeout_ms = (int)kope_config_num(cfg, plat_key(k, sizeof k, name, "compile_timeout_ms"), 0);
    s->mem_limit_bytes = (uint64_t)kope_config_num(cfg, plat_key(k, sizeof k, name, "mem_limit_mb"), 0) << 20;
    s->output_cap_bytes = (uint64_t)kope_config_num(cfg, plat_key(k, sizeof k, name, "output_cap_kb"), 0) << 10;
    s->min_repeat_ms = (int)kope_config_num(cfg, plat_key(k, sizeof k, name, "min_repeat_ms"), 0);
    s->max_repeats = (int)kope_config_num(cfg, plat_key(k, sizeof k, name, "max_repeats"), 0);
    s->dlen_bits = (int)kope_config_num(cfg, plat_key(k, sizeof k, name, "dlen"), 0);
    if (kope_config_num(cfg, plat_key(k, sizeof k, name, "flush_cache"), 0) != 0)
        s->flags |= PLAT_SET_FLUSH_CACHE;
    /* the rest is the target's to read (platform.ascend.home, ...) */
    s->own = cfg;
    s->own_str = own_str;
    s->own_num = own_num;
}

void cli_platform_settings(struct cli *c, struct plat_settings *s)
{
    cli_platform_settings_for(c, cli_platform_name(c, NULL), s);
}

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strcmp(argv[*i], name) == 0) {
        if (*i + 1 >= argc)
            return NULL;
        return argv[++*i];
    }
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    return NULL;
}

/* ---------------------------------------------------------------- tasks --- */

int cli_tasks(struct cli *c, int argc, char **argv)
{
    (void)c;
    const char *suite_path = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope tasks [--suite FILE]\n"
               "Lists the tasks of a suite (default: the embedded %s):\n"
               "name, op, family, shape, tolerance and where the shape comes from.\n",
               TASK_DEFAULT_SUITE);
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = opt_value(argc, argv, &i, "--suite");
        if (v) {
            suite_path = v;
        } else {
            static const char *const valued[] = {"--suite", NULL};
            if (!cli_missing_value("tasks", argv[i], valued))
                fprintf(stderr, "kope tasks: unexpected argument '%s' (see kope tasks --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    struct task_suite s;
    char err[512];
    int rc = task_suite_load(suite_path, &s, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope tasks: %s\n", err);
        return CLI_FAIL;
    }
    printf("suite %s: %zu tasks\n", s.name, s.n_tasks);
    printf("%-28s %-10s %-12s %-26s %-15s %s\n", "name", "op", "family", "shape", "rtol/atol", "source");
    for (size_t i = 0; i < s.n_tasks; i++) {
        const struct plat_task *t = &s.tasks[i].t;
        char shape[64], tol[32];
        task_shape_print(t, shape, sizeof shape);
        snprintf(tol, sizeof tol, "%.0e/%.0e", t->rtol, t->atol);
        printf("%-28s %-10s %-12s %-26s %-15s %s\n", t->name, plat_task_op_name(t),
               plat_family_name(t->family), shape, tol, s.tasks[i].source);
    }
    task_suite_free(&s);
    return CLI_OK;
}

/* -------------------------------------------------------------- measure --- */

static void print_verify(const struct plat_verify *v)
{
    printf("verify: %s%s%s%s", v->pass ? "PASS" : "FAIL ", v->pass ? "" : plat_fail_name(v->reason),
           v->emulated ? " (emulated)" : "",
           v->reduced_shape ? " at a reduced shape only (the task case cut to the emulation cap; "
                              "--full-shape checks it whole)" : "");
    if (v->reason == PLAT_FAIL_SCREEN_REJECTED)
        printf(" [%s]", plat_screen_rule_name(v->screen_rule));
    if (v->reason == PLAT_FAIL_CRASH && v->signal)
        printf(" signal %d", v->signal);
    if (v->detail[0])
        printf(": %s", v->detail);
    printf("\n");
    if (v->method[0])
        printf("  %s\n", v->method);
    if (v->n_cases)
        printf("  %-22s %-6s %-20s %-11s %-11s %s\n", "case", "result", "reason", "max_abs",
               "max_rel", "norm_err");
    for (int i = 0; i < v->n_cases; i++) {
        const struct plat_case *k = &v->cases[i];
        printf("  %-22s %-6s %-20s %-11.3g %-11.3g %.3g\n", k->label, k->pass ? "ok" : "FAIL",
               plat_fail_name(k->reason), k->max_abs, k->max_rel, k->norm_err);
    }
}

static void print_measure(const struct plat_measure *m)
{
    if (!m->ok) {
        printf("measure: FAIL %s: %s\n", plat_fail_name(m->reason), m->detail);
        return;
    }
    printf("measure: %s\n", !m->emulated ? "native"
                           : strstr(m->method, "virtual machine: not a speed")
                               ? "VIRTUAL MACHINE (native code, emulated machine): times below are "
                                 "not speed; virtual machine: not a speed"
                               : "EMULATED (qemu, or a fake toolkit): times below are not "
                                 "speed; only vcost/icount ratios are claimed");
    printf("  how: %s\n", m->method);
    printf("  %-12s median %10.0f ns  min %10.0f ns  spread %5.1f%%  repeats %d", "candidate",
           m->median_ns, m->min_ns, 100 * m->spread, m->repeats);
    if (m->has_icount)
        printf("  icount %llu (vector %llu, vmem %llu)", (unsigned long long)m->icount,
               (unsigned long long)m->icount_vector, (unsigned long long)m->icount_vmem);
    if (m->vcost)
        printf("  vcost %llu", (unsigned long long)m->vcost);
    else if (m->has_icount)
        printf("  vcost unmodelled (register-form vsetvl)");
    if (m->mca_cycles) /* platform.k3.model mca:CPU: beside vcost, no ratio (docs/COSTMODEL.md) */
        printf("  mca %llu cycles", (unsigned long long)m->mca_cycles);
    printf("\n");
    if (m->cycles)
        printf("  cycles/call  %llu (perf_event_open)\n", (unsigned long long)m->cycles);
    if (!m->emulated && m->median_ns > 0)
        printf("  achieved     %.2f GFLOP/s, %.2f GB/s (nominal work of the task shape)\n",
               m->flops / m->median_ns, m->bytes / m->median_ns);
    for (int i = 0; i < m->n_baselines; i++) {
        const struct plat_baseline *b = &m->base[i];
        printf("  %-12s median %10.0f ns  min %10.0f ns", b->name, b->median_ns, b->min_ns);
        if (m->has_icount)
            printf("  icount %llu", (unsigned long long)b->icount);
        if (b->vcost)
            printf("  vcost %llu", (unsigned long long)b->vcost);
        if (b->mca_cycles)
            printf("  mca %llu", (unsigned long long)b->mca_cycles);
        if (b->ratio > 0)
            printf("  -> %.2fx by %s (baseline/candidate; >1: candidate better)\n", b->ratio,
                   !m->emulated ? "median time"
                   : strcmp(m->ratio_metric, "vcost") == 0 ? "vector cost (model)" : "instruction count");
        else
            printf("  -> no speed ratio claimed%s\n", m->emulated ? " (emulated, no icount)" : "");
    }
}

int cli_measure(struct cli *c, int argc, char **argv)
{
    const char *suite_path = NULL, *task_name = NULL, *file = NULL, *platform = NULL;
    int no_baselines = 0, verify_only = 0, flush = 0, roofline = 0, full_shape = 0;
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope measure KERNEL.c --task NAME [--suite FILE] [--verify-only]\n"
               "                    [--no-baselines] [--flush] [--roofline] [--full-shape]\n"
               "                    [--platform k3|ascend]\n"
               "Screens, compiles, verifies (task shape + awkward sizes) and measures one kernel\n"
               "file against the task's same-run baselines (scalar -O2, auto-vectorized -O3,\n"
               "OpenBLAS for matmul). Under qemu results are labelled emulated: correctness and\n"
               "instruction counts only. --flush flushes caches between timed samples;\n"
               "--roofline probes the machine first and reports the kernel's share of the\n"
               "attainable roofline (native only). Under qemu a task larger than the\n"
               "emulation cap is verified cut down (\"at a reduced shape only\"); --full-shape\n"
               "verifies it whole (minutes per large matmul).\n"
               "Config: platform.name (k3), platform.k3.{cc,cflags,runner,timeout_ms,...};\n"
               "--platform ascend: an Ascend C file (platform/ascend/embed/kope_ascend.h) through\n"
               "CANN, platform.ascend.{home,soc,npu_smi,device,timeout_ms} (docs/ASCEND.md).\n"
               "Exit: 0 passed, 1 failed, 2 usage.\n");
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--suite")))
            suite_path = v;
        else if ((v = opt_value(argc, argv, &i, "--task")))
            task_name = v;
        else if ((v = opt_value(argc, argv, &i, "--platform")))
            platform = v;
        else if (strcmp(argv[i], "--no-baselines") == 0)
            no_baselines = 1;
        else if (strcmp(argv[i], "--verify-only") == 0)
            verify_only = 1;
        else if (strcmp(argv[i], "--flush") == 0)
            flush = 1;
        else if (strcmp(argv[i], "--roofline") == 0)
            roofline = 1;
        else if (strcmp(argv[i], "--full-shape") == 0)
            full_shape = 1;
        else if (argv[i][0] == '-' && argv[i][1]) {
            static const char *const valued[] = {"--suite", "--task", "--platform", NULL};
            if (!cli_missing_value("measure", argv[i], valued))
                fprintf(stderr, "kope measure: unknown option '%s'\n", argv[i]);
            return CLI_USAGE;
        } else if (!file)
            file = argv[i];
        else {
            fprintf(stderr, "kope measure: one kernel file at a time\n");
            return CLI_USAGE;
        }
    }
    if (!file || !task_name) {
        fprintf(stderr, "usage: kope measure KERNEL.c --task NAME [--suite FILE]\n");
        return CLI_USAGE;
    }

    int ret = CLI_FAIL;
    struct task_suite s = {0};
    struct platform *p = NULL;
    struct plat_build b = {0};
    struct plat_verify *v = calloc(1, sizeof *v);
    struct plat_measure *m = calloc(1, sizeof *m);
    char *src = NULL;
    size_t len = 0;
    char err[600];
    if (!v || !m) {
        fprintf(stderr, "kope measure: out of memory\n");
        goto out;
    }
    int rc = task_suite_load(suite_path, &s, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope measure: %s\n", err);
        goto out;
    }
    const struct task_entry *te = task_suite_find(&s, task_name);
    if (!te) {
        const char *near = task_suite_near(&s, task_name);
        fprintf(stderr, "kope measure: no task '%s' in suite %s%s%s%s (see `kope tasks`)\n", task_name, s.name,
                near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        ret = CLI_USAGE;
        goto out;
    }
    rc = util_read_file(file, KERNEL_FILE_MAX, &src, &len, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope measure: %s\n", err);
        goto out;
    }
    struct plat_settings set;
    const char *target = cli_platform_name(c, platform);
    cli_platform_settings_for(c, target, &set);
    if (no_baselines)
        set.flags |= PLAT_SET_NO_BASELINES;
    if (flush)
        set.flags |= PLAT_SET_FLUSH_CACHE;
    if (full_shape)
        set.flags |= PLAT_SET_FULL_SHAPE;
    rc = platform_open(target, &set, &p, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope measure: %s (%s)\n", err, platform_strerror(rc));
        goto out;
    }
    struct plat_desc d;
    platform_describe(p, &d);
    char shape[64];
    task_shape_print(&te->t, shape, sizeof shape);
    printf("task %s: %s %s (rtol %g, atol %g)\n", te->t.name, plat_task_op_name(&te->t), shape,
           te->t.rtol, te->t.atol);
    printf("target %s: %s\n  cc: %s\n  runner: %s\n", d.name, d.note, d.cc,
           d.runner[0] ? d.runner : "(native)");

    rc = platform_compile(p, &te->t, src, len, &b);
    if (rc) {
        fprintf(stderr, "kope measure: %s (%s)\n", p->err, platform_strerror(rc));
        goto out;
    }
    printf("compile: %s in %.0f ms%s%s\n", b.ok ? "ok" : plat_fail_name(b.reason), b.compile_ms,
           b.detail[0] ? ": " : "", b.detail);
    if (!b.ok && b.diag[0])
        printf("%s%s\n", b.diag, b.diag_truncated ? "\n[diagnostics truncated]" : "");
    rc = platform_verify(p, &te->t, &b, v);
    if (rc) {
        fprintf(stderr, "kope measure: %s (%s)\n", p->err, platform_strerror(rc));
        goto out;
    }
    print_verify(v);
    if (!v->pass || verify_only) {
        ret = v->pass ? CLI_OK : CLI_FAIL;
        goto out;
    }
    rc = platform_measure(p, &te->t, &b, m);
    if (rc) {
        fprintf(stderr, "kope measure: %s (%s)\n", p->err, platform_strerror(rc));
        goto out;
    }
    print_measure(m);
    if (roofline && m->ok) {
        struct plat_probe pr;
        rc = platform_probe(p, &pr);
        double share = rc ? 0 : plat_roofline_share(&pr, m->flops, m->bytes, m->median_ns);
        if (rc)
            printf("  roofline     no probe: %s\n", platform_strerror(rc));
        else if (share > 0)
            printf("  roofline     %.1f%% of attainable min(%.1f GFLOP/s, %.2f flop/byte x %.1f GB/s triad): one-core peak, probed bandwidth\n",
                   100 * share, pr.peak_gflops_core, m->bytes > 0 ? m->flops / m->bytes : 0, pr.triad_gbs);
        else
            printf("  roofline     not claimed (%s)\n", pr.emulated ? "emulated" : "probe lacks peak or bandwidth");
    }
    ret = m->ok ? CLI_OK : CLI_FAIL;
    if (m->ok && strncmp(m->detail, PLAT_NOT_MEASURED, strlen(PLAT_NOT_MEASURED)) == 0) {
        /* verified, but no figure at all: not what `measure` was asked for */
        const char *todo = strstr(m->detail, PLAT_TO_MEASURE);
        fprintf(stderr, "kope measure: %.*s\n", (int)(todo ? (size_t)(todo - m->detail) : strlen(m->detail)),
                m->detail);
        if (todo)
            cli_hint("%s", todo + strlen(PLAT_TO_MEASURE));
        ret = CLI_FAIL;
    }
out:
    if (p) {
        platform_build_free(p, &b);
        platform_close(p);
    }
    task_suite_free(&s);
    free(src);
    free(v);
    free(m);
    return ret;
}

/*
 * core/cli/cli_run.c - `kope run` (the agent over a suite) and `kope queue`
 * (the durable LLM call queue): option parsing, progress, the final table.
 *
 * The loop itself is core/agent/agent.c; this file only turns command lines into
 * struct agent_opts and results into text. The last line of `kope run` is
 * always "passed P/T tasks" (scripts read it), followed, under emulation,
 * by how many tasks were verified at a reduced shape only. Exit: 0 when
 * every task of the run was judged as far as this machine can judge it (a
 * passing kernel, or under emulation a pass at the reduced shape of a task
 * too large to check whole), 1 otherwise or on failure, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/agent/agent.h"
#include "core/agent/bestpeer.h"
#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/context/context.h"
#include "core/err.h"
#include "core/interrupt.h"
#include "core/graph/graph.h"
#include "core/cli/llm_conf.h"
#include "core/task/task.h"
#include "core/termsafe.h"
#include "core/util.h"
#include "net/llm.h"
#include "platform/platform.h"
#include "store/queue.h"
#include "store/store.h"

static const char *opt_val(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strcmp(argv[*i], name) == 0)
        return *i + 1 < argc ? argv[++*i] : NULL;
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    return NULL;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Open the graph, creating this device's identity on first use (a fresh
 * machine runs `kope run` without `kope init`). */
static int open_graph(struct cli *c, struct graph *g)
{
    char kp[4096];
    int rc = cli_graph_open(c, g, 0);
    if (rc)
        return rc;
    if (g->key)
        return CLI_OK;
    struct kope_config *cfg = cli_config(c);
    const char *target = cfg ? kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET) : PLAT_DEFAULT_TARGET;
    int r = graph_identity_create(g, cli_key_path(c, kp, sizeof kp), target);
    if (r == 0) {
        fprintf(stderr, "kope: created this device's identity (key %s)\n", kp);
        return CLI_OK;
    }
    fprintf(stderr, "kope: %s\n", g->err[0] ? g->err : kope_strerror(r));
    graph_free(g);
    return CLI_FAIL;
}

/* LLM settings from config + environment; *have = 1 when an endpoint is set. */
static int load_llm(struct cli *c, struct llm_settings *ls, int *have, struct agent_opts *o)
{
    char err[512];
    llm_settings_init(ls);
    *have = 0;
    struct kope_config *cfg = cli_config(c);
    if (llm_conf_load(cfg, ls, NULL, err, sizeof err) ||
        llm_conf_link_backoff(cfg, &o->link_backoff_ms, err, sizeof err)) {
        fprintf(stderr, "kope: %s\n", err);
        return CLI_FAIL;
    }
    *have = ls->base_url && ls->model;
    return CLI_OK;
}

/* The best peer of a result (its strongest same-run baseline): index into
 * r->ratios, or -1. */
static int result_best_peer(const struct agent_result *r)
{
    double v[PLAT_MAX_BASELINES];
    for (int k = 0; k < r->n_ratios; k++)
        v[k] = r->ratios[k].ratio;
    return bestpeer_pick(v, r->n_ratios);
}

/* The run's closing figures: per family, the geometric mean of the best
 * kernel's ratio against its best peer, and how many tasks are at least
 * the best peer. */
static void print_family_geomeans(const struct agent_summary *s, FILE *f)
{
    const char *fams[PLAT_FAM_COUNT + 8];
    struct geomean gm[PLAT_FAM_COUNT + 8] = {{0}}, all = {0};
    int nf = 0, emulated = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct agent_result *r = &s->res[i];
        int b = r->passed ? result_best_peer(r) : -1;
        if (b < 0)
            continue;
        int k = 0;
        while (k < nf && strcmp(fams[k], r->family))
            k++;
        if (k == nf) {
            if (nf == (int)(sizeof fams / sizeof fams[0]))
                continue;
            fams[nf++] = r->family;
        }
        geomean_add(&gm[k], r->ratios[b].ratio);
        geomean_add(&all, r->ratios[b].ratio);
        emulated |= r->emulated;
    }
    if (!all.n)
        return;
    fprintf(f, "geomean vs best peer%s:", emulated ? " (* emulated: by the vector-cost model)" : "");
    for (int k = 0; k < nf; k++)
        fprintf(f, " %s %.2fx%s (%d/%d >= 1)%s", fams[k], geomean_value(&gm[k]), emulated ? "*" : "",
                gm[k].at_least_1, gm[k].n, k + 1 < nf ? ";" : "");
    fprintf(f, "; all %.2fx%s (%d/%d tasks >= 1)\n", geomean_value(&all), emulated ? "*" : "",
            all.at_least_1, all.n);
}

static void print_table(const struct agent_summary *s, FILE *f)
{
    fprintf(f, "\n%-28s %-7s %-6s %-34s %-22s %-44s %s\n", "task", "passed", "trials", "best (decision path)",
            "vs best peer", "ratio vs baselines (* = emulated: vcost)", "tokens");
    for (size_t i = 0; i < s->n; i++) {
        const struct agent_result *r = &s->res[i];
        char ratios[160] = "", best[40] = "-", peer[64] = "-";
        int shown = r->passed || r->reduced; /* a reduced-shape pass shows its figures, never counted */
        int bp = shown ? result_best_peer(r) : -1;
        if (bp >= 0)
            snprintf(peer, sizeof peer, "%.2fx%s %s", r->ratios[bp].ratio, r->emulated ? "*" : "",
                     r->ratios[bp].name);
        size_t off = 0;
        for (int k = 0; k < r->n_ratios && off < sizeof ratios - 40; k++)
            off += (size_t)snprintf(ratios + off, sizeof ratios - off, "%s%s %.2fx%s", k ? ", " : "",
                                    r->ratios[k].name, r->ratios[k].ratio, r->emulated ? "*" : "");
        if (!r->n_ratios)
            snprintf(ratios, sizeof ratios, !shown ? "-" : r->not_measured[0] ? "(not measured)"
                                                                        : "(no ratio claimed)");
        if (shown)
            snprintf(best, sizeof best, "%.34s", r->best_label);
        fprintf(f, "%-28s %-7s %-6d %-34s %-22s %-44s %ld\n", r->name,
                r->passed ? "yes" : r->reduced ? "reduced" : "NO", r->trials, best, peer, ratios, r->tokens);
        if (shown)
            fprintf(f, "%-28s   path %s\n", "", r->best_path);
    }
    print_family_geomeans(s, f);
    fprintf(f, "run %lld%s: %.1f s, %ld LLM tokens, %ld LLM calls, %ld queued%s%s\n", (long long)s->run,
            s->resumed ? " (resumed)" : "", s->wall_s, s->tokens, s->llm_calls, s->queued,
            s->stop_reason[0] ? "; stopped: " : "", s->stop_reason);
    if (s->reduced)
        fprintf(f, "passed %d/%zu tasks, %d verified at reduced shape only: emulated; full shape on a board "
                   "or with --full-shape\n", s->passed, s->n, s->reduced);
    else
        fprintf(f, "passed %d/%zu tasks\n", s->passed, s->n);
}

/* Passing tasks whose best has no figure at all (PLAT_NOT_MEASURED): said
 * once on stderr with what to do. Returns how many, when that is every
 * passing task (the run measured nothing), else 0. */
static int run_unmeasured(const struct agent_summary *s)
{
    int n = 0;
    const char *why = NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->res[i].passed)
            continue;
        if (!s->res[i].not_measured[0])
            return 0;
        why = s->res[i].not_measured;
        n++;
    }
    if (!n)
        return 0;
    const char *todo = strstr(why, PLAT_TO_MEASURE);
    fprintf(stderr, "kope run: %d passing task(s), none measured: %.*s\n", n,
            (int)(todo ? (size_t)(todo - why) : strlen(why)) - (int)strlen(PLAT_NOT_MEASURED),
            why + strlen(PLAT_NOT_MEASURED));
    if (todo)
        cli_hint("%s", todo + strlen(PLAT_TO_MEASURE));
    return n;
}

/* The command that resumes an interrupted run: the same one (the run is
 * found by its suite and task), without --fresh. */
static void resume_hint(struct cli *c, int argc, char **argv)
{
    char line[2048];
    size_t n = (size_t)snprintf(line, sizeof line, "kope --db %s run", c->db_path);
    for (int i = 1; i < argc && n < sizeof line; i++)
        if (strcmp(argv[i], "--fresh") != 0)
            n += (size_t)snprintf(line + n, sizeof line - n, " %s", argv[i]);
    cli_hint("resume it with the same command: %s", line);
}

int cli_run(struct cli *c, int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope run [--suite FILE] [--task NAME [--seed FILE]] [--budget N] [--offline]\n"
               "                [--platform k3|ascend] [--tokens N] [--time-limit S] [--fresh]\n"
               "                [--no-memory] [--remeasure] [--full-shape] [--context active|passive]\n"
               "\n"
               "Optimizes every task of a suite (default: the embedded k3-core): per task,\n"
               "trial after trial, a proposer writes a kernel - the offline tuner over the\n"
               "k3 templates (first trial: the safe default, then what won on similar tasks,\n"
               "then a search), or the LLM when one is configured, starting from the\n"
               "task's best in the graph (any run's) - and kope screens, compiles, verifies and measures it and\n"
               "records the decision and its outcome in the experience graph.\n"
               "\n"
               "  --budget N       trials per task (default %d)\n"
               "  --tokens N       LLM tokens for the whole run (default %ld)\n"
               "  --time-limit S   stop after S seconds of wall time (resume later)\n"
               "  --offline        never call the LLM (the tuner proposes)\n"
               "  --no-memory      the tuner ignores the graph's past winners\n"
               "  --remeasure      measure again points the graph already holds verified\n"
               "                   (default: a re-run spends its budget on new points)\n"
               "  --fresh          start a new run even if an interrupted one exists\n"
               "  --full-shape     under emulation, verify large tasks at their whole shape\n"
               "                   (default: cut to the emulation cap, reported \"reduced\";\n"
               "                   minutes per large matmul)\n"
               "  --context MODE   prompt building: active (default) or passive\n"
               "  --seed FILE      with --task: your kernel, tried first (proposer \"user\"),\n"
               "                   screened, verified and measured like any candidate; the\n"
               "                   best of the task (and the LLM's start) if it wins\n"
               "\n"
               "An interrupted run (crash, kill, power cut) resumes where it stopped on the\n"
               "next `kope run` with the same suite and task. The last line is\n"
               "`passed P/T tasks` (under emulation with how many were verified at a reduced\n"
               "shape only). Exit: 0 every task passed (at a reduced shape counts under\n"
               "emulation), 1 some failed or error, 2 usage.\n",
               AGENT_BUDGET_DEFAULT, AGENT_TOKENS_DEFAULT);
        return CLI_OK;
    }
    struct agent_opts o;
    const char *seed_path = NULL;
    agent_opts_init(&o);
    int full_shape = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        long n;
        if ((v = opt_val(argc, argv, &i, "--suite")))
            o.suite_path = v;
        else if ((v = opt_val(argc, argv, &i, "--task")))
            o.task_name = v;
        else if ((v = opt_val(argc, argv, &i, "--seed")))
            seed_path = v;
        else if ((v = opt_val(argc, argv, &i, "--platform")))
            o.target = v;
        else if ((v = opt_val(argc, argv, &i, "--budget"))) {
            if (parse_long(v, 1, AGENT_BUDGET_MAX, &n)) {
                fprintf(stderr, "kope run: --budget takes 1..%d trials\n", AGENT_BUDGET_MAX);
                return CLI_USAGE;
            }
            o.budget = (int)n;
        } else if ((v = opt_val(argc, argv, &i, "--tokens"))) {
            if (parse_long(v, 1, 1000000000L, &n)) {
                fprintf(stderr, "kope run: --tokens takes a positive count\n");
                return CLI_USAGE;
            }
            o.token_budget = n;
        } else if ((v = opt_val(argc, argv, &i, "--time-limit"))) {
            if (parse_long(v, 1, 100000000L, &n)) {
                fprintf(stderr, "kope run: --time-limit takes seconds\n");
                return CLI_USAGE;
            }
            o.time_limit_s = (double)n;
        } else if ((v = opt_val(argc, argv, &i, "--context"))) {
            int m = ctx_mode_parse(v);
            if (m < 0) {
                fprintf(stderr, "kope run: --context is active or passive\n");
                return CLI_USAGE;
            }
            o.ctx_mode = m;
        } else if (strcmp(argv[i], "--offline") == 0)
            o.offline = 1;
        else if (strcmp(argv[i], "--no-memory") == 0)
            o.no_memory = 1;
        else if (strcmp(argv[i], "--fresh") == 0)
            o.fresh = 1;
        else if (strcmp(argv[i], "--remeasure") == 0)
            o.remeasure = 1;
        else if (strcmp(argv[i], "--full-shape") == 0)
            full_shape = 1;
        else {
            static const char *const valued[] = {"--suite", "--task", "--seed", "--platform", "--budget",
                                                 "--tokens", "--time-limit", "--context", NULL};
            if (!cli_missing_value("run", argv[i], valued))
                fprintf(stderr, "kope run: unexpected argument '%s' (see kope run --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    char *seed = NULL;
    if (seed_path) {
        /* read before anything is opened or recorded: a bad file records nothing */
        char serr[600];
        if (!o.task_name) {
            fprintf(stderr, "kope run: --seed needs --task NAME (a suite gives each task its \"seed\")\n");
            return CLI_USAGE;
        }
        if (task_seed_read(seed_path, o.task_name, "--seed", &seed, &o.seed_len, serr, sizeof serr)) {
            fprintf(stderr, "kope run: %s\n", serr);
            return CLI_FAIL;
        }
        o.seed_src = seed;
        o.seed_name = seed_path;
    }
    if (o.suite_path) {
        /* a bad suite (or a seed it names) is an error before the store is
         * opened: nothing is recorded, not even this device's identity */
        struct task_suite chk;
        char serr[1024];
        if (task_suite_load(o.suite_path, &chk, serr, sizeof serr)) {
            fprintf(stderr, "kope run: %s\n", serr);
            free(seed);
            return CLI_FAIL;
        }
        task_suite_free(&chk);
    }
    struct kope_config *cfg = cli_config(c);
    if (!o.target)
        o.target = cfg ? kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET) : PLAT_DEFAULT_TARGET;
    if (!platform_find(o.target)) {
        fprintf(stderr, "kope run: no platform '%s'\n", o.target);
        free(seed);
        return CLI_USAGE;
    }
    struct plat_settings set;
    cli_platform_settings_for(c, o.target, &set);
    if (full_shape)
        set.flags |= PLAT_SET_FULL_SHAPE;
    o.plat = &set;
    o.log = stdout;
    o.tty = isatty(STDOUT_FILENO);

    int ret = CLI_FAIL, have_llm = 0;
    struct llm_settings ls;
    struct graph g;
    struct agent_summary sum;
    char err[1024];
    memset(&sum, 0, sizeof sum);
    if (load_llm(c, &ls, &have_llm, &o)) {
        llm_settings_free(&ls);
        free(seed);
        return CLI_FAIL;
    }
    if (have_llm && !o.offline)
        o.llm = &ls;
    if (open_graph(c, &g)) {
        llm_settings_free(&ls);
        free(seed);
        return CLI_FAIL;
    }
    /* the order is proposers_for_task's (core/agent/proposer.h) */
    printf("kope run: suite %s, budget %d trial(s) per task, proposers: %s%s\n",
           o.suite_path ? o.suite_path : "(embedded k3-core)", o.budget ? o.budget : AGENT_BUDGET_DEFAULT,
           seed ? "your seed, " : "",
           o.llm ? "the LLM (queued while the link is down), the target's starter and tuner"
                 : "the target's starter and the offline tuner (no LLM)");
    fflush(stdout);
    /* from here a Ctrl-C or a SIGTERM stops the run at the next trial
     * boundary, through the cleanup below (core/interrupt.h) */
    interrupt_install();
    int rc = agent_run(&g, &o, &sum, err, sizeof err);
    if (rc == KOPE_ERR_INTERRUPTED) {
        int sig = interrupt_pending();
        fprintf(stderr, "kope run: interrupted by %s: %s; its work folders are removed\n", interrupt_name(sig),
                err[0] ? err : kope_strerror(rc));
        resume_hint(c, argc, argv);
        ret = 128 + sig;
        goto out;
    }
    if (rc) {
        fprintf(stderr, "kope run: %s\n", err[0] ? err : kope_strerror(rc));
        if (rc == KOPE_ERR_NOTFOUND) {
            cli_hint("`kope tasks%s%s` lists the suite's task names", o.suite_path ? " --suite " : "",
                     o.suite_path ? o.suite_path : "");
            ret = CLI_USAGE;
        }
        else if (rc == KOPE_ERR_IN_USE)
            cli_hint("one `kope run` per task at a time: wait for that one to end (or stop it: kill -INT "
                     "PID), or run another task");
        else
            cli_store_hint(c, rc);
        goto out;
    }
    {
        /* names and paths in the table come from suites and the graph:
         * printed through termsafe (a seed named with escapes stays text) */
        struct termsafe_buf tb;
        FILE *mem = termsafe_open(&tb);
        if (mem) {
            print_table(&sum, mem);
            termsafe_flush(mem, &tb, stdout);
        } else {
            fprintf(stderr, "kope run: out of memory for the results table (the graph holds them: "
                            "`kope graph log TASK`)\n");
        }
    }
    /* a pass at a reduced shape is all an emulated run can judge of a task
     * too large to check whole: reported as such, not a failure */
    ret = sum.passed + sum.reduced == (int)sum.n && sum.complete ? CLI_OK : CLI_FAIL;
    if (run_unmeasured(&sum) > 0)
        ret = CLI_FAIL; /* nothing was measured: not a success */
out:
    agent_summary_free(&sum);
    graph_free(&g);
    llm_settings_free(&ls);
    free(seed);
    return ret;
}

/* ------------------------------------------------------------------ queue */

static int print_row(void *ctx, const struct store_queue_row *r)
{
    (void)ctx;
    char t[GRAPH_ID_HEX] = "-", p[GRAPH_ID_HEX] = "-";
    if (r->has_task)
        util_hex(r->task, 32, t);
    if (r->has_parent)
        util_hex(r->parent, 32, p);
    printf("%-6lld %-8s %-12.12s %-12.12s %-5d %s\n", (long long)r->qid, r->state, t, p, r->tries,
           r->error ? r->error : "");
    return 0;
}

int cli_queue(struct cli *c, int argc, char **argv)
{
    if (cli_wants_help(argc, argv) || argc < 2) {
        FILE *f = argc < 2 && !cli_wants_help(argc, argv) ? stderr : stdout;
        fprintf(f, "usage: kope queue list | flush | drop ID\n"
                   "\n"
                   "LLM calls that could not be sent wait in the store's queue; `kope run`\n"
                   "sends them when the link returns (with backoff).\n"
                   "  list    every call: id, state (pending/sent/done/failed), task, parent, tries\n"
                   "  flush   send pending calls now and apply every answered one (its kernel\n"
                   "          is compiled, verified, measured and recorded, exactly once)\n"
                   "  drop ID give up a call that is not done\n");
        return f == stdout ? CLI_OK : CLI_USAGE;
    }
    if ((strcmp(argv[1], "list") == 0 || strcmp(argv[1], "flush") == 0) && argc > 2) {
        fprintf(stderr, "kope queue %s: unexpected argument '%s' (it takes none)\n", argv[1], argv[2]);
        cli_hint("kope queue %s", argv[1]);
        return CLI_USAGE;
    }
    /* list only reads: it works on a store in a read-only folder */
    struct store *st = cli_store_mode(c, argc == 2 && strcmp(argv[1], "list") == 0 ? STORE_READONLY : STORE_EXISTING);
    if (!st)
        return CLI_FAIL;
    if (strcmp(argv[1], "list") == 0) {
        printf("%-6s %-8s %-12s %-12s %-5s %s\n", "id", "state", "task", "parent", "tries", "error");
        int rc = store_queue_each(st, NULL, print_row, NULL);
        if (rc) {
            fprintf(stderr, "kope queue: %s\n", store_errmsg(st));
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    if (strcmp(argv[1], "drop") == 0) {
        long id;
        if (argc != 3 || parse_long(argv[2], 1, 0x7fffffffL, &id)) {
            fprintf(stderr, "usage: kope queue drop ID\n");
            return CLI_USAGE;
        }
        int rc = store_queue_drop(st, id);
        if (rc == STORE_ERR_NOTFOUND) {
            fprintf(stderr, "kope queue: no call %ld\n", id);
            return CLI_FAIL;
        }
        if (rc == STORE_ERR_CONFLICT) {
            fprintf(stderr, "kope queue: call %ld is already applied or dropped\n", id);
            return CLI_FAIL;
        }
        if (rc) {
            fprintf(stderr, "kope queue: %s\n", store_errmsg(st));
            return CLI_FAIL;
        }
        printf("dropped call %ld\n", id);
        return CLI_OK;
    }
    if (strcmp(argv[1], "flush") == 0 && cli_kernel_host_check("queue flush"))
        return CLI_FAIL; /* applying an answer measures its kernel */
    if (strcmp(argv[1], "flush") == 0) {
        struct llm_settings ls;
        struct graph g;
        struct agent_opts o;
        struct plat_settings set;
        int have = 0, sent = 0, applied = 0, ret = CLI_FAIL;
        char err[1024];
        agent_opts_init(&o);
        if (load_llm(c, &ls, &have, &o)) {
            llm_settings_free(&ls);
            return CLI_FAIL;
        }
        if (open_graph(c, &g)) {
            llm_settings_free(&ls);
            return CLI_FAIL;
        }
        cli_platform_settings(c, &set);
        o.plat = &set;
        o.llm = have ? &ls : NULL;
        o.log = stdout;
        struct kope_config *cfg = cli_config(c);
        o.target = cfg ? kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET) : PLAT_DEFAULT_TARGET;
        if (!have)
            fprintf(stderr, "kope queue: no LLM endpoint configured: only answered calls are applied\n");
        int rc = agent_queue_flush(&g, &o, NULL, 1, &sent, &applied, err, sizeof err);
        if (rc) {
            fprintf(stderr, "kope queue: %s\n", err);
        } else {
            int64_t left = 0;
            store_queue_count(st, "pending", &left);
            printf("sent %d, applied %d, still queued %lld\n", sent, applied, (long long)left);
            ret = CLI_OK;
            if (have && left > 0) { /* asked to send and could not: say so in the exit code */
                fprintf(stderr, "kope queue: %lld call(s) still queued: the link is down (see `kope queue list`)\n"
                                "hint: check the endpoint with `kope llm check`, then run `kope queue flush` again\n",
                        (long long)left);
                ret = CLI_FAIL;
            }
        }
        graph_free(&g);
        llm_settings_free(&ls);
        return ret;
    }
    fprintf(stderr, "kope queue: unknown subcommand '%s' (list, flush, drop ID)\n", argv[1]);
    return CLI_USAGE;
}

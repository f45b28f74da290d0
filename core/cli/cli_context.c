/*
 * core/cli/cli_context.c - `kope context TASK`: print the prompt the next `kope
 * run --task TASK` would send, with the tokens of each tier and which records
 * were chosen (or dropped) and why. Read-only: it never appends to the graph.
 *
 * The prompt comes from agent_prompt_next (core/agent/agent.h): the run's own
 * builder (core/agent/prompt.c) with the run's inputs - the target, the task's
 * best in the graph, and the feedback of the run the next `kope run` would
 * resume - so what is printed is what is sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/agent/agent.h"
#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/context/context.h"
#include "core/err.h"
#include "core/cli/llm_conf.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "core/termsafe.h"
#include "core/util.h"
#include "net/llm.h"
#include "platform/platform.h"

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strcmp(argv[*i], name) == 0)
        return *i + 1 < argc ? argv[++*i] : NULL;
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    return NULL;
}

static int is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strcmp(a, name) == 0 || (strncmp(a, name, n) == 0 && a[n] == '=');
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kope context TASK [--suite FILE] [--platform NAME] [--budget N]\n"
            "                         [--context active|passive] [--endpoint URL]\n"
            "\n"
            "Prints, byte for byte, the prompt the next `kope run --task TASK` would send to\n"
            "the LLM (same builder, target, best and feedback: the trials of the run it\n"
            "would resume, none for a new run), with the token count of\n"
            "each tier (hot: task, best kernel, latest feedback; warm: experience retrieved\n"
            "from the graph; cold: built-in knowledge and the probe), every candidate item\n"
            "with '+' chosen or '-' dropped and why, then the system and user messages.\n"
            "\n"
            "  --suite FILE      task suite (default: the embedded %s)\n"
            "  --platform NAME   target (default: platform.name, else %s)\n"
            "  --budget N        token budget of the prompt (default %d)\n"
            "  --context MODE    active (default) or passive: the full history, unbudgeted\n"
            "                    (the KOPE paper's baseline), for comparison\n"
            "  --endpoint URL    count tokens with that endpoint's calibration factor\n"
            "                    (default: llm.base_url / $KOPE_LLM_BASE_URL)\n",
            TASK_DEFAULT_SUITE, PLAT_DEFAULT_TARGET, CTX_BUDGET_DEFAULT);
}

int cli_context(struct cli *c, int argc, char **argv)
{
    const char *suite_path = NULL, *task_name = NULL, *endpoint = NULL, *target = NULL;
    long budget = CTX_BUDGET_DEFAULT;
    int mode = CTX_ACTIVE, budget_set = 0;
    char err[512];
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (is_opt(argv[i], "--suite")) {
            if (!(v = opt_value(argc, argv, &i, "--suite")) || !*v)
                goto bad;
            suite_path = v;
        } else if (is_opt(argv[i], "--budget")) {
            char *end = NULL;
            if (!(v = opt_value(argc, argv, &i, "--budget")))
                goto bad;
            budget = strtol(v, &end, 10);
            if (!*v || *end || budget < CTX_BUDGET_MIN || budget > 10000000) {
                fprintf(stderr, "kope context: --budget must be an integer from %d to 10000000\n",
                        CTX_BUDGET_MIN);
                return CLI_USAGE;
            }
            budget_set = 1;
        } else if (is_opt(argv[i], "--platform")) {
            if (!(v = opt_value(argc, argv, &i, "--platform")) || !*v)
                goto bad;
            target = v;
        } else if (is_opt(argv[i], "--context")) {
            if (!(v = opt_value(argc, argv, &i, "--context")) || (mode = ctx_mode_parse(v)) < 0) {
                fprintf(stderr, "kope context: --context must be active or passive\n");
                return CLI_USAGE;
            }
        } else if (is_opt(argv[i], "--endpoint")) {
            if (!(v = opt_value(argc, argv, &i, "--endpoint")))
                goto bad;
            endpoint = v;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "kope context: unknown option '%s' (see `kope context --help`)\n", argv[i]);
            return CLI_USAGE;
        } else if (!task_name) {
            task_name = argv[i];
        } else {
            fprintf(stderr, "kope context: one TASK only\n");
            return CLI_USAGE;
        }
    }
    if (!task_name) {
        usage(stderr);
        return CLI_USAGE;
    }

    struct kope_config *cfg = cli_config(c);
    struct agent_opts o;
    struct agent_next nx;
    struct llm_settings ls, view;
    struct ctx_prompt p;
    struct graph g;
    int rc = CLI_FAIL, have_graph = 0;
    agent_opts_init(&o);
    llm_settings_init(&ls);
    ctx_prompt_init(&p);
    /* the options `kope run --task TASK` would run with */
    o.suite_path = suite_path;
    o.task_name = task_name;
    o.target = target ? target : cfg ? kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET)
                                     : PLAT_DEFAULT_TARGET;
    o.ctx_mode = mode;
    o.ctx_budget = budget_set ? (size_t)budget : 0;
    if (!platform_find(o.target)) {
        fprintf(stderr, "kope context: no platform '%s'\n", o.target);
        rc = CLI_USAGE;
        goto out;
    }
    if (llm_conf_load(cfg, &ls, NULL, err, sizeof err)) {
        fprintf(stderr, "kope context: %s\n", err);
        goto out;
    }
    view = ls;
    if (endpoint)
        view.base_url = (char *)endpoint; /* borrowed for the call; ls keeps its own */
    o.llm = view.base_url ? &view : NULL;
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY) != CLI_OK)
        goto out;
    have_graph = 1;
    int arc = agent_prompt_next(&g, &o, &p, &nx, err, sizeof err);
    if (arc) {
        fprintf(stderr, "kope context: %s\n", err[0] ? err : kope_strerror(arc));
        rc = CLI_FAIL;
        goto out;
    }
    if (nx.has_task) {
        char hex[GRAPH_ID_HEX];
        util_hex(nx.task_id, 32, hex);
        printf("# task %s: record %.16s, %zu decision(s) in the graph\n", task_name, hex, nx.decisions);
    } else {
        printf("# task %s: not in the graph yet (no own history)\n", task_name);
    }
    if (nx.run)
        printf("# the next `kope run` resumes run %lld (%s): feedback from its %zu trial(s)\n",
               (long long)nx.run, nx.run_key, nx.trials);
    else
        printf("# the next `kope run` is a new run: no feedback yet\n");
    if (!nx.has_best && !nx.trials)
        printf("# no best in the graph yet: the run's first trial is the target's own (tuner default or\n"
               "# starter), and the first LLM prompt follows its outcome\n");
    /* the prompt quotes stored text (sources, diagnostics, replies): its
     * control bytes are printed escaped (core/termsafe.h) */
    struct termsafe_buf tb;
    FILE *mem = termsafe_open(&tb);
    if (mem) {
        ctx_prompt_print(&p, mem);
        termsafe_flush(mem, &tb, stdout);
    } else {
        fprintf(stderr, "kope context: out of memory\n");
    }
    rc = mem && fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
out:
    ctx_prompt_free(&p);
    llm_settings_free(&ls);
    if (have_graph)
        graph_free(&g);
    return rc;
bad:
    fprintf(stderr, "kope context: an option needs a value (see `kope context --help`)\n");
    return CLI_USAGE;
}

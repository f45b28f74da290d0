/*
 * core/cli_context.c - `kope context TASK`: print the prompt the agent would
 * send next for a task, with the tokens of each tier and which records were
 * chosen (or dropped) and why. Read-only: it never appends to the graph.
 *
 * The hot tier comes from the graph as `kope run` would leave it: the best
 * passing decision of the task is the current best kernel (and the decision
 * refined next), and the newest outcome is the latest feedback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/cli.h"
#include "core/config.h"
#include "core/context.h"
#include "core/err.h"
#include "core/graph.h"
#include "core/task.h"
#include "core/util.h"

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

static const char *body_str(const struct graph_rec *r, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->json, "body"), k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double body_num(const struct graph_rec *r, const char *k, double d)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->json, "body"), k);
    return cJSON_IsNumber(v) ? v->valuedouble : d;
}

static void tags_of(const struct graph_rec *r, char *buf, size_t cap)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->json, "body"), "tags");
    const cJSON *e;
    size_t off = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(e, t) {
        if (cJSON_IsString(e) && off + strlen(e->valuestring) + 2 < cap)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? "," : "", e->valuestring);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kope context TASK [--suite FILE] [--budget N] [--context active|passive]\n"
            "                         [--endpoint URL]\n"
            "\n"
            "Prints the prompt kope would send to the LLM next for TASK: the token count of\n"
            "each tier (hot: task, best kernel, latest feedback; warm: experience retrieved\n"
            "from the graph; cold: built-in knowledge and the probe), every candidate item\n"
            "with '+' chosen or '-' dropped and why, then the system and user messages.\n"
            "\n"
            "  --suite FILE      task suite (default: the embedded %s)\n"
            "  --budget N        token budget of the prompt (default %d)\n"
            "  --context MODE    active (default) or passive: the full history, unbudgeted\n"
            "                    (the KOPE paper's baseline), for comparison\n"
            "  --endpoint URL    count tokens with that endpoint's calibration factor\n"
            "                    (default: llm.base_url / $KOPE_LLM_BASE_URL)\n",
            TASK_DEFAULT_SUITE, CTX_BUDGET_DEFAULT);
}

int cli_context(struct cli *c, int argc, char **argv)
{
    const char *suite_path = NULL, *task_name = NULL, *endpoint = NULL;
    long budget = CTX_BUDGET_DEFAULT;
    int mode = CTX_ACTIVE;
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

    struct task_suite suite;
    memset(&suite, 0, sizeof suite);
    if (task_suite_load(suite_path, &suite, err, sizeof err)) {
        fprintf(stderr, "kope context: %s\n", err);
        return CLI_FAIL;
    }
    int rc = CLI_FAIL;
    const struct task_entry *te = task_suite_find(&suite, task_name);
    struct graph g;
    struct graph_tree tree;
    struct ctx_prompt p;
    char *best_src = NULL;
    int have_graph = 0, have_tree = 0;
    memset(&tree, 0, sizeof tree);
    ctx_prompt_init(&p);
    if (!te) {
        fprintf(stderr, "kope context: no task '%s' in suite %s (see `kope tasks`)\n", task_name,
                suite.name);
        goto out;
    }
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY) != CLI_OK)
        goto out;
    have_graph = 1;
    if (!endpoint) {
        endpoint = getenv("KOPE_LLM_BASE_URL");
        if (!endpoint || !*endpoint) {
            struct kope_config *cfg = cli_config(c);
            endpoint = cfg ? kope_config_str(cfg, "llm.base_url", NULL) : NULL;
        }
    }

    struct ctx_request rq;
    ctx_request_init(&rq);
    rq.task = &te->t;
    rq.budget_tokens = (size_t)budget;
    rq.mode = (enum ctx_mode)mode;
    rq.endpoint = endpoint;
    uint8_t task_id[32], parent[32];
    char summary[400], tags[200], fb_tags[200];
    struct ctx_feedback fb;
    memset(&fb, 0, sizeof fb);
    if (graph_task_find(&g, te->t.name, task_id) == 0) {
        rq.task_id = task_id;
        if (graph_tree_load(&g, task_id, &tree) == 0) {
            have_tree = 1;
            int best = graph_tree_best(&tree);
            if (best >= 0) {
                const struct graph_node *nd = &tree.nodes[best];
                const char *src = body_str(&nd->dec, "source");
                size_t len;
                if (src && graph_blob_get(&g, src, &best_src, &len) == 0) {
                    const char *base = body_str(&nd->out, "baseline");
                    tags_of(&nd->dec, tags, sizeof tags);
                    snprintf(summary, sizeof summary, "pass, %.2fx vs %s [%s]",
                             body_num(&nd->out, "speedup", 0), base ? base : "baseline", tags);
                    rq.best_source = best_src;
                    rq.best_summary = summary;
                    rq.best_share = body_num(&nd->out, "share", 0);
                    memcpy(parent, nd->dec.id, 32);
                    rq.parent_decision = parent;
                }
            }
            /* the newest outcome is the latest feedback */
            for (size_t i = tree.n; i-- > 0;) {
                const struct graph_node *nd = &tree.nodes[i];
                if (!nd->has_outcome)
                    continue;
                tags_of(&nd->dec, fb_tags, sizeof fb_tags);
                fb.stage = "outcome";
                fb.status = body_str(&nd->out, "status");
                fb.tags = fb_tags;
                fb.text = body_str(&nd->out, "reason");
                fb.speedup = body_num(&nd->out, "speedup", 0);
                fb.baseline = body_str(&nd->out, "baseline");
                fb.emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(nd->out.json, "body"), "emulated"));
                rq.feedback = &fb;
                rq.n_feedback = 1;
                break;
            }
        }
    }
    int brc = context_build(&g, &rq, &p);
    if (brc) {
        fprintf(stderr, "kope context: %s\n", p.err[0] ? p.err : kope_strerror(brc));
        goto out;
    }
    if (rq.task_id) {
        char hex[GRAPH_ID_HEX];
        util_hex(task_id, 32, hex);
        printf("# task %s: record %.16s, %zu decision(s) in the graph\n", te->t.name, hex,
               have_tree ? tree.n : 0);
    } else {
        printf("# task %s: not in the graph yet (no own history)\n", te->t.name);
    }
    ctx_prompt_print(&p, stdout);
    rc = fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
out:
    ctx_prompt_free(&p);
    if (have_tree)
        graph_tree_free(&tree);
    free(best_src);
    if (have_graph)
        graph_free(&g);
    task_suite_free(&suite);
    return rc;
bad:
    fprintf(stderr, "kope context: an option needs a value (see `kope context --help`)\n");
    return CLI_USAGE;
}

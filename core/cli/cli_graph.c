/*
 * core/cli/cli_graph.c - `kope graph SUBCOMMAND`: stats, show, log, dot, export,
 * import, vector. Read-only subcommands work without a device identity.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/cli/cli.h"
#include "core/suggest.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/graph/sync.h"
#include "net/fleet.h"
#include "core/util.h"
#include "core/termsafe.h"
#include "store/store.h"

static void graph_usage(FILE *f)
{
    fprintf(f,
            "usage: kope [--db PATH] graph SUBCOMMAND [ARGS]\n"
            "\n"
            "  stats                 records by kind, origins, blobs, file size\n"
            "  show ID               one record (full id or a unique prefix of 8+ hex digits)\n"
            "  log TASK              a task's decision tree with outcomes (TASK: name or id)\n"
            "  dot TASK              the same as Graphviz DOT (pipe into `dot -Tsvg`)\n"
            "  export [--since VEC] [-o FILE]\n"
            "                        write records as a JSON Lines shard (stdout by default);\n"
            "                        VEC is a version vector {\"origin\": seq, ...} or @FILE\n"
            "  import FILE           read a shard (- for stdin); every record is verified\n"
            "                        (hash, chain, signed checkpoint) before it is stored\n"
            "  vector                this store's version vector (for --since elsewhere)\n"
            "\n"
            "Exit codes: 0 ok, 1 failure (e.g. records rejected on import), 2 usage.\n");
}

static int do_stats(struct cli *c)
{
    struct store *st = cli_store_mode(c, STORE_READONLY);
    struct store_stats s;
    if (!st)
        return CLI_FAIL;
    uint64_t t0 = util_now_ns();
    int rc = store_stats_get(st, &s);
    uint64_t t1 = util_now_ns();
    if (rc) {
        fprintf(stderr, "kope graph stats: %s\n", store_errmsg(st));
        return CLI_FAIL;
    }
    char *dev = NULL;
    store_meta_get(st, "device_origin", &dev);
    printf("store     %s (schema v%d, %.1f MiB)\n", c->db_path, s.schema_version,
           (double)s.file_bytes / 1048576.0);
    printf("device    %s\n", dev ? dev : "(none: run `kope init`)");
    printf("records   %lld\n", (long long)s.n_records);
    for (int i = 0; i < s.n_kinds; i++)
        printf("  %-11s %lld\n", s.kinds[i].kind, (long long)s.kinds[i].n);
    printf("origins   %lld\n", (long long)s.n_origins);
    printf("blobs     %lld (%.1f KiB of text, each stored once)\n", (long long)s.n_blobs,
           (double)s.blob_bytes / 1024.0);
    printf("queue     %lld pending LLM call(s)\n", (long long)s.queue_pending);
    if (s.n_records)
        printf("bytes/rec %.0f\n", (double)s.file_bytes / (double)s.n_records);
    printf("(%.2f ms)\n", (double)(t1 - t0) / 1e6);
    free(dev);
    return CLI_OK;
}

static int do_show(struct cli *c, const char *id)
{
    struct graph g;
    struct graph_rec r;
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY))
        return CLI_FAIL;
    int rc = graph_get(&g, id, &r);
    if (rc) {
        fprintf(stderr, "kope graph show: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        graph_free(&g);
        return rc == KOPE_ERR_USAGE ? CLI_USAGE : CLI_FAIL;
    }
    cJSON_AddStringToObject(r.json, "id", r.id_hex);
    char *text = cJSON_Print(r.json);
    printf("%s\n", text ? text : "(out of memory)");
    free(text);
    graph_rec_free(&r);
    graph_free(&g);
    return CLI_OK;
}

static int do_tree(struct cli *c, const char *task, int dot)
{
    struct graph g;
    struct graph_tree t;
    uint8_t id[32];
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY))
        return CLI_FAIL;
    int rc = graph_task_find(&g, task, id);
    if (!rc)
        rc = graph_tree_load(&g, id, &t);
    if (rc) {
        fprintf(stderr, "kope graph %s: %s\n", dot ? "dot" : "log", g.err[0] ? g.err : kope_strerror(rc));
        if (rc == KOPE_ERR_NOTFOUND)
            cli_hint("`kope tasks` lists the suite's task names; a task is in the graph once "
                     "`kope run --task NAME` (or an import) has recorded it");
        graph_free(&g);
        return CLI_FAIL;
    }
    /* the tree quotes stored text (reasons, proposers): printed escaped */
    struct termsafe_buf tb;
    FILE *mem = termsafe_open(&tb);
    if (mem) {
        if (dot)
            graph_tree_dot(&t, mem);
        else
            graph_tree_print(&t, mem);
        termsafe_flush(mem, &tb, stdout);
    } else {
        fprintf(stderr, "kope graph: out of memory\n");
    }
    graph_tree_free(&t);
    graph_free(&g);
    return mem ? CLI_OK : CLI_FAIL;
}

static int do_export(struct cli *c, int argc, char **argv)
{
    const char *since = NULL, *outp = NULL;
    char *since_buf = NULL, err[512];
    size_t len;
    int code = CLI_FAIL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--since") == 0 && i + 1 < argc)
            since = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            outp = argv[++i];
        else {
            static const char *const valued[] = {"--since", "-o", NULL};
            if (!cli_missing_value("graph export", argv[i], valued))
                fprintf(stderr, "kope graph export: unexpected argument '%s'\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (since && since[0] == '@') {
        if (util_read_file(since + 1, 16 * 1024 * 1024, &since_buf, &len, err, sizeof err)) {
            fprintf(stderr, "kope graph export: %s\n", err);
            return CLI_FAIL;
        }
        since = since_buf;
    }
    /* a writable store signs its head first, so everything goes; one on
     * read-only media (or another user's) exports what its checkpoints
     * already cover */
    struct graph g;
    if (cli_graph_open(c, &g, CLI_GRAPH_WRITE_IF_ABLE)) {
        free(since_buf);
        return CLI_FAIL;
    }
    if (store_read_only(g.st) && g.key)
        fprintf(stderr, "kope graph export: the store is read-only here: records after this device's last "
                        "checkpoint stay behind\n");
    FILE *out = outp ? fopen(outp, "w") : stdout;
    if (!out) {
        fprintf(stderr, "kope graph export: %s: %s\n", outp, strerror(errno));
        goto out;
    }
    int64_t n = 0;
    int rc = graph_export(&g, since, out, &n);
    if (outp && fclose(out) != 0 && !rc)
        rc = KOPE_ERR_IO;
    if (rc) {
        fprintf(stderr, "kope graph export: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        code = rc == KOPE_ERR_USAGE ? CLI_USAGE : CLI_FAIL;
        goto out;
    }
    fprintf(stderr, "exported %lld record(s)\n", (long long)n);
    code = CLI_OK;
out:
    graph_free(&g);
    free(since_buf);
    return code;
}

static int do_import(struct cli *c, const char *path)
{
    struct graph g;
    struct graph_import_stats s;
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!in) {
        fprintf(stderr, "kope graph import: %s: %s\n", path, strerror(errno));
        return CLI_FAIL;
    }
    if (cli_graph_open(c, &g, 0)) {
        if (in != stdin)
            fclose(in);
        return CLI_FAIL;
    }
    /* A store that trusts a fleet applies the same policy as peer sync. */
    struct net_trust *trust = NULL;
    if (cli_fleet_trust_load(c, &trust)) {
        if (in != stdin)
            fclose(in);
        graph_free(&g);
        return CLI_FAIL;
    }
    struct graph_import_opts opts = {sync_trust_check, trust, SYNC_MAX_PENDING, 0, sync_revoke_check, 0};
    int rc = graph_import_opts(&g, in, trust ? &opts : NULL, &s);
    net_trust_free(trust);
    if (in != stdin)
        fclose(in);
    printf("imported %lld new record(s), %lld already present, %lld rejected, %lld blob(s)\n",
           (long long)s.accepted, (long long)s.duplicates, (long long)s.rejected, (long long)s.blobs);
    if (rc) {
        fprintf(stderr, "kope graph import: %s: %s\n", kope_strerror(rc),
                s.first_error[0] ? s.first_error : "");
        if (rc == STORE_ERR_FULL)
            fprintf(stderr, "kope graph import: free disk space and import again: committed runs are kept\n");
    }
    graph_free(&g);
    return rc ? CLI_FAIL : CLI_OK;
}

static int do_vector(struct cli *c)
{
    struct graph g;
    char *v = NULL;
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY))
        return CLI_FAIL;
    int rc = graph_vector(&g, &v);
    if (!rc)
        printf("%s\n", v);
    free(v);
    graph_free(&g);
    return rc ? CLI_FAIL : CLI_OK;
}

int cli_graph(struct cli *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        graph_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *sub = argv[1];
    if (cli_wants_help(argc - 1, argv + 1)) {
        graph_usage(stdout);
        return CLI_OK;
    }
    /* an option where a subcommand takes none (or a TASK/ID): named, not
     * read as a task name or lumped in with "bad subcommand" */
    static const char *const subs[] = {"stats", "show", "log", "dot", "vector", NULL};
    for (int k = 0; subs[k]; k++)
        for (int i = 2; i < argc && strcmp(sub, subs[k]) == 0; i++)
            if (argv[i][0] == '-' && argv[i][1]) {
                fprintf(stderr, "kope graph %s: unknown option '%s'\n", sub, argv[i]);
                cli_hint("`kope graph --help` lists each subcommand's arguments");
                return CLI_USAGE;
            }
    if (strcmp(sub, "stats") == 0 && argc == 2)
        return do_stats(c);
    if (strcmp(sub, "show") == 0 && argc == 3)
        return do_show(c, argv[2]);
    if (strcmp(sub, "log") == 0 && argc == 3)
        return do_tree(c, argv[2], 0);
    if (strcmp(sub, "dot") == 0 && argc == 3)
        return do_tree(c, argv[2], 1);
    if (strcmp(sub, "export") == 0)
        return do_export(c, argc, argv);
    if (strcmp(sub, "import") == 0 && argc == 3 && strncmp(argv[2], "--", 2) == 0) {
        fprintf(stderr, "kope graph import: unknown option '%s' (it takes one shard file, or - for stdin)\n",
                argv[2]);
        cli_hint("kope graph import SHARD.jsonl");
        return CLI_USAGE;
    }
    if (strcmp(sub, "import") == 0 && argc == 3)
        return do_import(c, argv[2]);
    if (strcmp(sub, "vector") == 0 && argc == 2)
        return do_vector(c);
    static const char *const all[] = {"stats", "show", "log", "dot", "export", "import", "vector", NULL};
    int known = 0;
    for (int k = 0; all[k]; k++)
        known |= strcmp(sub, all[k]) == 0;
    if (known) /* a known subcommand with the wrong number of arguments */
        fprintf(stderr, "kope graph %s: wrong arguments\n", sub);
    else {
        struct suggest near;
        suggest_init(&near, sub);
        for (int k = 0; all[k]; k++)
            suggest_add(&near, all[k]);
        const char *dym = suggest_best(&near);
        fprintf(stderr, "kope graph: unknown subcommand '%s'%s%s%s\n", sub,
                dym ? " (did you mean '" : "", dym ? dym : "", dym ? "'?)" : "");
    }
    cli_hint("`kope graph --help` lists each subcommand's arguments");
    return CLI_USAGE;
}

/*
 * core/cli_init.c - `kope init` and the helpers every command shares
 * (lazy store/config opening, --help detection, the device key path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/config.h"
#include "core/err.h"
#include "core/graph.h"
#include "core/util.h"
#include "store/store.h"

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

struct store *cli_store(struct cli *c)
{
    char err[512];
    if (c->st)
        return c->st;
    int rc = store_open(c->db_path, &c->st, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope: %s\n", err);
        if (rc == STORE_ERR_VERSION)
            fprintf(stderr, "kope: this store was written by a newer kope; use that version\n");
        return NULL;
    }
    return c->st;
}

struct kope_config *cli_config(struct cli *c)
{
    char err[512];
    if (c->cfg)
        return c->cfg;
    if (kope_config_load(c->config_path, &c->cfg, err, sizeof err)) {
        fprintf(stderr, "kope: %s\n", err);
        return NULL;
    }
    return c->cfg;
}

const char *cli_key_path(struct cli *c, char *buf, size_t cap)
{
    const char *k = getenv("KOPE_KEY");
    if (k && *k)
        return k;
    snprintf(buf, cap, "%s.key", c->db_path);
    return buf;
}

int cli_graph_open(struct cli *c, struct graph *g, int need_identity)
{
    char kp[4096];
    struct store *st = cli_store(c);
    if (!st)
        return CLI_FAIL;
    graph_init(g, st);
    int rc = graph_identity_load(g, cli_key_path(c, kp, sizeof kp));
    if (rc && need_identity) {
        fprintf(stderr, "kope: %s\n", g->err[0] ? g->err : kope_strerror(rc));
        graph_free(g);
        return CLI_FAIL;
    }
    if (rc && rc != KOPE_ERR_NOINIT) /* e.g. the key file is gone: say so, carry on read-only */
        fprintf(stderr, "kope: warning: %s; continuing without this device's identity "
                        "(its records after the last checkpoint stay local)\n",
                g->err[0] ? g->err : kope_strerror(rc));
    g->err[0] = '\0';
    return CLI_OK;
}

int cli_init(struct cli *c, int argc, char **argv)
{
    const char *target = NULL;
    char kp[4096], hex[GRAPH_ID_HEX];
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope [--db PATH] init [--target NAME]\n"
               "\n"
               "Creates the store (if absent) and this device's identity: an ECDSA P-256\n"
               "key written to PATH.key (mode 0600; $KOPE_KEY overrides the path) and the\n"
               "first record of the device's chain. Running it again on an initialised\n"
               "store changes nothing and says so.\n"
               "\n"
               "  --target NAME   what this device optimizes for (default: config\n"
               "                  platform.name, else k3)\n");
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
            target = argv[++i];
        } else {
            fprintf(stderr, "kope init: unexpected argument '%s' (see `kope init --help`)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    struct kope_config *cfg = cli_config(c);
    if (!cfg)
        return CLI_FAIL;
    if (!target)
        target = kope_config_str(cfg, "platform.name", "k3");
    if (strlen(target) == 0 || strlen(target) >= 32) {
        fprintf(stderr, "kope init: --target must be 1 to 31 characters\n");
        return CLI_USAGE;
    }
    struct store *st = cli_store(c);
    if (!st)
        return CLI_FAIL;
    struct graph g;
    graph_init(&g, st);
    int rc = graph_identity_create(&g, cli_key_path(c, kp, sizeof kp), target);
    if (rc == KOPE_ERR_EXISTS && graph_identity_load(&g, kp) == 0) {
        util_hex(g.origin, 32, hex);
        printf("already initialised: %s\n  device %s (target %s)\n  key    %s\n", c->db_path, hex,
               target, kp);
        graph_free(&g);
        return CLI_OK;
    }
    if (rc) {
        fprintf(stderr, "kope init: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        graph_free(&g);
        return CLI_FAIL;
    }
    util_hex(g.origin, 32, hex);
    printf("initialised %s\n  device %s (target %s)\n  key    %s (keep it private; back it up with the store)\n",
           c->db_path, hex, target, kp);
    graph_free(&g);
    return CLI_OK;
}

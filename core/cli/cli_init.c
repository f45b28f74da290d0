/*
 * core/cli/cli_init.c - `kope init` and the helpers every command shares
 * (lazy store/config opening, --help detection, the device key path).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/util.h"
#include "platform/hostcheck.h"
#include "platform/platform.h"
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

int cli_kernel_host_check(const char *cmd)
{
    char msg[512];
    unsigned vlen = 0;
    if (plat_host_check(msg, sizeof msg, &vlen) == 0)
        return 0;
    fprintf(stderr, "kope %s: refusing to run K3 kernels on this CPU: %s\n", cmd, msg);
    cli_hint("graph, sync, report, tasks and the other commands that run no kernel work here; measure "
             "and run on a VLEN-256 core (SpacemiT K3 X100)");
    return 1;
}

int cli_missing_value(const char *cmd, const char *arg, const char *const *valued)
{
    for (; *valued; valued++) {
        if (strcmp(arg, *valued) != 0)
            continue;
        fprintf(stderr, "kope %s: %s needs a value\n", cmd, arg);
        cli_hint("kope %s %s VALUE ... (see `kope %s --help`)", cmd, arg, cmd);
        return 1;
    }
    return 0;
}

void cli_hint(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hint: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The folder of the store, for messages. */
static void store_dir(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, "the current folder");
    else
        snprintf(buf, cap, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

struct store *cli_store_mode(struct cli *c, int mode)
{
    char err[512], dir[1024];
    if (c->st && (!store_read_only(c->st) || mode == STORE_READONLY))
        return c->st;
    store_close(c->st); /* read-only so far, and now a write is wanted */
    c->st = NULL;
    int rc = store_open_mode(c->db_path, (enum store_mode)mode, &c->st, err, sizeof err);
    if (!rc)
        return c->st;
    fprintf(stderr, "kope: %s\n", err);
    store_dir(c->db_path, dir, sizeof dir);
    switch (rc) {
    case STORE_ERR_MISSING:
        cli_hint("run `kope init` first (it creates %s), or pass --db (or set $KOPE_DB) with the "
                 "path of an existing store", c->db_path);
        break;
    case STORE_ERR_NODIR:
        cli_hint("create the folder first (mkdir -p %s), or pass another --db", dir);
        break;
    case STORE_ERR_READONLY:
        cli_hint("kope writes %s-wal and %s-shm beside the store, so %s must be writable for this "
                 "command; the read-only ones (graph stats/log/dot/show/vector, context, report, "
                 "queue list) work without that", c->db_path, c->db_path, dir);
        break;
    case STORE_ERR_VERSION:
        cli_hint("this store was written by a newer kope: use that version");
        break;
    case STORE_ERR_OLD:
        cli_hint("run `kope init` once with this kope: it migrates the store and changes nothing else");
        break;
    case STORE_ERR_BUSY:
        cli_hint("another kope process holds the store: wait for it, or stop it");
        break;
    default:
        cli_hint("is %s a kope store? Pass --db with the right file (`kope init` makes a new one)",
                 c->db_path);
        break;
    }
    return NULL;
}

struct store *cli_store(struct cli *c)
{
    return cli_store_mode(c, STORE_EXISTING);
}

int cli_config_check(struct cli *c)
{
    char err[1024];
    if (c->cfg)
        return CLI_OK;
    int rc = kope_config_load(c->config_path, &c->cfg, err, sizeof err);
    if (!rc)
        return CLI_OK;
    /* the message may carry its own hint line (config.c names the keys) */
    fprintf(stderr, "kope: %s\n", err);
    if (!strstr(err, "\nhint: ")) {
        if (rc == KOPE_ERR_CONFIG)
            cli_hint("fix the file, or pass --config with another one (without --config and "
                     "$KOPE_CONFIG, kope reads ./kope.json if it exists)");
        else
            cli_hint("pass --config (or set $KOPE_CONFIG) with a config file that exists, or "
                     "leave both unset for none");
    }
    return rc == KOPE_ERR_CONFIG ? CLI_USAGE : CLI_FAIL;
}

struct kope_config *cli_config(struct cli *c)
{
    return cli_config_check(c) == CLI_OK ? c->cfg : NULL;
}

const char *cli_key_path(struct cli *c, char *buf, size_t cap)
{
    const char *k = getenv("KOPE_KEY");
    if (k && *k)
        return k;
    snprintf(buf, cap, "%s.key", c->db_path);
    return buf;
}

/* The way out of a lost key, for every command that meets one. There is
 * no way to make a new key for an existing identity (its origin is the hash
 * of the public key), so `kope init` cannot mend it: the hint says what can. */
static void lost_key_hint(struct cli *c, const char *kp)
{
    cli_hint("restore %s from your backup (the key is kept beside the store, never inside it); "
             "or start a new identity with a new store: `kope --db NEW.db init`, then bring these "
             "records over with `kope --db %s graph export -o old.jsonl` and `kope --db NEW.db "
             "graph import old.jsonl` (records after the last signed checkpoint stay behind)",
             kp, c->db_path);
}

int cli_graph_open(struct cli *c, struct graph *g, int flags)
{
    char kp[4096];
    struct store *st = cli_store_mode(c, flags & CLI_GRAPH_READONLY ? STORE_READONLY : STORE_EXISTING);
    if (!st)
        return CLI_FAIL;
    graph_init(g, st);
    int rc = graph_identity_load(g, cli_key_path(c, kp, sizeof kp));
    if (rc && (flags & CLI_GRAPH_IDENTITY)) {
        fprintf(stderr, "kope: %s\n", g->err[0] ? g->err : kope_strerror(rc));
        if (rc == KOPE_ERR_NOINIT)
            cli_hint("run `kope init` (it makes this device's key and identity in %s)", c->db_path);
        else
            lost_key_hint(c, kp);
        graph_free(g);
        return CLI_FAIL;
    }
    if (rc && rc != KOPE_ERR_NOINIT && !(flags & CLI_GRAPH_READONLY)) {
        /* e.g. the key file is gone: say so, carry on without signing */
        fprintf(stderr, "kope: warning: %s; continuing without this device's identity "
                        "(its records after the last checkpoint stay local)\n",
                g->err[0] ? g->err : kope_strerror(rc));
        lost_key_hint(c, kp);
    }
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
        target = kope_config_str(cfg, "platform.name", PLAT_DEFAULT_TARGET);
    if (strlen(target) == 0 || strlen(target) >= 32) {
        fprintf(stderr, "kope init: --target must be 1 to 31 characters\n");
        return CLI_USAGE;
    }
    struct store *st = cli_store_mode(c, STORE_CREATE);
    if (!st)
        return CLI_FAIL;
    struct graph g;
    graph_init(&g, st);
    int rc = graph_identity_create(&g, cli_key_path(c, kp, sizeof kp), target);
    int had_identity = rc == KOPE_ERR_EXISTS && strstr(g.err, "already has a device identity");
    if (had_identity && (rc = graph_identity_load(&g, kp)) == 0) {
        util_hex(g.origin, 32, hex);
        printf("already initialised: %s\n  device %s (target %s)\n  key    %s\n", c->db_path, hex,
               target, kp);
        graph_free(&g);
        return CLI_OK;
    }
    if (rc) {
        fprintf(stderr, "kope init: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        if (had_identity) /* the store is initialised, its key is not readable */
            lost_key_hint(c, kp);
        else if (rc == KOPE_ERR_EXISTS)
            cli_hint("%s is another store's key (or this one's, before its store was lost): pass "
                     "--db with the store it belongs to, or move it away to start a new identity "
                     "here", kp);
        graph_free(&g);
        return CLI_FAIL;
    }
    util_hex(g.origin, 32, hex);
    printf("initialised %s\n  device %s (target %s)\n  key    %s (keep it private; back it up with the store)\n",
           c->db_path, hex, target, kp);
    graph_free(&g);
    return CLI_OK;
}

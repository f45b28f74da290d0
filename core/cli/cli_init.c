/*
 * core/cli/cli_init.c - `kope init` and the helpers every command shares
 * (lazy store/config opening, --help detection, the device key path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int cli_int_arg(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || errno || !end || *end || v < lo || v > hi) {
        fprintf(stderr, "kope %s: %s takes an integer from %ld to %ld, not '%s'\n", cmd, opt, lo, hi,
                s ? s : "");
        cli_hint("kope %s %s N (see `kope %s --help`)", cmd, opt, cmd);
        return 1;
    }
    *out = (int)v;
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

/* Said once per wait, from the store's busy handler (store_set_wait_notice):
 * a command that stands still says why. */
static void wait_notice(void *ctx, long pid, int timeout_ms)
{
    (void)ctx;
    if (pid)
        fprintf(stderr, "kope: waiting for the store: pid %ld is writing (waiting up to %d s)\n", pid,
                timeout_ms / 1000);
    else
        fprintf(stderr, "kope: waiting for the store: another process is writing (waiting up to %d s)\n",
                timeout_ms / 1000);
}

void cli_store_hint(struct cli *c, int rc)
{
    char dir[1024];
    store_dir(c->db_path, dir, sizeof dir);
    if (rc == STORE_ERR_FULL)
        cli_hint("the disk holding %s is full: free space there (df -h %s), then run the same command "
                 "again; nothing partial was written, what was committed stays", c->db_path,
                 strchr(c->db_path, '/') ? dir : ".");
    else if (rc == STORE_ERR_BUSY)
        cli_hint("another kope process kept the store's write lock for %d s: wait for it to finish (or stop "
                 "it), then run the same command again", CLI_STORE_WAIT_MS / 1000);
    else if (rc == STORE_ERR_READONLY)
        cli_hint("this command writes: %s must be writable (the read-only commands - graph stats/log/dot/"
                 "show/vector/export, context, report, kernel show, kernels export, queue list - work "
                 "without that)", dir);
}

struct store *cli_store_mode(struct cli *c, int mode)
{
    char err[512], dir[1024];
    if (c->st && (!store_read_only(c->st) || mode == STORE_READONLY))
        return c->st;
    store_close(c->st); /* read-only so far, and now a write is wanted */
    c->st = NULL;
    int rc = store_open_mode(c->db_path, (enum store_mode)mode, &c->st, err, sizeof err);
    if (!rc) {
        /* a second kope on the same store waits its turn, saying so */
        store_set_busy_timeout(c->st, CLI_STORE_WAIT_MS);
        store_set_wait_notice(c->st, wait_notice, NULL);
        return c->st;
    }
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
                 "command; the read-only ones (graph stats/log/dot/show/vector/export, context, report, "
                 "kernel show, kernels export, queue list) work without that", c->db_path, c->db_path, dir);
        break;
    case STORE_ERR_FULL:
        cli_store_hint(c, rc);
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
    char kp[4096], err[512];
    if ((flags & CLI_GRAPH_WRITE_IF_ABLE) && !c->st) {
        /* try writing quietly; a store this process cannot write is read */
        int rc = store_open_mode(c->db_path, STORE_EXISTING, &c->st, err, sizeof err);
        if (rc == STORE_ERR_READONLY)
            flags |= CLI_GRAPH_READONLY;
        else if (!rc) {
            store_set_busy_timeout(c->st, CLI_STORE_WAIT_MS);
            store_set_wait_notice(c->st, wait_notice, NULL);
        }
    }
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

/* ------------------------------------------------------------ kope init */

/* What a new store is built under until it is whole, and its key. */
static void init_leftovers_remove(const char *tdb, const char *tkey)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal", ".lock"};
    char p[4300];
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        snprintf(p, sizeof p, "%s%s", tdb, sfx[i]);
        (void)unlink(p); /* absent is the usual case */
    }
    (void)unlink(tkey);
}

/* Give a finished file its name, never replacing one that appeared
 * meanwhile (link fails with EEXIST); where the filesystem has no hard
 * links (vfat on an SD card), a rename after a last look. 0 or -1 (errno). */
static int init_place(const char *from, const char *to)
{
    struct stat sb;
    if (link(from, to) == 0)
        return unlink(from) == 0 || errno == ENOENT ? 0 : -1;
    if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP && errno != EMLINK && errno != ENOSYS)
        return -1;
    if (lstat(to, &sb) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

static void dir_sync(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd); /* the names survive a power cut; nothing to do if the folder cannot sync */
        close(fd);
    }
}

/* A new store, all or nothing: built as DB.init-PID with its key as
 * KEY.init-PID, sealed (the main file alone holds it: store_seal), then the
 * key and the store get their names. Any failure before that removes
 * every file it made, so a full disk or a killed init never leaves a
 * store without its identity for later commands to trip over. */
static int init_new(struct cli *c, const char *target, const char *kp)
{
    char tdb[4200], tkey[4200], err[512], hex[GRAPH_ID_HEX], dir[1024];
    struct store *st = NULL;
    struct stat sb;
    int rc, code = CLI_FAIL, key_placed = 0, e = 0;
    store_dir(c->db_path, dir, sizeof dir);
    if (lstat(kp, &sb) == 0) {
        fprintf(stderr, "kope init: cannot create the key file %s (it must not exist yet)\n", kp);
        cli_hint("%s is another store's key (or this one's, before its store was lost): pass --db with the "
                 "store it belongs to, or move it away to start a new identity here", kp);
        return CLI_FAIL;
    }
    snprintf(tdb, sizeof tdb, "%s.init-%ld", c->db_path, (long)getpid());
    snprintf(tkey, sizeof tkey, "%s.init-%ld", kp, (long)getpid());
    init_leftovers_remove(tdb, tkey);
    if ((rc = store_open_mode(tdb, STORE_CREATE, &st, err, sizeof err))) {
        fprintf(stderr, "kope init: %s\n", err);
        goto out;
    }
    struct graph g;
    graph_init(&g, st);
    rc = graph_identity_create(&g, tkey, target);
    e = errno;
    if (rc)
        fprintf(stderr, "kope init: %s\n", g.err[0] ? g.err : kope_strerror(rc));
    else if ((rc = store_seal(st)))
        fprintf(stderr, "kope init: %s: %s\n", kope_strerror(rc), store_errmsg(st));
    util_hex(g.origin, 32, hex);
    graph_free(&g);
    store_close(st);
    st = NULL;
    if (rc)
        goto out;
    if (init_place(tkey, kp) != 0) {
        e = errno;
        fprintf(stderr, "kope init: cannot create the key file %s: %s\n", kp, strerror(e));
        goto out;
    }
    key_placed = 1;
    if (init_place(tdb, c->db_path) != 0) {
        e = errno;
        fprintf(stderr, "kope init: cannot create %s: %s\n", c->db_path, strerror(e));
        goto out;
    }
    dir_sync(kp);
    dir_sync(c->db_path);
    printf("initialised %s\n  device %s (target %s)\n  key    %s (keep it private; back it up with the store)\n",
           c->db_path, hex, target, kp);
    code = CLI_OK;
out:
    if (code != CLI_OK) {
        if (key_placed)
            (void)unlink(kp); /* ours, made a moment ago: the store did not follow */
        if (rc == STORE_ERR_FULL || e == ENOSPC || e == EDQUOT || e == EFBIG)
            cli_hint("the disk holding %s is full: free space there (df -h %s) and run `kope init` again; "
                     "nothing was created", c->db_path, strchr(c->db_path, '/') ? dir : ".");
        else
            cli_hint("nothing was created: mend the cause above and run `kope init` again");
    }
    store_close(st);
    init_leftovers_remove(tdb, tkey);
    return code;
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
    /* a new store is made whole or not at all; an existing one (of an
     * older kope, or one whose identity is missing) is opened in place */
    struct stat sb;
    char dir[1024];
    store_dir(c->db_path, dir, sizeof dir);
    cli_key_path(c, kp, sizeof kp);
    if (lstat(c->db_path, &sb) != 0 && errno == ENOENT &&
        stat(strchr(c->db_path, '/') ? dir : ".", &sb) == 0)
        return init_new(c, target, kp);
    struct store *st = cli_store_mode(c, STORE_CREATE);
    if (!st)
        return CLI_FAIL;
    struct graph g;
    graph_init(&g, st);
    int rc = graph_identity_create(&g, kp, target);
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

/*
 * core/cli/cli.h - the command-line front end: global options and the command table.
 *
 * `kope [--db PATH] [--config FILE] COMMAND [ARGS]`. main() parses the global
 * options into struct cli and dispatches to one cli_* function per command.
 * Each returns the process exit code: 0 ok, 1 failure, 2 usage error.
 * Commands open the store / config lazily through the helpers below, so
 * `kope --version` and `kope help` touch no file.
 */
#ifndef KOPE_CLI_H
#define KOPE_CLI_H

#include <stdio.h>

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

struct store;
struct kope_config;

struct cli {
    const char *db_path;     /* --db, else $KOPE_DB, else ./kope.db */
    const char *config_path; /* --config, else $KOPE_CONFIG, else ./kope.json if present */
    const char *prog;        /* argv[0] for messages */
    struct store *st;        /* opened by cli_store() */
    struct kope_config *cfg; /* loaded by cli_config() */
};

/* Open the existing store at c->db_path (migrating it) on first use: a
 * missing store is an error (only `kope init` creates one). Prints the
 * error and a hint, returns NULL on failure. Owned by c; closed by main. */
struct store *cli_store(struct cli *c);
/* The same with a store_mode (store/store.h): STORE_CREATE for `kope init`,
 * STORE_READONLY for commands that only read. A read-only handle is
 * replaced when a later call wants to write. */
struct store *cli_store_mode(struct cli *c, int mode);
/* Load the config file on first use (an absent default file is an empty
 * config). Prints the error and returns NULL on failure. Owned by c. */
struct kope_config *cli_config(struct cli *c);
/* main() loads the config once, before any command does work: bad JSON, an
 * unknown key or a wrong type exits 2 (CLI_USAGE) with FILE:LINE:COLUMN, a
 * missing or unreadable file 1. Prints the error and a hint. */
int cli_config_check(struct cli *c);
/* Print "hint: ..." on stderr: the last line of an error a user can mend,
 * saying what to do next. */
void cli_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The hint for a store error a user can mend (disk full, the write lock
 * held too long, a folder that is not writable); nothing for others. */
void cli_store_hint(struct cli *c, int rc);
/* How long a command waits for another kope process's write (it says so
 * after STORE_WAIT_NOTICE_MS, naming the writer's pid). */
#ifndef CLI_STORE_WAIT_MS
#define CLI_STORE_WAIT_MS 60000
#endif

struct graph;
/* Path of this device's private key: $KOPE_KEY, else DB.key. */
const char *cli_key_path(struct cli *c, char *buf, size_t cap);
/* Open the store and a graph on it; loads the identity (required with
 * CLI_GRAPH_IDENTITY, else optional). CLI_GRAPH_READONLY: the command only
 * reads (store opened STORE_READONLY, no warning about a missing key).
 * Prints errors and hints; returns a CLI_* code. */
#define CLI_GRAPH_IDENTITY 1
#define CLI_GRAPH_READONLY 2
/* write when the store is writable here, else read-only without a word */
#define CLI_GRAPH_WRITE_IF_ABLE 4
int cli_graph_open(struct cli *c, struct graph *g, int flags);

/* True if argv holds -h or --help: every subcommand checks this first. */
int cli_wants_help(int argc, char **argv);
/* 0 if this CPU can run the K3 kernels this build is for (platform/
 * hostcheck.h: a riscv64 build needs V with VLEN >= 256); else print why
 * for `kope CMD` with a hint and return 1. Commands that run no kernel
 * never call it: they work on any core the binary starts on. */
int cli_kernel_host_check(const char *cmd);

/* If arg is one of valued (a NULL-ended list of options that take a value)
 * given without one (the last word of the line), print "kope CMD: ARG needs
 * a value" and a hint, and return 1; else 0 (arg is something else). */
int cli_missing_value(const char *cmd, const char *arg, const char *const *valued);
/* Option opt's value s as a whole decimal integer in lo..hi into *out: 0,
 * or 1 after saying on stderr what opt takes (never atoi's silent 0 or
 * prefix: "3x", "", "99999999999" are refused). */
int cli_int_arg(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);

/* Commands (argv[0] is the command name). */
int cli_init(struct cli *c, int argc, char **argv);
int cli_graph(struct cli *c, int argc, char **argv);
int cli_llm(struct cli *c, int argc, char **argv);   /* core/cli/cli_llm.c */
int cli_tasks(struct cli *c, int argc, char **argv);   /* core/cli/cli_k3.c */
int cli_measure(struct cli *c, int argc, char **argv); /* core/cli/cli_k3.c */
int cli_probe(struct cli *c, int argc, char **argv);   /* core/cli/cli_probe.c */
int cli_context(struct cli *c, int argc, char **argv); /* core/cli/cli_context.c */
int cli_serve(struct cli *c, int argc, char **argv);   /* core/cli/cli_sync.c */
int cli_sync(struct cli *c, int argc, char **argv);    /* core/cli/cli_sync.c */
int cli_fleet(struct cli *c, int argc, char **argv);   /* core/cli/cli_sync.c */
/* The fleet CAs this store trusts (DB.ca.pem or config fleet.ca): *out NULL
 * when there is no such file (then imports check self-consistency only).
 * Returns -1 (message printed) when the file is unreadable. */
struct net_trust;
int cli_fleet_trust_load(struct cli *c, struct net_trust **out);
int cli_run(struct cli *c, int argc, char **argv);     /* core/cli/cli_run.c */
int cli_queue(struct cli *c, int argc, char **argv);   /* core/cli/cli_run.c */
int cli_report(struct cli *c, int argc, char **argv);  /* core/cli/cli_report.c */
int cli_kernel(struct cli *c, int argc, char **argv);  /* core/cli/cli_kernels.c */
int cli_kernels(struct cli *c, int argc, char **argv); /* core/cli/cli_kernels.c */
/* Target settings from the config (platform.k3.*), for commands that open a
 * platform (core/cli/cli_k3.c). */
struct plat_settings;
void cli_platform_settings(struct cli *c, struct plat_settings *s);
/* The target to use: override (a --platform value) if set, else the config's
 * platform.name, else PLAT_DEFAULT_TARGET. The string is override's or the config's. */
const char *cli_platform_name(struct cli *c, const char *override);
/* Settings of target `name` from the config (platform.<name>.*). */
void cli_platform_settings_for(struct cli *c, const char *name, struct plat_settings *s);

#endif /* KOPE_CLI_H */

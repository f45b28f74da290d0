/*
 * core/cli/main.c - kope's entry point: global options, then one command.
 *
 * The command table below is the whole CLI surface; each entry names the
 * function in core/cli/cli_*.c that implements it and a one-line summary for
 * `kope help`. Exit codes: 0 ok, 1 failure, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cJSON.h>

#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/suggest.h"
#include "core/cli/llm_conf.h"
#include "core/secret.h"
#include "core/util.h"
#include "core/version.h"
#include "net/crypto.h"
#include "net/http.h"
#include "platform/hostcheck.h"
#include "platform/platform.h"
#include "store/store.h"

#ifndef KOPE_ISA
#define KOPE_ISA "unknown"
#endif
#ifndef KOPE_OPENBLAS
#define KOPE_OPENBLAS ""
#endif

struct command {
    const char *name;
    int (*fn)(struct cli *c, int argc, char **argv);
    const char *summary;
    int kernels; /* runs K3 kernels on this CPU: needs the vector unit the build
                    is for (cli_kernel_host_check); the others run anywhere the
                    binary starts */
};

static int cmd_help(struct cli *c, int argc, char **argv);
static int cmd_version(struct cli *c, int argc, char **argv);

static const struct command commands[] = {
    {"init", cli_init, "create the store and this device's identity key", 0},
    {"graph", cli_graph, "inspect, export and import the experience graph", 0},
    {"llm", cli_llm, "check the LLM endpoint: `kope llm check`", 0},
    {"tasks", cli_tasks, "list the tasks of a suite (default: embedded k3-core)", 0},
    {"measure", cli_measure, "verify and measure one kernel file: KERNEL.c --task NAME", 1},
    {"context", cli_context, "print the prompt kope would send for a task, tier by tier", 0},
    {"probe", cli_probe, "characterise this machine: ISA, VLEN, caches, FMA peak, bandwidth", 1},
    {"serve", cli_serve, "serve peer sync over mutual TLS: [--listen HOST:PORT]", 0},
    {"sync", cli_sync, "exchange records with peers: [HOST:PORT ...] (default: config peers)", 0},
    {"fleet", cli_fleet, "fleet certificates: init | enroll NAME | trust CERT | revoke NAME", 0},
    {"run", cli_run, "optimize a suite's kernels: tuner or LLM, every trial recorded", 1},
    {"queue", cli_queue, "the durable LLM call queue: list | flush | drop ID", 0},
    {"kernel", cli_kernel, "print a kernel's source and provenance: show TASK|ID", 0},
    {"kernels", cli_kernels, "export the best kernels as a C library: export -o DIR", 0},
    {"report", cli_report, "write the results as one self-contained HTML page: --html FILE", 0},
    {"version", cmd_version, "print version and build information", 0},
    {"help", cmd_help, "show this help, or `kope help COMMAND`", 0},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kope [--db PATH] [--config FILE] COMMAND [ARGS]\n"
            "\n"
            "kope optimizes compute kernels on the machine it runs on and keeps\n"
            "what it learns in an experience graph (a local SQLite file).\n"
            "\n"
            "global options (before the command):\n"
            "  --db PATH       store file (default $KOPE_DB, else ./kope.db)\n"
            "  --config FILE   JSON config (default $KOPE_CONFIG, else ./kope.json if present)\n"
            "  --version       print the version and exit\n"
            "  -h, --help      this help\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun `kope COMMAND --help` for a command's options.\n"
               "Exit codes: 0 ok, 1 failure, 2 usage error.\n");
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int cmd_help(struct cli *c, int argc, char **argv)
{
    (void)c;
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: kope help [COMMAND]\nLists the commands, or shows one command's help.\n");
        return CLI_OK;
    }
    if (argc > 2) {
        fprintf(stderr, "kope help: one command at a time: unexpected argument '%s'\n", argv[2]);
        cli_hint("kope help %s", argv[1]);
        return CLI_USAGE;
    }
    if (argc > 1) {
        const struct command *cmd = find_command(argv[1]);
        if (!cmd) {
            fprintf(stderr, "kope: no command '%s' (see `kope help`)\n", argv[1]);
            return CLI_USAGE;
        }
        char *hargv[] = {argv[1], "--help", NULL};
        return cmd->fn(c, 2, hargv);
    }
    usage(stdout);
    return CLI_OK;
}

/* `kope version`: what this binary is, one "name
 * value" line each (scripts and tests/test_cli.c pick fields by name).
 * Library versions come from the libraries' own functions, i.e. the code
 * linked in, not the headers compiled against. OpenBLAS is the exception:
 * kope links none of it; the K3 harness links the riscv64 sysroot's, whose
 * VERSIONS file the Makefile reads at build time (KOPE_OPENBLAS). The
 * vector length is the vlenb CSR read now, by the start-up check's V-free
 * code (platform/hostcheck.c), which also answers for a core without V
 * before main runs. Returns 0 if this CPU can run this build. */
static int version_print(struct cli *c)
{
    char msg[512], mbed[NET_MBEDTLS_VERSION_MAX];
    unsigned vlen = 0;
    int ok = plat_host_check(msg, sizeof msg, &vlen) == 0;
    printf("kope %s (%s)\n", KOPE_VERSION, KOPE_ARCH);
    printf("target %s\n", KOPE_ARCH);
    printf("isa %s\n", KOPE_ISA);
    if (vlen)
        printf("vector length %u bits (vlenb, read at run time)\n", vlen);
    if (!ok && vlen) {
        /* a shorter vector unit runs kope, not its kernels: say what works */
        printf("kernels: not on this CPU: %s\n", msg);
        printf("commands: measure, run, probe and queue flush need the build's VLEN; every other command "
               "runs here\n");
        return 0;
    }
    else if (ok)
        printf("vector length none: this build uses no RISC-V vector unit (K3 kernels are "
               "cross-built and run under qemu-riscv64)\n");
    printf("sqlite %s\n", store_sqlite_version());
    printf("mbedtls %s\n", net_mbedtls_version(mbed));
    printf("libcurl %s (TLS %s)\n", http_libcurl_version(), http_tls_backend());
    printf("cjson %s\n", cJSON_Version());
    printf("openblas %s (linked into the K3 harness, not into kope)\n",
           KOPE_OPENBLAS[0] ? KOPE_OPENBLAS : "unknown: no riscv64 sysroot VERSIONS at build time");
    /* the configured target's peers this binary finds now, and where from
     * (platform_ops.peers: a copied binary that lost them says so here) */
    struct plat_settings s;
    const char *target = cli_platform_name(c, NULL);
    cli_platform_settings_for(c, target, &s);
    char peers[2048];
    platform_peers(target, &s, peers, sizeof peers);
    fputs(peers, stdout);
    if (!ok)
        printf("this CPU cannot run this build: %s\n", msg);
    return ok ? 0 : -1;
}

static int cmd_version(struct cli *c, int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope version\nPrints kope's version, the build's target and ISA, the vector "
               "length (riscv64) and the libraries' versions; `kope --version` prints the first line.\n"
               "Exits 1 when this CPU cannot run this build.\n");
        return CLI_OK;
    }
    if (argc > 1) { /* it takes nothing: `kope version --verbose` is a mistake, said as one */
        fprintf(stderr, "kope version: unexpected argument '%s' (it takes none)\n", argv[1]);
        cli_hint("kope version");
        return CLI_USAGE;
    }
    return version_print(c) == 0 ? CLI_OK : CLI_FAIL;
}

/* The last line (core/secret.h): the secrets this kope holds, registered
 * before any command can store, prompt or send text: the API key (if one is
 * set) and this device's private key (if `kope init` made one). Best
 * effort: what cannot be read here the command that needs it reports. */
static void secrets_register(struct cli *c)
{
    llm_conf_secret_register(c->cfg);
    char kp[4096], err[256], *pem = NULL;
    size_t len = 0;
    const char *path = cli_key_path(c, kp, sizeof kp);
    if (path && util_read_file(path, 64 * 1024, &pem, &len, err, sizeof err) == 0) {
        (void)secret_add_key_pem(pem, len, "this device's private key"); /* graph_identity_load retries */
        net_wipe(pem, len);
        free(pem);
    }
}

int main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    c.prog = "kope";
    c.db_path = getenv("KOPE_DB");
    c.config_path = getenv("KOPE_CONFIG");

    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--db") == 0 || strcmp(a, "--config") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fprintf(stderr, "kope: %s needs a value\n", a);
                cli_hint("kope %s %s COMMAND ...", a, a[2] == 'd' ? "PATH" : "FILE");
                return CLI_USAGE;
            }
            if (a[2] == 'd')
                c.db_path = argv[++i];
            else
                c.config_path = argv[++i];
        } else if (strncmp(a, "--db=", 5) == 0) {
            c.db_path = a + 5;
        } else if (strncmp(a, "--config=", 9) == 0) {
            c.config_path = a + 9;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            /* the first line of `kope version` only: --version is the
             * start-up floor bench/footprint.sh measures (RSS <= 2 MB), and
             * the library calls of the full text cost 0.45 MB of it */
            printf("kope %s (%s)\n", KOPE_VERSION, KOPE_ARCH);
            return CLI_OK;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return CLI_OK;
        } else {
            fprintf(stderr, "kope: unknown option '%s' (global options go before the command)\n", a);
            cli_hint("the global options are --db PATH, --config FILE, --version and --help; a "
                     "command's own options follow it (`kope COMMAND --help`)");
            return CLI_USAGE;
        }
    }
    if (!c.db_path || !*c.db_path)
        c.db_path = "kope.db";
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    const struct command *cmd = find_command(argv[i]);
    if (!cmd) {
        struct suggest near;
        suggest_init(&near, argv[i]);
        for (size_t k = 0; k < N_COMMANDS; k++)
            suggest_add(&near, commands[k].name);
        const char *dym = suggest_best(&near);
        fprintf(stderr, "kope: unknown command '%s'%s%s%s\n", argv[i], dym ? " (did you mean '" : "",
                dym ? dym : "", dym ? "'?)" : "");
        cli_hint("`kope help` lists the commands");
        return CLI_USAGE;
    }
    /* `kope graph stats --db x` reads as a global option in the wrong
     * place: no command takes --db or --config itself */
    for (int j = i + 1; j < argc && strcmp(argv[j], "--") != 0; j++) {
        if (strcmp(argv[j], "--db") == 0 || strcmp(argv[j], "--config") == 0 ||
            strncmp(argv[j], "--db=", 5) == 0 || strncmp(argv[j], "--config=", 9) == 0) {
            int is_db = argv[j][2] == 'd';
            const char *val = strchr(argv[j], '=') ? strchr(argv[j], '=') + 1
                              : j + 1 < argc ? argv[j + 1] : "PATH";
            fprintf(stderr, "kope %s: %s is a global option: it goes before the command\n", argv[i],
                    is_db ? "--db" : "--config");
            /* the same line, reordered */
            char fixed[1024];
            size_t n = (size_t)snprintf(fixed, sizeof fixed, "kope %s %s", is_db ? "--db" : "--config", val);
            for (int k = i; k < argc && n < sizeof fixed; k++) {
                if (k == j) {
                    k += !strchr(argv[j], '=');
                    continue;
                }
                n += (size_t)snprintf(fixed + n, sizeof fixed - n, " %s", argv[k]);
            }
            cli_hint("%s", fixed);
            return CLI_USAGE;
        }
    }
    /* The config is read once, before any work: a bad file stops every
     * command that could use it (not help, version or --help). */
    if (cmd->fn != cmd_help && cmd->fn != cmd_version && !cli_wants_help(argc - i, argv + i)) {
        int crc = cli_config_check(&c);
        if (crc != CLI_OK)
            return crc;
        secrets_register(&c);
    }
    if (cmd->kernels && !cli_wants_help(argc - i, argv + i) && cli_kernel_host_check(cmd->name))
        return CLI_FAIL;
    int rc = cmd->fn(&c, argc - i, argv + i);
    store_close(c.st);
    kope_config_free(c.cfg);
    if (getenv("KOPE_RUSAGE")) {
        /* For footprint measurements (bench/footprint.sh): this process's
         * own peak, apart from its compiler and kernel children's. */
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        fprintf(stderr, "kope: rusage self_maxrss_kib %ld children_maxrss_kib %ld\n",
                self.ru_maxrss, kids.ru_maxrss);
    }
    return rc;
}

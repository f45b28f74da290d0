/*
 * core/cli/cli_probe.c - `kope probe`: characterise this machine for bring-up
 * through the target's probe op (ISA, VLEN, cores, caches, FP32 FMA peak,
 * triad bandwidth, hence the roofline), print it, and keep it in the graph
 * as a `probe` record when the store has a device identity.
 *
 * Under emulation (x86_64 host running riscv64 code under qemu) the probe
 * says so and claims nothing about speed: the platform leaves the speed,
 * core and cache fields 0 and this command prints "not claimed".
 * Exit codes: 0 ok, 1 the platform failed, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/cli/cli.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/util.h"
#include "platform/platform.h"

static void print_bytes(const char *label, uint64_t b)
{
    if (!b)
        return;
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        printf(" %s %llu MiB", label, (unsigned long long)(b >> 20));
    else
        printf(" %s %llu KiB", label, (unsigned long long)(b >> 10));
}

/* A target other than k3 (today: ascend) fills the generic fields it has. */
static void probe_print_other(const struct plat_probe *r)
{
    printf("target     %s%s\n", r->target,
           r->emulated ? " (EMULATED: a fake toolkit, no hardware claims)" : "");
    printf("soc        %s\n", r->soc[0] ? r->soc : "unknown");
    if (r->n_cores)
        printf("ai cores   %d (cube), vector cores %d\n", r->n_cores, r->vector_cores);
    else
        printf("ai cores   unknown\n");
    printf("buffers   ");
    print_bytes("UB", r->ub_bytes);
    print_bytes("L1", r->l1d_bytes);
    print_bytes("L2", r->l2_bytes);
    print_bytes("HBM", r->hbm_bytes);
    printf("%s\n", r->ub_bytes || r->l2_bytes ? "" : " unknown");
    printf("speed      not probed on this target (no peak or bandwidth claim)\n");
    if (r->toolkit[0])
        printf("toolkit    %s\n", r->toolkit);
    if (r->method[0])
        printf("method     %s\n", r->method);
    if (r->note[0])
        printf("note       %s\n", r->note);
}

static void probe_print(const struct plat_probe *r, const char *target, const struct plat_settings *s)
{
    if (r->target[0]) { /* a target with its own fields (plat_probe.target) */
        probe_print_other(r);
        return;
    }
    printf("target     k3%s\n", !r->emulated ? " (native)"
                                  : strstr(r->note, "virtual machine")
                                      ? " (native in a virtual machine: not a speed, no hardware claims)"
                                      : " (EMULATED under qemu-user: no hardware claims)");
    printf("isa        %s\n", r->isa);
    printf("vlen       %d bits\n", r->vlen_bits);
    if (r->emulated) {
        printf("cores      not claimed (emulated)\n");
        printf("caches     not claimed (emulated)\n");
        printf("fp32 fma   not claimed (emulated)\n");
        printf("triad      not claimed (emulated)\n");
        printf("roofline   not claimed (emulated)\n");
    } else {
        printf("cores      %d\n", r->n_cores);
        printf("caches    ");
        print_bytes("L1d", r->l1d_bytes);
        print_bytes("L2", r->l2_bytes);
        print_bytes("L3", r->l3_bytes);
        printf("%s\n", r->l1d_bytes || r->l2_bytes || r->l3_bytes ? "" : " unknown (no sysfs cache info)");
        printf("fp32 fma   %.2f GFLOP/s per core, %.2f GFLOP/s all cores\n",
               r->peak_gflops_core, r->peak_gflops_all);
        printf("triad      %.2f GB/s\n", r->triad_gbs);
        if (r->triad_gbs > 0)
            printf("roofline   attainable GFLOP/s = min(%.2f, %.2f x flop/byte); ridge %.2f flop/byte\n",
                   r->peak_gflops_all, r->triad_gbs, r->peak_gflops_all / r->triad_gbs);
    }
    printf("openblas   %s\n", r->openblas_ok ? "usable" : "not usable (missing, or its VLEN does not fit: see note)");
    /* which peers, from where: the same lookup the open platform made */
    char peers[2048];
    platform_peers(target, s, peers, sizeof peers);
    fputs(peers, stdout);
    if (r->method[0])
        printf("method     %s\n", r->method);
    if (r->note[0])
        printf("note       %s\n", r->note);
}

/* The record body. Speeds as integers (MFLOP/s, MB/s) so the canonical
 * form needs no floating point; 0 = not claimed. */
static cJSON *probe_body(const struct plat_probe *r)
{
    cJSON *b = cJSON_CreateObject();
    if (!b)
        return NULL;
    cJSON_AddBoolToObject(b, "emulated", r->emulated);
    cJSON_AddStringToObject(b, "isa", r->isa);
    cJSON_AddNumberToObject(b, "vlen_bits", r->vlen_bits);
    cJSON_AddNumberToObject(b, "cores", r->n_cores);
    cJSON_AddNumberToObject(b, "l1d_bytes", (double)r->l1d_bytes);
    cJSON_AddNumberToObject(b, "l2_bytes", (double)r->l2_bytes);
    cJSON_AddNumberToObject(b, "l3_bytes", (double)r->l3_bytes);
    cJSON_AddNumberToObject(b, "fma_mflops_core", (double)(long long)(r->peak_gflops_core * 1000.0));
    cJSON_AddNumberToObject(b, "fma_mflops_all", (double)(long long)(r->peak_gflops_all * 1000.0));
    cJSON_AddNumberToObject(b, "triad_mbs", (double)(long long)(r->triad_gbs * 1000.0));
    cJSON_AddBoolToObject(b, "openblas_ok", r->openblas_ok);
    cJSON_AddStringToObject(b, "method", r->method);
    cJSON_AddStringToObject(b, "note", r->note);
    if (r->target[0]) { /* CPU-layout (k3) bodies stay as they were */
        cJSON_AddStringToObject(b, "soc", r->soc);
        cJSON_AddNumberToObject(b, "vector_cores", r->vector_cores);
        cJSON_AddNumberToObject(b, "ub_bytes", (double)r->ub_bytes);
        cJSON_AddNumberToObject(b, "hbm_bytes", (double)r->hbm_bytes);
        cJSON_AddStringToObject(b, "toolkit", r->toolkit);
    }
    return b;
}

/* Append the probe record if the store exists and has an identity. */
static int probe_store(struct cli *c, const struct plat_probe *r, const char *target)
{
    if (access(c->db_path, F_OK) != 0) {
        printf("record     not stored: no store at %s (run `kope init` first)\n", c->db_path);
        return CLI_OK;
    }
    struct graph g;
    if (cli_graph_open(c, &g, 0))
        return CLI_FAIL;
    if (!g.key) {
        printf("record     not stored: the store has no device identity (run `kope init`)\n");
        graph_free(&g);
        return CLI_OK;
    }
    int code = CLI_FAIL;
    uint8_t id[32];
    char hex[GRAPH_ID_HEX];
    cJSON *body = probe_body(r);
    int rc = body ? graph_append(&g, "probe", r->target[0] ? r->target : target, NULL, 0, body, id) : KOPE_ERR_NOMEM;
    if (!rc)
        rc = graph_checkpoint(&g);
    if (rc) {
        fprintf(stderr, "kope probe: storing the probe record: %s\n", g.err[0] ? g.err : kope_strerror(rc));
    } else {
        util_hex(id, sizeof id, hex);
        printf("record     probe %s\n", hex);
        code = CLI_OK;
    }
    cJSON_Delete(body);
    graph_free(&g);
    return code;
}

int cli_probe(struct cli *c, int argc, char **argv)
{
    int store = 1;
    const char *platform = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope probe [--no-store] [--platform k3|ascend]\n"
               "\n"
               "Characterises this machine for the k3 target: ISA, VLEN, cores, cache\n"
               "sizes (sysfs), FP32 FMA peak per core and for all cores (register-blocked\n"
               "vector FMA loop), STREAM-triad bandwidth, hence the roofline; and whether\n"
               "the deps sysroot's OpenBLAS fits this VLEN. Off the board (riscv64 code\n"
               "under qemu) it says so and claims nothing about speed.\n"
               "The result is appended to the graph as a `probe` record when the store\n"
               "has a device identity (`kope init`).\n"
               "\n"
               "--platform ascend (or config platform.name): the CANN toolkit and NPU of an\n"
               "Ascend host: SoC version, AI/vector core counts, buffer sizes, what the\n"
               "toolkit can do; on a host without CANN it says exactly what is missing and\n"
               "exits 1. The Ascend driver has been run only against kope's fake toolkit,\n"
               "never on real Ascend hardware (docs/ASCEND.md).\n"
               "\n"
               "  --no-store   print only\n");
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-store") == 0) {
            store = 0;
        } else if (strcmp(argv[i], "--platform") == 0 && i + 1 < argc) {
            platform = argv[++i];
        } else if (strncmp(argv[i], "--platform=", 11) == 0) {
            platform = argv[i] + 11;
        } else {
            static const char *const valued[] = {"--platform", NULL};
            if (!cli_missing_value("probe", argv[i], valued))
                fprintf(stderr, "kope probe: unexpected argument '%s' (see `kope probe --help`)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    struct plat_settings s;
    struct platform *p = NULL;
    struct plat_probe r;
    char err[1024];
    const char *target = cli_platform_name(c, platform);
    if (!platform_find(target)) {
        fprintf(stderr, "kope probe: no platform '%s' (k3, ascend)\n", target);
        return CLI_USAGE;
    }
    cli_platform_settings_for(c, target, &s);
    int rc = platform_open(target, &s, &p, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope probe: %s\n", err);
        return CLI_FAIL;
    }
    rc = platform_probe(p, &r);
    if (rc) {
        if (r.target[0]) /* what was found before the failure */
            probe_print_other(&r);
        fprintf(stderr, "kope probe: %s\n", p->err[0] ? p->err : kope_strerror(rc));
        platform_close(p);
        return CLI_FAIL;
    }
    platform_close(p);
    probe_print(&r, target, &s);
    return store ? probe_store(c, &r, target) : CLI_OK;
}

/*
 * platform/k3/probe.c - `kope probe` for the K3 target: characterise the
 * machine for bring-up and the roofline (k3_probe, the probe op of
 * plat_k3_ops), and decide whether the deps sysroot's OpenBLAS may run here.
 *
 * The measuring is done by the embedded target program
 * platform/k3/embed/probe.c, built with the target's compiler and run like a
 * harness (sandboxed child, timeout). Natively it reports ISA (from
 * /proc/cpuinfo), VLEN, cores, sysfs caches, FP32 FMA peak per core and for
 * all cores, and STREAM-triad bandwidth. Under emulation it runs with tiny
 * loops only to prove it works: the result carries the emulated CPU's ISA
 * and VLEN and claims nothing else (see k3_probe.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/embed.h"
#include "platform/k3/k3.h"
#include "platform/k3/k3_probe.h"

#define PROBE_OUT_MAX 8192
#define PROBE_TIMEOUT_NATIVE_MS 120000
#define PROBE_TIMEOUT_EMULATED_MS 60000
#define ARGV_MAX 64

/* ----------------------------------------------------------- OpenBLAS --- */

int k3_openblas_min_vlen(const char *blas_dir, char *target, size_t cap)
{
    char path[1024], line[256];
    if (cap)
        target[0] = '\0';
    if (!blas_dir || !*blas_dir)
        return 0;
    snprintf(path, sizeof path, "%s/VERSIONS", blas_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            const char *t = strstr(line, "openblas TARGET=");
            if (t) {
                t += strlen("openblas TARGET=");
                snprintf(target, cap, "%.*s", (int)strcspn(t, " \n"), t);
                break;
            }
        }
        fclose(f);
    }
    if (!target[0]) { /* OpenBLAS names its core in openblas_config.h */
        snprintf(path, sizeof path, "%s/include/openblas_config.h", blas_dir);
        f = fopen(path, "r");
        if (f) {
            while (fgets(line, sizeof line, f)) {
                const char *t = strstr(line, "RISCV64_");
                if (t) {
                    snprintf(target, cap, "%.*s", (int)strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), t);
                    break;
                }
            }
            fclose(f);
        }
    }
    if (strstr(target, "ZVL256B"))
        return 256;
    if (strstr(target, "ZVL128B"))
        return 128;
    return 0;
}

int k3_openblas_fits(const char *blas_dir, int vlen_bits, char *why, size_t cap)
{
    char target[64];
    int need = k3_openblas_min_vlen(blas_dir, target, sizeof target);
    if (cap)
        why[0] = '\0';
    if (need > 0 && vlen_bits < need) {
        snprintf(why, cap, "refusing OpenBLAS built for %s: it needs VLEN >= %d, this machine has %d",
                 target, need, vlen_bits);
        return 0;
    }
    return 1;
}

/* -------------------------------------------------------------- parse --- */

int k3_probe_parse(const char *text, int emulated, struct plat_probe *out)
{
    int head = 0, done = 0;
    double fma1 = 0, fmaall = 0, tr1 = 0, trall = 0;
    out->emulated = emulated;
    const char *p = text;
    while (*p) {
        char line[512];
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (p[n] == '\n');
        char key[32];
        int off = 0;
        if (sscanf(line, "%31s %n", key, &off) < 1)
            continue;
        const char *val = line + off;
        if (strcmp(key, "kope-probe") == 0) {
            head = atoi(val) == 1;
        } else if (strcmp(key, "isa") == 0) {
            snprintf(out->isa, sizeof out->isa, "%s", val);
        } else if (strcmp(key, "vlen_bits") == 0) {
            out->vlen_bits = atoi(val);
        } else if (strcmp(key, "cores") == 0) {
            out->n_cores = atoi(val);
        } else if (strcmp(key, "cache") == 0) {
            int level;
            char type[32];
            unsigned long long bytes;
            if (sscanf(val, "%d %31s %llu", &level, type, &bytes) == 3) {
                if (level == 1 && strcmp(type, "Data") == 0)
                    out->l1d_bytes = bytes;
                else if (level == 2 && strcmp(type, "Instruction") != 0)
                    out->l2_bytes = bytes;
                else if (level == 3 && strcmp(type, "Instruction") != 0)
                    out->l3_bytes = bytes;
            }
        } else if (strcmp(key, "fma_gflops_core") == 0) {
            fma1 = atof(val);
        } else if (strcmp(key, "fma_gflops_all") == 0) {
            fmaall = atof(val);
        } else if (strcmp(key, "triad_gbs_core") == 0) {
            tr1 = atof(val);
        } else if (strcmp(key, "triad_gbs_all") == 0) {
            trall = atof(val);
        } else if (strcmp(key, "method") == 0) {
            snprintf(out->method, sizeof out->method, "%s", val);
        } else if (strcmp(key, "done") == 0) {
            done = 1;
        }
    }
    if (!head || !done || out->vlen_bits <= 0)
        return PLAT_ERR_PROTOCOL;
    if (emulated) {
        /* the emulated CPU defines ISA and VLEN; the rest would be the host's */
        out->n_cores = 0;
        out->l1d_bytes = out->l2_bytes = out->l3_bytes = 0;
        snprintf(out->note, sizeof out->note,
                 "emulated (qemu-user): ISA and VLEN are the emulated CPU's; no claim about "
                 "speed, cores or caches (the probe loops ran only as a health check)");
    } else {
        out->peak_gflops_core = fma1;
        out->peak_gflops_all = fmaall;
        out->triad_gbs = trall > tr1 ? trall : tr1;
        if (out->triad_gbs > 0)
            snprintf(out->note, sizeof out->note,
                     "roofline: ridge at %.2f flop/byte (all-core FMA peak / all-core triad); "
                     "single-core triad %.2f GB/s",
                     out->peak_gflops_all / out->triad_gbs, tr1);
    }
    return 0;
}

/* -------------------------------------------------------------- probe --- */

static int write_text(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

int k3_probe(struct platform *p, struct plat_probe *out)
{
    struct k3 *k = p->priv;
    char src[K3_PATH_MAX + 32], exe[K3_PATH_MAX + 32], buf[2 * K3_CMD_MAX + 64];
    char *argv[ARGV_MAX];
    int argc = 0;
    char *text = NULL;
    int rc = PLAT_ERR_INTERNAL;
    struct proc_result res;

    const struct embed_file *f = embed_find("platform/k3/embed/probe.c");
    if (!f) {
        snprintf(p->err, sizeof p->err, "embedded probe program missing");
        return p->rc = PLAT_ERR_HARNESS;
    }
    snprintf(src, sizeof src, "%s/probe.c", k->rt);
    snprintf(exe, sizeof exe, "%s/probe", k->rt);
    if (write_text(src, f->data, f->len)) {
        snprintf(p->err, sizeof p->err, "cannot write %.400s", src);
        return p->rc = PLAT_ERR_WORKDIR;
    }

    /* build: CC CFLAGS -pthread -static probe.c -o probe */
    char words[2 * K3_CMD_MAX + 2];
    snprintf(words, sizeof words, "%s %s", k->cc, k->cflags);
    if (proc_argv_split(words, buf, sizeof buf, argv, &argc, ARGV_MAX - 6)) {
        snprintf(p->err, sizeof p->err, "compiler command too long");
        return p->rc = PLAT_ERR_INTERNAL;
    }
    argv[argc++] = "-pthread";
    argv[argc++] = "-static";
    argv[argc++] = src;
    argv[argc++] = "-o";
    argv[argc++] = exe;
    argv[argc] = NULL;
    text = malloc(PROBE_OUT_MAX);
    if (!text) {
        snprintf(p->err, sizeof p->err, "out of memory");
        return p->rc = PLAT_ERR_NOMEM;
    }
    /* natively in a virtual machine the compiler runs emulated: more time */
    struct proc_spec build = {.argv = argv, .timeout_ms = k->vm ? 600000 : 60000, .out = text,
                              .out_len = PROBE_OUT_MAX};
    rc = proc_run(&build, &res, p->err, sizeof p->err);
    if (rc)
        goto out;
    if (!res.exited || res.exit_code != 0) {
        snprintf(p->err, sizeof p->err, "the probe program does not build with '%.150s': %.300s",
                 k->cc, text);
        rc = PLAT_ERR_HARNESS;
        goto out;
    }

    /* run: [RUNNER] probe [quick] */
    argc = 0;
    if (proc_argv_split(k->runner, buf, sizeof buf, argv, &argc, ARGV_MAX - 3)) {
        snprintf(p->err, sizeof p->err, "runner command too long");
        rc = PLAT_ERR_INTERNAL;
        goto out;
    }
    argv[argc++] = exe;
    if (k->emulated)
        argv[argc++] = "quick";
    argv[argc] = NULL;
    struct proc_spec run = {
        .argv = argv,
        .timeout_ms = k->emulated ? PROBE_TIMEOUT_EMULATED_MS : PROBE_TIMEOUT_NATIVE_MS,
        .mem_bytes = (uint64_t)4 << 30,
        .out = text, .out_len = PROBE_OUT_MAX,
    };
    rc = proc_run(&run, &res, p->err, sizeof p->err);
    if (rc)
        goto out;
    if (!res.exited || res.exit_code != 0) {
        snprintf(p->err, sizeof p->err, "the probe program failed (%s %d): %.300s",
                 res.timed_out ? "timeout after ms" : res.signaled ? "signal" : "exit status",
                 res.timed_out ? run.timeout_ms : res.signaled ? res.signal : res.exit_code, text);
        rc = PLAT_ERR_HARNESS;
        goto out;
    }
    rc = k3_probe_parse(text, k->emulated, out);
    if (rc) {
        snprintf(p->err, sizeof p->err, "probe output not understood: %.300s", text);
        goto out;
    }
    if (k->vm) /* natively, in a virtual machine: ISA and VLEN are the virtual CPU's */
        snprintf(out->note, sizeof out->note,
                 "virtual machine: not a speed (%.140s); ISA and VLEN are the virtual CPU's, "
                 "no claim about speed, cores or caches", k->vm_why);
    else if (k->native)
        snprintf(out->method + strlen(out->method), sizeof out->method - strlen(out->method), "%s%.100s",
                 out->method[0] ? "; " : "", k->vm_why);

    /* OpenBLAS from the deps sysroot: usable only if its VLEN fits */
    if (k->blas_dir[0]) {
        char why[PLAT_DETAIL_MAX];
        out->openblas_ok = k3_openblas_fits(k->blas_dir, out->vlen_bits, why, sizeof why);
        if (!out->openblas_ok) {
            size_t l = strlen(out->note);
            snprintf(out->note + l, sizeof out->note - l, "%s%s", l ? "; " : "", why);
        }
    }
    rc = 0;
out:
    free(text);
    if (rc)
        p->rc = rc;
    return rc;
}

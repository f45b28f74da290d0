/*
 * platform/k3/k3_icount.c - host side of the qemu instruction-count plugin:
 * find it, pass it to qemu, parse its report (see k3_icount.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "platform/proc.h"
#include "platform/judge/siphash.h"
#include "platform/k3/k3_icount.h"

#define REPORT_MAX (1024 * 1024) /* the plugin writes ~80 bytes per region */
#define ARGV_MAX 64

static int readable(const char *p)
{
    return p && *p && access(p, R_OK) == 0;
}

int k3_icount_plugin_find(const char *configured, char *buf, size_t cap)
{
    if (configured && *configured) {
        if (!readable(configured) || snprintf(buf, cap, "%s", configured) >= (int)cap)
            return PLAT_ERR_UNSUPPORTED;
        return 0;
    }
    const char *env = getenv("KOPE_ICOUNT_PLUGIN");
    if (env && *env) {
        if (!readable(env) || snprintf(buf, cap, "%s", env) >= (int)cap)
            return PLAT_ERR_UNSUPPORTED;
        return 0;
    }
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return PLAT_ERR_UNSUPPORTED;
    exe[n] = '\0';
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            return PLAT_ERR_UNSUPPORTED;
        *slash = '\0';
        char cand[1100];
        snprintf(cand, sizeof cand, "%s/%s", exe, K3_ICOUNT_PLUGIN_NAME);
        if (readable(cand)) {
            if (snprintf(buf, cap, "%s", cand) >= (int)cap)
                return PLAT_ERR_UNSUPPORTED;
            return 0;
        }
    }
    return PLAT_ERR_UNSUPPORTED;
}

int k3_icount_plugin_arg(const char *plugin, const char *out_path, int vlen_bits, int dlen_bits,
                         char *buf, size_t cap)
{
    if (strchr(plugin, ',') || strchr(out_path, ',') || dlen_bits < 0 ||
        (dlen_bits > 0 && dlen_bits > vlen_bits))
        return PLAT_ERR_INTERNAL;
    int w = dlen_bits > 0
                ? snprintf(buf, cap, "%s,out=%s,vlen=%d,dlen=%d", plugin, out_path, vlen_bits, dlen_bits)
                : snprintf(buf, cap, "%s,out=%s", plugin, out_path);
    return w < 0 || (size_t)w >= cap ? PLAT_ERR_INTERNAL : 0;
}

int k3_icount_block_auth(const char *block, size_t len, const unsigned char key[16], size_t *body_len)
{
    /* the last line: "mac " and 16 lower-case hex digits, then a newline */
    static const size_t mac_line = 4 + 16 + 1;
    if (len < mac_line + 1 || block[len - 1] != '\n' || block[len - mac_line - 1] != '\n' ||
        memcmp(block + len - mac_line, "mac ", 4) != 0)
        return PLAT_ERR_PROTOCOL;
    uint64_t tag = 0;
    for (size_t i = len - mac_line + 4; i < len - 1; i++) {
        char c = block[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return PLAT_ERR_PROTOCOL;
        tag = tag << 4 | (uint64_t)d;
    }
    size_t body = len - mac_line;
    /* compared in full whatever the first difference (no early exit) */
    uint64_t want = kope_siphash24(key, block, body);
    if ((tag ^ want) != 0)
        return PLAT_ERR_PROTOCOL;
    *body_len = body;
    return 0;
}

/* "insns N vector_ops N vector_mem N vsetvl N vcost N unmodelled N" at s;
 * returns chars used or -1 */
static int parse_counts(const char *s, struct k3_icount_counts *c)
{
    int used = 0;
    if (sscanf(s, " insns %" SCNu64 " vector_ops %" SCNu64 " vector_mem %" SCNu64
                  " vsetvl %" SCNu64 " vcost %" SCNu64 " unmodelled %" SCNu64 "%n",
               &c->insns, &c->vector_ops, &c->vector_mem, &c->vsetvl, &c->vcost, &c->unmodelled,
               &used) != 6)
        return -1;
    return used;
}

int k3_icount_parse(const char *text, size_t len, struct k3_icount *out)
{
    memset(out, 0, sizeof *out);
    int seen_head = 0, seen_total = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char line[512]; /* a region line with its hot block: 11 counts of up to 20 digits */
        /* after "total": the block lines of blocks=1, read by platform/k3/mca.c */
        if (seen_total && ((ll >= 7 && memcmp(p, "blocks ", 7) == 0) || (ll >= 4 && memcmp(p, "blk ", 4) == 0) ||
                           (ll >= 3 && memcmp(p, "bx ", 3) == 0))) {
            p += ll + (nl ? 1 : 0);
            continue;
        }
        if (ll >= sizeof line)
            return PLAT_ERR_PROTOCOL;
        memcpy(line, p, ll);
        line[ll] = '\0';
        p += ll + (nl ? 1 : 0);
        unsigned idx, nreg;
        uint64_t dropped;
        int used = 0;
        if (strcmp(line, "kope-icount 2") == 0) {
            seen_head = 1;
        } else if (sscanf(line, "region %u%n", &idx, &used) == 1) {
            struct k3_icount_counts c = {0};
            int u = seen_head ? parse_counts(line + used, &c) : -1;
            if (u < 0)
                return PLAT_ERR_PROTOCOL;
            /* optional: the hottest block (a plugin before it has none) */
            const char *rest = line + used + u;
            if (*rest && (sscanf(rest, " hot %" SCNu64 " insns %" SCNu64 " vector_ops %" SCNu64
                                       " vector_mem %" SCNu64 " vsetvl %" SCNu64,
                                 &c.hot_execs, &c.hot_insns, &c.hot_vector_ops, &c.hot_vector_mem,
                                 &c.hot_vsetvl) != 5 ||
                          c.hot_vector_ops + c.hot_vector_mem + c.hot_vsetvl > c.hot_insns))
                return PLAT_ERR_PROTOCOL;
            if (idx != (unsigned)out->n_regions + (unsigned)out->dropped)
                return PLAT_ERR_PROTOCOL;
            if (out->n_regions < K3_ICOUNT_MAX_REGIONS)
                out->region[out->n_regions++] = c;
            else
                out->dropped++;
        } else if (strncmp(line, "total", 5) == 0) {
            int u = parse_counts(line + 5, &out->total);
            if (!seen_head || u < 0 ||
                sscanf(line + 5 + u, " regions %u dropped %" SCNu64, &nreg, &dropped) != 2 ||
                nreg != (unsigned)out->n_regions + out->dropped)
                return PLAT_ERR_PROTOCOL;
            out->dropped += dropped;
            seen_total = 1;
        } else if (line[0]) {
            return PLAT_ERR_PROTOCOL;
        }
    }
    return seen_head && seen_total ? 0 : PLAT_ERR_PROTOCOL;
}

int k3_icount_read(const char *path, struct k3_icount *out)
{
    int rc = PLAT_ERR_IO;
    char *buf = malloc(REPORT_MAX);
    FILE *f = fopen(path, "rb");
    if (!buf || !f)
        goto out;
    size_t n = fread(buf, 1, REPORT_MAX, f);
    if (ferror(f))
        goto out;
    rc = n == REPORT_MAX ? PLAT_ERR_PROTOCOL : k3_icount_parse(buf, n, out);
out:
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

int k3_icount_run(const char *runner, const char *plugin, const char *const *argv,
                  const char *work_dir, int timeout_ms, int vlen_bits, int dlen_bits,
                  struct k3_icount *out, int *exit_status, char *err, size_t err_len)
{
    char words[2048], report[1024], plug[2200];
    char *args[ARGV_MAX + 1];
    int na = 0;
    memset(out, 0, sizeof *out);
    *exit_status = -1;
    if (snprintf(words, sizeof words, "%s", runner) >= (int)sizeof words ||
        snprintf(report, sizeof report, "%s/icount.XXXXXX", work_dir) >= (int)sizeof report ||
        k3_icount_plugin_arg(plugin, report, vlen_bits, dlen_bits, plug, sizeof plug)) {
        snprintf(err, err_len, "icount: runner, work dir or plugin path too long (or holds a comma)");
        return PLAT_ERR_INTERNAL;
    }
    for (char *s = strtok(words, " \t"); s && na < ARGV_MAX - 2; s = strtok(NULL, " \t"))
        args[na++] = s;
    size_t l0 = na ? strlen(args[0]) : 0;
    if (na == 0 || (l0 >= 7 && strcmp(args[0] + l0 - 7, "-static") == 0)) {
        snprintf(err, err_len, "icount: runner '%s' cannot load plugins (needs the dynamic qemu-riscv64)", runner);
        return PLAT_ERR_NO_RUNNER;
    }
    args[na++] = "-plugin";
    args[na++] = plug;
    for (int i = 0; argv[i]; i++) {
        if (na >= ARGV_MAX) {
            snprintf(err, err_len, "icount: too many arguments");
            return PLAT_ERR_INTERNAL;
        }
        args[na++] = (char *)argv[i];
    }
    args[na] = NULL;
    int fd = mkstemp(report); /* a fresh name, so concurrent runs never share a report */
    if (fd < 0) {
        snprintf(err, err_len, "icount: cannot create a report file in %s: %s", work_dir, strerror(errno));
        return PLAT_ERR_WORKDIR;
    }
    close(fd);
    if (k3_icount_plugin_arg(plugin, report, vlen_bits, dlen_bits, plug, sizeof plug)) { /* the real name */
        unlink(report);
        snprintf(err, err_len, "icount: plugin argument too long");
        return PLAT_ERR_INTERNAL;
    }

    /* the targets' one child runner: own process group killed at the
     * deadline, output capped and discarded, a fixed environment and no
     * address-space randomisation (PROC_REPEATABLE, see k3_icount.h) */
    char sink[256];
    struct proc_spec spec = {.argv = args,
                             .timeout_ms = timeout_ms > 0 ? timeout_ms : 60000,
                             .out = sink,
                             .out_len = sizeof sink,
                             .flags = PROC_REPEATABLE};
    struct proc_result res;
    if (proc_run(&spec, &res, err, err_len)) {
        unlink(report);
        return PLAT_ERR_SPAWN;
    }
    if (res.timed_out) {
        snprintf(err, err_len, "icount: run timed out after %d ms", spec.timeout_ms);
        unlink(report);
        return PLAT_ERR_HARNESS;
    }
    *exit_status = res.exited ? res.exit_code : 128 + (res.signaled ? res.signal : SIGKILL);
    if (*exit_status == 127) {
        snprintf(err, err_len, "icount: could not run '%s'", args[0]);
        unlink(report);
        return PLAT_ERR_SPAWN;
    }
    int rc = k3_icount_read(report, out);
    if (rc)
        snprintf(err, err_len, "icount: no usable report in %s (%s)", report,
                 rc == PLAT_ERR_IO ? "missing" : "malformed");
    unlink(report);
    return rc;
}

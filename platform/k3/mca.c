/*
 * platform/k3/mca.c - region cycles from llvm-mca (see mca.h).
 *
 * Reading order: the block lines of the plugin (parse), the cache (one
 * file per block and vtype), the tools (llvm-mc, then llvm-mca, both
 * sandboxed, a batch of blocks per run), the sum.
 *
 * Batches: every (block, vtype) of a region that misses the cache is
 * disassembled in one llvm-mc run (one block per input line; its
 * -show-encoding bytes place each instruction in its block) and analysed
 * in one llvm-mca run (one LLVM-MCA-BEGIN/END code region per block).
 * When a batch fails (an encoding llvm-mc does not know, an instruction the
 * scheduling model lacks), its blocks are redone one by one, so one bad
 * block costs only itself; a block that fails alone is cached as bad.
 */
#define _GNU_SOURCE 1 /* open_memstream */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "platform/proc.h"
#include "platform/k3/mca.h"

#define MCA_MAX_ID 8192          /* block ids the plugin gives (its MCA_MAX_TBS) */
#define MCA_MAX_BYTES 2048       /* bytes of one block (the plugin's cap) */
#define MCA_MAX_JOBS 16384       /* (block, vtype) records of one region */
#define MCA_BATCH_JOBS 128       /* blocks per tool run */
#define MCA_BATCH_BYTES (8u << 10) /* block bytes per tool run: bounds the tools' output */
#define MCA_OUT_MAX (4u << 20)   /* a tool's output kept */
#define MCA_TOOL_MS 120000
#define MCA_ITER 100

static const char k_mattr_dis[] = "+m,+a,+f,+d,+c,+v,+zba,+zbb,+zbs,+zfh,+zvfh";

/* one (block, vtype) of the region */
struct job {
    uint32_t id;
    unsigned vt;                 /* vsew << 3 | vlmul, 255 unknown */
    uint64_t count;              /* entries */
    const char *hex;             /* the block's bytes, in the plugin's text */
    uint32_t len;                /* bytes */
    int cached;                  /* result below known */
    int bad;                     /* the tools could not analyse it */
    int needs_vt;                /* a vector instruction before the block's first vsetvli */
    int reg_vsetvl;              /* a vector instruction after a register-form vsetvl */
    uint64_t cycles100;          /* llvm-mca's total cycles for MCA_ITER iterations */
    char *text;                  /* disassembly (malloc), while analysed */
    char badwhy[96];
};

void k3_mca_init(struct k3_mca *m)
{
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ set-up --- */

static int find_tool(const char *env, const char *name, char *out, size_t cap)
{
    const char *e = getenv(env);
    if (e && *e) {
        char *r = realpath(e, NULL);
        int ok = r && access(r, X_OK) == 0 && strlen(r) < cap;
        if (ok)
            memcpy(out, r, strlen(r) + 1);
        free(r);
        return ok ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        size_t n = strcspn(p, ":");
        char cand[1024];
        if (n > 0 && n < 900) {
            snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name);
            char *r = access(cand, X_OK) == 0 ? realpath(cand, NULL) : NULL;
            if (r && strlen(r) < cap) {
                memcpy(out, r, strlen(r) + 1);
                free(r);
                return 0;
            }
            free(r);
        }
        p += n + (p[n] == ':');
    }
    return -1;
}

int k3_mca_open(struct k3_mca *m, const char *model, const char *work_dir, const char *cache_dir,
                char *err, size_t err_len)
{
    k3_mca_init(m);
    if (!model || strncmp(model, "mca:", 4) != 0 || !model[4] || strlen(model + 4) >= K3_MCA_CPU_MAX ||
        strspn(model + 4, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(model + 4)) {
        snprintf(err, err_len, "model '%.60s': give vcost or mca:CPU (e.g. mca:spacemit-x60)",
                 model ? model : "");
        return PLAT_ERR_BAD_TASK;
    }
    snprintf(m->cpu, sizeof m->cpu, "%s", model + 4);
    if (find_tool("KOPE_LLVM_MCA", "llvm-mca-22", m->mca, sizeof m->mca) ||
        find_tool("KOPE_LLVM_MC", "llvm-mc-22", m->mc, sizeof m->mc)) {
        snprintf(err, err_len, "llvm-mca-22 and llvm-mc-22 not both found (Debian: apt-get install llvm-22)");
        return PLAT_ERR_UNSUPPORTED;
    }
    if (snprintf(m->work, sizeof m->work, "%s/mca", work_dir) >= (int)sizeof m->work ||
        snprintf(m->cache, sizeof m->cache, "%s", cache_dir && *cache_dir ? cache_dir : m->work) >=
            (int)sizeof m->cache) {
        snprintf(err, err_len, "mca: work or cache dir path too long");
        return PLAT_ERR_WORKDIR;
    }
    if ((mkdir(m->work, 0700) && errno != EEXIST) || (mkdir(m->cache, 0700) && errno != EEXIST)) {
        snprintf(err, err_len, "mca: cannot make %.200s or %.200s: %s", m->work, m->cache, strerror(errno));
        return PLAT_ERR_WORKDIR;
    }
    return 0;
}

/* ------------------------------------------------------------- cache --- */

static uint64_t fnv64(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static void cache_path(const struct k3_mca *m, const struct job *j, char *buf, size_t cap)
{
    uint64_t h = fnv64(j->hex, 2 * (size_t)j->len) ^ fnv64(m->cpu, strlen(m->cpu));
    snprintf(buf, cap, "%s/%s-%016" PRIx64 "-%02x", m->cache, m->cpu, h, j->vt);
}

/* File format: "kope-mca 1 CPU VT\n" "bytes HEX\n" then either
 * "cycles N needs_vt B reg_vsetvl B\n" or "bad WHY\n". */
static void cache_get(const struct k3_mca *m, struct job *j)
{
    char path[K3_MCA_PATH_MAX + 96];
    cache_path(m, j, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char *buf = malloc(2 * MCA_MAX_BYTES + 512);
    size_t n = buf ? fread(buf, 1, 2 * MCA_MAX_BYTES + 511, f) : 0;
    fclose(f);
    if (!buf)
        return;
    buf[n] = '\0';
    char head[96];
    snprintf(head, sizeof head, "kope-mca 1 %s %u\nbytes ", m->cpu, j->vt);
    size_t hl = strlen(head), bl = 2 * (size_t)j->len;
    /* the bytes compared in full: the name's hash only finds the file */
    if (n > hl + bl + 1 && memcmp(buf, head, hl) == 0 && memcmp(buf + hl, j->hex, bl) == 0 &&
        buf[hl + bl] == '\n') {
        const char *r = buf + hl + bl + 1;
        unsigned long long c;
        int nv, rv;
        if (sscanf(r, "cycles %llu needs_vt %d reg_vsetvl %d", &c, &nv, &rv) == 3) {
            j->cycles100 = c;
            j->needs_vt = nv != 0;
            j->reg_vsetvl = rv != 0;
            j->cached = 1;
        } else if (strncmp(r, "bad ", 4) == 0) {
            snprintf(j->badwhy, sizeof j->badwhy, "%.*s", (int)strcspn(r + 4, "\n"), r + 4);
            j->bad = 1;
            j->cached = 1;
        }
    }
    free(buf);
}

static void cache_put(const struct k3_mca *m, const struct job *j)
{
    char path[K3_MCA_PATH_MAX + 96], tmp[K3_MCA_PATH_MAX + 128];
    cache_path(m, j, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return; /* a cache that cannot be written only costs time */
    fprintf(f, "kope-mca 1 %s %u\nbytes %.*s\n", m->cpu, j->vt, (int)(2 * j->len), j->hex);
    if (j->bad)
        fprintf(f, "bad %s\n", j->badwhy);
    else
        fprintf(f, "cycles %" PRIu64 " needs_vt %d reg_vsetvl %d\n", j->cycles100, j->needs_vt,
                j->reg_vsetvl);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

/* ------------------------------------------------------------- tools --- */

/* Run a tool on input (written to m->work/NAME) in the sandbox; its output
 * (stdout and stderr, capped) into a malloc'd *out. 0 when it ran and
 * exited 0; 1 when it ran and failed; PLAT_ERR_* when it could not run. */
static int tool_run(struct k3_mca *m, char **argv, const char *name, const char *input, size_t in_len,
                    char **out, char *why, size_t why_len)
{
    char path[K3_MCA_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", m->work, name);
    if (proc_file_write(path, input, in_len) != 0) {
        snprintf(why, why_len, "mca: cannot write %.200s", path);
        return PLAT_ERR_WORKDIR;
    }
    *out = malloc(MCA_OUT_MAX);
    if (!*out)
        return PLAT_ERR_NOMEM;
    struct proc_spec r = {
        .argv = argv, .cwd = m->work, .timeout_ms = MCA_TOOL_MS, .cpu_s = MCA_TOOL_MS / 1000,
        .mem_bytes = (uint64_t)2 << 30, .fsize_bytes = (uint64_t)16 << 20,
        .output_cap = (uint64_t)MCA_OUT_MAX * 2, .out = *out, .out_len = MCA_OUT_MAX,
        /* the system directories (where Debian's llvm lives) read-only,
         * the work dir the only writable place */
        .flags = PROC_ISOLATE | PROC_VIEW, .rw_dir = m->work, .view = NULL,
    };
    struct proc_result res;
    double t0 = proc_now_ms();
    int rc = proc_run(&r, &res, why, why_len);
    m->tool_ms += proc_now_ms() - t0;
    m->tool_runs++;
    unlink(path);
    if (rc)
        return PLAT_ERR_SPAWN;
    if (res.exited && res.exit_code == PROC_VIEW_FAILED) {
        snprintf(why, why_len, "mca: the tool sandbox could not be built");
        return PLAT_ERR_SPAWN;
    }
    return res.exited && res.exit_code == 0 && !res.timed_out && !res.flooded && !res.truncated ? 0 : 1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One instruction line of llvm-mc -show-encoding: "\tMNEMONIC OPS # encoding: [0x..,...]".
 * Its text (trimmed) into ins, its byte count returned; 0 when not one. */
static size_t dis_line(const char *line, size_t ll, char *ins, size_t cap)
{
    static const char tag[] = "# encoding: [";
    const char *e = memmem(line, ll, tag, sizeof tag - 1);
    if (!e || line[0] != '\t')
        return 0;
    const char *b = line + 1, *t = e;
    while (t > b && (t[-1] == ' ' || t[-1] == '\t'))
        t--;
    size_t n = (size_t)(t - b) < cap - 1 ? (size_t)(t - b) : cap - 1;
    memcpy(ins, b, n);
    ins[n] = '\0';
    for (char *q = ins; *q; q++)
        if (*q == '\t')
            *q = ' ';
    size_t bytes = 0;
    for (const char *q = e + sizeof tag - 1; q < line + ll && *q != ']'; q++)
        bytes += *q == 'x';
    return bytes;
}

/* llvm-mca assumes a call takes 100 cycles ("call instructions are not
 * correctly modeled"), which would charge each block ending in one with
 * the callee's time: a call (jal/jalr writing a link register: ra, or any
 * rd but zero) is analysed as the jump it is to the core's front end (the
 * callee's blocks are counted on their own). */
static void uncall(char *ins, size_t cap)
{
    char tmp[200];
    const char *comma = strchr(ins, ',');
    if (strncmp(ins, "jal ", 4) == 0) {
        if (!comma)
            snprintf(tmp, sizeof tmp, "j %s", ins + 4);              /* jal OFF = jal ra, OFF */
        else if (strncmp(ins + 4, "zero,", 5) != 0)
            snprintf(tmp, sizeof tmp, "j %s", comma + 1 + (comma[1] == ' '));
        else
            return;
    } else if (strncmp(ins, "jalr ", 5) == 0) {
        if (!comma)
            snprintf(tmp, sizeof tmp, "jr %s", ins + 5);             /* jalr RS = jalr ra, 0(RS) */
        else if (strncmp(ins + 5, "zero,", 5) != 0)
            snprintf(tmp, sizeof tmp, "jalr zero, %s", comma + 1 + (comma[1] == ' '));
        else
            return;
    } else {
        return;
    }
    size_t n = strlen(tmp) < cap - 1 ? strlen(tmp) : cap - 1;
    memcpy(ins, tmp, n);
    ins[n] = '\0';
}

/* Disassemble jobs[0..n): each job's text, or 1 when the batch must be
 * redone one by one (any warning, or instructions not lining up with the
 * blocks' bytes). */
static int disassemble(struct k3_mca *m, struct job **jobs, int n, char *why, size_t why_len)
{
    char *in = NULL, *out = NULL;
    size_t in_len = 0;
    FILE *f = open_memstream(&in, &in_len);
    if (!f)
        return PLAT_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        for (uint32_t b = 0; b < jobs[i]->len; b++)
            fprintf(f, "%s0x%c%c", b ? " " : "", jobs[i]->hex[2 * b], jobs[i]->hex[2 * b + 1]);
        fputc('\n', f);
    }
    fclose(f);
    if (!in)
        return PLAT_ERR_NOMEM;
    char inpath[K3_MCA_PATH_MAX + 32];
    snprintf(inpath, sizeof inpath, "%s/dis.txt", m->work);
    char mattr[80];
    snprintf(mattr, sizeof mattr, "-mattr=%s", k_mattr_dis);
    char *argv[] = {m->mc, "--disassemble", "-triple=riscv64", mattr, "-show-encoding", inpath, NULL};
    int rc = tool_run(m, argv, "dis.txt", in, in_len, &out, why, why_len);
    free(in);
    if (rc < 0) {
        free(out);
        return rc;
    }
    if (rc == 0 && (strstr(out, "warning:") || strstr(out, "error:")))
        rc = 1;
    int cur = 0;
    size_t used = 0;
    FILE *t = NULL;
    char *tb = NULL;
    size_t tl = 0;
    for (const char *p = out; rc == 0 && *p;) {
        size_t ll = strcspn(p, "\n");
        char ins[160];
        size_t nb = dis_line(p, ll, ins, sizeof ins);
        p += ll + (p[ll] == '\n');
        if (!nb)
            continue;
        if (cur >= n) {
            rc = 1;
            break;
        }
        if (!t && !(t = open_memstream(&tb, &tl))) {
            rc = PLAT_ERR_NOMEM;
            break;
        }
        uncall(ins, sizeof ins);
        fprintf(t, "%s\n", ins);
        used += nb;
        if (used > jobs[cur]->len) {
            rc = 1;
        } else if (used == jobs[cur]->len) {
            fclose(t);
            t = NULL;
            jobs[cur++]->text = tb;
            tb = NULL;
            used = 0;
        }
    }
    if (t)
        fclose(t);
    free(tb);
    free(out);
    if (rc == 0 && cur != n)
        rc = 1;
    return rc;
}

/* Whole-register moves, loads and stores (vmv<n>r.v, vl<n>re<eew>.v,
 * vs<n>r.v: spills and reloads in a prologue) do not read the vtype: a
 * block may run them before any vsetvli, and vcost counts them as fixed. */
static int vtype_free(const char *ins)
{
    return (strncmp(ins, "vmv", 3) == 0 && ins[3] >= '1' && ins[3] <= '8' && strncmp(ins + 4, "r.v ", 4) == 0) ||
           (strncmp(ins, "vl", 2) == 0 && ins[2] >= '1' && ins[2] <= '8' && strncmp(ins + 3, "re", 2) == 0) ||
           (strncmp(ins, "vs", 2) == 0 && ins[2] >= '1' && ins[2] <= '8' && strncmp(ins + 3, "r.v ", 4) == 0);
}

/* What the block's vector instructions depend on (mca.h's rules). */
static void vt_flags(struct job *j)
{
    int configured = 0, reg = 0;
    for (const char *p = j->text; *p;) {
        size_t ll = strcspn(p, "\n");
        if (p[0] == 'v') {
            if (strncmp(p, "vsetvli ", 8) == 0 || strncmp(p, "vsetivli ", 9) == 0) {
                configured = 1;
                reg = 0;
            } else if (strncmp(p, "vsetvl ", 7) == 0) {
                reg = 1;
            } else if (!vtype_free(p)) {
                j->needs_vt |= !configured && !reg;
                j->reg_vsetvl |= reg;
            }
        }
        p += ll + (p[ll] == '\n');
    }
}

static const char *lmul_name(unsigned vt)
{
    static const char *const n[8] = {"M1", "M2", "M4", "M8", NULL, "MF8", "MF4", "MF2"};
    return vt == 255 || !n[vt & 7] ? "M1" : n[vt & 7];
}

static const char *sew_name(unsigned vt)
{
    static const char *const n[4] = {"E8", "E16", "E32", "E64"};
    return vt == 255 || ((vt >> 3) & 7) > 3 ? "E32" : n[(vt >> 3) & 7];
}

/* Analyse jobs[0..n) (texts made): cycles100 each, or 1 to redo one by one. */
static int analyse(struct k3_mca *m, struct job **jobs, int n, char *why, size_t why_len)
{
    char *in = NULL, *out = NULL;
    size_t in_len = 0;
    FILE *f = open_memstream(&in, &in_len);
    if (!f)
        return PLAT_ERR_NOMEM;
    /* an unknown entry vtype is analysed at e32, m1 (its vector
     * instructions, if any, make the region unmodelled: see the sum) */
    for (int i = 0; i < n; i++)
        fprintf(f, "# LLVM-MCA-BEGIN b%d\n# LLVM-MCA-RISCV-LMUL %s\n# LLVM-MCA-RISCV-SEW %s\n%s"
                   "# LLVM-MCA-END b%d\n",
                i, lmul_name(jobs[i]->vt), sew_name(jobs[i]->vt), jobs[i]->text, i);
    fclose(f);
    if (!in)
        return PLAT_ERR_NOMEM;
    char inpath[K3_MCA_PATH_MAX + 32], cpu[K3_MCA_CPU_MAX + 8], iters[32];
    snprintf(inpath, sizeof inpath, "%s/blocks.s", m->work);
    snprintf(cpu, sizeof cpu, "-mcpu=%s", m->cpu);
    snprintf(iters, sizeof iters, "-iterations=%d", MCA_ITER);
    char *argv[] = {m->mca, "-mtriple=riscv64", cpu, "-mattr=+v", iters, "-instruction-info=false",
                    "-resource-pressure=false", inpath, NULL};
    int rc = tool_run(m, argv, "blocks.s", in, in_len, &out, why, why_len);
    free(in);
    if (rc) {
        if (rc == 1 && n == 1) {
            /* the first error line names the cause */
            const char *e = strstr(out, "error: ");
            snprintf(jobs[0]->badwhy, sizeof jobs[0]->badwhy, "llvm-mca: %.80s",
                     e ? e + 7 : "failed");
            jobs[0]->badwhy[strcspn(jobs[0]->badwhy, "\n")] = '\0';
        }
        free(out);
        return rc;
    }
    int got = 0, region = -1;
    for (const char *p = out; *p;) {
        size_t ll = strcspn(p, "\n");
        int idx;
        unsigned long long c;
        if (sscanf(p, "[%*d] Code Region - b%d", &idx) == 1)
            region = idx;
        else if (sscanf(p, "Total Cycles: %llu", &c) == 1) {
            if (n == 1 && region < 0)
                region = 0; /* one region: llvm-mca may print no header */
            if (region < 0 || region >= n) {
                rc = 1;
                break;
            }
            jobs[region]->cycles100 = c;
            got++;
            region = -1;
        }
        p += ll + (p[ll] == '\n');
    }
    free(out);
    return rc == 0 && got == n ? 0 : 1;
}

/* Disassemble and analyse jobs[0..n); on a batch failure, one by one; a
 * job failing alone is bad. Results cached. */
static int run_batch(struct k3_mca *m, struct job **jobs, int n, char *why, size_t why_len)
{
    int rc = disassemble(m, jobs, n, why, why_len);
    if (rc == 0) {
        for (int i = 0; i < n; i++)
            vt_flags(jobs[i]);
        rc = analyse(m, jobs, n, why, why_len);
    }
    if (rc < 0)
        goto out;
    if (rc == 1 && n > 1) {
        for (int i = 0; i < n; i++) {
            free(jobs[i]->text);
            jobs[i]->text = NULL;
            jobs[i]->needs_vt = jobs[i]->reg_vsetvl = 0;
            if ((rc = run_batch(m, jobs + i, 1, why, why_len)) < 0)
                goto out;
        }
        rc = 0;
        goto out;
    }
    if (rc == 1) {
        jobs[0]->bad = 1;
        if (!jobs[0]->badwhy[0])
            snprintf(jobs[0]->badwhy, sizeof jobs[0]->badwhy, "llvm-mc: an encoding it does not know");
    }
    for (int i = 0; i < n; i++) {
        jobs[i]->cached = 1;
        cache_put(m, jobs[i]);
    }
    rc = 0;
out:
    for (int i = 0; i < n; i++) {
        free(jobs[i]->text);
        jobs[i]->text = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------- parse --- */

struct blk {
    const char *hex;
    uint32_t len;
};

/* The block lines after "blocks N lost L": blk[] by id, the region's jobs. */
static int parse(const char *body, size_t len, unsigned region, struct blk *blk, struct job *jobs,
                 int *n_jobs, char *why, size_t why_len)
{
    const char *p = body, *end = body + len;
    int seen = 0;
    *n_jobs = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char head[64];
        size_t hl = ll < sizeof head - 1 ? ll : sizeof head - 1;
        memcpy(head, p, hl);
        head[hl] = '\0';
        unsigned a, b, vt;
        unsigned long long c;
        int used = 0;
        if (!seen && sscanf(head, "blocks %u lost %llu", &a, &c) == 2) {
            seen = 1;
            if (c) {
                snprintf(why, why_len, "the plugin lost %llu block records (its caps)", c);
                return PLAT_ERR_UNSUPPORTED;
            }
        } else if (seen && sscanf(head, "blk %u %u %n", &a, &b, &used) == 2 && used > 0) {
            const char *hex = p + used;
            size_t hx = ll - (size_t)used;
            if (a >= MCA_MAX_ID || blk[a].hex || hx == 0 || hx % 2 || hx / 2 > MCA_MAX_BYTES)
                goto bad;
            for (size_t i = 0; i < hx; i++)
                if (hexval(hex[i]) < 0)
                    goto bad;
            blk[a].hex = hex;
            blk[a].len = (uint32_t)(hx / 2);
        } else if (seen && ll < sizeof head - 1 && sscanf(head, "bx %u %u %u %llu", &a, &b, &vt, &c) == 4) {
            if (b >= MCA_MAX_ID || !blk[b].hex || vt > 255)
                goto bad;
            if (a == region) {
                if (*n_jobs >= MCA_MAX_JOBS)
                    goto bad;
                jobs[(*n_jobs)++] = (struct job){.id = b, .vt = vt, .count = c, .hex = blk[b].hex,
                                                 .len = blk[b].len};
            }
        } else if (seen) {
            goto bad;
        }
        p += ll + (nl ? 1 : 0);
    }
    if (seen)
        return 0;
    snprintf(why, why_len, "the plugin wrote no block lines (blocks=1 not given)");
    return PLAT_ERR_PROTOCOL;
bad:
    snprintf(why, why_len, "the plugin's block lines do not parse");
    return PLAT_ERR_PROTOCOL;
}

/* --------------------------------------------------------------- sum --- */

int k3_mca_region_cycles(struct k3_mca *m, const char *body, size_t len, unsigned region,
                         uint64_t *cycles, char *why, size_t why_len)
{
    int rc = PLAT_ERR_NOMEM;
    *cycles = 0;
    why[0] = '\0';
    struct blk *blk = calloc(MCA_MAX_ID, sizeof *blk);
    struct job *jobs = malloc(MCA_MAX_JOBS * sizeof *jobs);
    struct job **batch = malloc(MCA_BATCH_JOBS * sizeof *batch);
    int n = 0;
    if (!blk || !jobs || !batch)
        goto out;
    if ((rc = parse(body, len, region, blk, jobs, &n, why, why_len)) != 0)
        goto out;
    int nb = 0;
    size_t bytes = 0;
    for (int i = 0; i <= n; i++) {
        if (i < n) {
            m->lookups++;
            cache_get(m, &jobs[i]);
            m->hits += (uint64_t)jobs[i].cached;
            if (jobs[i].cached)
                continue;
        }
        if (nb > 0 && (i == n || nb == MCA_BATCH_JOBS || bytes + jobs[i].len > MCA_BATCH_BYTES)) {
            if ((rc = run_batch(m, batch, nb, why, why_len)) != 0)
                goto out;
            nb = 0;
            bytes = 0;
        }
        if (i < n) {
            batch[nb++] = &jobs[i];
            bytes += jobs[i].len;
        }
    }
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        const struct job *j = &jobs[i];
        if (j->bad || j->reg_vsetvl || (j->needs_vt && j->vt == 255)) {
            snprintf(why, why_len, "block %u not modelled: %s", j->id,
                     j->bad ? j->badwhy
                     : j->reg_vsetvl ? "vector instructions after a register-form vsetvl"
                                     : "vector instructions entered under an unknown vtype");
            rc = PLAT_ERR_UNSUPPORTED;
            goto out;
        }
        sum += j->count * j->cycles100;
    }
    *cycles = (sum + MCA_ITER / 2) / MCA_ITER;
    rc = 0;
out:
    free(blk);
    free(jobs);
    free(batch);
    return rc;
}

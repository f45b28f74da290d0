/*
 * platform/k3/qemu/icount_plugin.c - QEMU TCG plugin (qemu-user 7.2) that
 * counts the guest instructions executed *inside the kernel call only*.
 *
 * Built for the host by cross/qemu-plugin.sh into libkope-icount.so; it is
 * not part of libkope (qemu-plugin.h comes from the qemu source package).
 * Loaded as:
 *   qemu-riscv64 -cpu ... -plugin libkope-icount.so,out=FILE[,begin=SYM][,end=SYM] PROG
 *
 * Regions: the harness calls two marker functions around each counted
 * kernel call (default names kope_icount_begin / kope_icount_end, both
 * noinline). Every instruction is counted by an inline add; an exec
 * callback on the marker functions' instructions snapshots the counters at
 * the first instruction of begin and takes the difference at the first
 * instruction of end. A region therefore holds the kernel call plus a fixed
 * handful of call/return instructions, the same every run. Markers are
 * found by symbol name (qemu_plugin_insn_symbol), so the guest binary must
 * keep its symbol table (do not strip it).
 *
 * Classes counted (RV64 encodings, 32-bit instructions):
 *   vector_ops  OP-V (0x57) except vsetvli/vsetivli/vsetvl (funct3 = 7)
 *   vector_mem  LOAD-FP/STORE-FP (0x07/0x27) with width 0, 5, 6, 7
 *               (vector unit-stride, strided, indexed, whole-register)
 *   vsetvl      the vector configuration instructions
 * Counts are exact and repeatable for a fixed binary and input: TCG
 * translation does not change which guest instructions execute, and
 * per-instruction inline adds are not affected by where translation blocks
 * end. (Multi-threaded guests would race on the counters; the harness
 * counts on one thread.)
 *
 * Output (written at exit to out=FILE, else through qemu_plugin_outs):
 *   kope-icount 1
 *   region IDX insns N vector_ops N vector_mem N vsetvl N
 *   ...
 *   total insns N vector_ops N vector_mem N vsetvl N regions N dropped N
 */
#define _GNU_SOURCE 1 /* open_memstream */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_REGIONS 4096
#define SYM_MAX 128

enum { C_INSN, C_VOP, C_VMEM, C_VCFG, C_COUNT };

struct counts {
    uint64_t c[C_COUNT];
};

static struct counts g_now;            /* whole run, updated inline */
static struct counts g_start;          /* snapshot at the open region's begin */
static struct counts g_region[MAX_REGIONS];
static unsigned g_n_regions, g_dropped;
static int g_open;                     /* inside begin..end */
static char g_out[1024];
static char g_begin[SYM_MAX] = "kope_icount_begin";
static char g_end[SYM_MAX] = "kope_icount_end";

static void on_begin(unsigned int vcpu, void *udata)
{
    (void)vcpu; (void)udata;
    if (g_open)
        return; /* later instructions of the same marker */
    g_start = g_now;
    g_open = 1;
}

static void on_end(unsigned int vcpu, void *udata)
{
    (void)vcpu; (void)udata;
    if (!g_open)
        return;
    g_open = 0;
    if (g_n_regions >= MAX_REGIONS) {
        g_dropped++;
        return;
    }
    struct counts *r = &g_region[g_n_regions++];
    for (int i = 0; i < C_COUNT; i++)
        r->c[i] = g_now.c[i] - g_start.c[i];
}

static int classify(const struct qemu_plugin_insn *in)
{
    if (qemu_plugin_insn_size(in) != 4)
        return -1; /* compressed: never vector */
    uint32_t w;
    memcpy(&w, qemu_plugin_insn_data(in), 4);
    uint32_t op = w & 0x7f, f3 = (w >> 12) & 7;
    if (op == 0x57)
        return f3 == 7 ? C_VCFG : C_VOP;
    if ((op == 0x07 || op == 0x27) && (f3 == 0 || f3 >= 5))
        return C_VMEM;
    return -1;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        const char *sym = qemu_plugin_insn_symbol(in);
        if (sym && strcmp(sym, g_begin) == 0)
            qemu_plugin_register_vcpu_insn_exec_cb(in, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
        else if (sym && strcmp(sym, g_end) == 0)
            qemu_plugin_register_vcpu_insn_exec_cb(in, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        qemu_plugin_register_vcpu_insn_exec_inline(in, QEMU_PLUGIN_INLINE_ADD_U64,
                                                   &g_now.c[C_INSN], 1);
        int k = classify(in);
        if (k >= 0)
            qemu_plugin_register_vcpu_insn_exec_inline(in, QEMU_PLUGIN_INLINE_ADD_U64,
                                                       &g_now.c[k], 1);
    }
}

static void print_counts(FILE *f, const char *head, const struct counts *c)
{
    fprintf(f, "%s insns %" PRIu64 " vector_ops %" PRIu64 " vector_mem %" PRIu64
               " vsetvl %" PRIu64,
            head, c->c[C_INSN], c->c[C_VOP], c->c[C_VMEM], c->c[C_VCFG]);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    (void)id; (void)p;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = g_out[0] ? fopen(g_out, "w") : open_memstream(&buf, &len);
    if (!f)
        return;
    fprintf(f, "kope-icount 1\n");
    for (unsigned i = 0; i < g_n_regions; i++) {
        char head[32];
        snprintf(head, sizeof head, "region %u", i);
        print_counts(f, head, &g_region[i]);
        fputc('\n', f);
    }
    print_counts(f, "total", &g_now);
    fprintf(f, " regions %u dropped %u\n", g_n_regions, g_dropped);
    fclose(f);
    if (buf) {
        qemu_plugin_outs(buf);
        free(buf);
    }
}

static int set_arg(char *dst, size_t cap, const char *val)
{
    size_t n = strlen(val);
    if (n == 0 || n >= cap)
        return -1;
    memcpy(dst, val, n + 1);
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        int bad;
        if (strncmp(argv[i], "out=", 4) == 0)
            bad = set_arg(g_out, sizeof g_out, argv[i] + 4);
        else if (strncmp(argv[i], "begin=", 6) == 0)
            bad = set_arg(g_begin, sizeof g_begin, argv[i] + 6);
        else if (strncmp(argv[i], "end=", 4) == 0)
            bad = set_arg(g_end, sizeof g_end, argv[i] + 4);
        else
            bad = -1;
        if (bad) {
            fprintf(stderr, "kope-icount: bad plugin argument '%s'\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}

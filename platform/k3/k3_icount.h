/*
 * platform/k3/k3_icount.h - dynamic instruction counts of a kernel call under
 * qemu-riscv64, through kope's TCG plugin (platform/k3/qemu/icount_plugin.c,
 * built by the Makefile into build/<arch>/libkope-icount.so).
 *
 * Under emulation, time is not speed; the instruction count of the kernel
 * call is the speed proxy, reported as `icount`, never as time.
 *
 * How a guest program marks what to count: it calls two noinline functions
 * named kope_icount_begin and kope_icount_end (any signature; the harness
 * uses void f(int region)) around each counted call, and is linked without
 * stripping its symbols. The plugin reports one region per begin..end pair,
 * in execution order. A region includes a fixed overhead of 3 instructions
 * (the markers' own return and call), identical every run; an empty
 * begin/end pair measures it.
 *
 * Repeatability: counts depend only on the guest binary and its input. To
 * keep the input fixed, k3_icount_run() starts qemu through proc_run with
 * PROC_REPEATABLE: a fixed environment (the guest inherits it, so its stack
 * layout is fixed) and address-space randomisation off. Only the dynamic qemu-riscv64
 * accepts -plugin, not qemu-riscv64-static.
 *
 * Two ways to use it:
 *   - k3_icount_run(): run a program under the runner with the plugin and
 *     parse the counts (wall-clock timeout, output discarded);
 *   - or, inside your own sandboxed runner: put "-plugin" and the word from
 *     k3_icount_plugin_arg() right after the qemu options, run, then
 *     k3_icount_read() the out file.
 */
#ifndef KOPE_K3_ICOUNT_H
#define KOPE_K3_ICOUNT_H

#include <stddef.h>
#include <stdint.h>

#define K3_ICOUNT_MAX_REGIONS 64 /* regions kept by the parser; more are counted in dropped */
#define K3_ICOUNT_PLUGIN_NAME "libkope-icount.so"

struct k3_icount_counts {
    uint64_t insns;       /* all guest instructions */
    uint64_t vector_ops;  /* OP-V arithmetic (not vsetvl) */
    uint64_t vector_mem;  /* vector loads and stores */
    uint64_t vsetvl;      /* vsetvli / vsetivli / vsetvl */
    uint64_t vcost;       /* the vector-cost model (docs/K3-KERNELS.md): scalar 1,
                             vector = register groups x class factor x VLEN/DLEN */
    uint64_t unmodelled;  /* vector instructions costed without a known vtype
                             (after a register-form vsetvl); > 0: vcost not claimed */
    /* The region's hottest translated block (most instructions executed):
     * how many times it ran, and its instructions per run. hot_execs 0:
     * none reported (an older plugin, or the total line). */
    uint64_t hot_execs, hot_insns, hot_vector_ops, hot_vector_mem, hot_vsetvl;
};

struct k3_icount {
    int n_regions;        /* regions in region[] */
    uint64_t dropped;     /* regions past K3_ICOUNT_MAX_REGIONS (here or in the plugin) */
    struct k3_icount_counts region[K3_ICOUNT_MAX_REGIONS];
    struct k3_icount_counts total; /* the whole run, start-up included */
};

/* Find the plugin: `configured` (e.g. plat_settings.icount_plugin) if not
 * NULL, else $KOPE_ICOUNT_PLUGIN, else K3_ICOUNT_PLUGIN_NAME next to the
 * running executable or one directory above it (build/<arch>/tests/ ->
 * build/<arch>/). Writes the path to buf. Returns 0, or
 * PLAT_ERR_UNSUPPORTED when there is no readable plugin. */
int k3_icount_plugin_find(const char *configured, char *buf, size_t cap);

/* The word that follows "-plugin" on qemu's command line:
 * "PLUGIN,out=OUT_PATH" and, when dlen_bits > 0, ",vlen=V,dlen=D" (the
 * vector-cost model's VLEN/DLEN; dlen_bits 0 = DLEN equals VLEN). 0, or
 * PLAT_ERR_INTERNAL if it does not fit, a path holds a comma (qemu's option
 * syntax cannot quote one) or dlen_bits > vlen_bits. */
int k3_icount_plugin_arg(const char *plugin, const char *out_path, int vlen_bits, int dlen_bits,
                         char *buf, size_t cap);

/* An authenticated block (the plugin's keyfd=N, a 16-byte key): block[len]
 * is one block from "kope-icount" through its last line, "mac HEX", the
 * SipHash-2-4 tag (platform/judge/siphash.h) of the bytes before that line.
 * 0 when the tag verifies under key (*body_len: the bytes before the mac
 * line, what k3_icount_parse takes), PLAT_ERR_PROTOCOL otherwise (no mac
 * line, a malformed one, a wrong tag). */
int k3_icount_block_auth(const char *block, size_t len, const unsigned char key[16], size_t *body_len);

/* Parse the plugin's report (text of len bytes). 0, or PLAT_ERR_PROTOCOL. */
int k3_icount_parse(const char *text, size_t len, struct k3_icount *out);
/* Read and parse the report file at path. 0, PLAT_ERR_IO or PLAT_ERR_PROTOCOL. */
int k3_icount_read(const char *path, struct k3_icount *out);

/* Run argv (argv[0] = the guest program, NULL-terminated) under `runner`
 * (the qemu command and its options as one string of words, e.g. "qemu-riscv64
 * -cpu rv64,v=true,vlen=256,..."), with the plugin (its report file is made
 * in work_dir and removed after), with a fixed environment and no ASLR, killed after
 * timeout_ms (0 = 60 s). vlen_bits/dlen_bits: the vector-cost model's
 * VLEN/DLEN, as for k3_icount_plugin_arg (0, 0 = DLEN equals VLEN). Guest
 * stdout/stderr are discarded.
 * *exit_status gets the guest's exit code (or 128+signal). Returns 0 when
 * the run finished and its report parsed, PLAT_ERR_SPAWN, PLAT_ERR_IO,
 * PLAT_ERR_PROTOCOL, or PLAT_ERR_HARNESS on a timeout; err gets a message. */
int k3_icount_run(const char *runner, const char *plugin, const char *const *argv,
                  const char *work_dir, int timeout_ms, int vlen_bits, int dlen_bits,
                  struct k3_icount *out, int *exit_status, char *err, size_t err_len);

#endif /* KOPE_K3_ICOUNT_H */

/*
 * platform/k3/mca.h - cycles of a counted region from LLVM's scheduling
 * model of a RISC-V core (llvm-mca), the opt-in `mca:<cpu>` model of
 * platform.k3.model (docs/COSTMODEL.md).
 *
 * Input: one authenticated block of the icount plugin run with blocks=1
 * (platform/k3/qemu/icount_plugin.c): the bytes of every translation block
 * a region entered, and per region (block, vtype at entry, entries). Each
 * (bytes, vtype) is disassembled (llvm-mc-22 --disassemble) and analysed
 * (llvm-mca-22 -mtriple=riscv64 -mcpu=CPU -mattr=+v -iterations=100) with
 * llvm-mca's RISC-V instruments fixing the vtype at entry (LMUL, SEW; the
 * block's own vsetvli instructions then change it as they do on the core;
 * an instrument costs nothing, where a vsetvli prefix would add its own
 * cycles to every block). The region's cycles are the sum over its blocks
 * of entries x (llvm-mca's total cycles / 100): a steady-state throughput
 * figure per block, with no memory model (every load hits) and no
 * branch cost beyond the scheduling model's.
 *
 * Both tools read text that derives from a hostile candidate: they run
 * through proc_run with PROC_ISOLATE | PROC_VIEW (the system directories
 * read-only, the mca work dir the only writable one), under time, CPU,
 * memory and output caps, like the compiler.
 *
 * Cache: one file per (bytes, vtype, cpu) under the cache dir, holding
 * the bytes themselves (a hit compares them: no hash collision, made or
 * chance, can give a block another's cycles) and the cycles, or "bad" for
 * a block the tools could not analyse (deterministic, so kept too).
 */
#ifndef KOPE_K3_MCA_H
#define KOPE_K3_MCA_H

#include <stddef.h>
#include <stdint.h>

#define K3_MCA_PATH_MAX 512
#define K3_MCA_CPU_MAX 48

struct k3_mca {
    char mca[K3_MCA_PATH_MAX];    /* llvm-mca, absolute */
    char mc[K3_MCA_PATH_MAX];     /* llvm-mc, absolute */
    char cpu[K3_MCA_CPU_MAX];     /* -mcpu, e.g. "spacemit-x60" */
    char work[K3_MCA_PATH_MAX];   /* the tools' one writable directory */
    char cache[K3_MCA_PATH_MAX];  /* cache files (may equal work) */
    /* what the analysis cost, over the object's life (bench/costmodel) */
    uint64_t lookups, hits;       /* (block, vtype) pairs asked, found in the cache */
    uint64_t tool_runs;           /* llvm-mc and llvm-mca processes started */
    double tool_ms;               /* their wall time */
};

/* Zero m (not usable until k3_mca_open). Cannot fail. */
void k3_mca_init(struct k3_mca *m);

/* Ready m for model text `model` ("mca:CPU"; CPU of [a-z0-9_-], e.g.
 * spacemit-x60): find llvm-mca-22 and llvm-mc-22 ($KOPE_LLVM_MCA and
 * $KOPE_LLVM_MC when set, else in PATH), make work_dir/mca (the tools' rw
 * dir) and cache_dir (NULL: the same) with mode 0700. 0; PLAT_ERR_BAD_TASK
 * for a malformed model text; PLAT_ERR_UNSUPPORTED when a tool is not
 * found (err says which; callers fall back to vcost); PLAT_ERR_WORKDIR. */
int k3_mca_open(struct k3_mca *m, const char *model, const char *work_dir, const char *cache_dir,
                char *err, size_t err_len);

/* Cycles of region `region` (the block's own region index) of the
 * authenticated plugin block body[len] (bytes before its mac line): *cycles
 * rounded to the nearest integer. 0; PLAT_ERR_PROTOCOL when the block
 * lines do not parse (or there are none: the plugin ran without
 * blocks=1); PLAT_ERR_UNSUPPORTED when the region is not modelled (why
 * says: blocks lost by the plugin, a block the tools could not analyse,
 * vector instructions entered under an unknown vtype); PLAT_ERR_SPAWN or
 * PLAT_ERR_WORKDIR when a tool could not be run. why gets a sentence. */
int k3_mca_region_cycles(struct k3_mca *m, const char *body, size_t len, unsigned region,
                         uint64_t *cycles, char *why, size_t why_len);

#endif /* KOPE_K3_MCA_H */

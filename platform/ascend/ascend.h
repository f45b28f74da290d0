/*
 * platform/ascend/ascend.h - internals shared by the files of the Ascend
 * target (Ascend C kernels built and run through Huawei's CANN toolkit).
 * Only the .c files of platform/ascend include this; core/ sees the target only through
 * struct platform_ops (plat_ascend_ops).
 *
 * Files, in reading order:
 *   ascend.c    the ops table: open, compile (a CMake kernel-launch project
 *               per candidate), verify, measure, probe
 *   discover.c  where CANN is (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, default
 *               install paths), what it ships, which NPU (npu-smi info), the
 *               SoC's platform_config .ini (core counts, buffer sizes)
 *   (platform/proc.c runs every child: timeout, output cap, process group)
 *   msprof.c    `msprof op` result files (OpBasicInfo.csv) -> per-launch times
 *   screen.c    the candidate source screen (what an Ascend C file may name)
 *   embed/      what the binary carries: the candidate ABI (kope_ascend.h), the
 *               host program (host.cpp) and the project template (CMakeLists.txt)
 *
 * Honesty invariant: nothing in this folder has been run on a real NPU yet.
 * It was written against CANN's documented interfaces and tested against the
 * fake toolkit in tests/fake-cann/, which marks itself with a file named
 * KOPE_FAKE_TOOLKIT at its root; on such a toolkit every result is labelled
 * emulated (times are CPU wall time of a C++ emulation, never NPU speed).
 */
#ifndef KOPE_ASCEND_H
#define KOPE_ASCEND_H

#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"

#ifndef ASC_PATH_MAX
#define ASC_PATH_MAX 512
#endif
#ifndef ASC_MISSING_MAX
#define ASC_MISSING_MAX 1024    /* "what is missing" text of discovery */
#endif

/* What discovery found. Every path is "" when absent. */
struct asc_toolkit {
    char home[ASC_PATH_MAX];        /* the CANN toolkit root (ASCEND_HOME_PATH) */
    char home_from[64];             /* "ASCEND_HOME_PATH", "setting", "default path", ... */
    char version[64];               /* from <arch>-linux/ascend_toolkit_install.info */
    char cmake_dir[ASC_PATH_MAX];   /* .../tikcpp/ascendc_kernel_cmake (has ascendc.cmake) */
    char compiler[ASC_PATH_MAX];    /* .../ccec_compiler/bin/bisheng */
    char msprof[ASC_PATH_MAX];      /* msprof, for `msprof op` */
    char platform_config[ASC_PATH_MAX]; /* the data/platform_config dir */
    char cmake[ASC_PATH_MAX];       /* host cmake (a prerequisite, not part of CANN) */
    int has_aclnn;                  /* include/aclnnop/ present (vendor operators) */
    int fake;                       /* KOPE_FAKE_TOOLKIT marker at the root */
    /* the NPU */
    char npu_smi[ASC_PATH_MAX];
    int npu_found;                  /* npu-smi listed a chip */
    char npu_name[64];              /* npu-smi "Name" column, e.g. "910B3" */
    char npu_health[32];            /* "OK", "Warning", ... */
    char smi_version[64];
    int n_npus;
    /* the SoC, from the setting or "Ascend" + npu_name */
    char soc[64];
    /* from <soc>.ini ([SoCInfo], [AICoreSpec]); 0 = unknown */
    int ai_cores, cube_cores, vector_cores;
    uint64_t ub_bytes, l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes, l2_bytes, hbm_bytes;
    int cube_freq_mhz;
    char missing[ASC_MISSING_MAX];  /* every missing piece, "; "-separated */
};

/* The target's state behind struct platform.priv. */
struct ascend {
    struct asc_toolkit tk;
    int device;                   /* aclrtSetDevice id */
    int aclnn_off;                /* the host program did not build against this
                                     toolkit's aclnn headers: no vendor baseline */
    char aclnn_diag[256];         /* that failure, in kope's words */
    char compile_isolation[160];  /* what isolated the last build step (proc_result.isolation) */
    int block_dim;                /* blocks launched per call */
    char work[200];
    int own_work;
    int work_lock;            /* its held .owner lock (platform/workdir.h), -1 = none */
    uint64_t next_id;
};

/* ----------------------------------------------------------- discover --- */

/* Fill tk: toolkit from `home_setting` (NULL = environment, then default
 * paths), npu-smi from `smi_setting` (NULL = PATH and the usual places), the
 * SoC from `soc_setting` (NULL = the NPU's). Never fails: what is absent is
 * listed in tk->missing. */
void asc_discover(struct asc_toolkit *tk, const char *home_setting, const char *smi_setting,
                  const char *soc_setting);

/* Parse `npu-smi info` output (the boxed table). Fills npu_name, npu_health,
 * smi_version, n_npus, npu_found. Returns the number of chips seen. */
int asc_npu_smi_parse(const char *text, struct asc_toolkit *tk);

/* Parse a platform_config <soc>.ini text into the core/buffer fields of tk.
 * Returns 0 if [SoCInfo] ai_core_cnt was found, -1 otherwise. */
int asc_soc_ini_parse(const char *text, struct asc_toolkit *tk);

/* ---------------------------------------------------------------- run --- */

/* Children (cmake, the host program, msprof, npu-smi) run through the one
 * runner, platform/proc.c: own process group killed at the timeout or the
 * output cap, stdin /dev/null, no core dumps, dies with kope. No RLIMIT_AS:
 * the ACL runtime maps device memory into the host process. */
#include "platform/proc.h"

/* ------------------------------------------------------------- msprof --- */

#ifndef ASC_MSPROF_MAX_SAMPLES
#define ASC_MSPROF_MAX_SAMPLES 256
#endif

/* Collect the "Task Duration(us)" of every row naming `kernel` (or every row,
 * when the file has no "Op Name" column) from every OpBasicInfo.csv under
 * dir, at most max samples, in nanoseconds. Returns the number found (0 = no
 * usable file), or -1 when dir cannot be read. */
int asc_msprof_collect(const char *dir, const char *kernel, double *ns, int max);

/* Parse one OpBasicInfo.csv text (len bytes) the same way; appends to
 * ns[*n..max). Returns the rows taken, -1 when the header has no Task
 * Duration column. */
int asc_msprof_csv_parse(const char *text, size_t len, const char *kernel, double *ns, int *n,
                         int max);

/* ------------------------------------------------------------- screen --- */

/* Screen an Ascend C candidate: 0 clean, 1 rejected (rule and detail set). */
int asc_screen_source(const char *src, size_t len, enum plat_screen_rule *rule, char *detail,
                      size_t detail_len);

#endif

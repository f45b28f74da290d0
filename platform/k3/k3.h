/*
 * platform/k3/k3.h - internals shared by the files of the K3 (RISC-V RVV)
 * target: its private state, the source screen
 * and the object check. Only the files of platform/k3 include this; core/ sees the
 * target only through struct platform_ops (plat_k3_ops).
 *
 * Files, in reading order:
 *   k3.c       the ops table: toolchain selection, compile, verify, measure
 *   (platform/proc.c runs every child: limits, timeout, output cap, and for
 *   harness runs namespaces, a minimal filesystem and seccomp)
 *   screen.c   the source screen, before and after the preprocessor
 *   objcheck.c the ELF checks: the candidate's object, the linked kernel
 *              program (objcheck.h: what other layers call)
 *   export.c   the judged object as a library member (renamed, nothing else changed)
 *   embed/     the riscv64 harness that checks and times a candidate
 */
#ifndef KOPE_K3_H
#define KOPE_K3_H

#include "platform/k3/mca.h"
#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"
#include "platform/toolview.h"
#include "platform/k3/objcheck.h"

#ifndef K3_PATH_MAX
#define K3_PATH_MAX 512
#endif
#ifndef K3_CMD_MAX
#define K3_CMD_MAX 512
#endif

/* The target's state behind struct platform.priv. */
#define K3_MAX_VLENS 4 /* VLENs a verify under qemu runs at: 128 to 1024 */

struct k3 {
    char cc[K3_CMD_MAX];      /* compiler command (words split on spaces) */
    char cflags[K3_CMD_MAX];  /* candidate flags */
    char runner[K3_CMD_MAX];  /* "" = run directly */
    char run_extra[96];       /* harness arguments k3_verify adds to its runs (the drawn
                                 sizes' seed, recheck=1); "" otherwise */
    uint64_t verify_seed;     /* platform.k3.verify_seed: fixed seed of the drawn sizes
                                 (reproducing a failure, tests); 0 = getrandom per verify */
    int vlens[K3_MAX_VLENS];  /* platform.k3.verify_vlens: the VLENs a verify under qemu
                                 must pass at (default 128, 256, 512, 1024), ascending */
    int n_vlens;
    char ldflags[64];         /* linker choice for harness programs ("-fuse-ld=lld" or "") */
    int native;               /* running on riscv64 */
    int emulated;             /* candidates run under an emulator, or natively in a
                                 virtual machine (vm): no time is a speed */
    int vm;                   /* native, but the machine is virtual (plat_vm_detect) */
    char vm_why[200];         /* the sign found, or what was seen when none */
    int is_clang;
    char work[200];           /* work dir; removed at close when own_work */
    int own_work;
    int work_lock;            /* its held .owner lock (platform/workdir.h), -1 = none */
    char rt[210];             /* work/rt: harness sources and objects */
    int rt_built;
    char blas_dir[256];       /* riscv64 sysroot with libopenblas.a, "" = none */
    char plugin[256];         /* qemu icount plugin .so, "" = none */
    int blas_zvl256b;         /* the OpenBLAS build needs VLEN >= 256 (refused below) */
    int sleef;                /* blas_dir's sysroot also holds libsleef.a (RVV vector math) */
    const char *blas_from;    /* where blas_dir was found (k3_peer_from_name, static) */
    const char *plugin_from;  /* where plugin was found (ditto) */
    uint64_t next_id;
    uint32_t base_built[2];   /* bit per op: baseline objects compiled (scalar, autovec) */
    char *inc_direct;         /* resolved paths of the allowed headers ('\n'-separated) */
    char *inc_closure;        /* every file those headers read */
    char isolation[160];      /* what isolated the last harness run (proc_result.isolation) */
    struct toolview *view;    /* what a sandboxed compile or link sees (found at open) */
    char tool_extra[K3_PATH_MAX]; /* one more path for the next run_tool's view, "" = none */
    char compile_isolation[160]; /* what isolated the last compiler run */
    int ld_no_deplibs;        /* the linker takes --no-dependent-libraries (lld) */
    struct k3_prog_ref *null_ref; /* the kernel program (kserve.o) linked with a null
                                   kernel: k3_screen_program's reference, NULL until the
                                   first candidate's link (one for every op) */
    uint32_t judge_built;     /* bit per op: rt/judge_<op> linked and checked (the judge
                                 program has no candidate code: linked once per op; a user
                                 op's, whose reference is the user's file, per candidate) */
    struct k3_names *hdr_names; /* identifiers of the allowed headers (k3_names_load), NULL
                                   until the first preprocessed screen */
    /* The cost model (platform.k3.model, docs/COSTMODEL.md): vcost always;
     * with mca:CPU and llvm-mca found, the plugin also records blocks and
     * each emulated outcome carries llvm-mca cycles beside vcost. */
    int mca_on;
    uint64_t fill_key;        /* this session's secret: each candidate's input seed is derived from it
                                 (never from the build id alone, which a kernel could guess) */
    unsigned long run_seq;    /* harness runs so far: each gets a fresh folder of its own */
    char model[200];          /* the phrase every emulated outcome's method names */
    struct k3_mca mca;
};

/* ------------------------------------------------------------- runner --- */

/* Every compiler and harness run goes through platform/proc.c (proc_run):
 * limits, output cap, timeout; harness runs also PROC_ISOLATE. */
#include "platform/proc.h"

/* -------------------------------------------------------------- screen --- */

/* Screen candidate source against the allow-lists (platform/allow.h, the
 * headers below): returns 0 if clean, 1 if rejected (rule and a detail
 * naming the offending token and line filled in). */
int k3_screen_source(const char *src, size_t len, enum plat_screen_rule *rule,
                     char *detail, size_t detail_len);

/* The identifiers the allowed headers use, sorted (k3_names_load): a
 * candidate's macro must not have one of these names, or it could expand
 * inside a header. */
struct k3_names {
    char *buf;       /* the words, '\0'-separated */
    const char **v;  /* sorted, unique, into buf */
    size_t n;
};
#ifndef K3_NAMES_FILE_MAX
#define K3_NAMES_FILE_MAX (4u << 20) /* one header read for its names */
#endif
#ifndef K3_NAMES_MAX
#define K3_NAMES_MAX (16u << 20)     /* all their words */
#endif
/* Read every file of paths ('\n'-separated) and collect its identifiers
 * (comments and literals skipped) into nm. 0, or -1 when a file is
 * unreadable, over K3_NAMES_FILE_MAX, or memory runs out (nm left empty).
 * Free with k3_names_free (NULL or empty is fine). */
int k3_names_load(const char *paths, struct k3_names *nm);
void k3_names_free(struct k3_names *nm);
int k3_names_has(const struct k3_names *nm, const char *w);

/* Screen the compiler's `-E -dD` output of the candidate (pp, len bytes;
 * cand_path: the candidate's path exactly as the compiler was given it). The
 * lines the line markers attribute to cand_path get the source screen's
 * word, attribute and pragma rules after macro expansion; every #define and
 * #undef there must name neither a reserved identifier nor one of hdr's.
 * Lines of other files (the allowed headers, kope's prototype header) are
 * not the candidate's and are skipped. 0 clean, 1 rejected (rule, detail
 * with the source line); output naming no line of cand_path is rejected. */
int k3_screen_preprocessed(const char *pp, size_t len, const char *cand_path,
                           const struct k3_names *hdr, enum plat_screen_rule *rule, char *detail,
                           size_t dl);

/* The headers a candidate may include: the one list. FIRST is kope's own
 * header (a candidate writes #include "kernel_abi.h"), X each system one.
 * Every form below is made from it, so none can drift: screen.c's array,
 * the space-separated text its messages quote, and the prompt contract's
 * list (platform/k3/prompt.c). kernel_abi.h's comment,
 * core/knowledge/x100-k3.md and docs/K3-HARNESS.md are prose: tests/test_docs.c
 * checks them (and the prompt `kope context` prints) against the array. */
#define K3_ALLOWED_HEADERS(FIRST, X) \
    FIRST("kernel_abi.h") X("stddef.h") X("stdint.h") X("math.h") X("float.h") X("string.h") \
    X("riscv_vector.h") X("stdbool.h") X("limits.h")
#define K3_HEADER_ELEM_(h) h,
#define K3_HEADER_SELF_(h) h
#define K3_HEADER_TEXT_(h) " " h
#define K3_HEADER_QUOTED_(h) "\"" h "\""
#define K3_HEADER_ANGLED_(h) " <" h ">"
#define K3_N_ALLOWED_HEADERS \
    ((int)(sizeof((const char *[]){K3_ALLOWED_HEADERS(K3_HEADER_ELEM_, K3_HEADER_ELEM_)}) / sizeof(const char *)))
/* one string literal: "kernel_abi.h stddef.h ... limits.h" */
#define K3_ALLOWED_HEADERS_TEXT K3_ALLOWED_HEADERS(K3_HEADER_SELF_, K3_HEADER_TEXT_)
/* as a prompt lists them: "\"kernel_abi.h\" <stddef.h> ... <limits.h>" */
#define K3_ALLOWED_HEADERS_PROMPT K3_ALLOWED_HEADERS(K3_HEADER_QUOTED_, K3_HEADER_ANGLED_)
extern const char *const k3_allowed_headers[];

/* From compiler output with -H (one line per header opened, depth as
 * leading dots), collect depth-1 paths into direct and deeper ones into all,
 * each '\n'-terminated. Returns 0, or -1 when a buffer was too small. */
int k3_includes_collect(const char *out, char *direct, size_t direct_len, char *all, size_t all_len);

/* The compiler-checked include rule: out is the compiler's output with -H,
 * deps its -MD file (NULL if none). Every header the candidate includes
 * directly must be in allowed_direct, every other file read in closure;
 * own lists files of kope's (the candidate, its prototype header). Lists are
 * '\n'-separated paths. 0 clean, 1 rejected (rule, detail naming the file's
 * base name only). */
int k3_screen_includes(const char *out, const char *deps, const char *allowed_direct,
                       const char *closure, const char *own, enum plat_screen_rule *rule,
                       char *detail, size_t dl);

/* Copy into out (capped, NUL-terminated) only the compiler's diagnostics
 * about cand_path, shortened to "cand.c": -H lines, "In file included
 * from", and every diagnostic located in another file (with its quoted
 * source lines) are dropped. Returns the bytes kept. */
size_t k3_diag_clean(const char *in, const char *cand_path, char *out, size_t out_len);

/* Is the object at shipped the judged object at judged with its one global
 * definition `from` renamed to `to`, and nothing else changed (every
 * section's header and bytes but the symbol and string tables', every
 * symbol but that one name), with no init, fini or preinit array and no
 * .init/.fini/.ctors/.dtors section? When it is and copy_to is not NULL,
 * the compared bytes are written there. 0 yes, 1 no (why says what
 * differs), PLAT_ERR_IO / PLAT_ERR_NOMEM (why says which file).
 * platform/k3/export.c. */
int k3_object_compare(const char *judged, const char *shipped, const char *from, const char *to,
                      const char *copy_to, char *why, size_t cap);

/* ---------------------------------------------------------------- probe --- */

/* `kope probe` for this target (platform/k3/probe.c, issue 3's other half).
 * Declarations of its helpers: k3_probe.h. */
int k3_probe(struct platform *p, struct plat_probe *out);

/* docs/K3-KERNELS.md's table of the vector-cost model, written into buf
 * (capped) from platform/k3/qemu/vcost_model.h, the table the plugin
 * charges by: class, factor, instructions, one row per charged class.
 * Returns the length it needs (>= cap: cut). tests/test_docs.c compares it
 * with the doc. */
size_t k3_vcost_table_md(char *buf, size_t cap);

#endif

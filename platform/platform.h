/*
 * platform/platform.h - the target interface: how core/ compiles, verifies,
 * measures and probes candidate kernels without knowing which machine does it.
 *
 * A target is a table of function pointers (struct platform_ops), one per
 * folder under platform/ (k3/, ascend/), chosen in one place: platform_open().
 * Results are plain structs with fixed-size, capped buffers, so core/ can copy
 * them into records without asking who owns what.
 *
 * Two kinds of failure, never mixed:
 *   - the *candidate* failed (does not compile, crashes, wrong result, ...):
 *     the op returns 0 and the result struct says why (enum plat_fail). This is
 *     an outcome worth recording, and kope keeps running.
 *   - the *platform* failed (no compiler, cannot spawn, harness broken): the op
 *     returns a negative PLAT_ERR_* code (band -300..-399, see core/err.h) and
 *     p->err holds a message. Nothing is learned about the candidate.
 *
 * Layering: platform code never includes core/, store/ or net/ headers. core/
 * reads the config file and passes plain settings in (struct plat_settings);
 * core/ fills struct plat_task from a task file (core/task/task.c).
 *
 * Invariant of every result: under emulation (qemu-user) `emulated` is set and
 * times are not speeds. Speed is claimed only as a ratio against a baseline
 * measured in the same run, and under emulation only through instruction
 * counts (icount), never time.
 */
#ifndef KOPE_PLATFORM_H
#define KOPE_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Compile-time limits (every buffer filled from outside has a cap).
 * ------------------------------------------------------------------------ */
#ifndef PLAT_NAME_MAX
#define PLAT_NAME_MAX 64        /* task and baseline names, with NUL */
#endif
#ifndef PLAT_DIAG_MAX
#define PLAT_DIAG_MAX 4096      /* compiler diagnostics kept per candidate */
#endif
#define PLAT_NOT_MEASURED "not measured: "
#define PLAT_TO_MEASURE "; to measure: "
#ifndef PLAT_METHOD_MAX
/* plat_measure.method: kope's isolation phrase (< 640 bytes) and the judge's
 * method lines (PLAT_REPORT_METHOD_MAX, platform/judge/report.h) fit whole */
#define PLAT_METHOD_MAX 2048
#endif
#ifndef PLAT_DETAIL_MAX
#define PLAT_DETAIL_MAX 256     /* one-line human explanation of a failure */
#endif
#ifndef PLAT_MAX_CASES
#define PLAT_MAX_CASES 24       /* verification cases reported per candidate */
#endif
#ifndef PLAT_MAX_BASELINES
#define PLAT_MAX_BASELINES 5
#endif
#ifndef PLAT_SRC_MAX
#define PLAT_SRC_MAX (256 * 1024) /* candidate source bytes accepted */
#endif
#if PLAT_DIAG_MAX < 256
#error "PLAT_DIAG_MAX must keep at least one useful compiler message (256 bytes)"
#endif

/* ------------------------------------------------------------------------
 * Error band -300..-399: the platform itself failed (see core/err.h).
 * ------------------------------------------------------------------------ */
enum plat_err {
    PLAT_ERR_INTERNAL = -300,     /* a bug in platform code */
    PLAT_ERR_NOMEM = -301,
    PLAT_ERR_NO_TARGET = -302,    /* no platform of that name */
    PLAT_ERR_NO_TOOLCHAIN = -303, /* no usable compiler (or it lacks RVV intrinsics) */
    PLAT_ERR_NO_RUNNER = -304,    /* cross target but no emulator to run it */
    PLAT_ERR_WORKDIR = -305,      /* temp/work directory cannot be made or written */
    PLAT_ERR_SPAWN = -306,        /* fork/exec/pipe failed */
    PLAT_ERR_HARNESS = -307,      /* the harness itself does not build: kope's bug or a broken toolchain */
    PLAT_ERR_PROTOCOL = -308,     /* harness output not understood */
    PLAT_ERR_UNSUPPORTED = -309,  /* optional operation this target does not have */
    PLAT_ERR_BAD_TASK = -310,     /* task fields invalid for this target */
    PLAT_ERR_IO = -311,           /* reading or writing a file failed */
    PLAT_ERR_NOT_BUILT = -312,    /* verify/measure on a build that did not compile */
};

/* Text for a PLAT_ERR_* code; NULL if code is outside the band. Static. */
const char *platform_strerror(int code);

/* ------------------------------------------------------------------------
 * Ops and families (the KOPE paper's K3 case universe). Order is stable:
 * values are never renumbered, new ops go before PLAT_OP_COUNT.
 * ------------------------------------------------------------------------ */
enum plat_family {
    PLAT_FAM_ELEMENTWISE = 0, /* out[i] = f(x[i], y[i]); shape {n}            */
    PLAT_FAM_ACTIVATION,      /* pointwise {n} or row-wise {rows, cols}       */
    PLAT_FAM_REDUCTION,       /* one result per row; shape {rows, cols}       */
    PLAT_FAM_MATMUL,          /* {m, n, k, batch?}; gemv {m, k}               */
    PLAT_FAM_COUNT
};

enum plat_op {
    PLAT_OP_ADD = 0, PLAT_OP_MUL, PLAT_OP_AXPY, PLAT_OP_SCALE, PLAT_OP_CLAMP,
    PLAT_OP_RELU, PLAT_OP_GELU_TANH, PLAT_OP_GELU_ERF, PLAT_OP_SILU,
    PLAT_OP_SIGMOID, PLAT_OP_TANH, PLAT_OP_EXP,
    PLAT_OP_SOFTMAX, PLAT_OP_LAYERNORM, PLAT_OP_RMSNORM,
    PLAT_OP_SUM, PLAT_OP_MAX, PLAT_OP_MEAN, PLAT_OP_L2NORM, PLAT_OP_ARGMAX,
    PLAT_OP_GEMM, PLAT_OP_GEMM_NT, PLAT_OP_GEMV,
    PLAT_OP_COUNT,
    /* A user's own op (plat_task.user says which): outside the catalogue, so
     * never below PLAT_OP_COUNT and never in a table indexed by op. */
    PLAT_OP_USER = 100
};

/* "add", "gelu_tanh", ...; NULL for an out-of-range value. */
const char *plat_op_name(enum plat_op op);
/* The op named s, or -1 if there is none. */
int plat_op_parse(const char *s);
enum plat_family plat_op_family(enum plat_op op);
/* "elementwise", "activation", "reduction", "matmul". */
const char *plat_family_name(enum plat_family f);
/* True for the row-wise activations (softmax, layernorm, rmsnorm), whose
 * shape is {rows, cols}; the other activations are pointwise with {n}. */
int plat_op_is_rowwise(enum plat_op op);
/* Per-op default tolerance (f32 kernel against a double reference). */
void plat_op_default_tol(enum plat_op op, double *rtol, double *atol);

/* ------------------------------------------------------------------------
 * A user's own op (docs/KERNELS.md "A user's own op"): a suite task that names
 * an op outside the catalogue brings its reference, one C file implementing
 * the family's signature (platform/kernel_abi.h) in plain C. Operands by
 * family: elementwise gets x and y (never NULL), activation gets x (gamma and
 * beta NULL; row-wise when the shape is {rows, cols}, pointwise for {n}),
 * reduction writes one float per row, matmul is gemm's layout. The scalars
 * are alpha (random in [-2, 2]), lo -1, hi 1.5, eps 1e-5, as for the
 * catalogue's ops. A target verifies candidates against the reference built
 * as plain f32 scalar code (vectorizer off) and measures that build and its
 * -O3 auto-vectorized build as the scalar and autovec baselines.
 * ------------------------------------------------------------------------ */
struct plat_user_op {
    char name[PLAT_NAME_MAX]; /* "swiglu": [a-z][a-z0-9_]*, not a catalogue op */
    char file[256];           /* the reference as the suite names it ("" = inline) */
    const char *ref;          /* its C source, ref_len bytes (owned by whoever filled it) */
    size_t ref_len;
    int rowwise;              /* activation: 1 row-wise {rows, cols}, 0 pointwise {n} */
    double in_lo, in_hi;      /* inputs drawn from [in_lo, in_hi]; both 0 = the default [-4, 4] */
};

/* ------------------------------------------------------------------------
 * A task: what one kernel must compute. core/ fills it from a task file.
 * Dimensions unused by the op are 0. For pointwise ops (elementwise and
 * pointwise activations) only n is set; row-wise ops and reductions set rows
 * and cols; gemm/gemm_nt set m, n, k and batch (>= 1); gemv sets m, k
 * (n = 1, batch = 1).
 * ------------------------------------------------------------------------ */
struct plat_task {
    char name[PLAT_NAME_MAX];
    enum plat_op op;
    enum plat_family family;
    uint64_t n, rows, cols, m, k, batch;
    double rtol, atol;        /* pass if |got-ref| <= atol + rtol*|ref| everywhere */
    const struct plat_user_op *user; /* op == PLAT_OP_USER: which op (borrowed); else NULL */
};

/* The task's op name: the user op's own name, else plat_op_name(op). Never
 * NULL ("?" for a broken task). */
const char *plat_task_op_name(const struct plat_task *t);
/* Row-wise shape {rows, cols} (row-wise activations, user ones included). */
int plat_task_rowwise(const struct plat_task *t);

/* ------------------------------------------------------------------------
 * Settings: plain values core/ reads from the config file (platform.k3.*).
 * NULL strings and 0 numbers mean "the target's default".
 * ------------------------------------------------------------------------ */
enum plat_set_flags {
    PLAT_SET_NO_BASELINES = 1 << 0, /* measure the candidate only (faster)   */
    PLAT_SET_FLUSH_CACHE = 1 << 1,  /* flush caches between timed repeats    */
    PLAT_SET_NO_PIN = 1 << 2,       /* do not pin the timed process to a core */
    PLAT_SET_AA = 1 << 3,           /* time the candidate twice (A/A) under
                                       emulation too (natively always): tests */
    PLAT_SET_FULL_SHAPE = 1 << 4,   /* verify at the task's whole shape even under
                                       emulation, where a large task is otherwise
                                       checked cut down ("reduced_shape"): slow */
    /* Tests only: skip the source screen and object check, so the runtime
     * containment behind them can be shown to work on its own. */
    PLAT_SET_UNSAFE_NO_SCREEN = 1 << 8,
    /* Tests and bench/harness only: run the harness, and the compiler and
     * linker, without the namespaces, minimal root or toolchain view and
     * seccomp of platform/proc.c (the judge/kernel process split stays), to
     * show what the isolation costs and that each hostile test needs it.
     * Never set from a config file. */
    PLAT_SET_UNSAFE_NO_ISOLATION = 1 << 9,
    /* Tests only: skip the two source screens (the text and the
     * preprocessed tokens) but keep the compiler's include check and the
     * object check, so the object check can be shown to stop on its own what
     * macro token pasting gets past a source screen. */
    PLAT_SET_UNSAFE_NO_SOURCE_SCREEN = 1 << 10,
    /* Tests only: skip the source screens and the object check of cand.o
     * but keep the check of the linked program against the null-kernel link
     * (k3_screen_program), so that check can be shown to stop on its own a
     * start-up hook the object check would have refused first. */
    PLAT_SET_UNSAFE_NO_OBJECT_SCREEN = 1 << 11,
};

struct plat_settings {
    const char *cc;            /* compiler command, may hold words ("clang-19 --target=..."); NULL = detect */
    const char *cflags;        /* candidate flags; NULL = "-O3" + the target's -march */
    const char *runner;        /* command prefix to run target code; NULL = detect, "" = run directly */
    const char *work_dir;      /* a fresh build dir is made inside it per open (removed at close);
                                  NULL = $TMPDIR or /tmp */
    const char *deps_sysroot;  /* riscv64 static deps (OpenBLAS); NULL = look in build/deps */
    const char *icount_plugin; /* qemu TCG plugin .so counting kernel instructions;
                                  NULL = look next to the binary, "" = none */
    int timeout_ms;            /* wall clock per harness run; 0 = default */
    int compile_timeout_ms;    /* wall clock per compiler run; 0 = default */
    uint64_t mem_limit_bytes;  /* address-space cap of the harness; 0 = default */
    uint64_t output_cap_bytes; /* stdout+stderr kept from a run; more is OUTPUT_FLOOD */
    int min_repeat_ms;         /* timing: repeat until this much total time; 0 = default */
    int max_repeats;           /* timing: upper bound on repeats; 0 = default */
    int dlen_bits;             /* k3 under emulation: the vector-cost model's datapath
                                  width (a vector instruction costs VLEN/DLEN passes per
                                  register group); 0 = DLEN equals VLEN */
    unsigned flags;            /* enum plat_set_flags */
    /* The target's own settings (the config's platform.<target>.<key>, e.g.
     * ascend's home, soc, npu_smi, device): a target reads the keys only it
     * has through plat_setting_str/num, during open only, so they need no
     * field here. own is the caller's source (core: the config); NULL
     * functions = none given. */
    const void *own;
    const char *(*own_str)(const void *own, const char *target, const char *key);
    double (*own_num)(const void *own, const char *target, const char *key, double dflt);
};

/* Zero everything: every field at its default. Cannot fail. */
void plat_settings_init(struct plat_settings *s);

struct platform;
/* The open target's own setting key (plat_settings.own_str with the
 * target's name), or NULL when not given. During open only. */
const char *plat_setting_str(const struct platform *p, const char *key);
/* The same for a number; dflt when not given. */
double plat_setting_num(const struct platform *p, const char *key, double dflt);

/* Nominal work of one call of t: flops (2*m*n*k*batch for matmul; one per
 * element per arithmetic step for the rest, transcendentals counted as one)
 * and bytes moved (every input read once, the output written once). */
void plat_task_work(const struct plat_task *t, double *flops, double *bytes);

/* ------------------------------------------------------------------------
 * Why a candidate failed. Each bad-candidate class has its own value.
 * ------------------------------------------------------------------------ */
enum plat_fail {
    PLAT_FAIL_NONE = 0,
    PLAT_FAIL_SCREEN_REJECTED,   /* source screen or object check said no; see screen_rule */
    PLAT_FAIL_COMPILE_ERROR,     /* compiler or linker rejected it; see diag */
    PLAT_FAIL_CRASH,             /* killed by a signal; see signal */
    PLAT_FAIL_TIMEOUT,           /* wall-clock or CPU limit reached */
    PLAT_FAIL_WRONG_RESULT,      /* outside tolerance on some case */
    PLAT_FAIL_NAN_INF,           /* NaN or Inf where the reference is finite */
    PLAT_FAIL_UNWRITTEN_OUTPUT,  /* left part of the output as the NaN fill */
    PLAT_FAIL_OUT_OF_BOUNDS_WRITE, /* wrote into the guard page past the output */
    PLAT_FAIL_OUTPUT_FLOOD,      /* printed more than output_cap_bytes */
    PLAT_FAIL_MEMORY_LIMIT,      /* tried to allocate past the memory cap */
    PLAT_FAIL_STATEFUL,          /* result depends on earlier calls (caching) */
    PLAT_FAIL_INPUT_MODIFIED,    /* wrote into a const input buffer */
    PLAT_FAIL_HARNESS,           /* the run ended without a complete report */
    PLAT_FAIL_COUNT
};
/* "screen_rejected", "crash", ...: stable names used in records. */
const char *plat_fail_name(enum plat_fail f);

/* Which screen rule fired (for PLAT_FAIL_SCREEN_REJECTED). */
enum plat_screen_rule {
    PLAT_SCREEN_NONE = 0,
    PLAT_SCREEN_HEADER,      /* #include outside the allow-list */
    PLAT_SCREEN_CALL,        /* fork/system/open/socket/exec/malloc/... named */
    PLAT_SCREEN_ASM,         /* asm / __asm__ */
    PLAT_SCREEN_CTOR,        /* constructor/destructor attribute, init sections */
    PLAT_SCREEN_ATTRIBUTE,   /* other attribute tricks (section, alias, weak, ifunc, ...) */
    PLAT_SCREEN_STATE,       /* writable static storage (.data/.bss): can cache */
    PLAT_SCREEN_SYMBOL,      /* object references a symbol outside the allow-list */
    PLAT_SCREEN_NO_KERNEL,   /* does not define kope_kernel */
    PLAT_SCREEN_TOO_BIG,     /* source over PLAT_SRC_MAX */
    PLAT_SCREEN_SYSTEM_INSN, /* machine code holds ecall/ebreak/CSR access (e.g. asm hidden by macros) */
    PLAT_SCREEN_DIRECTIVE,   /* a preprocessor directive (or '#', macro name) not on the allow-list */
    PLAT_SCREEN_PRAGMA,      /* a pragma not on the allow-list (#pragma, _Pragma) */
    PLAT_SCREEN_SECTION,     /* an object section not on the allow-list (type, flags, name) */
    PLAT_SCREEN_RELOCATION,  /* a relocation type not on the allow-list (GOT, TLS, IRELATIVE, ...) */
    PLAT_SCREEN_CHARACTER,   /* a character not on the text allow-list (platform/allow.h: bidi, controls) */
    PLAT_SCREEN_COUNT
};
const char *plat_screen_rule_name(enum plat_screen_rule r);

/* ------------------------------------------------------------------------
 * Results.
 * ------------------------------------------------------------------------ */

/* describe(): what this target is, for prompts and records. */
struct plat_desc {
    char name[32];            /* "k3" */
    char arch[32];            /* "riscv64" */
    char isa[128];            /* "rv64gcv_zba_zbb_zbs" */
    int vlen_bits;            /* 256; 0 if unknown */
    int emulated;             /* 1 when candidates run under an emulator */
    char cc[256];             /* compiler command actually used */
    char runner[256];         /* runner prefix, "" when native */
    char note[2 * PLAT_DETAIL_MAX]; /* e.g. "emulated: correctness and icount only";
                                       the isolation of runs and of compiles */
};

/* compile(): one candidate built into something verify/measure can run.
 * Owns files in the platform's work dir; release with platform_build_free. */
struct plat_build {
    int ok;                   /* 1 = built and screened clean */
    enum plat_fail reason;    /* SCREEN_REJECTED or COMPILE_ERROR when !ok */
    enum plat_screen_rule screen_rule;
    char detail[PLAT_DETAIL_MAX];
    char diag[PLAT_DIAG_MAX]; /* compiler output, NUL-terminated, capped */
    int diag_truncated;       /* 1 if diag was cut at PLAT_DIAG_MAX */
    double compile_ms;        /* wall time of screen + compile + link */
    char path[512];           /* the built program (target-private meaning) */
    /* The candidate's own object as judged: what passed the object check and
     * was linked unchanged into the program verify and measure run. "" =
     * none (the build failed, or the target has no such object). core
     * records its SHA-256 in the outcome ("object_sha256") and an export
     * rebuilds the kernel and ships that object only when the hash is the
     * same (platform_ops.object_export). */
    char object[640];
    /* What the object's machine code does with the stack, counted
     * statically (k3: k3_object_spills) so a model can see a register
     * spill it cannot see in a cost figure. has_spills 0: not counted. */
    int has_spills;
    unsigned vreg_spills, vreg_reloads;  /* whole-register vector stores / loads
                                            (vs<n>r.v, vl<n>re*.v): what a compiler
                                            spills vector registers with */
    unsigned stack_stores, stack_loads;  /* scalar and FP stores/loads off sp,
                                            the prologue's saves included */
    uint64_t id;              /* per-platform build counter */
};

/* One verification case: the task's own shape or a generated awkward one. */
struct plat_case {
    char label[48];           /* "task", "n=1", "n=VL+1", "rows-ragged", "k=1", ... */
    uint64_t n, rows, cols, m, k, batch;
    int pass;
    enum plat_fail reason;    /* why this case failed */
    double max_abs;           /* max |got - ref| */
    double max_rel;           /* max |got - ref| / max(|ref|, tiny) */
    double norm_err;          /* ||got - ref||_2 / max(||ref||_2, tiny) */
    uint64_t first_bad;       /* index of the first bad element, if !pass */
    /* The values at first_bad, when the judge reported them (a failing
     * case): the kernel's output bits (argmax: an int32 index), the
     * reference, and n_in input operands at the same index (0 where the
     * output index is not an input index: reductions, matmul). */
    int has_vals;
    uint32_t got_bits;
    double ref_at;
    int n_in;
    double in_at[2];
};

/* verify(): correctness on the task shape and awkward cases. */
struct plat_verify {
    int pass;
    enum plat_fail reason;    /* first failure; NONE when pass */
    enum plat_screen_rule screen_rule;
    int signal;               /* for CRASH: the signal number */
    char detail[PLAT_DETAIL_MAX];
    int emulated;
    int n_cases;
    struct plat_case cases[PLAT_MAX_CASES];
    double max_abs, max_rel, norm_err; /* worst over cases */
    double wall_ms;           /* wall time of the whole verify run */
    int reduced_shape;        /* the task case was cut below the task's shape (the
                                 emulation work cap): "verified at reduced shape",
                                 never a task's best (outcome body "reduced_shape") */
    uint64_t size_seed;       /* the seed of the sizes drawn beside the fixed case list
                                 (0 = none drawn): outcome body "verify_seed", so a
                                 failure can be reproduced (k3: platform.k3.verify_seed) */
    char method[PLAT_DETAIL_MAX]; /* how the verdict was reached, e.g. "verified at VLEN
                                 128,256,512,1024 (emulated)" or "VLEN 256 (native)";
                                 "" when the target does not say (outcome "verify_method") */
};

/* A same-run baseline and the candidate's speed against it. */
struct plat_baseline {
    char name[PLAT_NAME_MAX]; /* "scalar-O2", "autovec-O3", "openblas" */
    double median_ns, min_ns;
    uint64_t icount;          /* 0 when not counted */
    uint64_t vcost;           /* the vector-cost model's cost, 0 when not modelled */
    uint64_t mca_cycles;      /* llvm-mca cycles (k3 model mca:CPU), 0 = none */
    double ratio;             /* baseline / candidate (>1: candidate faster);
                                 by time natively; under emulation by vcost when
                                 both sides are modelled, else by icount
                                 (plat_measure.ratio_metric says which);
                                 0 = not claimed */
    int no_difference;        /* by time, inside the A/A noise floor
                                 (plat_measure.noise_floor): "no difference",
                                 not a speedup or a slowdown (platform/noise.h) */
};

/* measure(): timing (and re-verification) of a built candidate. */
struct plat_measure {
    int ok;                   /* 1 = timed, and re-checked clean after timing */
    enum plat_fail reason;    /* e.g. STATEFUL when the post-timing check fails */
    int signal;
    char detail[PLAT_DETAIL_MAX];
    int emulated;             /* 1: times are emulator wall time, NOT speed */
    double median_ns, min_ns; /* per call */
    double spread;            /* (p90 - p10) / median over the kept repeats */
    int repeats;              /* timed calls kept (first discarded) */
    int warmup;               /* untimed calls before */
    char method[PLAT_METHOD_MAX]; /* how measured: isolation, timer, pinning, flush,
                                     repeat rule; whole items, never cut mid-sentence */
    /* Instruction counts from the qemu plugin, kernel call only (not start-up);
     * exactly repeatable for a fixed input. has_icount = 0 when no plugin. */
    int has_icount;
    uint64_t icount, icount_vector, icount_vmem;
    uint64_t icount_vsetvl;   /* vsetvli/vsetivli/vsetvl: in icount, not in icount_vector */
    /* The call's hottest block (the most instructions executed): how many
     * times it ran and its instructions per run, by kind. hot_execs 0 = not known. */
    uint64_t hot_execs, hot_insns, hot_vector, hot_vmem, hot_vsetvl;
    /* The vector-cost model (docs/K3-KERNELS.md): scalar 1, vector register
     * groups x class factor x VLEN/DLEN. 0 when the region could not be
     * modelled (a register-form vsetvl) or there is no plugin. Exact and
     * repeatable like icount. */
    uint64_t vcost;
    /* llvm-mca's cycles of the same region (k3's opt-in model mca:CPU,
     * platform/k3/mca.h): 0 when that model is off or the region could not
     * be modelled (the method says why). Recorded beside vcost; no ratio
     * uses it yet. */
    uint64_t mca_cycles;
    /* What base[].ratio compares: "time", "vcost" or "icount"; "" = no ratio. */
    char ratio_metric[8];
    /* ok, but nothing figured at all (e.g. emulated with no instruction
     * counter): detail then reads PLAT_NOT_MEASURED "why" PLAT_TO_MEASURE
     * "what to do", words the outcome's reason keeps and `kope run` prints. */
    /* Cycles from perf_event_open when the kernel allows; 0 otherwise. */
    uint64_t cycles;
    /* Nominal work of one call of the measured shape (plat_task_work), so the
     * caller can place the kernel on the probed roofline (plat_roofline_share). */
    double flops, bytes;
    int n_baselines;
    struct plat_baseline base[PLAT_MAX_BASELINES];
    double wall_ms;           /* wall time of the whole measure run */
    /* Natively: the candidate timed twice in fresh processes (A/A); the gap
     * of the two medians, max/min - 1 (platform/noise.h). has_noise_floor = 0:
     * not measured (under emulation, another target, no second timing). */
    int has_noise_floor;
    double noise_floor;
};

/* probe(): the machine, for bring-up and the roofline. */
struct plat_probe {
    int emulated;             /* 1: nothing below is a claim about hardware */
    char isa[128];
    int vlen_bits;
    int n_cores;
    uint64_t l1d_bytes, l2_bytes, l3_bytes;   /* 0 = unknown */
    double peak_gflops_core;  /* FP32 FMA, register-blocked vector loop */
    double peak_gflops_all;
    double triad_gbs;         /* STREAM-style triad bandwidth */
    int openblas_ok;          /* 0 when the OpenBLAS build's VLEN does not fit */
    char method[160];
    char note[PLAT_DETAIL_MAX];
    /* Filled by targets other than k3 (0 / "" = not applicable). */
    char target[32];          /* "ascend"; "" = the CPU fields above only (k3) */
    char soc[64];             /* Ascend SoC version, "Ascend910B3" */
    int vector_cores;         /* Ascend: AI Vector cores ([SoCInfo] vector_core_cnt); n_cores = AI cores */
    uint64_t ub_bytes, hbm_bytes; /* Ascend: Unified Buffer per core, device memory */
    char toolkit[PLAT_DETAIL_MAX]; /* what the toolkit found can do / lacks */
};

/* Under emulation, the ratio baseline / candidate by the best metric both
 * sides have: vcost when both are modelled, else icount; sets *metric to
 * "vcost" or "icount". 0 (and *metric "") when neither is counted. */
double plat_emulated_ratio(uint64_t cand_vcost, uint64_t cand_icount, uint64_t base_vcost,
                           uint64_t base_icount, const char **metric);

/* Fold one baseline's metric into the measure's ratio_metric: the first
 * claimed metric names them all, and a mix of vcost and icount is named
 * "icount", so no vcost claim covers an icount ratio. "" is ignored. */
void plat_metric_merge(char ratio_metric[8], const char *metric);

/* Share (0..1+) of the attainable roofline min(peak, AI * bandwidth) that a
 * call taking ns nanoseconds reaches on the probed machine, single core.
 * Returns 0 when the probe is emulated or lacks the peak or bandwidth (no
 * claim is made then). */
double plat_roofline_share(const struct plat_probe *pr, double flops, double bytes, double ns);

/* A recorded outcome as a target's rank hook reads it. core/ owns the record
 * and its format; the target only names the body members its claim is made
 * of (so platform code never parses JSON). */
struct plat_outcome {
    const void *ctx;
    /* The number under key in the outcome's body, or dflt when there is none. */
    double (*num)(const void *ctx, const char *key, double dflt);
};

/* ------------------------------------------------------------------------
 * A tuning space: one op's built-in kernel template on a target, as named
 * integer parameters (LMUL, unroll, tile sizes, ...). A *point* is one value
 * per parameter, in params order; a point is *valid* when every value is
 * allowed and the space's own rule agrees. core/'s offline tuner
 * (core/agent/tuner.h) walks a space through these functions only, so it never
 * knows what a target's kernels are written in. Spaces are static data of
 * the target (platform_ops.space).
 * ------------------------------------------------------------------------ */
#define PLAT_PARAM_MAX 6  /* parameters per space */
#define PLAT_VALUE_MAX 4  /* values per parameter */

struct plat_param {
    const char *name;          /* the parameter (k3: the template macro, "LMUL") */
    int n_values;
    int values[PLAT_VALUE_MAX]; /* allowed values, in search order */
    int def;                   /* default value (one of values): valid on every shape */
    const char *doc;           /* what the values mean, one line */
};

struct plat_space {
    enum plat_op op;
    int n_params;
    struct plat_param params[PLAT_PARAM_MAX];
    /* Extra validity rule over a point; NULL = every combination is valid. */
    int (*valid)(const struct plat_space *s, const int *v);
    /* The instance as one candidate source (malloc'd, NUL-terminated, the
     * caller frees; its length in *len when len is not NULL), or NULL when
     * out of memory or the point is invalid. Required. */
    char *(*source)(const struct plat_space *s, const int *v, size_t *len);
};

/* Value of parameter `name` in point v, or -1 if s has no such parameter. */
int plat_point_get(const struct plat_space *s, const int *v, const char *name);
/* Fill v with the default point. */
void plat_point_default(const struct plat_space *s, int *v);
/* 1 if v is a valid point of s. */
int plat_point_valid(const struct plat_space *s, const int *v);
/* Number of raw points (product of the value counts, valid or not). */
size_t plat_space_size(const struct plat_space *s);
/* Decode raw index idx (< size) into v: 1 if valid, 0 if not (v filled
 * either way), -1 if idx is out of range. */
int plat_space_point(const struct plat_space *s, size_t idx, int *v);
/* Number of valid points. */
size_t plat_space_count_valid(const struct plat_space *s);
/* "add LMUL=4 UNROLL=2" into buf (records' "params"). 0 or PLAT_ERR_INTERNAL. */
int plat_point_label(const struct plat_space *s, const int *v, char *buf, size_t cap);
/* The op a point label names (its first word), or -1. */
int plat_label_op(const char *label);
/* Parse a label made by plat_point_label for this space: its op name, then
 * NAME=VALUE words (missing ones take their default). 0, or
 * PLAT_ERR_BAD_TASK for another op, an unknown parameter or value, or an
 * invalid point. */
int plat_point_parse(const struct plat_space *s, const char *label, int *v);
/* s->source(s, v, len). */
char *plat_point_source(const struct plat_space *s, const int *v, size_t *len);

/* ------------------------------------------------------------------------
 * The prompt contract: what an LLM is told to write for this target. core/
 * (core/context/context.c) builds every prompt around it, the same for a run and
 * for `kope context`; nothing target-specific is spelled in core/. Static.
 * ------------------------------------------------------------------------ */
struct plat_prompt {
    /* What the target is, in the system message's first sentence:
     * "You optimize one compute kernel for the <name> target (<about>)." */
    const char *about;
    /* The kernel contract: language, headers, entry point, what is banned.
     * One paragraph, no trailing newline. */
    const char *contract;
    /* The entry point of a family, one line (the task's "Signature:"). */
    const char *(*signature)(enum plat_family f);
    /* The info word of the reply's code fence ("c", "cpp"): the reply
     * format asks for it. */
    const char *lang;
    /* Embedded knowledge files the cold tier draws from, NULL-terminated. */
    const char *const *knowledge;
    /* Files shown in another target's prompt when experience from this
     * target is in it (cross-target items), NULL-terminated; NULL = none. */
    const char *const *knowledge_shared;
    /* The cold tier's "This machine" text (no heading) from the target's
     * probe, or with pr NULL when none is known; into buf (cap bytes,
     * always NUL-terminated). Required. */
    void (*machine)(const struct plat_probe *pr, char *buf, size_t cap);
    /* How a candidate is verified and what ranks it, for the system message
     * (so always in the prompt), written from the code that judges and
     * measures (k3: the vector-cost model's weight table); pr as for
     * machine (NULL: describe both emulated and native). Into buf (cap
     * bytes, NUL-terminated). NULL = the target has no such text. */
    void (*judging)(const struct plat_probe *pr, char *buf, size_t cap);
    /* What the verify cases of task t are and what its special cases put in
     * the inputs, one paragraph from the judge's own case list (k3:
     * embed/verdict.h, the list the harness runs), for the feedback of a
     * failed verification. Into buf (cap bytes, NUL-terminated). NULL = none. */
    void (*cases)(const struct plat_task *t, char *buf, size_t cap);
};

/* ------------------------------------------------------------------------
 * The interface.
 * ------------------------------------------------------------------------ */
struct platform;

struct platform_ops {
    const char *name;   /* "k3", "ascend" */

    /* Find the toolchain and runner, make the work dir. Required. Returns 0 or
     * a PLAT_ERR_* code with p->err set. */
    int (*open)(struct platform *p);
    /* Free p->priv and remove the work dir. Required; called once. */
    void (*close)(struct platform *p);

    /* Fill *out. Required; cannot fail after open (returns 0). */
    int (*describe)(struct platform *p, struct plat_desc *out);

    /* Screen and build src (len bytes, not necessarily NUL-terminated) for
     * task t. Required. Returns 0 when the question was answered (out->ok says
     * whether the candidate built), or PLAT_ERR_* when the platform failed. */
    int (*compile)(struct platform *p, const struct plat_task *t,
                   const char *src, size_t len, struct plat_build *out);

    /* Run the built candidate on the task shape and the awkward cases, in a
     * sandboxed child. Required. 0 = answered (out->pass), else PLAT_ERR_*. */
    int (*verify)(struct platform *p, const struct plat_task *t,
                  const struct plat_build *b, struct plat_verify *out);

    /* Time the candidate and the same-run baselines, re-verifying with fresh
     * inputs before and after timing. Optional: NULL means this target can
     * only check correctness (platform_measure returns PLAT_ERR_UNSUPPORTED). */
    int (*measure)(struct platform *p, const struct plat_task *t,
                   const struct plat_build *b, struct plat_measure *out);

    /* Characterize the machine. Optional: NULL means no probe on this target
     * (platform_probe returns PLAT_ERR_UNSUPPORTED). */
    int (*probe)(struct platform *p, struct plat_probe *out);

    /* Remove one build's files. Optional: NULL means builds need no cleanup
     * beyond close(). */
    void (*build_free)(struct platform *p, struct plat_build *b);

    /* Ship the judged object of build b (b->object) as a library member:
     * written to path with its one global definition (kope_kernel) renamed
     * to symbol (a C identifier), for `kope kernels export`. The target runs
     * its object check on b->object again and checks that only that name
     * changed: every section's bytes but the symbol and string tables' are
     * identical to the judged object's, and nothing runs before main or at
     * exit (no constructor or destructor). Optional: NULL means this target
     * cannot ship its objects (platform_object_export returns
     * PLAT_ERR_UNSUPPORTED; the export refuses its kernels). Returns 0 when
     * answered: *refused 0 (path written) or 1 (why says why, path not
     * written); PLAT_ERR_* when the platform failed (no objcopy, I/O). */
    int (*object_export)(struct platform *p, const struct plat_build *b, const char *symbol,
                         const char *path, int *refused, char *why, size_t why_len);

    /* A built-in kernel, correct for every task of t's op (not tuned), for
     * targets whose kernels core's tuner cannot write (its templates are K3
     * RVV C): a proposer's first trial and an LLM's starting point. Optional:
     * NULL means the target has none (k3: use the tuner). On success *src is
     * malloc'd (the caller frees it), *len its bytes, label a short name for
     * records ("ascend-starter-activation"). Returns 0, or
     * PLAT_ERR_UNSUPPORTED when there is none for this op. */
    int (*starter)(struct platform *p, const struct plat_task *t, char **src, size_t *len,
                   char *label, size_t label_len);

    /* The target's claimed metric of a passing, fully verified outcome,
     * larger = better: how core ranks a task's outcomes to find its one best
     * (core/graph/graph.h graph_tree_best). Static (no open platform needed: the
     * graph ranks records of any age). Optional: NULL means the outcome's
     * "speedup" (its ratio against the claimed same-run baseline), 0 when it
     * has none. */
    double (*rank)(const struct plat_outcome *o);

    /* The tuning space of op on this target (its built-in template), for
     * core's offline tuner. Static (the tuner's prior reads records without
     * an open platform). Optional: NULL, or NULL for an op, means no space
     * (the target's kernels come from its starter and the LLM). */
    const struct plat_space *(*space)(enum plat_op op);

    /* What an LLM is told to write for this target. Static. Optional: NULL
     * means the default target's (PLAT_DEFAULT_TARGET). */
    const struct plat_prompt *prompt;

    /* Where the target's peers (baseline libraries, a measuring plugin) are
     * found with settings s, and from where (a setting, the compiled-in
     * prefix, beside the binary, the build tree): one "peer NAME ..." line
     * each into buf (cut at cap), as `kope version` and `kope probe` print
     * them. Static (version opens no platform). Returns the length written.
     * Optional: NULL means the target has no peers to find. */
    size_t (*peers)(const struct plat_settings *s, char *buf, size_t cap);
};

/* An open target. The ops table is static; priv belongs to the target. */
struct platform {
    const struct platform_ops *ops;
    struct plat_settings set;   /* copied at open; strings must outlive p */
    void *priv;
    int rc;                     /* sticky last PLAT_ERR_* (0 = none) */
    char err[512];              /* message for rc, with errno text / file names */
};

/* Set p's sticky error (rc and the formatted message) and return rc: the
 * one error path of every target's ops. */
int plat_set_err(struct platform *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The target kope uses when neither the command line nor the config
 * (platform.name) names one: the one place it is spelled. */
#define PLAT_DEFAULT_TARGET "k3"

/* The ops table of a named target ("k3"), or NULL. The one place targets are
 * chosen. */
const struct platform_ops *platform_find(const char *name);

/* The rank of a passing outcome recorded for target (platform_ops.rank, or
 * its NULL default); an unknown target ranks by the default too. */
double platform_rank(const char *target, const struct plat_outcome *o);

/* The tuning space of op on target (platform_ops.space), or NULL when the
 * target is unknown or has none for op. */
const struct plat_space *platform_space(const char *target, enum plat_op op);

/* The prompt contract of target (platform_ops.prompt); the default
 * target's for an unknown target or one without its own. Never NULL. */
const struct plat_prompt *platform_prompt(const char *target);

/* target's peer lines (platform_ops.peers) into buf; "" (0) when the
 * target is unknown or has none. */
size_t platform_peers(const char *target, const struct plat_settings *s, char *buf, size_t cap);

/* Open target `name` with settings s (NULL = defaults). *out is owned by the
 * caller; release with platform_close. On failure returns PLAT_ERR_* and
 * writes a message into err. */
int platform_open(const char *name, const struct plat_settings *s,
                  struct platform **out, char *err, size_t err_len);
void platform_close(struct platform *p);

/* Thin wrappers that check optional members and clear the result first. */
int platform_describe(struct platform *p, struct plat_desc *out);
int platform_compile(struct platform *p, const struct plat_task *t,
                     const char *src, size_t len, struct plat_build *out);
int platform_verify(struct platform *p, const struct plat_task *t,
                    const struct plat_build *b, struct plat_verify *out);
int platform_measure(struct platform *p, const struct plat_task *t,
                     const struct plat_build *b, struct plat_measure *out);
int platform_probe(struct platform *p, struct plat_probe *out);
void platform_build_free(struct platform *p, struct plat_build *b);
/* Ship build b's judged object renamed to symbol at path (see
 * platform_ops.object_export); PLAT_ERR_UNSUPPORTED when the target cannot. */
int platform_object_export(struct platform *p, const struct plat_build *b, const char *symbol,
                           const char *path, int *refused, char *why, size_t why_len);
/* The target's built-in starter kernel for t (see platform_ops.starter);
 * PLAT_ERR_UNSUPPORTED when the target has none. */
int platform_starter(struct platform *p, const struct plat_task *t, char **src, size_t *len,
                     char *label, size_t label_len);

#endif /* KOPE_PLATFORM_H */

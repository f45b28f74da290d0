/*
 * platform/proc.h - the one child-process runner of the targets (the K3
 * compiler and harness runs, the Ascend toolkit and host program): a child
 * under limits whose fate always becomes a result, never a kope crash or
 * hang.
 *
 * Always: its own process group (the whole group is killed at the wall-clock
 * timeout or the output cap), stdin from /dev/null, stdout+stderr into one
 * pipe read with a cap, no core dumps, PR_SET_PDEATHSIG (dies with kope),
 * PR_SET_NO_NEW_PRIVS, the rlimits asked for.
 *
 * With PROC_ISOLATE (K3 harness runs, which execute candidate code), in
 * this order:
 *   - namespaces: new user, mount, PID, network and IPC namespaces; the
 *     program runs as PID 1 of its PID namespace (so when it exits, every
 *     process it started dies before proc_run returns) and as an unprivileged
 *     uid (no capabilities after exec); the network namespace has only a
 *     down loopback;
 *   - a minimal read-only filesystem: a fresh tmpfs root holding read-only
 *     binds of /usr, /lib*, /bin, /sbin, /etc/ld.so.cache and the paths in
 *     ro_paths, /dev/null, a /proc of the new PID namespace, and rw_dir as
 *     the only writable directory (pivot_root: the rest of the host tree is
 *     not reachable);
 *   - a cleared environment (PATH, LC_ALL=C, TMPDIR=rw_dir when set, and
 *     the caller's env_add entries);
 *   - capabilities dropped from the bounding set (matters when namespaces
 *     are unavailable and kope runs as root);
 *   - a seccomp filter on the program (qemu-user or the native harness):
 *     execve only of the very argv[0] pointer kope passed (so a guest under
 *     qemu-user cannot exec a host program), no execveat, socket, ptrace,
 *     process_vm_*, mount family, unshare/setns, bpf, kexec, modules, keys,
 *     userfaultfd, io_uring; those fail with EPERM (perf_event_open stays:
 *     the native harness counts the kernel process's cycles with it).
 * With PROC_ISOLATE | PROC_VIEW (compiler and linker runs, which read
 * hostile source): the same namespaces, cleared environment, dropped
 * capabilities and seccomp deny-list, but the root holds only the paths in
 * view (the toolchain the caller found: compiler, its programs, resource
 * and include dirs, libraries, sysroots), ro_paths, /dev/null and rw_dir;
 * no /usr, /etc, /home, /tmp or /proc beyond what view names (view NULL:
 * the system directories of PROC_ISOLATE, for a build tool that lives
 * there and runs programs from there, like cmake and make). execve is
 * allowed (a driver runs cc1, as, ld), but only what the view holds can be
 * run. TMPDIR is rw_dir. If the view cannot be built while the namespaces
 * exist, the child prints "kope: cannot build the compile view (PATH: why)"
 * and exits PROC_VIEW_FAILED: never a compile with the host visible.
 * If the namespaces cannot be created (a container without user namespaces),
 * the run goes on without them and res->isolation says so; the seccomp
 * filter and the dropped capabilities still apply. Callers label their
 * results with res->isolation (see docs/K3-HARNESS.md).
 */
#ifndef KOPE_PLATFORM_PROC_H
#define KOPE_PLATFORM_PROC_H

#include <stddef.h>
#include <stdint.h>

#define PROC_ISOLATE 1    /* namespaces + minimal filesystem + seccomp (above) */
#define PROC_REPEATABLE 2 /* the same start every run: the environment cleared (PATH,
                            LC_ALL=C) and address-space randomisation off, so a guest
                            under qemu-user sees the same stack (instruction counts) */

#define PROC_VIEW 4       /* with PROC_ISOLATE: the root is view[] (+ ro_paths, rw_dir)
                            instead of the system directories; execve allowed inside */
#define PROC_EXEC_ANY 8   /* with PROC_ISOLATE: execve of any path of the view is allowed
                            (the K3 judge under qemu-user starts each kernel process by
                            exec'ing the host's qemu); without it only argv[0]'s */
#define PROC_EXEC_FD 16   /* with PROC_ISOLATE: execveat(exec_fd, "", ..., AT_EMPTY_PATH)
                            is allowed (the native K3 judge exec'ing the kernel program) */

#ifndef PROC_VIEW_MAX
#define PROC_VIEW_MAX 64  /* paths in one view */
#endif
#ifndef PROC_ENV_ADD_MAX
#define PROC_ENV_ADD_MAX 8 /* env_add entries an isolated run keeps */
#endif
/* exit status of an isolated PROC_VIEW child whose view could not be built */
#define PROC_VIEW_FAILED 126

#ifndef PROC_RO_PATHS_MAX
#define PROC_RO_PATHS_MAX 8
#endif

struct proc_spec {
    char *const *argv;        /* argv[0] searched in PATH (absolute when isolated) */
    const char *cwd;          /* NULL = inherit */
    char *const *env_add;     /* extra NAME=VALUE entries, NULL-terminated, or NULL
                                 (isolated: the first PROC_ENV_ADD_MAX, on a cleared env) */
    int timeout_ms;           /* wall clock; the child's process group is killed */
    int cpu_s;                /* RLIMIT_CPU, 0 = none */
    uint64_t mem_bytes;       /* RLIMIT_AS, 0 = none */
    uint64_t fsize_bytes;     /* RLIMIT_FSIZE, 0 = none */
    uint64_t output_cap;      /* stdout+stderr bytes before the child is killed; 0 = 1 MiB */
    char *out;                /* first out_len-1 bytes of output kept here (NUL-terminated) */
    size_t out_len;
    int fd3;                  /* > 2: given to the child as its fd 3 (e.g. a report file) */
    int fd4;                  /* > 2: given to the child as its fd 4 (e.g. the icount key pipe) */
    int fd5;                  /* > 2: given to the child as its fd 5 (e.g. the kernel program) */
    int exec_fd;              /* PROC_EXEC_FD: the one descriptor number execveat may take */
    unsigned flags;           /* PROC_ISOLATE, PROC_REPEATABLE, PROC_VIEW, PROC_EXEC_* */
    const char *rw_dir;       /* isolated: the one writable directory (absolute) */
    const char *ro_paths[PROC_RO_PATHS_MAX]; /* isolated: more read-only files/dirs, NULL-ended */
    const char *const *view;  /* PROC_VIEW: the root's read-only paths, NULL-ended (at most
                                 PROC_VIEW_MAX; NULL: /usr, /lib*, /bin, /sbin as without
                                 PROC_VIEW); each canonical, or a symlink whose target is
                                 listed too; missing paths are skipped) */
};

struct proc_result {
    int exited, exit_code;    /* normal exit */
    int signaled, signal;     /* killed by a signal (not by us) */
    int timed_out;            /* we killed it at the wall-clock timeout */
    int flooded;              /* we killed it at the output cap */
    int cpu_limit;            /* killed by SIGXCPU (RLIMIT_CPU) */
    uint64_t output_bytes;    /* total seen (counting past the cap) */
    int truncated;            /* output did not fit in out */
    double wall_ms;
    char isolation[160];      /* PROC_ISOLATE: what applied, e.g. "namespaces+seccomp" */
};

/* Run argv in a child with the limits in r; returns 0 when the child ran
 * (whatever its fate, see res), PLAT_ERR_SPAWN with err set otherwise. */
int proc_run(const struct proc_spec *r, struct proc_result *res, char *err, size_t err_len);

/* Split a command string on blanks into argv (no quoting). Appends to argv
 * from *argc, at most max entries including the NULL; words point into buf
 * (a copy of cmd the caller provides, buf_len bytes). Returns 0 or -1 when
 * something does not fit. */
int proc_argv_split(const char *cmd, char *buf, size_t buf_len, char **argv, int *argc, int max);

/* Milliseconds on CLOCK_MONOTONIC (wall-clock deadlines of child runs). */
double proc_now_ms(void);

/* An argv built from command strings split on blanks (a configured
 * compiler with its flags) and formatted arguments, in fixed storage: a
 * piece that does not fit sets overflow, which the caller checks once
 * before running it. */
#define PROC_CMD_ARGS 96
#define PROC_CMD_WORDS 8       /* split command strings (cc, its flags, ...) */
#define PROC_CMD_WORD_MAX 1024 /* bytes of one split string */
#define PROC_CMD_EXTRA 48      /* formatted arguments */
#define PROC_CMD_ARG_MAX 576   /* bytes of one formatted argument (a path and a flag) */
struct proc_cmd {
    char *argv[PROC_CMD_ARGS];
    int argc;
    char words[PROC_CMD_WORDS][PROC_CMD_WORD_MAX];
    int n_words;
    char extra[PROC_CMD_EXTRA][PROC_CMD_ARG_MAX];
    int n_extra;
    int overflow;
};
void proc_cmd_init(struct proc_cmd *c);
void proc_cmd_split(struct proc_cmd *c, const char *s); /* NULL or "" adds nothing */
void proc_cmd_arg(struct proc_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A child run's work files: write len bytes to path (0 or -1), and remove
 * a directory tree (symlinks are removed, never followed). */
int proc_file_write(const char *path, const char *data, size_t len);
void proc_rm_tree(const char *path);

#endif

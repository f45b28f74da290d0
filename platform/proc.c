/*
 * platform/proc.c - the one child-process runner (see proc.h for what each
 * layer does and what it does not). Used by platform/k3 (compiler and harness
 * runs) and platform/ascend (cmake, the host program, msprof, npu-smi).
 *
 * Shape of an isolated run:
 *   kope ── fork ──> child: setpgid, limits, fds, unshare(user, mount, pid,
 *                    net, ipc), uid/gid maps ── fork ──> PID 1: minimal root
 *                    (tmpfs + read-only binds + rw_dir), pivot_root, drop
 *                    capabilities, seccomp, execve(argv[0])
 * The middle process only waits for PID 1 and exits the way it did, so the
 * caller sees one child. When PID 1 exits, the kernel kills everything left
 * in its PID namespace before the middle process can be reaped.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#endif

#include "platform/platform.h"
#include "platform/proc.h"

double proc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int proc_argv_split(const char *cmd, char *buf, size_t buf_len, char **argv, int *argc, int max)
{
    size_t n = strlen(cmd);
    if (n + 1 > buf_len)
        return -1;
    memcpy(buf, cmd, n + 1);
    char *save = NULL;
    for (char *w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        if (*argc + 1 >= max)
            return -1;
        argv[(*argc)++] = w;
    }
    argv[*argc] = NULL;
    return 0;
}

static void set_limit(int res, uint64_t v)
{
    struct rlimit rl = {(rlim_t)v, (rlim_t)v};
    setrlimit(res, &rl);
}

/* ------------------------------------------------------ isolation --- */

/* What the child tells the parent about the layers that applied: appended
 * to a small buffer and written to the status pipe just before exec. */
struct iso_note {
    char text[160];
};

static void note_add(struct iso_note *n, const char *what)
{
    size_t l = strlen(n->text);
    snprintf(n->text + l, sizeof n->text - l, "%s%s", l ? "+" : "", what);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, text, strlen(text));
    close(fd);
    return w == (ssize_t)strlen(text) ? 0 : -1;
}

/* Resolve argv[0] in PATH (before the filesystem view changes, and so the
 * seccomp filter can name the one string execve may take). */
static int resolve_exe(const char *name, char *out, size_t out_len)
{
    if (strchr(name, '/')) {
        snprintf(out, out_len, "%s", name);
        return access(out, X_OK);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t dl = strcspn(path, ":");
        if (dl && dl + strlen(name) + 2 < out_len) {
            snprintf(out, out_len, "%.*s/%s", (int)dl, path, name);
            if (access(out, X_OK) == 0)
                return 0;
        }
        path += dl;
        if (*path == ':')
            path++;
    }
    return -1;
}

/* mkdir -p for the parents of path, then the leaf as a dir or an empty file */
static int make_point(const char *path, int dir)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *s = tmp + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    if (dir)
        return mkdir(tmp, 0755) == 0 || errno == EEXIST ? 0 : -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

#define OLDROOT "/.old"

/* After the pivot: bind host path src (seen under OLDROOT) at the same path
 * in the new root, read-only unless rw. A symlink (/lib -> usr/lib on
 * merged-/usr systems) is recreated as the same symlink. Missing paths are
 * skipped. */
static int graft(const char *src, int rw)
{
    char old[1100], target[512];
    struct stat st;
    snprintf(old, sizeof old, OLDROOT "%s", src);
    if (lstat(old, &st) != 0)
        return 0;
    if (S_ISLNK(st.st_mode)) {
        ssize_t tl = readlink(old, target, sizeof target - 1);
        if (tl <= 0)
            return -1;
        target[tl] = '\0';
        if (make_point(src, 1) == 0)
            rmdir(src); /* parents only */
        return symlink(target, src) == 0 || errno == EEXIST ? 0 : -1;
    }
    if (make_point(src, S_ISDIR(st.st_mode)) != 0)
        return -1;
    if (mount(old, src, NULL, MS_BIND | MS_REC, NULL) != 0)
        return -1;
    unsigned long fl = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (rw ? 0 : MS_RDONLY);
    return mount(NULL, src, NULL, fl, NULL);
}

/* In PID 1 of the new namespaces: the minimal root (bubblewrap's way: a
 * tmpfs becomes the root, the old root stays reachable under OLDROOT only
 * until the binds are made, then is detached). 0, or -1 with errno set and
 * *failed naming the path that could not be bound. With PROC_VIEW the root
 * holds r->view instead of the system directories. */
static int fs_minimal(const struct proc_spec *r, const char **failed)
{
    static const char *const base[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin",
                                       "/etc/ld.so.cache", "/dev/null", NULL};
    static const char *const view_base[] = {"/dev/null", NULL};
    *failed = "/";
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return -1;
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0)
        return -1;
    if (mkdir("/tmp" OLDROOT, 0700) != 0 || syscall(SYS_pivot_root, "/tmp", "/tmp" OLDROOT) != 0 ||
        chdir("/") != 0)
        return -1;
    const char *const *lists[2] = {(r->flags & PROC_VIEW) && r->view ? view_base : base,
                                   (r->flags & PROC_VIEW) ? r->view : NULL};
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l] && lists[l][i] && i < PROC_VIEW_MAX; i++)
            if (graft((*failed = lists[l][i]), 0))
                return -1;
    for (int i = 0; i < PROC_RO_PATHS_MAX && r->ro_paths[i]; i++)
        if (graft((*failed = r->ro_paths[i]), 0))
            return -1;
    if (r->rw_dir && graft((*failed = r->rw_dir), 1))
        return -1;
    *failed = OLDROOT;
    if (umount2(OLDROOT, MNT_DETACH) != 0)
        return -1;
    rmdir(OLDROOT);
    /* the new root itself read-only too */
    return mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
}

/* seccomp on the program itself (qemu-user, or the native harness, which
 * adds its own allow-list later): a deny-list of what neither qemu nor the
 * harness needs, and execve only of the string at exe (the pointer we pass;
 * a guest under qemu-user that asks the host to exec anything else gets
 * EPERM). Returns 0, or -1 when the kernel (or an emulator running kope
 * itself) refuses filters. */
static int seccomp_runner(const char *exe, int any_exec, int exec_fd)
{
#if defined(__linux__) && defined(SECCOMP_MODE_FILTER) && \
    (defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64))
#if defined(__x86_64__)
#define P_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define P_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define P_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    uint64_t p = (uint64_t)(uintptr_t)exe;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, P_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        /* x32 system calls share the arch value: refuse them all */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        /* execve: only our own argv[0] pointer (low word, then high word);
         * with any_exec (a compiler driver running cc1, as, ld from its
         * view) every execve goes on to the list below, which allows it */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, any_exec ? 5 : 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)p, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(p >> 32), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef SYS_execveat
        /* execveat: only on exec_fd (>= 0: PROC_EXEC_FD) with AT_EMPTY_PATH
         * (the program the descriptor holds, no path looked up) */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 7),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, exec_fd >= 0 ? (uint32_t)exec_fd : 0xffffffffu, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* over the refusal: BPF_JA jumps by k, not by jt/jf (with k 0 it
         * fell into the refusal and every native kernel exec got EPERM) */
        BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        DENY(SYS_socket), DENY(SYS_socketpair), DENY(SYS_connect), DENY(SYS_bind),
        DENY(SYS_listen), DENY(SYS_accept), DENY(SYS_accept4), DENY(SYS_sendto),
        DENY(SYS_sendmsg), DENY(SYS_ptrace), DENY(SYS_process_vm_readv),
        DENY(SYS_process_vm_writev), DENY(SYS_mount), DENY(SYS_umount2), DENY(SYS_pivot_root),
        DENY(SYS_unshare), DENY(SYS_setns), DENY(SYS_chroot), DENY(SYS_bpf),
        DENY(SYS_kexec_load), DENY(SYS_init_module), DENY(SYS_finit_module),
        DENY(SYS_delete_module), DENY(SYS_add_key), DENY(SYS_request_key), DENY(SYS_keyctl),
        DENY(SYS_userfaultfd), DENY(SYS_swapon), DENY(SYS_swapoff),
        DENY(SYS_reboot), DENY(SYS_quotactl), DENY(SYS_acct),
#ifdef SYS_io_uring_setup
        DENY(SYS_io_uring_setup),
#endif
#ifdef SYS_open_tree
        DENY(SYS_open_tree), DENY(SYS_move_mount), DENY(SYS_fsopen), DENY(SYS_fsmount),
        DENY(SYS_mount_setattr),
#endif
#ifdef SYS_pidfd_getfd
        DENY(SYS_pidfd_getfd),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef DENY
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
#else
    (void)exe;
    (void)any_exec;
    (void)exec_fd;
    errno = ENOSYS;
    return -1;
#endif
}

static void caps_drop(void)
{
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
            break; /* past the last capability */
}

/* In the middle process: wait for PID 1 and end the same way. */
static void relay_exit(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        signal(sig, SIG_DFL);
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no core of this process either */
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

/* ------------------------------------------------------------ child --- */

/* In the child: never returns. */
static void child_exec(const struct proc_spec *r, int out_fd, int note_fd)
{
    struct iso_note note = {{0}};
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    /* the output and note pipes away from 0..5 first, so that placing the
     * report on fd 3 (the key on fd 4, a program on fd 5) cannot clobber one of them (the
     * copies are CLOEXEC) */
    if (out_fd <= 5)
        out_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 10);
    if (note_fd >= 0 && note_fd <= 5)
        note_fd = fcntl(note_fd, F_DUPFD_CLOEXEC, 10);
    if (out_fd < 0)
        _exit(127);
    /* fd3, fd4 and fd5 through high copies: a source may be 3, 4 or 5 itself */
    int src3 = r->fd3 > 2 ? fcntl(r->fd3, F_DUPFD_CLOEXEC, 10) : -1;
    int src4 = r->fd4 > 2 ? fcntl(r->fd4, F_DUPFD_CLOEXEC, 10) : -1;
    int src5 = r->fd5 > 2 ? fcntl(r->fd5, F_DUPFD_CLOEXEC, 10) : -1;
    if (src3 >= 0) {
        dup2(src3, 3); /* dup2 clears FD_CLOEXEC on the copy */
        close(src3);
    }
    if (src4 >= 0) {
        dup2(src4, 4);
        close(src4);
    }
    if (src5 >= 0) {
        dup2(src5, 5);
        close(src5);
    }
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    close(out_fd);
    set_limit(RLIMIT_CORE, 0);
    if (r->cpu_s > 0)
        set_limit(RLIMIT_CPU, (uint64_t)r->cpu_s);
    if (r->fsize_bytes)
        set_limit(RLIMIT_FSIZE, r->fsize_bytes);
    signal(SIGPIPE, SIG_DFL);
    if (!(r->flags & PROC_ISOLATE))
        for (char *const *e = r->env_add; e && *e; e++)
            putenv(*e);
    char exe[1024];
    if (resolve_exe(r->argv[0], exe, sizeof exe) != 0) {
        dprintf(1, "kope: cannot run %s: not found\n", r->argv[0]);
        _exit(127);
    }
    if (r->flags & PROC_ISOLATE) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC) == 0) {
            char map[64];
            /* an unprivileged uid inside: exec drops every capability */
            snprintf(map, sizeof map, "1000 %u 1\n", (unsigned)uid);
            int ok = write_file("/proc/self/uid_map", map) == 0;
            write_file("/proc/self/setgroups", "deny\n");
            snprintf(map, sizeof map, "1000 %u 1\n", (unsigned)gid);
            ok = ok && write_file("/proc/self/gid_map", map) == 0;
            pid_t pid1 = fork();
            if (pid1 < 0)
                _exit(127);
            if (pid1 > 0) {
                close(note_fd);
                if (r->fd3 > 2)
                    close(3);
                if (r->fd4 > 2)
                    close(4);
                if (r->fd5 > 2)
                    close(5);
                relay_exit(pid1);
            }
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            note_add(&note, ok ? "namespaces(user,pid,net,mount,ipc)" : "namespaces(no uid map)");
            const char *failed = "";
            if (fs_minimal(r, &failed) == 0) {
                note_add(&note, (r->flags & PROC_VIEW) && r->view ? "toolchain-view" : "minimal-ro-root");
            } else if (r->flags & PROC_VIEW) {
                /* a compile never runs with the host visible when namespaces
                 * exist: the caller refuses (proc.h) */
                dprintf(1, "kope: cannot build the compile view (%.300s: %s)\n", failed,
                        strerror(errno));
                _exit(PROC_VIEW_FAILED);
            } else {
                char e[96];
                snprintf(e, sizeof e, "host-fs-visible(%s)", strerror(errno));
                note_add(&note, e);
            }
        } else {
            char e[96];
            snprintf(e, sizeof e, "NO-NAMESPACES(%s)", strerror(errno));
            note_add(&note, e);
        }
    }
    if (r->cwd && chdir(r->cwd) != 0) {
        dprintf(1, "kope: cannot enter %s: %s\n", r->cwd, strerror(errno));
        _exit(127);
    }
    if (r->mem_bytes)
        set_limit(RLIMIT_AS, r->mem_bytes);
    /* isolated: PATH, LC_ALL=C, TMPDIR inside the one writable directory,
     * and what the caller adds (env_add); nothing of kope's environment */
    char tmpdir[1100];
    char *clean_env[4 + PROC_ENV_ADD_MAX] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
    if ((r->flags & PROC_ISOLATE) && r->rw_dir) {
        snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", r->rw_dir);
        clean_env[2] = tmpdir;
    }
    if (r->flags & PROC_ISOLATE) {
        int ne = clean_env[2] ? 3 : 2;
        for (char *const *e = r->env_add; e && *e && ne < 3 + PROC_ENV_ADD_MAX; e++)
            clean_env[ne++] = *e;
        clean_env[ne] = NULL;
    }
    extern char **environ;
    char *const *envp = environ;
    if (r->flags & (PROC_ISOLATE | PROC_REPEATABLE))
        envp = clean_env;
    if (r->flags & PROC_REPEATABLE)
        personality(ADDR_NO_RANDOMIZE);
    if (r->flags & PROC_ISOLATE) {
        caps_drop();
        note_add(&note, seccomp_runner(exe, (r->flags & (PROC_VIEW | PROC_EXEC_ANY)) != 0,
                                          (r->flags & PROC_EXEC_FD) ? r->exec_fd : -1) == 0 ? "seccomp" : "NO-SECCOMP");
        if (note_fd >= 0) {
            ssize_t w = write(note_fd, note.text, strlen(note.text));
            (void)w;
        }
    }
    execve(exe, r->argv, envp);
    dprintf(1, "kope: cannot run %s: %s\n", r->argv[0], strerror(errno));
    _exit(127);
}

int proc_run(const struct proc_spec *r, struct proc_result *res, char *err, size_t err_len)
{
    memset(res, 0, sizeof *res);
    if (r->out && r->out_len)
        r->out[0] = '\0';
    int fds[2], nfd[2] = {-1, -1};
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, err_len, "pipe: %s", strerror(errno));
        return PLAT_ERR_SPAWN;
    }
    if ((r->flags & PROC_ISOLATE) && pipe2(nfd, O_CLOEXEC) != 0) {
        snprintf(err, err_len, "pipe: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return PLAT_ERR_SPAWN;
    }
    double t0 = proc_now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        if (nfd[0] >= 0) {
            close(nfd[0]);
            close(nfd[1]);
        }
        return PLAT_ERR_SPAWN;
    }
    if (pid == 0) {
        close(fds[0]);
        if (nfd[0] >= 0)
            close(nfd[0]);
        child_exec(r, fds[1], nfd[1]);
    }
    close(fds[1]);
    if (nfd[1] >= 0)
        close(nfd[1]);
    setpgid(pid, pid); /* also from the parent: no race with the kill below */

    uint64_t cap = r->output_cap ? r->output_cap : (1u << 20);
    size_t kept = 0;
    int killed = 0;
    char buf[8192];
    for (;;) {
        double left = r->timeout_ms > 0 ? r->timeout_ms - (proc_now_ms() - t0) : 1e9;
        if (left <= 0) {
            res->timed_out = 1;
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left > 1e6 ? 1000000 : (int)left + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue; /* re-check the deadline */
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF: the child (and its group) closed the pipe */
        res->output_bytes += (uint64_t)n;
        if (r->out && r->out_len > 1 && kept < r->out_len - 1) {
            size_t room = r->out_len - 1 - kept;
            size_t take = (size_t)n < room ? (size_t)n : room;
            memcpy(r->out + kept, buf, take);
            kept += take;
            r->out[kept] = '\0';
            if (take < (size_t)n)
                res->truncated = 1;
        } else {
            res->truncated = 1;
        }
        if (res->output_bytes > cap) {
            res->flooded = 1;
            break;
        }
    }
    if (res->timed_out || res->flooded) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        killed = 1;
    }
    close(fds[0]);
    /* The pipe can close before the child exits (it may close its own
     * stdout; and it closes during the child's exit, before the child can be
     * reaped): keep the deadline while waiting for it too. A pidfd wakes us
     * the moment it can be reaped; without one (Linux < 5.3), 2 ms naps,
     * which under load cost several ms per run (measured, bench/harness). */
    int status = 0;
    int pidfd = -1;
#ifdef SYS_pidfd_open
    if (!killed)
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    for (;;) {
        pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (w == 0) {
            if (r->timeout_ms > 0 && proc_now_ms() - t0 >= r->timeout_ms) {
                res->timed_out = 1;
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                killed = 1;
            } else if (pidfd >= 0) {
                double left = r->timeout_ms > 0 ? r->timeout_ms - (proc_now_ms() - t0) : 1e6;
                struct pollfd pp = {pidfd, POLLIN, 0};
                if (poll(&pp, 1, left > 1e6 ? 1000000 : (int)left + 1) < 0 && errno != EINTR) {
                    close(pidfd);
                    pidfd = -1;
                }
            } else {
                struct timespec ts = {0, 2 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    res->wall_ms = proc_now_ms() - t0;
    if (WIFEXITED(status)) {
        res->exited = 1;
        res->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status) && !killed) {
        res->signaled = 1;
        res->signal = WTERMSIG(status);
        if (res->signal == SIGXCPU)
            res->cpu_limit = 1;
    }
    if (nfd[0] >= 0) {
        ssize_t n = read(nfd[0], res->isolation, sizeof res->isolation - 1);
        res->isolation[n > 0 ? n : 0] = '\0';
        close(nfd[0]);
    }
    /* A grandchild may still hold the group: make sure nothing outlives us. */
    kill(-pid, SIGKILL);
    return 0;
}

/* --------------------------------------------------------- argv, files --- */

void proc_cmd_init(struct proc_cmd *c)
{
    c->argc = 0;
    c->n_words = 0;
    c->n_extra = 0;
    c->overflow = 0;
    c->argv[0] = NULL;
}

void proc_cmd_split(struct proc_cmd *c, const char *s)
{
    if (!s || !*s)
        return;
    if (c->n_words >= PROC_CMD_WORDS ||
        proc_argv_split(s, c->words[c->n_words], sizeof c->words[0], c->argv, &c->argc, PROC_CMD_ARGS))
        c->overflow = 1;
    c->n_words++;
}

void proc_cmd_arg(struct proc_cmd *c, const char *fmt, ...)
{
    if (c->n_extra >= PROC_CMD_EXTRA || c->argc + 1 >= PROC_CMD_ARGS) {
        c->overflow = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->extra[c->n_extra], sizeof c->extra[0], fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof c->extra[0])
        c->overflow = 1;
    c->argv[c->argc++] = c->extra[c->n_extra++];
    c->argv[c->argc] = NULL;
}

int proc_file_write(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    int rc = w == len ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

void proc_rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
            continue; /* deeper than any work dir kope makes */
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            proc_rm_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

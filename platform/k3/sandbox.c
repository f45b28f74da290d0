/*
 * platform/k3/sandbox.c - run one child process under limits: the compiler
 * and every harness run go through here, so a candidate that crashes, hangs,
 * floods its output or allocates without end becomes a result, never a kope
 * crash or hang.
 *
 * Limits set in the child before exec: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE,
 * RLIMIT_CORE = 0 (no core dumps), PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG (the
 * child dies with kope), its own process group (the whole group is killed at
 * the timeout or the output cap), stdin from /dev/null, stdout+stderr into one
 * pipe read by the parent with a cap.
 *
 * What qemu-user cannot enforce (documented in docs/k3.md): RLIMIT_AS bounds
 * qemu's own address space, i.e. guest memory plus the emulator's code cache
 * (so the cap must leave qemu room); guest system calls are passed through to
 * the host, so containment of fork/open/socket at run time rests on the source
 * screen and object check, plus these rlimits. A seccomp filter is not
 * installed yet (native or not): that is the next step for boards.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/k3/k3.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int k3_argv_split(const char *cmd, char *buf, size_t buf_len, char **argv, int *argc, int max)
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

/* In the child: never returns. */
static void child_exec(const struct k3_run *r, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    if (out_fd > 2)
        close(out_fd);
    if (r->cwd && chdir(r->cwd) != 0)
        _exit(127);
    set_limit(RLIMIT_CORE, 0);
    if (r->cpu_s > 0)
        set_limit(RLIMIT_CPU, (uint64_t)r->cpu_s);
    if (r->mem_bytes)
        set_limit(RLIMIT_AS, r->mem_bytes);
    if (r->fsize_bytes)
        set_limit(RLIMIT_FSIZE, r->fsize_bytes);
    signal(SIGPIPE, SIG_DFL);
    execvp(r->argv[0], r->argv);
    dprintf(1, "kope: cannot run %s: %s\n", r->argv[0], strerror(errno));
    _exit(127);
}

int k3_child_run(const struct k3_run *r, struct k3_run_result *res, char *err, size_t err_len)
{
    memset(res, 0, sizeof *res);
    if (r->out && r->out_len)
        r->out[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, err_len, "pipe: %s", strerror(errno));
        return PLAT_ERR_SPAWN;
    }
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return PLAT_ERR_SPAWN;
    }
    if (pid == 0) {
        close(fds[0]);
        child_exec(r, fds[1]);
    }
    close(fds[1]);
    setpgid(pid, pid); /* also from the parent: no race with the kill below */

    uint64_t cap = r->output_cap ? r->output_cap : (1u << 20);
    size_t kept = 0;
    int killed = 0;
    char buf[8192];
    for (;;) {
        double left = r->timeout_ms > 0 ? r->timeout_ms - (now_ms() - t0) : 1e9;
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
            size_t take = (size_t)n < r->out_len - 1 - kept ? (size_t)n : r->out_len - 1 - kept;
            memcpy(r->out + kept, buf, take);
            kept += take;
            r->out[kept] = '\0';
            if (take < (size_t)n)
                res->truncated = 1;
        } else if (n > 0) {
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
     * stdout): keep the deadline while waiting for it too. */
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (w == 0) {
            if (r->timeout_ms > 0 && now_ms() - t0 >= r->timeout_ms) {
                res->timed_out = 1;
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                killed = 1;
            } else {
                struct timespec ts = {0, 2 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
    res->wall_ms = now_ms() - t0;
    if (WIFEXITED(status)) {
        res->exited = 1;
        res->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status) && !killed) {
        res->signaled = 1;
        res->signal = WTERMSIG(status);
        if (res->signal == SIGXCPU)
            res->cpu_limit = 1;
    }
    /* A grandchild may still hold the group: make sure nothing outlives us. */
    kill(-pid, SIGKILL);
    return 0;
}

/*
 * platform/ascend/run.c - run one child (cmake, the host program, msprof,
 * npu-smi) with a wall-clock timeout and an output cap, so a hanging kernel
 * or a toolkit that prints without end becomes a result, never a kope hang.
 *
 * The child gets its own process group (the whole group is killed at the
 * timeout or the cap: cmake and msprof start grandchildren), stdin from
 * /dev/null, stdout+stderr in one pipe, no core dumps, and dies with kope
 * (PR_SET_PDEATHSIG). No RLIMIT_AS: the ACL runtime maps device memory into
 * the host process, so an address-space cap would break real runs.
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

#include "platform/ascend/ascend.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* In the child: never returns. */
static void child_exec(const struct asc_run *r, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
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
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl);
    for (char *const *e = r->env_add; e && *e; e++)
        putenv(*e);
    signal(SIGPIPE, SIG_DFL);
    execvp(r->argv[0], r->argv);
    dprintf(1, "kope: cannot run %s: %s\n", r->argv[0], strerror(errno));
    _exit(127);
}

int asc_child_run(const struct asc_run *r, struct asc_run_result *res, char *err, size_t err_len)
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
    setpgid(pid, pid);

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
            continue;
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
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
    }
    kill(-pid, SIGKILL);
    return 0;
}

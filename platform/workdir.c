/*
 * platform/workdir.c - work folders named by their process, and the sweep of
 * dead processes' folders (platform/workdir.h).
 *
 * Everything below walks folders through descriptors (openat with
 * O_NOFOLLOW, unlinkat): a name in a shared $TMPDIR is never followed to
 * somewhere else.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/workdir.h"

#define OWNER_FILE ".owner"
#define RM_DEPTH_MAX 32 /* deeper than any work folder kope makes */

/* Remove everything inside the folder open as fd (fd stays open). */
static void rm_inside(int fd, int depth)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat sb;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(sb.st_mode) && depth < RM_DEPTH_MAX) {
            int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                rm_inside(sub, depth + 1);
                close(sub);
            }
            (void)unlinkat(fd, e->d_name, AT_REMOVEDIR); /* what cannot go stays: nothing else to do */
        } else {
            (void)unlinkat(fd, e->d_name, 0);
        }
    }
    closedir(d);
}

/* PREFIX-PID-XXXXXX: the pid, or 0 when name is not one of ours. */
static long name_pid(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] != '-')
        return 0;
    char *end;
    long pid = strtol(name + n + 1, &end, 10);
    return end != name + n + 1 && *end == '-' && end[1] && pid > 0 ? pid : 0;
}

int plat_workdir_sweep(const char *base, const char *prefix)
{
    int removed = 0;
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dup_fd = bfd >= 0 ? dup(bfd) : -1;
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        if (bfd >= 0)
            close(bfd);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = name_pid(e->d_name, prefix);
        if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* not ours, or its process is alive (or not ours to ask) */
        int fd = openat(bfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        if (fd < 0)
            continue;
        if (fstat(fd, &sb) != 0 || sb.st_uid != geteuid()) {
            close(fd);
            continue;
        }
        /* the pid may be another namespace's: a held owner lock says a
         * process still uses the folder */
        int ofd = openat(fd, OWNER_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (ofd >= 0 && flock(ofd, LOCK_EX | LOCK_NB) != 0) {
            close(ofd);
            close(fd);
            continue;
        }
        rm_inside(fd, 0);
        if (ofd >= 0)
            close(ofd);
        close(fd);
        removed += unlinkat(bfd, e->d_name, AT_REMOVEDIR) == 0;
    }
    closedir(d);
    close(bfd);
    return removed;
}

int plat_workdir_make(const char *base, const char *prefix, char *path, size_t cap, int *lock_fd)
{
    *lock_fd = -1;
    (void)plat_workdir_sweep(base, prefix); /* best effort: never a reason not to start */
    int n = snprintf(path, cap, "%s/%s-%ld-XXXXXX", base, prefix, (long)getpid());
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!mkdtemp(path))
        return -1;
    char owner[4200];
    snprintf(owner, sizeof owner, "%s/" OWNER_FILE, path);
    int fd = open(owner, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1; /* the folder still works; only the sweep's second check is lost */
    }
    *lock_fd = fd;
    return 0;
}

void plat_workdir_remove(const char *path, int lock_fd)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        rm_inside(fd, 0);
        close(fd);
        (void)rmdir(path); /* a folder that will not go is swept by a later kope */
    }
    if (lock_fd >= 0)
        close(lock_fd);
}

/*
 * store/lock.c - the lock file beside the store: the current writer's pid
 * and named POSIX record locks (store/lock.h has the why).
 *
 * Layout of DB.lock: bytes 0..7 hold the pid of the process inside a write
 * transaction (little-endian, 0 = none); named locks are one byte each at
 * 4096 + (FNV-1a 64 of the name mod 2^40). The file stays a few bytes long:
 * locks need no data at their offset.
 *
 * The process-wide table below is the one piece of global state in store/,
 * and it is global because the thing it guards is: POSIX record locks are
 * the process's, and closing any descriptor of the file would drop them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/lock.h"
#include "store/store.h"
#include "store/store_int.h"

#ifndef STORE_LOCK_FILES_MAX
#define STORE_LOCK_FILES_MAX 16 /* distinct stores one process has open at once */
#endif
#define LOCK_NAMED_BASE 4096
#define LOCK_NAMED_SPAN (1ull << 40)

struct lock_file {
    dev_t dev;
    ino_t ino;
    int fd;
    int users;
};

static pthread_mutex_t lf_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lock_file lf[STORE_LOCK_FILES_MAX];

static off_t named_offset(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (off_t)(LOCK_NAMED_BASE + (h % LOCK_NAMED_SPAN));
}

/* Open (or share) the lock file of st: its slot in the table, or -1 with
 * the reason in st's message. Never on a read-only handle: it would create
 * a file. */
static int lock_slot(struct store *st)
{
    struct store_int_lock *l = store_int_lock(st);
    if (l->slot >= 0)
        return l->slot;
    if (store_read_only(st) || l->failed)
        return -1;
    int slot = -1, fd = -1, free_slot = -1;
    struct stat sb;
    pthread_mutex_lock(&lf_mu);
    /* stat first: opening a second descriptor and closing it again would
     * drop this process's locks on the file */
    if (stat(l->path, &sb) == 0) {
        for (int i = 0; i < STORE_LOCK_FILES_MAX; i++)
            if (lf[i].users && lf[i].dev == sb.st_dev && lf[i].ino == sb.st_ino)
                slot = i;
    }
    for (int i = 0; i < STORE_LOCK_FILES_MAX && slot < 0 && free_slot < 0; i++)
        if (!lf[i].users)
            free_slot = i;
    if (slot < 0 && free_slot >= 0) {
        fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0 && fstat(fd, &sb) == 0) {
            lf[free_slot] = (struct lock_file){sb.st_dev, sb.st_ino, fd, 0};
            slot = free_slot;
        } else {
            store_int_set_msg(st, "%s: %s", l->path, strerror(errno));
            if (fd >= 0)
                close(fd);
        }
    } else if (slot < 0) {
        store_int_set_msg(st, "%s: more than %d stores open in one process", l->path, STORE_LOCK_FILES_MAX);
    }
    if (slot >= 0)
        lf[slot].users++;
    pthread_mutex_unlock(&lf_mu);
    l->slot = slot;
    l->failed = slot < 0;
    return slot;
}

void store_int_lock_close(struct store *st)
{
    struct store_int_lock *l = store_int_lock(st);
    if (l->slot < 0)
        return;
    for (int i = 0; i < l->n_held; i++) {
        struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = l->held[i], .l_len = 1};
        (void)fcntl(lf[l->slot].fd, F_SETLK, &fl); /* nothing to do if it fails: the close below drops it */
    }
    l->n_held = 0;
    pthread_mutex_lock(&lf_mu);
    if (--lf[l->slot].users == 0) {
        close(lf[l->slot].fd);
        memset(&lf[l->slot], 0, sizeof lf[l->slot]);
    }
    pthread_mutex_unlock(&lf_mu);
    l->slot = -1;
}

/* ----------------------------------------------------------- the writer */

void store_int_writer_note(struct store *st, int on)
{
    int slot = lock_slot(st);
    if (slot < 0)
        return; /* the writer stays unnamed; the write itself is SQLite's */
    int64_t pid = on ? (int64_t)getpid() : 0;
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)pid >> (8 * i));
    /* under SQLite's write lock: writers never race on these bytes */
    (void)pwrite(lf[slot].fd, b, sizeof b, 0); /* a note for messages only */
}

static int alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

long store_writer_pid(struct store *st)
{
    int slot = lock_slot(st);
    uint8_t b[8];
    if (slot < 0 || pread(lf[slot].fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    long pid = v > 0 && v < (1u << 31) ? (long)v : 0;
    return pid != (long)getpid() && alive(pid) ? pid : 0;
}

/* ----------------------------------------------------------- named locks */

static long holder_of(int fd, off_t off)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = off, .l_len = 1};
    if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
        return 0;
    return fl.l_pid > 0 ? (long)fl.l_pid : 0;
}

int store_lock_try(struct store *st, const char *name, long *holder)
{
    struct store_int_lock *l = store_int_lock(st);
    off_t off = named_offset(name);
    int slot = lock_slot(st);
    if (holder)
        *holder = 0;
    if (slot < 0) {
        if (store_read_only(st))
            store_int_set_msg(st, "a read-only store takes no locks");
        return STORE_ERR_READONLY;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = off, .l_len = 1};
    if (fcntl(lf[slot].fd, F_SETLK, &fl) != 0) {
        if (errno != EAGAIN && errno != EACCES) {
            store_int_set_msg(st, "lock %s: %s", name, strerror(errno));
            return STORE_ERR_SQL;
        }
        if (holder)
            *holder = holder_of(lf[slot].fd, off);
        store_int_set_msg(st, "%s is held by pid %ld", name, holder ? *holder : 0L);
        return STORE_ERR_LOCKED;
    }
    for (int i = 0; i < l->n_held; i++)
        if (l->held[i] == off)
            return 0;
    if (l->n_held < STORE_INT_LOCKS_HELD)
        l->held[l->n_held++] = off;
    return 0;
}

void store_lock_release(struct store *st, const char *name)
{
    struct store_int_lock *l = store_int_lock(st);
    off_t off = named_offset(name);
    if (l->slot < 0)
        return;
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = off, .l_len = 1};
    (void)fcntl(lf[l->slot].fd, F_SETLK, &fl); /* unlocking a byte never fails on a valid fd */
    for (int i = 0; i < l->n_held; i++)
        if (l->held[i] == off) {
            l->held[i] = l->held[--l->n_held];
            break;
        }
}

long store_lock_holder(struct store *st, const char *name)
{
    int slot = lock_slot(st);
    return slot < 0 ? 0 : holder_of(lf[slot].fd, named_offset(name));
}

/*
 * platform/workdir.h - a target's work folder in $TMPDIR (or the configured
 * work dir), and the removal of folders left behind by kope processes that
 * are gone.
 *
 * A folder is named PREFIX-PID-XXXXXX (e.g. kope-k3-4211-Qz81aP) and holds
 * a file .owner on which its process keeps an flock for the folder's life.
 * A kope that ends normally, or stops on SIGINT / SIGTERM at a step boundary
 * (core/interrupt.h), removes its own folders when it closes its platform;
 * one that is killed (SIGKILL, a crash, a second Ctrl-C, a power cut) leaves
 * them, and the next kope that opens a platform removes them: a folder whose
 * PID is not a live process and whose .owner nobody holds. The pid is the
 * quick test (a live pid: never touched); the flock confirms it, so a folder
 * of a live kope in another PID namespace sharing $TMPDIR is never removed.
 * Only real folders owned by this user are touched, never followed through
 * a symlink.
 */
#ifndef KOPE_PLAT_WORKDIR_H
#define KOPE_PLAT_WORKDIR_H

#include <stddef.h>

/* Remove dead processes' PREFIX-PID-* folders in base, then create
 * base/PREFIX-PID-XXXXXX (mode 0700) and its held .owner lock. path gets the
 * folder (cap >= strlen(base) + strlen(prefix) + 32), *lock_fd the lock to
 * pass to plat_workdir_remove. 0, or -1 with errno set. */
int plat_workdir_make(const char *base, const char *prefix, char *path, size_t cap, int *lock_fd);
/* Remove the folder (its whole tree) and drop its lock (lock_fd < 0: none). */
void plat_workdir_remove(const char *path, int lock_fd);
/* The sweep alone: how many stale folders were removed. */
int plat_workdir_sweep(const char *base, const char *prefix);

#endif

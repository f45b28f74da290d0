/*
 * store/lock.h - who holds what in a store shared by several kope processes.
 *
 * SQLite serializes the writes themselves (one write transaction at a time,
 * the others wait: store/store.c's busy handler). Two things it cannot say
 * are kept here, in one small file beside the store, DB.lock (mode 0600,
 * created by the first handle that writes; it holds no data worth a backup):
 *
 *  - who is writing now: store_begin notes its pid at offset 0 once it holds
 *    the write lock and commit / rollback clear it, so a process waiting for
 *    the lock can name the writer ("waiting for the store: pid N is writing");
 *  - who holds a named lock for longer: a `kope run` for its whole life, a
 *    task while a run works on it. These are POSIX record locks on one byte
 *    each, at an offset hashed from the name. The kernel drops them when the
 *    holder ends, however it ends (exit, crash, SIGKILL, power cut), so a
 *    lock that is held means a live process: a live run is told apart from
 *    an interrupted one without a lease or a clock, and F_GETLK names the
 *    holder's pid.
 *
 * POSIX record locks belong to the process, not to a descriptor, and closing
 * any descriptor of the file drops all of the process's locks on it. So the
 * lock file is opened once per process and shared by every handle on the
 * same file (a small table by device and inode, under a mutex: `kope serve`
 * opens one handle per session thread), and closed when the last handle that
 * uses it closes. Within one process the locks do not exclude each other
 * (POSIX semantics): they order processes, not threads.
 *
 * Errors are STORE_ERR_* (store/store.h); STORE_ERR_LOCKED names a lock held
 * by another live process.
 */
#ifndef KOPE_STORE_LOCK_H
#define KOPE_STORE_LOCK_H

struct store;

/* Take the named lock without waiting. 0 when this process holds it now
 * (also when it already did); STORE_ERR_LOCKED when another process holds
 * it (its pid in *holder, 0 if the kernel would not say); STORE_ERR_READONLY
 * when the lock file cannot be opened for writing (message in store_errmsg). */
int store_lock_try(struct store *st, const char *name, long *holder);
/* Give the named lock back (a no-op when not held). */
void store_lock_release(struct store *st, const char *name);
/* The pid of another process holding the named lock, or 0 (free, held by
 * this process, or no lock file). Works on a read-only handle. */
long store_lock_holder(struct store *st, const char *name);
/* The pid the process inside the current write transaction noted, if it
 * is alive and not this process; 0 when unknown (none noted, or a writer
 * that is not a kope store_begin: e.g. a single autocommit statement). */
long store_writer_pid(struct store *st);

#endif

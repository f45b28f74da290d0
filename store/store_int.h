/*
 * store/store_int.h - private to store/: what the other files of the module
 * (store/queue.c, store/lock.c) need from store.c and from each other.
 * Never included outside store/.
 */
#ifndef KOPE_STORE_INT_H
#define KOPE_STORE_INT_H

#include <sys/types.h>

#include <sqlite3.h>

struct store;

/* The handle's connection (owned by the store). */
sqlite3 *store_int_db(struct store *st);
/* Map an SQLite result code to STORE_ERR_*, keeping the message in the handle. */
int store_int_fail(struct store *st, int sqlrc);
/* Set the handle's sticky message. */
void store_int_set_msg(struct store *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A handle's view of its lock file (store/lock.c): the path DB.lock, its
 * slot in the process-wide table once opened, the named locks it holds. */
#define STORE_INT_LOCKS_HELD 8
struct store_int_lock {
    char path[4200];
    int slot;            /* -1 until opened */
    int failed;          /* could not be opened: not tried again */
    off_t held[STORE_INT_LOCKS_HELD];
    int n_held;
};
struct store_int_lock *store_int_lock(struct store *st);
/* Note (on = 1) or clear this process's pid as the writer; called with the
 * write lock held. A lock file that cannot be opened is skipped. */
void store_int_writer_note(struct store *st, int on);
/* Release the handle's named locks and its share of the lock file. */
void store_int_lock_close(struct store *st);

#endif

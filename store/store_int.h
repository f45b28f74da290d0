/*
 * store/store_int.h - private to store/: what the other files of the module
 * (store/queue.c) need from store.c. Never included outside store/.
 */
#ifndef KOPE_STORE_INT_H
#define KOPE_STORE_INT_H

#include <sqlite3.h>

struct store;

/* The handle's connection (owned by the store). */
sqlite3 *store_int_db(struct store *st);
/* Map an SQLite result code to STORE_ERR_*, keeping the message in the handle. */
int store_int_fail(struct store *st, int sqlrc);

#endif

/*
 * core/err.h - kope's error codes and their text.
 *
 * Every function that can fail returns int: 0 on success, a negative code on
 * failure. Each module owns a band so a logged number names its layer:
 *     -1 ..  -99  core      (KOPE_ERR_*, below)
 *   -100 .. -199  store/    (STORE_ERR_*, store/store.h)
 *   -200 .. -299  net/      (NET_ERR_*,   in the net/ headers)
 *   -300 .. -399  platform/ (PLAT_ERR_*,  platform/platform.h)
 * kope_strerror() turns any of them into text by asking the owning module.
 */
#ifndef KOPE_ERR_H
#define KOPE_ERR_H

enum kope_err {
    KOPE_OK = 0,
    KOPE_ERR_INTERNAL = -1, /* a bug: should not happen */
    KOPE_ERR_NOMEM = -2,
    KOPE_ERR_USAGE = -3,    /* bad command line */
    KOPE_ERR_IO = -4,       /* file could not be read or written */
    KOPE_ERR_PARSE = -5,    /* malformed JSON or record */
    KOPE_ERR_CANON = -6,    /* value has no canonical form (NaN, dup key, bad UTF-8) */
    KOPE_ERR_HASH = -7,     /* a record's id is not the hash of its content */
    KOPE_ERR_CHAIN = -8,    /* seq gap, fork, reorder, wrong prev */
    KOPE_ERR_SIG = -9,      /* signature does not verify */
    KOPE_ERR_UNCOVERED = -10, /* records not covered by a signed checkpoint */
    KOPE_ERR_NOTFOUND = -11,
    KOPE_ERR_NOINIT = -12,  /* no device identity: run `kope init` */
    KOPE_ERR_TOOBIG = -13,  /* input over a cap */
    KOPE_ERR_CONFIG = -14,  /* config file invalid */
    KOPE_ERR_EXISTS = -15,
    KOPE_ERR_BLOB = -16,    /* referenced blob missing or wrong hash */
    KOPE_ERR_TRUST = -17,   /* signed, but not by a certificate from a trusted CA */
    KOPE_ERR_REVOKED = -18, /* the origin's fleet CA revoked its records after a seq */
    KOPE_ERR_SECRET = -19,  /* text holds a secret kope keeps (core/secret.h): refused */
    KOPE_ERR_INTERRUPTED = -20, /* SIGINT / SIGTERM: stopped at a step boundary (core/interrupt.h) */
    KOPE_ERR_IN_USE = -21,  /* another live kope process is running the same task or run */
};

/* Text for any kope error code (any band). Never NULL; static storage. */
const char *kope_strerror(int code);

#endif /* KOPE_ERR_H */

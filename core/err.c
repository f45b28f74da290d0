/* core/err.c - error text for every band (see err.h). */
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "net/neterr.h"
#include "platform/platform.h"
#include "store/store.h"

static const char *core_text(int code)
{
    switch (code) {
    case KOPE_OK: return "ok";
    case KOPE_ERR_INTERNAL: return "internal error (a bug: please report it)";
    case KOPE_ERR_NOMEM: return "out of memory";
    case KOPE_ERR_USAGE: return "invalid arguments";
    case KOPE_ERR_IO: return "file could not be read or written";
    case KOPE_ERR_PARSE: return "malformed input";
    case KOPE_ERR_CANON: return "value has no canonical form";
    case KOPE_ERR_HASH: return "record id does not match its content";
    case KOPE_ERR_CHAIN: return "record chain broken (gap, fork or reorder)";
    case KOPE_ERR_SIG: return "signature does not verify";
    case KOPE_ERR_UNCOVERED: return "records not covered by a signed checkpoint";
    case KOPE_ERR_NOTFOUND: return "not found";
    case KOPE_ERR_NOINIT: return "no device identity: run `kope init`";
    case KOPE_ERR_TOOBIG: return "input over its size limit";
    case KOPE_ERR_CONFIG: return "config file invalid";
    case KOPE_ERR_EXISTS: return "already exists";
    case KOPE_ERR_BLOB: return "blob missing or does not match its hash";
    case KOPE_ERR_TRUST: return "not signed by a certificate from a trusted CA";
    case KOPE_ERR_REVOKED: return "the origin's records after this seq are revoked by its fleet CA";
    case KOPE_ERR_SECRET: return "the text holds a secret kope keeps (its API key or a private key): refused";
    case KOPE_ERR_INTERRUPTED: return "interrupted (the step in progress was finished or rolled back)";
    case KOPE_ERR_IN_USE: return "another kope process is running it";
    default: return "unknown error";
    }
}

/* Each module owns its band and its text; this only knows the bands. */
const char *kope_strerror(int code)
{
    if (code <= -100 && code > -200)
        return store_strerror(code);
    if (code <= -200 && code > -300)
        return net_strerror(code);
    if (code <= -300 && code > -400)
        return platform_strerror(code);
    return core_text(code);
}

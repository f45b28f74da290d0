/*
 * core/graph/canon.h - the canonical JSON form that record ids are hashed over.
 *
 * Byte-exact rules (docs/RECORDS.md repeats them):
 *  - no whitespace outside strings;
 *  - object keys sorted by their UTF-8 bytes (memcmp order); duplicate keys
 *    are an error;
 *  - strings: valid UTF-8 only (no overlong forms, no surrogates); escaped
 *    are '"' and '\\' and the control characters below 0x20, as \b \f \n \r
 *    \t or \u00xx (lower-case hex); everything else is written raw;
 *  - numbers: finite only. An integral value with |v| < 2^53 is written as a
 *    plain integer ("-0" becomes "0"); any other value in the shortest
 *    "%.Ng" form (N = 1..17) that reads back to the same double;
 *  - true, false, null as themselves; nesting depth at most CANON_MAX_DEPTH.
 */
#ifndef KOPE_CANON_H
#define KOPE_CANON_H

#include "core/buf.h"

#ifndef CANON_MAX_DEPTH
#define CANON_MAX_DEPTH 32
#endif

struct cJSON;

/* Append the canonical form of v to b. Returns 0, KOPE_ERR_CANON (no
 * canonical form: NaN, duplicate key, bad UTF-8, too deep) or the buffer's
 * error (KOPE_ERR_TOOBIG / KOPE_ERR_NOMEM). */
int canon_write(const struct cJSON *v, struct buf *b);

/* Append one string in canonical form (quoted, escaped). */
int canon_write_string(const char *s, struct buf *b);

/* Check that s[0..len) is valid UTF-8 (as canon_write requires). */
int canon_utf8_valid(const char *s, size_t len);

#endif

/*
 * core/jsonkeys.h - refuse a JSON file with a key kope does not read.
 *
 * A hand-written file (kope.json, a task suite) with a typo in a key name
 * ("base_ulr", "tolerence") would otherwise parse, and kope would go on with
 * the default in its place. jsonkeys_check walks the text (cJSON keeps no
 * positions) and names the first unknown key or value of the wrong JSON
 * type at FILE:LINE:COLUMN, with "did you mean" for a near miss and a hint
 * line listing the keys that are read there.
 *
 * The keys are a table of dotted paths. A path segment "*" matches any one
 * name (platform.* is every target's section); a segment ending "[]" is an
 * element of the array named before it (tasks[].name is the name of every
 * task): an array is walked only when its elements have an entry, else its
 * contents are not checked. An exact entry wins over a "*" one.
 *
 * The caller parses the text first (cJSON): the walk assumes valid JSON and
 * only tracks structure. Nesting is capped at JSONKEYS_MAX_DEPTH.
 */
#ifndef KOPE_JSONKEYS_H
#define KOPE_JSONKEYS_H

#include <stddef.h>

#ifndef JSONKEYS_MAX_DEPTH
#define JSONKEYS_MAX_DEPTH 32
#endif
#ifndef JSONKEYS_PATH_MAX
#define JSONKEYS_PATH_MAX 256
#endif

/* JK_ANY: any value (a key known only so that its reader can refuse it
 * with a reason of its own, or free text). */
enum jk_type { JK_STR, JK_NUM, JK_OBJ, JK_ARR, JK_ANY };

struct jk_key {
    const char *path;
    enum jk_type type;
};

/* Check every key of text (len bytes of valid JSON, an object) against
 * keys[0..n). file names the text in messages. Returns 0, or
 * KOPE_ERR_PARSE with "FILE:LINE:COL: unknown key \"a.b\" (did you mean
 * \"c\"?)\nhint: kope reads these keys under a: c, d" (or "... \"a.b\"
 * must be a string", or the depth cap) in err. */
int jsonkeys_check(const char *file, const char *text, size_t len, const struct jk_key *keys, size_t n,
                   char *err, size_t err_len);

/* "FILE:LINE:COL" of byte off of text (1-based; columns in bytes). */
void jsonkeys_where(const char *file, const char *text, size_t off, char *out, size_t cap);

#endif

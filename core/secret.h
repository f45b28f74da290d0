/*
 * core/secret.h - the last line: kope never stores, prompts or syncs a byte
 * string equal to a secret it holds.
 *
 * Every earlier layer (the compile sandbox, the diagnostics cleaner, the
 * cleared environment of every child) keeps secrets away from what a
 * candidate or a compiler can quote; this one does not trust them. Whoever
 * holds a secret registers it: the LLM settings their API key
 * (core/cli/llm_conf.c), the device key's loader its private key
 * (core/graph/graph.c), the fleet commands the CA's key (core/cli/cli_sync.c).
 * Where text enters a record or a blob (core/graph), where a prompt is
 * built (core/context, core/agent/prompt.c) and where sync sends a line
 * (core/graph/sync.c), one scan (secret_find) looks for every registered
 * string. A hit in diagnostics is redacted (secret_redact: "[redacted]");
 * anywhere else it is refused with KOPE_ERR_SECRET and a message naming
 * what kind of secret it was, never the secret.
 *
 * A private key is registered as its PEM text, every base64 line of the
 * PEM's body, its raw private scalar and that scalar in lower- and
 * upper-case hex: the forms a key file's content or a key dump takes.
 * Strings shorter than SECRET_MIN_LEN are not registered (they would match
 * ordinary text; a key that short is no key).
 *
 * The registry is process-wide (the secrets are the process's own, and the
 * sync server's threads scan it), guarded by a mutex, and holds copies,
 * wiped at exit (atexit) or by secret_forget_all. A process that holds many
 * keys (a test making many devices) just registers them all.
 */
#ifndef KOPE_CORE_SECRET_H
#define KOPE_CORE_SECRET_H

#include <stddef.h>

#define SECRET_MIN_LEN 8
#ifndef SECRET_MAX
#define SECRET_MAX 4096 /* registered strings (a key is 7 or so); more is KOPE_ERR_TOOBIG */
#endif
#define SECRET_REDACTED "[redacted]"

/* Register a copy of bytes[0..len) under a label ("the LLM API key").
 * 0, KOPE_ERR_NOMEM, KOPE_ERR_TOOBIG (registry full); a string under
 * SECRET_MIN_LEN or one already registered is ignored (0). */
int secret_add(const void *bytes, size_t len, const char *what);

/* Register a PEM private key in every form above (it is parsed to reach
 * the raw scalar; a PEM that does not parse is still registered as text
 * and by its lines). 0 or an error of secret_add. */
int secret_add_key_pem(const char *pem, size_t len, const char *what);

/* The label of the first registered secret that occurs in text[0..len),
 * or NULL. */
const char *secret_find(const void *text, size_t len);

/* In the NUL-terminated string s (a buffer of cap bytes), replace every
 * occurrence of a registered secret by SECRET_REDACTED (cut at cap-1 if the
 * result grows past it). Returns the number of replacements. */
int secret_redact(char *s, size_t cap);

/* Wipe and forget every registered secret (also run at exit). */
void secret_forget_all(void);

#endif

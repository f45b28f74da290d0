/*
 * core/context/reply.h - the agent's side of an LLM reply: the format kope asks for
 * and what it takes from the message's content. net/ speaks HTTP, TLS and
 * the OpenAI chat protocol and returns the message (net/llm_reply.h); what
 * a kernel is belongs here, and it is extracted once, when a queued reply
 * is applied (core/agent/pump.c).
 *
 * Pure functions over outside bytes (no I/O), fuzzed with the JSON parser
 * (tests/fuzz_llm_reply.c). From the content they extract:
 *
 *   the kernel   - the fenced code block (``` or ~~~, language C-like or
 *                  unnamed) that defines kope_kernel (a word, then (...),
 *                  then '{', outside comments and strings), not the longest:
 *                  a self-test block beside the kernel is not the kernel.
 *                  Two blocks defining it: no kernel (no_code says which).
 *                  No block defining it: the longest (the screen then names
 *                  what is missing). When the reply has several blocks,
 *                  taken names the one taken. Failing any fence, an unfenced
 *                  fallback: from the first line that starts C code
 *                  (#include/#define/#pragma or a function head) to the last
 *                  line that starts with '}', braces balanced;
 *   the decision - "TAGS:" and "RATIONALE:" lines, the format reply_format
 *                  writes (markdown decoration tolerated).
 *
 * A reply without a usable kernel is an outcome, not an error: kernel is
 * NULL and no_code says why. Code is never taken from reasoning_content (the
 * model's scratch work: net/ keeps it apart). Every output is capped.
 */
#ifndef KOPE_REPLY_H
#define KOPE_REPLY_H

#include <stddef.h>

#ifndef REPLY_MAX_TAGS
#define REPLY_MAX_TAGS 16
#endif
#ifndef REPLY_MAX_TAG_LEN
#define REPLY_MAX_TAG_LEN 48
#endif
#ifndef REPLY_MAX_RATIONALE
#define REPLY_MAX_RATIONALE 4096
#endif
#define REPLY_FORMAT_MAX 512 /* bytes reply_format writes, with its NUL */

/* The reply format for the system prompt, its code fence named lang (the
 * target's plat_prompt.lang; NULL or "" = "c"), into buf. Returns the
 * length it needed (>= cap: cut). */
size_t reply_format(const char *lang, char *buf, size_t cap);

enum reply_code {
    REPLY_CODE_NONE = 0,   /* no usable kernel: see no_code */
    REPLY_CODE_FENCED,     /* taken from a fenced code block */
    REPLY_CODE_UNFENCED,   /* taken by the unfenced fallback */
};

struct reply {
    enum reply_code code;
    char *kernel;          /* owned; NULL when code == REPLY_CODE_NONE */
    char kernel_lang[16];  /* fence info word, lower case, "" if none */
    char no_code[160];     /* why there is no kernel ("" when there is one) */
    char taken[128];       /* which of several blocks was taken, and why ("" = one block) */
    char *tags[REPLY_MAX_TAGS]; /* owned, lower-case [a-z0-9._+-] */
    size_t n_tags;
    char *rationale;       /* owned, NULL if the reply had none */
};

/* Zero a reply (cannot fail). */
void reply_init(struct reply *r);
/* Free everything a reply owns and re-init it; accepts an init'ed reply. */
void reply_free(struct reply *r);

/* Extract kernel and decision from text (a message's content, NUL-
 * terminated; NULL = empty) into r, replacing any earlier extraction.
 * Returns 0 or KOPE_ERR_NOMEM. */
int reply_extract(const char *text, struct reply *r);

#endif /* KOPE_REPLY_H */

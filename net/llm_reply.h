/*
 * net/llm_reply.h - parse an OpenAI-compatible chat completion reply.
 *
 * Pure functions over outside bytes (no I/O, no curl), so they can be fuzzed
 * alone (tests/fuzz_llm_reply.c). From the JSON body they take
 * choices[0].message.content, .reasoning_content (or .reasoning, as some
 * servers name it), choices[0].finish_reason, model and usage; from the
 * content they extract:
 *
 *   the kernel   - the longest fenced code block (``` or ~~~) whose language
 *                  is C-like or unnamed; failing any fence, an unfenced
 *                  fallback: from the first line that starts C code
 *                  (#include/#define/#pragma or a function head) to the last
 *                  line that starts with '}', braces balanced;
 *   the decision - "TAGS:" and "RATIONALE:" lines, the format in
 *                  LLM_REPLY_FORMAT below (markdown decoration tolerated).
 *
 * A reply without a usable kernel is an outcome, not an error: kernel is
 * NULL and no_code says why. Code is never taken from reasoning_content (the
 * model's scratch work). Every output is capped (LLM_MAX_TAGS, ...).
 */
#ifndef KOPE_NET_LLM_REPLY_H
#define KOPE_NET_LLM_REPLY_H

#include <stddef.h>

#include "net/neterr.h"

#ifndef LLM_MAX_TAGS
#define LLM_MAX_TAGS 16
#endif
#ifndef LLM_MAX_TAG_LEN
#define LLM_MAX_TAG_LEN 48
#endif
#ifndef LLM_MAX_RATIONALE
#define LLM_MAX_RATIONALE 4096
#endif

/* The reply format kope asks for; the agent puts it in its system prompt. */
extern const char LLM_REPLY_FORMAT[];

enum llm_code {
    LLM_CODE_NONE = 0,   /* no usable kernel: see no_code */
    LLM_CODE_FENCED,     /* taken from a fenced code block */
    LLM_CODE_UNFENCED,   /* taken by the unfenced fallback */
};

struct llm_reply {
    /* from the JSON (all owned, NUL-terminated, NULL when absent) */
    char *content;
    char *reasoning;       /* reasoning_content */
    char *model;           /* the model the server says answered */
    char *finish_reason;   /* "stop", "length", ... */
    long n_tokens_in;      /* usage.prompt_tokens, -1 if absent */
    long n_tokens_out;     /* usage.completion_tokens, -1 if absent */
    /* extracted from content */
    enum llm_code code;
    char *kernel;          /* owned; NULL when code == LLM_CODE_NONE */
    char kernel_lang[16];  /* fence info word, lower case, "" if none */
    char no_code[160];     /* why there is no kernel ("" when there is one) */
    char *tags[LLM_MAX_TAGS]; /* owned, lower-case [a-z0-9._+-] */
    size_t n_tags;
    char *rationale;       /* owned, NULL if the reply had none */
    /* filled by llm_chat(): transport facts */
    long http_status;
    int attempts;          /* requests sent, 1 = no retry */
    double latency_ms;     /* whole call, retries and waits included */
    char error[512];       /* text for a failure, "" on success */
};

/* Zero a reply (cannot fail). */
void llm_reply_init(struct llm_reply *r);
/* Free everything a reply owns and re-init it; accepts an init'ed reply. */
void llm_reply_free(struct llm_reply *r);

/* Parse a 2xx reply body of len bytes (need not be NUL-terminated) into r
 * (init'ed by the caller), then extract kernel and decision. Returns 0, or
 * NET_ERR_REPLY with r->error set when the body is not a chat completion,
 * or NET_ERR_NOMEM. "No code" is not an error. */
int llm_reply_parse(const char *body, size_t len, struct llm_reply *r);

/* Extract kernel and decision from text (content) into r, replacing any
 * earlier extraction. Returns 0 or NET_ERR_NOMEM. */
int llm_reply_extract(const char *text, struct llm_reply *r);

/* The server's own error text from an error body ({"error":{"message":..}}
 * or {"error":"..."} or {"message":..} or {"detail":..}), printable ASCII
 * only, at most msg_len-1 bytes; "" when there is none. */
void llm_error_text(const char *body, size_t len, char *msg, size_t msg_len);

#endif /* KOPE_NET_LLM_REPLY_H */

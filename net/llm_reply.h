/*
 * net/llm_reply.h - parse an OpenAI-compatible chat completion reply.
 *
 * Pure functions over outside bytes (no I/O, no curl), so they can be fuzzed
 * alone (tests/fuzz_llm_reply.c). From the JSON body they take
 * choices[0].message.content, .reasoning_content (or .reasoning, as some
 * servers name it), choices[0].finish_reason, model and usage: the message,
 * nothing more. The kernel and the decision in the content are the agent's
 * to find (core/context/reply.h), once, when the reply is applied.
 */
#ifndef KOPE_NET_LLM_REPLY_H
#define KOPE_NET_LLM_REPLY_H

#include <stddef.h>

#include "net/neterr.h"

struct llm_reply {
    /* from the JSON (all owned, NUL-terminated, NULL when absent) */
    char *content;
    char *reasoning;       /* reasoning_content */
    char *model;           /* the model the server says answered */
    char *finish_reason;   /* "stop", "length", ... */
    long n_tokens_in;      /* usage.prompt_tokens, -1 if absent */
    long n_tokens_out;     /* usage.completion_tokens, -1 if absent */
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
 * (init'ed by the caller). Returns 0, or NET_ERR_REPLY with r->error set
 * when the body is not a chat completion, or NET_ERR_NOMEM. An empty or
 * missing content is not an error. */
int llm_reply_parse(const char *body, size_t len, struct llm_reply *r);

/* The server's own error text from an error body ({"error":{"message":..}}
 * or {"error":"..."} or {"message":..} or {"detail":..}), printable ASCII
 * only, at most msg_len-1 bytes; "" when there is none. */
void llm_error_text(const char *body, size_t len, char *msg, size_t msg_len);

#endif /* KOPE_NET_LLM_REPLY_H */

/*
 * tests/fuzz_llm_reply.c - libFuzzer target for the LLM reply parser
 * (net/llm_reply.c) and the agent's extraction (core/context/reply.c): arbitrary
 * bytes as a chat completion body (its content, if any, extracted as the
 * queue does), then as raw content for kernel / decision extraction, then
 * as an error body.
 * Not built by default; needs clang-19 with compiler-rt (Debian package
 * libclang-rt-19-dev). From the repo root:
 *
 *   make fuzz       # every tests/fuzz_*.c, into build/x86_64-fuzz/
 *   make fuzz-run FUZZ_SECONDS=60   # each in turn, on build/x86_64-fuzz/NAME.corpus
 *   build/x86_64-fuzz/fuzz_llm_reply -max_total_time=60 DIR   # this one alone
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/context/reply.h"
#include "net/llm_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct llm_reply r;
    struct reply x;
    char msg[200];
    llm_reply_init(&r);
    reply_init(&x);
    if (llm_reply_parse((const char *)data, size, &r) == 0)
        (void)reply_extract(r.content, &x);
    llm_reply_free(&r);
    reply_free(&x);

    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    (void)reply_extract(text, &x);
    if (x.kernel && x.code == REPLY_CODE_NONE)
        abort();
    if (x.n_tags > REPLY_MAX_TAGS || (x.rationale && strlen(x.rationale) > REPLY_MAX_RATIONALE))
        abort();
    reply_free(&x);
    free(text);

    llm_error_text((const char *)data, size, msg, sizeof msg);
    return 0;
}

/*
 * tests/fuzz_llm_reply.c - libFuzzer target for the LLM reply parser
 * (net/llm_reply.c): arbitrary bytes as a chat completion body, then as raw
 * content for kernel / decision extraction, then as an error body.
 * Not built by default; needs clang-19 with compiler-rt (Debian package
 * libclang-rt-19-dev). Build and run (from the repo root):
 *
 *   S=build/deps/sysroot-x86_64
 *   clang-19 -g -O1 -fsanitize=fuzzer,address,undefined -I. -isystem $S/include \
 *     tests/fuzz_llm_reply.c net/llm_reply.c $S/lib/libcjson.a -o build/fuzz_llm_reply
 *   mkdir -p build/fuzz-corpus && build/fuzz_llm_reply -max_total_time=60 build/fuzz-corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/llm_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct llm_reply r;
    char msg[200];
    llm_reply_init(&r);
    (void)llm_reply_parse((const char *)data, size, &r);
    llm_reply_free(&r);

    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    llm_reply_init(&r);
    (void)llm_reply_extract(text, &r);
    if (r.kernel && r.code == LLM_CODE_NONE)
        abort();
    if (r.n_tags > LLM_MAX_TAGS || (r.rationale && strlen(r.rationale) > LLM_MAX_RATIONALE))
        abort();
    llm_reply_free(&r);
    free(text);

    llm_error_text((const char *)data, size, msg, sizeof msg);
    return 0;
}

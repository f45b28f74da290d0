/*
 * tests/fuzz_sync_frame.c - libFuzzer target for the peer sync frame parser
 * (net/sync_frame.c): arbitrary bytes as a stream of frames, each accepted
 * frame's payload then parsed as the JSON the session would read. Checks the
 * parser's promises: an accepted frame lies inside the input, is within its
 * type's cap, has no NUL or newline, and its header round-trips.
 * Not built by default; needs clang-19 with compiler-rt (libclang-rt-19-dev).
 * From the repo root:
 *
 *   make fuzz       # every tests/fuzz_*.c, into build/x86_64-fuzz/
 *   make fuzz-run FUZZ_SECONDS=60   # each in turn, on build/x86_64-fuzz/NAME.corpus
 *   build/x86_64-fuzz/fuzz_sync_frame -max_total_time=60 DIR   # this one alone
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "net/neterr.h"
#include "net/sync_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        int type = 0;
        const uint8_t *p = NULL;
        size_t len = 0, used = 0;
        int rc = net_sync_frame_parse(data + off, size - off, &type, &p, &len, &used);
        if (rc)
            break; /* incomplete (1) or refused: a session would stop here */
        if (used != NET_SYNC_HDR + len || used > size - off || p != data + off + NET_SYNC_HDR ||
            len > net_sync_type_max(type) || memchr(p, 0, len) || memchr(p, '\n', len))
            abort();
        uint8_t hdr[NET_SYNC_HDR];
        int t2;
        size_t l2;
        net_sync_hdr_write(hdr, type, len);
        if (net_sync_hdr_parse(hdr, &t2, &l2) || t2 != type || l2 != len)
            abort();
        cJSON *j = cJSON_ParseWithLength((const char *)p, len);
        if (j && type == NET_SYNC_VECTOR)
            for (const cJSON *e = j->child; e; e = e->next)
                (void)(cJSON_IsNumber(e) && e->string && strlen(e->string) == 64);
        cJSON_Delete(j);
        off += used;
    }
    return 0;
}

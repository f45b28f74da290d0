/*
 * tests/fuzz_graph_import.c - libFuzzer target for the shard parser and
 * verifier (core/graph/graph.c graph_import): the bytes a peer or a file hands us.
 * Not built by default; needs clang-19 with compiler-rt (libclang-rt-19-dev).
 * From the repo root:
 *
 *   make fuzz       # every tests/fuzz_*.c, into build/x86_64-fuzz/
 *   make fuzz-run FUZZ_SECONDS=60   # each in turn, on build/x86_64-fuzz/NAME.corpus
 *   build/x86_64-fuzz/fuzz_graph_import -max_total_time=60 DIR   # this one alone
 *
 * Each input is imported into a fresh in-memory store, whose two first
 * lines are a valid header and a real device's identity + checkpoint, so
 * the fuzzer starts past the header check and can reach chain, signature
 * and blob logic. Invariants: import never crashes or leaks; the store
 * stays consistent (integrity_check); stats add up (every stored record was
 * counted as accepted).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/graph/graph.h"
#include "store/store.h"

static char *seed;   /* header + a real identity run, made once */
static size_t seed_len;

static void make_seed(void)
{
    struct store *st;
    struct graph g;
    char err[256], key[64];
    snprintf(key, sizeof key, "/tmp/kope-fuzz-%d.key", (int)getpid());
    unlink(key);
    if (store_open(":memory:", &st, err, sizeof err))
        abort();
    graph_init(&g, st);
    if (graph_identity_create(&g, key, "k3"))
        abort();
    unlink(key);
    FILE *f = open_memstream(&seed, &seed_len);
    if (graph_export(&g, NULL, f, NULL))
        abort();
    fclose(f);
    graph_free(&g);
    store_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct store *st;
    struct graph g;
    struct graph_import_stats s;
    char err[256];
    if (!seed)
        make_seed();
    char *in = malloc(seed_len + size + 1);
    memcpy(in, seed, seed_len);
    memcpy(in + seed_len, data, size);
    FILE *f = fmemopen(in, seed_len + size, "r");
    if (store_open(":memory:", &st, err, sizeof err))
        abort();
    graph_init(&g, st);
    graph_import(&g, f, &s);
    fclose(f);
    struct store_stats ss;
    if (store_integrity_check(st) || store_stats_get(st, &ss) || ss.n_records != s.accepted)
        abort();
    graph_free(&g);
    store_close(st);
    free(in);
    return 0;
}

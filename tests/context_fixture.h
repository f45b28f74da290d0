/*
 * tests/context_fixture.h - a small experience graph for the context and
 * retrieval tests (tests/test_context*.c) and bench/context.c: tasks on
 * several targets, each with decisions (kernel sources as blobs) and their
 * outcomes, built through the real graph API.
 *
 * Header-only (static functions) so each program includes it once; errors
 * abort with a message, since a fixture that cannot be built is a broken test.
 */
#ifndef KOPE_CONTEXT_FIXTURE_H
#define KOPE_CONTEXT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "store/store.h"

struct fx {
    struct store *st;
    struct graph g;
};

static void fx_die(const char *what, int rc)
{
    fprintf(stderr, "context fixture: %s failed: %d\n", what, rc);
    abort();
}

/* Open (creating) the store at db_path with a fresh identity at key_path. */
static void fx_open(struct fx *f, const char *db_path, const char *key_path)
{
    char err[256];
    int rc;
    memset(f, 0, sizeof *f);
    unlink(db_path);
    unlink(key_path);
    if ((rc = store_open(db_path, &f->st, err, sizeof err)))
        fx_die(err, rc);
    graph_init(&f->g, f->st);
    if ((rc = graph_identity_create(&f->g, key_path, "k3")))
        fx_die("identity", rc);
}

static void fx_close(struct fx *f)
{
    graph_free(&f->g);
    store_close(f->st);
}

/* A task record: shape_json like {"n":4096} or {"rows":32,"cols":4096}. */
static void fx_task(struct fx *f, const char *target, const char *name, const char *op,
                    const char *shape_json, uint8_t out[32])
{
    char buf[512];
    snprintf(buf, sizeof buf, "{\"name\":\"%s\",\"op\":\"%s\",\"dtype\":\"f32\",\"shape\":%s}",
             name, op, shape_json);
    cJSON *spec = cJSON_Parse(buf);
    if (!spec)
        fx_die("task json", -1);
    int rc = graph_task_add(&f->g, target, spec, out);
    cJSON_Delete(spec);
    if (rc)
        fx_die("task add", rc);
}

/* One attempt: a decision (tags comma-separated, source stored as a blob)
 * and its outcome. speedup/share < 0 are left out of the body. */
static void fx_attempt(struct fx *f, const char *target, const uint8_t task[32],
                       const uint8_t *parent, const char *tags, const char *src,
                       const char *status, double speedup, double share, const char *reason,
                       uint8_t out_dec[32])
{
    char ref[GRAPH_BLOB_REF];
    int rc;
    if ((rc = graph_blob_put(&f->g, src, strlen(src), ref)))
        fx_die("blob", rc);
    cJSON *d = cJSON_CreateObject(), *t = cJSON_AddArrayToObject(d, "tags");
    char tb[256];
    snprintf(tb, sizeof tb, "%s", tags);
    char *save = NULL;
    for (char *w = strtok_r(tb, ",", &save); w; w = strtok_r(NULL, ",", &save))
        cJSON_AddItemToArray(t, cJSON_CreateString(w));
    cJSON_AddStringToObject(d, "rationale", "fixture");
    cJSON_AddStringToObject(d, "source", ref);
    uint8_t dec[32];
    if ((rc = graph_decision_add(&f->g, task, parent, target, d, dec)))
        fx_die("decision", rc);
    cJSON_Delete(d);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", status);
    if (speedup >= 0) {
        cJSON_AddNumberToObject(o, "speedup", speedup);
        cJSON_AddStringToObject(o, "baseline", "scalar-O2");
    }
    if (share >= 0)
        cJSON_AddNumberToObject(o, "share", share);
    if (reason)
        cJSON_AddStringToObject(o, "reason", reason);
    cJSON_AddBoolToObject(o, "emulated", share < 0);
    if ((rc = graph_outcome_add(&f->g, task, dec, target, o, NULL)))
        fx_die("outcome", rc);
    cJSON_Delete(o);
    if (out_dec)
        memcpy(out_dec, dec, 32);
}

/* A plausible kernel source of about `lines` lines (distinct per seed). */
static char *fx_source(int seed, int lines)
{
    size_t cap = (size_t)lines * 96 + 512;
    char *s = malloc(cap);
    if (!s)
        fx_die("malloc", -1);
    size_t off = (size_t)snprintf(s, cap,
                                  "#include <riscv_vector.h>\n#include \"kernel_abi.h\"\n"
                                  "/* variant %d */\n"
                                  "void kope_kernel(size_t n, const float *x, const float *y, "
                                  "float *out, const struct kope_scalars *s)\n{\n", seed);
    for (int i = 0; i < lines && off + 128 < cap; i++)
        off += (size_t)snprintf(s + off, cap - off,
                                "    for (size_t i = 0, vl; i < n; i += vl) { vl = __riscv_vsetvl_e32m%d(n - i); "
                                "/* %d.%d */ }\n", 1 << (i % 4), seed, i);
    snprintf(s + off, cap - off, "}\n");
    return s;
}

#endif

/*
 * core/task.c - parse and validate task suites (format in core/task.h).
 *
 * Every message names the suite position or task name and the field, since
 * these files are written by hand: "task 'x' (#3): shape.cols: -1 is negative".
 * Validation is strict (unknown keys in shape are errors, to catch typos like
 * "col") but extra top-level task fields such as "source" or "notes" are kept
 * or ignored, so suites can carry documentation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/task.h"
#include "core/util.h"
#include "platform/embed.h"

/* --------------------------------------------------------------- shape --- */

static const char *const keys_n[] = {"n", NULL};
static const char *const keys_rc[] = {"rows", "cols", NULL};
static const char *const keys_mnk[] = {"m", "n", "k", "batch", NULL};
static const char *const keys_mk[] = {"m", "k", NULL};

static const char *const *shape_keys(enum plat_op op)
{
    enum plat_family f = plat_op_family(op);
    if (op == PLAT_OP_GEMV)
        return keys_mk;
    if (f == PLAT_FAM_MATMUL)
        return keys_mnk;
    if (f == PLAT_FAM_REDUCTION || plat_op_is_rowwise(op))
        return keys_rc;
    return keys_n;
}

static void keys_list(const char *const *keys, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; keys[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", keys[i]);
}

double task_bytes(const struct plat_task *t)
{
    double n = (double)t->n, r = (double)t->rows, c = (double)t->cols;
    double m = (double)t->m, k = (double)t->k, b = t->batch ? (double)t->batch : 1;
    switch (plat_op_family(t->op)) {
    case PLAT_FAM_ELEMENTWISE:
        return 4 * n * ((t->op == PLAT_OP_SCALE || t->op == PLAT_OP_CLAMP) ? 2 : 3);
    case PLAT_FAM_ACTIVATION:
        return plat_op_is_rowwise(t->op) ? 4 * (2 * r * c + 2 * c) : 4 * 2 * n;
    case PLAT_FAM_REDUCTION:
        return 4 * (r * c + r);
    case PLAT_FAM_MATMUL:
        if (t->op == PLAT_OP_GEMV)
            return 4 * (m * k + k + m);
        return 4 * b * (m * k + k * n + m * n);
    default:
        return 0;
    }
}

void task_shape_print(const struct plat_task *t, char *buf, size_t len)
{
    if (t->op == PLAT_OP_GEMV)
        snprintf(buf, len, "m=%llu k=%llu", (unsigned long long)t->m, (unsigned long long)t->k);
    else if (plat_op_family(t->op) == PLAT_FAM_MATMUL && t->batch > 1)
        snprintf(buf, len, "batch=%llu m=%llu n=%llu k=%llu", (unsigned long long)t->batch,
                 (unsigned long long)t->m, (unsigned long long)t->n, (unsigned long long)t->k);
    else if (plat_op_family(t->op) == PLAT_FAM_MATMUL)
        snprintf(buf, len, "m=%llu n=%llu k=%llu", (unsigned long long)t->m,
                 (unsigned long long)t->n, (unsigned long long)t->k);
    else if (t->rows)
        snprintf(buf, len, "rows=%llu cols=%llu", (unsigned long long)t->rows,
                 (unsigned long long)t->cols);
    else
        snprintf(buf, len, "n=%llu", (unsigned long long)t->n);
}

/* --------------------------------------------------------------- parse --- */

/* Context for messages: "task 'name' (#i)". */
static void where(char *buf, size_t len, size_t i, const char *name)
{
    if (name && *name)
        snprintf(buf, len, "task '%.63s' (#%zu)", name, i + 1);
    else
        snprintf(buf, len, "task #%zu", i + 1);
}

static int parse_dim(const cJSON *shape, const char *key, int required, uint64_t *out,
                     const char *w, char *err, size_t err_len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(shape, key);
    *out = 0;
    if (!v) {
        if (!required)
            return 0;
        snprintf(err, err_len, "%s: shape.%s is missing", w, key);
        return KOPE_ERR_PARSE;
    }
    if (!cJSON_IsNumber(v)) {
        snprintf(err, err_len, "%s: shape.%s must be a number", w, key);
        return KOPE_ERR_PARSE;
    }
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d)) {
        snprintf(err, err_len, "%s: shape.%s = %g is not a whole number", w, key, d);
        return KOPE_ERR_PARSE;
    }
    if (d < 0) {
        snprintf(err, err_len, "%s: shape.%s = %.0f is negative", w, key, d);
        return KOPE_ERR_PARSE;
    }
    if (d < 1) {
        snprintf(err, err_len, "%s: shape.%s = 0: sizes must be at least 1", w, key);
        return KOPE_ERR_PARSE;
    }
    if (d > TASK_MAX_DIM) {
        snprintf(err, err_len, "%s: shape.%s = %.0f is absurd (max %.0f)", w, key, d, TASK_MAX_DIM);
        return KOPE_ERR_PARSE;
    }
    *out = (uint64_t)d;
    return 0;
}

static int parse_task(const cJSON *jt, size_t i, struct task_entry *e, char *err, size_t err_len)
{
    char w[128];
    struct plat_task *t = &e->t;
    memset(e, 0, sizeof *e);
    where(w, sizeof w, i, NULL);
    if (!cJSON_IsObject(jt)) {
        snprintf(err, err_len, "%s: must be an object", w);
        return KOPE_ERR_PARSE;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(jt, "name");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
        snprintf(err, err_len, "%s: name is missing or not a string", w);
        return KOPE_ERR_PARSE;
    }
    size_t nl = strlen(name->valuestring);
    if (nl >= sizeof t->name) {
        snprintf(err, err_len, "%s: name is longer than %zu characters", w, sizeof t->name - 1);
        return KOPE_ERR_PARSE;
    }
    for (size_t c = 0; c < nl; c++) {
        char ch = name->valuestring[c];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.')) {
            snprintf(err, err_len, "%s: name '%.63s' may only use letters, digits, '-', '_', '.'",
                     w, name->valuestring);
            return KOPE_ERR_PARSE;
        }
    }
    memcpy(t->name, name->valuestring, nl + 1);
    where(w, sizeof w, i, t->name);

    const cJSON *op = cJSON_GetObjectItemCaseSensitive(jt, "op");
    if (!cJSON_IsString(op)) {
        snprintf(err, err_len, "%s: op is missing or not a string", w);
        return KOPE_ERR_PARSE;
    }
    int o = plat_op_parse(op->valuestring);
    if (o < 0) {
        char known[400];
        size_t n = 0;
        for (int k = 0; k < PLAT_OP_COUNT && n < sizeof known; k++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", k ? " " : "",
                                  plat_op_name((enum plat_op)k));
        snprintf(err, err_len, "%s: op '%.40s' is unknown (known: %s)", w, op->valuestring, known);
        return KOPE_ERR_PARSE;
    }
    t->op = (enum plat_op)o;
    t->family = plat_op_family(t->op);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(jt, "dtype");
    if (dt && (!cJSON_IsString(dt) || strcmp(dt->valuestring, "f32") != 0)) {
        snprintf(err, err_len, "%s: dtype must be \"f32\" (the only type supported)", w);
        return KOPE_ERR_PARSE;
    }

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(jt, "shape");
    const char *const *keys = shape_keys(t->op);
    char klist[64];
    keys_list(keys, klist, sizeof klist);
    if (!cJSON_IsObject(shape)) {
        snprintf(err, err_len, "%s: shape is missing or not an object (op %s takes %s)", w,
                 plat_op_name(t->op), klist);
        return KOPE_ERR_PARSE;
    }
    for (const cJSON *k = shape->child; k; k = k->next) {
        int known = 0;
        for (int j = 0; keys[j]; j++)
            if (k->string && strcmp(k->string, keys[j]) == 0)
                known = 1;
        if (!known) {
            snprintf(err, err_len, "%s: shape.%.40s is not a size of op %s (it takes %s)", w,
                     k->string ? k->string : "?", plat_op_name(t->op), klist);
            return KOPE_ERR_PARSE;
        }
    }
    int rc = 0;
    if (keys == keys_n) {
        rc = parse_dim(shape, "n", 1, &t->n, w, err, err_len);
    } else if (keys == keys_rc) {
        rc = parse_dim(shape, "rows", 1, &t->rows, w, err, err_len);
        if (!rc)
            rc = parse_dim(shape, "cols", 1, &t->cols, w, err, err_len);
    } else if (keys == keys_mk) {
        rc = parse_dim(shape, "m", 1, &t->m, w, err, err_len);
        if (!rc)
            rc = parse_dim(shape, "k", 1, &t->k, w, err, err_len);
        t->n = 1;
        t->batch = 1;
    } else {
        rc = parse_dim(shape, "m", 1, &t->m, w, err, err_len);
        if (!rc)
            rc = parse_dim(shape, "n", 1, &t->n, w, err, err_len);
        if (!rc)
            rc = parse_dim(shape, "k", 1, &t->k, w, err, err_len);
        if (!rc)
            rc = parse_dim(shape, "batch", 0, &t->batch, w, err, err_len);
        if (!rc && t->batch == 0)
            t->batch = 1;
    }
    if (rc)
        return rc;
    double bytes = task_bytes(t);
    if (bytes > TASK_MAX_BYTES) {
        snprintf(err, err_len, "%s: shape is absurd: its operands need %.1f GiB, more than the "
                 "%.0f GiB a board can give one kernel", w, bytes / (1024.0 * 1024 * 1024),
                 TASK_MAX_BYTES / (1024.0 * 1024 * 1024));
        return KOPE_ERR_PARSE;
    }

    plat_op_default_tol(t->op, &t->rtol, &t->atol);
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(jt, "tolerance");
    if (tol) {
        if (!cJSON_IsObject(tol)) {
            snprintf(err, err_len, "%s: tolerance must be an object {\"rtol\": R, \"atol\": A}", w);
            return KOPE_ERR_PARSE;
        }
        static const char *const tk[] = {"rtol", "atol"};
        double *dst[] = {&t->rtol, &t->atol};
        for (int j = 0; j < 2; j++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(tol, tk[j]);
            if (!v)
                continue;
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
                v->valuedouble >= 1) {
                snprintf(err, err_len, "%s: tolerance.%s must be a number in [0, 1)", w, tk[j]);
                return KOPE_ERR_PARSE;
            }
            *dst[j] = v->valuedouble;
        }
        for (const cJSON *k = tol->child; k; k = k->next)
            if (!k->string || (strcmp(k->string, "rtol") != 0 && strcmp(k->string, "atol") != 0)) {
                snprintf(err, err_len, "%s: tolerance.%.40s is unknown (rtol, atol)", w,
                         k->string ? k->string : "?");
                return KOPE_ERR_PARSE;
            }
        e->tol_given = 1;
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(jt, "source");
    if (cJSON_IsString(src))
        snprintf(e->source, sizeof e->source, "%s", src->valuestring);
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(jt, "seed");
    if (seed) {
        if (!cJSON_IsString(seed) || !seed->valuestring[0] ||
            strlen(seed->valuestring) >= sizeof e->seed_file) {
            snprintf(err, err_len, "%s: seed must be the path of a kernel file (at most %zu characters)", w,
                     sizeof e->seed_file - 1);
            return KOPE_ERR_PARSE;
        }
        snprintf(e->seed_file, sizeof e->seed_file, "%s", seed->valuestring);
    }
    return 0;
}

int task_seed_read(const char *path, const char *task, const char *field, char **src, size_t *len,
                   char *err, size_t err_len)
{
    char msg[300];
    *src = NULL;
    *len = 0;
    int rc = util_read_file(path, PLAT_SRC_MAX, src, len, msg, sizeof msg);
    if (rc) {
        snprintf(err, err_len, "task '%s': %s: cannot use '%.200s': %s", task, field, path, msg);
        return rc;
    }
    if (*len == 0) {
        free(*src);
        *src = NULL;
        snprintf(err, err_len, "task '%s': %s: '%.200s' is empty", task, field, path);
        return KOPE_ERR_IO;
    }
    return 0;
}

/* Read every task's seed, relative to the suite file's folder. */
static int seeds_load(const char *suite_path, struct task_suite *s, char *err, size_t err_len)
{
    const char *slash = strrchr(suite_path, '/');
    int dir_len = slash ? (int)(slash - suite_path) : 0;
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct task_entry *e = &s->tasks[i];
        if (!e->seed_file[0])
            continue;
        char path[4200];
        if (e->seed_file[0] == '/' || !slash)
            snprintf(path, sizeof path, "%s", e->seed_file);
        else
            snprintf(path, sizeof path, "%.*s/%s", dir_len, suite_path, e->seed_file);
        int rc = task_seed_read(path, e->t.name, "seed", &e->seed, &e->seed_len, err, err_len);
        if (rc)
            return rc;
    }
    return 0;
}

int task_suite_parse(const char *json, size_t len, struct task_suite *out, char *err, size_t err_len)
{
    int rc = KOPE_ERR_PARSE;
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    if (len > TASK_FILE_MAX_BYTES) {
        snprintf(err, err_len, "suite larger than %d bytes", TASK_FILE_MAX_BYTES);
        return KOPE_ERR_TOOBIG;
    }
    root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *q = json; ep && q < ep && q < json + len; q++)
            line += *q == '\n';
        snprintf(err, err_len, "not valid JSON (near line %d)", line);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        snprintf(err, err_len, "top level must be an object {\"suite\": ..., \"tasks\": [...]}");
        goto out;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "suite");
    if (!cJSON_IsString(name) || !name->valuestring[0] ||
        strlen(name->valuestring) >= sizeof out->name) {
        snprintf(err, err_len, "\"suite\" must be a non-empty string of at most %zu characters",
                 sizeof out->name - 1);
        goto out;
    }
    snprintf(out->name, sizeof out->name, "%s", name->valuestring);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks");
    if (!cJSON_IsArray(tasks)) {
        snprintf(err, err_len, "\"tasks\" must be an array");
        goto out;
    }
    int n = cJSON_GetArraySize(tasks);
    if (n <= 0) {
        snprintf(err, err_len, "\"tasks\" is empty");
        goto out;
    }
    if (n > TASK_MAX_TASKS) {
        snprintf(err, err_len, "%d tasks, more than the %d allowed", n, TASK_MAX_TASKS);
        rc = KOPE_ERR_TOOBIG;
        goto out;
    }
    out->tasks = calloc((size_t)n, sizeof *out->tasks);
    if (!out->tasks) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    size_t i = 0;
    for (const cJSON *jt = tasks->child; jt; jt = jt->next, i++) {
        rc = parse_task(jt, i, &out->tasks[i], err, err_len);
        if (rc)
            goto out;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->tasks[j].t.name, out->tasks[i].t.name) == 0) {
                snprintf(err, err_len, "task '%s' (#%zu): name already used by task #%zu",
                         out->tasks[i].t.name, i + 1, j + 1);
                rc = KOPE_ERR_PARSE;
                goto out;
            }
        out->n_tasks = i + 1;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc)
        task_suite_free(out);
    return rc;
}

int task_suite_load(const char *path, struct task_suite *out, char *err, size_t err_len)
{
    char msg[400];
    int rc;
    memset(out, 0, sizeof *out);
    if (!path) {
        const struct embed_file *e = embed_find(TASK_DEFAULT_SUITE);
        if (!e) {
            snprintf(err, err_len, "the default suite %s is not embedded in this binary",
                     TASK_DEFAULT_SUITE);
            return KOPE_ERR_NOTFOUND;
        }
        rc = task_suite_parse(e->data, e->len, out, msg, sizeof msg);
        if (rc)
            snprintf(err, err_len, "%s (embedded): %s", TASK_DEFAULT_SUITE, msg);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    rc = util_read_file(path, TASK_FILE_MAX_BYTES, &text, &len, err, err_len);
    if (rc)
        return rc;
    rc = task_suite_parse(text, len, out, msg, sizeof msg);
    if (!rc && (rc = seeds_load(path, out, msg, sizeof msg)))
        task_suite_free(out);
    if (rc)
        snprintf(err, err_len, "%.200s: %s", path, msg);
    free(text);
    return rc;
}

void task_suite_free(struct task_suite *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->tasks && i < s->n_tasks; i++)
        free(s->tasks[i].seed);
    free(s->tasks);
    s->tasks = NULL;
    s->n_tasks = 0;
}

const struct task_entry *task_suite_find(const struct task_suite *s, const char *name)
{
    for (size_t i = 0; i < s->n_tasks; i++)
        if (strcmp(s->tasks[i].t.name, name) == 0)
            return &s->tasks[i];
    return NULL;
}

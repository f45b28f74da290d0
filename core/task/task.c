/*
 * core/task/task.c - parse and validate task suites (format in core/task/task.h).
 *
 * Every message names the suite position or task name and the field, since
 * these files are written by hand: "task 'x' (#3): shape.cols: -1 is negative".
 * A suite file is read as strictly as the config: every key must be one the
 * format has (suite_keys[] below; core/jsonkeys.c names the first other one
 * at FILE:LINE:COLUMN with "did you mean"), so "tolerence" or "sead" is an
 * error, not a default silently used. Free text has its keys: "about" and
 * "notes" (the suite's, a task's) and "source" (a task's). Unknown keys in
 * shape are errors too, also per op ("col", "k" for an elementwise op).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/jsonkeys.h"
#include "core/suggest.h"
#include "core/task/task.h"
#include "core/util.h"
#include "platform/allow.h"
#include "platform/embed.h"

/* The keys of a suite file (core/jsonkeys.h). Values are typed by
 * parse_task with messages naming the task; here only objects and arrays
 * the walk descends into are typed. */
static const struct jk_key suite_keys[] = {
    {"suite", JK_ANY}, {"about", JK_ANY}, {"notes", JK_ANY}, {"tasks", JK_ARR}, {"tasks[]", JK_OBJ},
    {"tasks[].name", JK_ANY}, {"tasks[].op", JK_ANY}, {"tasks[].dtype", JK_ANY},
    {"tasks[].shape", JK_OBJ}, {"tasks[].shape.n", JK_ANY}, {"tasks[].shape.rows", JK_ANY},
    {"tasks[].shape.cols", JK_ANY}, {"tasks[].shape.m", JK_ANY}, {"tasks[].shape.k", JK_ANY},
    {"tasks[].shape.batch", JK_ANY}, {"tasks[].tolerance", JK_OBJ}, {"tasks[].tolerance.rtol", JK_ANY},
    {"tasks[].tolerance.atol", JK_ANY}, {"tasks[].source", JK_ANY}, {"tasks[].notes", JK_ANY},
    {"tasks[].seed", JK_ANY}, {"tasks[].ref", JK_ANY}, {"tasks[].family", JK_ANY}, {"tasks[].range", JK_ANY},
};

/* Unknown keys of a suite's text: 0, or KOPE_ERR_PARSE with FILE:LINE:COL
 * in err. Text that is not JSON is left to task_suite_parse, which says where. */
static int suite_keys_check(const char *file, const char *text, size_t len, char *err, size_t err_len)
{
    if (len > TASK_FILE_MAX_BYTES)
        return 0; /* task_suite_parse refuses it by size */
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j)
        return 0;
    cJSON_Delete(j);
    return jsonkeys_check(file, text, len, suite_keys, sizeof suite_keys / sizeof suite_keys[0], err, err_len);
}

/* --------------------------------------------------------------- shape --- */

static const char *const keys_n[] = {"n", NULL};
static const char *const keys_rc[] = {"rows", "cols", NULL};
static const char *const keys_mnk[] = {"m", "n", "k", "batch", NULL};
static const char *const keys_mk[] = {"m", "k", NULL};

/* A user op's keys follow its family; a user activation is row-wise when the
 * suite gives rows or cols (t->user->rowwise is set from that). */
static const char *const *shape_keys(const struct plat_task *t)
{
    enum plat_op op = t->op;
    enum plat_family f = t->family;
    if (op == PLAT_OP_USER)
        return f == PLAT_FAM_MATMUL ? keys_mnk
               : f == PLAT_FAM_REDUCTION || plat_task_rowwise(t) ? keys_rc : keys_n;
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

/* The family from the op for the catalogue (callers may leave t->family
 * unset), from the task for a user op. */
static enum plat_family task_family(const struct plat_task *t)
{
    return t->op == PLAT_OP_USER ? t->family : plat_op_family(t->op);
}

double task_bytes(const struct plat_task *t)
{
    double n = (double)t->n, r = (double)t->rows, c = (double)t->cols;
    double m = (double)t->m, k = (double)t->k, b = t->batch ? (double)t->batch : 1;
    switch (task_family(t)) {
    case PLAT_FAM_ELEMENTWISE:
        return 4 * n * ((t->op == PLAT_OP_SCALE || t->op == PLAT_OP_CLAMP) ? 2 : 3);
    case PLAT_FAM_ACTIVATION:
        return plat_task_rowwise(t) ? 4 * (2 * r * c + 2 * c) : 4 * 2 * n;
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
    else if (task_family(t) == PLAT_FAM_MATMUL && t->batch > 1)
        snprintf(buf, len, "batch=%llu m=%llu n=%llu k=%llu", (unsigned long long)t->batch,
                 (unsigned long long)t->m, (unsigned long long)t->n, (unsigned long long)t->k);
    else if (task_family(t) == PLAT_FAM_MATMUL)
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

/* Free text kope prints and stores (the suite's name, a task's source) on
 * the text allow-list of platform/allow.h: a suite cannot put a terminal
 * escape, a control or a bidirectional character in front of the user.
 * Returns 1 (err set) when refused. */
static int text_refused(const char *s, const char *w, const char *field, char *err, size_t err_len)
{
    unsigned long cp = 0;
    size_t n = strlen(s), at = allow_text_scan(s, n, &cp), brk = strcspn(s, "\t\n\r\f");
    if (brk < at) { /* one line: a line break or tab would fake table rows */
        at = brk;
        cp = (unsigned char)s[brk];
    }
    if (at == n)
        return 0;
    snprintf(err, err_len, "%s: %s: character U+%04lX at byte %zu is not allowed (printable text only: "
             "no control, escape or bidirectional character)", w, field, cp, at);
    return 1;
}

/* A "seed" or "ref" member: a file name (into file, read later by
 * task_suite_load) or, when it holds a newline, the source itself (into
 * *src, heap, capped at PLAT_SRC_MAX). */
static int file_or_source(const cJSON *v, const char *field, const char *w, char *file,
                          size_t file_len, char **src, size_t *len, char *err, size_t err_len)
{
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        snprintf(err, err_len, "%s: %s must be a file name or C source (a string with newlines)", w,
                 field);
        return KOPE_ERR_PARSE;
    }
    size_t n = strlen(v->valuestring);
    if (strchr(v->valuestring, '\n')) {
        if (n > PLAT_SRC_MAX) {
            snprintf(err, err_len, "%s: %s: inline source over %d bytes", w, field, PLAT_SRC_MAX);
            return KOPE_ERR_TOOBIG;
        }
        if (!(*src = malloc(n + 1)))
            return KOPE_ERR_NOMEM;
        memcpy(*src, v->valuestring, n + 1);
        *len = n;
        return 0;
    }
    if (n >= file_len) {
        snprintf(err, err_len, "%s: %s: a file name of at most %zu characters", w, field, file_len - 1);
        return KOPE_ERR_PARSE;
    }
    memcpy(file, v->valuestring, n + 1);
    return 0;
}

/* The members of a user's own op: its name, family, reference and input
 * range (the shape is parsed with the catalogue's tasks). */
static int parse_user_op(const cJSON *jt, const char *name, const cJSON *ref, const char *w,
                         struct task_entry *e, char *err, size_t err_len)
{
    struct plat_task *t = &e->t;
    size_t nl = strlen(name);
    int ok = nl > 0 && nl < PLAT_NAME_MAX && name[0] >= 'a' && name[0] <= 'z';
    for (size_t c = 0; ok && c < nl; c++)
        ok = (name[c] >= 'a' && name[c] <= 'z') || (name[c] >= '0' && name[c] <= '9') || name[c] == '_';
    if (!ok) {
        snprintf(err, err_len, "%s: op '%.40s': a user op's name is [a-z][a-z0-9_]*, at most %d "
                 "characters (it becomes part of C symbols)", w, name, PLAT_NAME_MAX - 1);
        return KOPE_ERR_PARSE;
    }
    /* kope_<op>_<task> is the exported symbol: an op may not be a word the
     * library, its self-test or the harness already uses after "kope_"
     * (op "scalar", task "add" made kope_scalar_add twice: no library) */
    static const char *const reserved[] = {"ref", "uref", "scalar", "selftest", "elementwise", "activation",
                                           "reduction", "matmul", "ops", "kernels", "kernel", "icount",
                                           "base", "blas", "sleef", "dispatch", "user"};
    for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
        if (strcmp(name, reserved[k]) == 0) {
            snprintf(err, err_len, "%s: op '%s' is a name kope's exported library uses itself "
                     "(kope_%s_...): choose another op name", w, name, name);
            return KOPE_ERR_PARSE;
        }
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(jt, "family");
    int f = -1;
    for (int k = 0; cJSON_IsString(fam) && k < PLAT_FAM_COUNT; k++)
        if (strcmp(fam->valuestring, plat_family_name((enum plat_family)k)) == 0)
            f = k;
    if (f < 0) {
        snprintf(err, err_len, "%s: family %s%.40s%s: a user op needs one of elementwise, "
                 "activation, reduction, matmul (the signatures in kernel_abi.h)", w,
                 cJSON_IsString(fam) ? "'" : "", cJSON_IsString(fam) ? fam->valuestring
                                                 : fam ? "(not a string)" : "is missing",
                 cJSON_IsString(fam) ? "' is unknown" : "");
        return KOPE_ERR_PARSE;
    }
    if (!(e->user = calloc(1, sizeof *e->user)))
        return KOPE_ERR_NOMEM;
    memcpy(e->user->name, name, nl + 1);
    t->op = PLAT_OP_USER;
    t->family = (enum plat_family)f;
    t->user = e->user;
    size_t rl = 0;
    int rc = file_or_source(ref, "ref", w, e->user->file, sizeof e->user->file, &e->ref, &rl, err,
                            err_len);
    if (rc)
        return rc;
    e->user->ref = e->ref;
    e->user->ref_len = rl;
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(jt, "range");
    if (range) {
        const cJSON *lo = cJSON_GetArrayItem(range, 0), *hi = cJSON_GetArrayItem(range, 1);
        if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 || !cJSON_IsNumber(lo) ||
            !cJSON_IsNumber(hi) || !isfinite(lo->valuedouble) || !isfinite(hi->valuedouble) ||
            !(lo->valuedouble < hi->valuedouble) || fabs(lo->valuedouble) > 1e30 ||
            fabs(hi->valuedouble) > 1e30) {
            snprintf(err, err_len, "%s: range must be [lo, hi] with finite lo < hi (|x| <= 1e30)", w);
            return KOPE_ERR_PARSE;
        }
        e->user->in_lo = lo->valuedouble;
        e->user->in_hi = hi->valuedouble;
    }
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
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(jt, "ref");
    if (o >= 0 && ref) {
        snprintf(err, err_len, "%s: ref: op '%s' is in the catalogue; a reference is only for "
                 "a user's own op (give it another name)", w, op->valuestring);
        return KOPE_ERR_PARSE;
    }
    if (o < 0 && !ref) {
        char known[400];
        size_t n = 0;
        for (int k = 0; k < PLAT_OP_COUNT && n < sizeof known; k++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", k ? " " : "",
                                  plat_op_name((enum plat_op)k));
        snprintf(err, err_len, "%s: op '%.40s' is unknown (known: %s; a user's own op brings "
                 "\"ref\" and \"family\", docs/KERNELS.md)", w, op->valuestring, known);
        return KOPE_ERR_PARSE;
    }
    if (o >= 0) {
        t->op = (enum plat_op)o;
        t->family = plat_op_family(t->op);
    } else {
        int rc = parse_user_op(jt, op->valuestring, ref, w, e, err, err_len);
        if (rc)
            return rc;
    }
    if (o >= 0 && (cJSON_GetObjectItemCaseSensitive(jt, "family") ||
                   cJSON_GetObjectItemCaseSensitive(jt, "range"))) {
        snprintf(err, err_len, "%s: %s: only a user's own op (one with \"ref\") takes it", w,
                 cJSON_GetObjectItemCaseSensitive(jt, "family") ? "family" : "range");
        return KOPE_ERR_PARSE;
    }

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(jt, "dtype");
    if (dt && (!cJSON_IsString(dt) || strcmp(dt->valuestring, "f32") != 0)) {
        snprintf(err, err_len, "%s: dtype must be \"f32\" (the only type supported)", w);
        return KOPE_ERR_PARSE;
    }

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(jt, "shape");
    if (e->user && cJSON_IsObject(shape))
        e->user->rowwise = t->family == PLAT_FAM_ACTIVATION &&
                           (cJSON_GetObjectItemCaseSensitive(shape, "rows") ||
                            cJSON_GetObjectItemCaseSensitive(shape, "cols"));
    const char *const *keys = shape_keys(t);
    char klist[64];
    keys_list(keys, klist, sizeof klist);
    if (!cJSON_IsObject(shape)) {
        snprintf(err, err_len, "%s: shape is missing or not an object (op %s takes %s)", w,
                 plat_task_op_name(t), klist);
        return KOPE_ERR_PARSE;
    }
    for (const cJSON *k = shape->child; k; k = k->next) {
        int known = 0;
        for (int j = 0; keys[j]; j++)
            if (k->string && strcmp(k->string, keys[j]) == 0)
                known = 1;
        if (!known) {
            snprintf(err, err_len, "%s: shape.%.40s is not a size of op %s (it takes %s)", w,
                     k->string ? k->string : "?", plat_task_op_name(t), klist);
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
    if (cJSON_IsString(src)) {
        if (text_refused(src->valuestring, w, "source", err, err_len))
            return KOPE_ERR_PARSE;
        snprintf(e->source, sizeof e->source, "%s", src->valuestring);
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(jt, "seed");
    if (seed)
        return file_or_source(seed, "seed", w, e->seed_file, sizeof e->seed_file, &e->seed,
                              &e->seed_len, err, err_len);
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

/* A suite's file name, as an allow-list: a path relative to the suite
 * file's folder, of components made of letters, digits, '.', '_' and '-',
 * none of them "." or ".." (a suite may come from anyone: it must not
 * make kope read, store, export and prompt a host file such as a key). */
static int suite_name_ok(const char *file)
{
    if (!file[0] || file[0] == '/')
        return 0;
    const char *c = file;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z') ||
                  (c[i] >= '0' && c[i] <= '9') || c[i] == '.' || c[i] == '_' || c[i] == '-'))
                return 0;
        if (!e)
            return 1;
        c = e + 1;
    }
}

/* Read file (relative to the suite file's folder, no symbolic link on the
 * way: each component opened with O_NOFOLLOW beneath the folder) into *src. */
static int suite_file_read(const char *suite_path, const char *file, const char *task,
                           const char *field, char **src, size_t *len, char *err, size_t err_len)
{
    *src = NULL;
    *len = 0;
    if (!suite_name_ok(file)) {
        snprintf(err, err_len,
                 "task '%s': %s: '%.100s' is not a file name kope reads from a suite: give a path "
                 "relative to the suite file's folder (letters, digits, '.', '_', '-' and '/'; no "
                 "'..'), or the source itself (a string with newlines)",
                 task, field, file);
        return KOPE_ERR_PARSE;
    }
    const char *slash = strrchr(suite_path, '/');
    char dir[4200], part[PLAT_NAME_MAX + 4200];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - suite_path) : 1, slash ? suite_path : ".");
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *c = file;
    while (fd >= 0) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        snprintf(part, sizeof part, "%.*s", (int)n, c);
        int next = openat(fd, part, (e ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int saved = errno;
        close(fd);
        fd = next;
        errno = saved;
        if (!e)
            break;
        c = e + 1;
    }
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        /* the path as the user would type it: the suite's folder, then the name */
        snprintf(part, sizeof part, "%.*s/", slash ? (int)(slash - suite_path) : 0, suite_path);
        int saved = fd < 0 ? errno : 0;
        if (fd >= 0)
            close(fd);
        snprintf(err, err_len, "task '%s': %s: cannot use '%.150s%.100s': %s", task, field,
                 slash ? part : "", file, saved == ELOOP ? "a symbolic link on the way (not followed)"
                       : saved          ? strerror(saved)
                                        : "not a regular file");
        return KOPE_ERR_IO;
    }
    /* read through the descriptor opened above, capped like every seed */
    size_t cap = PLAT_SRC_MAX;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return KOPE_ERR_NOMEM;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, cap + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got > cap)
            break;
    }
    close(fd);
    if (got > cap) {
        free(buf);
        snprintf(err, err_len, "task '%s': %s: '%.200s' is over %d bytes", task, field, file, PLAT_SRC_MAX);
        return KOPE_ERR_TOOBIG;
    }
    if (got == 0) {
        free(buf);
        snprintf(err, err_len, "task '%s': %s: '%.200s' is empty", task, field, file);
        return KOPE_ERR_IO;
    }
    buf[got] = '\0';
    *src = buf;
    *len = got;
    return 0;
}

/* Read every task's seed and reference files. */
static int seeds_load(const char *suite_path, struct task_suite *s, char *err, size_t err_len)
{
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct task_entry *e = &s->tasks[i];
        int rc = 0;
        if (e->seed_file[0])
            rc = suite_file_read(suite_path, e->seed_file, e->t.name, "seed", &e->seed,
                                 &e->seed_len, err, err_len);
        if (!rc && e->user && e->user->file[0]) {
            rc = suite_file_read(suite_path, e->user->file, e->t.name, "ref", &e->ref,
                                 &e->user->ref_len, err, err_len);
            e->user->ref = e->ref;
        }
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
    if (text_refused(name->valuestring, "suite", "name", err, err_len))
        goto out;
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
        out->n_tasks = i + 1; /* task_suite_free frees what a failed entry holds */
        if (rc)
            goto out;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->tasks[j].t.name, out->tasks[i].t.name) == 0) {
                snprintf(err, err_len, "task '%s' (#%zu): name already used by task #%zu",
                         out->tasks[i].t.name, i + 1, j + 1);
                rc = KOPE_ERR_PARSE;
                goto out;
            }
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
        if ((rc = suite_keys_check(TASK_DEFAULT_SUITE " (embedded)", e->data, e->len, err, err_len)))
            return rc;
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
    if ((rc = suite_keys_check(path, text, len, err, err_len))) {
        free(text);
        return rc;
    }
    rc = task_suite_parse(text, len, out, msg, sizeof msg);
    if (!rc && (rc = seeds_load(path, out, msg, sizeof msg)))
        task_suite_free(out);
    if (rc)
        snprintf(err, err_len, "%.200s: %s", path, msg);
    free(text);
    return rc;
}

int task_ref_check(struct platform *p, const struct task_entry *te, char *err, size_t err_len)
{
    const struct plat_task *t = &te->t;
    const struct plat_user_op *u = te->user;
    if (!u)
        return 0;
    char file[300];
    snprintf(file, sizeof file, "'%.250s'", u->file[0] ? u->file : "(inline)");
    if (!u->ref || !u->ref_len) {
        snprintf(err, err_len, "task '%s': ref %s was not read (load the suite from its file)",
                 t->name, file);
        return KOPE_ERR_PARSE;
    }
    struct plat_build b;
    struct plat_verify v;
    int rc = platform_compile(p, t, u->ref, u->ref_len, &b);
    if (rc) {
        snprintf(err, err_len, "task '%s': ref %s: %s", t->name, file, p->err);
        return rc;
    }
    if (!b.ok) {
        char diag[420];
        size_t dn = strcspn(b.diag, "\n");
        /* the compiler names the candidate's file; the user knows theirs */
        const char *d0 = strncmp(b.diag, "cand.c:", 7) == 0 ? b.diag + 6 : b.diag;
        dn -= (size_t)(d0 - b.diag);
        snprintf(diag, sizeof diag, "%.250s%.*s", d0 != b.diag ? (u->file[0] ? u->file : "ref") : "",
                 (int)(dn < 150 ? dn : 150), d0);
        if (b.reason == PLAT_FAIL_SCREEN_REJECTED)
            snprintf(err, err_len, "task '%s': ref %s is refused by the kernel screen (%s): %s", t->name,
                     file, plat_screen_rule_name(b.screen_rule), b.detail);
        else
            snprintf(err, err_len, "task '%s': ref %s does not build with the %s signature "
                     "(kope_%s_fn in kernel_abi.h): %s%s%s", t->name, file, plat_family_name(t->family),
                     plat_family_name(t->family), b.detail, diag[0] ? ": " : "", diag);
        platform_build_free(p, &b);
        return KOPE_ERR_PARSE;
    }
    rc = platform_verify(p, t, &b, &v);
    platform_build_free(p, &b);
    if (rc) {
        snprintf(err, err_len, "task '%s': ref %s: %s", t->name, file, p->err);
        return rc;
    }
    if (v.pass)
        return 0;
    const char *what;
    switch (v.reason) {
    case PLAT_FAIL_CRASH: what = "crashes (a read or write out of bounds hits a guard page)"; break;
    case PLAT_FAIL_OUT_OF_BOUNDS_WRITE: what = "writes out of bounds"; break;
    case PLAT_FAIL_INPUT_MODIFIED: what = "writes into its inputs"; break;
    case PLAT_FAIL_UNWRITTEN_OUTPUT: what = "leaves part of its output unwritten"; break;
    case PLAT_FAIL_TIMEOUT: what = "times out"; break;
    case PLAT_FAIL_MEMORY_LIMIT: what = "allocates past the memory cap"; break;
    case PLAT_FAIL_WRONG_RESULT: case PLAT_FAIL_NAN_INF: case PLAT_FAIL_STATEFUL:
        what = "disagrees with itself across runs (state kept between calls, or uninitialised reads)";
        break;
    default: what = "fails its own check"; break;
    }
    const char *label = "";
    for (int i = 0; i < v.n_cases; i++)
        if (!v.cases[i].pass) {
            label = v.cases[i].label;
            break;
        }
    snprintf(err, err_len, "task '%s': ref %s %s: %s, %s%s", t->name, file, what,
             plat_fail_name(v.reason), v.detail[0] ? v.detail : "case ", v.detail[0] ? "" : label);
    return KOPE_ERR_PARSE;
}

void task_suite_free(struct task_suite *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->tasks && i < s->n_tasks; i++) {
        free(s->tasks[i].seed);
        free(s->tasks[i].ref);
        free(s->tasks[i].user);
    }
    free(s->tasks);
    s->tasks = NULL;
    s->n_tasks = 0;
}

const char *task_suite_near(const struct task_suite *s, const char *name)
{
    struct suggest near;
    suggest_init(&near, name);
    for (size_t i = 0; i < s->n_tasks; i++)
        suggest_add(&near, s->tasks[i].t.name);
    return suggest_best(&near);
}

const struct task_entry *task_suite_find(const struct task_suite *s, const char *name)
{
    for (size_t i = 0; i < s->n_tasks; i++)
        if (strcmp(s->tasks[i].t.name, name) == 0)
            return &s->tasks[i];
    return NULL;
}

/*
 * core/cli/cli_kernels.c - kernels out of the graph: `kope kernel show TASK|ID`
 * (one decision's source with its provenance) and `kope kernels export -o
 * DIR` (the best kernel of each task as a C library a user links).
 *
 * Reading order: what a chosen kernel is (struct kx) and how it is read back
 * and checked (kx_load), the provenance comment, `kernel show`, then the
 * export's writers (kernel files, kope_kernels.h, the dispatchers, the
 * self-test table, kernels.json) and `kernels export`.
 *
 * What is exported is evidence, so it is checked again here, not trusted
 * from the store: the task, decision and outcome records must hash to their
 * ids and the source blob to its name (a record edited in the SQLite file is
 * refused), every record must be of the export's target, the outcome must not
 * come from a verification at a reduced shape, and an outcome whose only
 * evidence is emulated (qemu instruction counts) needs --include-emulated and
 * is marked so in kernels.json. A refused task is named with its reason and
 * never replaced by a weaker kernel silently.
 *
 * What is shipped is the judged object, not a new compile of the source:
 * each kernel is rebuilt through the target's own compile (the same screen,
 * flags, sandbox and object check as the judge's build), its object's
 * SHA-256 compared with the one the signed outcome records, and that object
 * written renamed by the target (platform_ops.object_export). The library's
 * Makefile archives the objects and compiles no candidate source.
 *
 * The library's fixed files (Makefile, the op catalogue, scalar fallbacks,
 * references, the self-test driver) are embedded from
 * platform/<target>/embed/lib/; this file writes only what depends on the
 * kernels chosen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/agent/trial.h"
#include "core/cli/cli.h"
#include "core/err.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "core/termsafe.h"
#include "core/util.h"
#include "core/version.h"
#include "net/crypto.h"
#include "platform/embed.h"
#include "platform/platform.h"
#include "store/store.h"

#define KX_MAX 4096 /* kernels in one export (a suite's task cap) */

/* ------------------------------------------------------ a chosen kernel --- */

/* One decision read back with its outcome and task, checked. */
struct kx {
    char task[PLAT_NAME_MAX];
    enum plat_op op;            /* PLAT_OP_USER for a user's own op */
    char op_name[PLAT_NAME_MAX]; /* the catalogue's name, or the user op's */
    enum plat_family fam;
    int rowwise;                /* a user activation on {rows, cols} */
    char *ref;                  /* a user op's reference source (owned), else NULL */
    size_t ref_len;
    char ref_blob[GRAPH_BLOB_REF];
    double in_lo, in_hi;        /* a user op's input range (both 0: the default) */
    uint64_t n, rows, cols, m, k, batch;
    double rtol, atol;
    uint8_t task_id[32];
    char task_hex[GRAPH_ID_HEX], dec_hex[GRAPH_ID_HEX], out_hex[GRAPH_ID_HEX];
    char origin_hex[GRAPH_ID_HEX];
    char obj_sha256[65];        /* the judged object's hash its outcome records, "" = none */
    char toolchain[256];        /* the compiler the decision records, "" = not recorded */
    char target[32];
    cJSON *dec_body, *out_body; /* owned copies */
    char *src;                  /* owned */
    size_t len;
    char src_ref[GRAPH_BLOB_REF];
    int emulated;
    char symbol[PLAT_NAME_MAX + 32];
};

static void kx_free(struct kx *k)
{
    cJSON_Delete(k->dec_body);
    cJSON_Delete(k->out_body);
    free(k->src);
    free(k->ref);
    memset(k, 0, sizeof *k);
}

static const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key, double def)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

struct intact_ctx {
    int found, ok;
};

static int intact_cb(void *ctx, const struct store_rec *r)
{
    struct intact_ctx *c = ctx;
    uint8_t h[32];
    net_sha256(r->canon, r->canon_len, h);
    c->found = 1;
    c->ok = memcmp(h, r->id, 32) == 0;
    return 1;
}

/* Does the stored record id still hash to its id? 1 yes, 0 no (edited in the
 * file), negative on a store error. */
static int rec_intact(struct graph *g, const uint8_t id[32])
{
    struct intact_ctx c = {0, 0};
    int rc = store_rec_query(g->st, STORE_Q_ID, id, 0, intact_cb, &c);
    if (rc < 0 && rc != STORE_ERR_NOTFOUND)
        return rc;
    return c.found && c.ok;
}

/* Is s non-empty and made only of the characters in set? */
static int chars_in(const char *s, const char *set)
{
    return s && *s && strspn(s, set) == strlen(s);
}

/* The op's sizes from a task body's shape; 0 when the spec is unusable. */
static int spec_read(const cJSON *spec, struct kx *k)
{
    const char *name = jstr(spec, "name"), *op = jstr(spec, "op"), *fam = jstr(spec, "family");
    const cJSON *sh = jget(spec, "shape"), *tol = jget(spec, "tolerance");
    int o = op ? plat_op_parse(op) : -1;
    if (!name || !op || !cJSON_IsObject(sh) || strlen(name) >= sizeof k->task ||
        strlen(op) >= sizeof k->op_name)
        return 0;
    if (o < 0) { /* a user's own op: its family and reference are in the spec */
        int f = -1;
        for (int i = 0; fam && i < PLAT_FAM_COUNT; i++)
            if (strcmp(fam, plat_family_name((enum plat_family)i)) == 0)
                f = i;
        const char *ref = jstr(spec, "ref");
        const cJSON *range = jget(spec, "range");
        /* the name becomes C symbols in the library: [a-z][a-z0-9_]*, as a suite's */
        if (!cJSON_IsTrue(jget(spec, "user_op")) || f < 0 || !ref || strlen(ref) >= sizeof k->ref_blob ||
            !chars_in(op, "abcdefghijklmnopqrstuvwxyz0123456789_") || op[0] < 'a' || op[0] > 'z')
            return 0;
        k->op = PLAT_OP_USER;
        k->fam = (enum plat_family)f;
        k->rowwise = f == PLAT_FAM_ACTIVATION && jget(sh, "rows");
        snprintf(k->ref_blob, sizeof k->ref_blob, "%s", ref);
        if (cJSON_GetArraySize(range) == 2) {
            k->in_lo = cJSON_GetArrayItem(range, 0)->valuedouble;
            k->in_hi = cJSON_GetArrayItem(range, 1)->valuedouble;
        }
    } else {
        k->op = (enum plat_op)o;
        k->fam = plat_op_family(k->op);
        k->rowwise = plat_op_is_rowwise(k->op);
    }
    snprintf(k->task, sizeof k->task, "%s", name);
    snprintf(k->op_name, sizeof k->op_name, "%s", op);
    k->n = (uint64_t)jnum(sh, "n", 0);
    k->rows = (uint64_t)jnum(sh, "rows", 0);
    k->cols = (uint64_t)jnum(sh, "cols", 0);
    k->m = (uint64_t)jnum(sh, "m", 0);
    k->k = (uint64_t)jnum(sh, "k", 0);
    k->batch = (uint64_t)jnum(sh, "batch", 0);
    plat_op_default_tol(k->op, &k->rtol, &k->atol);
    k->rtol = jnum(tol, "rtol", k->rtol);
    k->atol = jnum(tol, "atol", k->atol);
    /* written into C source as numbers: a NaN or infinity is no tolerance */
    if (!(k->rtol >= 0 && k->rtol < 1e30 && k->atol >= 0 && k->atol < 1e30 && k->in_lo > -1e30 &&
          k->in_lo < 1e30 && k->in_hi > -1e30 && k->in_hi < 1e30))
        return 0;
    return 1;
}

/* The text of blob ref into *text (heap), checked against its name: 0, 1
 * (missing or altered: why says so, naming what), or a negative code. */
static int blob_read(struct graph *g, const char *ref, const char *what, char **text, size_t *len,
                     char *why, size_t why_cap)
{
    int rc = graph_blob_get(g, ref, text, len);
    if (rc == KOPE_ERR_NOTFOUND || rc == STORE_ERR_NOTFOUND || rc == KOPE_ERR_PARSE) {
        snprintf(why, why_cap, "%s is not in this store", what);
        return 1;
    }
    if (rc)
        return rc;
    uint8_t h[32];
    char hex[GRAPH_ID_HEX];
    net_sha256(*text, *len, h);
    util_hex(h, 32, hex);
    const char *name = strncmp(ref, "sha256:", 7) == 0 ? ref + 7 : ref;
    if (strcmp(hex, name) != 0) {
        snprintf(why, why_cap, "%s was altered in the store", what);
        return 1;
    }
    return 0;
}

/* Read node `best` of tree t into *k and check it for export to target.
 * Returns 0 (accepted), 1 (refused: why says so), or a negative code. */
static int kx_load(struct graph *g, const struct graph_tree *t, int best, const char *target,
                   int include_emulated, struct kx *k, char *why, size_t why_cap)
{
    const struct graph_node *nd = &t->nodes[best];
    const cJSON *tb = jget(t->task.json, "body");
    memset(k, 0, sizeof *k);
    if (!spec_read(tb, k)) {
        snprintf(why, why_cap, "its task record is not a task spec kope can read");
        return 1;
    }
    memcpy(k->task_id, t->task.id, 32);
    snprintf(k->task_hex, sizeof k->task_hex, "%s", t->task.id_hex);
    snprintf(k->dec_hex, sizeof k->dec_hex, "%s", nd->dec.id_hex);
    snprintf(k->out_hex, sizeof k->out_hex, "%s", nd->out.id_hex);
    snprintf(k->target, sizeof k->target, "%s", nd->out.target);
    const char *org = jstr(nd->dec.json, "origin");
    /* written into the provenance comment: a record id is hex, nothing else */
    snprintf(k->origin_hex, sizeof k->origin_hex, "%s", chars_in(org, "0123456789abcdef") ? org : "");
    const struct graph_rec *recs[3] = {&t->task, &nd->dec, &nd->out};
    static const char *const what[3] = {"task", "decision", "outcome"};
    for (int i = 0; i < 3; i++) {
        int ok = rec_intact(g, recs[i]->id);
        if (ok < 0)
            return ok;
        if (!ok) {
            snprintf(why, why_cap, "its %s record %.12s was altered in the store (its content no longer "
                     "hashes to its id)", what[i], recs[i]->id_hex);
            return 1;
        }
        if (strcmp(recs[i]->target, target) != 0) {
            snprintf(why, why_cap, "its %s record %.12s is for target '%s', not '%s'", what[i],
                     recs[i]->id_hex, recs[i]->target, target);
            return 1;
        }
    }
    const cJSON *db = jget(nd->dec.json, "body"), *ob = jget(nd->out.json, "body");
    /* graph_tree_best never picks these; a decision named by id may be one */
    if (cJSON_IsTrue(jget(ob, "reduced_shape"))) {
        snprintf(why, why_cap, "its best outcome %.12s was verified only at a reduced shape, not the task's",
                 nd->out.id_hex);
        return 1;
    }
    k->emulated = cJSON_IsTrue(jget(ob, "emulated"));
    if (k->emulated && !include_emulated) {
        snprintf(why, why_cap, "its only evidence is emulated (qemu's instruction counts or vector-cost model, or a virtual machine; outcome %.12s): "
                 "pass --include-emulated to export it (kernels.json marks it)", nd->out.id_hex);
        return 1;
    }
    const char *ref = jstr(db, "source");
    if (!ref) {
        snprintf(why, why_cap, "its decision %.12s has no source", nd->dec.id_hex);
        return 1;
    }
    char what_src[64];
    snprintf(what_src, sizeof what_src, "the source blob of decision %.12s", nd->dec.id_hex);
    int rc = blob_read(g, ref, what_src, &k->src, &k->len, why, why_cap);
    if (!rc && k->op == PLAT_OP_USER) /* the self-test checks the kernel against it */
        rc = blob_read(g, k->ref_blob, "the reference blob of its user op", &k->ref, &k->ref_len, why,
                       why_cap);
    if (rc) {
        kx_free(k);
        return rc;
    }
    snprintf(k->src_ref, sizeof k->src_ref, "%s", ref);
    const char *oh = jstr(ob, "object_sha256"), *tc = jstr(db, "toolchain");
    if (oh && strlen(oh) == 64 && chars_in(oh, "0123456789abcdef"))
        snprintf(k->obj_sha256, sizeof k->obj_sha256, "%s", oh);
    snprintf(k->toolchain, sizeof k->toolchain, "%s", tc ? tc : "");
    k->dec_body = cJSON_Duplicate(db, 1);
    k->out_body = cJSON_Duplicate(ob, 1);
    if (!k->dec_body || !k->out_body) {
        kx_free(k);
        return KOPE_ERR_NOMEM;
    }
    return 0;
}

/* --------------------------------------------------------- provenance --- */

/* Write s into a C comment: "*" followed by "/" would end it early. Lines
 * are broken at a space past column 76 and continued under the value. */
static void comment_str(FILE *f, const char *s)
{
    int col = 16;
    for (; s && *s; s++, col++) {
        if (*s == ' ' && col > 76) {
            fputs("\n *             ", f);
            col = 16;
            continue;
        }
        if (*s == '\n')
            fputc(' ', f);
        else /* a control byte of a stored name or parameter stays off the terminal */
            termsafe_fwrite(f, s, 1);
        if (s[0] == '*' && s[1] == '/')
            fputc(' ', f);
    }
}

static void shape_text(const struct kx *k, char *buf, size_t cap)
{
    struct plat_task t;
    memset(&t, 0, sizeof t);
    t.op = k->op;
    t.family = k->fam;
    t.n = k->n;
    t.rows = k->rows;
    t.cols = k->cols;
    t.m = k->m;
    t.k = k->k;
    t.batch = k->batch;
    task_shape_print(&t, buf, cap);
}

/* What the evidence of a kernel is: a native time, or, emulated, the
 * vector-cost model or instruction counts under qemu-user, or times taken
 * natively inside a virtual machine (the target labels those "virtual
 * machine: not a speed" in the method, platform/k3/k3.c). */
static const char *kx_evidence(const struct kx *k)
{
    if (!k->emulated)
        return "native-time";
    const char *m = jstr(k->out_body, "method"), *metric = jstr(k->out_body, "metric");
    if (m && strstr(m, "virtual machine"))
        return "virtual-machine";
    return metric && strcmp(metric, "vcost") == 0 ? "emulated-vcost" : "emulated-icount";
}

/* How the verdict was reached, one line: a bounded head (what kind of
 * evidence, into buf, ending with a separator when there is more) and the
 * recorded method text, returned as is (NULL = none). The method is not
 * copied into a fixed field: the callers write or join the two, so no
 * length of recorded text is ever cut (issue 24). */
static const char *method_head(const struct kx *k, char *buf, size_t cap)
{
    const cJSON *ob = k->out_body;
    const char *m = jstr(ob, "method");
    double reps = jnum(ob, "repeats", 0), spread = jnum(ob, "spread", -1);
    char extra[160] = "";
    if (reps > 0 && spread >= 0)
        snprintf(extra, sizeof extra, ", %.0f repeats, spread %.1f%%", reps, spread * 100);
    else
        snprintf(extra, sizeof extra, ", repeats and spread not recorded by the kope that measured it");
    const char *ev = kx_evidence(k);
    if (strcmp(ev, "virtual-machine") == 0)
        snprintf(buf, cap, "virtual machine (native code under full-system emulation): times are not "
                 "speeds, no ratio claimed%s", m ? "; harness: " : "");
    else if (strcmp(ev, "emulated-vcost") == 0)
        snprintf(buf, cap, "emulated (qemu): ratios by the vector-cost model (vcost %.0f; icount %.0f; "
                 "both repeat exactly), not times%s", jnum(ob, "vcost", 0), jnum(ob, "icount", 0),
                 m ? "; harness: " : "");
    else if (k->emulated) /* qemu wall-time repeats and spread say nothing: left out */
        snprintf(buf, cap, "emulated (qemu): instruction counts (icount %.0f, repeats exactly), not times%s",
                 jnum(ob, "icount", 0), m ? "; harness: " : "");
    else
        snprintf(buf, cap, "native time: median %.0f ns per call%s%s", jnum(ob, "median_ns", 0), extra,
                 m ? "; " : "");
    return m;
}

/* method_head and the method joined, malloc'd (the caller frees), or NULL
 * when out of memory. */
static char *method_text_new(const struct kx *k)
{
    char head[512];
    const char *m = method_head(k, head, sizeof head);
    size_t hl = strlen(head), ml = m ? strlen(m) : 0;
    char *out = malloc(hl + ml + 1);
    if (out) {
        memcpy(out, head, hl);
        memcpy(out + hl, m ? m : "", ml + 1);
    }
    return out;
}

static void ratios_text(const struct kx *k, char *buf, size_t cap)
{
    const cJSON *ra = jget(k->out_body, "ratios"), *x;
    size_t off = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(x, ra)
    {
        if (!cJSON_IsNumber(x) || !x->string || off + 64 > cap)
            continue;
        off += (size_t)snprintf(buf + off, cap - off, "%s%.3fx vs %s", off ? ", " : "", x->valuedouble,
                                x->string);
    }
    if (!off)
        snprintf(buf, cap, "none claimed");
}

static void date_now(char *buf, size_t cap)
{
    /* SOURCE_DATE_EPOCH makes an export reproducible byte for byte */
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t t = sde && *sde ? (time_t)strtoll(sde, NULL, 10) : time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void provenance_write(FILE *f, const struct kx *k, const char *date)
{
    char shape[128], head[512], ratios[512];
    shape_text(k, shape, sizeof shape);
    const char *method = method_head(k, head, sizeof head);
    ratios_text(k, ratios, sizeof ratios);
    const char *prop = jstr(k->dec_body, "proposer"), *params = jstr(k->dec_body, "params");
    fprintf(f, "/*\n * kope kernel: task ");
    comment_str(f, k->task);
    fprintf(f, "\n *   op        %s (%s%s), dtype f32, shape %s\n", k->op_name, plat_family_name(k->fam),
            k->ref ? "; a user's own op" : "", shape);
    if (k->ref)
        fprintf(f, " *   tolerance rtol %g, atol %g (against the op's own reference, plain f32: blob %s;\n"
                   " *             in the library kernels/ref_%s.c, its object kernels/kope_uref_%s.o)\n",
                k->rtol, k->atol, k->ref_blob, k->symbol, k->symbol);
    else
        fprintf(f, " *   tolerance rtol %g, atol %g (against a double-precision reference)\n", k->rtol, k->atol);
    fprintf(f, " *   target    %s\n", k->target);
    fprintf(f, " *   records   task %s\n *             decision %s\n *             outcome %s\n",
            k->task_hex, k->dec_hex, k->out_hex);
    fprintf(f, " *   origin    %s\n", k->origin_hex);
    fprintf(f, " *   proposer  ");
    comment_str(f, prop ? prop : "?");
    if (params) {
        fprintf(f, " (");
        comment_str(f, params);
        fprintf(f, ")");
    }
    fprintf(f, "\n *   source    %s\n", k->src_ref);
    if (k->obj_sha256[0])
        fprintf(f, " *   object    sha256 %s (the object judged)\n", k->obj_sha256);
    fprintf(f, " *   method    ");
    comment_str(f, head);
    if (method)
        comment_str(f, method);
    fprintf(f, "\n *   ratios    ");
    comment_str(f, ratios);
    fprintf(f, " (same run)\n");
    if (strcmp(kx_evidence(k), "virtual-machine") == 0)
        fprintf(f, " *   EMULATED: measured natively inside a virtual machine; no speed was measured\n"
                   " *             and no ratio is claimed.\n");
    else if (k->emulated)
        fprintf(f, " *   EMULATED: these ratios come from qemu (instruction counts / vector-cost model);\n"
                   " *             no speed was measured.\n");
    fprintf(f, " *   written   by kope %s on %s\n */\n", KOPE_VERSION, date);
}

/* ----------------------------------------------------------- kernel show --- */

/* The tree and node a TASK name/id or a decision/outcome id points at. */
/* Distinct task records named `name` (any target): a name is not an
 * identity, a suite or a peer may define it again. */
struct named_ctx {
    const char *name;
    int n;
    char first[GRAPH_ID_HEX], second[GRAPH_ID_HEX];
};

static int named_cb(void *ctx, const struct store_rec *r)
{
    struct named_ctx *c = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const char *name = jstr(jget(j, "body"), "name");
    if (name && strcmp(name, c->name) == 0) {
        char hex[GRAPH_ID_HEX];
        util_hex(r->id, 32, hex);
        if (c->n == 0 || (strcmp(hex, c->first) != 0 && (c->n < 2 || strcmp(hex, c->second) != 0))) {
            snprintf(c->n == 0 ? c->first : c->second, GRAPH_ID_HEX, "%s", hex);
            c->n++;
        }
    }
    cJSON_Delete(j);
    return 0;
}

static int resolve(struct graph *g, const char *what, struct graph_tree *t, int *node, char *err, size_t cap)
{
    uint8_t task[32];
    struct graph_rec r;
    struct named_ctx nc = {what, 0, "", ""};
    if (store_rec_query(g->st, STORE_Q_TASKS, NULL, 0, named_cb, &nc) == 0 && nc.n > 1) {
        snprintf(err, cap,
                 "%d different tasks are named '%s' in this store (a suite or a peer defined it again, with "
                 "another shape or tolerance), e.g. %.12s and %.12s: give the task's id (`kope graph log` "
                 "lists them)", nc.n, what, nc.first, nc.second);
        return KOPE_ERR_USAGE;
    }
    int rc = graph_task_find(g, what, task);
    const char *want_dec = NULL;
    char dec_hex[GRAPH_ID_HEX] = "";
    memset(&r, 0, sizeof r);
    if (rc) {
        /* not a task: a decision or outcome id */
        if (graph_get(g, what, &r) != 0) {
            snprintf(err, cap, "no task or record '%s' in this store (see `kope graph log`)", what);
            return KOPE_ERR_NOTFOUND;
        }
        const cJSON *body = jget(r.json, "body");
        const char *th = jstr(body, "task");
        if ((strcmp(r.kind, "decision") != 0 && strcmp(r.kind, "outcome") != 0) || !th ||
            util_unhex(th, task, 32)) {
            snprintf(err, cap, "record %.12s is a %s, not a task, decision or outcome", r.id_hex, r.kind);
            graph_rec_free(&r);
            return KOPE_ERR_USAGE;
        }
        if (strcmp(r.kind, "decision") == 0) {
            snprintf(dec_hex, sizeof dec_hex, "%s", r.id_hex);
        } else {
            const cJSON *par = jget(r.json, "parents");
            const cJSON *p0 = cJSON_GetArrayItem(par, 0);
            snprintf(dec_hex, sizeof dec_hex, "%s", cJSON_IsString(p0) ? p0->valuestring : "");
        }
        want_dec = dec_hex;
        graph_rec_free(&r);
    }
    if ((rc = graph_tree_load(g, task, t))) {
        snprintf(err, cap, "%s", g->err[0] ? g->err : kope_strerror(rc));
        return rc;
    }
    *node = -1;
    if (want_dec) {
        for (size_t i = 0; i < t->n; i++)
            if (strcmp(t->nodes[i].dec.id_hex, want_dec) == 0)
                *node = (int)i;
    } else {
        *node = graph_tree_best(t);
        if (*node < 0) {
            snprintf(err, cap, "task '%s' has no passing kernel yet (`kope graph log %s`)", what, what);
            graph_tree_free(t);
            return KOPE_ERR_NOTFOUND;
        }
    }
    if (*node < 0) {
        snprintf(err, cap, "decision of '%s' not found in its task's tree", what);
        graph_tree_free(t);
        return KOPE_ERR_NOTFOUND;
    }
    return 0;
}

static int kernel_show(struct cli *c, int argc, char **argv)
{
    const char *what = NULL;
    int header = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--header") == 0)
            header = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "kope kernel show: unknown option '%s'\n", argv[i]);
            return CLI_USAGE;
        } else if (!what)
            what = argv[i];
        else {
            fprintf(stderr, "kope kernel show: one TASK or ID\n");
            return CLI_USAGE;
        }
    }
    if (!what) {
        fprintf(stderr, "usage: kope kernel show TASK|ID [--header]\n");
        return CLI_USAGE;
    }
    struct graph g;
    struct graph_tree t;
    struct kx k;
    int node = -1, ret = CLI_FAIL;
    char err[512], date[32];
    memset(&k, 0, sizeof k);
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY)) /* reads only: works on read-only media */
        return CLI_FAIL;
    int rc = resolve(&g, what, &t, &node, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope kernel show: %s\n", err);
        graph_free(&g);
        return rc == KOPE_ERR_USAGE ? CLI_USAGE : CLI_FAIL;
    }
    const struct graph_node *nd = &t.nodes[node];
    const cJSON *db = jget(nd->dec.json, "body");
    const char *ref = jstr(db, "source");
    char *src = NULL;
    size_t len = 0;
    if (!ref || graph_blob_get(&g, ref, &src, &len)) {
        fprintf(stderr, "kope kernel show: decision %.12s has no source in this store\n", nd->dec.id_hex);
        goto out;
    }
    /* a decision without outcome, or a failed one, is shown with what it got */
    const char *status = nd->has_outcome ? jstr(jget(nd->out.json, "body"), "status") : NULL;
    if (nd->has_outcome && status && strcmp(status, "pass") == 0) {
        char why[400];
        int r = kx_load(&g, &t, node, nd->out.target, 1, &k, why, sizeof why);
        if (r < 0) {
            fprintf(stderr, "kope kernel show: %s\n", kope_strerror(r));
            goto out;
        }
        if (r == 1)
            fprintf(stderr, "kope kernel show: warning: %s\n", why);
        else {
            date_now(date, sizeof date);
            char head[512], ratios[512], shape[128];
            const char *method = method_head(&k, head, sizeof head);
            ratios_text(&k, ratios, sizeof ratios);
            shape_text(&k, shape, sizeof shape);
            if (header)
                provenance_write(stdout, &k, date);
            fprintf(stderr, "task %s (%s %s), decision %.12s, outcome %.12s: pass, %s; %s", k.task,
                    k.op_name, shape, k.dec_hex, k.out_hex, ratios, head);
            if (method) /* recorded text, maybe a peer's: control bytes escaped */
                termsafe_fputs(method, stderr);
            fputc('\n', stderr);
        }
    } else {
        const char *reason = nd->has_outcome ? jstr(jget(nd->out.json, "body"), "reason") : NULL;
        fprintf(stderr, "decision %.12s: %s%s", nd->dec.id_hex, status ? status : "no outcome yet",
                reason ? ": " : "");
        termsafe_fputs(reason, stderr);
        fputc('\n', stderr);
        if (header)
            printf("/* kope decision %s: %s (not a passing kernel) */\n", nd->dec.id_hex,
                   status ? status : "no outcome yet");
    }
    /* the stored source keeps its bytes (its hash); control bytes in it are
     * printed escaped, never raw (tests/redteam/outsider-source-escape-in-comment.c) */
    termsafe_fwrite(stdout, src, len);
    if (len && src[len - 1] != '\n')
        fputc('\n', stdout);
    ret = fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
out:
    free(src);
    kx_free(&k);
    graph_tree_free(&t);
    graph_free(&g);
    return ret;
}

int cli_kernel(struct cli *c, int argc, char **argv)
{
    if (cli_wants_help(argc, argv) || argc < 2 || strcmp(argv[1], "show") != 0) {
        FILE *f = cli_wants_help(argc, argv) ? stdout : stderr;
        fprintf(f, "usage: kope kernel show TASK|ID [--header]\n"
                   "\n"
                   "Prints a kernel's source on stdout: by default the task's best (the passing\n"
                   "decision with the highest speedup, as `kope graph log` marks it), or the\n"
                   "decision ID names (an outcome id shows its decision). Its outcome and how it\n"
                   "was measured go to stderr; --header also puts them on stdout as a comment.\n"
                   "Exit: 0 ok, 1 not found, 2 usage.\n");
        return f == stdout ? CLI_OK : CLI_USAGE;
    }
    return kernel_show(c, argc, argv);
}

/* ------------------------------------------------------ export: writers --- */

/* Shape kind of an op as the library's kope_ops.h names it. */
static char kind_of(enum plat_op op, enum plat_family fam, int rowwise)
{
    switch (fam) {
    case PLAT_FAM_ELEMENTWISE: return 'N';
    case PLAT_FAM_ACTIVATION: return rowwise ? 'R' : 'P';
    case PLAT_FAM_REDUCTION: return 'D';
    default: return op == PLAT_OP_GEMV ? 'V' : 'M';
    }
}

static char op_kind(enum plat_op op)
{
    return kind_of(op, plat_op_family(op), plat_op_is_rowwise(op));
}

static char kx_kind(const struct kx *k)
{
    return kind_of(k->op, k->fam, k->rowwise);
}

/* Per family: the signature's parameters and the call's arguments. */
static const char *const fam_params[PLAT_FAM_COUNT] = {
    "size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s",
    ("size_t rows, size_t cols, const float *x, float *out, const float *gamma, const float *beta,\n"
     "    const struct kope_scalars *s"),
    "size_t rows, size_t cols, const float *x, void *out",
    "size_t batch, size_t m, size_t n, size_t k, const float *a, const float *b, float *c",
};
static const char *const fam_args[PLAT_FAM_COUNT] = {
    "n, x, y, out, s", "rows, cols, x, out, gamma, beta, s", "rows, cols, x, out", "batch, m, n, k, a, b, c"};

/* The sizes the dispatcher compares, as C expressions of its arguments, and
 * the same sizes of an exported kernel's task. */
static int kind_dims(char kind, const char **expr)
{
    switch (kind) {
    case 'N': *expr = "(double)n"; return 1;
    case 'P': *expr = "(double)rows * (double)cols"; return 1;
    case 'M': *expr = "(double)batch, (double)m, (double)n, (double)k"; return 4;
    case 'V': *expr = "(double)m, (double)k"; return 2;
    default: *expr = "(double)rows, (double)cols"; return 2;
    }
}

static void kx_dims(const struct kx *k, double d[4])
{
    memset(d, 0, 4 * sizeof *d);
    switch (kx_kind(k)) {
    case 'N': case 'P': d[0] = (double)k->n; break;
    case 'M': d[0] = (double)(k->batch ? k->batch : 1); d[1] = (double)k->m; d[2] = (double)k->n; d[3] = (double)k->k; break;
    case 'V': d[0] = (double)k->m; d[1] = (double)k->k; break;
    default: d[0] = (double)k->rows; d[1] = (double)k->cols;
    }
}

/* What the library's writers write from: all kernels (ks, n), one (k), or a
 * text as it is. */
struct wctx {
    const struct kx *ks, *k;
    size_t n;
    const char *date;
    const char *text;
    size_t len;
};
typedef void writer_fn(FILE *f, const struct wctx *w);

/* DIR/NAME, written by body: every file of the library goes through this
 * one open, error and close path. 0 or KOPE_ERR_IO with err set. */
static int write_out(const char *dir, const char *name, writer_fn *body, const struct wctx *w, char *err,
                     size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* a new file, never through what was there: a link planted at this name
     * (into a Python .pth, a shell rc) is removed, not written through */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && unlink(path) != 0) {
        snprintf(err, cap, "cannot replace %.300s (not a regular file): %s", path, strerror(errno));
        return KOPE_ERR_IO;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f && fd >= 0)
        close(fd);
    if (!f) {
        snprintf(err, cap, "cannot write %.300s: %s", path, strerror(errno));
        return KOPE_ERR_IO;
    }
    body(f, w);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        snprintf(err, cap, "cannot write %.300s: %s", path, strerror(errno));
        return KOPE_ERR_IO;
    }
    return 0;
}

static void body_text(FILE *f, const struct wctx *w)
{
    fwrite(w->text, 1, w->len, f);
}

static int write_embedded(const char *dir, const char *target, const char *name, char *err, size_t cap)
{
    char ename[256];
    snprintf(ename, sizeof ename, "platform/%s/embed/lib/%s", target, name);
    const struct embed_file *e = embed_find(ename);
    if (!e && strcmp(name, "kernel_abi.h") == 0)
        e = embed_find("platform/kernel_abi.h");
    if (!e) {
        snprintf(err, cap, "this kope carries no %s for target '%s': it cannot export a library for it",
                 name, target);
        return KOPE_ERR_NOTFOUND;
    }
    struct wctx w = {.text = e->data, .len = e->len};
    return write_out(dir, name, body_text, &w, err, cap);
}

/* kernels/kope_<op>_<task>.c: provenance, then the source as judged, for
 * reading only: the library links the judged object beside it, never this. */
static void body_kernel(FILE *f, const struct wctx *w)
{
    const struct kx *k = w->k;
    provenance_write(f, k, w->date);
    fprintf(f, "/*\n * The library does not compile this file. It links %s.o beside it: the\n"
               " * object kope built from this source and judged (sha256 %s), its global\n"
               " * kope_kernel renamed %s and not one byte of code or data changed.\n"
               " * ---- the kernel's source as kope judged it (blob %s) ---- */\n",
            k->symbol, k->obj_sha256, k->symbol, k->src_ref);
    fwrite(k->src, 1, k->len, f);
    if (k->len && k->src[k->len - 1] != '\n')
        fputc('\n', f);
}

/* kope_kernels.mk: the shipped objects, for the library's Makefile (a list,
 * not a wildcard: an object left by an earlier export is never linked). */
static void body_mk(FILE *f, const struct wctx *w)
{
    fprintf(f, "# kope_kernels.mk - the judged objects this library ships (written by kope\n"
               "# kernels export; kernels.json says what each is)\nKERNEL_OBJ :=");
    for (size_t i = 0; i < w->n; i++)
        fprintf(f, " \\\n  kernels/%s.o", w->ks[i].symbol);
    fprintf(f, "\nUSER_REF_OBJ :=");
    for (size_t i = 0; i < w->n; i++)
        if (w->ks[i].ref)
            fprintf(f, " \\\n  kernels/kope_uref_%s.o", w->ks[i].symbol);
    fprintf(f, "\n");
}

/* Is ks[i] the first kernel of its user op (its dispatcher is written once)? */
static int user_op_first(const struct kx *ks, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (ks[j].ref && strcmp(ks[j].op_name, ks[i].op_name) == 0)
            return 0;
    return 1;
}

static void body_header(FILE *f, const struct wctx *w)
{
    const struct kx *ks = w->ks;
    size_t n = w->n;
    fprintf(f, "/*\n * kope_kernels.h - kernels exported by kope %s on %s (provenance: each\n"
               " * kernel's file and kernels.json). Include it and link libkope_kernels.a -lm.\n"
               " *\n * kope_<op>(...) for every op of kope's catalogue (kope_ops.h) calls the kernel\n"
               " * below measured at the shape nearest to the call's (log-scale distance), or\n"
               " * the portable scalar kope_scalar_<op> for ops with no kernel here. Every\n"
               " * kernel is correct at any size (kope verified tails and odd shapes); the\n"
               " * nearest shape is the one its speed was measured at.\n */\n"
               "#ifndef KOPE_KERNELS_H\n#define KOPE_KERNELS_H\n\n#include \"kope_ops.h\"\n\n",
            KOPE_VERSION, w->date);
    for (size_t i = 0; i < n; i++) {
        char shape[128], ratios[512];
        shape_text(&ks[i], shape, sizeof shape);
        ratios_text(&ks[i], ratios, sizeof ratios);
        fprintf(f, "/* task ");
        comment_str(f, ks[i].task);
        fprintf(f, ": %s%s %s; ", ks[i].op_name, ks[i].ref ? " (a user's own op)" : "", shape);
        comment_str(f, ratios);
        const char *ev = kx_evidence(&ks[i]);
        fprintf(f, "%s */\nkope_%s_fn %s;\n",
                strcmp(ev, "native-time") == 0       ? ""
                : strcmp(ev, "virtual-machine") == 0 ? " (emulated: a virtual machine)"
                : strcmp(ev, "emulated-vcost") == 0  ? " (emulated: vector-cost model)"
                                                     : " (emulated: instruction counts)",
                plat_family_name(ks[i].fam), ks[i].symbol);
    }
    /* a user op's dispatcher: not in kope_ops.h, which is the catalogue */
    for (size_t i = 0; i < n; i++)
        if (ks[i].ref && user_op_first(ks, i))
            fprintf(f, "/* %s, a user's own op: the kernel measured nearest the call's shape */\n"
                       "void kope_%s(%s);\n", ks[i].op_name, ks[i].op_name, fam_params[ks[i].fam]);
    fprintf(f, "\n#endif\n");
}

/* kope_<on>(): the kernels of op `on` and their shapes, or the scalar
 * fallback when there is none. */
static void dispatch_one(FILE *f, const struct kx *ks, size_t n, const char *on, enum plat_family fam,
                         char kind)
{
    const char *fn = plat_family_name(fam), *expr;
    int nd = kind_dims(kind, &expr);
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++)
        cnt += strcmp(ks[i].op_name, on) == 0;
    fprintf(f, "\n");
    if (cnt) {
        fprintf(f, "static kope_%s_fn *const f_%s[] = {", fn, on);
        for (size_t i = 0; i < n; i++)
            if (strcmp(ks[i].op_name, on) == 0)
                fprintf(f, "%s, ", ks[i].symbol);
        fprintf(f, "};\nstatic const double d_%s[][4] = {", on);
        for (size_t i = 0; i < n; i++)
            if (strcmp(ks[i].op_name, on) == 0) {
                double d[4];
                kx_dims(&ks[i], d);
                fprintf(f, "{%.0f, %.0f, %.0f, %.0f}, ", d[0], d[1], d[2], d[3]);
            }
        fprintf(f, "};\n");
    }
    fprintf(f, "void kope_%s(%s)\n{\n", on, fam_params[fam]);
    if (cnt) {
        fprintf(f, "    const double q[4] = {%s};\n", expr);
        fprintf(f, "    f_%s[kd_pick(d_%s, %zu, q, %d)](%s);\n}\n", on, on, cnt, nd, fam_args[fam]);
    } else {
        fprintf(f, "    kope_scalar_%s(%s); /* no kernel of this op exported */\n}\n", on, fam_args[fam]);
    }
}

static void body_dispatch(FILE *f, const struct wctx *w)
{
    const struct kx *ks = w->ks;
    size_t n = w->n;
    fprintf(f, "/* kope_dispatch.c - kope_<op> picks the exported kernel measured nearest to\n"
               " * the call's shape, else the scalar fallback (written by kope kernels export). */\n"
               "#include <math.h>\n#include \"kope_kernels.h\"\n\n"
               "/* index of the row of d (nd sizes each) nearest to q in log2 distance */\n"
               "static size_t kd_pick(const double (*d)[4], size_t rows, const double *q, int nd)\n{\n"
               "    size_t best = 0;\n    double bd = INFINITY;\n"
               "    for (size_t r = 0; r < rows; r++) {\n        double s = 0;\n"
               "        for (int i = 0; i < nd; i++) {\n"
               "            double e = log2(d[r][i] > 1 ? d[r][i] : 1) - log2(q[i] > 1 ? q[i] : 1);\n"
               "            s += e * e;\n        }\n"
               "        if (s < bd) {\n            bd = s;\n            best = r;\n        }\n    }\n"
               "    return best;\n}\n");
    for (int o = 0; o < PLAT_OP_COUNT; o++)
        dispatch_one(f, ks, n, plat_op_name((enum plat_op)o), plat_op_family((enum plat_op)o),
                     op_kind((enum plat_op)o));
    for (size_t i = 0; i < n; i++) /* user ops: always with a kernel, never a fallback */
        if (ks[i].ref && user_op_first(ks, i))
            dispatch_one(f, ks, n, ks[i].op_name, ks[i].fam, kx_kind(&ks[i]));
}

static void body_selftest_table(FILE *f, const struct wctx *w)
{
    const struct kx *ks = w->ks;
    size_t n = w->n;
    fprintf(f, "/* kope_selftest_table.h - the exported kernels and the task each was measured\n"
               " * on, for kope_selftest.c (written by kope kernels export). */\n"
               "\n");
    /* a user op's reference (ref_<symbol>.c, built scalar) and dispatcher */
    for (size_t i = 0; i < n; i++)
        if (ks[i].ref)
            fprintf(f, "kope_%s_fn kope_uref_%s;\n", plat_family_name(ks[i].fam), ks[i].symbol);
    fprintf(f, "\nstatic const struct kt_kernel kt_kernels[] = {\n");
    for (size_t i = 0; i < n; i++) {
        const struct kx *k = &ks[i];
        fprintf(f, "    {\"%s\", \"%s\", (kt_any)%s,\n     {.n = %llu, .rows = %llu, .cols = %llu, .m = %llu, "
                   ".k = %llu, .batch = %llu}, %.17g, %.17g",
                k->symbol, k->op_name, k->symbol, (unsigned long long)k->n,
                (unsigned long long)k->rows, (unsigned long long)k->cols, (unsigned long long)k->m,
                (unsigned long long)k->k, (unsigned long long)k->batch, k->rtol, k->atol);
        if (k->ref)
            fprintf(f, ",\n     {\"%s\", '%c', (kt_any)kope_uref_%s, 0, (kt_any)kope_%s, %.9g, %.9g, 1}", k->op_name,
                    kx_kind(k), k->symbol, k->op_name, k->in_lo, k->in_hi);
        fprintf(f, "},\n");
    }
    fprintf(f, "};\n");
}

static cJSON *shape_json(const struct kx *k)
{
    cJSON *s = cJSON_CreateObject();
    const char *keys[6] = {"n", "rows", "cols", "m", "k", "batch"};
    uint64_t v[6] = {k->n, k->rows, k->cols, k->m, k->k, k->batch};
    for (int i = 0; s && i < 6; i++)
        if (v[i])
            cJSON_AddNumberToObject(s, keys[i], (double)v[i]);
    return s;
}

struct refusal {
    char task[PLAT_NAME_MAX];
    char why[640];
};

static int write_manifest(const char *dir, const char *target, const struct kx *ks, size_t n,
                          const struct refusal *rf, size_t nr, const char *date, char *err, size_t cap)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *ref = cJSON_CreateArray();
    int rc = KOPE_ERR_NOMEM;
    char *txt = NULL;
    if (!root || !arr || !ref) {
        cJSON_Delete(arr);
        cJSON_Delete(ref);
        goto out;
    }
    cJSON_AddStringToObject(root, "format", "kope-kernels");
    cJSON_AddNumberToObject(root, "v", 1);
    cJSON_AddStringToObject(root, "kope_version", KOPE_VERSION);
    cJSON_AddStringToObject(root, "date", date);
    cJSON_AddStringToObject(root, "target", target);
    cJSON_AddItemToObject(root, "kernels", arr);
    cJSON_AddItemToObject(root, "refused", ref);
    for (size_t i = 0; i < n; i++) {
        const struct kx *k = &ks[i];
        cJSON *o = cJSON_CreateObject();
        char file[PLAT_NAME_MAX + 40], object[PLAT_NAME_MAX + 40];
        char *method = o ? method_text_new(k) : NULL;
        if (!method) {
            cJSON_Delete(o);
            goto out;
        }
        cJSON_AddItemToArray(arr, o);
        snprintf(file, sizeof file, "kernels/%s.c", k->symbol);
        snprintf(object, sizeof object, "kernels/%s.o", k->symbol);
        cJSON_AddStringToObject(o, "symbol", k->symbol);
        cJSON_AddStringToObject(o, "object", object);
        cJSON_AddStringToObject(o, "object_sha256", k->obj_sha256);
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "task", k->task);
        cJSON_AddStringToObject(o, "op", k->op_name);
        cJSON_AddStringToObject(o, "family", plat_family_name(k->fam));
        if (k->ref) {
            char rf_file[PLAT_NAME_MAX + 40], rf_obj[PLAT_NAME_MAX + 40];
            snprintf(rf_file, sizeof rf_file, "kernels/ref_%s.c", k->symbol);
            snprintf(rf_obj, sizeof rf_obj, "kernels/kope_uref_%s.o", k->symbol);
            cJSON_AddBoolToObject(o, "user_op", 1);
            cJSON_AddStringToObject(o, "ref_file", rf_file);
            cJSON_AddStringToObject(o, "ref_object", rf_obj);
            cJSON_AddStringToObject(o, "ref_blob", k->ref_blob);
        }
        cJSON_AddStringToObject(o, "dtype", "f32");
        cJSON_AddItemToObject(o, "shape", shape_json(k));
        cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
        cJSON_AddNumberToObject(tol, "rtol", k->rtol);
        cJSON_AddNumberToObject(tol, "atol", k->atol);
        cJSON_AddStringToObject(o, "target", k->target);
        cJSON_AddStringToObject(o, "task_id", k->task_hex);
        cJSON_AddStringToObject(o, "decision", k->dec_hex);
        cJSON_AddStringToObject(o, "outcome", k->out_hex);
        cJSON_AddStringToObject(o, "origin", k->origin_hex);
        cJSON_AddStringToObject(o, "source_blob", k->src_ref);
        const char *prop = jstr(k->dec_body, "proposer"), *params = jstr(k->dec_body, "params");
        cJSON_AddStringToObject(o, "proposer", prop ? prop : "");
        if (params)
            cJSON_AddStringToObject(o, "params", params);
        cJSON_AddBoolToObject(o, "emulated", k->emulated);
        cJSON_AddStringToObject(o, "evidence", kx_evidence(k));
        cJSON_AddStringToObject(o, "method", method);
        free(method);
        const cJSON *keep[] = {jget(k->out_body, "ratios"), jget(k->out_body, "speedup"),
                               jget(k->out_body, "baseline"), jget(k->out_body, "icount"),
                               jget(k->out_body, "median_ns"), jget(k->out_body, "repeats"),
                               jget(k->out_body, "spread"), jget(k->out_body, "metric"),
                               jget(k->out_body, "vcost")};
        static const char *const kn[] = {"ratios", "speedup", "baseline", "icount", "median_ns",
                                         "repeats", "spread", "metric", "vcost"};
        for (size_t j = 0; j < sizeof keep / sizeof keep[0]; j++)
            if (keep[j])
                cJSON_AddItemToObject(o, kn[j], cJSON_Duplicate(keep[j], 1));
    }
    for (size_t i = 0; i < nr; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto out;
        cJSON_AddItemToArray(ref, o);
        cJSON_AddStringToObject(o, "task", rf[i].task);
        cJSON_AddStringToObject(o, "reason", rf[i].why);
    }
    txt = cJSON_Print(root);
    if (!txt)
        goto out;
    size_t tl = strlen(txt);
    txt[tl] = '\n'; /* over the NUL: the text is written by length */
    struct wctx w = {.text = txt, .len = tl + 1};
    rc = write_out(dir, "kernels.json", body_text, &w, err, cap);
out:
    if (rc == KOPE_ERR_NOMEM)
        snprintf(err, cap, "out of memory writing kernels.json");
    free(txt);
    cJSON_Delete(root);
    return rc;
}

/* ------------------------------------------------------ export: choosing --- */

struct task_pick {
    uint8_t id[32];
    char name[PLAT_NAME_MAX];
    char target[32];
    int defs; /* distinct task records of this name and target (> 1: ambiguous) */
};

struct pick_ctx {
    struct task_pick *v;
    size_t n, cap;
    int nomem;
};

/* Every task record; a later record of the same name and target replaces an
 * earlier one (the latest task of a name wins, as in graph_task_find). */
static int pick_cb(void *ctx, const struct store_rec *r)
{
    struct pick_ctx *c = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const char *name = jstr(jget(j, "body"), "name");
    if (name && strlen(name) < PLAT_NAME_MAX) {
        size_t i;
        for (i = 0; i < c->n; i++)
            if (strcmp(c->v[i].name, name) == 0 && strcmp(c->v[i].target, r->target) == 0)
                break;
        if (i == c->n) {
            if (c->n == c->cap) {
                size_t nc = c->cap ? c->cap * 2 : 64;
                struct task_pick *nv = nc <= KX_MAX * 4 ? realloc(c->v, nc * sizeof *nv) : NULL;
                if (!nv) {
                    c->nomem = 1;
                    cJSON_Delete(j);
                    return 1;
                }
                c->v = nv;
                c->cap = nc;
            }
            c->n++;
            c->v[i].defs = 0;
        }
        if (c->v[i].defs == 0 || memcmp(c->v[i].id, r->id, 32) != 0)
            c->v[i].defs++;
        memcpy(c->v[i].id, r->id, 32);
        snprintf(c->v[i].name, sizeof c->v[i].name, "%s", name);
        snprintf(c->v[i].target, sizeof c->v[i].target, "%s", r->target);
    }
    cJSON_Delete(j);
    return 0;
}

/* Passing outcomes of t that the best definition (core/graph/graph.h) left out
 * although they rank above the best (any, when there is no best): verified
 * only at a reduced shape, or of another target. The first one's reason goes
 * to why; returns how many. */
static int passed_over(const struct graph_tree *t, int best, char *why, size_t cap)
{
    int n = 0;
    double br = best >= 0 ? graph_outcome_rank(&t->nodes[best].out) : 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct graph_node *nd = &t->nodes[i];
        const char *st = nd->has_outcome ? jstr(jget(nd->out.json, "body"), "status") : NULL;
        if (!st || strcmp(st, "pass") != 0 || graph_outcome_verified(&nd->out, t->task.target) ||
            (best >= 0 && graph_outcome_rank(&nd->out) <= br))
            continue;
        if (!n++) {
            if (strcmp(nd->out.target, t->task.target) != 0)
                snprintf(why, cap, "outcome %.12s is for target '%s', not '%s'", nd->out.id_hex,
                         nd->out.target, t->task.target);
            else
                snprintf(why, cap, "outcome %.12s was verified only at a reduced shape, not the task's",
                         nd->out.id_hex);
        }
    }
    return n;
}

/* When the best's outcome records no object hash (a kope before the export
 * shipped objects), the highest-ranked fully verified pass of the same
 * source that does (`kope run --remeasure` adds one; ties go to the older
 * record, so the best alone would never move): the same kernel, with
 * evidence the export can check. Else best itself. */
static int same_source_hashed(const struct graph_tree *t, int best)
{
    if (best < 0 || jstr(jget(t->nodes[best].out.json, "body"), "object_sha256"))
        return best;
    const char *src = jstr(jget(t->nodes[best].dec.json, "body"), "source");
    int pick = best;
    double pr = 0;
    for (size_t i = 0; src && i < t->n; i++) {
        const struct graph_node *nd = &t->nodes[i];
        const cJSON *ob = nd->has_outcome ? jget(nd->out.json, "body") : NULL;
        const char *st = jstr(ob, "status"), *s2 = jstr(jget(nd->dec.json, "body"), "source");
        if (!st || strcmp(st, "pass") != 0 || !jstr(ob, "object_sha256") || !s2 || strcmp(s2, src) != 0 ||
            !graph_outcome_verified(&nd->out, t->task.target))
            continue;
        double r = graph_outcome_rank(&nd->out);
        if (pick == best || r > pr) {
            pick = (int)i;
            pr = r;
        }
    }
    return pick;
}

static int name_in(const char *name, char **list, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

/* kope_<op>_<task> with the task name's other characters as '_', unique. */
static void make_symbol(struct kx *ks, size_t i)
{
    char base[sizeof ks[i].symbol];
    size_t off = (size_t)snprintf(base, sizeof base, "kope_%s_", ks[i].op_name);
    for (const char *p = ks[i].task; *p && off + 1 < sizeof base - 8; p++)
        base[off++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_');
    base[off] = '\0';
    snprintf(ks[i].symbol, sizeof ks[i].symbol, "%s", base);
    for (int suffix = 2;; suffix++) {
        int clash = 0;
        for (size_t j = 0; j < i; j++)
            clash |= strcmp(ks[j].symbol, ks[i].symbol) == 0;
        if (!clash)
            return;
        snprintf(ks[i].symbol, sizeof ks[i].symbol, "%.80s_%d", base, suffix);
    }
}

/* ------------------------------------------- export: the judged objects --- */

/* How to give a task's best an outcome this machine can ship: measure its
 * source again here, as a seed (the same source, so the export takes it:
 * same_source_hashed). Two %s: the task. */
#define REMEASURE_HINT "`kope kernel show %.64s > k.c && kope run --task %.64s --seed k.c --remeasure --budget 1`"

/* Build src (the kernel's, or its user op's reference) for task t with the
 * target's own compile - the same screen, flags, sandbox and object check as
 * the judge's build - and ship its object renamed to symbol at path. When
 * want_sha256 is given the object must hash to it (the judged object).
 * 0 shipped, 1 refused (why), negative: the platform failed (err). */
static int ship_one(struct platform *p, const struct plat_task *t, const struct kx *k, const char *src,
                    size_t len, const char *want_sha256, const char *symbol, const char *path, char *why,
                    size_t why_cap, char *err, size_t err_cap)
{
    struct plat_build b;
    char hex[65], herr[256], rwhy[PLAT_DETAIL_MAX + 64];
    int refused = 1, rc = platform_compile(p, t, src, len, &b);
    if (rc) {
        snprintf(err, err_cap, "rebuilding it: %s (%s)", p->err, platform_strerror(rc));
        goto out;
    }
    if (!b.ok) {
        snprintf(why, why_cap, "%s does not build here: %s%s%s", want_sha256 ? "its source" : "its reference",
                 plat_fail_name(b.reason), b.detail[0] ? ": " : "", b.detail);
        rc = 1;
        goto out;
    }
    if ((rc = trial_object_hash(&b, hex, herr, sizeof herr))) {
        snprintf(err, err_cap, "hashing the rebuilt object: %s", herr);
        goto out;
    }
    if (want_sha256 && strcmp(hex, want_sha256) != 0) {
        struct plat_desc d;
        platform_describe(p, &d);
        int n = snprintf(why, why_cap, "judged object differs from this machine's rebuild (sha256 %.12s vs %.12s): "
                 "compiler '%.60s' vs '%.60s'; re-measure it here: " REMEASURE_HINT,
                 want_sha256, hex, k->toolchain[0] ? k->toolchain : "not recorded", d.cc, k->task, k->task);
        (void)n; /* a long compiler name may cut the hint: the reason stays whole */
        rc = 1;
        goto out;
    }
    if ((rc = platform_object_export(p, &b, symbol, path, &refused, rwhy, sizeof rwhy))) {
        snprintf(err, err_cap, "shipping its object: %s (%s)", p->err, platform_strerror(rc));
        goto out;
    }
    if (refused) {
        snprintf(why, why_cap, "%s", rwhy);
        rc = 1;
    }
out:
    platform_build_free(p, &b);
    return rc;
}

/* Ship k as DIR/kernels/<symbol>.o: the object kope judged, checked by
 * rebuilding it here against the hash its outcome records (and a user op's
 * reference as DIR/kernels/kope_uref_<symbol>.o, built and checked as a
 * candidate of its task). 0 shipped, 1 refused (why), negative (err). */
static int kx_ship(struct graph *g, struct platform *p, const struct kx *k, const char *dir, char *why,
                   size_t why_cap, char *err, size_t err_cap)
{
    struct task_suite one = {0};
    char path[4200], sym[PLAT_NAME_MAX + 48];
    if (!k->obj_sha256[0]) {
        snprintf(why, why_cap, "its outcome %.12s records no hash of the object kope judged (measured by an "
                 "older kope): re-measure it here: " REMEASURE_HINT ", then export again",
                 k->out_hex, k->task, k->task);
        return 1;
    }
    int rc = run_task_from_record(g, k->task_id, &one);
    if (rc) {
        snprintf(err, err_cap, "reading its task record: %s", kope_strerror(rc));
        return rc;
    }
    const struct plat_task *t = &one.tasks[0].t;
    snprintf(path, sizeof path, "%s/kernels/%s.o", dir, k->symbol);
    rc = ship_one(p, t, k, k->src, k->len, k->obj_sha256, k->symbol, path, why, why_cap, err, err_cap);
    if (!rc && k->ref) {
        snprintf(sym, sizeof sym, "kope_uref_%s", k->symbol);
        snprintf(path, sizeof path, "%s/kernels/%s.o", dir, sym);
        rc = ship_one(p, t, k, k->ref, k->ref_len, NULL, sym, path, why, why_cap, err, err_cap);
    }
    task_suite_free(&one);
    return rc;
}

static const char *const lib_files[] = {"Makefile", "kope_ops.h", "kope_ops.inc", "kope_scalar.c",
                                        "kope_ref.c", "kope_selftest.c", "kernel_abi.h"};

static int kernels_export(struct cli *c, int argc, char **argv)
{
    const char *dir = NULL, *suite = NULL, *target = NULL;
    int include_emulated = 0, n_want = 0;
    char **want = calloc((size_t)argc + 1, sizeof *want);
    if (!want) {
        fprintf(stderr, "kope kernels export: out of memory\n");
        return CLI_FAIL;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--suite") == 0 || strcmp(a, "--task") == 0 ||
             strcmp(a, "--target") == 0) && !v) {
            fprintf(stderr, "kope kernels export: %s needs a value\n", a);
            free(want);
            return CLI_USAGE;
        }
        if (strcmp(a, "-o") == 0)
            dir = argv[++i];
        else if (strcmp(a, "--suite") == 0)
            suite = argv[++i];
        else if (strcmp(a, "--task") == 0)
            want[n_want++] = argv[++i];
        else if (strcmp(a, "--target") == 0)
            target = argv[++i];
        else if (strcmp(a, "--include-emulated") == 0)
            include_emulated = 1;
        else {
            fprintf(stderr, "kope kernels export: unexpected argument '%s' (see --help)\n", a);
            free(want);
            return CLI_USAGE;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: kope kernels export -o DIR [--suite FILE] [--task T ...] [--target k3] "
                        "[--include-emulated]\n");
        free(want);
        return CLI_USAGE;
    }
    if (!target)
        target = cli_platform_name(c, NULL);

    int ret = CLI_FAIL, rc = 0;
    struct graph g;
    struct task_suite s = {0};
    struct pick_ctx pc = {0};
    struct kx *ks = NULL;
    struct refusal *rf = NULL;
    struct platform *p = NULL;
    size_t nk = 0, nr = 0;
    char err[1024] = "", date[32];
    date_now(date, sizeof date);
    if (cli_graph_open(c, &g, CLI_GRAPH_READONLY)) { /* reads the store only: works on read-only media */
        free(want);
        return CLI_FAIL;
    }
    if (suite && (rc = task_suite_load(suite, &s, err, sizeof err))) {
        fprintf(stderr, "kope kernels export: %s\n", err);
        goto out;
    }
    rc = store_rec_query(g.st, STORE_Q_TASKS, NULL, 0, pick_cb, &pc);
    if (pc.nomem || (rc < 0 && rc != STORE_ERR_NOTFOUND)) {
        fprintf(stderr, "kope kernels export: reading task records: %s\n",
                pc.nomem ? "out of memory" : store_errmsg(g.st));
        goto out;
    }
    ks = calloc(pc.n + 1, sizeof *ks);
    rf = calloc(pc.n + (size_t)n_want + 1, sizeof *rf);
    if (!ks || !rf) {
        fprintf(stderr, "kope kernels export: out of memory\n");
        goto out;
    }
    int explicit_refused = 0;
    /* a named task that has no record of this target at all */
    for (int w = 0; w < n_want; w++) {
        int here = 0;
        const char *other = NULL;
        for (size_t i = 0; i < pc.n; i++)
            if (strcmp(pc.v[i].name, want[w]) == 0) {
                if (strcmp(pc.v[i].target, target) == 0)
                    here = 1;
                else
                    other = pc.v[i].target;
            }
        if (!here) {
            snprintf(rf[nr].task, sizeof rf[nr].task, "%s", want[w]);
            if (other)
                snprintf(rf[nr].why, sizeof rf[nr].why, "its records are for target '%s', not '%s'", other, target);
            else
                snprintf(rf[nr].why, sizeof rf[nr].why, "no task of that name in this store");
            nr++;
            explicit_refused = 1;
        }
    }
    for (size_t i = 0; i < pc.n; i++) {
        const struct task_pick *tp = &pc.v[i];
        if (strcmp(tp->target, target) != 0 || (n_want && !name_in(tp->name, want, n_want)))
            continue;
        if (tp->defs > 1) {
            /* a suite or a peer gave the name another definition (shape,
             * tolerance): the library's symbol would be whichever came last */
            snprintf(rf[nr].task, sizeof rf[nr].task, "%s", tp->name);
            snprintf(rf[nr].why, sizeof rf[nr].why,
                     "%d different tasks of this name in the store (a suite or a peer defined it again, "
                     "with another shape or tolerance): not exported, the symbol would be ambiguous; "
                     "`kope graph log` lists their ids", tp->defs);
            nr++;
            if (n_want)
                explicit_refused = 1;
            continue;
        }
        struct graph_tree t;
        if ((rc = graph_tree_load(&g, tp->id, &t))) {
            fprintf(stderr, "kope kernels export: task %s: %s\n", tp->name, g.err[0] ? g.err : kope_strerror(rc));
            goto out;
        }
        if (suite) {
            /* the suite's task of that name, at the same op and shape */
            const struct task_entry *te = task_suite_find(&s, tp->name);
            struct kx probe;
            memset(&probe, 0, sizeof probe);
            uint64_t batch_te = te ? (te->t.batch > 1 ? te->t.batch : 0) : 0;
            if (!te) {
                graph_tree_free(&t);
                continue;
            }
            if (!spec_read(jget(t.task.json, "body"), &probe) || probe.op != te->t.op ||
                strcmp(probe.op_name, plat_task_op_name(&te->t)) != 0 ||
                probe.n != te->t.n || probe.rows != te->t.rows || probe.cols != te->t.cols ||
                probe.m != te->t.m || probe.k != te->t.k || (probe.batch > 1 ? probe.batch : 0) != batch_te) {
                char have[128], want_s[128];
                shape_text(&probe, have, sizeof have);
                task_shape_print(&te->t, want_s, sizeof want_s);
                snprintf(rf[nr].task, sizeof rf[nr].task, "%s", tp->name);
                snprintf(rf[nr].why, sizeof rf[nr].why, "this store's task is %s %s, the suite's %s %s",
                         probe.op_name, have, plat_task_op_name(&te->t), want_s);
                nr++;
                graph_tree_free(&t);
                continue;
            }
        }
        /* the best as `kope run` and the report see it (core/graph/graph.h) */
        int best = graph_tree_best(&t);
        int hashed = same_source_hashed(&t, best);
        if (hashed >= 0 && hashed != best) {
            fprintf(stderr, "kope kernels export: task %s: its best outcome %.12s records no object hash; "
                            "outcome %.12s of the same source does (re-measured): exporting that\n", tp->name,
                    t.nodes[best].out.id_hex, t.nodes[hashed].out.id_hex);
            best = hashed;
        }
        char why[640], over[300] = "";
        int r = 1, n_over = passed_over(&t, best, over, sizeof over);
        if (best < 0 && n_over)
            snprintf(why, sizeof why, "no passing kernel fully verified on this target: %s", over);
        else if (best < 0)
            snprintf(why, sizeof why, "no passing kernel recorded");
        else
            r = kx_load(&g, &t, best, target, include_emulated, &ks[nk], why, sizeof why);
        if (r == 0 && n_over)
            fprintf(stderr, "kope kernels export: task %s: %d higher-ranked outcome(s) not used: %s\n", tp->name,
                    n_over, over);
        graph_tree_free(&t);
        if (r < 0) {
            fprintf(stderr, "kope kernels export: task %s: %s\n", tp->name, kope_strerror(r));
            goto out;
        }
        if (r == 1) {
            snprintf(rf[nr].task, sizeof rf[nr].task, "%s", tp->name);
            snprintf(rf[nr].why, sizeof rf[nr].why, "%s", why);
            nr++;
            explicit_refused |= n_want > 0;
            continue;
        }
        make_symbol(ks, nk);
        nk++;
    }
    /* every chosen kernel rebuilt here and shipped as its judged object */
    if (nk) {
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/kernels", dir);
        if ((mkdir(dir, 0777) != 0 && errno != EEXIST) || (mkdir(sub, 0777) != 0 && errno != EEXIST)) {
            fprintf(stderr, "kope kernels export: cannot create %s: %s\n", sub, strerror(errno));
            goto out;
        }
        /* `make -C DIR`, the next step kope prints, reads GNUmakefile and
         * makefile before kope's Makefile: a folder holding one is not
         * kope's library (the outsider red team's planted GNUmakefile) */
        static const char *const shadows[] = {"GNUmakefile", "makefile"};
        for (size_t i = 0; i < 2; i++) {
            char mk[4300];
            struct stat sb;
            snprintf(mk, sizeof mk, "%s/%s", dir, shadows[i]);
            if (lstat(mk, &sb) == 0) {
                fprintf(stderr, "kope kernels export: %s holds a %s, which make would run instead of the "
                                "library's Makefile: export into a new or empty folder\n", dir, shadows[i]);
                goto out;
            }
        }
        struct plat_settings set;
        cli_platform_settings_for(c, target, &set);
        if ((rc = platform_open(target, &set, &p, err, sizeof err))) {
            fprintf(stderr, "kope kernels export: target %s: %s\nhint: the export rebuilds every kernel with "
                            "the target's own compile to ship the object kope judged\n", target, err);
            goto out;
        }
        size_t kept = 0;
        for (size_t i = 0; i < nk; i++) {
            char why[640];
            int r = kx_ship(&g, p, &ks[i], dir, why, sizeof why, err, sizeof err);
            if (r < 0) {
                fprintf(stderr, "kope kernels export: task %s: %s\n", ks[i].task, err);
                goto out;
            }
            if (r == 1) {
                snprintf(rf[nr].task, sizeof rf[nr].task, "%s", ks[i].task);
                snprintf(rf[nr].why, sizeof rf[nr].why, "%s", why);
                nr++;
                explicit_refused |= n_want > 0;
                kx_free(&ks[i]);
                continue;
            }
            if (kept != i) {
                ks[kept] = ks[i];
                memset(&ks[i], 0, sizeof ks[i]);
            }
            kept++;
        }
        nk = kept;
    }
    for (size_t i = 0; i < nr; i++)
        fprintf(stderr, "kope kernels export: not exported: task %s: %s\n", rf[i].task, rf[i].why);
    if (!nk) {
        size_t n_emu = 0;
        for (size_t i = 0; i < nr; i++)
            n_emu += strstr(rf[i].why, "--include-emulated") != NULL;
        fprintf(stderr, "kope kernels export: no kernel to export%s\n",
                !pc.n ? " (this store has no tasks: run `kope run` first)"
                : nr && n_emu == nr ? ": every kernel's evidence is emulated (k3 under qemu here); "
                                      "add --include-emulated to export them, marked so"
                                    : "");
        goto out;
    }
    for (size_t i = 0; i < sizeof lib_files / sizeof lib_files[0]; i++)
        if ((rc = write_embedded(dir, target, lib_files[i], err, sizeof err)))
            goto fail;
    for (size_t i = 0; i < nk; i++) {
        struct wctx w1 = {.k = &ks[i], .date = date};
        char name[PLAT_NAME_MAX + 40];
        snprintf(name, sizeof name, "kernels/%s.c", ks[i].symbol);
        if ((rc = write_out(dir, name, body_kernel, &w1, err, sizeof err)))
            goto fail;
        struct wctx wr = {.text = ks[i].ref, .len = ks[i].ref_len};
        snprintf(name, sizeof name, "kernels/ref_%s.c", ks[i].symbol);
        if (ks[i].ref && (rc = write_out(dir, name, body_text, &wr, err, sizeof err)))
            goto fail;
    }
    static const struct {
        const char *name;
        writer_fn *body;
    } gen[] = {{"kope_kernels.h", body_header},
               {"kope_dispatch.c", body_dispatch},
               {"kope_selftest_table.h", body_selftest_table},
               {"kope_kernels.mk", body_mk}};
    struct wctx wall = {.ks = ks, .n = nk, .date = date};
    for (size_t i = 0; i < sizeof gen / sizeof gen[0]; i++)
        if ((rc = write_out(dir, gen[i].name, gen[i].body, &wall, err, sizeof err)))
            goto fail;
    if ((rc = write_manifest(dir, target, ks, nk, rf, nr, date, err, sizeof err)))
        goto fail;
    size_t n_emu = 0;
    for (size_t i = 0; i < nk; i++)
        n_emu += (size_t)ks[i].emulated;
    printf("exported %zu kernel(s) to %s (%zu with emulated evidence only), %zu task(s) not exported\n", nk, dir,
           n_emu, nr);
    printf("build: make -C %s && make -C %s check\n", dir, dir);
    ret = explicit_refused ? CLI_FAIL : CLI_OK;
    goto out;
fail:
    fprintf(stderr, "kope kernels export: %s\n", err);
out:
    for (size_t i = 0; ks && i < nk; i++)
        kx_free(&ks[i]);
    free(ks);
    free(rf);
    free(pc.v);
    free(want);
    task_suite_free(&s);
    if (p)
        platform_close(p);
    graph_free(&g);
    return ret;
}

int cli_kernels(struct cli *c, int argc, char **argv)
{
    if (cli_wants_help(argc, argv) || argc < 2 || strcmp(argv[1], "export") != 0) {
        FILE *f = cli_wants_help(argc, argv) ? stdout : stderr;
        fprintf(f,
                "usage: kope kernels export -o DIR [--suite FILE] [--task T ...] [--target k3]\n"
                "                           [--include-emulated]\n"
                "\n"
                "Writes the best kernel of each task (default: every task of the target in\n"
                "this store; --suite: the suite's tasks at its shapes; --task: those named) as\n"
                "a C library in DIR that ships the objects kope judged: each kernel is rebuilt\n"
                "here with the target's own compile and its object shipped (kernels/*.o, its\n"
                "kope_kernel renamed kope_<op>_<task>, nothing else changed) only when it\n"
                "hashes to the object its outcome records; kernels/*.c hold the sources with\n"
                "their provenance, for reading. Also kope_kernels.h with per-op dispatchers\n"
                "kope_<op>() (nearest measured shape, else a portable scalar fallback), a\n"
                "Makefile (archives the objects, builds kope's own files with clang or gcc 14),\n"
                "a self-test (`make -C DIR check`: >= 1,100 calls per kernel, varied lengths,\n"
                "scalars and prior output, callee-saved registers checked) and kernels.json.\n"
                "\n"
                "Refused, each with its reason: a task whose records were altered in the store\n"
                "or are of another target, whose best was verified only at a reduced shape,\n"
                "whose outcome records no object hash or one this machine's rebuild does not\n"
                "give (re-measure it here: the message says how), whose object the object\n"
                "check refuses, or whose only evidence is emulated (qemu instruction counts)\n"
                "unless --include-emulated is given (kernels.json marks those).\n"
                "Exit: 0 ok, 1 nothing exported or a --task refused, 2 usage.\n");
        return f == stdout ? CLI_OK : CLI_USAGE;
    }
    return kernels_export(c, argc, argv);
}

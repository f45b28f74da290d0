/*
 * core/agent/trial.c - one trial (core/agent/trial.h): evaluate a candidate on the
 * target, record decision + outcome in one transaction; the history of a
 * task as the proposers read it; the "already measured" rule.
 *
 * Everything a resumed run needs is read back from the graph and the store,
 * never from memory: the trials of this run are the task's decisions of
 * this device (origin) whose body has "run": <this run>. Run numbers are
 * per store: decisions imported or synced from a peer carry the peer's.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "core/err.h"
#include "core/graph/graph.h"
#include "core/context/reply.h"
#include "core/secret.h"
#include "core/task/task.h"
#include "core/agent/trial.h"
#include "core/termsafe.h"
#include "core/interrupt.h"
#include "core/util.h"
#include "net/crypto.h"
#include "store/queue.h"
#include "store/store.h"

/* -------------------------------------------------------------- run state */


int run_fail(struct run *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->err_len, fmt, ap);
    va_end(ap);
    return rc ? rc : KOPE_ERR_INTERNAL;
}


int64_t run_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void run_say(struct run *r, const char *fmt, ...)
{
    if (!r->o->log)
        return;
    /* messages name seeds, tasks and reasons (outside text): through
     * termsafe, only the line erase is ours */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->o->tty)
        fputs("\r\033[K", r->o->log);
    termsafe_fputs(line, r->o->log);
    fflush(r->o->log);
}

long run_tokens(const struct run *r)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cursor, "tokens");
    return cJSON_IsNumber(t) ? (long)t->valuedouble : 0;
}

static void cursor_add_tokens(struct run *r, long n)
{
    cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cursor, "tokens");
    if (t)
        cJSON_SetNumberValue(t, t->valuedouble + (double)n);
    else
        cJSON_AddNumberToObject(r->cursor, "tokens", (double)n);
}

int run_cursor_save(struct run *r)
{
    if (!r->id)
        return 0;
    char *txt = cJSON_PrintUnformatted(r->cursor);
    if (!txt)
        return KOPE_ERR_NOMEM;
    int rc = store_run_set(r->g->st, r->id, NULL, txt);
    free(txt);
    return rc;
}

/* ----------------------------------------------------------- task records */

/* A plat_task back from a task record (for replies applied outside the
 * suite that asked for them). */
int run_task_from_record(struct graph *g, const uint8_t id[32], struct task_suite *s)
{
    char hex[GRAPH_ID_HEX], err[256];
    struct graph_rec rec;
    util_hex(id, 32, hex);
    int rc = graph_get(g, hex, &rec);
    if (rc)
        return rc;
    cJSON *suite = cJSON_CreateObject(), *tasks = cJSON_CreateArray();
    cJSON *spec = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec.json, "body"), 1);
    graph_rec_free(&rec);
    if (!suite || !tasks || !spec) {
        cJSON_Delete(suite);
        cJSON_Delete(tasks);
        cJSON_Delete(spec);
        return KOPE_ERR_NOMEM;
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(spec, "ref");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "user_op")) && cJSON_IsString(ref)) {
        /* a user's own op keeps its family; its reference comes back from
         * its blob as inline source (core/task/task.h: a string with a newline) */
        char *text = NULL;
        size_t len = 0;
        rc = graph_blob_get(g, ref->valuestring, &text, &len);
        char *src = rc ? NULL : malloc(len + 2);
        if (src) {
            memcpy(src, text, len);
            src[len] = '\n'; /* the same program, and never taken for a file name */
            src[len + 1] = '\0';
            cJSON_ReplaceItemInObjectCaseSensitive(spec, "ref", cJSON_CreateString(src));
        }
        free(text);
        free(src);
        if (rc || !src) {
            cJSON_Delete(suite);
            cJSON_Delete(tasks);
            cJSON_Delete(spec);
            return rc ? rc : KOPE_ERR_NOMEM;
        }
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "family");
        /* a gemv's record carries the n = 1 of struct plat_task, which a
         * suite does not take (gemv takes m, k) */
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(spec, "op");
        cJSON *sh = cJSON_GetObjectItemCaseSensitive(spec, "shape");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(sh, "n");
        if (cJSON_IsString(op) && strcmp(op->valuestring, "gemv") == 0 && cJSON_IsNumber(n) && n->valuedouble == 1)
            cJSON_DeleteItemFromObjectCaseSensitive(sh, "n");
    }
    cJSON_AddStringToObject(suite, "suite", "record");
    cJSON_AddItemToArray(tasks, spec);
    cJSON_AddItemToObject(suite, "tasks", tasks);
    char *txt = cJSON_PrintUnformatted(suite);
    cJSON_Delete(suite);
    if (!txt)
        return KOPE_ERR_NOMEM;
    rc = task_suite_parse(txt, strlen(txt), s, err, sizeof err);
    free(txt);
    return rc;
}

int run_open_platform(struct run *r)
{
    if (r->p)
        return 0;
    char err[512];
    int rc = platform_open(r->target, r->o->plat, &r->p, err, sizeof err);
    if (rc)
        return run_fail(r, rc, "platform %s: %s", r->target, err);
    struct plat_desc d;
    platform_describe(r->p, &d);
    r->emulated = d.emulated;
    snprintf(r->toolchain, sizeof r->toolchain, "%s", d.cc);
    return 0;
}


/* ----------------------------------------------------- evaluating a kernel */

static void first_line(char *out, size_t cap, const char *text)
{
    size_t n = strcspn(text, "\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, text, n);
    out[n] = '\0';
}


static int open_fast(struct run *r)
{
    if (r->p_fast)
        return 0;
    struct plat_settings s;
    char err[512];
    if (r->o->plat)
        s = *r->o->plat;
    else
        plat_settings_init(&s);
    s.flags |= PLAT_SET_NO_BASELINES;
    return platform_open(r->target, &s, &r->p_fast, err, sizeof err);
}

int trial_object_hash(const struct plat_build *b, char hex[65], char *err, size_t err_len)
{
    char *bytes = NULL;
    size_t len = 0;
    uint8_t h[32];
    hex[0] = '\0';
    if (!b->object[0])
        return 0;
    int rc = util_read_file(b->object, TRIAL_OBJECT_MAX, &bytes, &len, err, err_len);
    if (rc)
        return KOPE_ERR_IO;
    net_sha256(bytes, len, h);
    free(bytes);
    util_hex(h, 32, hex);
    return 0;
}

/* The values at a failing case's first bad element, as the judge reported
 * them (platform.h struct plat_case): "; element I: x=X y=Y expected R, got
 * G (0xBITS)". The bits are always given: a NaN's payload says whether the
 * element was never written (H_FILL_BITS) or computed. "" when the judge
 * gave none (an input or canary failure, a target without them). */
void trial_fail_values(enum plat_op op, const struct plat_case *c, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!c->has_vals || cap < 2)
        return;
    char in[96] = "", got[48];
    static const char *const nm[] = {"x", "y"};
    for (int i = 0, o = 0; i < c->n_in && i < 2 && o >= 0 && (size_t)o < sizeof in; i++)
        o += snprintf(in + o, sizeof in - (size_t)o, "%s=%.9g ", nm[i], c->in_at[i]);
    if (op == PLAT_OP_ARGMAX) {
        int32_t idx;
        memcpy(&idx, &c->got_bits, 4);
        snprintf(got, sizeof got, "index %ld", (long)idx);
    } else {
        float f;
        memcpy(&f, &c->got_bits, 4);
        snprintf(got, sizeof got, "%.9g", (double)f);
    }
    snprintf(dst, cap, "; element %llu: %sexpected %.9g, got %s (0x%08x)", (unsigned long long)c->first_bad, in,
             c->ref_at, got, (unsigned)c->got_bits);
}

/* Screen, compile, verify, measure. 0 = answered (vd->pass says how), or a
 * PLAT_ERR_* when the platform itself failed. bc may be NULL. */
static int evaluate(struct run *r, const struct plat_task *t, const struct proposal *pr, struct verdict *vd,
                    struct base_cache *bc)
{
    int rc;
    memset(vd, 0, sizeof *vd);
    vd->plat = r->p;
    if (bc && bc->have && r->emulated && open_fast(r) == 0)
        vd->plat = r->p_fast;
    struct platform *p = vd->plat;
    if (pr->status) { /* decided before evaluation: nothing to build */
        vd->status = pr->status;
        vd->stage = "reply";
        snprintf(vd->reason, sizeof vd->reason, "%s", pr->no_code ? pr->no_code : pr->status);
        return 0;
    }
    if (!pr->src) {
        vd->status = "no_code";
        vd->stage = "reply";
        snprintf(vd->reason, sizeof vd->reason, "%s", pr->no_code ? pr->no_code : "no kernel in the reply");
        return 0;
    }
    vd->stage = "compile";
    if ((rc = platform_compile(p, t, pr->src, pr->len, &vd->b)))
        return rc;
    if (!vd->b.ok) {
        vd->status = plat_fail_name(vd->b.reason);
        vd->diag = vd->b.diag;
        if (vd->b.reason == PLAT_FAIL_SCREEN_REJECTED)
            snprintf(vd->reason, sizeof vd->reason, "screen [%s]: %s",
                     plat_screen_rule_name(vd->b.screen_rule), vd->b.detail);
        else
            first_line(vd->reason, sizeof vd->reason, vd->b.diag[0] ? vd->b.diag : vd->b.detail);
        return 0;
    }
    /* hashed before any of its code runs: the outcome names the object the
     * verdict is about, so an export can ship exactly it (docs/KERNELS.md) */
    char herr[256];
    if (trial_object_hash(&vd->b, vd->object_sha256, herr, sizeof herr))
        return run_fail(r, KOPE_ERR_IO, "hashing the judged object: %s", herr);
    vd->stage = "verify";
    if ((rc = platform_verify(p, t, &vd->b, &vd->v)))
        return rc;
    if (!vd->v.pass) {
        vd->status = plat_fail_name(vd->v.reason);
        const struct plat_case *bad = NULL;
        for (int i = 0; i < vd->v.n_cases; i++)
            if (!vd->v.cases[i].pass) {
                bad = &vd->v.cases[i];
                break;
            }
        char where[200] = "", dims[128] = "", vals[200] = "";
        if (bad) { /* the case and its shape: the label alone may not say it */
            const unsigned long long d[] = {bad->n, bad->rows, bad->cols, bad->m, bad->k, bad->batch};
            static const char *const dn[] = {"n", "rows", "cols", "m", "k", "batch"};
            for (size_t i = 0, o = 0; i < 6 && o < sizeof dims; i++)
                if (d[i])
                    o += (size_t)snprintf(dims + o, sizeof dims - o, "%s%s=%llu", o ? " " : "", dn[i], d[i]);
            snprintf(where, sizeof where, " at case %s (%s)", bad->label, dims);
            trial_fail_values(t->op, bad, vals, sizeof vals);
        }
        snprintf(vd->reason, sizeof vd->reason, "%s%s%s (max_abs %.3g, max_rel %.3g)", vd->v.detail, where, vals,
                 vd->v.max_abs, vd->v.max_rel);
        return 0;
    }
    vd->stage = "measure";
    if ((rc = platform_measure(p, t, &vd->b, &vd->m)))
        return rc;
    if (p == r->p_fast && vd->m.ok) {
        vd->m.n_baselines = bc->n;
        vd->m.ratio_metric[0] = '\0';
        for (int i = 0; i < bc->n; i++) {
            const char *metric = "";
            vd->m.base[i] = bc->base[i];
            vd->m.base[i].ratio = vd->m.has_icount
                                      ? plat_emulated_ratio(vd->m.vcost, vd->m.icount, bc->base[i].vcost,
                                                            bc->base[i].icount, &metric) : 0;
            plat_metric_merge(vd->m.ratio_metric, metric);
        }
    } else if (bc && vd->m.ok && vd->m.has_icount && vd->m.n_baselines) {
        bc->have = 1;
        bc->n = vd->m.n_baselines;
        memcpy(bc->base, vd->m.base, sizeof bc->base);
    }
    if (!vd->m.ok) {
        vd->status = plat_fail_name(vd->m.reason);
        snprintf(vd->reason, sizeof vd->reason, "%s", vd->m.detail);
        return 0;
    }
    vd->pass = 1;
    vd->status = "pass";
    /* speedup against the strongest same-run baseline that is claimed:
     * autovec-O3 when present, else the first with a ratio */
    int pick = -1;
    for (int i = 0; i < vd->m.n_baselines; i++)
        if (vd->m.base[i].ratio > 0 && (pick < 0 || strstr(vd->m.base[i].name, "autovec")))
            pick = i;
    if (pick >= 0) {
        vd->speedup = vd->m.base[pick].ratio;
        snprintf(vd->baseline, sizeof vd->baseline, "%s", vd->m.base[pick].name);
        vd->score = vd->speedup;
    } else {
        vd->score = vd->m.median_ns > 0 ? 1e9 / vd->m.median_ns : 0; /* time only: no claim */
    }
    if (pick < 0 && strncmp(vd->m.detail, PLAT_NOT_MEASURED, strlen(PLAT_NOT_MEASURED)) == 0)
        snprintf(vd->reason, sizeof vd->reason, "%s", vd->m.detail); /* kope run prints it */
    else
        snprintf(vd->reason, sizeof vd->reason, "%s%s ratio", vd->m.emulated ? "emulated: " : "native ",
                 vd->m.ratio_metric[0] ? vd->m.ratio_metric : "time");
    return 0;
}

/* ------------------------------------------------------- recording a trial */

static cJSON *tags_json(const struct proposal *pr)
{
    cJSON *a = cJSON_CreateArray();
    if (!a)
        return NULL;
    cJSON_AddItemToArray(a, cJSON_CreateString(pr->proposer));
    if (pr->why)
        cJSON_AddItemToArray(a, cJSON_CreateString(pr->why));
    if (pr->label[0]) {
        /* "add LMUL=4 UNROLL=2" -> "lmul=4", "unroll=2" */
        const char *s = strchr(pr->label, ' ');
        while (s && *s) {
            s += strspn(s, " ");
            size_t n = strcspn(s, " ");
            char tag[REPLY_MAX_TAG_LEN];
            if (n && n < sizeof tag) {
                for (size_t i = 0; i < n; i++)
                    tag[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
                tag[n] = '\0';
                cJSON_AddItemToArray(a, cJSON_CreateString(tag));
            }
            s += n;
        }
    }
    for (size_t i = 0; i < pr->n_tags; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(pr->tags[i]));
    return a;
}

/* One transaction: blobs, decision, outcome, cursor, queue row done. */
static int record(struct run *r, const uint8_t task[32], int trial, const struct proposal *pr,
                  const struct verdict *vd, uint8_t dec_id[32], uint8_t out_id[32])
{
    int rc = KOPE_ERR_NOMEM;
    char ref[GRAPH_BLOB_REF], dref[GRAPH_BLOB_REF];
    cJSON *db = cJSON_CreateObject(), *ob = cJSON_CreateObject();
    if (!db || !ob)
        goto out;
    if ((rc = graph_begin(r->g)))
        goto out;
    if (pr->src) {
        if ((rc = graph_blob_put(r->g, pr->src, pr->len, ref)))
            goto rollback;
        cJSON_AddStringToObject(db, "source", ref);
    }
    cJSON_AddItemToObject(db, "tags", tags_json(pr));
    cJSON_AddStringToObject(db, "proposer", pr->proposer);
    if (pr->label[0])
        cJSON_AddStringToObject(db, "params", pr->label);
    if (pr->rationale)
        cJSON_AddStringToObject(db, "rationale", pr->rationale);
    if (pr->taken && pr->taken[0]) /* the next prompt says which block was judged */
        cJSON_AddStringToObject(db, "taken", pr->taken);
    else if (pr->why)
        cJSON_AddStringToObject(db, "rationale", pr->why);
    if (r->id)
        cJSON_AddNumberToObject(db, "run", (double)r->id);
    if (r->toolchain[0]) /* what "the same point" means: same source, same build */
        cJSON_AddStringToObject(db, "toolchain", r->toolchain);
    cJSON_AddNumberToObject(db, "trial", trial);
    if (pr->tokens_in || pr->tokens_out) {
        cJSON *tk = cJSON_AddObjectToObject(db, "tokens");
        cJSON_AddNumberToObject(tk, "in", (double)pr->tokens_in);
        cJSON_AddNumberToObject(tk, "out", (double)pr->tokens_out);
    }
    if (pr->qid)
        cJSON_AddNumberToObject(db, "queue", (double)pr->qid);
    if ((rc = graph_decision_add(r->g, task, pr->parent, r->target, db, dec_id)))
        goto rollback;

    cJSON_AddStringToObject(ob, "status", vd->status);
    cJSON_AddStringToObject(ob, "stage", vd->stage);
    cJSON_AddStringToObject(ob, "reason", vd->reason); /* redacted by trial_run */
    if (vd->diag && vd->diag[0]) {
        if ((rc = graph_blob_put(r->g, vd->diag, strlen(vd->diag), dref)))
            goto rollback;
        cJSON_AddStringToObject(ob, "diag", dref);
    }
    /* verified only at a cut-down shape (the emulation cap): the graph's best
     * and the kernel export skip such an outcome (platform_verify says so) */
    if (vd->v.reduced_shape)
        cJSON_AddBoolToObject(ob, "reduced_shape", 1);
    /* how it was verified (the VLENs) and the seed of the drawn sizes, as
     * text (64 bits do not fit a JSON number): a failure can be replayed
     * with platform.k3.verify_seed */
    if (vd->v.method[0])
        cJSON_AddStringToObject(ob, "verify_method", vd->v.method);
    if (vd->v.size_seed) {
        char seed[24];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)vd->v.size_seed);
        cJSON_AddStringToObject(ob, "verify_seed", seed);
    }
    if (!vd->pass && vd->v.n_cases) /* the failing values, machine-readable beside the reason */
        for (int i = 0; i < vd->v.n_cases; i++) {
            const struct plat_case *c = &vd->v.cases[i];
            if (c->pass)
                continue;
            if (c->has_vals) {
                cJSON *fv = cJSON_AddObjectToObject(ob, "failing");
                char hex[12];
                snprintf(hex, sizeof hex, "0x%08x", (unsigned)c->got_bits);
                cJSON_AddStringToObject(fv, "case", c->label);
                cJSON_AddNumberToObject(fv, "index", (double)c->first_bad);
                cJSON_AddStringToObject(fv, "got_bits", hex);
                /* JSON has no NaN/Inf: a non-finite expected value as text */
                if (isfinite(c->ref_at))
                    cJSON_AddNumberToObject(fv, "expected", c->ref_at);
                else
                    cJSON_AddStringToObject(fv, "expected", isnan(c->ref_at) ? "nan" : c->ref_at > 0 ? "inf" : "-inf");
                cJSON *in = cJSON_AddArrayToObject(fv, "inputs");
                for (int k = 0; k < c->n_in && k < 2; k++)
                    cJSON_AddItemToArray(in, cJSON_CreateNumber(c->in_at[k]));
            }
            break;
        }
    if (vd->object_sha256[0]) /* the judged object: what `kope kernels export` ships */
        cJSON_AddStringToObject(ob, "object_sha256", vd->object_sha256);
    if (vd->b.has_spills) { /* the object's stack traffic: the next prompt's cost breakdown */
        cJSON *sp = cJSON_AddObjectToObject(ob, "spills");
        cJSON_AddNumberToObject(sp, "vreg_stores", vd->b.vreg_spills);
        cJSON_AddNumberToObject(sp, "vreg_loads", vd->b.vreg_reloads);
        cJSON_AddNumberToObject(sp, "stack_stores", vd->b.stack_stores);
        cJSON_AddNumberToObject(sp, "stack_loads", vd->b.stack_loads);
    }
    if (vd->pass) {
        cJSON_AddBoolToObject(ob, "emulated", vd->m.emulated);
        if (vd->baseline[0]) {
            cJSON_AddNumberToObject(ob, "speedup", vd->speedup);
            cJSON_AddStringToObject(ob, "baseline", vd->baseline);
        }
        cJSON *ra = cJSON_AddObjectToObject(ob, "ratios");
        for (int i = 0; i < vd->m.n_baselines; i++)
            if (vd->m.base[i].ratio > 0)
                cJSON_AddNumberToObject(ra, vd->m.base[i].name, vd->m.base[i].ratio);
        if (vd->m.has_icount)
            cJSON_AddNumberToObject(ob, "icount", (double)vd->m.icount);
        if (vd->m.vcost)
            cJSON_AddNumberToObject(ob, "vcost", (double)vd->m.vcost);
        if (vd->m.has_icount) { /* the mix the cost breakdown splits vcost by */
            cJSON *mx = cJSON_AddObjectToObject(ob, "mix");
            cJSON_AddNumberToObject(mx, "vector_ops", (double)vd->m.icount_vector);
            cJSON_AddNumberToObject(mx, "vector_mem", (double)vd->m.icount_vmem);
            cJSON_AddNumberToObject(mx, "vsetvl", (double)vd->m.icount_vsetvl);
            if (vd->m.hot_execs) { /* the hottest block: runs, and its instructions per run */
                cJSON *hb = cJSON_AddObjectToObject(mx, "hot");
                cJSON_AddNumberToObject(hb, "execs", (double)vd->m.hot_execs);
                cJSON_AddNumberToObject(hb, "insns", (double)vd->m.hot_insns);
                cJSON_AddNumberToObject(hb, "vector_ops", (double)vd->m.hot_vector);
                cJSON_AddNumberToObject(hb, "vector_mem", (double)vd->m.hot_vmem);
                cJSON_AddNumberToObject(hb, "vsetvl", (double)vd->m.hot_vsetvl);
            }
        }
        if (vd->m.mca_cycles) /* platform.k3.model mca:CPU; the method names the model */
            cJSON_AddNumberToObject(ob, "mca_cycles", (double)vd->m.mca_cycles);
        if (vd->m.ratio_metric[0])
            cJSON_AddStringToObject(ob, "metric", vd->m.ratio_metric);
        cJSON_AddNumberToObject(ob, "median_ns", vd->m.median_ns);
        /* ratios against the counts of baselines measured earlier in this
         * run for this task (emulated only: counts repeat exactly) */
        if (vd->plat && vd->plat == r->p_fast)
            cJSON_AddBoolToObject(ob, "baselines_cached", 1);
        /* how the verdict was reached, for an exported kernel's provenance */
        cJSON_AddNumberToObject(ob, "repeats", vd->m.repeats);
        cJSON_AddNumberToObject(ob, "spread", vd->m.spread);
        /* natively: the A/A noise floor, and the baselines whose time ratio
         * is inside it; when the claimed one is, the claim is "no difference" */
        if (vd->m.has_noise_floor) {
            cJSON_AddNumberToObject(ob, "noise_floor", vd->m.noise_floor);
            cJSON *nd = cJSON_AddArrayToObject(ob, "no_difference");
            int claimed_same = 0;
            for (int i = 0; i < vd->m.n_baselines; i++)
                if (vd->m.base[i].no_difference) {
                    cJSON_AddItemToArray(nd, cJSON_CreateString(vd->m.base[i].name));
                    claimed_same |= strcmp(vd->m.base[i].name, vd->baseline) == 0;
                }
            cJSON_AddStringToObject(ob, "verdict", !vd->baseline[0] ? "not claimed"
                                                   : claimed_same ? "no difference"
                                                   : vd->speedup > 1 ? "faster"
                                                   : vd->speedup < 1 ? "slower" : "no difference");
        }
        if (vd->m.method[0])
            cJSON_AddStringToObject(ob, "method", vd->m.method);
        if (vd->m.flops > 0) /* nominal work of the shape: the report's roofline */
            cJSON_AddNumberToObject(ob, "flops", vd->m.flops);
        if (vd->m.bytes > 0)
            cJSON_AddNumberToObject(ob, "bytes", vd->m.bytes);
        cJSON_AddNumberToObject(ob, "score", vd->score);
    }
    if ((rc = graph_outcome_add(r->g, task, dec_id, r->target, ob, out_id)))
        goto rollback;
    if (pr->qid && (rc = store_queue_done(r->g->st, pr->qid)))
        goto rollback;
    if (r->cursor && (pr->tokens_in || pr->tokens_out)) {
        cursor_add_tokens(r, pr->tokens_in + pr->tokens_out);
        if ((rc = run_cursor_save(r)))
            goto rollback;
    }
    rc = graph_commit(r->g);
    goto out;
rollback:
    graph_rollback(r->g);
out:
    cJSON_Delete(db);
    cJSON_Delete(ob);
    return rc;
}

/* --------------------------------------------------------- a task's history */

const cJSON *history_body(const struct graph_rec *rec, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec->json, "body"), key);
}

int history_pass(const struct graph_node *n)
{
    const cJSON *s = n->has_outcome ? history_body(&n->out, "status") : NULL;
    return cJSON_IsString(s) && strcmp(s->valuestring, "pass") == 0;
}

void history_free(struct history *h)
{
    graph_tree_free(&h->tree);
    free(h->idx);
    memset(h, 0, sizeof *h);
}

/* This run's trials, tokens, first pass and the task's best, from the
 * tree in memory (after a load or an append). */
static int history_index(const struct run *r, struct history *h)
{
    free(h->idx);
    h->n = 0;
    h->tokens = 0;
    h->first_pass = h->best_trial = 0;
    h->best = -1;
    h->idx = calloc(h->tree.n + 1, sizeof *h->idx);
    if (!h->idx)
        return KOPE_ERR_NOMEM;
    char me[GRAPH_ID_HEX];
    util_hex(r->g->origin, 32, me);
    for (size_t i = 0; i < h->tree.n; i++) {
        const struct graph_node *n = &h->tree.nodes[i];
        const cJSON *run = history_body(&n->dec, "run");
        const cJSON *origin = cJSON_GetObjectItemCaseSensitive(n->dec.json, "origin");
        if (!r->id || !cJSON_IsNumber(run) || (int64_t)run->valuedouble != r->id || !n->has_outcome)
            continue;
        /* run numbers are this store's: a peer's run 1 is experience (in
         * the tree, the best, the tuner's measured points), never a trial
         * of our run 1 */
        if (!cJSON_IsString(origin) || strcmp(origin->valuestring, me) != 0)
            continue;
        h->idx[h->n++] = (int)i;
        const cJSON *tk = history_body(&n->dec, "tokens");
        if (cJSON_IsObject(tk)) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(tk, "in");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(tk, "out");
            h->tokens += (long)((cJSON_IsNumber(a) ? a->valuedouble : 0) + (cJSON_IsNumber(b) ? b->valuedouble : 0));
        }
        if (history_pass(n) && !h->first_pass)
            h->first_pass = (int)h->n;
    }
    /* the run starts from, and reports, the task's best in the whole graph */
    h->best = graph_tree_best(&h->tree);
    for (size_t k = 0; h->best >= 0 && k < h->n; k++)
        if (h->idx[k] == h->best)
            h->best_trial = (int)k + 1;
    return 0;
}

int history_load(struct run *r, const uint8_t task[32], struct history *h)
{
    memset(h, 0, sizeof *h);
    h->best = -1;
    int rc = graph_tree_load(r->g, task, &h->tree);
    return rc ? rc : history_index(r, h);
}

int history_add(struct run *r, struct history *h, const struct verdict *vd)
{
    int rc = graph_tree_add(r->g, &h->tree, vd->dec_id, vd->out_id);
    return rc ? rc : history_index(r, h);
}


/* ------------------------------------------------- the already-measured rule */

int history_measured(const struct run *r, const struct history *h, size_t i)
{
    const struct graph_node *n = &h->tree.nodes[i];
    if (r->o && (r->o->remeasure || r->o->no_memory)) /* asked to, or no memory at all (ablation) */
        return 0;
    const cJSON *tc = history_body(&n->dec, "toolchain");
    return n->has_outcome && graph_outcome_verified(&n->out, h->tree.task.target) && cJSON_IsString(tc) &&
           strcmp(tc->valuestring, r->toolchain) == 0;
}

int trial_known(const struct run *r, const struct history *h, const char *src, size_t len)
{
    char ref[GRAPH_BLOB_REF];
    if (!src || graph_blob_ref(src, len, ref))
        return -1;
    for (size_t i = 0; i < h->tree.n; i++) {
        const cJSON *s = history_body(&h->tree.nodes[i].dec, "source");
        if (cJSON_IsString(s) && strcmp(s->valuestring, ref) == 0 && history_measured(r, h, i))
            return (int)i;
    }
    return -1;
}

/* Failures the same source and toolchain give again: judged by the source
 * alone, or by a judge whose inputs repeat. Not a timeout, a crash or a
 * memory limit, which a loaded machine may cause. */
static int failure_repeats(const char *status)
{
    static const char *const det[] = {"screen_rejected", "compile_error", "wrong_result", "nan_inf",
                                      "unwritten_output", "out_of_bounds_write", "input_modified", NULL};
    for (const char *const *p = det; *p; p++)
        if (strcmp(status, *p) == 0)
            return 1;
    return 0;
}

int trial_failed_before(const struct run *r, const struct history *h, const char *src, size_t len)
{
    char ref[GRAPH_BLOB_REF];
    if (!src || graph_blob_ref(src, len, ref) || (r->o && (r->o->remeasure || r->o->no_memory)))
        return -1;
    for (size_t i = 0; i < h->tree.n; i++) {
        const struct graph_node *n = &h->tree.nodes[i];
        const cJSON *s = history_body(&n->dec, "source"), *tc = history_body(&n->dec, "toolchain");
        const cJSON *st = history_body(&n->out, "status");
        if (n->has_outcome && cJSON_IsString(s) && strcmp(s->valuestring, ref) == 0 && cJSON_IsString(tc) &&
            strcmp(tc->valuestring, r->toolchain) == 0 && cJSON_IsString(st) && failure_repeats(st->valuestring))
            return (int)i;
    }
    return -1;
}

/* ------------------------------------------------------------- one trial */

int trial_run(struct run *r, const uint8_t task[32], const struct plat_task *t, int trial,
              const struct proposal *pr, struct base_cache *bc, struct verdict *vd)
{
    int rc = run_open_platform(r);
    if (rc)
        return rc;
    if ((rc = evaluate(r, t, pr, vd, bc))) {
        if (interrupt_pending()) /* the platform's child was stopped by the same signal */
            rc = KOPE_ERR_INTERRUPTED;
        else
            rc = run_fail(r, rc, "task %s: %s", t->name, vd->plat->err);
        platform_build_free(vd->plat, &vd->b);
        return rc;
    }
    /* A signal during the evaluation: its verdict may be the signal's (a
     * SIGTERM to the whole process group kills the compiler or the harness
     * too), so it is not recorded: the step is rolled back, the trial is
     * redone on resume (the tuner's next point is a function of the record). */
    if (interrupt_pending()) {
        platform_build_free(vd->plat, &vd->b);
        return KOPE_ERR_INTERRUPTED;
    }
    /* diagnostics that quote a secret of kope's (the compiler's kept lines
     * and the reason that quotes their first) are redacted, not refused:
     * the rest of the outcome is worth keeping (core/secret.h); the caller
     * prints the reason, record stores both. Everything else a trial
     * stores is refused by the graph on a hit. */
    secret_redact(vd->reason, sizeof vd->reason);
    secret_redact(vd->b.diag, sizeof vd->b.diag);
    rc = record(r, task, trial, pr, vd, vd->dec_id, vd->out_id);
    platform_build_free(vd->plat, &vd->b);
    vd->diag = NULL; /* it pointed into the build */
    if (rc)
        return run_fail(r, rc, "task %s: recording trial %d: %s", t->name, trial,
                    r->g->err[0] ? r->g->err : kope_strerror(rc));
    return 0;
}

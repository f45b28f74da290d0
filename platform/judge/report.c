/* platform/judge/report.c - parse a harness report. See report.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/proc.h"
#include "platform/judge/report.h"

void plat_run_classify(const struct proc_result *res, const struct plat_report *r, const char *refused,
                       const char *prog, enum plat_fail *reason, int *sig, char *detail, size_t dl)
{
    *reason = PLAT_FAIL_NONE;
    *sig = 0;
    detail[0] = '\0';
    if (res->flooded) {
        *reason = PLAT_FAIL_OUTPUT_FLOOD;
        snprintf(detail, dl, "printed over %llu bytes; killed", (unsigned long long)res->output_bytes);
    } else if (res->timed_out || res->cpu_limit) {
        *reason = PLAT_FAIL_TIMEOUT;
        snprintf(detail, dl, "%s after %.0f ms (kernel hang?); killed",
                 res->cpu_limit ? "CPU limit reached" : "no result", res->wall_ms);
    } else if (refused && refused[0]) {
        *reason = PLAT_FAIL_HARNESS;
        snprintf(detail, dl, "report refused: %s", refused);
    } else if (r->fail != PLAT_FAIL_NONE) {
        *reason = r->fail;
        *sig = r->fail_sig;
        snprintf(detail, dl, "%s", r->fail_detail);
    } else if (res->signaled) {
        *reason = PLAT_FAIL_CRASH;
        *sig = res->signal;
        snprintf(detail, dl, "%s killed by signal %d (%s)", prog, res->signal, strsignal(res->signal));
    } else if (!r->done) {
        *reason = PLAT_FAIL_HARNESS;
        snprintf(detail, dl, "%s ended without a report (exit %d, %llu bytes of output)", prog,
                 res->exit_code, (unsigned long long)res->output_bytes);
    } else {
        for (int i = 0; i < r->n_cases; i++)
            if (!r->cases[i].pass) {
                *reason = r->cases[i].reason;
                snprintf(detail, dl, "case %s: %s at element %llu", r->cases[i].label,
                         plat_fail_name(r->cases[i].reason), (unsigned long long)r->cases[i].first_bad);
                break;
            }
    }
}

enum plat_fail plat_fail_parse(const char *s)
{
    for (int f = 0; f < PLAT_FAIL_COUNT; f++)
        if (strcmp(plat_fail_name((enum plat_fail)f), s) == 0)
            return (enum plat_fail)f;
    return PLAT_FAIL_HARNESS;
}

/* The optional values after a failing case's 13 fields (hargs.h):
 * " got=0xBITS ref=R [x=X [y=Y]]". Anything else leaves has_vals 0; a
 * harness without them (the Ascend host program) parses as before. */
static void case_vals(const char *s, struct plat_case *c)
{
    unsigned got;
    int off = 0;
    if (sscanf(s, " got=0x%8x ref=%lf%n", &got, &c->ref_at, &off) != 2)
        return;
    c->got_bits = got;
    c->has_vals = 1;
    s += off;
    if (sscanf(s, " x=%lf%n", &c->in_at[0], &off) == 1) {
        c->n_in = 1;
        s += off;
        if (sscanf(s, " y=%lf", &c->in_at[1]) == 1)
            c->n_in = 2;
    }
}

/* The K3 harness says whether the kernel processes could add a seccomp
 * filter of their own ("seccomp(kernel process)=on(...)" / "=unavailable(WHY)").
 * Said that way next to kope's "isolation=...+seccomp" (the filter kope puts
 * on the whole run, which every process inherits) it read as a
 * contradiction: reworded to say, for the kernel processes, what applied. */
static const char *method_reword(const char *text, char *buf, size_t cap)
{
    static const char key[] = "seccomp(kernel process)=";
    if (strncmp(text, key, sizeof key - 1) != 0)
        return text;
    const char *v = text + sizeof key - 1;
    if (strncmp(v, "on(", 3) == 0)
        snprintf(buf, cap, "kernel processes: the isolation above plus their own seccomp filter (%.*s)",
                 (int)strcspn(v + 3, ")"), v + 3);
    else if (strncmp(v, "unavailable(", 12) == 0)
        snprintf(buf, cap, "kernel processes: the isolation above only, no seccomp filter of their own "
                 "(unavailable: %.*s)", (int)strcspn(v + 12, ")"), v + 12);
    else
        snprintf(buf, cap, "kernel processes: the isolation above; their own seccomp filter: %.200s", v);
    return buf;
}

/* Append one method line whole, or count it dropped: text is never cut
 * mid-sentence (issue 24), and the count is said at the end of the parse. */
static void method_add(struct plat_report *h, const char *text)
{
    char reworded[320];
    text = method_reword(text, reworded, sizeof reworded);
    size_t l = strlen(h->method), n = strlen(text), sep = l ? 2 : 0;
    if (h->method_dropped || l + sep + n + PLAT_REPORT_METHOD_MORE >= sizeof h->method) {
        h->method_dropped++; /* and every later one: the kept lines stay in order */
        return;
    }
    memcpy(h->method + l, "; ", sep);
    memcpy(h->method + l + sep, text, n + 1);
}

void plat_report_parse(char *text, struct plat_report *h)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strcmp(line, "done") == 0) {
            h->done = 1;
        } else if (strncmp(line, "fail ", 5) == 0) {
            char reason[48] = "";
            int sig = 0, off = 0;
            if (sscanf(line + 5, "%47s %d %n", reason, &sig, &off) >= 2 && h->fail == PLAT_FAIL_NONE) {
                h->fail = plat_fail_parse(reason);
                h->fail_sig = sig;
                snprintf(h->fail_detail, sizeof h->fail_detail, "%s", line + 5 + off);
            }
        } else if (strncmp(line, "case ", 5) == 0 && h->n_cases < PLAT_MAX_CASES) {
            struct plat_case *c = &h->cases[h->n_cases];
            char label[48], reason[48];
            unsigned long long v[6], fb;
            int pass, off = 0;
            memset(c, 0, sizeof *c);
            if (sscanf(line + 5, "%47s %llu %llu %llu %llu %llu %llu %d %47s %lf %lf %lf %llu%n", label,
                       &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &pass, reason, &c->max_abs,
                       &c->max_rel, &c->norm_err, &fb, &off) == 13) {
                if (!pass)
                    case_vals(line + 5 + off, c);
                snprintf(c->label, sizeof c->label, "%s", label);
                c->n = v[0]; c->rows = v[1]; c->cols = v[2]; c->m = v[3]; c->k = v[4]; c->batch = v[5];
                c->pass = pass;
                c->reason = plat_fail_parse(reason);
                c->first_bad = fb;
                h->n_cases++;
            }
        } else if (strncmp(line, "time ", 5) == 0 && h->n_times < PLAT_MAX_BASELINES + 1) {
            struct plat_report_time *t = &h->times[h->n_times];
            char name[PLAT_NAME_MAX];
            if (sscanf(line + 5, "%63s %lf %lf %lf %d %d", name, &t->med, &t->min, &t->spread,
                       &t->reps, &t->warm) == 6) {
                snprintf(t->name, sizeof t->name, "%s", name);
                h->n_times++;
            }
        } else if (strncmp(line, "cycles ", 7) == 0) {
            h->cycles = strtoull(line + 7, NULL, 10);
        } else if (strncmp(line, "method ", 7) == 0) {
            method_add(h, line + 7);
        } else if (strncmp(line, "region ", 7) == 0) {
            /* from the qemu plugin (platform/k3/qemu/icount_plugin.c):
             * region IDX insns N vector_ops N vector_mem N vsetvl N vcost N unmodelled N */
            int region;
            unsigned long long a, b, c, vs, vc, um;
            if (sscanf(line + 7, "%d insns %llu vector_ops %llu vector_mem %llu vsetvl %llu vcost %llu "
                       "unmodelled %llu", &region, &a, &b, &c, &vs, &vc, &um) == 7 && region >= 0 &&
                region <= PLAT_MAX_BASELINES) {
                h->icount[region][0] = a;
                h->icount[region][1] = b;
                h->icount[region][2] = c;
                h->icount[region][3] = um ? 0 : vc; /* an unmodelled region claims no vcost */
                h->icount[region][4] = vs;
                h->has_icount = 1;
            }
        }
    }
    if (h->method_dropped) { /* room for this was kept (PLAT_REPORT_METHOD_MORE) */
        size_t l = strlen(h->method);
        snprintf(h->method + l, sizeof h->method - l, "%s(%d more method line%s not kept)", l ? "; " : "",
                 h->method_dropped, h->method_dropped == 1 ? "" : "s");
    }
}

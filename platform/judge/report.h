/*
 * platform/judge/report.h - the report a target's harness program prints, line by
 * line, and its parser: shared by every target whose harness speaks it (the
 * K3 harness, platform/k3/embed/harness.c, and the Ascend host program,
 * platform/ascend/embed/host.cpp).
 *
 *   done                                   the program finished its work
 *   fail REASON SIG DETAIL...              the first failure (plat_fail_name)
 *   case LABEL n rows cols m k batch PASS REASON max_abs max_rel norm first_bad [vals]
 *                                          vals, failing cases only, optional:
 *                                          got=0xBITS ref=R [x=X [y=Y]] (hargs.h)
 *   time NAME median min spread reps warm  one timed kernel or baseline
 *   cycles N                               hardware cycles, when available
 *   method TEXT                            how the figures were obtained (appended
 *                                          whole; seccomp(kernel process)=X is
 *                                          reworded, see plat_report_parse)
 *   region IDX insns N vector_ops N vector_mem N vsetvl N vcost N unmodelled N
 *                                          from the qemu icount plugin
 *
 * Lines that do not parse are ignored: the caller judges a run by `done`.
 * Every array is capped; extra lines are dropped.
 */
#ifndef KOPE_JUDGE_REPORT_H
#define KOPE_JUDGE_REPORT_H

#include <stdint.h>

#include "platform/platform.h"

/* The judge's method lines kept (joined by "; "). A line that would not fit
 * whole is dropped, never cut, and the text then ends with how many were
 * (PLAT_REPORT_METHOD_MORE). The K3 harness prints about 600 bytes. */
#define PLAT_REPORT_METHOD_MAX 1400
#define PLAT_REPORT_METHOD_MORE 48 /* room kept for "; (N more method lines not kept)" */
_Static_assert(PLAT_REPORT_METHOD_MAX + 640 <= PLAT_METHOD_MAX,
               "plat_measure.method must hold the judge's method lines after kope's own phrase");

struct plat_report_time {
    char name[PLAT_NAME_MAX];
    double med, min, spread;
    int reps, warm;
};

struct plat_report {
    int done;
    enum plat_fail fail;          /* from a `fail` line, NONE if none */
    int fail_sig;
    char fail_detail[PLAT_DETAIL_MAX];
    struct plat_case cases[PLAT_MAX_CASES];
    int n_cases;
    struct plat_report_time times[PLAT_MAX_BASELINES + 1];
    int n_times;
    char method[PLAT_REPORT_METHOD_MAX]; /* the method lines, "; "-joined, whole */
    int method_dropped;           /* method lines that did not fit (said at method's end) */
    /* per timed name: insns, vector_ops, vector_mem, vcost (0 = unmodelled),
     * vsetvl (the configuration instructions, inside insns and not vector_ops) */
    uint64_t icount[PLAT_MAX_BASELINES + 1][5];
    /* per timed name, the hottest block (k3: from the plugin's block, not a
     * report line): executions, then instructions, vector_ops, vector_mem,
     * vsetvl per execution; all 0 = not known */
    uint64_t hot[PLAT_MAX_BASELINES + 1][5];
    int has_icount;
    uint64_t cycles;
};

/* The failure named s (as plat_fail_name prints it); PLAT_FAIL_HARNESS if unknown. */
enum plat_fail plat_fail_parse(const char *s);
/* Parse a report into *h, which the caller zeroed (text is modified). */
void plat_report_parse(char *text, struct plat_report *h);

/* A judged run's fate, most specific first: kope's own kills (output cap,
 * wall clock, CPU limit), a report kope refused (refused: why, "" or NULL
 * = trusted), the judge's own verdict (a `fail` line), a signal, a run that
 * ended without `done`, then the first failing case. Sets *reason
 * (PLAT_FAIL_NONE when none of these), *sig and detail. prog names the
 * program in a signal's detail ("harness", "host program"). What the run
 * printed is never quoted: a candidate may have written it. One rule for
 * every target (the K3 harness and the Ascend host program). */
struct proc_result;
void plat_run_classify(const struct proc_result *res, const struct plat_report *r, const char *refused,
                       const char *prog, enum plat_fail *reason, int *sig, char *detail, size_t dl);

#endif

/*
 * tests/fuzz_task.c - libFuzzer target for the parsers of outside bytes that
 * issue 3 added: task suites (core/task/task.c, hand-written JSON) and the K3
 * source screen (platform/k3/screen.c, LLM-written C). Not built by default;
 * needs clang-19 with compiler-rt (libclang-rt-19-dev). From the repo root:
 *
 *   make fuzz       # every tests/fuzz_*.c, into build/x86_64-fuzz/
 *   make fuzz-run FUZZ_SECONDS=60   # each in turn, on build/x86_64-fuzz/NAME.corpus
 *   build/x86_64-fuzz/fuzz_task -max_total_time=60 DIR   # this one alone
 *
 * Seed the corpus with a compiled candidate object too (any cand.o from a
 * k3 work dir). (The targets' ops tables are stubbed below: the fuzzer never opens a platform.)
 * The same bytes also go through the ELF object check, written to a file.
 * Invariants checked: a successful parse yields 1..TASK_MAX_TASKS tasks with
 * sizes >= 1 and operands within TASK_MAX_BYTES; a failed one leaves the
 * suite empty with a NUL-terminated message; the screen always terminates
 * with a rule that matches its verdict.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/jsonkeys.h"
#include "core/task/task.h"
#include "platform/k3/k3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

const struct platform_ops plat_k3_ops = {.name = "k3"};
const struct platform_ops plat_ascend_ops = {.name = "ascend"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct task_suite s;
    char err[256];
    err[0] = '\0';
    int rc = task_suite_parse((const char *)data, size, &s, err, sizeof err);
    if (rc == 0) {
        /* the key walk runs on text the parser accepted (as task_suite_load does) */
        static const struct jk_key keys[] = {{"suite", JK_ANY}, {"tasks", JK_ARR}, {"tasks[]", JK_OBJ},
                                             {"tasks[].shape", JK_OBJ}, {"tasks[].shape.*", JK_NUM},
                                             {"tasks[].*", JK_ANY}};
        char kerr[512];
        kerr[0] = '\0';
        int kr = jsonkeys_check("fuzz", (const char *)data, size, keys, sizeof keys / sizeof keys[0], kerr,
                                sizeof kerr);
        if (kr && (!memchr(kerr, '\0', sizeof kerr) || !kerr[0]))
            abort();
        if (s.n_tasks == 0 || s.n_tasks > TASK_MAX_TASKS)
            abort();
        for (size_t i = 0; i < s.n_tasks; i++) {
            const struct plat_task *t = &s.tasks[i].t;
            if (task_bytes(t) > TASK_MAX_BYTES || task_bytes(t) <= 0)
                abort();
            if (t->rtol < 0 || t->atol < 0 || !memchr(t->name, '\0', sizeof t->name))
                abort();
        }
        task_suite_free(&s);
    } else if (s.tasks || s.n_tasks || !memchr(err, '\0', sizeof err) || !err[0]) {
        abort();
    }

    enum plat_screen_rule rule;
    char detail[128];
    int r = k3_screen_source((const char *)data, size, &rule, detail, sizeof detail);
    if ((r == 0) != (rule == PLAT_SCREEN_NONE) || !memchr(detail, '\0', sizeof detail))
        abort();

    /* the same bytes as a compiled object for the ELF object check */
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/kope-fuzz-obj-%d.o", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
        r = k3_screen_object(path, &rule, detail, sizeof detail);
        if (r < -399 || r > 1 || (r == 1 && rule == PLAT_SCREEN_NONE) ||
            !memchr(detail, '\0', sizeof detail))
            abort();
    }
    return 0;
}

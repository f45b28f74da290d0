/*
 * tests/fuzz_ascend.c - libFuzzer target for the parsers of outside bytes in
 * platform/ascend: `npu-smi info` output, platform_config .ini text, msprof's
 * OpBasicInfo.csv, the Ascend C source screen, and the host program's report
 * file with kope's check of it (report_check: the expected case list). The
 * first input byte picks the parser. Not built by default; needs clang-19
 * with compiler-rt. From the repo root:
 *
 *   make fuzz       # every tests/fuzz_*.c, into build/x86_64-fuzz/
 *   make fuzz-run FUZZ_SECONDS=60   # each in turn, on build/x86_64-fuzz/NAME.corpus
 *   build/x86_64-fuzz/fuzz_ascend -max_total_time=60 DIR   # this one alone
 *
 * Invariants: every parser terminates; names stay NUL-terminated within
 * their fields; sample counts never pass the cap; the screen's verdict and
 * rule agree; report parsing never keeps more cases/times than it has room for.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/ascend/ascend.c" /* report_parse is static */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

const struct platform_ops plat_k3_ops = {.name = "k3"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    int which = data[0] % 5;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    struct asc_toolkit *tk = calloc(1, sizeof *tk);
    switch (which) {
    case 0:
        if (asc_npu_smi_parse(text, tk) < 0 || !memchr(tk->npu_name, '\0', sizeof tk->npu_name) ||
            !memchr(tk->npu_health, '\0', sizeof tk->npu_health) ||
            !memchr(tk->smi_version, '\0', sizeof tk->smi_version) || tk->npu_found != (tk->n_npus > 0))
            abort();
        break;
    case 1:
        asc_soc_ini_parse(text, tk);
        break;
    case 2: {
        double ns[8];
        int n = 0;
        int r = asc_msprof_csv_parse((const char *)data + 1, size - 1, "kope_kernel", ns, &n, 8);
        if (n < 0 || n > 8 || (r > 0 && r > n))
            abort();
        for (int i = 0; i < n; i++)
            if (!(ns[i] > 0))
                abort();
        break;
    }
    case 3: {
        enum plat_screen_rule rule;
        char detail[PLAT_DETAIL_MAX];
        int r = asc_screen_source((const char *)data + 1, size - 1, &rule, detail, sizeof detail);
        if ((r == 0) != (rule == PLAT_SCREEN_NONE) || !memchr(detail, '\0', sizeof detail))
            abort();
        break;
    }
    default: {
        struct hrun *h = calloc(1, sizeof *h);
        char *copy = strdup(text);
        if (h && copy) {
            /* the task of the first byte's op, as ascend.c would check it */
            struct plat_task t;
            memset(&t, 0, sizeof t);
            t.op = (enum plat_op)((data[0] / 5) % PLAT_OP_COUNT);
            t.family = plat_op_family(t.op);
            t.n = 1000; t.rows = 7; t.cols = 301; t.m = 19; t.n = t.op == PLAT_OP_GEMV ? 1 : 33; t.k = 17;
            plat_report_parse(text, &h->r);
            report_check(h, copy, &t, (data[0] / 5) & 1 ? "measure" : "verify", 0);
            if (h->r.n_cases > PLAT_MAX_CASES || h->r.n_times > PLAT_MAX_BASELINES + 1 ||
                !memchr(h->r.method, '\0', sizeof h->r.method) ||
                !memchr(h->refused, '\0', sizeof h->refused))
                abort();
        }
        free(copy);
        free(h);
    }
    }
    free(tk);
    free(text);
    return 0;
}

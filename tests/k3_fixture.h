/*
 * tests/k3_fixture.h - what the K3 harness tests share (test_k3_harness.c,
 * test_k3_hostile.c): a small task of each op's family, and one platform
 * opened for the whole group (the harness objects are built once) in a work
 * dir under $KOPE_TEST_TMP. Include after cmocka.h and platform/platform.h.
 */
#ifndef KOPE_TEST_K3_FIXTURE_H
#define KOPE_TEST_K3_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct platform *P;

/* A small task of op's family: 4x48x64 matmul (gemv 4x64), 4x256 rows, or
 * n = 4096, with the op's default tolerances. */
static void task_init(struct plat_task *t, enum plat_op op)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "t-%s", plat_op_name(op));
    t->op = op;
    t->family = plat_op_family(op);
    plat_op_default_tol(op, &t->rtol, &t->atol);
    if (t->family == PLAT_FAM_MATMUL) {
        t->m = 4; t->n = op == PLAT_OP_GEMV ? 1 : 48; t->k = 64; t->batch = 1;
    } else if (t->family == PLAT_FAM_REDUCTION || plat_op_is_rowwise(op)) {
        t->rows = 4; t->cols = 256;
    } else {
        t->n = 4096;
    }
}

/* Open the k3 platform in $KOPE_TEST_TMP/<dir> with short timing settings. */
static int k3_group_open(const char *dir)
{
    struct plat_settings s;
    plat_settings_init(&s);
    static char work[512];
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(work, sizeof work, "%s/%s", tmp ? tmp : "/tmp", dir);
    s.work_dir = work;
    s.timeout_ms = 20000;
    s.min_repeat_ms = 5;
    s.max_repeats = 20;
    char err[512];
    int rc = platform_open("k3", &s, &P, err, sizeof err);
    if (rc) {
        fprintf(stderr, "platform_open: %s\n", err);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    platform_close(P);
    return 0;
}

#endif

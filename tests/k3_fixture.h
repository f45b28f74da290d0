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

/* Open the k3 platform in $KOPE_TEST_TMP/<dir> into *p with the settings in
 * base (their work_dir replaced), or, when base is NULL, kope's defaults with
 * short timing; flags are or-ed into the settings' plat_set_flags.
 * tests/board/test_board_seccomp.c wants the defaults as they are: it can
 * pass plat_settings_init's to k3_group_open_set. */
static inline int k3_open_with(const char *dir, const struct plat_settings *base, int flags,
                               struct platform **p)
{
    struct plat_settings s;
    if (base) {
        s = *base;
    } else {
        plat_settings_init(&s);
        s.timeout_ms = 20000;
        s.min_repeat_ms = 5;
        s.max_repeats = 20;
    }
    static char work[4][512];
    static int n_open;
    char *w = work[n_open++ % 4]; /* the platform keeps the pointer */
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(w, sizeof work[0], "%s/%s", tmp ? tmp : "/tmp", dir);
    s.work_dir = w;
    s.flags |= (unsigned)flags;
    char err[512];
    int rc = platform_open("k3", &s, p, err, sizeof err);
    if (rc) {
        fprintf(stderr, "platform_open: %s\n", err);
        return -1;
    }
    return 0;
}

/* Short timing settings and the given plat_set_flags, into *p. */
static inline int k3_open(const char *dir, int flags, struct platform **p)
{
    return k3_open_with(dir, NULL, flags, p);
}

/* The group's platform P, with the settings in base (NULL: short timing). */
static inline int k3_group_open_set(const char *dir, const struct plat_settings *base)
{
    return k3_open_with(dir, base, 0, &P);
}

static inline int k3_group_open(const char *dir)
{
    return k3_open(dir, 0, &P);
}

static int group_teardown(void **state)
{
    (void)state;
    platform_close(P);
    return 0;
}

#endif

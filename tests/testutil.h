/*
 * tests/testutil.h - shared helpers for kope's cmocka tests: temp paths
 * under $KOPE_TEST_TMP (set by tests/run.sh), running the kope binary
 * ($KOPE_BIN) and capturing its output.
 */
#ifndef KOPE_TESTUTIL_H
#define KOPE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cmocka.h>

/* A fresh path "DIR/name" under the test's temp dir (static buffer ring). */
static inline const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *tpath(const char *fmt, ...)
{
    static char ring[8][4096];
    static int k;
    char name[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const char *dir = getenv("KOPE_TEST_TMP");
    char *out = ring[k++ % 8];
    snprintf(out, sizeof ring[0], "%s/%s", dir && *dir ? dir : "/tmp", name);
    return out;
}

/* Run a shell command; returns its exit code, and its stdout+stderr in out. */
static inline int run_cmd(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int run_cmd(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8300];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = out && cap ? fread(out, 1, cap - 1, p) : 0;
    if (out && cap)
        out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline const char *kope_bin(void)
{
    const char *b = getenv("KOPE_BIN");
    return b && *b ? b : "build/x86_64/kope";
}

#endif

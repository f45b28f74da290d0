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

#include "platform/hostcheck.h"

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

/* Write text to path (a fixture: a suite, a kernel file, a config). */
static inline void test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        fail_msg("cannot write %s", path);
}

/* `kope --db DB init`: only init makes a store (every other command
 * refuses a missing one), so a test that runs kope on a new store starts
 * here. */
static inline void test_store_init(const char *db)
{
    char o[4096];
    int rc = run_cmd(o, sizeof o, "%s --db %s init", kope_bin(), db);
    if (rc != 0)
        fail_msg("kope --db %s init exited %d: %s", db, rc, o);
}

/* The source tree (templates, fixtures, harness sources): $KOPE_SRC, which
 * tests/run.sh exports; else the part of $KOPE_BIN before "/build/"; else
 * the current directory. Cross-testing, $KOPE_BIN is a qemu wrapper in a
 * temp dir, so only $KOPE_SRC names the tree there. */
static inline const char *test_src_root(void)
{
    static char root[2048];
    const char *s = getenv("KOPE_SRC"), *bin = getenv("KOPE_BIN");
    const char *b = bin ? strstr(bin, "/build/") : NULL;
    if (s && *s)
        snprintf(root, sizeof root, "%s", s);
    else if (b)
        snprintf(root, sizeof root, "%.*s", (int)(b - bin), bin);
    else
        snprintf(root, sizeof root, ".");
    return root;
}

/* ---- Time bounds under emulation ---------------------------------------
 * Time bounds in the tests are set for native speed. The cross suites
 * (make test ARCH=riscv64 / aarch64) run every test program, and the kope
 * it starts, under qemu-user: plain code is 5-10x slower there, crypto
 * (TLS handshakes, ECDSA, AES in mbedTLS) and the SQLite paths more, and CI
 * machines are shared. test_ms() scales a bound by the slowdown factor:
 *   $KOPE_TEST_SLOWDOWN if set (1..1000; set it by hand on a loaded
 *   machine), else TEST_EMU_SLOWDOWN when the program runs under qemu
 *   ($RUNNER set, as tests/run.sh has it; see test_emulated()), else 1.
 * Natively the factor is 1, so the x86_64 suite proves exactly what it
 * did. Scale every time constant of one check together - the delay that
 * is measured, the timeouts around it and the bound - so the ratio the
 * check proves is unchanged; a lower bound ("waited at least the
 * Retry-After") is never scaled. */
#ifndef TEST_EMU_SLOWDOWN
#define TEST_EMU_SLOWDOWN 10
#endif

/* 1 when this program runs under an emulator: tests/run.sh passes the
 * RUNNER (e.g. "qemu-riscv64 -cpu ...") that prefixes it. */
static inline int test_emulated(void)
{
    const char *r = getenv("RUNNER");
    return r && *r;
}

/* 1 when this program runs natively inside a virtual machine (the board VM
 * of tests/board, a cloud RISC-V guest): the riscv64 kope takes its native
 * path there but claims no ratio (platform/k3/k3.c: k->vm), so output that
 * carries a ratio elsewhere says "(no ratio claimed)" instead. Same signs
 * as kope's own check (plat_vm_detect); never true under qemu-user, where
 * kope takes the emulated path and claims the vector-cost model's ratios. */
static inline int test_native_vm(void)
{
#if defined(__riscv)
    char why[256];
    return !test_emulated() && plat_vm_detect("", why, sizeof why) == 1;
#else
    return 0;
#endif
}

static inline int test_slowdown(void)
{
    const char *e = getenv("KOPE_TEST_SLOWDOWN");
    int f = e && *e ? atoi(e) : 0;
    if (f >= 1 && f <= 1000)
        return f;
    return test_emulated() ? TEST_EMU_SLOWDOWN : 1;
}

/* A native time bound or timeout in ms, scaled for where the test runs. */
static inline int test_ms(int ms)
{
    return ms * test_slowdown();
}

/* Skip the current test because the emulator cannot give what it needs:
 * the reason is printed ("skip: ...", which tests/run.sh lists), never
 * silent. Use it only for a limit of qemu-user, not to hide a failure. */
#define test_skip_emulated(why)                                                  \
    do {                                                                         \
        if (test_emulated()) {                                                   \
            print_message("skip: under qemu-user (%s): %s\n", getenv("RUNNER"), \
                          (why));                                                \
            skip();                                                              \
        }                                                                        \
    } while (0)

#endif

/*
 * platform/hostcheck.c - refuse to run on a CPU this build cannot serve.
 * See hostcheck.h. This file is compiled WITHOUT the V extension on riscv64
 * (Makefile: HOSTCHECK_CFLAGS) so that it can run, and say why it stops, on
 * a core that has no vector unit. Feature macros decide what is checked:
 * __riscv_vector is defined by the compiler for a build that uses RVV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(KOPE_BUILT_WITH_RVV)
#include <sys/auxv.h>
#endif

#include "platform/hostcheck.h"

#ifndef KOPE_MIN_VLEN
#define KOPE_MIN_VLEN 256
#endif

int plat_host_check(char *msg, size_t cap, unsigned *vlen_bits)
{
    *vlen_bits = 0;
    msg[0] = '\0';
#if defined(KOPE_BUILT_WITH_RVV)
    unsigned long hwcap = getauxval(AT_HWCAP);
    if (!(hwcap & (1ul << ('V' - 'A')))) {
        snprintf(msg, cap,
                 "this kope is built for RISC-V with the vector extension (RVV 1.0, rv64gcv), "
                 "but this CPU reports no V extension (AT_HWCAP). Use a build for plain rv64gc, "
                 "or run on a core with RVV 1.0 (SpacemiT K3 X100, K1 X60)");
        return -1;
    }
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb)); /* readable from user mode once V is on */
    *vlen_bits = (unsigned)(vlenb * 8);
    if (*vlen_bits < KOPE_MIN_VLEN) {
        snprintf(msg, cap,
                 "this CPU's vector length is VLEN=%u bits, but this kope is built for VLEN >= %d: "
                 "its OpenBLAS (TARGET=RISCV64_ZVL%dB) computes wrong results on shorter vectors, "
                 "without any error. Rebuild the riscv64 sysroot with OB_TARGET=RISCV64_ZVL128B "
                 "(cross/deps.sh) for this core, or run on a VLEN-%d core (SpacemiT K3 X100)",
                 *vlen_bits, KOPE_MIN_VLEN, KOPE_MIN_VLEN, KOPE_MIN_VLEN);
        return -1;
    }
#endif
    return 0;
}

/* glibc passes (argc, argv, envp) to constructors. */
__attribute__((constructor(101))) static void host_check_at_start(int argc, char **argv, char **envp)
{
    char msg[512];
    unsigned vlen;
    (void)envp;
    for (int i = 1; i < argc && argv; i++) {
        if (argv[i][0] != '-')
            break;
        if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V") || !strcmp(argv[i], "--help") ||
            !strcmp(argv[i], "-h"))
            return;
    }
    if (plat_host_check(msg, sizeof msg, &vlen) != 0) {
        fprintf(stderr, "kope: refusing to run: %s\n", msg);
        fflush(stderr);
        _exit(1);
    }
}

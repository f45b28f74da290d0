/*
 * platform/hostcheck.h - does this machine run the instructions this kope
 * binary was built for?
 *
 * A riscv64 kope is built for RV64GCV with VLEN >= 256: its OpenBLAS
 * (TARGET=RISCV64_ZVL256B) silently computes wrong results on a VLEN-128
 * core, and any RVV instruction faults on a core without V. The check runs
 * as a constructor, before main and before any vector instruction, and
 * refuses with a clear message (exit 1). `kope --version` and `kope help`
 * still answer: they compute nothing. Builds for other ISAs check nothing.
 */
#ifndef KOPE_HOSTCHECK_H
#define KOPE_HOSTCHECK_H

#include <stddef.h>

/* 0 if this CPU can run this build; otherwise -1 with the reason in msg.
 * vlen_bits gets the vector length found (0 when not applicable). */
int plat_host_check(char *msg, size_t cap, unsigned *vlen_bits);

#endif

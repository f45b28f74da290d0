/*
 * platform/k3/k3_probe.h - pieces of the K3 probe (platform/k3/probe.c) that
 * other files of platform/k3 and the tests use. k3_probe() itself, the
 * probe op of plat_k3_ops, is declared in k3.h.
 *
 * The probe compiles the embedded program platform/k3/embed/probe.c for the
 * target, runs it (natively, or under the runner with tiny loops when
 * emulated) and turns its "key value" lines into struct plat_probe. Under
 * emulation only the ISA and VLEN of the emulated CPU are reported; speeds,
 * caches and core counts would describe the host or the emulator, so they
 * are left 0 and the note says so.
 */
#ifndef KOPE_K3_PROBE_H
#define KOPE_K3_PROBE_H

#include <stddef.h>

#include "platform/platform.h"

/* Fill out from the probe program's output (text, NUL-terminated).
 * emulated: keep only what the emulated CPU defines (ISA, VLEN). Returns 0,
 * or PLAT_ERR_PROTOCOL when the header, VLEN or the final "done" is missing. */
int k3_probe_parse(const char *text, int emulated, struct plat_probe *out);

/* The VLEN (bits) an OpenBLAS build in sysroot blas_dir needs: 256 for
 * TARGET=RISCV64_ZVL256B, 128 for RISCV64_ZVL128B, 0 for a generic build or
 * when unknown; its TARGET name goes to target (cap bytes, "" if unknown).
 * Read from blas_dir/VERSIONS ("openblas TARGET=...") or
 * include/openblas_config.h. */
int k3_openblas_min_vlen(const char *blas_dir, char *target, size_t cap);

/* 1 if the OpenBLAS in blas_dir may run on a machine with vlen_bits, 0 if it
 * must be refused (why gets the reason, e.g. "OpenBLAS built for
 * RISCV64_ZVL256B needs VLEN >= 256, this machine has 128"). */
int k3_openblas_fits(const char *blas_dir, int vlen_bits, char *why, size_t cap);

#endif /* KOPE_K3_PROBE_H */

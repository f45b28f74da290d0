/*
 * platform/hostcheck.h - does this machine run the instructions this kope
 * binary was built for?
 *
 * A riscv64 kope is built for RV64GCV with VLEN >= 256: its OpenBLAS
 * (TARGET=RISCV64_ZVL256B) silently computes wrong results on a VLEN-128
 * core, and any RVV instruction faults on a core without V. The check runs
 * as a constructor, before main and before any vector instruction, and
 * refuses with a clear message (exit 1). `kope --version` and `kope help`
 * still answer: they compute nothing; `kope version` says what it can (on a
 * core without V: the build's ISA and that V is missing) and exits 1.
 * A core with V but a shorter VLEN runs every command that runs no K3
 * kernel (graph, sync, report, ...): main refuses measure, run, probe and
 * queue flush there (core/cli/main.c), and `kope version` says so.
 * Builds for other ISAs check nothing.
 */
#ifndef KOPE_HOSTCHECK_H
#define KOPE_HOSTCHECK_H

#include <stddef.h>

/* 0 if this CPU can run this build; otherwise -1 with the reason in msg.
 * vlen_bits gets the vector length found (0 when not applicable). */
int plat_host_check(char *msg, size_t cap, unsigned *vlen_bits);

/* Is this Linux a virtual machine (qemu-system, KVM, Xen, ...)? Natively
 * inside one, kope still compiles and runs candidates directly, but a time
 * measured there is not the board's: the K3 target labels every such time
 * "virtual machine: not a speed" and claims no ratio from it. Signs, first
 * found wins (each one is a file a board engineer can read by hand):
 *   - device tree: /proc/device-tree/compatible or model names qemu's virt
 *     machine ("riscv-virtio", "riscv-virtio,qemu", "linux,dummy-virt") or
 *     contains "qemu" (the RISC-V and Arm board firmware path);
 *   - /proc/cpuinfo: "mvendorid : 0x0" (a hart with no JEDEC vendor: qemu
 *     and simulators; a vendor's core reports its own id) or the x86
 *     "hypervisor" flag;
 *   - /sys/hypervisor/type (Xen), DMI sys_vendor/product_name naming QEMU,
 *     KVM, VMware, VirtualBox, Xen, Bochs or Hyper-V (UEFI machines).
 * root is prepended to every path ("" = this machine; tests pass a folder
 * laid out like one). Returns 1 with the sign in why, 0 with what was seen
 * in why (cap bytes, always NUL-terminated). */
int plat_vm_detect(const char *root, char *why, size_t cap);

#endif

#!/bin/bash
# cross/binfmt.sh - let this machine run riscv64 and aarch64 programs
# directly, through qemu-user and binfmt_misc (package qemu-user-binfmt).
# Used by `make test ARCH=riscv64`: kope under test takes the board's native
# path, so the programs it builds and starts must run as they would there
# (QEMU_CPU, set by tests/run.sh, gives them the K3's vector unit). Needs
# root to register; idempotent; exits 1 with a reason if it cannot.
set -u
B=/proc/sys/fs/binfmt_misc
need=0
for a in riscv64 aarch64; do [ -e "$B/qemu-$a" ] || need=1; done
[ $need = 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then echo "binfmt: not root: cannot register qemu-user handlers" >&2; exit 1; fi
[ -e "$B/register" ] || mount -t binfmt_misc binfmt_misc "$B" 2>/dev/null || { echo "binfmt: cannot mount $B" >&2; exit 1; }
for a in riscv64 aarch64; do
  [ -e "$B/qemu-$a" ] && continue
  conf=/usr/lib/binfmt.d/qemu-$a.conf
  [ -f "$conf" ] || { echo "binfmt: $conf missing: install qemu-user-binfmt" >&2; exit 1; }
  cat "$conf" > "$B/register" || { echo "binfmt: registering $a failed" >&2; exit 1; }
done
exit 0

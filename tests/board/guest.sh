#!/bin/bash
# tests/board/guest.sh - runs INSIDE the board VM (cross/board-vm.sh), as
# root, natively on riscv64: no qemu-user anywhere in here. tests/board/run.sh
# puts it in the share (/mnt/kope) with the riscv64 kope, its test programs,
# the source tree and an env file saying what to run. Every check writes one
# line to /mnt/kope/results: "ok NAME (Ns)", "FAIL NAME: why" or
# "skip NAME: why" (a skip always says why); logs go to /mnt/kope/logs/.
set -u
S=/mnt/kope
. "$S/env"                       # MODE, SMOKE, PORT, SLOWDOWN
export KOPE_TEST_SLOWDOWN=${SLOWDOWN:-20}
SRC=$S/src
KOPE=$SRC/build/riscv64/kope
W=/root/work                     # the root disk (a -snapshot overlay)
mkdir -p "$W" "$S/logs"
cd "$W" || exit 1
: > "$S/results"

# check NAME CMD... : run CMD (a shell string), log its output, record ok/FAIL
check() {
  local name=$1 t0 rc; shift
  t0=$(date +%s)
  ( eval "$*" ) > "$S/logs/$name.log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then echo "ok $name ($(( $(date +%s) - t0 ))s)" >> "$S/results"
  else echo "FAIL $name: exit $rc, log tests/board logs/$name.log: $(tail -3 "$S/logs/$name.log" | tr '\n' ' ' | cut -c1-300)" >> "$S/results"; fi
  return 0
}
# has FILE TEXT... : every TEXT is in FILE (else print what is missing)
has() {
  local f=$1 t; shift
  for t in "$@"; do grep -qF -- "$t" "$f" || { echo "missing in output: '$t'"; return 1; }; done
}
skip() { echo "skip $1: $2" >> "$S/results"; }

# ----------------------------------------------------------- start-up check
# second and third boots: a VLEN-128 machine and one without V; the check
# runs from a constructor before main, against the real kernel's AT_HWCAP
# and vlenb.
if [ "$MODE" = vlen128 ]; then
  check startup-refuses-vlen128 '
    grep -q "_zve64d" /proc/cpuinfo || { echo "this boot has no V: the test would prove nothing"; exit 1; }
    '"$KOPE"' graph stats > out 2>&1; rc=$?; cat out
    [ $rc = 1 ] && has out "refusing to run" "VLEN=128" "RISCV64_ZVL256B" &&
    '"$KOPE"' --version'
  exit 0
fi
if [ "$MODE" = novector ]; then
  check startup-refuses-no-v '
    isa=$(grep -m1 "^isa" /proc/cpuinfo); echo "$isa"
    echo "$isa" | grep -Eq ": rv64[a-z]*v" && { echo "this boot has V: the test would prove nothing"; exit 1; }
    '"$KOPE"' graph stats > out 2>&1; rc=$?; cat out
    [ $rc = 1 ] && has out "refusing to run" "no V extension" && '"$KOPE"' --version'
  exit 0
fi

# ------------------------------------------------------------ the main boot
# a riscv64 kernel of its own (qemu-user would show the host's cpuinfo), with V
check boot 'uname -a; grep -m1 "^isa" /proc/cpuinfo; [ "$(uname -m)" = riscv64 ] &&
  grep -m1 "^isa" /proc/cpuinfo | grep -Eq ": rv64[a-z]*v"'
check startup-vlen256 '"$KOPE" version > out; cat out; has out "vector length 256 bits"'

"$KOPE" init > "$S/logs/init.log" 2>&1
check probe-native-vm-labelled '"$KOPE" probe > out 2>&1; rc=$?; cat out; [ $rc = 0 ] &&
  has out "native in a virtual machine" "virtual machine: not a speed" "vlen       256 bits" &&
  ! grep -q "qemu-user" out'

cat > good.c <<'EOF'
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s; for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}
EOF
cat > tail.c <<'EOF'
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s; for (size_t i = 0; i < (n & ~(size_t)7); i++) out[i] = x[i] + y[i];
  for (size_t i = n & ~(size_t)7; i < n; i++) out[i] = 0;
}
EOF
cat > crash.c <<'EOF'
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s; (void)y; float *volatile p = 0; for (size_t i = 0; i < n; i++) out[i] = x[i] + p[i];
}
EOF
cat > escape.c <<'EOF'
#include <stddef.h>
#include "kernel_abi.h"
extern int system(const char *);
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s; system("touch /tmp/escaped"); for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}
EOF
# native compile with the guest's gcc-14 (cc) and clang; every time labelled
check measure-good-gcc '"$KOPE" measure good.c --task add-res-896 > out 2>&1; rc=$?; cat out; [ $rc = 0 ] &&
  has out "verify: PASS" "VIRTUAL MACHINE" "virtual machine: not a speed" "seccomp=on" &&
  ! grep -q -- "-> [0-9.]*x by" out && cc --version | head -1 | grep -q " 14\."'
echo '{"platform": {"k3": {"cc": "clang"}}}' > clang.json
check measure-good-clang '"$KOPE" --config clang.json measure good.c --task add-res-896 > out 2>&1; rc=$?
  cat out; [ $rc = 0 ] && has out "verify: PASS" "virtual machine: not a speed" "seccomp=on"'
check measure-bad-wrong-result '"$KOPE" measure tail.c --task add-res-896 > out 2>&1; rc=$?; cat out
  [ $rc = 1 ] && has out "FAIL wrong_result"'
if [ "${SMOKE:-0}" != 1 ]; then
  check measure-bad-crash '"$KOPE" measure crash.c --task add-res-896 > out 2>&1; rc=$?; cat out
    [ $rc = 1 ] && has out "FAIL crash"'
  check measure-bad-screen '"$KOPE" measure escape.c --task add-res-896 > out 2>&1; rc=$?; cat out
    [ $rc = 1 ] && has out "screen_rejected" && [ ! -e /tmp/escaped ]'
  # the seccomp filter alone (screen off): a forbidden openat fails with EPERM
  check seccomp-stops-syscall 'cd "$W" && KOPE_TEST_TMP=$W "$SRC/build/riscv64/tests/board/test_board_seccomp"'
fi

# ---------------------------------------------------------------- kope run
# a few tasks of every family, the offline tuner, natively
if [ "${SMOKE:-0}" = 1 ]; then tasks="add-res-896"
else tasks="add-res-896 sigmoid-router-256 mean-4096 gemm-lora-1x16x4096"; fi
for t in $tasks; do
  check "run-$t" '"$KOPE" run --offline --task '"$t"' --budget 2 > out 2>&1; rc=$?; cat out; [ $rc = 0 ] &&
    has out "passed 1/1 tasks"'
done

[ "${SMOKE:-0}" = 1 ] && exit 0
skip "test-programs" "not yet wired"
exit 0

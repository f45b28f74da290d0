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
  ( set -x; eval "$*" ) > "$S/logs/$name.log" 2>&1
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
  # kernels are refused (measure, run, probe); what runs none works
  check startup-refuses-vlen128 '
    grep -q "_zve64d" /proc/cpuinfo || { echo "this boot has no V: the test would prove nothing"; exit 1; }
    '"$KOPE"' probe > out 2>&1; rc=$?; cat out
    [ $rc = 1 ] && has out "refusing to run K3 kernels" "VLEN=128" "RISCV64_ZVL256B" &&
    '"$KOPE"' --db v128.db init && '"$KOPE"' --db v128.db graph stats && '"$KOPE"' tasks > /dev/null &&
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
  has out "verify: PASS" "VIRTUAL MACHINE" "virtual machine: not a speed" "their own seccomp filter (allow-list" &&
  ! grep -q -- "-> [0-9.]*x by" out && cc --version | head -1 | grep -q " 14\."'
echo '{"platform": {"k3": {"cc": "clang"}}}' > clang.json
check measure-good-clang '"$KOPE" --config clang.json measure good.c --task add-res-896 > out 2>&1; rc=$?
  cat out; [ $rc = 0 ] && has out "verify: PASS" "virtual machine: not a speed" "their own seccomp filter (allow-list"'
check measure-bad-wrong-result '"$KOPE" measure tail.c --task add-res-896 > out 2>&1; rc=$?; cat out
  [ $rc = 1 ] && has out "FAIL wrong_result"'
SMOKE_WHY="not in the smoke subset (BOARD_SMOKE=1, CI); make test-board runs it"
if [ "${SMOKE:-0}" = 1 ]; then
  for c in measure-bad-crash measure-bad-screen seccomp-stops-syscall; do skip "$c" "$SMOKE_WHY"; done
else
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

if [ "${SMOKE:-0}" = 1 ]; then
  for c in run-sigmoid-router-256 run-mean-4096 run-gemm-lora-1x16x4096 kernels-export-native sync footprint \
    native-build-kope test-programs; do skip "$c" "$SMOKE_WHY"; done
  exit 0
fi

# ------------------------------------------- kernels out, built on the board
# the run-* tasks' bests exported from the store they wrote: their evidence
# is the VM's, so only with --include-emulated and marked virtual-machine;
# the library built with the guest's gcc-14 (KCC=gcc) and with clang, its
# self-test run natively against the references
check kernels-export-native '"$KOPE" kernels export -o klib --include-emulated > out 2>&1; rc=$?; cat out
  [ $rc = 0 ] && grep -Eq "\"evidence\":[[:space:]]*\"virtual-machine\"" klib/kernels.json &&
  ! grep -Eq "\"evidence\":[[:space:]]*\"native-time\"" klib/kernels.json &&
  grep -q "virtual machine" klib/kernels/kope_*_add_res_896.c &&
  make -C klib KCC=gcc && make -C klib check KCC=gcc &&
  make -C klib clean && make -C klib check KCC=clang'

# ---------------------------------------------------------------- peer sync
# host x86_64 kope <-> this riscv64 kope: the guest serves, the host dials
# 127.0.0.1:PORT, qemu forwards it in (tests/board/run.sh runs the host side)
if [ "${PORT:-0}" != 0 ]; then
  check sync-enroll '"$KOPE" fleet enroll board-vm --ca "$S/fleet"'
  # the emulated machine is slow at ECDSA and TLS: generous limits (a board
  # keeps the defaults)
  "$KOPE" serve --listen "0.0.0.0:$PORT" --handshake-ms 300000 --min-rate 1 > "$S/logs/serve.log" 2>&1 &
  spid=$!
  for i in $(seq 1 120); do grep -q "listening on" "$S/logs/serve.log" && break; sleep 1; done
  touch "$S/serve-ready"
  for i in $(seq 1 900); do [ -e "$S/host-sync-done" ] && break; sleep 1; done
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  # the host's identity and checkpoint records arrived, signed and accepted
  check sync-guest-got-host-records '[ -e "$S/host-sync-done" ] || { echo "the host never synced"; exit 1; }
    "$KOPE" graph stats > out; cat out; grep -Eq "^origins +2" out'
else
  skip sync "no port forward in this boot"
fi

# ------------------------------------------------------- footprint (guest)
# peak RSS read by the guest kernel (wait4 rusage via GNU time; the agent's
# own peak from KOPE_RUSAGE), no emulator in the process: bench/footprint.sh
# prints these beside its qemu-user estimates
fp=$S/footprint.txt
: > "$fp"
check footprint '
  /usr/bin/time -f "%M" -o v.kib "$KOPE" --version >/dev/null &&
  /usr/bin/time -f "%M" -o s.kib "$KOPE" --db "$S/g100k/graph.db" graph stats > stats.out &&
  grep -Eq "^records +1[0-9]{5}" stats.out &&
  "$KOPE" --db fp-run.db init >/dev/null 2>&1 &&
  KOPE_RUSAGE=1 "$KOPE" --db fp-run.db run --offline --task add-res-4096 --budget 2 2> run.err >/dev/null &&
  r=$(awk "/^kope: rusage/ {print \$4}" run.err) && [ -n "$r" ] &&
  printf "version_kib %s\nstats100k_kib %s\nrun_agent_kib %s\n" "$(cat v.kib)" "$(cat s.kib)" "$r" > "$fp" &&
  cat "$fp" run.err'

# ------------------------------------------------ building kope on the board
# kope's own sources compiled natively (the board's clang, no emulator)
# against the cross-built sysroot; cross/deps.sh's native branch is run once
# by hand (README), not here: it takes too long for the suite
check native-build-kope 'rm -rf /root/src && cp -a "$SRC" /root/src && cd /root/src &&
  rm -rf build/riscv64 && touch build/deps/sysroot-riscv64/.stamp &&
  time make -j2 WERROR=1 -o build/deps/sysroot-riscv64/.stamp build/riscv64/kope &&
  ./build/riscv64/kope version | grep -q "vector length 256 bits"'
# ------------------------------------------------- the test programs, natively
# riscv64 test programs run here with no RUNNER: the native path (start-up
# check, probe, harness and sandbox, k3 CLI, store, crash recovery, sync,
# the agent). Under full-system emulation every candidate compile is an
# emulated gcc (a minute each), so the whole set takes hours: run.sh passes
# the chosen subset (PROGRAMS; BOARD_PROGRAMS=all for every one) and a time
# budget for this phase (BUDGET s): a program starts only while the budget
# lasts, and each one is stopped after PROG_TIMEOUT s. Every program not run
# prints why. `make test ARCH=riscv64` runs all of them under qemu-user.
# (KOPE_TEST_SLOWDOWN scales their time bounds for the emulated machine.)
for t in ${ALL_PROGRAMS:-}; do
  case " ${PROGRAMS:-} " in *" $t "*) ;;
    *) skip "test-program-$t" "not in the board subset (BOARD_PROGRAMS=all runs it natively; make test ARCH=riscv64 runs it under qemu-user)" ;;
  esac
done
p0=$(date +%s)
for t in ${PROGRAMS:-}; do   # in the chosen order: the budget cuts from the end
  spent=$(( $(date +%s) - p0 ))
  if [ "$spent" -ge "${BUDGET:-1800}" ]; then
    skip "test-program-$t" "the test-programs budget is spent (${spent}s of BOARD_BUDGET=${BUDGET:-1800}s)"; continue
  fi
  prog=$SRC/build/riscv64/tests/$t
  [ -x "$prog" ] || { echo "FAIL test-program-$t: $prog was not built" >> "$S/results"; continue; }
  ( cd "$W" && KOPE_BIN=$KOPE KOPE_ARCH=riscv64 KOPE_SRC=$SRC RUNNER= \
      timeout "${PROG_TIMEOUT:-1200}" bash "$SRC/tests/run.sh" "$prog" ) > "$S/logs/test-$t.log" 2>&1
  rc=$?
  line=$(awk -v t="$t" '$1 == t && $2 ~ /^[0-9]+$/ && $3 == "passed"' "$S/logs/test-$t.log")
  if [ $rc = 0 ] && [ -n "$line" ]; then
    echo "$line" | awk '{printf "ok test-program-%s (%s passed, %s skipped, %s)\n", $1, $2, $6, $8}' >> "$S/results"
  elif [ $rc = 124 ]; then
    echo "FAIL test-program-$t: stopped after PROG_TIMEOUT=${PROG_TIMEOUT:-1200}s (logs/test-$t.log)" >> "$S/results"
  else
    echo "FAIL test-program-$t: exit $rc: ${line:-no summary} (logs/test-$t.log)" >> "$S/results"
  fi
done
echo "test programs: $(( $(date +%s) - p0 ))s" > "$S/logs/test-programs-time"

exit 0

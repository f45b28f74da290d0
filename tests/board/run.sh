#!/bin/bash
# tests/board/run.sh - `make test-board`: boots the board VM (cross/board-vm.sh)
# and runs the riscv64 kope natively inside it (tests/board/guest.sh), then a
# second and a third boot on a VLEN-128 machine and on one without V for the
# start-up check. Prints one line per check and ends with "N passed, N failed";
# a skip says why. Exit non-zero when anything failed.
#
#   bash tests/board/run.sh            (the Makefile builds what it needs first)
#   BOARD_SMOKE=1 bash tests/board/run.sh   the CI subset (README: test-board)
#
# The riscv64 test programs run natively in the main boot: BOARD_PROGRAMS
# (names, default: those that exercise the native path; "all" = every
# tests/test_*.c) within BOARD_BUDGET seconds for that phase (default 1800),
# each stopped after BOARD_PROG_TIMEOUT seconds (default 1200). The
# Makefile sets the same defaults and builds what is listed.
#
# Inputs: build/riscv64/kope and build/riscv64/tests/* (cross-built), the
# riscv64 sysroot, build/x86_64/kope (the host side of the peer sync).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
VMSH="bash $ROOT/cross/board-vm.sh"
SH=$ROOT/build/board-run
t0=$(date +%s)
say() { echo "test-board [$(( $(date +%s) - t0 ))s] $*"; }

rm -rf "$SH"; mkdir -p "$SH/src/build/riscv64" "$SH/src/build/deps"
# the source tree as tracked (tests read harness sources and templates; the
# native build compiles it), the cross-built programs, the riscv64 sysroot
git ls-files -z | xargs -0 cp --parents -t "$SH/src" 2>/dev/null || { echo "test-board: cannot copy the tree" >&2; exit 1; }
cp build/riscv64/kope "$SH/src/build/riscv64/"
mkdir -p "$SH/src/build/riscv64/tests/board"
# every test program there is (the guest says why each one it skips is not
# run), the chosen ones copied in
# The default subset, in order (the budget cuts from the end): the programs
# that exercise what only a native riscv64 kernel runs - the start-up check
# and VM detection, the native probe, the store and crash recovery on the
# guest's file system, the k3 CLI and the hostile kernels natively compiled
# and sandboxed, sync's TLS and signatures, the harness. Not test_agent: it
# took over 20 min here (every trial an emulated gcc; the guest's run-*
# checks run `kope run` natively instead): BOARD_PROGRAMS=test_agent
# BOARD_PROG_TIMEOUT=3600 runs it. The rest (LLM client, Ascend, docs,
# report, context, ...) do not touch the native path; make test ARCH=riscv64
# runs them under qemu-user.
BOARD_PROGRAMS_DEFAULT="test_hostcheck test_k3_probe test_store test_crash test_k3_cli test_k3_hostile test_sync test_k3_harness"
ALL_PROGRAMS=$(ls tests/test_*.c | sed 's#^tests/##; s#\.c$##' | tr '\n' ' ')
PROGRAMS=${BOARD_PROGRAMS:-$BOARD_PROGRAMS_DEFAULT}
[ "$PROGRAMS" = all ] && PROGRAMS=$ALL_PROGRAMS
[ "${BOARD_SMOKE:-0}" = 1 ] && PROGRAMS=   # the smoke subset runs no test program (the guest prints a skip line for each check it leaves out)
for t in $PROGRAMS board/test_board_seccomp; do
  [ -x "build/riscv64/tests/$t" ] && cp "build/riscv64/tests/$t" "$SH/src/build/riscv64/tests/$t"
done
cp -a build/deps/sysroot-riscv64 "$SH/src/build/deps/"
cp tests/board/guest.sh "$SH/guest.sh"
HK=$ROOT/build/x86_64/kope
if [ "${BOARD_SMOKE:-0}" != 1 ]; then
  # a 100,000-record store for the footprint reading (SQLite files are portable)
  KOPE_BIN=$HK BENCH_INSERT_ONLY=1 build/x86_64/bench/graph 100000 "$SH/g100k" > /dev/null 2>&1 ||
    echo "FAIL footprint-store: bench/graph could not make the 100k store" >> "$SH/all"
  # the host side of the sync: a fleet CA in the share, the host enrolled
  mkdir -p "$SH/host"
  ( cd "$SH/host" && "$HK" init && "$HK" fleet init --dir "$SH/fleet" &&
    "$HK" fleet enroll host-x86 --ca "$SH/fleet" ) > "$SH/host/setup.log" 2>&1 ||
    echo "FAIL sync-host-setup: $(tail -2 "$SH/host/setup.log" | tr '\n' ' ')" >> "$SH/all"
fi

boot() { # MODE CPU [TIMEOUT_S] : one boot; results appended to $SH/all
  local mode=$1 cpu=$2 log=$SH/console-$1.log
  printf 'MODE=%s\nSMOKE=%s\nPORT=%s\nSLOWDOWN=%s\n' "$mode" "${BOARD_SMOKE:-0}" "${PORT:-0}" \
    "${KOPE_TEST_SLOWDOWN:-20}" > "$SH/env"
  printf "PROGRAMS='%s'\nALL_PROGRAMS='%s'\nBUDGET=%s\nPROG_TIMEOUT=%s\n" "$PROGRAMS" "$ALL_PROGRAMS" \
    "${BOARD_BUDGET:-1800}" "${BOARD_PROG_TIMEOUT:-1200}" >> "$SH/env"
  local b0; b0=$(date +%s)
  nice -n 10 $VMSH boot "$SH" -cpu "$cpu" ${PORT:+-fwd "$PORT"} -timeout "${3:-3600}" > "$log" 2>&1
  local rc=$?
  say "boot $mode: guest exit $rc in $(( $(date +%s) - b0 ))s (console: $log)"
  if [ -f "$SH/results" ]; then cat "$SH/results" >> "$SH/all"; rm -f "$SH/results"
  else echo "FAIL boot-$mode: no results (guest exit $rc): $(tail -5 "$log" | tr '\n' ' ')" >> "$SH/all"; fi
  # guest.sh ends with exit 0 after its last check: anything else means it
  # stopped early, whatever it recorded before
  [ $rc = 0 ] || echo "FAIL boot-$mode-ended: guest exit $rc: $(grep -i 'guest.sh\|error' "$log" | tail -3 | tr '\n' ' ')" >> "$SH/all"
}

: > "$SH/all"
say "image"
nice -n 10 $VMSH image || { echo "0 passed, 1 failed"; exit 1; }
CPU=rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true
# a free port on 127.0.0.1 for the one forward (the sync)
PORT=
if [ "${BOARD_SMOKE:-0}" != 1 ]; then
  for p in $(shuf -i 20000-60000 -n 20); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { PORT=$p; break; }
  done
fi
host_sync() { # waits for the guest's `kope serve`, syncs, checks what arrived
  for i in $(seq 1 7200); do [ -e "$SH/serve-ready" ] && break; [ -e "$SH/main-done" ] && return; sleep 1; done
  local rc=0
  ( cd "$SH/host" && "$HK" sync "127.0.0.1:$PORT" --timeout-ms 300000 --handshake-ms 300000 --min-rate 1 ) > "$SH/host/sync.log" 2>&1 || rc=$?
  if [ $rc = 0 ] && ( cd "$SH/host" && "$HK" graph stats ) > "$SH/host/stats.log" 2>&1 &&
     grep -Eq "^origins +2" "$SH/host/stats.log" && grep -Eq "^ +outcome +[1-9]" "$SH/host/stats.log"; then
    echo "ok sync-host-got-guest-outcomes (127.0.0.1:$PORT -> guest)" >> "$SH/all"
  else
    echo "FAIL sync-host-got-guest-outcomes: sync exit $rc: $(tail -3 "$SH/host/sync.log" "$SH/host/stats.log" 2>/dev/null | tr '\n' ' ')" >> "$SH/all"
  fi
  touch "$SH/host-sync-done"
}
rm -f "$SH/serve-ready" "$SH/host-sync-done" "$SH/main-done"
[ -n "$PORT" ] && { host_sync & hs=$!; }
# the main boot's own limit: its checks took 63 min at load 15-22 here, then the
# test programs' budget and one program's overrun
main_timeout=3600
[ "${BOARD_SMOKE:-0}" != 1 ] && main_timeout=$(( 5400 + ${BOARD_BUDGET:-1800} + ${BOARD_PROG_TIMEOUT:-1200} ))
boot main "$CPU" "$main_timeout"
touch "$SH/main-done"
[ -n "$PORT" ] && wait "$hs"
PORT=
boot vlen128 rv64,v=true,vlen=128,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true
boot novector rv64,v=false,zba=true,zbb=true,zbs=true

echo
cat "$SH/all"
passed=$(grep -c '^ok ' "$SH/all"); failed=$(grep -c '^FAIL ' "$SH/all")
say "done"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

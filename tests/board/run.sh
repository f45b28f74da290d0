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
cp build/riscv64/tests/test_* "$SH/src/build/riscv64/tests/" 2>/dev/null || true
cp build/riscv64/tests/board/test_* "$SH/src/build/riscv64/tests/board/" 2>/dev/null || true
cp -a build/deps/sysroot-riscv64 "$SH/src/build/deps/"
cp tests/board/guest.sh "$SH/guest.sh"

boot() { # MODE CPU : one boot; results appended to $SH/all
  local mode=$1 cpu=$2 log=$SH/console-$1.log
  printf 'MODE=%s\nSMOKE=%s\nPORT=%s\nSLOWDOWN=%s\n' "$mode" "${BOARD_SMOKE:-0}" "${PORT:-0}" \
    "${KOPE_TEST_SLOWDOWN:-20}" > "$SH/env"
  local b0; b0=$(date +%s)
  nice -n 10 $VMSH boot "$SH" -cpu "$cpu" ${PORT:+-fwd "$PORT"} > "$log" 2>&1
  local rc=$?
  say "boot $mode: guest exit $rc in $(( $(date +%s) - b0 ))s (console: $log)"
  if [ -f "$SH/results" ]; then cat "$SH/results" >> "$SH/all"; rm -f "$SH/results"
  else echo "FAIL boot-$mode: no results (guest exit $rc): $(tail -5 "$log" | tr '\n' ' ')" >> "$SH/all"; fi
}

: > "$SH/all"
say "image"
nice -n 10 $VMSH image || { echo "0 passed, 1 failed"; exit 1; }
CPU=rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true
boot main "$CPU"
PORT=
boot vlen128 rv64,v=true,vlen=128,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true
boot novector rv64,v=false,zba=true,zbb=true,zbs=true

echo
cat "$SH/all"
passed=$(grep -c '^ok ' "$SH/all"); failed=$(grep -c '^FAIL ' "$SH/all")
say "done"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

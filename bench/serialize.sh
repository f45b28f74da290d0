#!/bin/bash
# bench/serialize.sh - the cost of serialized writers (issue 23) on a
# `kope run`: the same run with the kope from before (BEFORE, e.g. main's
# build before the change) and with this tree's, alternating, each on a
# fresh store, and the ratio of their median wall times.
#
#   bash bench/serialize.sh BEFORE_KOPE [ROUNDS] [BUDGET]
#
# What changed on the write path: each write transaction reads our chain's
# head inside it (one indexed query), notes and clears the writer's pid in
# DB.lock (two pwrites), and a run takes its run and task locks once (a few
# fcntl calls). The run: `kope run --task silu-4864 --offline --budget
# BUDGET` (default 6) after `kope init`. Off a RISC-V machine the candidates
# run under qemu, so the wall time is mostly the emulator's: the figure is
# kope's own overhead on an unchanged workload, not a kernel speed.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: bash bench/serialize.sh BEFORE_KOPE [ROUNDS] [BUDGET]}
ROUNDS=${2:-5}
BUDGET=${3:-6}
AFTER=$PWD/build/x86_64/kope
make -s -j2 build/x86_64/kope >/dev/null
W=$(mktemp -d "${TMPDIR:-/tmp}/kope-bench-serialize.XXXXXX")
trap 'rm -rf "$W"' EXIT
one() { # binary -> wall seconds of init + run
    local bin=$1 d
    d=$(mktemp -d "$W/r.XXXXXX")
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$d" && TMPDIR=$d "$bin" --db s.db init >/dev/null &&
        TMPDIR=$d "$bin" --db s.db run --task silu-4864 --offline --budget "$BUDGET" >/dev/null)
    t1=$(date +%s.%N)
    rm -rf "$d"
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
: > "$W/before"; : > "$W/after"
for r in $(seq "$ROUNDS"); do
    # alternate which goes first, so a change of load hits both alike
    if [ $((r % 2)) = 1 ]; then one "$BEFORE" >> "$W/before"; one "$AFTER" >> "$W/after";
    else one "$AFTER" >> "$W/after"; one "$BEFORE" >> "$W/before"; fi
done
b=$(median < "$W/before"); a=$(median < "$W/after")
printf 'kope run --task silu-4864 --offline --budget %s, %s rounds, load %s\n' "$BUDGET" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '  before (%s): median %.2f s  [%s]\n' "$BEFORE" "$b" "$(tr '\n' ' ' < "$W/before")"
printf '  after  (this tree): median %.2f s  [%s]\n' "$a" "$(tr '\n' ' ' < "$W/after")"
printf '  after / before: %.3f\n' "$(echo "$a / $b" | bc -l)"

#!/bin/bash
# bench/harness-vs.sh - this tree's per-candidate cost of the K3 target loop
# (verify + measure of one trivial add, n = 4096, through the platform API;
# bench/harness_cost.c) against older revisions, interleaved in one run so
# that every ratio compares runs made under the same machine load.
#
#   bash bench/harness-vs.sh [-r ROUNDS] [-n REPS] [-g] REV [REV ...]
#   (-g: a 64x64x64 triple-loop gemm instead of the add)
#   e.g. bash bench/harness-vs.sh 2ea0a5c 941b130   # issue 11's "before": the
#        harness before issue 11, and the same with #15's third baseline
#
# Each REV is checked out (git worktree, detached) under build/harness-vs/,
# built against this tree's sysroots (build/deps, linked: the x86_64 and
# riscv64 libraries are the same across these revisions, and a rebuilt
# sysroot would cost an hour), and driven by this tree's harness_cost.c.
# Prints, per round, the median over REPS of CPU time (user + system of
# every process of the runs: the steady figure on a loaded machine) and of
# wall time, then this tree's CPU ratio to each REV per round.
# Emulated (qemu-riscv64 + the icount plugin): costs, never speeds.
set -eo pipefail
rounds=4 reps=7 op=add
while getopts r:n:g o; do
  case $o in r) rounds=$OPTARG;; n) reps=$OPTARG;; g) op=gemm;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: bash bench/harness-vs.sh [-r ROUNDS] [-n REPS] REV [REV ...]" >&2; exit 2; }
top=$(git rev-parse --show-toplevel)
cd "$top"
W=$top/build/harness-vs
deps=$(readlink -f build/deps)
[ -f "$deps/sysroot-x86_64/.stamp" ] || { echo "harness-vs: no sysroots in build/deps: run make first" >&2; exit 1; }
mkdir -p "$W"
git worktree prune # checkouts of an earlier run removed with build/ (make distclean)
make -s -j2 build/x86_64/libkope.a build/x86_64/libkope-icount.so build/x86_64/bench/harness_cost
S=$deps/sysroot-x86_64
LIBS="-lcurl -lmbedtls -lmbedx509 -lmbedcrypto -lsqlite3 -lcjson -lopenblas -lpthread -lm"
tags=(this) dirs=("$top")
for rev in "$@"; do
  short=$(git rev-parse --short "$rev")
  d=$W/rev-$short
  if [ ! -d "$d" ]; then
    git worktree add -q --detach "$d" "$short"
  fi
  mkdir -p "$d/build"
  ln -sfn "$deps" "$d/build/deps"
  # the sysroot stamps are for this tree's recipe: keep make from rebuilding
  touch -d '2000-01-01' "$d/cross/deps.sh" "$d/cross/deps-probe.c" 2>/dev/null || true
  echo "harness-vs: building $short (libkope.a, icount plugin)" >&2
  nice make -s -C "$d" -j2 build/x86_64/libkope.a build/x86_64/libkope-icount.so > "$W/build-$short.log" 2>&1 ||
    { echo "harness-vs: $short did not build (see $W/build-$short.log)" >&2; exit 1; }
  cc -std=c11 -D_GNU_SOURCE -O2 -I"$d" -isystem "$S/include" bench/harness_cost.c \
     "$d/build/x86_64/libkope.a" -L"$S/lib" $LIBS -o "$d/build/x86_64/harness_cost"
  tags+=("$short") dirs+=("$d")
done
med() { sort -n | awk '{a[NR]=$0} END{print a[int((NR+1)/2)]}'; }
declare -A cpu all
for r in $(seq 1 "$rounds"); do
  for i in "${!tags[@]}"; do
    d=${dirs[$i]} t=${tags[$i]}
    bin=$d/build/x86_64/harness_cost
    [ "$t" = this ] && bin=$top/build/x86_64/bench/harness_cost
    rm -rf "$W/work-$t"; mkdir -p "$W/work-$t"
    "$bin" "$W/work-$t" "$reps" "$d/build/x86_64/libkope-icount.so" "" "$op" > "$W/out-$t" 2>&1 ||
      { echo "harness-vs: $t failed:"; tail -3 "$W/out-$t"; exit 1; } >&2
    grep -q "(0 1) measure .* (0 1)" "$W/out-$t" || { echo "harness-vs: $t: a run did not pass" >&2; exit 1; }
    c=$(awk '/^verify/{print $10}' "$W/out-$t" | med)
    w=$(awk '/^verify/{print $2 + $6}' "$W/out-$t" | med)
    a=$(awk '/^verify/{print $NF}' "$W/out-$t" | med)
    cpu[$r,$t]=$c
    all[$r,$t]=$a
    printf "round %d  %-8s verify+measure  cpu %6.1f ms  wall %6.1f ms  +compile cpu %6.1f ms  %s  load %s\n" \
      "$r" "$t" "$c" "$w" "$a" \
      "$(tail -1 "$W/out-$t" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^ic=/) print $i}')" \
      "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
for t in "${tags[@]:1}"; do
  printf "this tree / %s (CPU, per round):" "$t"
  for r in $(seq 1 "$rounds"); do
    awk -v a="${cpu[$r,this]}" -v b="${cpu[$r,$t]}" 'BEGIN{printf " %.2fx", a / b}'
  done
  echo
  printf "this tree / %s (CPU of compile + verify + measure, per round):" "$t"
  for r in $(seq 1 "$rounds"); do
    awk -v a="${all[$r,this]}" -v b="${all[$r,$t]}" 'BEGIN{printf " %.2fx", a / b}'
  done
  echo
done

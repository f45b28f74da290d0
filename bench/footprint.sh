#!/bin/bash
# bench/footprint.sh - kope's footprint on each architecture, next to the
# anchors of issue 7 (other small agents; none of them carries a SQLite
# store, a TLS server or BLAS):
#   nullclaw  678 KB static, ~1 MB RSS
#   ZeroClaw  8.8 MB, 3.9 MB peak RSS for --help
#   PicoClaw  ~8 MB, under 10-20 MB RAM
#
#   bash bench/footprint.sh            (after `make`, `make ARCH=riscv64`, `make ARCH=aarch64`)
#
# Prints, per architecture: stripped size and each library's share (from
# the linker map of the real link), peak RSS of `kope --version`, of `kope
# graph stats` on a 100,000-record store and of the agent during `kope run`
# (its children excluded: wait4 reports the process's own peak), start-up
# time of `kope --version` on x86_64 and its instruction count under
# qemu-riscv64.
#
# How riscv64/aarch64 RSS is obtained: under qemu-user the kernel sees one
# process, emulator plus guest. The guest's share is estimated as
# RSS(qemu running kope) - RSS(qemu running an empty static program of the
# same architecture), both measured here in the same run. It is labelled
# "guest est." and is an estimate, not a board reading.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
RSS=$B/x86_64/bench/rss
# measure what the tree builds now
make -s -j2 "$B/x86_64/kope" "$RSS" "$B/x86_64/bench/graph" >/dev/null
make -s -j2 ARCH=riscv64 "$B/riscv64/kope" >/dev/null
make -s -j2 ARCH=aarch64 "$B/aarch64/kope" >/dev/null
OUT=$(mktemp -d /tmp/kope-footprint.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
QRV="qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true -L /usr/riscv64-linux-gnu"
QA64="qemu-aarch64 -L /usr/aarch64-linux-gnu"

# --- link-map shares --------------------------------------------------------
# Relink each binary with a map (same command as the Makefile's, plus -Map).
# Sums the sizes of the allocated input sections by the archive they came
# from; debug, comment, note and .bss sections take no file space.
map_shares() { # ARCH
  local a=$1 cmd
  cmd=$(make -s -B -n ARCH="$a" "$B/$a/kope" 2>/dev/null | grep -- "-o $B/$a/kope\$" | tail -1)
  [ -n "$cmd" ] || { echo "  (no link command for $a)"; return; }
  eval "${cmd% -o *} -o $OUT/kope-$a -Wl,-Map=$OUT/$a.map" >/dev/null 2>&1 || { echo "  (relink failed)"; return; }
  awk '
    function hex(x,   i, c, v) { sub(/^0x/, "", x); v = 0
      for (i = 1; i <= length(x); i++) { c = index("0123456789abcdef", substr(x, i, 1)); v = v * 16 + c - 1 }
      return v }
    function lib(f) {
      if (f ~ /libsqlite3/) return "sqlite"; if (f ~ /libmbed/) return "mbedtls";
      if (f ~ /libcurl/) return "curl"; if (f ~ /libopenblas/) return "openblas";
      if (f ~ /libcjson/) return "cjson"; if (f ~ /libkope|main\.o/) return "kope (own code)";
      if (f ~ /gen\/embed/) return "kope (own code)";
      if (f ~ /<internal>/) return "linker-made (merged strings, eh_frame, relocs)";
      return "libc, crt"
    }
    function skip(s) { return s ~ /^\.(debug|comment|note|bss|tbss|sbss|riscv\.attributes|gnu\.attributes)/ }
    # GNU ld lists discarded sections first: start at the memory map
    /^Linker script and memory map/ { gnu = 1; next }
    # lld: VMA LMA Size Align Out In Symbol; input lines carry "file:(section)"
    /:\(/ && $3 ~ /^[0-9a-f]+$/ && NF >= 5 {
      split($0, p, ":\\("); sec = p[2]; sub(/\).*/, "", sec)
      n = split(p[1], w, " "); f = w[n]
      if (!skip(sec)) s[lib(f)] += hex($3)
      next
    }
    # GNU ld: " .section 0xADDR 0xSIZE file" (name sometimes on the line before)
    !gnu { next }
    /^ \.[^ ]+[ ]+0x[0-9a-f]+[ ]+0x[0-9a-f]+[ ]+[^ ]/ { sec = $1; size = $3; f = $4
      if (!skip(sec)) s[lib(f)] += hex(size); next }
    /^ \.[^ ]+$/ { pending = $1; next }
    /^[ ]+0x[0-9a-f]+[ ]+0x[0-9a-f]+[ ]+[^ ]/ && pending != "" { if (!skip(pending)) s[lib($3)] += hex($2); pending = ""; next }
    { pending = "" }
    END { for (k in s) t += s[k]; for (k in s) printf "%d\t    %-46s %8.1f KiB  %5.1f%%\n", s[k], k, s[k] / 1024, 100 * s[k] / t }
  ' "$OUT/$a.map" | sort -t "$(printf '\t')" -k1,1 -rn | cut -f2-
  # the files kope carries, compressed (cross/embedz.c; part of own code)
  sed -n 's/^const size_t embed_packed_len = \([0-9]*\), embed_unpacked_len = \([0-9]*\);/    of which embedded files: \2 bytes, \1 packed/p' \
    "$B/$a/gen/embed.c" 2>/dev/null || true
}

strip_size() { # ARCH
  local s=strip
  [ "$1" = x86_64 ] || s=llvm-strip-19
  $s -o "$OUT/kope-$1.stripped" "$B/$1/kope"
  stat -c %s "$OUT/kope-$1.stripped"
}

empty_prog() { # ARCH -> path of a static do-nothing program
  local a=$1 p=$OUT/empty-$a
  echo 'int main(void){return 0;}' > "$OUT/empty.c"
  case $a in
    riscv64) clang-19 --target=riscv64-linux-gnu -march=rv64gc -static -fuse-ld=lld -O2 "$OUT/empty.c" -o "$p" ;;
    aarch64) clang-19 --target=aarch64-linux-gnu -static -fuse-ld=lld -O2 "$OUT/empty.c" -o "$p" ;;
  esac
  echo "$p"
}

rss_of() { # RUNNER... -- kope args: prints maxrss KiB
  "$RSS" -n 3 -q -- "$@" | awk '{print $2}'
}

# --- a 100,000-record store, shared by every architecture (SQLite files are portable)
STORE=$OUT/g100k
KOPE_BIN=$B/x86_64/kope BENCH_INSERT_ONLY=1 "$B/x86_64/bench/graph" 100000 "$STORE" >/dev/null 2>&1 \
  || { make -s "$B/x86_64/bench/graph" && BENCH_INSERT_ONLY=1 "$B/x86_64/bench/graph" 100000 "$STORE" >/dev/null; }
DB=$STORE/graph.db

have_run() { "$@" run --help >/dev/null 2>&1; }

printf '\nkope footprint (%s)\n' "$(date -u +%F)"
printf 'anchors: nullclaw 678 KB static / ~1 MB RSS; ZeroClaw 8.8 MB / 3.9 MB peak (--help); PicoClaw ~8 MB / <10-20 MB RAM\n'
for a in x86_64 riscv64 aarch64; do
  [ -x "$B/$a/kope" ] || { printf '\n== %s: not built (make ARCH=%s)\n' "$a" "$a"; continue; }
  size=$(strip_size "$a")
  target=""
  # 2.1 MB as this script prints sizes (MiB): 2202009 bytes
  [ "$a" = riscv64 ] && target=$( [ "$size" -le 2202009 ] && echo "  (target <= 2.1 MB: met)" || echo "  (target <= 2.1 MB: NOT met)" )
  printf '\n== %s\nstripped binary  %.2f MB (%d bytes)%s\nshare of each library (allocated sections, from the link map):\n' \
    "$a" "$(echo "$size / 1048576" | bc -l)" "$size" "$target"
  map_shares "$a"
  case $a in
    x86_64)  run=(); base=0; label="" ;;
    riscv64) read -r -a run <<< "$QRV"; base=$(rss_of "${run[@]}" "$(empty_prog riscv64)"); label=" (guest est.)" ;;
    aarch64) read -r -a run <<< "$QA64"; base=$(rss_of "${run[@]}" "$(empty_prog aarch64)"); label=" (guest est.)" ;;
  esac
  v=$(rss_of "${run[@]}" "$B/$a/kope" --version)
  s=$(rss_of "${run[@]}" "$B/$a/kope" --db "$DB" graph stats)
  printf 'peak RSS%s:\n  kope --version          %6.2f MB   (target <= 2 MB: %s)\n  kope graph stats (100k) %6.2f MB   (target <= 8 MB: %s)\n' "$label" \
    "$(echo "($v - $base) / 1024" | bc -l)" "$( [ $((v - base)) -le 2048 ] && echo met || echo NOT met)" \
    "$(echo "($s - $base) / 1024" | bc -l)" "$( [ $((s - base)) -le 8192 ] && echo met || echo NOT met)"
  if have_run "${run[@]}" "$B/$a/kope"; then
    # the agent's own peak (KOPE_RUSAGE: getrusage(RUSAGE_SELF) at exit),
    # its compiler and kernel children reported apart
    task=$("${run[@]}" "$B/$a/kope" tasks 2>/dev/null | awk 'NR > 2 && $1 ~ /^[a-z]/ && !t {t = $1} END {print t}')
    line=$(KOPE_RUSAGE=1 "${run[@]}" "$B/$a/kope" --db "$OUT/run-$a.db" run --budget 2 --offline \
           --task "$task" 2>&1 >/dev/null | grep '^kope: rusage' || true)
    if [ -n "$line" ]; then
      r=$(echo "$line" | awk '{print $4}'); kids=$(echo "$line" | awk '{print $6}')
      printf '  kope run (agent only)   %6.2f MB   (target <= 16 MB: %s; its compiler/kernel children peaked at %.0f MB%s)\n' \
        "$(echo "($r - $base) / 1024" | bc -l)" "$( [ $((r - base)) -le 16384 ] && echo met || echo NOT met)" \
        "$(echo "$kids / 1024" | bc -l)" "$( [ "$a" = x86_64 ] && echo "" || echo ", host processes")"
    else
      printf '  kope run                (failed to run here)\n'
    fi
  else
    printf '  kope run                n/a: this build has no `kope run` yet\n'
  fi
done

# --- riscv64 read on the board VM's own kernel (no emulator in the process)
# `make test-board` (tests/board/guest.sh) leaves build/board-run/footprint.txt:
# wait4's peak RSS of kope --version and of graph stats on the same kind of
# 100,000-record store, and the agent's own peak during `kope run`
# (KOPE_RUSAGE), all measured by the guest Linux kernel.
FP=$B/board-run/footprint.txt
printf '\n== riscv64 on the board VM (peak RSS read by the guest kernel, not estimated)\n'
if [ -s "$FP" ]; then
  awk -v when="$(date -u -r "$FP" +%FT%TZ)" '
    { v[$1] = $2 }
    function mb(k) { return v[k] / 1024 }
    function met(k, t) { return v[k] <= t * 1024 ? "met" : "NOT met" }
    END {
      printf "  kope --version          %6.2f MB   (target <= 2 MB: %s)\n", mb("version_kib"), met("version_kib", 2)
      printf "  kope graph stats (100k) %6.2f MB   (target <= 8 MB: %s)\n", mb("stats100k_kib"), met("stats100k_kib", 8)
      printf "  kope run (agent only)   %6.2f MB   (target <= 8 MB: %s)\n", mb("run_agent_kib"), met("run_agent_kib", 8)
      printf "  (from make test-board, %s; compare the guest est. lines above)\n", when
    }' "$FP"
else
  echo "  not measured: run \`make test-board\` first (it writes $FP)"
fi

printf '\nstart-up\n'
"$RSS" -n 50 -q -- "$B/x86_64/kope" --version | awk '{printf "  x86_64 kope --version: median %.2f ms, min %.2f ms over %d runs (target < 5 ms: %s)\n", $4, $6, $8, ($4 < 5 ? "met" : "NOT met")}'
PLUGIN=$B/x86_64/libkope-icount.so
if [ -f "$PLUGIN" ] && [ -x "$B/riscv64/kope" ]; then
  $QRV -plugin "$PLUGIN,out=$OUT/icount.txt" "$B/riscv64/kope" --version >/dev/null
  awk '/^total/ {printf "  riscv64 kope --version under qemu: %s guest instructions (exact; a count, not a time)\n", $3}' "$OUT/icount.txt"
else
  echo "  riscv64 instruction count: needs $PLUGIN (make) and build/riscv64/kope"
fi

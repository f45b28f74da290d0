#!/bin/bash
# tests/run.sh - run kope's test programs and print one summary line.
#
# Each argument is a cmocka test program. Each runs in its own temp dir
# (KOPE_TEST_TMP) so tests use real files and never the user's store. The
# last line is "N passed, N failed" (tests, counted from cmocka's output),
# and the exit code is non-zero if any program failed or crashed.
# RUNNER (e.g. qemu-riscv64 ...) prefixes each program when cross-testing.
set -u
passed=0; failed=0; bad_progs=""
# the source tree, for tests that read it (templates, harness sources)
KOPE_SRC=${KOPE_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
export KOPE_SRC
# Cross-testing: the programs run under $RUNNER, and so must the kope binary
# they start; a wrapper gives them one path to exec.
if [ -n "${RUNNER:-}" ] && [ -n "${KOPE_BIN:-}" ]; then
  wrap_dir=$(mktemp -d "${TMPDIR:-/tmp}/kope-runner.XXXXXX")
  # readable by all: test_hints runs kope as nobody (setpriv) in a read-only folder
  chmod 755 "$wrap_dir"
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$RUNNER" "$KOPE_BIN" > "$wrap_dir/kope"
  chmod +x "$wrap_dir/kope"
  export KOPE_BIN_TARGET=$KOPE_BIN KOPE_BIN=$wrap_dir/kope
  trap 'rm -rf "$wrap_dir"' EXIT
fi
# Programs run KOPE_TEST_JOBS at a time (default: the number of cores; CI's
# machine has 2): each in its own temp dir, so they share nothing but the
# CPU, and none may depend on the machine's speed (tests/testutil.h). Each
# program's block is printed whole when it ends (under a lock: blocks never
# interleave), in the order they finish; the summary counts them all.
jobs=${KOPE_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac
res=$(mktemp -d "${TMPDIR:-/tmp}/kope-test-results.XXXXXX")
trap 'rm -rf "$res" ${wrap_dir:+"$wrap_dir"}' EXIT
run_one() { # $1 index, $2 program
  local t=$2 name tmp log start rc p f s status
  name=$(basename "$t")
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/kope-test-$name.XXXXXX")
  log=$tmp/out.log
  start=$(date +%s)
  # shellcheck disable=SC2086
  ( cd "$tmp" && KOPE_TEST_TMP=$tmp ${RUNNER:-} "$t" ) > "$log" 2>&1
  rc=$?
  # cmocka writes to stdout and stderr: lines can interleave, so no ^ anchor.
  # A named group prints "[  FAILED  ] tests: 2 test(s)": the name is optional.
  count() { grep -Eo "\\[  $1 *\\] ([A-Za-z0-9_]+: )?[0-9]+ test" "$log" | awk '{s+=$(NF-1)} END{print s+0}'; }
  p=$(count PASSED); f=$(count FAILED); s=$(count SKIPPED)
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=$((f + 1)); fi   # crashed before its summary
  status=ok; [ $rc -ne 0 ] && status=FAIL
  {
    printf '%-28s %4s passed %3s failed %3s skipped  %3ss  %s\n' "$name" "$p" "$f" "$s" $(( $(date +%s) - start )) "$status"
    if [ $rc -ne 0 ]; then sed 's/^/    | /' "$log" | tail -60; fi
    grep -E '^\[  SKIPPED \] |^\[ SKIPPED|skip:' "$log" | sed 's/^/    /' | head -20
  } > "$res/$1.out"
  echo "$p $f $status $name" > "$res/$1.sum"
  [ $rc -eq 0 ] && rm -rf "$tmp"
  ( flock 9; cat "$res/$1.out" ) 9>"$res/lock"
}
i=0; running=0
for t in "$@"; do
  i=$((i + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  run_one "$i" "$t" &
  running=$((running + 1))
done
wait
for f in "$res"/*.sum; do
  [ -e "$f" ] || continue
  read -r p fl status name < "$f"
  passed=$((passed + p)); failed=$((failed + fl))
  [ "$status" = FAIL ] && bad_progs="$bad_progs $name"
done
[ -n "$bad_progs" ] && echo "failing programs:$bad_progs"
echo "$passed passed, $failed failed"
[ -z "$bad_progs" ]

#!/bin/bash
# tests/board/deps-native.sh - run cross/deps.sh's native branch INSIDE the
# board VM once (the board's clang, no qemu-user) and kope's native build on
# the sysroot it made; prints the wall times. An emulated machine is far
# slower than a K3: the figures are upper bounds for the board. Not part of
# `make test-board` (it takes too long: 1 h 52 min here, most of it curl and
# OpenBLAS); README "Building kope on the board itself" quotes its result.
#
#   bash tests/board/deps-native.sh      (after make board-vm; needs build/deps/dl)
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SH=$ROOT/build/board-deps
rm -rf "$SH"; mkdir -p "$SH/src" "$SH/deps/dl"
git ls-files -z | xargs -0 cp --parents -t "$SH/src"
# the source packages only (the guest has no network): deps.sh unpacks them
cp -a build/deps/dl/. "$SH/deps/dl/"
# The build runs in the guest's /tmp (a tmpfs of half the guest's memory, so
# VM_MEM defaults to 8G here): compiling over virtio-9p is several times slower
# than in memory, and the root image has too little free space for OpenBLAS.
# Only the logs and the times go back through the share.
cat > "$SH/guest.sh" <<'EOF'
#!/bin/sh
S=/mnt/kope
B=/tmp/kb
mkdir -p "$B/deps" && cp -a "$S/src" "$B/src" && cp -a "$S/deps/dl" "$B/deps/dl" || exit 1
cd "$B/src" || exit 1
nproc > "$S/nproc"
t0=$(date +%s)
W=$B/deps JOBS=2 bash cross/deps.sh > "$S/deps.log" 2>&1; rc=$?
t1=$(date +%s)
echo "deps rc=$rc seconds=$((t1 - t0))" > "$S/times"
cp "$B/deps/sysroot-riscv64/VERSIONS" "$S/VERSIONS" 2>/dev/null
[ $rc = 0 ] || exit 1
# kope itself, natively, on the sysroot just made
mkdir -p build && ln -sfn "$B/deps" build/deps
make -j2 WERROR=1 build/riscv64/kope > "$S/make.log" 2>&1; rc=$?
t2=$(date +%s)
echo "make rc=$rc seconds=$((t2 - t1))" >> "$S/times"
[ $rc = 0 ] && ./build/riscv64/kope version >> "$S/times" 2>&1
EOF
t0=$(date +%s)
VM_MEM=${VM_MEM:-8G} nice -n 10 bash cross/board-vm.sh boot "$SH" -timeout 14400 > "$SH/console.log" 2>&1
rc=$?
echo "board deps-native: guest exit $rc after $(( $(date +%s) - t0 ))s"
cat "$SH/times" 2>/dev/null
[ -f "$SH/deps.log" ] && tail -5 "$SH/deps.log"
exit $rc

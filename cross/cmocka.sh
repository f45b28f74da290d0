#!/bin/bash
# cross/cmocka.sh - build the cmocka test framework for one architecture from
# Debian trixie's cmocka source, into build/deps/testroot-$ARCH, so the test
# programs can be built for riscv64 and aarch64 too (and run under qemu).
# Test-only: nothing here ships in kope. Uses the private apt configuration
# that cross/deps.sh set up (run that first; the Makefile does).
#
#   ARCH=riscv64 bash cross/cmocka.sh
set -euo pipefail
ARCH=${ARCH:-x86_64}
W=${W:-$PWD/build/deps}
CLANG=${CLANG:-clang-19}
T=$W/testroot-$ARCH
SUM=$(sha256sum "$0" | cut -d' ' -f1)
if [ -f "$T/.stamp" ] && [ "$(cat "$T/.stamp")" = "$SUM" ]; then exit 0; fi
[ -f "$W/apt/apt.conf" ] || { echo "cmocka: run cross/deps.sh first (it sets up the private apt config)" >&2; exit 1; }

DL=$W/dl-test
mkdir -p "$DL"
if ! ls "$DL"/cmocka_*.orig.tar.* >/dev/null 2>&1; then
  echo "cmocka: fetching the trixie source package"
  # The debian/ part of cmocka 1.1.7-3 has been seen to 404 on the mirror while
  # the upstream tarball (Debian's .orig copy) downloads: keep what arrived.
  ( cd "$DL" && APT_CONFIG=$W/apt/apt.conf apt-get source -qq --download-only cmocka >/dev/null 2>&1 ) || true
  ls "$DL"/cmocka_*.orig.tar.* >/dev/null 2>&1 || { echo "cmocka: could not download its source from trixie" >&2; exit 1; }
fi
B=$W/build-cmocka-$ARCH
rm -rf "$B" "$T"; mkdir -p "$B" "$T/include" "$T/lib"
tar -xf "$DL"/cmocka_*.orig.tar.* -C "$B" --strip-components=1

case $ARCH in
  x86_64)  CC="gcc"; AR=ar ;;
  riscv64) CC="$CLANG --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"; AR=riscv64-linux-gnu-ar ;;
  aarch64) CC="$CLANG --target=aarch64-linux-gnu"; AR=aarch64-linux-gnu-ar ;;
  *) echo "cmocka: unknown ARCH=$ARCH" >&2; exit 2 ;;
esac
# What cmocka's CMake checks would find on any glibc Linux.
DEFS="-DHAVE_MALLOC_H -DHAVE_INTTYPES_H -DHAVE_SIGNAL_H -DHAVE_STRINGS_H -DHAVE_SETJMP_H
      -DHAVE_GCC_THREAD_LOCAL_STORAGE -DHAVE_CLOCK_REALTIME -DHAVE_SIGLONGJMP -DHAVE_STRSIGNAL
      -DHAVE_STRUCT_TIMESPEC -DHAVE_UINTPTR_T -DHAVE_CLOCK_GETTIME -D_GNU_SOURCE"
# shellcheck disable=SC2086
$CC -O2 $DEFS -I"$B/include" -c "$B/src/cmocka.c" -o "$B/cmocka.o"
$AR rcs "$T/lib/libcmocka.a" "$B/cmocka.o"
cp "$B/include/cmocka.h" "$B/include/cmocka_pbc.h" "$T/include/"
rm -rf "$B"
echo "$SUM" > "$T/.stamp"
echo "cmocka: $T"

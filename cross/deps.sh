#!/bin/bash
# cross/deps.sh - build kope's static dependency sysroot for one architecture
# from Debian trixie SOURCE packages: mbedTLS 3.6, cJSON, SQLite (amalgamation),
# libcurl on mbedTLS, OpenBLAS (CBLAS only); for riscv64 also SLEEF (static,
# RVVM1/RVVM2: the vector-math peer of the k3 harness). Every target gets the
# same versions and the same TLS stack.
#
#   ARCH=x86_64  bash cross/deps.sh     # native (gcc)
#   ARCH=riscv64 bash cross/deps.sh     # clang-19 cross, RVV 1.0; probe runs under qemu-riscv64
#   ARCH=aarch64 bash cross/deps.sh     # clang-19 cross; probe runs under qemu-aarch64
#   bash cross/deps.sh                  # on the board itself (ARCH = uname -m): the
#                                       # native compiler, no qemu; same flags
#
# Knobs: W (work dir, default ./build/deps), JOBS, CLANG (default clang-19,
#   else clang), OB_TARGET (OpenBLAS TARGET override), FORCE=1 (rebuild even
#   if up to date), KOPE_DEBIAN_MIRROR (else the mirror of this machine's apt
#   sources, cross/apt-private.sh).
#
# Result: $W/sysroot-$ARCH/{include,lib} and $W/sysroot-$ARCH/.stamp. The stamp
# holds the SHA-256 of this script: the sysroot is rebuilt only when the recipe
# changes. Downloaded source archives are kept in $W/dl and never re-fetched.
#
# The system's apt configuration is never touched: the trixie deb-src list,
# package lists and cache live under $W/apt and are used through APT_CONFIG.
# Host tools (clang-19, cross binutils, qemu-user, tcl, dpkg-dev) come from
# bookworm packages: see cross/host-tools.sh.
#
# Pitfalls found by trying (kept here so nobody relearns them):
#  - curl 8's configure rejects --without-ssl together with --with-mbedtls.
#  - the trixie index can list a curl .dsc that is not on the mirror (404):
#    every listed version is tried, newest first.
#  - OpenBLAS TARGET=RISCV64_ZVL256B silently computes wrong results when the
#    hardware VLEN is 128: qemu must run with vlen=256, and kope checks VLEN
#    at start-up before using BLAS.
#  - gcc-12 for riscv64 has no RVV intrinsics: everything riscv64 uses clang.
#  - SLEEF: the mirror this was written against 404s on trixie's sleef_3.6.1-3
#    files (.dsc and tarballs) and on sid's .dsc, while sid's orig and debian
#    tarballs download; see step 2b. Cross-building it needs its host tools
#    (mkrename, ...) built natively first (NATIVE_BUILD_DIR), and its CMake
#    checks a C++ compiler even for the C library: the riscv64 sysroot has no
#    libstdc++, so the cross configure tries compiles without linking.
set -euo pipefail
HOST_ARCH=$(uname -m)
ARCH=${ARCH:-$HOST_ARCH}
HERE=$(cd "$(dirname "$0")" && pwd)
W=${W:-$PWD/build/deps}
JOBS=${JOBS:-$(nproc)}
if [ -z "${CLANG:-}" ]; then
  CLANG=clang-19
  command -v clang-19 >/dev/null || ! command -v clang >/dev/null || CLANG=clang
fi
S=$W/sysroot-$ARCH
SRC=$W/src
DL=$W/dl
LOG=$W/logs-$ARCH
RECIPE_SUM=$(sha256sum "$0" | cut -d' ' -f1)

if [ "${FORCE:-0}" != 1 ] && [ -f "$S/.stamp" ] && [ "$(cat "$S/.stamp")" = "$RECIPE_SUM" ]; then
  echo "deps: sysroot-$ARCH is up to date ($S)"
  exit 0
fi

mkdir -p "$W" "$SRC" "$DL" "$LOG" "$W/bin"
rm -rf "$S"; mkdir -p "$S/include" "$S/lib"
t0=$(date +%s)
stamp() { echo "deps[$ARCH] [$(( $(date +%s) - t0 ))s] $*"; }
fail() { echo "deps[$ARCH]: $1 failed; last lines of $2:" >&2; tail -25 "$2" >&2; exit 1; }

# ---------------------------------------------------------------- 1. toolchain
# OpenBLAS TARGET per architecture:
#  - riscv64: RISCV64_ZVL256B, the K3's X100 cores have VLEN 256 (RVV 1.0).
#  - x86_64: HASWELL (AVX2 + FMA). Every x86_64 server CPU since 2013, which
#    covers the Xeon hosts that carry Ascend cards and our CI machines; a
#    single target instead of DYNAMIC_ARCH keeps the binary ~10x smaller.
#  - aarch64: TSV110, the core of Kunpeng 920, the usual Ascend host CPU
#    (ARMv8.2 NEON; qemu-aarch64's default "max" CPU runs it).
case $ARCH in
  riscv64)
    TRIPLE=riscv64-linux-gnu
    CFLAGS_ARCH="--target=$TRIPLE -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
    OB_TARGET=${OB_TARGET:-RISCV64_ZVL256B}
    RUN="qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true"
    ;;
  aarch64)
    TRIPLE=aarch64-linux-gnu
    CFLAGS_ARCH="--target=$TRIPLE"
    OB_TARGET=${OB_TARGET:-TSV110}
    RUN="qemu-aarch64"
    ;;
  x86_64)
    TRIPLE=x86_64-linux-gnu
    OB_TARGET=${OB_TARGET:-HASWELL}
    RUN=""
    ;;
  *) echo "deps: unknown ARCH=$ARCH (x86_64, riscv64, aarch64)" >&2; exit 2 ;;
esac
if [ "$ARCH" = "$HOST_ARCH" ]; then
  # native: on the development machine (x86_64, gcc) or on the board itself
  # (riscv64/aarch64: its clang with the same -march, nothing emulated)
  RUN=""; AR=ar; RANLIB=ranlib; STRIP=strip; HOSTOPT=""
  if [ "$ARCH" = x86_64 ]; then
    CC=gcc
  else
    command -v "$CLANG" >/dev/null || { echo "deps: $CLANG not found (apt-get install clang)" >&2; exit 1; }
    CC=$W/bin/$ARCH-cc
    printf '#!/bin/sh\nexec %s %s "$@"\n' "$CLANG" "${CFLAGS_ARCH/--target=$TRIPLE/}" > "$CC"; chmod +x "$CC"
  fi
elif [ "$ARCH" = x86_64 ]; then
  echo "deps: ARCH=x86_64 is built on an x86_64 host only" >&2; exit 2
else
  command -v "$CLANG" >/dev/null || { echo "deps: $CLANG not found: run cross/host-tools.sh as root" >&2; exit 1; }
  CC=$W/bin/$ARCH-cc
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$CLANG" "$CFLAGS_ARCH" > "$CC"; chmod +x "$CC"
  AR=$TRIPLE-ar; RANLIB=$TRIPLE-ranlib; STRIP=$TRIPLE-strip
  HOSTOPT="--host=$TRIPLE --build=x86_64-linux-gnu"
fi
# -ffunction-sections/-fdata-sections let kope's link drop what it never calls.
OPT="-O2 -ffunction-sections -fdata-sections"

# ---------------------------------------------------------------- 2. sources (trixie deb-src, private apt dirs)
if [ ! -f "$SRC/.unpacked" ]; then
  A=$W/apt
  cd "$DL"
  if ! ls ./*.dsc >/dev/null 2>&1 || [ "$(ls ./*.dsc | wc -l)" -lt 5 ]; then
    stamp "fetch trixie source packages"
    # the mirror of this machine's apt sources, or KOPE_DEBIAN_MIRROR
    # shellcheck source=cross/apt-private.sh
    . "$HERE/apt-private.sh"
    apt_private_setup "$A" trixie
    export APT_CONFIG=$A/apt.conf
    apt-get update -qq
    for p in mbedtls cjson sqlite3 curl openblas; do
      ls ./"${p}"_*.dsc >/dev/null 2>&1 && continue
      ok=0
      for v in $(apt-cache showsrc "$p" | awk '/^Version:/{print $2}' | sort -rV | uniq); do
        if apt-get source -qq --download-only "$p=$v" >/dev/null 2>&1; then ok=1; echo "  $p $v"; break; fi
      done
      [ $ok = 1 ] || { echo "deps: could not download the source of $p from trixie" >&2; exit 1; }
    done
    unset APT_CONFIG
  fi
  rm -rf "$SRC"; mkdir -p "$SRC"; cd "$SRC"
  for d in "$DL"/*.dsc; do dpkg-source --no-check -x "$d" >/dev/null; done
  touch "$SRC/.unpacked"
fi
# ---------------------------------------------------------------- 2b. SLEEF source (riscv64 only)
# Debian's sleef source package: trixie's first (every listed version), else
# sid's. A version counts when apt-get fetched its files, which apt checks
# against the hashes of the signed Sources index; when only the .dsc is
# missing on the mirror (the orig and debian tarballs came, hash-checked),
# it is unpacked the way dpkg-source would: orig, debian/, quilt series.
# Files fetched before are kept in $DL/sleef-SUITE and used without the
# network (the board VM builds from a copy of $DL).
if [ "$ARCH" = riscv64 ] && ! ls -d "$SRC"/sleef-*/ >/dev/null 2>&1; then
  got=""
  for suite in trixie sid; do
    for f in "$DL/sleef-$suite"/sleef_*.debian.tar.*; do
      [ -f "$f" ] || continue
      v=$(basename "$f"); v=${v#sleef_}; v=${v%.debian.tar.*}; up=${v%-*}; up=${up#*:}
      if ls "$DL/sleef-$suite"/sleef_"$up".orig.tar.* >/dev/null 2>&1; then got="$suite $v"; break 2; fi
    done
  done
  [ -z "$got" ] && . "$HERE/apt-private.sh" && stamp "fetch the sleef source package"
  for suite in trixie sid; do
    [ -n "$got" ] && break
    A=$W/apt-sleef-$suite; D=$DL/sleef-$suite
    apt_private_setup "$A" "$suite" deb-src
    APT_CONFIG=$A/apt.conf apt-get update -qq
    mkdir -p "$D"
    for v in $(APT_CONFIG=$A/apt.conf apt-cache showsrc sleef | awk '/^Version:/{print $2}' | sort -rV | uniq); do
      up=${v%-*}; up=${up#*:}
      ( cd "$D" && APT_CONFIG=$A/apt.conf apt-get source -qq --download-only "sleef=$v" ) >/dev/null 2>&1 || true
      if ls "$D"/sleef_"$up".orig.tar.* "$D"/sleef_"$v".debian.tar.* >/dev/null 2>&1; then
        got="$suite $v"; break 2
      fi
      rm -f "$D"/sleef_"$up"* "$D"/sleef_"$v"*
    done
  done
  [ -n "$got" ] || { echo "deps: could not download the source of sleef (trixie, sid)" >&2; exit 1; }
  suite=${got%% *}; v=${got#* }; up=${v%-*}; up=${up#*:}; D=$DL/sleef-$suite
  echo "  sleef $v ($suite)"
  rm -rf "$SRC/sleef-tmp" && mkdir -p "$SRC/sleef-tmp" && cd "$SRC/sleef-tmp"
  if [ -f "$D/sleef_$v.dsc" ]; then
    dpkg-source --no-check -x "$D/sleef_$v.dsc" sleef >/dev/null
  else
    mkdir sleef && tar -xf "$D"/sleef_"$up".orig.tar.* -C sleef --strip-components=1
    tar -xf "$D"/sleef_"$v".debian.tar.* -C sleef
    if [ -f sleef/debian/patches/series ]; then
      grep -v '^[[:space:]]*\(#\|$\)' sleef/debian/patches/series | while read -r pf _; do
        patch -d sleef -p1 -s < "sleef/debian/patches/$pf"
      done
    fi
  fi
  mv sleef "$SRC/sleef-$up" && cd "$SRC" && rm -rf "$SRC/sleef-tmp"
fi
MBEDTLS=$(ls -d "$SRC"/mbedtls-3*/ | head -1); CJSON=$(ls -d "$SRC"/cjson-*/ | head -1)
SQLITE=$(ls -d "$SRC"/sqlite3-*/ | head -1); CURL=$(ls -d "$SRC"/curl-*/ | head -1)
OPENBLAS=$(ls -d "$SRC"/openblas-*/ | head -1)

# ---------------------------------------------------------------- 3. mbedTLS (static)
stamp "mbedtls $(basename "$MBEDTLS")"
B=$W/build-$ARCH; rm -rf "$B"; mkdir -p "$B"
cp -a "$MBEDTLS" "$B/mbedtls"
# Thread-safe PSA/RNG: the agent may use libcurl from a worker thread.
sed -i 's|^//#define MBEDTLS_THREADING_C$|#define MBEDTLS_THREADING_C|; s|^//#define MBEDTLS_THREADING_PTHREAD$|#define MBEDTLS_THREADING_PTHREAD|' \
  "$B/mbedtls/include/mbedtls/mbedtls_config.h"
make -j"$JOBS" -C "$B/mbedtls/library" CC="$CC" AR="$AR" CFLAGS="$OPT" static > "$LOG/mbedtls.log" 2>&1 \
  || fail mbedtls "$LOG/mbedtls.log"
cp -r "$B/mbedtls/include/mbedtls" "$B/mbedtls/include/psa" "$S/include/"
cp "$B"/mbedtls/library/libmbed{tls,x509,crypto}.a "$S/lib/"

# ---------------------------------------------------------------- 4. cJSON (one file)
stamp "cjson $(basename "$CJSON")"
$CC $OPT -c "$CJSON/cJSON.c" -o "$B/cJSON.o" > "$LOG/cjson.log" 2>&1 || fail cjson "$LOG/cjson.log"
$AR rcs "$S/lib/libcjson.a" "$B/cJSON.o"
cp "$CJSON/cJSON.h" "$S/include/"

# ---------------------------------------------------------------- 5. SQLite (amalgamation generated on the host; needs tclsh)
stamp "sqlite $(basename "$SQLITE")"
mkdir -p "$B/sqlite" && cd "$B/sqlite"
( "$SQLITE/configure" --disable-tcl && make -j"$JOBS" sqlite3.c ) > "$LOG/sqlite-amalg.log" 2>&1 \
  || fail "sqlite amalgamation" "$LOG/sqlite-amalg.log"
# Options: kope never loads extensions, uses no shared cache, no deprecated
# API, and wants double-quoted strings to be errors (they hide typos in SQL).
$CC $OPT -DSQLITE_THREADSAFE=1 -DSQLITE_OMIT_LOAD_EXTENSION=1 -DSQLITE_DQS=0 \
    -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_OMIT_DEPRECATED=1 -DSQLITE_OMIT_SHARED_CACHE=1 \
    -DSQLITE_DEFAULT_FOREIGN_KEYS=1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS=1 \
    -c sqlite3.c -o sqlite3.o > "$LOG/sqlite.log" 2>&1 || fail sqlite "$LOG/sqlite.log"
$AR rcs "$S/lib/libsqlite3.a" sqlite3.o
cp sqlite3.h sqlite3ext.h "$S/include/"

# ---------------------------------------------------------------- 6. libcurl (mbedTLS backend, static, minimal)
stamp "curl $(basename "$CURL")"
mkdir -p "$B/curl" && cd "$B/curl"
# NB: no --without-ssl here (see the pitfalls above).
( "$CURL/configure" $HOSTOPT CC="$CC" AR="$AR" RANLIB="$RANLIB" STRIP="$STRIP" \
    CFLAGS="$OPT" CPPFLAGS="-I$S/include" LDFLAGS="-L$S/lib" LIBS="-lpthread" \
    --prefix="$S" --disable-shared --enable-static --with-mbedtls="$S" \
    --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs \
    --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp \
    --disable-pop3 --disable-imap --disable-smtp --disable-gopher --disable-mqtt --disable-smb \
    --disable-docs --disable-manual --disable-ntlm --disable-file --disable-ftp \
    --without-libpsl --without-zlib --without-brotli --without-zstd --without-nghttp2 \
    --without-nghttp3 --without-ngtcp2 --without-libidn2 --without-libssh2 --without-librtmp \
    --without-libgsasl --enable-ipv6 --enable-threaded-resolver
  make -j"$JOBS" -C lib
  make -C lib install-libLTLIBRARIES && make -C include install ) > "$LOG/curl.log" 2>&1 \
  || fail curl "$LOG/curl.log"
grep -q 'SSL:.*mbedTLS' "$LOG/curl.log" || { echo "deps: curl was not configured with mbedTLS" >&2; exit 1; }

# ---------------------------------------------------------------- 7. OpenBLAS (static, CBLAS only, no Fortran/LAPACK)
stamp "openblas $(basename "$OPENBLAS") TARGET=$OB_TARGET"
cp -a "$OPENBLAS" "$B/openblas" && cd "$B/openblas"
OBX="CC=$CC HOSTCC=gcc AR=$AR RANLIB=$RANLIB TARGET=$OB_TARGET BINARY=64 NOFORTRAN=1 NO_LAPACK=1 NO_LAPACKE=1
     ONLY_CBLAS=1 USE_THREAD=0 USE_OPENMP=0 NO_SHARED=1 DYNAMIC_ARCH=0 NUM_THREADS=8 COMMON_OPT=-O2
     BUILD_SINGLE=1 BUILD_DOUBLE=1 BUILD_COMPLEX=0 BUILD_COMPLEX16=0"
# shellcheck disable=SC2086
( make -j"$JOBS" $OBX libs && make $OBX PREFIX="$S" install ) > "$LOG/openblas.log" 2>&1 \
  || fail openblas "$LOG/openblas.log"
rm -rf "$S/lib/cmake" "$S/lib/pkgconfig" "$S/bin" "$S/share"

# ---------------------------------------------------------------- 7b. SLEEF (riscv64: static libsleef, RVVM1 + RVVM2 enforced)
# Only the vector math library (no DFT, quad, GNU-ABI names or tests). Cross:
# its host tools first, built natively, then the library with clang-19.
# Natively (on the board) one build with the board's compiler; a board
# without cmake gets no SLEEF (the k3 harness then has no SLEEF baseline and
# says so in kope probe's note) rather than no sysroot.
SLEEF=""
if [ "$ARCH" = riscv64 ] && { [ "$ARCH" != "$HOST_ARCH" ] || command -v cmake >/dev/null; }; then
  SLEEF=$(ls -d "$SRC"/sleef-*/ | head -1)
  stamp "sleef $(basename "$SLEEF")"
  SLOPT="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DSLEEF_BUILD_TESTS=OFF
         -DSLEEF_ENABLE_TLFLOAT=OFF -DSLEEF_BUILD_GNUABI_LIBS=OFF -DSLEEF_BUILD_DFT=OFF
         -DSLEEF_BUILD_QUAD=OFF -DSLEEF_BUILD_SCALAR_LIB=OFF
         -DSLEEF_ENFORCE_RVVM1=ON -DSLEEF_ENFORCE_RVVM2=ON"
  CXX=${CLANG/clang/clang++} # SLEEF's CMake wants C and C++ from the same compiler
  if [ "$ARCH" = "$HOST_ARCH" ]; then
    # shellcheck disable=SC2086
    ( CC=$CC CXX=$CXX cmake -S "$SLEEF" -B "$B/sleef" $SLOPT &&
      make -C "$B/sleef" -j"$JOBS" sleef ) > "$LOG/sleef.log" 2>&1 || fail sleef "$LOG/sleef.log"
    NM=nm
  else
    printf '%s\n' "set(CMAKE_SYSTEM_NAME Linux)" "set(CMAKE_SYSTEM_PROCESSOR riscv64)" \
      "set(CMAKE_C_COMPILER $CLANG)" "set(CMAKE_C_COMPILER_TARGET $TRIPLE)" \
      "set(CMAKE_CXX_COMPILER $CXX)" "set(CMAKE_CXX_COMPILER_TARGET $TRIPLE)" \
      "set(CMAKE_C_FLAGS_INIT \"-march=rv64gcv_zba_zbb_zbs -mabi=lp64d\")" \
      "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)" \
      "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)" > "$B/sleef-rv64.cmake"
    # shellcheck disable=SC2086
    ( cmake -S "$SLEEF" -B "$B/sleef-host" -DCMAKE_BUILD_TYPE=Release -DSLEEF_BUILD_TESTS=OFF \
        -DSLEEF_ENABLE_TLFLOAT=OFF -DSLEEF_BUILD_DFT=OFF -DSLEEF_BUILD_QUAD=OFF &&
      make -C "$B/sleef-host" -j"$JOBS" mkrename mkrename_gnuabi mkmasked_gnuabi mkalias mkdisp addSuffix &&
      cmake -S "$SLEEF" -B "$B/sleef" $SLOPT -DCMAKE_TOOLCHAIN_FILE="$B/sleef-rv64.cmake" \
        -DNATIVE_BUILD_DIR="$B/sleef-host" &&
      make -C "$B/sleef" -j"$JOBS" sleef ) > "$LOG/sleef.log" 2>&1 || fail sleef "$LOG/sleef.log"
    NM=$TRIPLE-nm
  fi
  cp "$B/sleef/lib/libsleef.a" "$S/lib/" && cp "$B/sleef/include/sleef.h" "$S/include/"
  # (grep -c, not -q: -q would close the pipe early and pipefail fail nm)
  [ "$("$NM" "$S/lib/libsleef.a" | grep -c ' T Sleef_expfx_u10rvvm2$')" -gt 0 ] \
    || { echo "deps: libsleef.a has no RVVM2 functions" >&2; exit 1; }
elif [ "$ARCH" = riscv64 ]; then
  echo "deps: no cmake on this board: no SLEEF in the sysroot (the k3 harness has no SLEEF baseline)"
fi

# ---------------------------------------------------------------- 8. probe: link all five, run (under qemu when cross)
stamp "probe"
LIBS="-lcurl -lmbedtls -lmbedx509 -lmbedcrypto -lsqlite3 -lcjson -lopenblas -lpthread -lm"
$CC -O2 -static -I"$S/include" "$HERE/deps-probe.c" -L"$S/lib" $LIBS -o "$W/deps-probe-$ARCH" 2> "$LOG/probe-link.log" \
  || fail "probe link" "$LOG/probe-link.log"
# shellcheck disable=SC2086
$RUN "$W/deps-probe-$ARCH" | tee "$LOG/probe.out"
grep -q '^ALL OK$' "$LOG/probe.out" || { echo "deps: probe failed for $ARCH" >&2; exit 1; }

{
  echo "# kope dependency sysroot for $ARCH, built $(date -u +%FT%TZ)"
  for d in "$MBEDTLS" "$CJSON" "$SQLITE" "$CURL" "$OPENBLAS" $SLEEF; do basename "$d"; done
  echo "openblas TARGET=$OB_TARGET"
} > "$S/VERSIONS"
echo "$RECIPE_SUM" > "$S/.stamp"
rm -rf "$B"
stamp "done: $S"

#!/bin/bash
# cross/qemu-plugin.sh OUT.so SRC.c - build kope's QEMU TCG instruction-count
# plugin (platform/k3/qemu/icount_plugin.c) for the host's qemu-riscv64.
#
# qemu-plugin.h is not shipped in any Debian 12 (bookworm) binary package, so
# it is taken from bookworm's qemu *source* package, fetched through a private
# apt configuration under build/deps/apt-qemu (the system's apt sources are
# never touched) and cached as build/deps/qemu-plugin/qemu-plugin.h. The header
# must match the installed qemu (7.2 on bookworm): the plugin API version is
# checked by qemu when it loads the plugin.
#
# Env: W (deps dir, default ./build/deps), HOSTCC (default cc).
# Only the dynamic qemu-riscv64 accepts -plugin, not qemu-riscv64-static.
set -euo pipefail
out=$1; src=$2
W=${W:-$PWD/build/deps}
HOSTCC=${HOSTCC:-cc}
P=$W/qemu-plugin
H=$P/qemu-plugin.h
mkdir -p "$P"

if [ ! -s "$H" ]; then
  echo "  FETCH   qemu-plugin.h (bookworm qemu source package)"
  A=$W/apt-qemu
  # shellcheck source=cross/apt-private.sh
  . "$(dirname "$0")/apt-private.sh"
  apt_private_setup "$A" bookworm
  export APT_CONFIG=$A/apt.conf
  apt-get update -qq
  # the version must match the installed binary's major.minor (plugin API)
  want=$(dpkg-query -W -f='${Version}' qemu-user 2>/dev/null || true)
  mkdir -p "$P/src" && cd "$P/src"
  ok=0
  for v in $want $(apt-cache showsrc qemu | awk '/^Version:/{print $2}' | sort -rV | uniq); do
    if apt-get source -qq --download-only "qemu=$v" >/dev/null 2>&1; then ok=1; echo "  qemu source $v"; break; fi
  done
  unset APT_CONFIG
  [ $ok = 1 ] || { echo "kope: could not download the qemu source package" >&2; exit 1; }
  tarball=$(ls qemu_*.orig.tar.* | head -1)
  tar -xf "$tarball" --strip-components=1 --wildcards '*/include/qemu/qemu-plugin.h'
  cp include/qemu/qemu-plugin.h "$H.tmp" && mv "$H.tmp" "$H"
  cd - >/dev/null
  rm -rf "$P/src"   # the source tarball is large; the header is all we keep
fi

mkdir -p "$(dirname "$out")"
$HOSTCC -shared -fPIC -O2 -std=c11 -Wall -Wextra -I"$P" "$src" -o "$out.tmp"
mv "$out.tmp" "$out"

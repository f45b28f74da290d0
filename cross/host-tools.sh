#!/bin/bash
# cross/host-tools.sh - install the host packages kope's build and tests need
# (Debian 12 "bookworm" packages only). Idempotent: does nothing when every
# package is already installed. Needs root for apt-get; without it, prints the
# command to run instead and exits 1.
#
#   bash cross/host-tools.sh            # everything: x86_64 + riscv64 + aarch64
#   bash cross/host-tools.sh board      # and the board VM's (make board-vm, test-board)
#   bash cross/host-tools.sh mca        # and llvm-22 (optional: llvm-mca-22 for the
#                                       # opt-in platform.k3.model mca:CPU, docs/COSTMODEL.md;
#                                       # kope and every test work without it)
set -euo pipefail

# On the board itself (riscv64, aarch64: a native build, `make` on a K3) there
# is no cross compiler and no emulator to install, and the board's distribution
# (Bianbu, an Ubuntu derivative; the board VM's bare trixie) names its
# compilers its own way: what counts is that the commands cross/deps.sh and
# the Makefile run are there. cmake (SLEEF's build) is optional: without it
# the sysroot has no SLEEF and deps.sh says so.
if [ "$(uname -m)" != x86_64 ] && [ "${1:-}" != board ]; then
  need="" pkgs=""
  for cp in make:make cc:gcc ar:binutils tclsh:tcl dpkg-source:dpkg-dev xz:xz-utils bzip2:bzip2 \
            patch:patch perl:perl; do
    command -v "${cp%%:*}" >/dev/null || { need="$need ${cp%%:*}"; pkgs="$pkgs ${cp#*:}"; }
  done
  command -v clang-19 >/dev/null || command -v clang >/dev/null || { need="$need clang"; pkgs="$pkgs clang lld"; }
  [ -z "$need" ] && exit 0
  echo "kope: a native build on $(uname -m) needs these commands, missing here:$need" >&2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "kope: installing:$pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
    exit 0
  fi
  echo "kope: install them (Debian/Ubuntu/Bianbu: apt-get install$pkgs), then run make again" >&2
  exit 1
fi

PKGS="make gcc libc6-dev file xz-utils bzip2 tcl dpkg-dev ca-certificates
      libcmocka-dev pkg-config
      clang-19 lld-19 llvm-19 libclang-rt-19-dev
      gcc-12-riscv64-linux-gnu libc6-dev-riscv64-cross binutils-riscv64-linux-gnu
      gcc-12-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu
      qemu-user bc cmake g++"
# the board VM (cross/board-vm.sh): full-system qemu, its firmware, the
# image tools (mmdebstrap --variant=extract needs no binfmt_misc)
if [ "${1:-}" = board ]; then
  PKGS="$PKGS qemu-system-misc opensbi mmdebstrap e2fsprogs cpio kmod xz-utils"
fi
# llvm-mca-22 with -mcpu=spacemit-x60 (bookworm-security's llvm-toolchain-22)
if [ "${1:-}" = mca ]; then
  PKGS="$PKGS llvm-22"
fi

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "kope: missing host packages:$missing" >&2
  echo "kope: run as root:  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
  exit 1
fi
echo "kope: installing host packages:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null

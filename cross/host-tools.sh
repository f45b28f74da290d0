#!/bin/bash
# cross/host-tools.sh - install the host packages kope's build and tests need
# (Debian 12 "bookworm" packages only). Idempotent: does nothing when every
# package is already installed. Needs root for apt-get; without it, prints the
# command to run instead and exits 1.
#
#   bash cross/host-tools.sh            # everything: x86_64 + riscv64 + aarch64
#   bash cross/host-tools.sh board      # and the board VM's (make board-vm, test-board)
set -euo pipefail

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

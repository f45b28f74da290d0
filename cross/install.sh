#!/bin/bash
# cross/install.sh DEST KOPE SYSROOT [PLUGIN] - a board install (`make install`):
#   DEST/bin/kope
#   DEST/lib/kope/sysroot-riscv64/{lib,include,VERSIONS}  the K3 harness's peers:
#       static OpenBLAS (and its RISCV64_ZVL256B-named archive) and SLEEF with
#       their headers; nothing else of the deps sysroot (kope links curl,
#       mbedTLS, SQLite and cJSON in already)
#   DEST/lib/kope/libkope-icount.so                       where kernels run under
#       qemu (PLUGIN given: every build on a host that is not riscv64)
# kope finds lib/kope through its compiled-in prefix or, once the tree is
# moved or copied, beside the binary (platform/k3/peers.h). DEST is
# $(DESTDIR)$(PREFIX). Copies only: an existing install is overwritten.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: cross/install.sh DEST KOPE SYSROOT [PLUGIN]" >&2; exit 2; }
dest=$1 kope=$2 sys=$3 plugin=${4:-}
[ -x "$kope" ] || { echo "install: $kope is not a built kope" >&2; exit 1; }
[ -f "$sys/lib/libopenblas.a" ] || {
  echo "install: $sys has no lib/libopenblas.a (make deps first)" >&2; exit 1; }
lib=$dest/lib/kope
rs=$lib/sysroot-riscv64
mkdir -p "$dest/bin" "$rs/lib" "$rs/include"
install -m 0755 "$kope" "$dest/bin/kope"
# libopenblas.a is a link to the target-named archive: keep both names (the
# name is how kope tells a ZVL256B build, peers.c), one copy of the bytes
cp -P "$sys"/lib/libopenblas*.a "$rs/lib/"
cp "$sys/include/cblas.h" "$sys/include/openblas_config.h" "$rs/include/"
[ -f "$sys/include/f77blas.h" ] && cp "$sys/include/f77blas.h" "$rs/include/"
[ -f "$sys/VERSIONS" ] && cp "$sys/VERSIONS" "$rs/VERSIONS"
if [ -f "$sys/lib/libsleef.a" ]; then
  cp "$sys/lib/libsleef.a" "$rs/lib/" && cp "$sys/include/sleef.h" "$rs/include/"
else
  echo "install: no SLEEF in $sys: the install has no SLEEF peer" >&2
fi
if [ -n "$plugin" ]; then
  install -m 0644 "$plugin" "$lib/libkope-icount.so"
fi
echo "installed kope in $dest/bin, its peers in $lib"

#!/bin/bash
# cross/board-vm.sh - a whole riscv64 Linux machine with RVV 1.0, as close to
# a SpacemiT K3 board as this host can get: Debian trixie's riscv64 userland,
# kernel and compilers, booted under bookworm's qemu-system-riscv64.
#
#   bash cross/board-vm.sh image              # build (or reuse) the image
#   bash cross/board-vm.sh boot SHARE [-cpu CPU] [-fwd PORT] [-timeout S]
#
# image: everything from Debian's own archive, nothing else downloaded.
#   mmdebstrap --variant=extract unpacks trixie riscv64 packages (gcc-14,
#   clang-19, make, libc6-dev, the kernel linux-image-riscv64, busybox-static,
#   GNU time, ...) into a directory without running any riscv64 code, so no
#   qemu-user/binfmt_misc is needed on the host; the few things maintainer
#   scripts would have done (passwd, /usr/bin/cc, the loader cache) are done
#   here or at boot. Then:
#     vmlinux     the trixie kernel (6.12: V in user space needs >= 6.5)
#     initrd.gz   busybox + the kernel's own modules for virtio-blk, ext4,
#                 virtio-9p and virtio-net (built as modules in Debian's
#                 config), and an /init that mounts the root disk and the
#                 share and switches to the root filesystem
#     rootfs.img  ext4 image of the root filesystem (booted with -snapshot:
#                 the image is never changed by a run)
#   Cached in $VM (build/board-vm): rebuilt only when this script changes
#   (its SHA-256 is the stamp, as for the dependency sysroots). The Debian
#   mirror comes from this machine's apt sources or KOPE_DEBIAN_MIRROR
#   (cross/apt-private.sh).
#
# boot: one run of the machine. SHARE (a host directory) is the only way in
#   and out: it is mounted read-write at /mnt/kope over virtio-9p, the guest
#   runs SHARE/guest.sh as root and powers off; its exit status is written to
#   SHARE/guest.rc and becomes this command's. The console goes to stdout.
#   -cpu replaces the CPU model (default: RVV 1.0, VLEN 256, as on the K3's
#   X100 cores). -fwd PORT adds qemu's user-mode network with ONE forward,
#   127.0.0.1:PORT on the host -> guest port PORT; restrict=on: the guest
#   cannot reach the host or anything beyond, it only answers the forward.
#   -timeout S (default 3600) kills a machine that hangs.
#
# Knobs: VM (dir, default ./build/board-vm), FORCE=1 (rebuild), VM_MEM
# (default 2G), VM_SMP (default 2), QEMU (default qemu-system-riscv64).
# Host packages: qemu-system-misc, opensbi, mmdebstrap, e2fsprogs, cpio,
# kmod (cross/host-tools.sh installs them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VM=${VM:-$PWD/build/board-vm}
QEMU=${QEMU:-qemu-system-riscv64}
CPU_K3="rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true"
RECIPE_SUM=$(sha256sum "$0" | cut -d' ' -f1)
SUITE=trixie
# The guest's packages: compilers and what kope's native path and the board
# test use. Each one costs image build time and CI time: keep it short.
PKGS="base-files base-passwd bash coreutils dash diffutils findutils grep sed gawk tar gzip xz-utils
      bzip2 libc-bin libc6 libc6-dev gcc-14 gcc clang-19 clang lld-19 binutils make busybox-static
      time file tcl dpkg-dev patch perl-base util-linux linux-image-riscv64"
# Modules the initrd loads (Debian builds them as modules), dependencies
# resolved by the host's depmod against the kernel's own modules.dep.
MODS="virtio_mmio virtio_pci virtio_blk ext4 crc32c_generic 9pnet_virtio 9p virtio_net"

log() { echo "board-vm [$(( $(date +%s) - t0 ))s] $*"; }
t0=$(date +%s)

image() {
  if [ "${FORCE:-0}" != 1 ] && [ -f "$VM/.stamp" ] && [ "$(cat "$VM/.stamp")" = "$RECIPE_SUM" ]; then
    echo "board-vm: image is up to date ($VM)"
    return 0
  fi
  for t in mmdebstrap mke2fs cpio depmod "$QEMU"; do
    command -v "$t" >/dev/null || { echo "board-vm: $t not found: run cross/host-tools.sh as root" >&2; exit 1; }
  done
  # shellcheck source=cross/apt-private.sh
  . "$HERE/apt-private.sh"
  local mirror R=$VM/rootfs
  mirror=$(apt_mirror)
  rm -rf "$VM/rootfs" "$VM/initrd" "$VM/.stamp"
  mkdir -p "$VM/cache"
  log "mmdebstrap --variant=extract $SUITE riscv64 from $mirror"
  # The .debs are kept in $VM/cache (a rebuild after a recipe change does not
  # fetch them again). merged /usr like a trixie system: /bin etc. are links.
  # shellcheck disable=SC2086
  mmdebstrap --quiet --variant=extract --architectures=riscv64 \
    --include="$(echo $PKGS | tr ' ' ,)" \
    --setup-hook='for d in bin sbin lib; do mkdir -p "$1/usr/$d"; ln -s usr/$d "$1/$d"; done' \
    --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && cp -a $VM/cache/. \"\$1/var/cache/apt/archives/\" 2>/dev/null || true" \
    --extract-hook="cp -a \"\$1\"/var/cache/apt/archives/*.deb $VM/cache/ 2>/dev/null || true" \
    --skip=download/empty --skip=cleanup/apt --skip=cleanup/reproducible \
    "$SUITE" "$R" "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $SUITE main" \
    > "$VM/mmdebstrap.log" 2>&1 || { tail -30 "$VM/mmdebstrap.log" >&2; exit 1; }
  rm -rf "$R/var/cache/apt/archives/"*.deb "$R/var/lib/apt/lists/"*_Packages

  log "fix-ups maintainer scripts would have made"
  cp "$R/usr/share/base-passwd/passwd.master" "$R/etc/passwd"
  cp "$R/usr/share/base-passwd/group.master" "$R/etc/group"
  [ -e "$R/usr/bin/sh" ] || ln -s dash "$R/usr/bin/sh"
  ln -sf gcc "$R/usr/bin/cc"              # alternatives no postinst set up
  ln -sf gawk "$R/usr/bin/awk"
  ln -sf ld.lld-19 "$R/usr/bin/ld.lld"
  echo "kope-board" > "$R/etc/hostname"
  printf '127.0.0.1 localhost\n' > "$R/etc/hosts"
  mkdir -p "$R/mnt/kope" "$R/proc" "$R/sys" "$R/dev" "$R/tmp" "$R/run"
  chmod 1777 "$R/tmp"
  # the script the root filesystem runs after switch_root (PID 1)
  cat > "$R/sbin/kope-board-init" <<'EOF_INIT'
#!/bin/sh
# PID 1 on the board VM's root filesystem (cross/board-vm.sh): set up, run
# the share's guest.sh, write its exit status back, power off.
export PATH=/usr/local/bin:/usr/bin:/usr/sbin HOME=/root LANG=C.UTF-8 TMPDIR=/tmp
mount -t proc proc /proc 2>/dev/null; mount -t sysfs sys /sys 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null; mount -t tmpfs tmp /tmp
mkdir -p /dev/pts /dev/shm && mount -t devpts pts /dev/pts && mount -t tmpfs shm /dev/shm
mkdir -p /root
ldconfig 2>/dev/null
ip() { busybox ip "$@"; }
if [ -e /sys/class/net/eth0 ]; then   # user-mode net: fixed addresses, no DHCP client
  ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0
else
  ip link set lo up
fi
busybox hostname kope-board
cd /mnt/kope && /bin/sh /mnt/kope/guest.sh
echo $? > /mnt/kope/guest.rc
sync
busybox poweroff -f
EOF_INIT
  chmod 755 "$R/sbin/kope-board-init"

  local kver
  kver=$(basename "$(ls -d "$R"/usr/lib/modules/*/ | head -1)")
  cp "$R/boot/vmlinux-$kver" "$VM/vmlinux"
  log "initrd for $kver"
  local I=$VM/initrd
  mkdir -p "$I/bin" "$I/dev" "$I/proc" "$I/sys" "$I/newroot" "$I/lib/modules/$kver"
  cp "$R/usr/bin/busybox" "$I/bin/busybox"
  for a in sh mount umount mkdir insmod modprobe switch_root sleep cat echo poweroff ls; do
    ln -s busybox "$I/bin/$a"
  done
  cp "$R/usr/lib/modules/$kver/modules.order" "$R/usr/lib/modules/$kver/modules.builtin" "$I/lib/modules/$kver/" 2>/dev/null || true
  depmod -b "$R/usr" "$kver" 2>/dev/null || depmod -b "$R" "$kver"
  local m f list=""
  # shellcheck disable=SC2086
  for m in $MODS; do
    list="$list $(modprobe -d "$R/usr" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" {print $2}' || true)"
  done
  local order=""
  for f in $list; do
    case " $order " in *" $f "*) ;; *) order="$order $f" ;; esac
  done
  : > "$I/modules"
  for f in $order; do
    local b
    b=$(basename "$f"); b=${b%.xz}; b=${b%.zst}
    case $f in
      *.xz) xz -dc "$f" > "$I/lib/modules/$kver/$b" ;;
      *.zst) zstd -qdc "$f" > "$I/lib/modules/$kver/$b" ;;
      *) cp "$f" "$I/lib/modules/$kver/$b" ;;
    esac
    echo "$b" >> "$I/modules"
  done
  [ -s "$I/modules" ] || { echo "board-vm: no modules found for $MODS in $kver" >&2; exit 1; }
  cat > "$I/init" <<EOF_RD
#!/bin/sh
# initrd of the board VM: load the drivers Debian builds as modules, mount
# the root disk and the share, hand over to the root filesystem.
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in \$(cat /modules); do insmod /lib/modules/$kver/\$m 2>/dev/null; done
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
mount -t ext4 -o rw /dev/vda /newroot || { echo "board-vm: no root disk"; poweroff -f; }
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose kope /newroot/mnt/kope \\
  || { echo "board-vm: no share"; poweroff -f; }
umount /proc /sys; mount --move /dev /newroot/dev 2>/dev/null
exec switch_root /newroot /sbin/kope-board-init
EOF_RD
  chmod 755 "$I/init"
  ( cd "$I" && find . | cpio -o -H newc --quiet | gzip -1 ) > "$VM/initrd.gz"

  log "ext4 root image"
  local mb
  mb=$(( $(du -sm "$R" | cut -f1) * 13 / 10 + 512 ))
  rm -f "$VM/rootfs.img"
  mke2fs -q -t ext4 -L kope-board -d "$R" "$VM/rootfs.img" "${mb}M"
  {
    echo "# kope board VM image, built $(date -u +%FT%TZ) in $(( $(date +%s) - t0 ))s"
    echo "kernel $kver"
    echo "mirror $mirror"
    grep -h '^Package: \|^Version: ' "$R/var/lib/dpkg/status" 2>/dev/null | paste - - | awk '{print $2, $4}' || true
  } > "$VM/VERSIONS"
  ls "$VM/cache" | sed 's/_riscv64.deb\|_all.deb//' >> "$VM/VERSIONS"
  rm -rf "$R" "$I"
  echo "$RECIPE_SUM" > "$VM/.stamp"
  log "done: $VM (rootfs.img $(du -sh --apparent-size "$VM/rootfs.img" | cut -f1), $(du -sh "$VM/rootfs.img" | cut -f1) used)"
}

boot() {
  local share=$1; shift
  local cpu=$CPU_K3 fwd="" timeout=3600
  while [ $# -gt 0 ]; do
    case $1 in
      -cpu) cpu=$2; shift 2 ;;
      -fwd) fwd=$2; shift 2 ;;
      -timeout) timeout=$2; shift 2 ;;
      *) echo "board-vm: unknown option $1" >&2; exit 2 ;;
    esac
  done
  [ -f "$VM/.stamp" ] || { echo "board-vm: no image: run 'bash cross/board-vm.sh image' (make board-vm)" >&2; exit 1; }
  [ -f "$share/guest.sh" ] || { echo "board-vm: $share/guest.sh missing" >&2; exit 2; }
  share=$(cd "$share" && pwd)
  rm -f "$share/guest.rc"
  local net=(-nic none)
  if [ -n "$fwd" ]; then
    net=(-netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$fwd-:$fwd" -device virtio-net-device,netdev=n0)
  fi
  # -snapshot: writes to the root disk go to a temporary overlay.
  timeout --kill-after=10 "$timeout" "$QEMU" -machine virt -bios default \
    -smp "${VM_SMP:-2}" -m "${VM_MEM:-2G}" -nographic -no-reboot -cpu "$cpu" \
    -kernel "$VM/vmlinux" -initrd "$VM/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=3 rdinit=/init" \
    -drive "file=$VM/rootfs.img,format=raw,if=none,id=hd0" -device virtio-blk-device,drive=hd0 -snapshot \
    -fsdev "local,id=fs0,path=$share,security_model=none" -device virtio-9p-device,fsdev=fs0,mount_tag=kope \
    "${net[@]}" < /dev/null || true
  [ -f "$share/guest.rc" ] || { echo "board-vm: the guest did not finish (no $share/guest.rc)" >&2; return 1; }
  return "$(cat "$share/guest.rc")"
}

case ${1:-} in
  image) image ;;
  boot) shift; [ $# -ge 1 ] || { echo "usage: $0 boot SHARE [-cpu CPU] [-fwd PORT] [-timeout S]" >&2; exit 2; }; boot "$@" ;;
  *) echo "usage: $0 image | boot SHARE [-cpu CPU] [-fwd PORT] [-timeout S]" >&2; exit 2 ;;
esac

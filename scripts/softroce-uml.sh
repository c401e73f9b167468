#!/bin/bash
# softroce-uml.sh -- run a command inside a throw-away Linux guest that has a
# working soft-RoCE device (rdma_rxe, "rxe0"), on a host that has no RDMA
# hardware and no kernel modules of its own.  A test tool for the verbs provider (soft-RoCE under User-Mode Linux).
#
# Verified backend (default): User-Mode Linux (UML).  A Debian 6.1 kernel is
# built for ARCH=um with INFINIBAND + RDMA_RXE (+ RDMA_SIW) built in.  It runs
# as an ordinary host process: no KVM, no root-level host changes, no host
# networking.  See ../SOFTROCE.md for why qemu/KVM does NOT work on this host
# (its /dev/kvm is Ant Group's PVM, which only runs PVM-enlightened kernels).
#
#   softroce-uml.sh setup                 # packages + build the UML kernel (~9 min on 2 vCPUs, once)
#   softroce-uml.sh ensure                # setup, unless the kernel is already built
#   softroce-uml.sh initramfs             # (re)build the tiny initramfs (<1 s)
#   softroce-uml.sh run CMD [ARGS...]     # boot guest, create rxe0, run CMD as root in it
#   softroce-uml.sh kvm-probe [SECONDS]   # show how far a stock kernel gets under qemu/KVM
#
# Inside the guest:
#   * the host's / is visible read-only (hostfs) under a tmpfs overlay, so every
#     host binary/library (libibverbs, providers, your build tree) is there and
#     the guest may write anywhere (writes are discarded at exit);
#   * $OUT (default $W/out) is the host directory mounted read-write at the same
#     path, for results;
#   * CMD runs in the caller's current directory, as root, with rxe0 already
#     bound to veth0 (198.18.0.1/15; GID 0 = fe80:: link-local, GID 1 = ::ffff:198.18.0.1,
#     both RoCE v2).  $RXE_IP=198.18.0.1 and $RXE_DEV=rxe0 are exported;
#   * /proc/cpuinfo gets a "cpu MHz" line (the host TSC rate) so perftest works.
#
# Exit status of `run` = exit status of CMD in the guest (124 = hard timeout,
# 125 = the guest never reported a status).  Guest console goes to stdout.
#
# pollfab's copy of ../shared/tools/softroce-uml.sh (the team's tool), so that a fresh
# checkout has it. Changes: the work directory defaults to /var/cache/pollfab/softroce-uml,
# outside any checkout, so the kernel is built once per machine and kept; `ensure` builds it
# only when it is missing; one guest run at a time (a lock), since every run shares $OUT; the
# kernel leaves out what the guest does not use (file systems on block devices, HID).
set -euo pipefail

W=${W:-/var/cache/pollfab/softroce-uml}
OUT=${OUT:-$W/out}
SRC=${SRC:-$W/linux-source-6.1}
BUILD=${BUILD:-$W/uml-build}
UML=${UML:-$BUILD/linux}
IRD=$W/uml-initramfs
IMG=$W/uml-initramfs.cpio
UML_MEM=${UML_MEM:-1G}
UML_HZ=${UML_HZ:-1000}          # UML hard-codes HZ=100; 1000: busy-poll RTT 20 ms -> 6-7 ms
RXE_TIMEOUT=${RXE_TIMEOUT:-600} # hard wall-clock limit for one guest run, seconds
JOBS=${JOBS:-$(nproc)}

log() { echo "[softroce-vm $(date +%T)] $*" >&2; }
elapsed() { awk "BEGIN{printf \"%.2f\", $2-$1}"; }

# --------------------------------------------------------------------------
cmd_setup() {
    mkdir -p "$W"
    local need=() p
    # build deps for the UML kernel; busybox+cpio for the initramfs;
    # the RDMA user space the guest uses (seen through hostfs).
    for p in gcc make flex bison bc libc6-dev busybox-static cpio xz-utils \
             iproute2 rdma-core ibverbs-providers ibverbs-utils libibverbs-dev \
             rdmacm-utils librdmacm-dev perftest; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
    if ((${#need[@]})); then
        log "apt-get install ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
    fi
    if [[ ! -d $SRC ]]; then
        # kernel source as a Debian package, unpacked under $W (not installed)
        (cd "$W" && apt-get download linux-source-6.1)
        mkdir -p "$W/lsrc" && dpkg -x "$W"/linux-source-6.1_*_all.deb "$W/lsrc"
        tar -C "$W" -xJf "$W"/lsrc/usr/src/linux-source-6.1.tar.xz
    fi
    # UML's Kconfig pins HZ=100 (no choice menu).  Busy-polling user code on a
    # single non-preemptible UML CPU waits a tick for softirqs -> 2 ticks/RTT.
    if [[ $UML_HZ != 100 ]]; then
        sed -i "/^config HZ\$/,/default / s/default [0-9]*/default $UML_HZ/" "$SRC/arch/um/Kconfig"
    fi
    mkdir -p "$BUILD"
    if [[ ! -f $BUILD/.config ]]; then
        make -C "$SRC" ARCH=um O="$BUILD" defconfig >/dev/null
        local S=$SRC/scripts/config
        # PCI (via UML_PCI_OVER_VIRTIO) is what gives UML HAS_IOMEM/HAS_DMA/PCI,
        # which INFINIBAND and RDMA_RXE depend on.  The device id just has to be
        # != -1 (otherwise a harmless WARN at boot); no such device is attached.
        "$S" --file "$BUILD/.config" \
            -e VIRTIO_UML -e UML_PCI_OVER_VIRTIO --set-val UML_PCI_OVER_VIRTIO_DEVICE_ID 1234 \
            -e INET -e IPV6 -e INFINIBAND -e INFINIBAND_USER_ACCESS -e INFINIBAND_USER_MAD \
            -e INFINIBAND_ADDR_TRANS -e RDMA_RXE -e RDMA_SIW \
            -e HOSTFS -e OVERLAY_FS -e TMPFS -e DEVTMPFS -e DEVTMPFS_MOUNT -e BLK_DEV_INITRD \
            -e VETH -e DUMMY -e MAGIC_SYSRQ -e CONFIGFS_FS -e UNIX98_PTYS -e DEVPTS_FS \
            -e SYSVIPC -e POSIX_MQUEUE -e FUTEX -e EPOLL -e EVENTFD -e SIGNALFD -e TIMERFD \
            -e INOTIFY_USER -e FHANDLE -e BINFMT_ELF -e BINFMT_SCRIPT -d MODULES
        # Not used by the guest (initramfs, hostfs and tmpfs; no block devices, no UML network
        # transports, no HID devices): left out of the build (10% of its objects).
        "$S" --file "$BUILD/.config" \
            -d EXT4_FS -d REISERFS_FS -d ISO9660_FS -d AUTOFS_FS -d QUOTA -d BLK_DEV_UBD \
            -d BLK_DEV_LOOP -d BINFMT_MISC -d UML_NET -d TUN -d HID
    fi
    make -C "$SRC" ARCH=um O="$BUILD" olddefconfig >/dev/null
    grep -q '^CONFIG_RDMA_RXE=y' "$BUILD/.config" || { log "RDMA_RXE did not survive olddefconfig"; exit 1; }
    local t0=$(date +%s.%N)
    log "building UML kernel (make -j$JOBS linux) ..."
    make -C "$SRC" ARCH=um O="$BUILD" -j"$JOBS" linux > "$BUILD/build.log" 2>&1 \
        || { tail -30 "$BUILD/build.log"; exit 1; }
    log "UML kernel $UML built in $(elapsed "$t0" "$(date +%s.%N)")s ($(grep '^CONFIG_HZ=' "$BUILD/.config"))"
    cmd_initramfs
}

# --------------------------------------------------------------------------
cmd_initramfs() {
    local t0=$(date +%s.%N)
    rm -rf "$IRD"; mkdir -p "$IRD"/{bin,dev,proc,sys,host,rw,newroot}
    cp /bin/busybox "$IRD/bin/busybox"          # busybox-static: no libs needed
    cat > "$IRD/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
say() { echo "[uml-init $(cut -d' ' -f1 /proc/uptime)s] $*"; }
bye() { sync; echo o > /proc/sysrq-trigger; poweroff -f; }
die() { say "FATAL: $*"; bye; }
say "kernel up"
# host /, read-only, + tmpfs overlay => guest can write anywhere, nothing reaches the host
mount -t hostfs -o ro,/ none /host || die "hostfs /"
mount -t tmpfs -o mode=755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot || die "overlay"
N=/newroot
mount -t proc proc $N/proc
mount -t sysfs sysfs $N/sys
mount -t devtmpfs devtmpfs $N/dev
mkdir -p $N/dev/pts $N/dev/shm
mount -t devpts devpts $N/dev/pts
mount -t tmpfs tmpfs $N/dev/shm
mount -t tmpfs tmpfs $N/run
# results directory: the same host path, read-write
mount -t hostfs -o "$RXE_OUT" none $N$RXE_OUT || die "hostfs $RXE_OUT"
# perftest needs "cpu MHz" (UML has none); UML user code reads the host TSC directly
if [ -n "$RXE_CPU_MHZ" ]; then
    { cat /proc/cpuinfo; echo "cpu MHz		: $RXE_CPU_MHZ"; echo; } > /rw/cpuinfo
    mount --bind /rw/cpuinfo $N/proc/cpuinfo
fi
# network internal to the guest: a veth pair; rxe0 on veth0
ip link set lo up
chroot $N /usr/sbin/ip link add veth0 type veth peer name veth1 || die "veth"
ip addr add 198.18.0.1/15 dev veth0
ip link set veth1 up
ip link set veth0 up
chroot $N /usr/bin/rdma link add rxe0 type rxe netdev veth0 || die "rdma link add"
say "rxe0 up on veth0 (198.18.0.1); running $RXE_OUT/cmd.sh"
chroot $N /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb RXE_OUT="$RXE_OUT" RXE_IP=198.18.0.1 RXE_DEV=rxe0 \
    /bin/sh "$RXE_OUT/cmd.sh" < /dev/null
rc=$?
say "command exited rc=$rc; powering off"
echo $rc > $N$RXE_OUT/rc
bye
EOF
    chmod +x "$IRD/init"
    (cd "$IRD" && find . -print0 | cpio --null -o -H newc --quiet > "$IMG")
    log "initramfs $IMG ($(du -h "$IMG" | cut -f1)) built in $(elapsed "$t0" "$(date +%s.%N)")s"
}

# --------------------------------------------------------------------------
cmd_run() {
    (($#)) || { echo "usage: $0 run CMD [ARGS...]" >&2; exit 2; }
    [[ -x $UML ]] || { log "no UML kernel at $UML; run: $0 setup"; exit 1; }
    [[ -f $IMG ]] || cmd_initramfs
    mkdir -p "$OUT"; rm -f "$OUT/rc"
    # the command, quoted for sh, run in the caller's cwd (same path in the guest)
    { printf 'cd %q || exit 126\nexec' "$PWD"; printf ' %q' "$@"; echo; } > "$OUT/cmd.sh"
    local mhz; mhz=$(awk -F': *' '/^cpu MHz/{print $2; exit}' /proc/cpuinfo)
    mkdir -p "$W/uml-dir"
    local t0=$(date +%s.%N) rc=0
    # no --foreground: timeout signals the whole process group (UML's helper processes too)
    timeout -k 5 "$RXE_TIMEOUT" "$UML" \
        mem="$UML_MEM" initrd="$IMG" rdinit=/init uml_dir="$W/uml-dir" \
        con=null ssl=null con0=null,fd:1 \
        RXE_OUT="$OUT" RXE_CPU_MHZ="${mhz:-}" </dev/null || rc=$?
    log "guest finished after $(elapsed "$t0" "$(date +%s.%N)")s wall (uml exit $rc)"
    ((rc == 124 || rc == 137)) && { log "HARD TIMEOUT (${RXE_TIMEOUT}s)"; return 124; }
    [[ -f $OUT/rc ]] || { log "guest reported no status"; return 125; }
    return "$(cat "$OUT/rc")"
}

# --------------------------------------------------------------------------
# The original plan (qemu + KVM + Debian's own kernel with rdma_rxe.ko) kept as
# a probe: on this host it never gets to userspace, see ../SOFTROCE.md.
cmd_kvm_probe() {
    local secs=${1:-120} kp=$W/kpkg real
    command -v qemu-system-x86_64 >/dev/null || \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86
    if [[ ! -d $kp/boot ]]; then
        real=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
        (cd "$W" && apt-get download "$real") && mkdir -p "$kp" && dpkg -x "$W/${real}"_*.deb "$kp"
    fi
    local vmlinuz; vmlinuz=$(ls "$kp"/boot/vmlinuz-* | head -1)
    # Uncompressed vmlinux => qemu boots it through its PVH entry point, skipping
    # real mode and the (very slow when emulated) xz decompressor.
    [[ -f $W/vmlinux ]] || python3 -c '
import lzma,sys
d=open(sys.argv[1],"rb").read(); i=d.find(b"\xfd7zXZ\x00")
open(sys.argv[2],"wb").write(lzma.LZMADecompressor().decompress(d[i:]))' "$vmlinuz" "$W/vmlinux"
    # -arch-capabilities: plain "-cpu host" aborts at once (KVM refuses MSR 0x10a);
    # -cx16: the emulator cannot do "lock cmpxchg16b" (KVM internal error, suberror 1).
    log "booting $W/vmlinux under qemu/KVM for ${secs}s; /dev/kvm backend: $(ls -d /sys/module/kvm_* 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"
    timeout -k 5 "$secs" qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities,-cx16 -smp 1 -m 1G \
        -nodefaults -no-user-config -display none -serial stdio -no-reboot \
        -kernel "$W/vmlinux" -append "console=ttyS0 earlyprintk=serial,ttyS0,115200 ignore_loglevel panic=-1" \
        </dev/null || true
}

case ${1:-} in
    setup) cmd_setup ;;
    ensure) if [[ -x $UML ]]; then [[ -f $IMG ]] || cmd_initramfs; else cmd_setup; fi ;;
    initramfs) cmd_initramfs ;;
    run) shift; mkdir -p "$W"; exec 9>"$W/run.lock"; flock 9; cmd_run "$@" ;;
    kvm-probe) shift; cmd_kvm_probe "$@" ;;
    *) sed -n '2,29p' "$0"; exit 2 ;;
esac

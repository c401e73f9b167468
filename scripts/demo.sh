#!/usr/bin/env bash
# pollfab's main job, end to end on a fresh Debian 12 machine (run as root): install what is
# missing, set up hugepages, build, bring up the NIC-less testbed (hosts a and b in network
# namespaces), and run Debian's unmodified fi_pingpong -e rdm for 8 B .. 1 MiB
#   - over pollfab's dpdk provider between the two hosts: kernel bypass over net_memif (shared
#     memory between the two DPDK processes; the default), or over net_tap (--link tap: TAP
#     devices on a kernel bridge, the kernel path), and
#   - over the reference libfabric's tcp;ofi_rxm provider on loopback inside host a's
#     namespace (the kernel TCP stack: the contrast),
# then print both side by side with ratios and a one-line reading, and tear everything down
# (also on failure). Options: --link memif|tap (default memif), --quick (fewer iterations).
set -euo pipefail
cd "$(dirname "$0")/.."
link=memif
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --link) link=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--link memif|tap] [--quick]" >&2; exit 2 ;;
  esac
done
case "$link" in memif|tap) ;; *) echo "demo: --link memif or tap" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (namespaces, DPDK vdevs, hugepages)" >&2; exit 1; }

scripts/install-deps.sh
scripts/setup-hugepages.sh || true
scripts/build.sh > /tmp/pollfab-demo-build.log 2>&1 || { cat /tmp/pollfab-demo-build.log; exit 1; }
P=$PWD/build/apps/pollfab
out=$(mktemp -d)
bg=""
cleanup() {
  [ -n "$bg" ] && kill "$bg" 2>/dev/null || true
  wait 2>/dev/null || true
  "$P" testbed down >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link" >/dev/null
A=$("$P" testbed addr a)

sizes=(8 64 512 4096 32768 262144 1048576)
iters_for() {  # enough for a steady figure, bounded in time
  local s=$1
  if [ "$quick" = 1 ]; then echo 200; return; fi
  if [ "$s" -le 4096 ]; then echo 5000; elif [ "$s" -le 65536 ]; then echo 1000; else echo 200; fi
}
. scripts/lib/pingpong_pair.sh  # pp (one fi_pingpong pair), val (its result columns)

echo "pollfab demo: $(date -u +%FT%TZ), $(nproc) cores; Debian's fi_pingpong -e rdm, unmodified"
echo "running ${#sizes[@]} sizes, 8 B .. 1 MiB, on both ..."
for s in "${sizes[@]}"; do
  it=$(iters_for "$s")
  pp pollfab "$s" "$it" dpdk "$P testbed exec a --" "$P testbed exec b --" "$A"
  pp ref "$s" "$it" "tcp;ofi_rxm" "ip netns exec pollfab-a" "ip netns exec pollfab-a" 127.0.0.1
done
xcore=$(build/apps/pollfab-bench-xcore --cpus 0,1 --ms 100 2>/dev/null | sed -n 's/^xcore_rtt_ns=//p' || true)

if [ "$link" = memif ]; then what="pollfab dpdk, net_memif (kernel bypass)"; else what="pollfab dpdk, net_tap (kernel bridge)"; fi
echo
echo "== $what  vs  reference libfabric tcp;ofi_rxm, kernel loopback =="
printf "%-9s | %12s %14s %8s | %12s %14s %8s\n" "bytes" "pollfab usec" "tcp;rxm usec" "speedup" "pollfab MB/s" "tcp;rxm MB/s" "ratio"
python3 - "$out" "${sizes[@]}" <<'EOF'
import re, sys
out, sizes = sys.argv[1], sys.argv[2:]
def val(name, col):
    try:
        v = None
        for line in open(f"{out}/{name}"):
            if re.match(r"^[0-9]+[kmg]? ", line):
                v = line.split()[col - 1]
        return float(v) if v is not None else None
    except (OSError, ValueError, IndexError):
        return None
lat, bw = [], []
for s in sizes:
    pu, ru = val(f"pollfab.{s}", 7), val(f"ref.{s}", 7)
    pb, rb = val(f"pollfab.{s}", 6), val(f"ref.{s}", 6)
    f = lambda x: "n/a" if x is None else f"{x:.2f}"
    lr = ru / pu if pu and ru else None
    br = pb / rb if pb and rb else None
    if lr: lat.append((lr, int(s)))
    if br: bw.append((br, int(s)))
    print(f"{s:<9} | {f(pu):>12} {f(ru):>14} {('%.1fx' % lr) if lr else 'n/a':>8} | "
          f"{f(pb):>12} {f(rb):>14} {('%.2f' % br) if br else 'n/a':>8}")
def size(b):
    return f"{b // 1048576} MiB" if b >= 1048576 else f"{b // 1024} KiB" if b >= 1024 else f"{b} B"
print()
if lat:
    lo, hi = min(lat), max(lat)
    word = "shorter" if lo[0] >= 1 else "longer at some sizes than"
    verdict = (f"Reading: pollfab's half round trip is {lo[0]:.1f}x ({size(lo[1])}) to {hi[0]:.1f}x "
               f"({size(hi[1])}) shorter than the reference's kernel TCP path")
    if lo[0] < 1:
        slower = [size(b) for r, b in sorted(lat, key=lambda x: x[1]) if r < 1]
        verdict = (f"Reading: pollfab is slower than the reference's kernel TCP path at {', '.join(slower)} "
                   f"(ratios {lo[0]:.2f}x to {hi[0]:.1f}x)")
    big = [r for r, b in bw if b == max(b for _, b in bw)] if bw else []
    if big:
        verdict += f"; at {size(max(b for _, b in bw))} it moves {big[0]:.2f}x the reference's MB/s"
    print(verdict + ".")
else:
    print("Reading: no result (see the errors above).")
EOF
echo
echo "usec = fi_pingpong's usec/xfer (half a round trip); MB/s = its ping-pong throughput. speedup = reference usec / pollfab usec and ratio = pollfab MB/s / reference MB/s (above 1: pollfab is ahead)."
if [ "$link" = tap ]; then
  echo "net_tap goes through TAP devices and a kernel bridge, which two busy-polling processes starve on a 2-core machine: this shows the kernel path, not bypass (the default, memif, does)."
fi
if [ "$link" = memif ] && [ -n "$xcore" ] && [ "$xcore" -ge 150 ] 2>/dev/null; then
  echo "Note: the host had the two vCPUs far apart during this run (cache-line round trip ${xcore} ns): memif copies every byte between them, so its bandwidth is lower than when they share a core's caches (docs/architecture-notes.md)."
fi

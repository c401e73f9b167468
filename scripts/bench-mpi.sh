#!/usr/bin/env bash
# MPI ping-pong between testbed hosts a and b (a benchmark, not a test): one-way latency (half
# round trip) at 8 B and 4 KiB and bandwidth (bytes per half round trip) at 1 MiB of
# tests/mpi/mpi_pingpong.c under Debian's Open MPI (pml cm + mtl ofi), over
#   pollfab  : pollfab's dpdk provider, memif link (`pollfab testbed mpirun`)
#   reference: the reference libfabric's tcp;ofi_rxm over the hosts' kernel veth
#              (`pollfab testbed mpirun --reference "tcp;ofi_rxm"`)
# in the same run, interleaved, median of N runs each, printed side by side with the ratios
# (latency: reference / pollfab, bandwidth: pollfab / reference; above 1 = pollfab better).
# Both with mpi_yield_when_idle 0 (two ranks, one per core). Needs root; about a minute.
# Usage: scripts/bench-mpi.sh [--runs N] [--iters N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5; iters=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--iters N]"; exit 2 ;;
  esac
done
. scripts/lib/bench_build.sh  # bench_build
bench_build --no-deps
P=build/apps/pollfab
PP=build/tests/mpi_pingpong
[ -x "$PP" ] || { echo "bench-mpi: $PP missing (is mpicc installed? scripts/install-deps.sh)"; exit 1; }
out=$(mktemp -d)
cleanup() { "$P" testbed down >/dev/null 2>&1 || true; rm -rf "$out"; }
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null

one() {  # one() NAME [mpirun options...]: appends "size lat bw" lines to $out/NAME
  local name=$1; shift
  timeout 300 "$P" testbed mpirun -np 2 --mca mpi_yield_when_idle 0 "$@" -- \
    "$PP" -i "$iters" 8 4096 1048576 2>/dev/null \
    | sed -n 's/^size=\([0-9]*\) iters=[0-9]* lat_us=\([0-9.]*\) bw_MBps=\([0-9.]*\)$/\1 \2 \3/p' \
    >> "$out/$name"
}
for r in $(seq "$runs"); do
  one pollfab
  one reference --reference "tcp;ofi_rxm"
done
median() {  # median NAME SIZE COLUMN(2 lat, 3 bw)
  awk -v s="$2" -v c="$3" '$1 == s {print $c}' "$out/$1" | sort -g \
    | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
printf "%-22s %18s %22s %8s\n" "metric ($runs runs, median)" "pollfab dpdk/memif" "reference tcp;ofi_rxm" "ratio"
row() {  # row LABEL SIZE COLUMN better(lower|higher)
  local p r ratio
  p=$(median pollfab "$2" "$3"); r=$(median reference "$2" "$3")
  if [ "$4" = lower ]; then ratio=$(awk -v p="$p" -v r="$r" 'BEGIN {printf "%.2f", (p > 0) ? r / p : 0}')
  else ratio=$(awk -v p="$p" -v r="$r" 'BEGIN {printf "%.2f", (r > 0) ? p / r : 0}'); fi
  printf "%-22s %18s %22s %8s\n" "$1" "$p" "$r" "$ratio"
}
row "latency 8 B (us)" 8 2 lower
row "latency 4 KiB (us)" 4096 2 lower
row "bandwidth 1 MiB (MB/s)" 1048576 3 higher
echo "ratio: latency reference/pollfab, bandwidth pollfab/reference (above 1: pollfab better)"
# memif speed follows where the host put the two vCPUs (docs/architecture-notes.md): compare
# pollfab's figures only between runs with the same placement.
xc=$(build/apps/pollfab-bench-xcore --cpus 0,1 --ms 100 2>/dev/null | sed -n 's/^xcore_rtt_ns=//p' || true)
echo "vCPU placement, cache-line round trip CPU0<->CPU1: ${xc:-?} ns (near < 150 ns)"

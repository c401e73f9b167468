#!/usr/bin/env bash
# Benchmark (not a test): where each side of the 64-byte message-rate pair spends its time at
# full speed. Both sides of a pollfab-bench-rate pair (FI_EP_RDM over net_memif, the receiver on
# CPU 0 and the sender on CPU 1, as bench-rate.sh's pairs) run under `perf record -e cpu-clock`
# (timer sampling: this VM exposes no hardware counters), and the script prints, per side, the
# share of samples by shared object and the top symbols, with the rate the pair reached and
# the cache-line round trip CPU0<->CPU1 before and after (pollfab-bench-xcore: the placement).
# Why not callgrind alone (bench-instructions.sh): under callgrind the measured side runs ~50x
# slower than its partner, so it meets an idle peer at every round and batches differently
# (the sender flushes a one-message packet per round; at full speed a round's posts share
# packets). Instruction counts say what a step costs; this says where the time goes when both
# sides run at speed (docs/performance.md, item 64).
# Sampling starts a second after each process (perf record -D): the sender's setup and the
# receiver's wait for it stay out; the 20,000-message warm-up round and the teardown stay in
# (a few ms of a ~4 s run at the default -n). perf runs on the CPU of the process it samples.
# Run as root; needs perf (linux-perf, scripts/install-deps.sh). About 30 seconds.
# Options: --mode msg|tagged (msg), -W N (sends in flight, 64), -n N (messages, 100000000),
# --top N (symbols per side, 25), --no-build. KEEP_LOGS=1 keeps the perf data.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=msg; window=64; msgs=100000000; top=25; build=1
while [ $# -gt 0 ]; do
  case $1 in
    --mode) mode=${2:-}; shift ;;
    -W) window=${2:-}; shift ;;
    -n) msgs=${2:-}; shift ;;
    --top) top=${2:-}; shift ;;
    --no-build) build=0 ;;
    *) echo "bench-profile: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ "$mode" =~ ^(msg|tagged)$ ]] || { echo "bench-profile: --mode is msg or tagged" >&2; exit 2; }
for v in "$window" "$msgs" "$top"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench-profile: -W, -n and --top take counts" >&2; exit 2; }
done
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-profile
if [ "$build" = 1 ]; then bench_build; fi  # installs linux-perf too
command -v perf >/dev/null ||
  { echo "bench-profile: perf not found (scripts/install-deps.sh)" >&2; exit 1; }
P=$PWD/build/apps/pollfab
RATE=$PWD/build/apps/pollfab-bench-rate
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap

echo "pollfab bench-profile: $(date -u +%FT%TZ), 64 B $mode, window $window, $msgs messages"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
A=$("$P" testbed addr a)
rec=(perf record -q -e cpu-clock -F 5000)
x0=$(xcore 2>/dev/null || echo n/a)
# The receiver starts a second before the sender: its sampling starts with the sender's.
timeout 120 "$P" testbed exec a -- taskset -c 0 "${rec[@]}" -D 2000 -o "$out/rx.data" \
  "$RATE" -p dpdk -m "$mode" > "$out/rx.out" 2>&1 &
bg=$!
sleep 1
if ! timeout 120 "$P" testbed exec b -- taskset -c 1 "${rec[@]}" -D 1000 -o "$out/tx.data" \
    "$RATE" -p dpdk -m "$mode" -S 64 -W "$window" -n "$msgs" "$A" > "$out/tx.out" 2>&1; then
  echo "bench-profile: the pair failed: $(tail -3 "$out/tx.out" | tr '\n' ' ')" >&2
  exit 1
fi
rx_status=0
wait "$bg" || rx_status=$?
bg=""
for side in tx rx; do
  if [ ! -s "$out/$side.data" ]; then
    why=$(tail -2 "$out/$side.out" | tr '\n' ' ')
    echo "bench-profile: no samples from the $side side: $why" >&2
    exit 1
  fi
done
[ "$rx_status" = 0 ] || echo "bench-profile: the receiver exited with $rx_status" >&2
x1=$(xcore 2>/dev/null || echo n/a)
"$P" testbed down >/dev/null
echo "xcore ns before/after: $x0/$x1 (near < 150)"
grep -E '^(bytes|64 )' "$out/tx.out"
for side in tx rx; do
  echo
  who=$([ $side = tx ] && echo "sender, CPU 1" || echo "receiver, CPU 0")
  echo "== $side ($who): samples by object"
  perf report -i "$out/$side.data" --no-children --sort dso --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | head -6 || true
  echo "-- top $top symbols (unnamed addresses in librte_net_memif: Debian ships the PMD stripped)"
  perf report -i "$out/$side.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | head -"$top" | sed -E 's/ +$//' | cut -c1-150 || true
done

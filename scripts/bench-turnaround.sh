#!/usr/bin/env bash
# Benchmark (not a test): where a ping-pong's half round trip goes over net_memif, on the real
# clock, for pollfab's dpdk provider and the raw DPDK floor side by side. A half round trip is
# one side's turnaround (from the receive burst that brings the request to the return of the
# reply's transmit burst: lib/util/critical_path_marks.hpp, PF_CRITICAL_PATH_MARKS=tsc) plus
# the link (the reply's transmit return to the peer's receive return: memif's copies, the cache
# lines between the two vCPUs and the poll), when the client's turnaround is as long as the
# server's (the clients also read the clock once a round trip for their medians, both tools
# alike). Each repetition runs a pinned `pollfab pingpong --lat` pair and a pinned
# pollfab-rawpp pair back to back at each size, the servers marking the same two points, and
# prints the median half round trip (the client's), the server's median turnaround, and the
# link as their difference, with pollfab / floor ratios. The marks' own cost (two fenced
# counter reads a turnaround, ~15 ns) is in both servers' turnarounds and half round trips.
# The tools' 64-byte warm-up round trips count among the 4 KiB servers' turnarounds (~0.1%).
# The probe before and after (pollfab-bench-xcore, ns) says where the host put the vCPUs
# (docs/performance.md, "The floor, and why it moves"): compare repetitions of the same
# placement only.
# Run as root. Options: --quick (one repetition, fewer round trips), --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3; iters=200000; build=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) reps=1; iters=20000 ;;
    --no-build) build=0 ;;
    *) echo "bench-turnaround: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-turnaround
if [ "$build" = 1 ]; then bench_build; fi
P=$PWD/build/apps/pollfab
RAW=$PWD/build/apps/pollfab-rawpp
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap, xcore

# pair NAME SIZE: a pinned pair with the marks on; $out/NAME.s: the server's output (its
# "critical-path tsc:" line), $out/NAME: the client's result line. NAME raw_* runs the floor.
pair() {
  local name=$1 size=$2
  local -a srv cli
  if [[ $name == raw* ]]; then
    srv=("$RAW" --echo message); cli=("$RAW" -S "$size" -I "$iters" "$A")
  else
    srv=("$P" pingpong -p dpdk -S "$size" -I "$iters")
    cli=("$P" pingpong -p dpdk -S "$size" -I "$iters" --lat "$A")
  fi
  timeout 120 "$P" testbed exec a -- env PF_CRITICAL_PATH_MARKS=tsc taskset -c 0 "${srv[@]}" \
    > "$out/$name.s" 2>&1 &
  bg=$!
  sleep 0.7
  # The client unmarked: the floor's client has no marks, and pollfab's would add its own two
  # fenced counter reads a round trip to pollfab's half round trip alone.
  timeout 120 "$P" testbed exec b -- taskset -c 1 "${cli[@]}" \
    2>/dev/null | tail -1 > "$out/$name" || echo n/a > "$out/$name"
  wait "$bg" 2>/dev/null || true
  bg=""
}
# The server's line with the most turnarounds: its application thread's. Another thread that
# marked (the liveness assist running a round while the application waits elsewhere) prints a
# line of its own, possibly first.
tscline() { awk '/^critical-path tsc:/ { n = $3 + 0; if (n > best) { best = n; l = $0 } } END { print l }' "$out/$1.s" 2>/dev/null || true; }
turn() { tscline "$1" | sed -n 's/.* p50=\([0-9]*\) .*/\1/p'; }
tmean() { tscline "$1" | sed -n 's/.* mean10-90=\([0-9.]*\) .*/\1/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "pollfab bench-turnaround: $(date -u +%FT%TZ), net_memif, $iters round trips a pair"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
A=$("$P" testbed addr a)
printf "%-4s %-6s %-9s | %-23s | %-23s | %-23s | %s\n" rep size xcore "half RTT ns pf/raw (x)" \
  "turnaround ns pf/raw (x)" "link ns pf/raw (x)" "turnaround mean10-90 pf/raw"
for r in $(seq 1 "$reps"); do
  for size in 64 4096; do
    x0=$(xcore || echo n/a)
    pair "pf.$r.$size" "$size"
    pair "raw.$r.$size" "$size"
    x1=$(xcore || echo n/a)
    # pollfab pingpong --lat: p50 (us) in column 9; pollfab-rawpp: p50 (us) in column 6.
    hp=$(awk '{ if ($9 ~ /^[0-9.]+$/) printf "%.0f", $9 * 1000 }' "$out/pf.$r.$size")
    hr=$(awk '{ if ($6 ~ /^[0-9.]+$/) printf "%.0f", $6 * 1000 }' "$out/raw.$r.$size")
    tp=$(turn "pf.$r.$size"); tr=$(turn "raw.$r.$size")
    lp=""; lr=""
    [ -n "$hp" ] && [ -n "$tp" ] && lp=$((hp - tp))
    [ -n "$hr" ] && [ -n "$tr" ] && lr=$((hr - tr))
    printf "%-4s %-6s %-9s | %6s / %-6s (%5s) | %6s / %-6s (%5s) | %6s / %-6s (%5s) | %s / %s\n" \
      "$r" "$size" "$x0/$x1" "${hp:-n/a}" "${hr:-n/a}" "$(ratio "$hp" "$hr")" \
      "${tp:-n/a}" "${tr:-n/a}" "$(ratio "$tp" "$tr")" "${lp:-n/a}" "${lr:-n/a}" "$(ratio "$lp" "$lr")" \
      "$(tmean "pf.$r.$size")" "$(tmean "raw.$r.$size")"
  done
done
"$P" testbed down >/dev/null
echo "half RTT: the client's median (pollfab pingpong --lat, the raw tool's own); turnaround: the"
echo "server's median from its rx burst to its reply's tx burst return (PF_CRITICAL_PATH_MARKS=tsc), and"
echo "the mean of its middle 80% (finer than the median where the counter ticks coarsely);"
echo "link = half RTT - turnaround. xcore: the CPU0<->CPU1 cache-line round trip before/after (ns)."

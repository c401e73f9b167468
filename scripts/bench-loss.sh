#!/usr/bin/env bash
# Benchmark (not a test): goodput of 1 MiB messages under random packet loss.
#   1. the transport alone: two engines over the in-memory link (virtual time, a 25 Gbit/s link
#      model, 2 us one way, a 300 us switch queue; build/apps/pollfab-bench-loss), and
#   2. the dpdk provider end to end: `pollfab pingpong --bw-only -S 1m` (streaming, 64 messages in
#      flight) between testbed hosts a and b over net_memif (or --link tap), with
#      FI_DPDK_FAULT_DROP on both sides (data and ACKs are dropped).
# at 0, 0.1, 1, 5 and 10% drop. Prints absolute goodput (MB/s = 10^6 B/s) and the ratio to the
# lossless run. The dpdk part makes --runs repetitions (default 11: a run is the stream alone,
# about a second, so 11 take the time 7 took with the ping-pong phase) of every drop rate; goodput is
# the median over them; ratios compare runs made under the same host placement of the two vCPUs
# (pollfab-bench-xcore, see below): median at this drop rate / median lossless, per placement.
# ratio(pairs): the median over repetitions of each run / the same repetition's lossless run,
# where both ran under one placement (the runs of a repetition are seconds apart, the 1% run
# right after the lossless one; the host moves the vCPUs between repetitions). The 1% line uses it when at least 3 repetitions pair up, else
# the "near" class ratio when it has 2 or more runs at both rates, else "far", else all runs
# (placement not controlled, said so).
# The last line is
#   loss=1% goodput_ratio=R
# with R for the dpdk provider. Run as root. Options: --link tap|memif, --runs N, --iters N.
set -euo pipefail
cd "$(dirname "$0")/.."
link=memif; runs=11; iters=""
while [ $# -gt 0 ]; do
  case $1 in
    --link) link=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "usage: $0 [--link tap|memif] [--runs N] [--iters N]" >&2; exit 2 ;;
  esac
done
# Messages per run: 2000 x 1 MiB over memif is about half a second at its 4 GB/s, long enough
# for a scheduling blip on the two vCPUs to average out (300, 0.08 s, moved single runs by
# +-10%); tap is a hundred times slower and keeps 300.
[ -n "$iters" ] || { [ "$link" = memif ] && iters=2000 || iters=300; }
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-loss
scripts/install-deps.sh >/dev/null
scripts/setup-hugepages.sh >/dev/null
bench_build --no-deps
P=$PWD/build/apps/pollfab
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap

echo "pollfab bench-loss: $(date -u +%FT%TZ), $(nproc) cores"
echo
echo "== transport over the in-memory link (virtual time) =="
build/apps/pollfab-bench-loss --size 1048576 --msgs 64 --drop 0,0.001,0.01,0.05,0.10

# Host placement of the two vCPUs: cache-line round trip between CPUs 0 and 1 (ns). The testbed
# pair runs pinned one process per CPU, and net_memif moves every payload byte between them, so
# its goodput follows this number (about 3x between ~50 ns and ~330 ns on the CI VM, and the host
# flips it between runs). Each run is probed before and after; ratios compare only runs made
# under the same placement ("near" below $near_ns, "far" above, "mixed" if the two probes
# disagree: excluded).
near_ns=${BENCH_XCORE_NEAR_NS:-150}
placement() {
  awk -v a="$1" -v b="$2" -v t="$near_ns" 'BEGIN {
    if (a == "" || b == "") print "n/a"; else if (a < t && b < t) print "near";
    else if (a >= t && b >= t) print "far"; else print "mixed" }'
}

# One streaming run at drop probability $1; prints stream MB/s or n/a.
dpdk_run() {
  local drop=$1
  export FI_DPDK_FAULT_DROP=$drop FI_DPDK_FAULT_SEED=$RANDOM
  timeout 120 "$P" testbed exec a -- taskset -c 0 "$P" pingpong -p dpdk -S 1m -I "$iters" --bw-only \
    --json --timeout-ms 5000 > "$out/server" 2>&1 &
  bg=$!
  sleep 0.5
  if timeout 120 "$P" testbed exec b -- taskset -c 1 "$P" pingpong -p dpdk -S 1m -I "$iters" \
       --bw-only --json "$("$P" testbed addr a)" > "$out/client" 2>&1; then
    wait "$bg" 2>/dev/null || true
    bg=""
    sed -n 's/.*"stream_mb_per_sec": \([0-9.]*\).*/\1/p' "$out/client" | tail -1
  else
    kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; bg=""
    cat "$out/client" >> "$out/failures"
    echo n/a
  fi
  unset FI_DPDK_FAULT_DROP FI_DPDK_FAULT_SEED
}

drops="0 0.001 0.01 0.05 0.10"  # the table's order
# The order of a repetition's runs: the 1% run right after the lossless one it is paired with
# (ratio(pairs)), a few seconds apart rather than a 0.1% run later: the host moves the vCPUs
# and changes their speed between runs, and the 1% ratio (the issue's figure) is the one whose
# pairs must be closest.
run_order="0 0.01 0.001 0.05 0.10"
echo
echo "== dpdk provider, testbed over net_$link: pollfab pingpong --bw-only -S 1m, $runs repetitions =="
echo "   (processes pinned to CPUs 0 and 1; placement = vCPU cache-line round trip, see above)"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link" >/dev/null
# A repetition runs every drop rate once, back to back ($run_order), so each rate gets runs
# spread over the whole benchmark. Lines in $out/runs: rep drop MB/s placement probe-before probe-after.
for rep in $(seq "$runs"); do
  for d in $run_order; do
    x0=$(xcore)
    v=$(dpdk_run "$d")
    # A failed start (the link never came up) is retried once after a moment.
    if [ "$v" = n/a ]; then sleep 2; x0=$(xcore); v=$(dpdk_run "$d"); fi
    x1=$(xcore)
    echo "$rep $d $v $(placement "$x0" "$x1") $x0 $x1" >> "$out/runs"
    sleep 1
  done
done
printf '%7s %14s %11s %11s %12s   %s\n' "drop%" "goodput MB/s" "ratio(near)" "ratio(far)" "ratio(pairs)" "runs: MB/s(placement)"
r1=n/a; base_med=n/a
for d in $drops; do
  # goodput: median over all runs. ratio(P): median of this drop rate's runs under placement P
  # over the median of the lossless runs under P ("mixed" runs count in no ratio).
  row=$(awk -v d="$d" '
    # The median; of an even count, the mean of the two middle values (the lower one alone
    # counted 4 runs of 4386-5051 MB/s as 4408).
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      if (!n) return "n/a"
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function class_median(dr, c,   r, n, a) {
      n = 0
      for (r = 1; r <= reps; r++)
        if (((r, dr) in v) && v[r, dr] != "n/a" && p[r, dr] == c) a[++n] = v[r, dr]
      return median(a, n)
    }
    function class_count(dr, c,   r, n) {
      n = 0
      for (r = 1; r <= reps; r++)
        if (((r, dr) in v) && v[r, dr] != "n/a" && p[r, dr] == c) n++
      return n
    }
    # At least 2 runs at each rate: one run alone (a hiccup, a placement flip the probes missed)
    # decided a class ratio of 0.843 where the other 1% runs of that benchmark gave 0.92-0.94.
    function ratio(c,   x, b) {
      if (class_count(d, c) < 2 || class_count("0", c) < 2) return "n/a"
      x = class_median(d, c); b = class_median("0", c)
      return (x == "n/a" || b == "n/a" || b == 0) ? "n/a" : sprintf("%.3f", x / b)
    }
    # The median over repetitions of this drop rate run over the same repetition lossless run, a few
    # seconds earlier, where both ran under one placement (near or far): pairs stay comparable
    # when the host moves the vCPUs between repetitions. "n/a" below 3 such pairs.
    function pair_ratio(   r, n, a) {
      n = 0
      for (r = 1; r <= reps; r++)
        if (((r, d) in v) && ((r, "0") in v) && v[r, d] != "n/a" && v[r, "0"] != "n/a" &&
            v[r, "0"] > 0 && p[r, d] == p[r, "0"] && p[r, d] != "mixed" && p[r, d] != "n/a")
          a[++n] = v[r, d] / v[r, "0"]
      return n >= 3 ? sprintf("%.3f", median(a, n)) : "n/a"
    }
    { v[$1, $2] = $3; p[$1, $2] = $4; if ($1 > reps) reps = $1 }
    END {
      n = 0; runs = ""
      for (r = 1; r <= reps; r++) {
        if (!((r, d) in v)) continue
        runs = runs " " v[r, d] "(" p[r, d] ")"
        if (v[r, d] != "n/a") g[++n] = v[r, d]
      }
      printf "%s|%s|%s|%s|%s", median(g, n), ratio("near"), ratio("far"), pair_ratio(), runs
    }' "$out/runs")
  IFS='|' read -r med rnear rfar rpair list <<< "$row"
  if [ "$d" = "0.01" ]; then
    if [ "$rpair" != n/a ]; then r1=$rpair; r1p="same (per-repetition pairs)"
    elif [ "$rnear" != n/a ]; then r1=$rnear; r1p=near
    elif [ "$rfar" != n/a ]; then r1=$rfar; r1p=far
    else  # no placement has runs at both rates: all runs, placement not controlled
      r1=$(awk -v m="$med" -v b="$base_med" 'BEGIN { if (m=="n/a" || b=="n/a" || b==0) print "n/a"; else printf "%.3f", m/b }')
      r1p="uncontrolled (all runs)"
    fi
  fi
  if [ "$d" = "0" ]; then base_med=$med; fi
  printf '%7s %14s %11s %11s %12s  %s\n' "$(awk -v d="$d" 'BEGIN{printf "%.1f", d*100}')" "$med" "$rnear" "$rfar" "$rpair" "$list"
done
if [ -s "$out/failures" ]; then echo; echo "failed runs (client output):"; tail -n 20 "$out/failures"; fi
echo
echo "1% drop ratio from runs under the ${r1p:-n/a} placement"
echo "loss=1% goodput_ratio=$r1"

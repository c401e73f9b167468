#!/usr/bin/env bash
# Benchmark (not a test): goodput of 1 MiB messages under random packet loss.
#   1. the transport alone: two engines over the in-memory link (virtual time, a 25 Gbit/s link
#      model, 2 us one way, a 300 us switch queue; build/apps/pollfab-bench-loss), and
#   2. the dpdk provider end to end: `pollfab pingpong --bw-only -S 1m` (streaming, 64 messages in
#      flight) between testbed hosts a and b over net_memif (or --link tap), with
#      FI_DPDK_FAULT_DROP on both sides (data and ACKs are dropped), two ways:
#      a. in one run (the headline): FI_DPDK_FAULT_PERIOD_MS=250 alternates clean and faulty
#         periods of 250 ms (fault.period_ms), and the client times each window of its stream
#         (`--period-ms 250 --period-guard-ms 30`: a period's windows that start 30 ms or more
#         into it and end inside it). Each faulty period's goodput is compared with the mean of
#         the clean periods beside it, 250 ms earlier and later, in the same processes on the
#         same vCPUs: the host's placement of the two vCPUs (which moves memif's speed 2-3x, and
#         which it changes between runs and within them) is shared by each pair, where separate
#         runs can only be probed before and after. Pairs are classed "fast" or "slow" by
#         their clean periods' speed (above, or at most, half the fastest clean pair); each
#         drop rate's ratio is the median over all pairs of its runs (--period-runs runs at 1%,
#         default 5; 3 at the others), with the fast and the slow pairs' medians beside it. Over
#         net_memif only (a window takes over a second over tap).
#      b. separate runs (context, and the absolute lossless goodput without a fault layer):
#         --runs repetitions (default 5) of every drop rate, each run probed before and after;
#         ratios compare runs under the same placement (below).
# at 0, 0.1, 1, 5 and 10% drop. Prints absolute goodput (MB/s = 10^6 B/s) and the ratio to the
# lossless run. In the separate runs (b) goodput is the median over the runs; ratios compare
# runs made under the same host placement of the two vCPUs (pollfab-bench-xcore, see below):
# median at this drop rate / median lossless, per placement. ratio(pairs): the median over
# repetitions of each run / the same repetition's lossless run, where both ran under one
# placement (the 1% run right after the lossless one).
# The last line is
#   loss=1% goodput_ratio=R
# with R from (a): the lowest of the 1% medians over all pairs, the fast and the slow ones (each
# with 5 pairs or more); over tap, from (b). Run as root. Options: --link tap|memif, --runs N
# (b), --period-runs N (a, at 1%), --iters N (b; a streams 19,200 messages a run).
set -euo pipefail
cd "$(dirname "$0")/.."
link=memif; runs=5; iters=""; period_runs=5
while [ $# -gt 0 ]; do
  case $1 in
    --link) link=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --period-runs) period_runs=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "usage: $0 [--link tap|memif] [--runs N] [--period-runs N] [--iters N]" >&2; exit 2 ;;
  esac
done
for v in "$runs" "$period_runs"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] ||
    { echo "bench-loss: --runs and --period-runs need a count" >&2; exit 2; }
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

# One streaming run at drop probability $1; prints stream MB/s or n/a. With a second argument
# (ms), faults apply only in every other period of that length (part a) and it prints the
# client's JSON line, with the goodput of each period, or n/a.
dpdk_run() {
  local drop=$1 period=${2:-0} n=$iters
  local -a cli=(--bw-only --json)
  export FI_DPDK_FAULT_DROP=$drop FI_DPDK_FAULT_SEED=$RANDOM
  if [ "$period" != 0 ]; then
    export FI_DPDK_FAULT_PERIOD_MS=$period
    n=$period_iters
    cli+=(--period-ms "$period" --period-guard-ms "$guard_ms")
  fi
  timeout 120 "$P" testbed exec a -- taskset -c 0 "$P" pingpong -p dpdk -S 1m -I "$n" --bw-only \
    --json --timeout-ms 5000 > "$out/server" 2>&1 &
  bg=$!
  sleep 0.5
  if timeout 120 "$P" testbed exec b -- taskset -c 1 "$P" pingpong -p dpdk -S 1m -I "$n" \
       "${cli[@]}" "$("$P" testbed addr a)" > "$out/client" 2>&1; then
    wait "$bg" 2>/dev/null || true
    bg=""
    if [ "$period" != 0 ]; then grep '"periods"' "$out/client" | tail -1
    else sed -n 's/.*"stream_mb_per_sec": \([0-9.]*\).*/\1/p' "$out/client" | tail -1; fi
  else
    kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; bg=""
    cat "$out/client" >> "$out/failures"
    echo n/a
  fi
  unset FI_DPDK_FAULT_DROP FI_DPDK_FAULT_SEED FI_DPDK_FAULT_PERIOD_MS
}

"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link" >/dev/null
r1=n/a
# Part (a), memif only: a window of 64 x 1 MiB takes ~13-33 ms over memif, so a 250 ms period
# counts several; over tap one takes over a second.
period_ms=250; guard_ms=30; period_iters=19200  # 300 windows: ~3.7 s near, ~10 s far
if [ "$link" = memif ]; then
  echo
  echo "== dpdk provider over net_memif, in one run: faults in every other ${period_ms} ms period =="
  echo "   (fault.period_ms; each faulty period against the mean of the clean periods beside it,"
  echo "   windows that start ${guard_ms} ms or more into a period; processes pinned to CPUs 0 and 1;"
  echo "   ratio: the median over all pairs; fast, slow: over the pairs whose clean periods moved"
  echo "   above, or at most, half the fastest clean pair's MB/s (pairs in brackets); runs: each"
  echo "   run's median ratio, its pairs, its clean periods' median MB/s, probes before/after)"
  for d in 0.01 0.001 0.05 0.10; do
    n=3; [ "$d" = 0.01 ] && n=$period_runs
    for r in $(seq "$n"); do
      x0=$(xcore)
      v=$(dpdk_run "$d" "$period_ms")
      if [ "$v" = n/a ]; then sleep 2; x0=$(xcore); v=$(dpdk_run "$d" "$period_ms"); fi
      x1=$(xcore)
      echo "$d $x0 $x1 $v" >> "$out/periods"
      sleep 1
    done
  done
  # Lines in $out/periods: drop probe-before probe-after JSON (or n/a).
  python3 - "$out/periods" > "$out/periods.table" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    drop, x0, x1, rest = line.split(' ', 3)
    rows.setdefault(drop, []).append((x0, x1, rest.strip()))
def pairs(periods):
    """(ratio, clean MB/s) of each faulty period: its MB/s over the mean of its clean
    neighbours' (index -1 and +1), and that mean."""
    mbs = {k: (faulty, b / us) for k, faulty, b, us in periods if us > 0}
    out = []
    for k, (faulty, v) in mbs.items():
        nb = [mbs[j][1] for j in (k - 1, k + 1) if j in mbs and not mbs[j][0]]
        if faulty and nb:
            out.append((v / (sum(nb) / len(nb)), sum(nb) / len(nb)))
    return out
parsed = {}
for drop, rs in rows.items():
    for x0, x1, js in rs:
        try:
            parsed.setdefault(drop, []).append((x0, x1, pairs(json.loads(js)['periods'])))
        except (ValueError, KeyError):
            parsed.setdefault(drop, []).append((x0, x1, None))
# Pairs are classed by the speed of their clean periods: "fast" above half the fastest clean
# pair of the whole benchmark, else "slow". The probes before and after a run cannot see the
# host move the vCPUs during it, and the two placements' ratios differ (the receiver binds the
# fast one); the class only sorts pairs, each of which compares like with like.
top = max((c for v in parsed.values() for _, _, p in v if p for _, c in p), default=0)
med = lambda v, p: f"{statistics.median(v):.{p}f}" if v else 'n/a'
r1 = 'n/a'
print(f"{'drop%':>7} {'pairs':>6} {'ratio':>6} {'fast':>11} {'slow':>11}   "
      "runs: ratio (pairs, clean MB/s, probes)")
for drop in ('0.001', '0.01', '0.05', '0.10'):
    allr, fast, slow, runs = [], [], [], []
    for x0, x1, p in parsed.get(drop, []):
        if not p:
            runs.append('n/a'); continue
        allr += [r for r, _ in p]
        fast += [r for r, c in p if c > top / 2]
        slow += [r for r, c in p if c <= top / 2]
        runs.append(f"{statistics.median([r for r, _ in p]):.3f} ({len(p)}, "
                    f"{statistics.median([c for _, c in p]):.0f}, {x0}/{x1})")
    cell = lambda v: f"{med(v, 3)} ({len(v)})"
    print(f"{float(drop) * 100:7.1f} {len(allr):6d} {med(allr, 3):>6} {cell(fast):>11} "
          f"{cell(slow):>11}   {'  '.join(runs)}")
    if drop == '0.01':
        # The headline: the lowest of the medians over all pairs, the fast ones and the slow
        # ones, each counted when it has 5 pairs or more (neither class carries the other).
        cand = [statistics.median(v) for v in (allr, fast, slow) if len(v) >= 5]
        r1 = f"{min(cand):.3f}" if cand else 'n/a'
print(f"clean MB/s: pairs above {top / 2:.0f} (half the fastest, {top:.0f}) are fast")
print(f"R1 {r1}")
PY
  grep -v '^R1 ' "$out/periods.table"
  r1=$(sed -n 's/^R1 //p' "$out/periods.table")
fi

drops="0 0.001 0.01 0.05 0.10"  # the table's order
# The order of a repetition's runs: the 1% run right after the lossless one it is paired with
# (ratio(pairs)), a few seconds apart rather than a 0.1% run later: the host moves the vCPUs
# and changes their speed between runs, and the 1% ratio (the issue's figure) is the one whose
# pairs must be closest.
run_order="0 0.01 0.001 0.05 0.10"
echo
echo "== dpdk provider over net_$link, separate runs: pollfab pingpong --bw-only -S 1m, $runs repetitions =="
echo "   (processes pinned to CPUs 0 and 1; placement = vCPU cache-line round trip, see above)"
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
r1b=n/a; base_med=n/a
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
    if [ "$rpair" != n/a ]; then
      r1b=$rpair; r1p="separate runs under the same placement (per-repetition pairs)"
    elif [ "$rnear" != n/a ]; then r1b=$rnear; r1p="separate runs under the near placement"
    elif [ "$rfar" != n/a ]; then r1b=$rfar; r1p="separate runs under the far placement"
    else  # no placement has runs at both rates: all runs, placement not controlled
      r1b=$(awk -v m="$med" -v b="$base_med" 'BEGIN { if (m=="n/a" || b=="n/a" || b==0) print "n/a"; else printf "%.3f", m/b }')
      r1p="separate runs, placement uncontrolled (all runs)"
    fi
  fi
  if [ "$d" = "0" ]; then base_med=$med; fi
  printf '%7s %14s %11s %11s %12s  %s\n' "$(awk -v d="$d" 'BEGIN{printf "%.1f", d*100}')" "$med" "$rnear" "$rfar" "$rpair" "$list"
done
if [ -s "$out/failures" ]; then echo; echo "failed runs (client output):"; tail -n 20 "$out/failures"; fi
echo
if [ "$r1" != n/a ]; then
  echo "1% drop ratio from the in-run periods: each faulty period against the clean ones beside it"
  echo "(the lowest of the medians over all pairs, the fast and the slow ones, of those with 5 or more)"
  echo "(separate runs: ${r1b} from ${r1p:-n/a})"
else
  r1=$r1b
  echo "1% drop ratio from ${r1p:-n/a}"
fi
echo "loss=1% goodput_ratio=$r1"

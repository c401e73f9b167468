#!/usr/bin/env bash
# Benchmark (not a test): the message rate of two builds of pollfab, interleaved in one run and
# compared by the vCPUs' placement. For a change to the data path whose effect (a few percent)
# is smaller than this host's spread between runs: the 64-byte rate pair of one build reads
# 5.5-10 M msg/s from run to run as the host places the two vCPUs (docs/performance.md item 79),
# so two bench-compare runs, one a build, cannot show it.
#   - before: git revision REV (--before, default HEAD~1), exported (git archive) into
#     build-ab/<commit>/ and built there (the drop-in library and the rate tool only; kept for
#     the next run)
#   - after: this checkout, built by scripts/build.sh (its uncommitted changes included)
# Each of --rounds rounds (default 16, about a minute) runs both builds' rate pair back to back
# (pollfab-bench-rate over net_memif, as bench-rate.sh runs it: the receiver on CPU 0, the sender
# on CPU 1), the order alternating (ABBA), each run between two placement probes (xcore). Each
# run is classed near or far by its probes (placement_class, scripts/lib/bench_env.sh); per class
# the medians of both builds and their ratio (after / before: above 1 = the change is faster),
# and the median of the rounds' own ratios where both runs of a round are of one class. One
# build against itself read 0.966 in 4 rounds (its near runs span 6.2-9.1 M msg/s): a change of a
# few percent needs 16-32 rounds.
# Each side loads its own build's libfabric.so.1: `pollfab testbed exec` puts this checkout's
# build first in LD_LIBRARY_PATH, ahead of a program's RUNPATH, so the runs set it again.
# Run as root. Options: --before REV, --rounds N, --mode msg|tagged (default msg), --sizes LIST
# (default 64), --messages N (default 2000000), --window W (default 64), --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."
before=HEAD~1; rounds=16; mode=msg; sizes=64; msgs=2000000; window=64; build=1
need_arg() { [ -n "${2:-}" ] || { echo "bench-ab: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case $1 in
    --before) need_arg "$1" "${2:-}"; before=$2; shift ;;
    --rounds) need_arg "$1" "${2:-}"; rounds=$2; shift
              [[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ab: --rounds needs a count" >&2; exit 2; } ;;
    --mode) need_arg "$1" "${2:-}"; mode=$2; shift
            [[ "$mode" = msg || "$mode" = tagged ]] || { echo "bench-ab: --mode is msg or tagged" >&2; exit 2; } ;;
    --sizes) need_arg "$1" "${2:-}"; sizes=$2; shift ;;
    --messages) need_arg "$1" "${2:-}"; msgs=$2; shift
                [[ "$msgs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ab: --messages needs a count" >&2; exit 2; } ;;
    --window) need_arg "$1" "${2:-}"; window=$2; shift
              [[ "$window" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ab: --window needs a count" >&2; exit 2; } ;;
    --no-build) build=0 ;;
    *) echo "bench-ab: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-ab
rev=$(git rev-parse --verify --quiet "$before^{commit}") ||
  { echo "bench-ab: $before is not a commit of this repository" >&2; exit 2; }
if [ "$build" = 1 ]; then bench_build; fi
# The before build: the revision's tree, built once (the library and the rate tool).
bdir=$PWD/build-ab/$rev
if [ ! -x "$bdir/build/apps/pollfab-bench-rate" ] || [ ! -e "$bdir/build/abi/libfabric.so.1" ]; then
  rm -rf "$bdir"
  mkdir -p "$bdir"
  git archive "$rev" | tar -x -C "$bdir"
  log=/tmp/pollfab-bench-ab-build.log
  { meson setup "$bdir/build" "$bdir" --buildtype=debugoptimized &&
    meson compile -C "$bdir/build" fabric pollfab-bench-rate; } >"$log" 2>&1 ||
    { cat "$log"; echo "bench-ab: building $before ($rev) failed" >&2; exit 1; }
fi
P=$PWD/build/apps/pollfab
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap, probe, placement_class, pair
declare -A lib=([before]="$bdir/build" [after]="$PWD/build")

echo "pollfab bench-ab: $(date -u +%FT%TZ), $(nproc) cores; before $before ($(git log -1 --format='%h %s' "$rev" | cut -c1-60)); after this checkout ($(git log -1 --format=%h HEAD)$(git diff --quiet HEAD && echo '' || echo ', with uncommitted changes')); $mode, sizes $sizes, window $window, $msgs messages"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
A=$("$P" testbed addr a)
run() {  # run SIDE ROUND: one pinned, probed rate pair of SIDE's build (pair, bench_env.sh)
  local side=$1 r=$2 x0 x1 b=${lib[$1]}
  local -a env=(env "LD_LIBRARY_PATH=$b/abi")
  x0=$(probe)
  pair "$side.$r" "$P" testbed exec a -- taskset -c 0 "${env[@]}" "$b/apps/pollfab-bench-rate" \
    -p dpdk -m "$mode" :: "$P" testbed exec b -- taskset -c 1 "${env[@]}" \
    "$b/apps/pollfab-bench-rate" -p dpdk -m "$mode" -S "$sizes" -n "$msgs" -W "$window" "$A"
  x1=$(probe)
  echo "$x0 $x1 $(placement_class "$x0" "$x1")" > "$out/$side.$r.x"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run before "$r"; run after "$r"; else run after "$r"; run before "$r"; fi
done
"$P" testbed down >/dev/null

python3 - "$out" "$rounds" <<'EOF'
import os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def result(side, r):
    """({bytes: M msg/s}, probes, class) of one run."""
    rates = {}
    try:
        for l in open(os.path.join(out, f'{side}.{r}')):
            f = l.split()
            if f and f[0].isdigit() and len(f) > 3:
                rates[int(f[0])] = float(f[3])
    except OSError:
        pass
    try:
        x0, x1, cls = open(os.path.join(out, f'{side}.{r}.x')).read().split()
    except (OSError, ValueError):
        x0 = x1 = 'n/a'; cls = 'mixed'
    return rates, f'{x0}/{x1}', cls

runs = {(s, r): result(s, r) for s in ('before', 'after') for r in range(1, rounds + 1)}
sizes = sorted({b for v in runs.values() for b in v[0]})
if not sizes:
    sys.exit('bench-ab: no run produced a rate')
print(f"\n{'round':6} {'order':7} " + ' '.join(f"{'before ' + str(b) + 'B':>12} {'xcore':>9} {'after ' + str(b) + 'B':>12} {'xcore':>9}" for b in sizes))
for r in range(1, rounds + 1):
    order = 'B A' if r % 2 else 'A B'
    cells = []
    for b in sizes:
        for s in ('before', 'after'):
            rates, x, cls = runs[(s, r)]
            v = rates.get(b)
            cells.append(f"{'n/a' if v is None else f'{v:.3f}':>12} {x:>9}")
    print(f'{r:<6} {order:7} ' + ' '.join(cells))
f = lambda v: 'n/a' if v is None else f'{v:.3f}'
print('\nM msg/s, medians by placement class (each run classed by the probes before and after it):')
for b in sizes:
    for cls in ('near', 'far'):
        v = {s: [runs[(s, r)][0][b] for r in range(1, rounds + 1)
                 if runs[(s, r)][2] == cls and b in runs[(s, r)][0]] for s in ('before', 'after')}
        mb = statistics.median(v['before']) if v['before'] else None
        ma = statistics.median(v['after']) if v['after'] else None
        ratio = f'{ma / mb:.3f}' if ma and mb else 'n/a'
        # A round's own ratio: its two runs back to back, both of this class.
        own = [runs[('after', r)][0][b] / runs[('before', r)][0][b] for r in range(1, rounds + 1)
               if runs[('after', r)][2] == cls == runs[('before', r)][2]
               and b in runs[('after', r)][0] and runs[('before', r)][0].get(b)]
        own_s = f'{statistics.median(own):.3f} ({len(own)} rounds)' if own else 'n/a'
        print(f'  {b:>5} B {cls:4}: before {f(mb)} ({len(v["before"])} runs), after {f(ma)} '
              f'({len(v["after"])} runs), after/before {ratio}; rounds\' own ratios: median {own_s}')
print('runs whose probes disagree (mixed) are listed above and left out of the medians.')
EOF

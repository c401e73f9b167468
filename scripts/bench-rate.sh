#!/usr/bin/env bash
# Benchmark (not a test): message rate, side by side in one run, with ratios to the raw floor.
#   - the raw DPDK packet rate on net_memif (build/apps/pollfab-rawpp --rate: a tx-only ->
#     rx-only pair, bursts of 32, no protocol; at 4 KiB a message is 3 frames of the MTU)
#   - pollfab dpdk over net_memif, FI_EP_RDM, fi_send and fi_tsend (build/apps/pollfab-bench-rate:
#     64 sends in flight, each with a completion; the receiver re-posts as receives complete)
#   - pollfab udp and the reference libfabric's tcp;ofi_rxm on loopback inside a testbed
#     namespace (the same tool with LD_LIBRARY_PATH on Debian's libfabric.so.1)
# Columns: millions of messages per second at 64 B and 4 KiB (messages / (the receiver's last
# completion - the sender's first post)), the CPU each side used per 64-byte message (all
# threads; a busy poller uses its whole core, so this is 1 / rate unless a side idles), and the
# ratio to the raw floor's message rate at the same size. Medians of --reps repetitions (5;
# the floor alone moved 15.7-20.5 M packets/s between the 3 repetitions of one run),
# raw and pollfab interleaved. On a VM memif speed follows the vCPUs' placement: the cache-line
# round trip CPU0<->CPU1 (pollfab-bench-xcore) is probed before each repetition, after its
# msg pair and after its tagged pair, and the per-repetition ratios are also summarised by
# placement class (near: every probe of the ratio's runs under 150 ns; far: every one 150 or
# more).
# Run as root. Options: --quick (fewer messages, 1 repetition), --no-build (bench-compare.sh
# has built), --reps N.
set -euo pipefail
cd "$(dirname "$0")/.."
n_raw=5000000; n_pf=2000000; n_slow=200000; reps=5; build=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) n_raw=1000000; n_pf=400000; n_slow=50000; reps=1 ;;
    --no-build) build=0 ;;
    --reps) reps=${2:-}; shift
            [[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "bench-rate: --reps needs a count" >&2; exit 2; } ;;
    *) echo "bench-rate: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-rate
if [ "$build" = 1 ]; then bench_build; fi
P=$PWD/build/apps/pollfab
RAW=$PWD/build/apps/pollfab-rawpp
RATE=$PWD/build/apps/pollfab-bench-rate
REF_LIB=/usr/lib/x86_64-linux-gnu  # Debian's libfabric.so.1 (the reference)
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap, pair

echo "pollfab bench-rate: $(date -u +%FT%TZ), $(nproc) cores, FI_EP_RDM, window 64"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
A=$("$P" testbed addr a)
# The memif pairs (the raw floor's and pollfab's alike) run one process per CPU, the receiver on
# CPU 0 and the sender on CPU 1, as bench-compare.sh's memif pairs and a DPDK application's
# lcores: unpinned, the two busy pollers can share a vCPU until the kernel's balancer parts
# them, or trade CPUs mid-run.
EA=("$P" testbed exec a -- taskset -c 0)
EB=("$P" testbed exec b -- taskset -c 1)
for r in $(seq 1 "$reps"); do
  x0=$(probe)
  pair "raw.$r" "${EA[@]}" "$RAW" --rate :: "${EB[@]}" "$RAW" --rate -S 64,4k -I "$n_raw" "$A"
  pair "dpdk_msg.$r" "${EA[@]}" "$RATE" -p dpdk :: "${EB[@]}" "$RATE" -p dpdk -S 64,4k -n "$n_pf" "$A"
  x1=$(probe)
  pair "dpdk_tagged.$r" "${EA[@]}" "$RATE" -p dpdk -m tagged :: \
    "${EB[@]}" "$RATE" -p dpdk -m tagged -S 64,4k -n "$n_pf" "$A"
  x2=$(probe)
  echo "$x0 $x1 $x2" > "$out/xcore.$r"
  # The msg ratios are classed by the probes beside the floor's and the msg pair, the tagged
  # one by all three (placement_class, bench_env.sh).
  echo "$(placement_class "$x0" "$x1") $(placement_class "$x0" "$x1" "$x2")" > "$out/class.$r"
done
NS=(ip netns exec pollfab-a)
pair udp "${NS[@]}" "$RATE" -p udp :: "${NS[@]}" "$RATE" -p udp -S 64,4k -n "$n_slow" 127.0.0.1
pair rxm "${NS[@]}" env LD_LIBRARY_PATH="$REF_LIB" "$RATE" -p "tcp;ofi_rxm" :: \
  "${NS[@]}" env LD_LIBRARY_PATH="$REF_LIB" "$RATE" -p "tcp;ofi_rxm" -S 64,4k -n "$n_slow" 127.0.0.1
"$P" testbed down >/dev/null

python3 - "$out" "$reps" <<'EOF'
import os, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])

def rows(path):
    """{bytes: [columns]} from a result table (header line skipped)."""
    try:
        lines = open(os.path.join(out, path)).read().split('\n')
    except OSError:
        return {}
    return {int(l.split()[0]): l.split() for l in lines if l[:1].isdigit()}

def med(name, size, col, runs):
    v = [float(rows(f'{name}.{r}' if runs else name)[size][col])
         for r in (range(1, reps + 1) if runs else [0]) if size in rows(f'{name}.{r}' if runs else name)]
    return statistics.median(v) if v else None

raw = {s: med('raw', s, 3, True) for s in (64, 4096)}          # Mmsg/s
raw_f = {s: med('raw', s, 4, True) for s in (64, 4096)}        # Mframes/s
table = [('raw DPDK floor, net_memif (packets)', raw[64], raw[4096], None, None)]
for label, name, runs in (('pollfab dpdk msg, net_memif', 'dpdk_msg', True),
                          ('pollfab dpdk tagged, net_memif', 'dpdk_tagged', True),
                          ('pollfab udp msg, loopback', 'udp', False),
                          ('reference tcp;ofi_rxm msg, loopback', 'rxm', False)):
    table.append((label, med(name, 64, 3, runs), med(name, 4096, 3, runs),
                  med(name, 64, 5, runs), med(name, 64, 6, runs)))
f = lambda v, p=3: 'n/a' if v is None else f'{v:.{p}f}'
r = lambda a, b: 'n/a' if a is None or not b else f'{a / b:.2f}'
print(f"\n{'':38} {'64B Mmsg/s':>11} {'4KiB Mmsg/s':>12} {'cpu ns tx':>10} {'cpu ns rx':>10}   ratio to raw: 64B 4KiB")
for label, m64, m4k, ctx, crx in table:
    print(f"{label:38} {f(m64):>11} {f(m4k):>12} {f(ctx, 0):>10} {f(crx, 0):>10}   {r(m64, raw[64]):>10} {r(m4k, raw[4096]):>5}")
print(f"\nraw floor frames: {f(raw_f[64])} M/s at 64 B, {f(raw_f[4096])} M/s at 4 KiB (3 frames a message).")
print(f"medians of {reps} run(s) for raw and dpdk; udp and rxm: one run. cpu ns: per 64-byte message, each side.")
# Per repetition: raw and pollfab ran back to back, so their ratio compares one placement.
print(f"\n{'repetition':12} {'xcore ns':>14} {'raw 64B':>8} {'msg 64B':>8} {'ratio':>6} {'raw 4KiB':>9} {'msg 4KiB':>9} {'ratio':>6} {'tagged 64B':>11} {'ratio':>6}")
ratios = {k: [] for k in ('m64', 'm4k', 't64')}
by_class = {c: {k: [] for k in ('m64', 'm4k', 't64')} for c in ('near', 'far')}
for rep in range(1, reps + 1):
    rw, dm, dt = rows(f'raw.{rep}'), rows(f'dpdk_msg.{rep}'), rows(f'dpdk_tagged.{rep}')
    try:
        probes = open(os.path.join(out, f'xcore.{rep}')).read().split()
    except OSError:
        probes = []
    x = '/'.join(probes) if probes else 'n/a'
    try:
        c_msg, c_tagged = open(os.path.join(out, f'class.{rep}')).read().split()
    except (OSError, ValueError):
        c_msg = c_tagged = 'mixed'
    cls = {'m64': c_msg, 'm4k': c_msg, 't64': c_tagged}
    g = lambda t, s, c: float(t[s][c]) if s in t else None
    vals = (g(rw, 64, 3), g(dm, 64, 3), g(rw, 4096, 3), g(dm, 4096, 3), g(dt, 64, 3))
    for k, a, b in (('m64', vals[1], vals[0]), ('m4k', vals[3], vals[2]), ('t64', vals[4], vals[0])):
        if a is not None and b:
            ratios[k].append(a / b)
            if cls[k] in by_class:
                by_class[cls[k]][k].append(a / b)
    print(f"{rep:<12} {x:>14} {f(vals[0]):>8} {f(vals[1]):>8} {r(vals[1], vals[0]):>6} {f(vals[2]):>9} {f(vals[3]):>9} {r(vals[3], vals[2]):>6} {f(vals[4]):>11} {r(vals[4], vals[0]):>6}")
md = lambda v: f'{statistics.median(v):.2f}' if v else 'n/a'
print(f"\nmessage rate / raw packet rate, median of per-repetition ratios: msg 64 B {md(ratios['m64'])}, "
      f"msg 4 KiB {md(ratios['m4k'])}, tagged 64 B {md(ratios['t64'])}")
for c in ('near', 'far'):
    b = by_class[c]
    print(f"  {c} class (repetitions whose probes all read {c}): msg 64 B {md(b['m64'])} ({len(b['m64'])}), "
          f"msg 4 KiB {md(b['m4k'])} ({len(b['m4k'])}), tagged 64 B {md(b['t64'])} ({len(b['t64'])})")
print("xcore: cache-line round trip CPU0<->CPU1 before the floor, after pollfab's msg pair and after its tagged")
print("pair, each repetition (vCPU placement; near < 150 ns; a class needs every probe of the ratio's runs).")
EOF

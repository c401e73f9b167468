#!/usr/bin/env bash
# Benchmark (not a test): Debian's unmodified fi_pingpong -e rdm over
#   - pollfab's dpdk provider on net_tap (testbed, host b -> host a), and on net_memif if it works
#   - the reference libfabric's "tcp;ofi_rxm" and "udp;ofi_rxd" on loopback (inside a testbed
#     namespace, so no traffic touches the machine's own interfaces)
# plus a raw DPDK ping-pong with no protocol on the same vdevs (the floor pollfab can approach:
# pollfab-rawpp, whose server answers a message once all its frames are in, as fi_pingpong's
# does; on memif also the same floor copying what it receives into a message buffer, as a
# receive into an application's buffer does (--place), and its per-frame echo, where a
# multi-frame message's two directions overlap, shown for reference), all in one run. Prints usec/xfer at 64 B and 4 KiB and MB/sec at 1 MiB side by side, with
# ratios to pollfab over net_tap: ratio = row / pollfab(tap) for every column (usec/xfer: above
# 1 means the row is slower than pollfab; MB/sec: above 1 means the row moves more data).
# A second table gives pollfab's ratio to the raw DPDK floor on the same vdev (the figure a
# change to the data path must not worsen): usec/xfer pollfab / raw (1 = at the floor, above =
# slower), MB/sec pollfab / raw (1 = at the floor, below = less). Over memif, pollfab and the
# floor run back to back at each size, 3 times (--quick: once), and the median of the
# per-repetition ratios is the figure (then again against the placing floor); then the same
# for the median half round trip
# (`pollfab pingpong --lat` against the raw ping-pong's own median), which the VM's scheduling
# hiccups do not move, also by placement class (each memif size probed before pollfab's pair,
# after the floor's and after the --lat pair: near, far or mixed). On a VM, memif speed follows
# where the host put the two vCPUs (docs/architecture-notes.md): the cache-line round trip
# between CPUs 0 and 1 (pollfab-bench-xcore) is printed before and after the memif runs; compare
# memif figures only between runs with the same placement.
# A third table: `pollfab pingpong --cpu` at 64 B over memif and udp (loopback) under manual and
# automatic progress, polling or waiting on the FI_GETWAIT descriptor: latency and the CPU
# seconds each side used per 10,000 round trips.
# Last, scripts/bench-rate.sh: message rate at 64 B and 4 KiB (pollfab dpdk over memif, msg and
# tagged; pollfab udp; the reference tcp;ofi_rxm) against the raw packet-rate floor on memif.
# Run as root. Options: --quick (fewer iterations).
set -euo pipefail
cd "$(dirname "$0")/.."
# 1 MiB over memif: 2,000 round trips (~0.2 s near, ~0.5 s far). 300 (the tap rows' count,
# where a round trip takes ms) was ~25 ms of memif: one host hiccup of a few ms moved a
# repetition's mean by 10-40% either way (0.57-1.16 of the floor in pinned pairs whose medians
# were within 5%, docs/performance.md item 71).
i64=20000; i4k=10000; i1m=300; i1m_memif=2000; iw=10000; reps=3; rate_args=()
if [ "${1:-}" = "--quick" ]; then i64=2000; i4k=1000; i1m=50; i1m_memif=200; iw=2000; reps=1; rate_args=(--quick); fi
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-compare
bench_build
P=$PWD/build/apps/pollfab
RAW=$PWD/build/apps/pollfab-rawpp
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap

. scripts/lib/pingpong_pair.sh  # pp (one fi_pingpong pair), val (its result columns)
pin_a=(); pin_b=()  # CPU pinning of the memif pairs (set below; empty for the tap rows)

# raw NAME MODE [SIZE:ITERS...]: the raw ping-pong at each size (default: all three, with
# fi_pingpong's iteration counts; MODE: message, the floor; place, the floor with each side
# copying what it receives into a message buffer, as a receive into an application's buffer
# does; frame, the pipelined per-frame echo); results appended to $out/NAME.
raw() {
  local name=$1 mode=$2 s size it
  local -a sargs=(--echo message) cargs=()
  case $mode in
    frame) sargs=(--echo frame) ;;
    place) sargs+=(--place); cargs=(--place) ;;
  esac
  shift 2
  [ $# -gt 0 ] || set -- 64:$i64 4096:$i4k 1048576:$i1m
  for s in "$@"; do
    size=${s%:*}; it=${s#*:}
    timeout 300 "$P" testbed exec a -- "${pin_a[@]}" "$RAW" "${sargs[@]}" > "$out/$name.s" 2>&1 &
    bg=$!
    sleep 0.7
    timeout 300 "$P" testbed exec b -- "${pin_b[@]}" "$RAW" "${cargs[@]}" -S "$size" -I "$it" "$("$P" testbed addr a)" >> "$out/$name" 2>&1 || echo "n/a" >> "$out/$name"
    wait "$bg" 2>/dev/null || true
    bg=""
  done
}
rawval() { awk -v s="$2" -v c="$3" '$1==s {print $c}' "$out/$1" | tail -1; }

# ppl NAME SIZE ITERS: `pollfab pingpong --lat` over the memif testbed; $out/NAME holds the
# client's result line, whose last two columns are the median and 99th percentile half round trip.
ppl() {
  local name=$1 size=$2 it=$3
  timeout 120 "$P" testbed exec a -- "${pin_a[@]}" "$P" pingpong -p dpdk -S "$size" -I "$it" > "$out/$name.s" 2>&1 &
  bg=$!
  sleep 0.7
  timeout 120 "$P" testbed exec b -- "${pin_b[@]}" "$P" pingpong -p dpdk -S "$size" -I "$it" --lat "$A" > "$out/$name" 2>&1 ||
    echo "n/a" > "$out/$name"
  wait "$bg" 2>/dev/null || true
  bg=""
}

# ppw NAME PROV SERVER_WRAP CLIENT_WRAP PEER ARGS...: one `pollfab pingpong --cpu` pair at 64 B
# with a progress/wait mode (ARGS); $out/NAME holds the client's result line, whose columns 7, 9
# and 10 are usec/xfer and the CPU seconds client and server used per 10,000 round trips.
ppw() {
  local name=$1 prov=$2 swrap=$3 cwrap=$4 peer=$5; shift 5
  timeout 120 $swrap "$P" pingpong -p "$prov" -P 4000 -S 64 -I "$iw" --cpu "$@" > "$out/$name.s" 2>&1 &
  bg=$!
  sleep 0.7
  timeout 120 $cwrap "$P" pingpong -p "$prov" -S 64 -I "$iw" --cpu "$@" "$peer:4000" > "$out/$name" 2>&1 ||
    echo "n/a" > "$out/$name"
  wait "$bg" 2>/dev/null || true
  bg=""
}
modes=("manual poll:--progress manual --wait none" "manual fd:--progress manual --wait fd"
       "auto poll:--progress auto --wait none" "auto fd:--progress auto --wait fd")

echo "pollfab bench-compare: $(date -u +%FT%TZ), $(nproc) cores, fi_pingpong -e rdm"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link tap >/dev/null
A=$("$P" testbed addr a)
for s in 64:$i64 4096:$i4k 1048576:$i1m; do
  size=${s%:*}; it=${s#*:}
  pp pollfab_tap "$size" "$it" dpdk "$P testbed exec a --" "$P testbed exec b --" "$A"
  pp rxm "$size" "$it" "tcp;ofi_rxm" "ip netns exec pollfab-a" "ip netns exec pollfab-a" 127.0.0.1
  pp rxd "$size" "$it" "udp;ofi_rxd" "ip netns exec pollfab-a" "ip netns exec pollfab-a" 127.0.0.1
done
raw raw_tap message
"$P" testbed down >/dev/null
x_before=$(xcore || echo n/a)
# Now and then the host runs both vCPUs on one physical core (SMT siblings): the cache-line
# round trip between CPUs 0 and 1 reads ~55 ns instead of 110-220, and the raw floor, whose
# turnaround is memif's cache lines and little else, drops from ~0.65 to ~0.17 us at 64 B (the
# "floor's glitch" of earlier runs; seen 1 run in 8, with the probe at 55 ns right after). A
# memif run (pollfab's or the floor's) with a probe under shared_ns on either side of it is
# made again, at most twice; the count is printed with the results.
shared_ns=80; shared_runs=0
# Each memif size of a repetition is probed before pollfab's pair, after the floor's and after
# the --lat pair, and its ratios are classed by the three (placement_class, bench_env.sh).
shared_core() {
  local x
  x=$(build/apps/pollfab-bench-xcore --cpus 0,1 --ms 30 2>/dev/null | sed -n 's/^xcore_rtt_ns=//p')
  [ -n "$x" ] && [ "$x" -lt "$shared_ns" ]
}
placed() {  # placed CMD...: one memif run (pp, raw or ppl), made again under the shared placement
  local try
  for try in 1 2; do
    if ! shared_core; then
      "$@"
      shared_core || return 0
    fi
    shared_runs=$((shared_runs + 1))
    sleep 1
  done
  "$@"
}
# The memif pairs (pollfab's, fi_pingpong's and the raw floor's alike) run one process per CPU,
# as a DPDK application pins its lcores: unpinned, the two busy pollers can share one vCPU for
# the first milliseconds of a run until the kernel's balancer parts them (4 ms turnarounds and
# early RTOs for pollfab, slow first frames for the floor), which moved single repetitions by
# 20-30% (docs/performance.md). Left empty elsewhere: the tap rows run as before.
if "$P" testbed up --link memif >/dev/null; then
  pin_a=(taskset -c 0); pin_b=(taskset -c 1)
  # pollfab and the raw floor back to back at each size, $reps times: the host moves the vCPUs
  # between runs (the raw 64-byte ping-pong alone has moved 2x within one run), so each
  # repetition's ratio compares runs made a few seconds apart, and the median ratio is reported.
  for r in $(seq 1 "$reps"); do
    xcore > "$out/xcore_memif.$r" 2>/dev/null || echo n/a > "$out/xcore_memif.$r"
    for s in 64:$i64 4096:$i4k 1048576:$i1m_memif; do
      size=${s%:*}; it=${s#*:}
      x0=$(probe)
      placed pp "pollfab_memif.$r" "$size" "$it" dpdk "$P testbed exec a -- ${pin_a[*]}" "$P testbed exec b -- ${pin_b[*]}" "$A"
      placed raw "raw_memif.$r" message "$s"  # (raw appends: a run made again is the last line)
      x1=$(probe)
      placed raw "raw_memif_place.$r" place "$s"
      placed ppl "lat_memif.$r.$size" "$size" "$it"
      x2=$(probe)
      echo "$(placement_class "$x0" "$x1" "$x2") $x0/$x1/$x2" > "$out/class_memif.$r.$size"
    done
    xcore >> "$out/xcore_memif.$r" 2>/dev/null || echo n/a >> "$out/xcore_memif.$r"
  done
  raw raw_memif_frame frame 64:$i64 4096:$i4k 1048576:$i1m_memif
  for m in "${modes[@]}"; do  # progress and waiting: dpdk over memif and udp on loopback
    key=${m%%:*}; key=${key// /_}
    read -r -a margs <<<"${m#*:}"
    ppw "wait_memif_$key" dpdk "$P testbed exec a --" "$P testbed exec b --" "$A" "${margs[@]}"
    ppw "wait_udp_$key" udp "ip netns exec pollfab-a" "ip netns exec pollfab-a" 127.0.0.1 "${margs[@]}"
  done
  "$P" testbed down >/dev/null
  pin_a=(); pin_b=()
fi
x_after=$(xcore || echo n/a)

# ratio ROW POLLFAB = row / pollfab
ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print('%.2f'%(float(a)/float(b)) if a not in('n/a','') and b not in('n/a','') and float(b)>0 else 'n/a')" "$1" "$2"; }
p64=$(val pollfab_tap.64 7); p4k=$(val pollfab_tap.4096 7); p1m=$(val pollfab_tap.1048576 6)
printf "\n%-34s %12s %12s %12s   %s\n" "" "64B usec" "4KiB usec" "1MiB MB/s" "ratio to pollfab(tap): 64B 4KiB 1MiB"
row() {  # label v64 v4k v1m
  printf "%-34s %12s %12s %12s   %6s %6s %6s\n" "$1" "$2" "$3" "$4" \
    "$(ratio "$2" "$p64")" "$(ratio "$3" "$p4k")" "$(ratio "$4" "$p1m")"
}
row "pollfab dpdk, net_tap" "$p64" "$p4k" "$p1m"
# Medians over the repetitions of one size's figure (files NAME.1..NAME.reps); VAL is val or rawval.
medval() {  # medval VAL NAME_PREFIX NAME_SUFFIX ARGS...: median of VAL PREFIX.r.SUFFIX ARGS
  local f=$1 pre=$2 suf=$3 r v vals=(); shift 3
  for r in $(seq 1 "$reps"); do v=$($f "$pre.$r$suf" "$@"); [ -n "$v" ] && [ "$v" != n/a ] && vals+=("$v"); done
  [ ${#vals[@]} -gt 0 ] && printf "%s\n" "${vals[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}' || echo n/a
}
row "pollfab dpdk, net_memif" "$(medval val pollfab_memif .64 7)" "$(medval val pollfab_memif .4096 7)" "$(medval val pollfab_memif .1048576 6)"
row "reference tcp;ofi_rxm, loopback" "$(val rxm.64 7)" "$(val rxm.4096 7)" "$(val rxm.1048576 6)"
row "reference udp;ofi_rxd, loopback" "$(val rxd.64 7)" "$(val rxd.4096 7)" "$(val rxd.1048576 6)"
row "raw DPDK floor, net_tap" "$(rawval raw_tap 64 3)" "$(rawval raw_tap 4096 3)" "$(rawval raw_tap 1048576 4)"
row "raw DPDK floor, net_memif" "$(medval rawval raw_memif "" 64 3)" "$(medval rawval raw_memif "" 4096 3)" "$(medval rawval raw_memif "" 1048576 4)"
row "raw floor + placement, net_memif" "$(medval rawval raw_memif_place "" 64 3)" "$(medval rawval raw_memif_place "" 4096 3)" "$(medval rawval raw_memif_place "" 1048576 4)"
row "raw per-frame echo, net_memif" "$(rawval raw_memif_frame 64 3)" "$(rawval raw_memif_frame 4096 3)" "$(rawval raw_memif_frame 1048576 4)"
echo
echo "ratio = row / pollfab(tap): usec/xfer above 1 = slower than pollfab; MB/s above 1 = more throughput."
echo "Iterations: 64 B $i64, 4 KiB $i4k, 1 MiB $i1m (net_memif: $i1m_memif), raw too (lost raw frames are"
echo "counted, not resent)."
echo "net_memif rows: medians of $reps repetitions (pollfab and the raw floor back to back per size)."
echo "raw floor: the server answers a message once all its frames are in (fi_pingpong's order). The"
echo "per-frame echo answers each frame as it arrives, so at 1 MiB both directions move at once:"
echo "not a ping-pong, shown for reference (pollfab was compared with it before 2026-11-26)."
echo "+ placement: the floor never touches the payload (memif's two copies move each byte); a"
echo "libfabric receive lands in the application's buffer, a third copy on memif (pollfab-rawpp --place)."

# pollfab / raw floor on the same vdev.
printf "\n%-46s %12s %12s %12s\n" "pollfab / raw DPDK floor" "64B usec" "4KiB usec" "1MiB MB/s"
floor_row() {  # label pollfab_name raw_name
  printf "%-46s %12s %12s %12s\n" "$1" \
    "$(ratio "$(val "$2".64 7)" "$(rawval "$3" 64 3)")" \
    "$(ratio "$(val "$2".4096 7)" "$(rawval "$3" 4096 3)")" \
    "$(ratio "$(val "$2".1048576 6)" "$(rawval "$3" 1048576 4)")"
}
# net_memif: the median of the per-repetition ratios (each from runs a few seconds apart).
ratios_memif() {  # prints one line per repetition, then the medians
  local floor=$1 label=$2 r c64 c4k c1m m64=() m4k=() m1m=()
  for r in $(seq 1 "$reps"); do
    c64=$(ratio "$(val "pollfab_memif.$r.64" 7)" "$(rawval "$floor.$r" 64 3)")
    c4k=$(ratio "$(val "pollfab_memif.$r.4096" 7)" "$(rawval "$floor.$r" 4096 3)")
    c1m=$(ratio "$(val "pollfab_memif.$r.1048576" 6)" "$(rawval "$floor.$r" 1048576 4)")
    printf "%-46s %12s %12s %12s   xcore ns %s\n" "$label, repetition $r" "$c64" "$c4k" "$c1m" "$(tr '\n' '/' < "$out/xcore_memif.$r" | sed 's|/$||')"
    m64+=("$c64"); m4k+=("$c4k"); m1m+=("$c1m")
  done
  med() { printf "%s\n" "$@" | grep -v n/a | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'; }
  printf "%-46s %12s %12s %12s\n" "$label (median of repetitions)" "$(med "${m64[@]}")" "$(med "${m4k[@]}")" "$(med "${m1m[@]}")"
}
ratios_memif raw_memif net_memif
# The same against the floor that places what it receives (a receive into the application's
# buffer: the copy every libfabric provider makes over memif, which the plain floor does not).
ratios_memif raw_memif_place "net_memif, floor + placement"
floor_row "net_tap" pollfab_tap raw_tap
# Medians of the per-iteration half round trips (the means above move with the VM's scheduling
# hiccups; one iteration's hiccup moves no median): pollfab pingpong --lat against the raw floor's
# own median, per repetition, and the median of those ratios.
# At 1 MiB the same medians as bandwidth (MB/s = bytes / median half round trip): pollfab / raw
# is then the raw median over pollfab's.
printf "\n%-34s %12s %12s %14s   %s\n" "median half round trip, net_memif" "64B usec" "4KiB usec" "1MiB usec" "pollfab / raw: 64B 4KiB (usec), 1MiB (MB/s)"
lm64=(); lm4k=(); lm1m=()
# lat_med R SIZE: the median half round trip of repetition R's `--lat` pair at SIZE (empty if none).
lat_med() { awk '/^[0-9]+[kmg]? / {print $(NF-1)}' "$out/lat_memif.$1.$2" 2>/dev/null | tail -1 || true; }
# class_of R SIZE: near, far or mixed (empty if not probed).
class_of() { cut -d' ' -f1 "$out/class_memif.$1.$2" 2>/dev/null || true; }
for r in $(seq 1 "$reps"); do
  p64=$(lat_med "$r" 64); p4k=$(lat_med "$r" 4096); p1m=$(lat_med "$r" 1048576)
  q64=$(rawval "raw_memif.$r" 64 6); q4k=$(rawval "raw_memif.$r" 4096 6); q1m=$(rawval "raw_memif.$r" 1048576 6)
  printf "%-34s %12s %12s %14s   %6s %6s %6s\n" "pollfab / raw, repetition $r" "${p64:-n/a}/${q64:-n/a}" "${p4k:-n/a}/${q4k:-n/a}" \
    "${p1m:-n/a}/${q1m:-n/a}" "$(ratio "${p64:-n/a}" "${q64:-n/a}")" "$(ratio "${p4k:-n/a}" "${q4k:-n/a}")" \
    "$(ratio "${q1m:-n/a}" "${p1m:-n/a}")"
  lm64+=("$(ratio "${p64:-n/a}" "${q64:-n/a}")"); lm4k+=("$(ratio "${p4k:-n/a}" "${q4k:-n/a}")")
  lm1m+=("$(ratio "${q1m:-n/a}" "${p1m:-n/a}")")
done
medr() { printf "%s\n" "$@" | grep -v -e n/a -e '^$' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'; }
printf "%-34s %12s %12s %14s   %6s %6s %6s\n" "median of repetitions" "" "" "" "$(medr "${lm64[@]}")" "$(medr "${lm4k[@]}")" "$(medr "${lm1m[@]}")"
# The same by placement class: each size's ratios of the repetitions whose three probes (before
# pollfab's pair, after the floor's, after the --lat pair) all read near, or all far. A class
# with no repetition at a size prints n/a; a mixed repetition counts in neither.
for cl in near far; do
  c64=(); c4k=(); c1m=()
  for r in $(seq 1 "$reps"); do
    i=$((r - 1))
    [ "$(class_of "$r" 64)" = "$cl" ] && c64+=("${lm64[$i]}")
    [ "$(class_of "$r" 4096)" = "$cl" ] && c4k+=("${lm4k[$i]}")
    [ "$(class_of "$r" 1048576)" = "$cl" ] && c1m+=("${lm1m[$i]}")
  done
  printf "%-34s %12s %12s %14s   %6s %6s %6s   (%d / %d / %d repetitions)\n" "$cl class, median" "" "" "" \
    "$(medr "${c64[@]}")" "$(medr "${c4k[@]}")" "$(medr "${c1m[@]}")" "${#c64[@]}" "${#c4k[@]}" "${#c1m[@]}"
done
for r in $(seq 1 "$reps"); do
  printf "%-34s %s; %s; %s\n" "placement, repetition $r" "64B $(cat "$out/class_memif.$r.64" 2>/dev/null)" \
    "4KiB $(cat "$out/class_memif.$r.4096" 2>/dev/null)" "1MiB $(cat "$out/class_memif.$r.1048576" 2>/dev/null)"
done
echo "usec: pollfab/raw (1 = at the floor, above = slower); 1 MiB: MB/s pollfab/raw from the medians, raw/pollfab"
echo "in usec (below 1 = less throughput)."
echo "vCPU placement, cache-line round trip CPU0<->CPU1: ${x_before} ns before memif, ${x_after} ns after (near < 150 ns)."
echo "memif runs made again because a probe beside them read under ${shared_ns} ns (both vCPUs on one core): $shared_runs."

# Progress and waiting (docs/progress.md): pollfab pingpong at 64 B, each mode against manual
# progress with polling on the same link.
printf "\n%-34s %12s %14s %14s   %s\n" "progress, wait (pollfab pingpong)" "64B usec" "cpu s/10k cli" "cpu s/10k srv" "usec ratio to manual poll"
for link in memif udp; do
  base=$(val "wait_${link}_manual_poll" 7)
  for m in "${modes[@]}"; do
    key=${m%%:*}
    n="wait_${link}_${key// /_}"
    printf "%-34s %12s %14s %14s   %6s\n" "$link, $key" "$(val "$n" 7)" "$(val "$n" 9)" \
      "$(val "$n" 10)" "$(ratio "$(val "$n" 7)" "$base")"
  done
done
echo "poll: busy polling fi_cq_read; fd: fi_trywait, then poll(2) on FI_GETWAIT. auto: a progress"
echo "thread per port. CPU: all threads of each process during the $iw round trips, per 10,000."

echo
scripts/bench-rate.sh --no-build "${rate_args[@]}"

#!/usr/bin/env bash
# Benchmark (not a test): instructions per message of the whole stack, side by side with the raw
# DPDK floor doing the same job on the same vdev, as ratios. Wall-clock figures on this VM move
# 20-30% with the host (docs/performance.md, "The floor, and why it moves"); instruction counts
# do not, so a change to the data path shows here even when the clock cannot see it.
#   - message rate, 64 B over net_memif: each side of a pollfab-bench-rate pair (fi_send and
#     fi_tsend, 64 in flight) against each side of the raw tx-only -> rx-only pair
#     (pollfab-rawpp --rate, bursts of 32 frames); and the fi_send sender with 512 in flight,
#     which batches as the sender at full speed does (with 64, under callgrind it meets an
#     idle peer every round);
#   - ping-pong turnaround, 64 B: the server of `pollfab pingpong` (fi_cq_read until the message
#     is in, the reply's fi_inject, the fi_recv re-post) against the raw echo server
#     (pollfab-rawpp) over net_memif, and the same at 4 KiB (3 frames each way); the 64-byte
#     server with pollfab's udp provider on loopback in a testbed namespace (user mode only: the
#     socket calls' kernel work is not counted, so that row is a lower bound and shows pollfab's
#     own share). The reference libfabric has no kernel-bypass provider here: its tcp;ofi_rxm
#     spends its time in the kernel, which callgrind does not see, so the clock compares it
#     (bench-compare.sh, bench-rate.sh).
# How: one side runs under callgrind, the other at full speed, so the measured side never waits
# for data (it polls empty rarely). callgrind counts only inside the round's functions
# (--toggle-collect: bench-rate's send_round / receive_round, pingpong's run_pingpong, rawpp's
# client_rate / serve_rate / serve; never inlined, so they have names), which holds the
# application's loop, the library and the PMD, and leaves out setup and the out-of-band waits.
# The count is divided by the messages of the rounds, the tools' untimed warm-up rounds included
# (bench-rate min(N, 20000), rawpp --rate 1000, the ping-pongs 200).
#   - the critical path of the 64 B and 4 KiB turnarounds (lib/util/critical_path_marks.hpp):
#     the server's instructions from the rx burst that brings the request to the return of the
#     reply's tx burst, for pollfab and the raw echo server alike: what the round trip waits
#     for (frees, timers and polls left for later are not on it).
# Run as root; needs valgrind (scripts/install-deps.sh). About three minutes (--quick: two).
# Options: --quick (fewer messages), --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."
n_rate=200000; n_pp=50000; n_slow=10000; build=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) n_rate=50000; n_pp=10000; n_slow=2000 ;;
    --no-build) build=0 ;;
    *) echo "bench-instructions: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/lib/bench_build.sh  # need_root, bench_build
need_root bench-instructions
if [ "$build" = 1 ]; then bench_build; fi
P=$PWD/build/apps/pollfab
RAW=$PWD/build/apps/pollfab-rawpp
RATE=$PWD/build/apps/pollfab-bench-rate
. scripts/lib/bench_env.sh  # $out, $bg, the cleanup trap

# run NAME MSGS SIDE FUNCS SERVER_CMD... :: CLIENT_CMD...: the server in the background, then the
# client, each bounded. In both commands the word VG marks where valgrind goes (after the
# testbed or namespace prefix): on SIDE (srv or cli) it becomes callgrind collecting only inside
# FUNCS (comma-separated function names), on the other side nothing. Prints instructions per
# message (the count over MSGS), or n/a if the pair failed.
run() {
  local name=$1 msgs=$2 side=$3 funcs=$4; shift 4
  local -a vg=(valgrind --tool=callgrind --collect-atstart=no "--callgrind-out-file=$out/$name.cg")
  local -a fs srv=() cli=()
  local f w
  IFS=, read -ra fs <<< "$funcs"
  for f in "${fs[@]}"; do vg+=("--toggle-collect=*::$f(*"); done
  while [ "$1" != "::" ]; do
    if [ "$1" = VG ]; then [ "$side" = srv ] && srv+=("${vg[@]}"); else srv+=("$1"); fi
    shift
  done
  shift
  for w in "$@"; do
    if [ "$w" = VG ]; then [ "$side" = cli ] && cli+=("${vg[@]}"); else cli+=("$w"); fi
  done
  timeout 600 "${srv[@]}" > "$out/$name.s" 2>&1 &
  bg=$!
  # The server listens on its out-of-band port once its fabric is up: under valgrind that takes
  # seconds (the clients retry their connection meanwhile, for a bounded time).
  [ "$side" = srv ] && sleep 5 || sleep 0.7
  if ! timeout 600 "${cli[@]}" > "$out/$name.c" 2>&1; then
    echo "bench-instructions: $name failed: $(grep -v '^==' "$out/$name.c" | tail -2 | tr '\n' ' ')" >&2
    wait "$bg" 2>/dev/null || true
    bg=""
    echo n/a
    return
  fi
  wait "$bg" 2>/dev/null || true
  bg=""
  local ir once
  ir=$(sed -n 's/^summary: //p' "$out/$name.cg" 2>/dev/null | head -1)
  if [ -z "$ir" ] || [ "$ir" = 0 ]; then
    echo "bench-instructions: $name: callgrind counted nothing inside ${funcs:-the marks}" >&2
    echo n/a
    return
  fi
  # Once per run, not per message: the endpoint's linger at close (after the last reply), and
  # mapping memif's regions in if it runs on a counted thread (the raw floor's, before its
  # rounds; pollfab's server did it inside its first rounds until its link watch moved it to
  # DPDK's interrupt thread, which callgrind does not count here).
  once=$(callgrind_annotate --inclusive=yes --threshold=100 "$out/$name.cg" 2>/dev/null |
    awk '/(prefault_memif_regions|TransportEndpoint::linger)\(\) \[/ && $1 ~ /^[0-9,]+$/ {
           gsub(",", "", $1); s += $1 } END { print s + 0 }')
  awk -v ir="$ir" -v o="$once" -v m="$msgs" 'BEGIN { printf "%.0f", (ir - o) / m }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
row() { printf "%-52s %10s %10s %8s\n" "$1" "$2" "$3" "$(ratio "$2" "$3")"; }  # label, pollfab, floor
warm_rate() { echo $(( $1 + ($1 < 20000 ? $1 : 20000) )); }  # bench-rate's warm-up round

echo "pollfab bench-instructions: $(date -u +%FT%TZ), callgrind (instructions per message)"
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
A=$("$P" testbed addr a)
EA=("$P" testbed exec a --)
EB=("$P" testbed exec b --)
m_rate=$(warm_rate "$n_rate")
m_raw=$((n_rate + 1000))
m_pp=$((n_pp + 200))
m_slow=$((n_slow + 200))
n_pp4k=$((n_pp / 2)); m_pp4k=$((n_pp4k + 200))

raw_tx=$(run raw_tx "$m_raw" cli client_rate "${EA[@]}" VG "$RAW" --rate :: \
  "${EB[@]}" VG "$RAW" --rate -S 64 -I "$n_rate" "$A")
raw_rx=$(run raw_rx "$m_raw" srv serve_rate "${EA[@]}" VG "$RAW" --rate :: \
  "${EB[@]}" VG "$RAW" --rate -S 64 -I "$n_rate" "$A")
for mode in msg tagged; do
  rate_srv=("${EA[@]}" VG "$RATE" -p dpdk -m "$mode")
  rate_cli=("${EB[@]}" VG "$RATE" -p dpdk -m "$mode" -S 64 -n "$n_rate" "$A")
  declare "tx_$mode=$(run "tx_$mode" "$m_rate" cli send_round "${rate_srv[@]}" :: "${rate_cli[@]}")"
  declare "rx_$mode=$(run "rx_$mode" "$m_rate" srv receive_round "${rate_srv[@]}" :: "${rate_cli[@]}")"
done
# The sender again with 512 in flight: under callgrind a sender with 64 meets an idle peer at
# every round (its partner at full speed has acknowledged the whole window), so each round's
# first post leaves alone in an eager flush, which the sender at full speed never does; with
# 512 it does not either (docs/performance.md item 64).
tx_w512=$(run tx_w512 "$m_rate" cli send_round "${EA[@]}" VG "$RATE" -p dpdk :: \
  "${EB[@]}" VG "$RATE" -p dpdk -S 64 -n "$n_rate" -W 512 "$A")
raw_pp=$(run raw_pp "$m_pp" srv serve "${EA[@]}" VG "$RAW" :: "${EB[@]}" VG "$RAW" -S 64 -I "$n_pp" "$A")
pf_pp=$(run pf_pp "$m_pp" srv run_pingpong "${EA[@]}" VG "$P" pingpong -p dpdk -S 64 -I "$n_pp" :: \
  "${EB[@]}" VG "$P" pingpong -p dpdk -S 64 -I "$n_pp" "$A")
# 4 KiB: 3 frames of the MTU each way. Both tools warm up with 200 64-byte round trips first,
# counted here as 4 KiB ones (the figure is then under 1% low).
raw_pp4k=$(run raw_pp4k "$m_pp4k" srv serve "${EA[@]}" VG "$RAW" :: \
  "${EB[@]}" VG "$RAW" -S 4k -I "$n_pp4k" "$A")
pf_pp4k=$(run pf_pp4k "$m_pp4k" srv run_pingpong "${EA[@]}" VG "$P" pingpong -p dpdk -S 4k -I "$n_pp4k" :: \
  "${EB[@]}" VG "$P" pingpong -p dpdk -S 4k -I "$n_pp4k" "$A")
# The critical path of a turnaround (lib/util/critical_path_marks.hpp): only what runs from the
# receive burst that brings the request to the return of the reply's transmit burst, both
# sides marking the same two points (memif's rx before the first mark is left out of both).
CM=(env PF_CRITICAL_PATH_MARKS=1)
raw_cp=$(run raw_cp "$m_slow" srv "" "${EA[@]}" "${CM[@]}" VG "$RAW" :: "${EB[@]}" VG "$RAW" -S 64 -I "$n_slow" "$A")
pf_cp=$(run pf_cp "$m_slow" srv "" "${EA[@]}" "${CM[@]}" VG "$P" pingpong -p dpdk -S 64 -I "$n_slow" :: \
  "${EB[@]}" VG "$P" pingpong -p dpdk -S 64 -I "$n_slow" "$A")
raw_cp4k=$(run raw_cp4k "$m_slow" srv "" "${EA[@]}" "${CM[@]}" VG "$RAW" :: \
  "${EB[@]}" VG "$RAW" -S 4k -I "$n_slow" "$A")
pf_cp4k=$(run pf_cp4k "$m_slow" srv "" "${EA[@]}" "${CM[@]}" VG "$P" pingpong -p dpdk -S 4k -I "$n_slow" :: \
  "${EB[@]}" VG "$P" pingpong -p dpdk -S 4k -I "$n_slow" "$A")
NS=(ip netns exec pollfab-a)
udp_pp=$(run udp_pp "$m_slow" srv run_pingpong "${NS[@]}" VG "$P" pingpong -p udp -S 64 -I "$n_slow" :: \
  "${NS[@]}" VG "$P" pingpong -p udp -S 64 -I "$n_slow" 127.0.0.1)
"$P" testbed down >/dev/null

echo
printf "%-52s %10s %10s %8s\n" "instructions per message (64 B unless named)" pollfab "raw floor" ratio
row "rate, sender, fi_send (raw: tx-only, per frame)" "$tx_msg" "$raw_tx"
row "rate, sender, fi_tsend" "$tx_tagged" "$raw_tx"
row "rate, sender, fi_send, 512 in flight (no idle peer)" "$tx_w512" "$raw_tx"
row "rate, receiver, fi_recv (raw: rx-only, per frame)" "$rx_msg" "$raw_rx"
row "rate, receiver, fi_trecv" "$rx_tagged" "$raw_rx"
row "ping-pong turnaround, dpdk over net_memif (server)" "$pf_pp" "$raw_pp"
row "ping-pong turnaround at 4 KiB, dpdk over net_memif" "$pf_pp4k" "$raw_pp4k"
row "ping-pong turnaround, udp provider, loopback" "$udp_pp" "$raw_pp"
row "critical path of the turnaround, 64 B (memif)" "$pf_cp" "$raw_cp"
row "critical path of the turnaround, 4 KiB (memif)" "$pf_cp4k" "$raw_cp4k"
echo "rate: $n_rate messages (+ warm-up), the other side at full speed; ping-pong: $n_pp round trips"
echo "(4 KiB: $n_pp4k; udp: $n_slow). Whole process inside the round: application loop, library,"
echo "PMD. udp: user mode only (its socket calls' kernel work is not counted). Critical path:"
echo "from the rx burst that brings the request to the reply's tx burst (PF_CRITICAL_PATH_MARKS),"
echo "$n_slow round trips; what the round trip waits for, where the turnaround rows count all."
echo "Mapping memif's regions in and the close's linger (once a run) are left out of every row."

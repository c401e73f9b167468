#!/usr/bin/env bash
# Debian's fi_pingpong (unmodified) between two testbed hosts over pollfab's dpdk provider.
# Usage: testbed_pingpong.sh BUILD_DIR LINK EP SIZES ITERS [VAR=VALUE ...]
#   LINK tap|memif, EP rdm|dgram, SIZES as fi_pingpong -S (all or N), ITERS as -I.
#   VAR=VALUE pairs are exported to both sides (e.g. FI_DPDK_FAULT_DROP=0.01).
#   PINGPONG_MODE=msg|tagged (environment) selects fi_pingpong -m (default msg).
# Creates the testbed (network namespaces) and always removes it, also on failure.
set -euo pipefail
build=$(cd "$1" && pwd); link=$2; ep=$3; sizes=$4; iters=$5; shift 5
for kv in "$@"; do export "$kv"; done
P="$build/apps/pollfab"
limit=${PINGPONG_TIMEOUT:-600}
mode=${PINGPONG_MODE:-msg}
logs=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  "$P" testbed down >/dev/null 2>&1 || true
  rm -rf "$logs"
}
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link"
timeout "$limit" "$P" testbed exec a -- fi_pingpong -p dpdk -e "$ep" -m "$mode" -S "$sizes" -I "$iters" -c \
  > "$logs/server" 2>&1 &
server_pid=$!
sleep 0.5
set +e
timeout "$limit" "$P" testbed exec b -- fi_pingpong -p dpdk -e "$ep" -m "$mode" -S "$sizes" -I "$iters" -c \
  "$("$P" testbed addr a)" > "$logs/client" 2>&1
client_rc=$?
wait "$server_pid"
server_rc=$?
set -e
server_pid=""
grep -v -E "qdisc|rte flow" "$logs/client" || true
echo "client exit $client_rc, server exit $server_rc"
if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
  echo "--- server log"; cat "$logs/server"
  exit 1
fi
n=$(grep -cE '^[0-9]+[kmg]? ' "$logs/client" || true)
[ "$n" -gt 0 ] || { echo "FAIL: no result lines"; exit 1; }
# PF_EXPECT_COUNTER=NAME: the close-time logs (FI_LOG_LEVEL=info) of both sides must show
# NAME=N with N > 0 (e.g. drop_checksum under injected corruption: corrupted packets were made
# and dropped by the receivers' CRC-32C check).
if [ -n "${PF_EXPECT_COUNTER:-}" ]; then
  total=$(cat "$logs/client" "$logs/server" | grep -oE "(^| )${PF_EXPECT_COUNTER}=[0-9]+" \
          | sed 's/.*=//' | awk '{s += $1} END {print s + 0}')
  echo "$PF_EXPECT_COUNTER (both sides, close-time logs): $total"
  [ "$total" -gt 0 ] || { echo "FAIL: $PF_EXPECT_COUNTER is 0"; exit 1; }
fi
# PF_EXPECT_ZERO=NAME: the close-time logs of both sides must show NAME=0 (and show it at all:
# the endpoint totals of each side), e.g. zc_tx_pkts where zero copy is off.
if [ -n "${PF_EXPECT_ZERO:-}" ]; then
  for side in client server; do
    seen=$(grep -oE "(^| )${PF_EXPECT_ZERO}=[0-9]+" "$logs/$side" || true)
    [ -n "$seen" ] || { echo "FAIL: no $PF_EXPECT_ZERO in the $side's close-time log"; exit 1; }
    total=$(echo "$seen" | sed 's/.*=//' | awk '{s += $1} END {print s + 0}')
    echo "$PF_EXPECT_ZERO ($side, close-time log): $total"
    [ "$total" -eq 0 ] || { echo "FAIL: $PF_EXPECT_ZERO is $total on the $side, not 0"; exit 1; }
  done
fi
echo "PASS: $n sizes"

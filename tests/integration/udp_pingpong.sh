#!/usr/bin/env bash
# Debian's fi_pingpong over pollfab's udp provider on loopback, inside a network namespace this
# test creates (and always removes).
# Usage: udp_pingpong.sh BUILD_DIR EP SIZES ITERS [VAR=VALUE ...]
set -euo pipefail
build=$(cd "$1" && pwd); ep=$2; sizes=$3; iters=$4; shift 4
for kv in "$@"; do export "$kv"; done
P="$build/apps/pollfab"
ns=pollfab-udptest-$$
logs=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
timeout "${PF_TIMEOUT:-300}" ip netns exec "$ns" "$P" run -- fi_pingpong -p udp -e "$ep" -S "$sizes" -I "$iters" -c > "$logs/server" 2>&1 &
server_pid=$!
sleep 0.5
set +e
timeout "${PF_TIMEOUT:-300}" ip netns exec "$ns" "$P" run -- fi_pingpong -p udp -e "$ep" -S "$sizes" -I "$iters" -c 127.0.0.1 > "$logs/client" 2>&1
client_rc=$?
wait "$server_pid"; server_rc=$?
set -e
server_pid=""
cat "$logs/client"
echo "client exit $client_rc, server exit $server_rc"
if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then cat "$logs/server"; exit 1; fi
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
echo "PASS: $n sizes"

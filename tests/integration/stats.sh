#!/usr/bin/env bash
# Observability: `pollfab info --stats` on a running process, and the per-peer close-time log.
# Debian's fi_pingpong over pollfab's udp provider on loopback, inside a network namespace this
# test creates (and always removes):
#  1. a pair killed with SIGKILL leaves a stale stats socket: `info --stats PID` reports it and
#     exits 1 without crashing;
#  2. a 1 MiB rdm ping-pong: while it runs, `info --stats SERVER_PID` shows non-zero tx/rx
#     counters and a peer with an RTT (table and --json); the stale socket of step 1 has been
#     swept; at close, FI_LOG_LEVEL=info has the endpoint totals and one line per peer; after a
#     clean exit the socket is gone.
# Usage: stats.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
P="$build/apps/pollfab"
ns=pfstats-test-$$
logs=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$logs"/*; do echo "--- $f"; grep -v ' var \|variable ' "$f" | tail -40 || true; done
  exit 1
}
# Waits up to $2 seconds for process $1 to exit; returns its status (124 if it did not exit).
wait_pid() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
    sleep 0.1
  done
  return 124
}
# Runs fi_pingpong in the namespace in the background; the shell's $! is fi_pingpong itself
# (ip netns exec and pollfab run both exec). Usage: start LOGNAME ARGS...
start() {
  local log=$1; shift
  FI_LOG_LEVEL=info ip netns exec "$ns" "$P" run -- fi_pingpong -p udp -e rdm "$@" \
    > "$logs/$log" 2>&1 &
  pids+=($!)
}

ip netns add "$ns"
ip -n "$ns" link set lo up

# ---- 1. stale socket ----------------------------------------------------------------------
start stale_server -S 1024 -I 100000000
stale_pid=$!
sleep 0.5
start stale_client -S 1024 -I 100000000 127.0.0.1
stale_client=$!
for ((i = 0; i < 100; i++)); do
  "$P" info --stats "$stale_pid" > "$logs/stale_live" 2>&1 && break
  sleep 0.1
done
grep -q "^pid $stale_pid fi_pingpong" "$logs/stale_live" || fail "no stats from the first server"
kill -9 "$stale_pid" "$stale_client"
wait "$stale_pid" "$stale_client" 2>/dev/null || true
set +e
"$P" info --stats "$stale_pid" > "$logs/stale" 2>&1
rc=$?
set -e
cat "$logs/stale"
[ $rc -eq 1 ] || fail "info --stats on a stale socket: exit $rc, expected 1"
stale_sock=$(sed -n "s/^pid $stale_pid: stale stats socket \([^ ]*\) .*/\1/p" "$logs/stale")
[ -n "$stale_sock" ] && [ -S "$stale_sock" ] || fail "stale socket not reported"

# ---- 2. live counters ----------------------------------------------------------------------
start server -S 1048576 -I 2000
server_pid=$!
sleep 0.5
start client -S 1048576 -I 2000 127.0.0.1
client_pid=$!
ok=""
for ((i = 0; i < 300; i++)); do
  if "$P" info --stats "$server_pid" > "$logs/info" 2>&1 &&
     grep -qE '^    tx_pkts=[1-9][0-9]* tx_bytes=[1-9][0-9]* rx_pkts=[1-9]' "$logs/info"; then
    # The srtt_us column of the first peer row (the header names the columns).
    srtt=$(awk '/^    peer  /{for (c = 1; c <= NF; c++) if ($c == "srtt_us") col = c; next}
                col && /^    fi_udp:\/\/127\.0\.0\.1:/{print $col; exit}' "$logs/info")
    if [ -n "$srtt" ] && awk -v v="$srtt" 'BEGIN{exit !(v + 0 > 0)}'; then ok=1; break; fi
  fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
cat "$logs/info"
[ -n "$ok" ] || fail "info --stats: no tx/rx counters or no peer with an RTT"
"$P" info --stats --json "$server_pid" > "$logs/json" || fail "info --stats --json failed"
if command -v jq > /dev/null; then
  jq -e --argjson pid "$server_pid" '.pid == $pid and
      ([.domains[].endpoints[] | select(.stats.tx_pkts > 0 and .stats.rx_pkts > 0)] | length > 0) and
      ([.domains[].endpoints[].peers[] | select(.srtt_ns > 0 and (.addr | startswith("fi_udp://127.0.0.1:")))] | length > 0)' \
    "$logs/json" > /dev/null || fail "--json: no counters or no peer with an RTT"
else
  grep -q '"srtt_ns":[1-9]' "$logs/json" || fail "--json: no RTT"
fi
[ ! -e "$stale_sock" ] || fail "the stale socket $stale_sock was not swept"

set +e
wait_pid "$client_pid" 120; client_rc=$?
wait_pid "$server_pid" 30; server_rc=$?
set -e
grep -E '^[0-9]+[kmg]? ' "$logs/client" || true
echo "client exit $client_rc, server exit $server_rc"
[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "fi_pingpong failed"

# ---- 3. close-time log and socket removal ---------------------------------------------------
grep -E "log_totals\(\).*<info> ep [0-9]+ rdm fi_udp://127\.0\.0\.1:[0-9]+/[0-9]+: tx_pkts=[1-9]" \
  "$logs/server" || fail "no endpoint totals at close"
grep -E "log_totals\(\).*<info> ep [0-9]+ peer fi_udp://127\.0\.0\.1:[0-9]+/[0-9]+ fi_addr [0-9]+: .*rx_pkts=[1-9].* srtt_ns=[1-9]" \
  "$logs/server" || fail "no per-peer line at close"
set +e
"$P" info --stats "$server_pid" > "$logs/after" 2>&1
set -e
grep -q "stale" "$logs/after" && fail "the socket outlived a clean exit"
echo "PASS"

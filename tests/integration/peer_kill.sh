#!/usr/bin/env bash
# Peer failure: kill Debian's fi_pingpong server (SIGKILL, by PID) in the middle of a run; the
# client must exit non-zero, without hanging, within LIMIT seconds (transport.peer_timeout_ms
# is 10 s by default). Usage: peer_kill.sh BUILD_DIR [LIMIT_S] [EP]
#   EP rdm (default) or msg (a connected endpoint whose peer dies mid-connection).
set -euo pipefail
build=$(cd "$1" && pwd); limit=${2:-30}; ep=${3:-rdm}
P="$build/apps/pollfab"
logs=$(mktemp -d)
server_pid=""; client_pid=""
killed=""
cleanup() {
  for p in $server_pid $client_pid; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # A SIGKILLed DPDK process runs no exit hooks: remove the EAL runtime directory it left.
  for p in $killed; do rm -rf "/var/run/dpdk/pollfab-$p"; done
  "$P" testbed down >/dev/null 2>&1 || true
  rm -rf "$logs"
}
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up >/dev/null
# `testbed exec`, `ip netns exec` and stdbuf replace themselves with the command: $! is fi_pingpong.
"$P" testbed exec a -- stdbuf -oL fi_pingpong -p dpdk -e "$ep" -S all -I 1000 -c > "$logs/server" 2>&1 &
server_pid=$!
sleep 0.5
"$P" testbed exec b -- stdbuf -oL fi_pingpong -p dpdk -e "$ep" -S all -I 1000 -c "$("$P" testbed addr a)" > "$logs/client" 2>&1 &
client_pid=$!
sleep 4
grep -qE '^[0-9]+[kmg]? ' "$logs/client" || { echo "FAIL: the run did not get going"; cat "$logs/client"; exit 1; }
kill -9 "$server_pid"
killed="$server_pid $client_pid"
t0=$(date +%s)
rc=""
for _ in $(seq 1 $((limit * 10))); do
  if ! kill -0 "$client_pid" 2>/dev/null; then
    set +e; wait "$client_pid"; rc=$?; set -e
    break
  fi
  sleep 0.1
done
elapsed=$(( $(date +%s) - t0 ))
server_pid=""; client_pid=""
grep -E "error|timed out" "$logs/client" | grep -v -E "qdisc|rte flow|tap_create" || true
if [ -z "$rc" ]; then echo "FAIL: client still running ${limit}s after the server was killed"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: client exited 0 after losing its peer"; exit 1; fi
echo "PASS: client exited $rc, ${elapsed}s after the server was killed"

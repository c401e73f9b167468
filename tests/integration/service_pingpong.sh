#!/usr/bin/env bash
# `pollfab pingpong` with the server named by address and service alone (no name exchange):
# the server takes fabric service 4000 (`-P 4000`), the client runs `pollfab pingpong ADDR:4000`
# (fi_getinfo(ADDR, "4000") and fi_av_insertsvc), data checked.
# Usage: service_pingpong.sh BUILD_DIR LINK SIZES ITERS [EP]
#   EP rdm (default: fi_av_insertsvc) or msg (fi_connect to fi_getinfo(ADDR, "4000")'s dest_addr).
#   LINK tap|memif: dpdk between testbed hosts a and b (the client resolves a's MAC by ARP; the
#   test fails unless the client's close-time counters show arp_learned > 0);
#   LINK udp: the udp provider on loopback in a network namespace this script creates.
# The client also writes every half round trip (--lat --lat-log): one '# size N' line and ITERS
# values per size are checked. On memif both sides must log that they mapped the link's shared
# regions in off the data path: the client at port start, the server at port start or, when the
# link came up, on DPDK's interrupt thread (dpdk_glue/memif_link_watch.hpp), never in a
# progress call.
# PINGPONG_ARGS (environment): more `pollfab pingpong` options for both sides (e.g.
# "--progress auto --wait fd"); PINGPONG_TASKSET: run both sides under `taskset -c` this CPU list.
# Always removes what it created.
set -euo pipefail
build=$(cd "$1" && pwd); link=$2; sizes=$3; iters=$4; ep=${5:-rdm}
P="$build/apps/pollfab"
limit=${PINGPONG_TIMEOUT:-300}
logs=$(mktemp -d)
ns=pollfab-svc-$$
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$link" = udp ]; then ip netns del "$ns" 2>/dev/null || true
  else "$P" testbed down >/dev/null 2>&1 || true; fi
  rm -rf "$logs"
}
trap cleanup EXIT
export FI_LOG_LEVEL=info
if [ "$link" = udp ]; then
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  srv=(ip netns exec "$ns"); cli=(ip netns exec "$ns"); prov=udp; addr=127.0.0.1
else
  "$P" testbed down >/dev/null 2>&1 || true
  "$P" testbed up --link "$link" >/dev/null
  srv=("$P" testbed exec a --); cli=("$P" testbed exec b --); prov=dpdk
  addr=$("$P" testbed addr a)
fi
read -r -a extra <<<"${PINGPONG_ARGS:-}"
pin=()
[ -n "${PINGPONG_TASKSET:-}" ] && pin=(taskset -c "$PINGPONG_TASKSET")
timeout "$limit" "${srv[@]}" "${pin[@]}" "$P" pingpong -p "$prov" -e "$ep" -P 4000 -S "$sizes" \
  -I "$iters" -c "${extra[@]}" > "$logs/server" 2>&1 &
server_pid=$!
set +e
timeout "$limit" "${cli[@]}" "${pin[@]}" "$P" pingpong -p "$prov" -e "$ep" -S "$sizes" -I "$iters" \
  -c --lat --lat-log "$logs/lat" "${extra[@]}" "$addr:4000" > "$logs/client" 2>&1
client_rc=$?
wait "$server_pid"
server_rc=$?
set -e
server_pid=""
grep -E '^(bytes|[0-9]+[kmg]? )' "$logs/client" || true
echo "client exit $client_rc, server exit $server_rc"
if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
  echo "--- client log"; grep -v -E "qdisc|rte flow" "$logs/client" | tail -20
  echo "--- server log"; grep -v -E "qdisc|rte flow" "$logs/server" | tail -20
  exit 1
fi
n=$(grep -cE '^[0-9]+[kmg]? ' "$logs/client" || true)
[ "$n" -gt 0 ] || { echo "FAIL: no result lines"; exit 1; }
if [ "$link" != udp ]; then
  learned=$(grep -oE "arp_learned=[0-9]+" "$logs/client" | sed 's/.*=//' | awk '{s += $1} END {print s + 0}')
  echo "arp_learned (client): $learned"
  [ "$learned" -gt 0 ] || { echo "FAIL: the client did not resolve the server by ARP"; exit 1; }
fi
heads=$(grep -c '^# size ' "$logs/lat" || true)
bad=$(awk -v it="$iters" '/^# size /{if (NR > 1 && c != it) b++; c = 0; next} {c++} END {if (c != it) b++; print b + 0}' "$logs/lat")
echo "--lat-log: $heads sizes"
[ "$heads" -eq "$n" ] && [ "$bad" -eq 0 ] || { echo "FAIL: --lat-log has $heads sizes ($n expected), $bad without $iters values"; exit 1; }
if [ "$link" = memif ]; then
  # The client (role=client) when its port starts; the server's link watch when the link comes
  # up, or its own port start if the client was connected by then. awk, not grep | head: a
  # missing line must reach the FAIL below (grep's status under pipefail and set -e ended the
  # script silently), and head closing early must not SIGPIPE grep.
  kib() {  # kib FILE: the KiB of the first "mapped in" line (at port start or at link up), or 0
    awk 'match($0, /[0-9]+ KiB of memif regions mapped in/) { print substr($0, RSTART) + 0; f = 1; exit }
         END { if (!f) print 0 }' "$1"
  }
  ckib=$(kib "$logs/client"); skib=$(kib "$logs/server")
  grep -q "KiB of memif regions mapped in at port start" "$logs/client" || ckib=0
  grep -qE "KiB of memif regions mapped in (at port start|on the interrupt thread)" \
    "$logs/server" || skib=0
  echo "memif regions mapped in: client $ckib KiB (port start)," \
    "server $skib KiB (port start or, at link up, the interrupt thread)"
  [ "$ckib" -gt 0 ] || { echo "FAIL: the client did not map its memif regions in at port start"; exit 1; }
  [ "$skib" -gt 0 ] ||
    { echo "FAIL: the server did not map its memif regions in off its data path"; exit 1; }
fi
echo "PASS: $n sizes"

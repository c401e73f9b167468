#!/usr/bin/env bash
# pollfab's main job, end to end on a fresh Debian 12 machine (run as root):
#   install what is missing, set up hugepages, build, bring up the NIC-less testbed (two hosts in
#   network namespaces joined by a bridge; DPDK net_tap ports), run ping-pong latency and
#   streaming bandwidth between the two hosts over the dpdk provider for 8 B .. 1 MiB, print the
#   results table, and tear everything down (also on failure).
# Options: --link tap|memif (default tap), --iterations N (default 500).
set -euo pipefail
cd "$(dirname "$0")/.."
link=tap
iters=500
while [ $# -gt 0 ]; do
  case "$1" in
    --link) link=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    *) echo "usage: $0 [--link tap|memif] [--iterations N]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (namespaces, TAP devices, hugepages)" >&2; exit 1; }

scripts/install-deps.sh
scripts/setup-hugepages.sh || true
scripts/build.sh > /tmp/pollfab-demo-build.log 2>&1 || { cat /tmp/pollfab-demo-build.log; exit 1; }
P=$PWD/build/apps/pollfab

server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  "$P" testbed down >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link"

sizes=8,64,512,4k,32k,256k,1m
echo
echo "== pollfab dpdk provider, $link link, host b -> host a, $iters iterations per size =="
timeout 600 "$P" testbed exec a -- "$P" pingpong -S "$sizes" -I "$iters" --bw -c >/tmp/pollfab-demo-server.log 2>&1 &
server_pid=$!
sleep 0.5
timeout 600 "$P" testbed exec b -- "$P" pingpong -S "$sizes" -I "$iters" --bw -c "$("$P" testbed addr a)" 2>/tmp/pollfab-demo-client.err \
  | awk 'NR==1 {printf "%-10s %14s %18s %20s\n", "bytes", "usec/xfer", "MB/sec (pingpong)", "MB/sec (streaming)"; next}
         {printf "%-10s %14s %18s %20s\n", $1, $7, $6, $9}'
wait "$server_pid"
server_pid=""
echo
echo "usec/xfer: half round trip (fi_pingpong's column); streaming: windows of 64 messages, one ack per window."

#!/usr/bin/env bash
# A server blocked in fi_cq_sread / epoll (FI_WAIT_FD) sleeps (does not poll) and wakes on the send
# of a peer in another process (tests/ofi/test_wait_cpu.cpp, OfiWaitCpuRemote): the server in one process,
# its peer in another; LINK memif: dpdk between testbed hosts a and b; LINK udp: the udp
# provider on loopback in a network namespace this script creates.
# Usage: wait_cpu.sh BUILD_DIR TEST_BINARY LINK. Always removes what it created.
set -euo pipefail
build=$(cd "$1" && pwd); bin=$2; link=$3
P="$build/apps/pollfab"
dir=$(mktemp -d)
ns=pollfab-waitcpu-$$
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$link" = udp ]; then ip netns del "$ns" 2>/dev/null || true
  else "$P" testbed down >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
if [ "$link" = udp ]; then
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  srv=(ip netns exec "$ns" env PF_TEST_PROV=udp); cli=("${srv[@]}")
else
  "$P" testbed down >/dev/null 2>&1 || true
  "$P" testbed up --link "$link" >/dev/null
  srv=("$P" testbed exec a -- env PF_TEST_PROV=dpdk); cli=("$P" testbed exec b -- env PF_TEST_PROV=dpdk)
fi
run() { timeout 120 "$@" --gtest_also_run_disabled_tests; }
run "${srv[@]}" PF_WAIT_DIR="$dir" "$bin" --gtest_filter='OfiWaitCpuRemote.DISABLED_Server' \
  > "$dir/server.log" 2>&1 &
server_pid=$!
set +e
run "${cli[@]}" PF_WAIT_DIR="$dir" "$bin" --gtest_filter='OfiWaitCpuRemote.DISABLED_Client' > "$dir/client.log" 2>&1
client_rc=$?
wait "$server_pid"
server_rc=$?
set -e
server_pid=""
grep -E "peer in another process|Failure|Expected|Which|FAILED" "$dir/server.log" || true
echo "client exit $client_rc, server exit $server_rc"
if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
  echo "--- client log"; tail -20 "$dir/client.log"; echo "--- server log"; tail -30 "$dir/server.log"
  exit 1
fi
grep -q "PASSED.*1 test" "$dir/server.log" && grep -q "PASSED.*1 test" "$dir/client.log" || {
  echo "FAIL: a side did not run its test"; exit 1; }
echo PASS

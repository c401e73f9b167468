#!/usr/bin/env bash
# A bad config file is refused before anything starts, naming the file, the key and the reason.
# Usage: config_errors.sh BUILD_DIR
set -euo pipefail
build=$1
P="$build/apps/pollfab"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf '[transport]\nwindow_pkts = 100\n' > "$tmp/bad.toml"
set +e
msg=$("$P" run --config "$tmp/bad.toml" -- touch "$tmp/started" 2>&1); rc=$?
set -e
echo "$msg"
[ $rc -ne 0 ] || { echo "FAIL: bad config accepted"; fail=1; }
[ ! -e "$tmp/started" ] || { echo "FAIL: the command started despite a bad config"; fail=1; }
grep -q "bad.toml" <<<"$msg" && grep -q "transport.window_pkts" <<<"$msg" && grep -q "power of two" <<<"$msg" \
  || { echo "FAIL: message does not name file, key and reason"; fail=1; }

printf '[dpdk]\nmtuu = 1500\n' > "$tmp/unknown.toml"
set +e
msg=$(POLLFAB_CONFIG="$tmp/unknown.toml" LD_LIBRARY_PATH="$build/abi" fi_info -p dpdk 2>&1); rc=$?
set -e
echo "$msg"
[ $rc -ne 0 ] || { echo "FAIL: fi_getinfo accepted an unknown key"; fail=1; }
grep -q "unknown.toml" <<<"$msg" && grep -q "dpdk.mtuu" <<<"$msg" || { echo "FAIL: fi_getinfo error does not name file and key"; fail=1; }

set +e
msg=$(FI_DPDK_FAULT_DROP=2 "$P" run -- true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] && grep -q FI_DPDK_FAULT_DROP <<<"$msg" || { echo "FAIL: bad environment override accepted"; fail=1; }
[ $fail -eq 0 ] && echo "PASS"
exit $fail

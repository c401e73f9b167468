#!/usr/bin/env bash
# Debian's fi_info naming testbed hosts by address and service (issue 10, acceptance 3): in host
# b, `-n <a> -P 4000` for FI_EP_MSG and FI_EP_RDM prints dest_addr = host a's port 4000,
# `-s <b>` prints src_addr = host b's address, plain `-v` has a src_addr in every info.
# Creates the testbed (tap link) and always removes it. Usage: fi_info_testbed.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
P="$build/apps/pollfab"
cleanup() { "$P" testbed down >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link tap >/dev/null
a=$("$P" testbed addr a); b=$("$P" testbed addr b)
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
for t in FI_EP_MSG FI_EP_RDM; do
  out=$("$P" testbed exec b -- fi_info -p dpdk -n "$a" -P 4000 -t "$t" -v 2>&1)
  check "host b: fi_info -n $a -P 4000 -t $t: dest_addr is host a's port 4000" \
    'grep -q "type: $t" <<<"$out" && grep -q "dest_addr: fi_dpdk://$a:4000/1" <<<"$out"'
done
out=$("$P" testbed exec b -- fi_info -p dpdk -s "$b" -v 2>&1)
check "host b: fi_info -s $b: src_addr is host b's address" \
  '[ "$(grep -c "src_addr: fi_dpdk://[0-9a-f:]*/$b:" <<<"$out")" -eq "$(grep -c "^fi_info:" <<<"$out")" ]'
out=$("$P" testbed exec b -- fi_info -p dpdk -v 2>&1)
check "host b: plain fi_info -v has a src_addr in every info" \
  '[ "$(grep -c "src_addr: fi_dpdk://" <<<"$out")" -eq "$(grep -c "^fi_info:" <<<"$out")" ]'
set +e
"$P" testbed exec b -- fi_info -p dpdk -s "$a" >/dev/null 2>&1; rc=$?
set -e
check "host b: fi_info -s <host a's address> is FI_ENODATA (not local)" '[ $rc -eq 61 ]'
exit $fail

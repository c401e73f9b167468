#!/usr/bin/env bash
# Acceptance 3: Debian's fi_info runs unmodified on the drop-in.
# Usage: fi_info.sh BUILD_DIR
set -euo pipefail
build=$1
P="$build/apps/pollfab"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

out=$("$P" run -- fi_info -l)
echo "$out"
check "fi_info -l lists dpdk" 'grep -qx "dpdk:" <<<"$out"'
check "fi_info -l lists pollfab's udp provider" 'grep -qx "udp:" <<<"$out"'
check "fi_info -l lists only pollfab's providers (dpdk, udp, verbs)" '[ -z "$(grep -E "^[^ ].*:$" <<<"$out" | grep -vxE "dpdk:|udp:|verbs:")" ]'

out=$("$P" run -- fi_info -p dpdk -v)
check "fi_info -p dpdk -v prints a full dump" 'grep -q "^fi_info:" <<<"$out" && grep -q "fi_domain_attr:" <<<"$out" && grep -q "type: FI_EP_RDM" <<<"$out" && grep -q "type: FI_EP_DGRAM" <<<"$out"'

out=$("$P" run -- fi_info -e)
check "fi_info -e lists FI_DPDK_* parameters" 'grep -q "^# FI_DPDK_FAULT_DROP" <<<"$out" && grep -q "^# FI_DPDK_MTU" <<<"$out"'

out=$("$P" run -- fi_info -p dpdk -t FI_EP_RDM -c FI_TAGGED)
check "hints: tagged RDM matches" 'grep -q "FI_EP_RDM" <<<"$out"'
set +e
"$P" run -- fi_info -p dpdk -t FI_EP_SOCK_STREAM >/dev/null 2>&1; rc=$?
set -e
check "impossible hints give FI_ENODATA (exit 61)" '[ $rc -eq 61 ]'

# Addressing by node and service (issue 10): every info has a src_addr; -n/-P name the
# destination; -s names the source (with FI_SOURCE), which must be the port's own address.
out=$("$P" run -- fi_info -p dpdk -v)
check "every dpdk info has a src_addr" '[ "$(grep -c "^    src_addr: fi_dpdk://" <<<"$out")" -eq "$(grep -c "^fi_info:" <<<"$out")" ]'
out=$("$P" run -- fi_info -p udp -v)
check "every udp info has a src_addr" '[ "$(grep -c "^    src_addr: fi_udp://127.0.0.1:" <<<"$out")" -eq "$(grep -c "^fi_info:" <<<"$out")" ]'
out=$("$P" run -- fi_info -p dpdk -n 198.18.0.1 -P 4000 -t FI_EP_RDM -v)
check "fi_info -n ADDR -P 4000: dest_addr is that port" 'grep -q "dest_addr: fi_dpdk://198.18.0.1:4000/1" <<<"$out"'
out=$("$P" run -- fi_info -p dpdk -n 198.18.0.1 -P 4000 -t FI_EP_MSG -v)
check "fi_info -t FI_EP_MSG -n ADDR -P 4000: a connected endpoint to that port" 'grep -q "type: FI_EP_MSG" <<<"$out" && grep -q "dest_addr: fi_dpdk://198.18.0.1:4000/1" <<<"$out"'
out=$(FI_DPDK_IPV4=198.18.0.2 "$P" run -- fi_info -p dpdk -s 198.18.0.2 -P 4001 -v)
check "fi_info -s ADDR -P 4001: src_addr is that address and port" 'grep -q "src_addr: fi_dpdk://198.18.0.2:4001/0" <<<"$out" && ! grep -q "dest_addr: fi_" <<<"$out"'
set +e
FI_DPDK_IPV4=198.18.0.2 "$P" run -- fi_info -p dpdk -s 198.18.0.3 >/dev/null 2>&1; rc=$?
"$P" run -- fi_info -p udp -n no-such-host.invalid -P 4000 >/dev/null 2>&1; rc2=$?
set -e
check "a source that is not the port's address is FI_ENODATA" '[ $rc -eq 61 ]'
check "a host name that does not resolve is FI_ENODATA" '[ $rc2 -eq 61 ]'

ver=$("$P" run -- fi_info --version | tr '\n' ' ')
check "fi_info --version reports API 1.17.0" 'grep -q "1.17.0" <<<"$ver"'
exit $fail

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
check "fi_info -l lists only pollfab's providers (dpdk, udp)" '[ -z "$(grep -E "^[^ ].*:$" <<<"$out" | grep -vxE "dpdk:|udp:")" ]'

out=$("$P" run -- fi_info -p dpdk -v)
check "fi_info -p dpdk -v prints a full dump" 'grep -q "^fi_info:" <<<"$out" && grep -q "fi_domain_attr:" <<<"$out" && grep -q "type: FI_EP_RDM" <<<"$out" && grep -q "type: FI_EP_DGRAM" <<<"$out"'

out=$("$P" run -- fi_info -e)
check "fi_info -e lists FI_DPDK_* parameters" 'grep -q "^# FI_DPDK_FAULT_DROP" <<<"$out" && grep -q "^# FI_DPDK_MTU" <<<"$out"'

out=$("$P" run -- fi_info -p dpdk -t FI_EP_RDM -c FI_TAGGED)
check "hints: tagged RDM matches" 'grep -q "FI_EP_RDM" <<<"$out"'
set +e
"$P" run -- fi_info -p dpdk -t FI_EP_MSG >/dev/null 2>&1; rc=$?
set -e
check "impossible hints give FI_ENODATA (exit 61)" '[ $rc -eq 61 ]'

ver=$("$P" run -- fi_info --version | tr '\n' ' ')
check "fi_info --version reports API 1.17.0" 'grep -q "1.17.0" <<<"$ver"'
exit $fail

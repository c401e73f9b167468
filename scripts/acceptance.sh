#!/usr/bin/env bash
# The issue's end-to-end checks with Debian's unmodified binaries, at full length (several
# minutes over the TAP path; `scripts/test.sh` runs shorter versions). Run as root after a build.
#   1. fi_pingpong -p dpdk -e rdm -S all -I 1000 -c         (tap)
#   2. fi_pingpong -p dpdk -e dgram -S all -I 1000 -c       (tap)
#   3. 1. with FI_DPDK_FAULT_DROP/DUP/REORDER = 0.01        (tap)
# Extra arguments select checks by number (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/apps/pollfab ] || scripts/build.sh
t=tests/integration/testbed_pingpong.sh
export PINGPONG_TIMEOUT=${PINGPONG_TIMEOUT:-1500}
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(1 2 3)
rc=0
for n in "${want[@]}"; do
  case $n in
    1) echo "== rdm, tap"; $t build tap rdm all 1000 || rc=1 ;;
    2) echo "== dgram, tap"; $t build tap dgram all 1000 || rc=1 ;;
    3) echo "== rdm, tap, 1% drop/dup/reorder"
       $t build tap rdm all 1000 FI_DPDK_FAULT_DROP=0.01 FI_DPDK_FAULT_DUP=0.01 FI_DPDK_FAULT_REORDER=0.01 || rc=1 ;;
  esac
done
exit $rc

#!/usr/bin/env bash
# The issues' end-to-end checks at full length (about an hour in all, most of it over the TAP
# path; `scripts/test.sh` runs shorter versions of each). Run as root after a build.
#   1. fi_pingpong -p dpdk -e rdm -S all -I 1000 -c         (tap)
#   2. fi_pingpong -p dpdk -e dgram -S all -I 1000 -c       (tap)
#   3. 1. with FI_DPDK_FAULT_DROP/DUP/REORDER = 0.01        (tap)
#   4. fi_pingpong -e msg -S all -I 1000 -c                 (tap)
#   5. -S all -I 1000 -c over memif: rdm, rdm -m tagged, msg, msg with 2% drop and 1% dup/reorder
#   6. fi_pingpong -p udp -e msg -S all -I 1000 -c          (loopback)
#   7. pollfab pingpong --progress auto --wait fd -S all -I 1000 -c by service, tap (~30 min)
#   8. verbs, in the soft-RoCE guest: fi_pingpong -p verbs -e rdm [-m tagged] and -e msg,
#      -S all -I 50 -c, and Open MPI (2 ranks, mtl ofi and btl ofi) (~7 min; needs
#      `scripts/softroce-uml.sh ensure`)
#   9. meson's suite 'long' (tests scripts/test.sh leaves out for the CI budget)
# Extra arguments select checks by number (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/apps/pollfab ] || scripts/build.sh
t=tests/integration/testbed_pingpong.sh
export PINGPONG_TIMEOUT=${PINGPONG_TIMEOUT:-1500}
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(1 2 3 4 5 6 7 8 9)
rc=0
for n in "${want[@]}"; do
  case $n in
    1) echo "== rdm, tap"; $t build tap rdm all 1000 || rc=1 ;;
    2) echo "== dgram, tap"; $t build tap dgram all 1000 || rc=1 ;;
    3) echo "== rdm, tap, 1% drop/dup/reorder"
       $t build tap rdm all 1000 FI_DPDK_FAULT_DROP=0.01 FI_DPDK_FAULT_DUP=0.01 FI_DPDK_FAULT_REORDER=0.01 || rc=1 ;;
    4) echo "== msg, tap"; $t build tap msg all 1000 || rc=1 ;;
    5) echo "== memif: rdm, tagged, msg, msg with faults"
       $t build memif rdm all 1000 || rc=1
       $t build memif rdm all 1000 PINGPONG_MODE=tagged || rc=1
       $t build memif msg all 1000 || rc=1
       $t build memif msg all 1000 FI_DPDK_FAULT_DROP=0.02 FI_DPDK_FAULT_DUP=0.01 FI_DPDK_FAULT_REORDER=0.01 || rc=1 ;;
    6) echo "== msg, udp"; tests/integration/udp_pingpong.sh build msg all 1000 || rc=1 ;;
    7) echo "== pollfab pingpong, automatic progress, FD waits, tap"
       PINGPONG_ARGS="--progress auto --wait fd" PINGPONG_TIMEOUT=2400 \
         tests/integration/service_pingpong.sh build tap all 1000 || rc=1 ;;
    8) echo "== verbs, soft-RoCE guest, -S all -I 50"
       RXE_TIMEOUT=2400 tests/verbs/run.sh build full || rc=1 ;;
    9) echo "== meson suite long"
       meson test -C build --print-errorlogs --num-processes 1 --suite long || rc=1 ;;
  esac
done
exit $rc

#!/usr/bin/env bash
# Runs an MPI program across testbed hosts on pollfab (`pollfab testbed mpirun`), creating the
# testbed and always removing it.
# Usage: run.sh BUILD_DIR LINK HOSTS [MPIRUN OPTIONS...] -- PROGRAM [ARGS...]
#   LINK tap|memif, HOSTS as `testbed up --hosts`; the rest goes to `pollfab testbed mpirun`.
# Passes when mpirun exits 0 and the program printed its PASS line.
# PF_EXPECT_COUNTERS="NAME ..." (environment): the ranks' close-time logs (FI_LOG_LEVEL=info is
# set for them) must show each NAME=N summed over every endpoint with a total above zero (e.g.
# rma_ops atomic_ops: one-sided traffic really went through pollfab).
set -euo pipefail
build=$(cd "$1" && pwd); link=$2; hosts=$3; shift 3
P="$build/apps/pollfab"
log=$(mktemp)
cleanup() { "$P" testbed down >/dev/null 2>&1 || true; rm -f "$log"; }
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link "$link" --hosts "$hosts"
[ -n "${PF_EXPECT_COUNTERS:-}" ] && export FI_LOG_LEVEL=info
set +e
timeout "${PF_TIMEOUT:-300}" "$P" testbed mpirun "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "mpirun exit $rc"
[ "$rc" -eq 0 ] || exit 1
grep -q "PASS" "$log" || { echo "FAIL: no PASS line"; exit 1; }
for name in ${PF_EXPECT_COUNTERS:-}; do
  total=$(grep -oE "(^| )${name}=[0-9]+" "$log" | sed 's/.*=//' | awk '{s += $1} END {print s + 0}')
  echo "$name (all ranks' endpoints): $total"
  [ "$total" -gt 0 ] || { echo "FAIL: $name is 0"; exit 1; }
done

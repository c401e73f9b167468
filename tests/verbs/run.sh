#!/usr/bin/env bash
# The verbs provider's tests on real kernel RDMA devices: boots the soft-RoCE guest
# (scripts/softroce-uml.sh; User-Mode Linux with rxe0 on 198.18.0.1) and runs
# tests/verbs/guest_checks.sh in it against this build. The guest kernel must be built
# (scripts/test.sh runs `scripts/softroce-uml.sh ensure` first; ~9 min once per machine).
# Usage: run.sh BUILD_DIR [suite|full]   (guest_checks.sh says what each mode runs)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
uml=${W:-/var/cache/pollfab/softroce-uml}/uml-build/linux
if [ ! -x "$uml" ]; then
  echo "FAIL: no soft-RoCE guest kernel at $uml (run scripts/softroce-uml.sh ensure)"
  exit 1
fi
cd "$src"  # the guest runs the command in this directory (the host's / is visible read-only)
RXE_TIMEOUT=${RXE_TIMEOUT:-900} scripts/softroce-uml.sh run sh tests/verbs/guest_checks.sh "$build" "${2:-suite}"

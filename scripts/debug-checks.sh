#!/usr/bin/env bash
# Data-path invariant checks (part of scripts/test.sh): a third build (./build-debug-checks,
# meson -Ddebug_checks=true, udp provider only) of the transport's unit and property tests, run
# with the checks compiled in. They trap where an invariant of the data path fails: a bundle
# delivered that decode() did not accept, a pool given back more than it gave out, a round
# of progress that skipped the peer walk while a peer had work due (docs/transport.md, "Time").
# About 3.5 minutes on 2 cores from a fresh checkout, build included (200 s measured);
# scripts/test.sh runs these tests only here.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-debug-checks/build.ninja ]; then
  meson setup build-debug-checks --buildtype=debugoptimized -Ddebug_checks=true -Ddpdk=disabled \
    >/dev/null
fi
ninja -C build-debug-checks tests/test_transport tests/test_property
# meson's suite 'checked' (tests/meson.build): the same tests, environment and property seed as
# the main build's, which scripts/test.sh leaves to this run. The two targets above are all it
# needs (--no-rebuild: the rest of this build is never compiled).
echo "debug checks: the transport's unit and property tests (suite 'checked')"
meson test -C build-debug-checks --no-rebuild --print-errorlogs --suite checked
echo "debug checks: passed"

#!/usr/bin/env bash
# Data-path invariant checks (part of scripts/test.sh): a third build (./build-debug-checks,
# meson -Ddebug_checks=true, udp provider only) of the transport's unit and property tests, run
# with the checks compiled in. They trap where an invariant of the data path fails: a bundle
# delivered that decode() did not accept, a pool given back more than it gave out, a round
# of progress that skipped the peer walk while a peer had work due (docs/transport.md, "Time").
# About a minute on 2 cores, build included.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-debug-checks/build.ninja ]; then
  meson setup build-debug-checks --buildtype=debugoptimized -Ddebug_checks=true -Ddpdk=disabled \
    >/dev/null
fi
ninja -C build-debug-checks tests/test_transport tests/test_property
echo "debug checks: transport unit tests"
build-debug-checks/tests/test_transport --gtest_brief=1
echo "debug checks: property tests"
RC_PARAMS="max_success=1000 seed=20240917" FI_LOG_LEVEL=warn \
  build-debug-checks/tests/test_property --gtest_brief=1
echo "debug checks: passed"

#!/usr/bin/env bash
# ThreadSanitizer run (part of scripts/test.sh): a second build (./build-tsan, meson
# -Db_sanitize=thread, udp provider only: DPDK's libraries are not instrumented) of the core
# unit tests and of test_ofi_threads (the multi-threaded OFI API tests, which test_ofi_api also
# holds), then both run under it: 4 threads per node on one FI_THREAD_SAFE endpoint under
# faults with automatic progress, the threading levels, automatic progress's own tests, and
# objects closed under a blocked waiter. Any ThreadSanitizer report fails the run (exit code
# 66). About 4 minutes on 2 cores from a fresh checkout, build included; the timing tests
# (OfiWaitCpu) are left out: TSan slows everything 5-15x.
# Run as root (the OFI tests create a network namespace).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-tsan/build.ninja ]; then
  meson setup build-tsan --buildtype=debugoptimized -Db_sanitize=thread -Ddpdk=disabled >/dev/null
fi
ninja -C build-tsan tests/test_core tests/test_ofi_threads
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
echo "tsan: core unit tests"
build-tsan/tests/test_core --gtest_brief=1
echo "tsan: multi-threaded OFI API tests (udp)"
tests/ofi/run_in_netns.sh build-tsan/tests/test_ofi_threads --gtest_brief=1 \
  --gtest_filter='OfiThreadStress*:*OfiThreads*:*OfiThreadLevels*:OfiAutoProgress*:OfiWait.SignalWakesAndCloseCancelsABlockedReader:OfiWaitSet.ErrorsAndCloseUnderAWaiter'
echo "tsan: no reports"

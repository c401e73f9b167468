#!/usr/bin/env bash
# Runs an OFI API test binary on the dpdk provider in testbed host a (memif link), creating the
# testbed and always removing it. Usage: run_in_testbed.sh BUILD_DIR BINARY [ARGS...]
set -euo pipefail
build=$(cd "$1" && pwd); shift
P="$build/apps/pollfab"
cleanup() { "$P" testbed down >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$P" testbed down >/dev/null 2>&1 || true
"$P" testbed up --link memif >/dev/null
timeout "${PF_TIMEOUT:-300}" "$P" testbed exec a -- env PF_TEST_PROV=dpdk "$@"

#!/usr/bin/env bash
# Runs an OFI API test binary inside a network namespace this script creates (loopback only, no
# route out) and always removes. Usage: run_in_netns.sh BINARY [ARGS...]
set -euo pipefail
ns=pollfab-ofitest-$$
cleanup() { ip netns del "$ns" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" "$@"

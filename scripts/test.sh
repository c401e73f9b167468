#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs `meson test` (unit, ABI and
# integration suites), then the ThreadSanitizer run (scripts/tsan.sh), clang's thread-safety
# analysis (scripts/thread-safety.sh) and the data-path invariant checks
# (scripts/debug-checks.sh) unless test names were given. Exits 0 only if every test passes. Idempotent; run as root (the
# integration tests create network namespaces and TAP devices).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The soft-RoCE guest for the verbs tests: its kernel is built once per machine (~9 min) and
# kept outside the checkout (/var/cache/pollfab/softroce-uml).
scripts/softroce-uml.sh ensure
scripts/setup-hugepages.sh || true
scripts/build.sh
# Integration tests share the testbed's fixed namespaces: run them one at a time. Without test
# names, suite 'long' is left out (scripts/acceptance.sh runs it; the CI budget), and so is
# suite 'checked' (the transport's unit and property tests): scripts/debug-checks.sh below runs
# the same tests with the same seed in a build whose data-path invariant checks trap.
if [ $# -eq 0 ]; then
  meson test -C build --print-errorlogs --num-processes 1 --no-suite long --no-suite checked
else
  meson test -C build --print-errorlogs --num-processes 1 "$@"
fi
# The whole suite (no test names given) also runs the ThreadSanitizer build, clang's
# thread-safety analysis (docs/threading.md) and the transport's tests with the data-path
# invariant checks compiled in (scripts/debug-checks.sh).
[ $# -gt 0 ] || scripts/tsan.sh
[ $# -gt 0 ] || scripts/thread-safety.sh
[ $# -gt 0 ] || scripts/debug-checks.sh

# Sourced by the benchmark scripts (bench-compare.sh, bench-rate.sh, bench-loss.sh,
# bench-instructions.sh, bench-profile.sh) after they set $P (the pollfab command):
# $out (a temporary directory for the logs), $bg (the pid of a background
# server, which the cleanup kills) and an EXIT trap that also takes the testbed down and removes
# $out (KEEP_LOGS=1 keeps it).
out=$(mktemp -d)
bg=""
cleanup() {
  [ -n "$bg" ] && kill "$bg" 2>/dev/null || true
  wait 2>/dev/null || true
  "$P" testbed down >/dev/null 2>&1 || true
  [ -n "${KEEP_LOGS:-}" ] && echo "logs kept in $out" || rm -rf "$out"
}
trap cleanup EXIT
# xcore: the cache-line round trip CPU0<->CPU1 in ns (pollfab-bench-xcore: the vCPUs' placement).
xcore() { build/apps/pollfab-bench-xcore --cpus 0,1 --ms 100 | sed -n 's/^xcore_rtt_ns=//p'; }

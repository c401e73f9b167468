# Sourced by the benchmark scripts (bench-compare.sh, bench-rate.sh, bench-loss.sh,
# bench-instructions.sh, bench-profile.sh, bench-turnaround.sh, bench-ab.sh) after they set $P
# (the pollfab command):
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
# probe: one xcore reading, or n/a (every probe leaves a token, so a list of them stays aligned).
probe() { local x; x=$(xcore 2>/dev/null || true); echo "${x:-n/a}"; }
# placement_class PROBE...: near if every probe read under 150 ns, far if every one read 150 or
# more, else mixed (the host moved the vCPUs during the runs between the probes, or a probe
# failed). A near and a far run differ 2-4x on this VM (docs/performance.md, "The floor, and
# why it moves"), so bench-compare and bench-rate class their ratios by the probes beside them.
placement_class() {
  local x near=0 far=0
  for x in "$@"; do
    case $x in ''|*[!0-9]*) echo mixed; return ;; esac
    if [ "$x" -lt 150 ]; then near=1; else far=1; fi
  done
  if [ "$near" = 1 ] && [ "$far" = 0 ]; then echo near
  elif [ "$far" = 1 ] && [ "$near" = 0 ]; then echo far
  else echo mixed; fi
}
# pair NAME SERVER_CMD... :: CLIENT_CMD...: the server in the background, then the client (each
# bounded to 120 s); the client's output lands in $out/NAME, the server's in $out/NAME.s ("n/a"
# in $out/NAME and a line on stderr, named for the calling script, if the pair failed).
pair() {
  local name=$1; shift
  local -a srv=() cli=()
  while [ "$1" != "::" ]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  timeout 120 "${srv[@]}" > "$out/$name.s" 2>&1 &
  bg=$!
  sleep 0.7
  if ! timeout 120 "${cli[@]}" > "$out/$name" 2>&1; then
    echo "$(basename "$0" .sh): $name failed: $(tail -2 "$out/$name" | tr '\n' ' ')" >&2
    echo "n/a" > "$out/$name"
  fi
  wait "$bg" 2>/dev/null || true
  bg=""
}

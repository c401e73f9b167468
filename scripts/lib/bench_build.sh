# Sourced by the benchmark scripts (from the checkout's root) for their common preamble:
#   need_root NAME     exits with "NAME: run as root" unless run as root
#   bench_build [--no-deps]
#                      installs the dependencies (scripts/install-deps.sh, quietly; not with
#                      --no-deps) and builds (scripts/build.sh), its log in
#                      /tmp/pollfab-bench-build.log, printed and exit 1 if the build fails
need_root() {
  [ "$(id -u)" -eq 0 ] || { echo "$1: run as root" >&2; exit 1; }
}
bench_build() {
  [ "${1:-}" = --no-deps ] || scripts/install-deps.sh >/dev/null
  scripts/build.sh >/tmp/pollfab-bench-build.log 2>&1 || { cat /tmp/pollfab-bench-build.log; exit 1; }
}

#!/usr/bin/env bash
# Builds and runs fuzz_packet, the libFuzzer target for the pollfab packet decoder
# (wire::decode) and the transport engine's receive path (Engine::on_packet, RDM and DGRAM);
# see tests/fuzz/fuzz_packet.cpp.
#
#   tests/fuzz/run.sh <srcdir> <builddir> <seconds> [extra libFuzzer args...]
#
# The project builds with g++, so this script compiles what the target needs itself:
# transport/*.cpp, transport/testing/*.cpp, lib/util/*.cpp and tests/fuzz/fuzz_packet.cpp with
#   clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
# into <builddir>/fuzz/ (rebuilt only when a source changed). It then writes seed packets
# (captured from a normal exchange between two engines, so they follow the current wire format)
# to <builddir>/fuzz/seeds/ and fuzzes for <seconds>, growing <builddir>/fuzz/corpus/.
#
# Exit status: 0 if nothing was found in the time; non-zero on a crash, leak, UB report,
# timeout or invariant violation (the input is saved as <builddir>/fuzz/crashes/crash-*,
# leak-*, timeout-*; replay it with `<builddir>/fuzz/fuzz_packet <file>`); 77 (skipped)
# if clang++-14 or its libFuzzer runtime is missing (scripts/install-deps.sh installs both:
# Debian packages clang-14 and libclang-rt-14-dev).
#
# Quick run (meson test 'fuzz_packet', ~20 s):  tests/fuzz/run.sh . build 20
# Long run (an hour; keeps the corpus in build/fuzz/corpus for the next run):
#   tests/fuzz/run.sh . build 3600
# More cores: tests/fuzz/run.sh . build 3600 -fork=4   (any libFuzzer flag can be appended)
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 <srcdir> <builddir> <seconds> [libFuzzer args...]" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
mkdir -p "$2"
BUILD=$(cd "$2" && pwd)
SECS=$3
shift 3

CXX=${FUZZ_CXX:-clang++-14}
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "fuzz_packet: $CXX not found (apt-get install clang-14 libclang-rt-14-dev); skipping" >&2
  exit 77
fi

OUT=$BUILD/fuzz
mkdir -p "$OUT/obj" "$OUT/corpus" "$OUT/crashes"
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=all -I"$SRC" -Wall -Wno-unused-parameter
       -Wno-missing-field-initializers)

# Sources of the target; the stamp covers them, every header they may include and the flags.
mapfile -t SRCS < <(cd "$SRC" && ls transport/*.cpp transport/testing/*.cpp lib/util/*.cpp \
                      tests/fuzz/fuzz_packet.cpp)
STAMP=$( (cd "$SRC" && cat "${SRCS[@]}" $(find transport lib/util tests/fuzz tests/unit/transport \
          -name '*.hpp' -o -name '*.h' | sort); echo "$CXX ${FLAGS[*]}") | sha256sum | cut -d' ' -f1)
BIN=$OUT/fuzz_packet
if [ ! -x "$BIN" ] || [ "$(cat "$OUT/stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "fuzz_packet: compiling ${#SRCS[@]} sources with $CXX"
  rm -f "$OUT/stamp" "$OUT"/obj/*.o
  # One compiler per CPU (the suite runs its tests one at a time): on a fresh machine this
  # compile is most of the test's time.
  objs=()
  jobs_max=$(nproc)
  running=0
  failed=0
  for s in "${SRCS[@]}"; do
    o=$OUT/obj/$(echo "$s" | tr '/' '_').o
    objs+=("$o")
    if ((running >= jobs_max)); then
      wait -n || failed=1
      running=$((running - 1))
    fi
    nice -n 10 "$CXX" "${FLAGS[@]}" -c "$SRC/$s" -o "$o" &
    running=$((running + 1))
  done
  while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
  done
  if ((failed)); then
    echo "fuzz_packet: a source did not compile (above)" >&2
    exit 1
  fi
  if ! nice -n 10 "$CXX" "${FLAGS[@]}" "${objs[@]}" -o "$BIN.tmp" -lfmt -lpthread; then
    echo "fuzz_packet: link failed (is libclang-rt-14-dev, the libFuzzer runtime, installed?)" >&2
    exit 77
  fi
  mv "$BIN.tmp" "$BIN"
  echo "$STAMP" > "$OUT/stamp"
fi

rm -rf "$OUT/seeds"
PF_FUZZ_WRITE_SEEDS=$OUT/seeds "$BIN"

echo "fuzz_packet: fuzzing for ${SECS}s (corpus $OUT/corpus, crashes in $OUT/crashes/)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# libFuzzer's own failure exit code is 77, which meson reads as "skipped": use 1.
exec "$BIN" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -dict="$SRC/tests/fuzz/packet.dict" -artifact_prefix="$OUT/crashes/" "$@" \
  "$OUT/corpus" "$OUT/seeds"

#!/usr/bin/env bash
# Configures (once) and builds pollfab into ./build. Extra args go to `meson setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=debugoptimized "$@"
fi
ninja -C build

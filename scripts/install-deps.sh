#!/usr/bin/env bash
# Installs every Debian 12 package pollfab needs to build, test, run the demo and the benchmarks
# (rdma-core for the verbs provider; the last line builds the soft-RoCE guest kernel, tests/verbs).
# Idempotent: installs only what is missing. Needs root (or sudo) and Debian's package registry.
set -euo pipefail

PKGS=(
  build-essential g++ meson ninja-build pkg-config python3 git
  libfabric-dev libfabric1 libfabric-bin
  dpdk dpdk-dev libdpdk-dev
  libhwloc-dev hwloc
  libtomlplusplus-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev valgrind linux-perf
  clang-14 libclang-rt-14-dev
  iproute2 procps util-linux binutils
  openmpi-bin libopenmpi-dev
  rdma-core ibverbs-providers ibverbs-utils libibverbs-dev librdmacm-dev rdmacm-utils perftest
  gcc make flex bison bc libc6-dev xz-utils busybox-static cpio
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Mounts hugetlbfs and reserves 2 MiB hugepages for DPDK (default 512 pages = 1 GiB).
# Idempotent; needs root. Usage: scripts/setup-hugepages.sh [PAGES]
set -euo pipefail
pages=${1:-512}
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-hugepages: needs root; skipping (pollfab falls back to --no-huge)" >&2
  exit 0
fi
mkdir -p /dev/hugepages
if ! grep -q " /dev/hugepages hugetlbfs " /proc/mounts; then
  mount -t hugetlbfs nodev /dev/hugepages || { echo "setup-hugepages: cannot mount hugetlbfs" >&2; exit 0; }
fi
cur=$(cat /proc/sys/vm/nr_hugepages)
if [ "$cur" -lt "$pages" ]; then
  echo "$pages" > /proc/sys/vm/nr_hugepages || true
fi
echo "setup-hugepages: $(grep HugePages_Total /proc/meminfo | awk '{print $2}') pages total, $(grep HugePages_Free /proc/meminfo | awk '{print $2}') free"

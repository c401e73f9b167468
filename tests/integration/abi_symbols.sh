#!/usr/bin/env bash
# Acceptance 2: the drop-in's default-versioned functions and version nodes equal the reference
# libfabric 1.17's, nothing else is exported, and no pollfab binary needs the reference library.
# Usage: abi_symbols.sh BUILD_DIR
set -euo pipefail
build=$1
ref=/usr/lib/x86_64-linux-gnu/libfabric.so.1
ours=$build/abi/libfabric.so.1
fail=0

# objdump -T columns: address, binding, type, section, size, version, name.
defaults() { objdump -T "$1" | awk '$2=="g" && $4==".text" && $6 !~ /^\(/ {print $6, $7}' | sort; }
nodes() { objdump -T "$1" | awk '$4=="*ABS*" {print $7}' | sort; }
compat() { objdump -T "$1" | awk '$4==".text" && $6 ~ /^\(/ {print $6, $7}' | sort; }

if ! diff <(defaults "$ref") <(defaults "$ours"); then echo "FAIL: default-versioned functions differ"; fail=1; fi
if ! diff <(nodes "$ref") <(nodes "$ours"); then echo "FAIL: version nodes differ"; fail=1; fi
n=$(defaults "$ours" | wc -l)
[ "$n" -eq 16 ] || { echo "FAIL: expected 16 default-versioned functions, got $n"; fail=1; }
extra=$(objdump -T "$ours" | awk '$2=="g" && ($4==".text" || $4==".data" || $4==".bss") {print $7}' | grep -v '^fi_' || true)
[ -z "$extra" ] || { echo "FAIL: unexpected exports: $extra"; fail=1; }
soname=$(readelf -d "$ours" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libfabric.so.1" ] || { echo "FAIL: SONAME is '$soname'"; fail=1; }
echo "compat entries of the reference (not provided yet): $(compat "$ref" | wc -l)"

# No pollfab binary or library may need the reference libfabric (or any libfabric at all,
# except the drop-in itself, which is libfabric.so.1). Test clients of the API (under tests/,
# e.g. test_ofi_api) link the drop-in on purpose: theirs must resolve to the drop-in, never to
# the reference, with no LD_LIBRARY_PATH help. So does the message-rate benchmark
# (apps/pollfab-bench-rate), a libfabric application that scripts/bench-rate.sh also runs on the
# reference by LD_LIBRARY_PATH.
dropin=$(readlink -f "$ours")
while IFS= read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*libfabric'; then
    case "$f" in
      "$build"/tests/*|"$build"/apps/pollfab-bench-rate)
        got=$(env -u LD_LIBRARY_PATH ldd "$f" | awk '$1 == "libfabric.so.1" {print $3}')
        if [ -z "$got" ] || [ "$(readlink -f "$got")" != "$dropin" ]; then
          echo "FAIL: $f loads libfabric.so.1 from '$got', not the drop-in $dropin"; fail=1
        fi ;;
      *) echo "FAIL: $f needs a libfabric: $(readelf -d "$f" | grep NEEDED | grep libfabric)"; fail=1 ;;
    esac
  fi
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'readelf -h "$1" >/dev/null 2>&1 && echo "$1"' _ {} \;)

[ $fail -eq 0 ] && echo "PASS: ABI matches libfabric 1.17 ($n functions, $(nodes "$ours" | wc -l) version nodes)"
exit $fail

#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over the library's own sources: the locks
# (lib/util/spinlock.hpp) and what they guard are annotated (lib/util/thread_annotations.hpp);
# a member touched without its lock, or a *_locked function called without it, fails here.
# The project builds with g++, which ignores the annotations: this compiles each translation
# unit of lib/, providers/ and transport/ with clang++ -fsyntax-only, using the flags meson
# recorded in <build>/compile_commands.json. About a minute on 2 cores.
# Usage: scripts/thread-safety.sh [build-dir]   (default: build; run scripts/build.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CLANG=$(command -v clang++-14 || command -v clang++ || true)
[ -n "$CLANG" ] || { echo "thread-safety: clang++ not found (scripts/install-deps.sh installs clang)" >&2; exit 1; }
[ -f "$BUILD/compile_commands.json" ] || { echo "thread-safety: no $BUILD/compile_commands.json (build first)" >&2; exit 1; }
python3 - "$BUILD" "$CLANG" <<'PY'
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
build, clang = sys.argv[1], sys.argv[2]
root = os.getcwd()
units = []
for e in json.load(open(os.path.join(build, 'compile_commands.json'))):
    f = os.path.normpath(os.path.join(e['directory'], e['file']))
    rel = os.path.relpath(f, root)
    if not rel.endswith('.cpp') or not rel.split('/')[0] in ('lib', 'providers', 'transport'):
        continue
    args = shlex.split(e['command'])[1:]
    keep, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ('-o', '-MF', '-MQ', '-c'):
            skip = a != '-c'
            continue
        if a in ('-MD', '-Winvalid-pch', '-fdiagnostics-color=always') or a == e['file']:
            continue
        keep.append(a)
    units.append((rel, e['directory'], keep + ['-fsyntax-only', '-Wno-unknown-warning-option',
                                              '-Wthread-safety', '-Werror=thread-safety', e['file']]))
def run(u):
    rel, d, args = u
    p = subprocess.run([clang] + args, cwd=d, capture_output=True, text=True)
    bad = [l for l in p.stderr.splitlines() if 'thread-safety' in l or 'error:' in l]
    return rel, p.returncode, p.stderr if (p.returncode or bad) else ''
fails = 0
with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
    for rel, rc, err in ex.map(run, units):
        if rc:
            fails += 1
            sys.stdout.write(f'--- {rel}\n{err}')
print(f'thread-safety: {len(units)} translation units, {fails} with errors')
sys.exit(1 if fails else 0)
PY

#!/usr/bin/env python3
"""pollfab's layers, enforced (docs/architecture-notes.md has the table this mirrors).

  check_layers.py SRC_ROOT                      include rules: every `#include "..."` of a file
                                                in a layer names a header of that layer or of a
                                                layer below it, and system headers stay where
                                                they belong (rte_*.h, hwloc.h, infiniband/*,
                                                rdma/*)
  check_layers.py SRC_ROOT --inject FILE:HEADER as above, as if FILE also included HEADER
                                                (the negative control: must fail)
  check_layers.py SRC_ROOT --headers BUILD_DIR  compiles every product header on its own
                                                (c++ -fsyntax-only, with the flags its layer's
                                                sources are built with, from
                                                BUILD_DIR/compile_commands.json), so each header
                                                includes what it uses (DPDK's check-includes,
                                                Seastar's checkheaders); results are cached per
                                                header, flags and the content of every header
Exit status 0 when everything holds, 1 with one line per violation otherwise.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

# Layer -> the layers its files may include (itself first). Order top to bottom.
# A file belongs to the longest layer prefix of its path.
LAYERS = {
    "apps/bench": ["apps", "transport/testing", "transport", "dpdk_glue", "lib/config", "lib/util"],
    # The CLI uses public fi_* calls, plus lib/config (to refuse a bad config before exec, to
    # print the effective config) and lib/core's stats socket directories.
    "apps": ["apps", "lib/core", "lib/config", "lib/util"],
    "abi": ["abi", "providers", "lib/core", "lib/config", "lib/util"],
    "providers/dpdk": ["providers/dpdk", "providers/packet", "dpdk_glue", "lib/core", "transport",
                       "lib/config", "lib/util"],
    "providers/udp": ["providers/udp", "providers/packet", "lib/core", "transport", "lib/config",
                      "lib/util"],
    # verbs RDM carries the transport over UD QPs, through the packet providers' base
    # (docs/architecture-notes.md, 17).
    "providers/verbs": ["providers/verbs", "providers/packet", "lib/core", "transport",
                        "lib/config", "lib/util"],
    "providers/packet": ["providers/packet", "lib/core", "transport", "lib/config", "lib/util"],
    "providers": ["providers", "lib/core", "lib/config", "lib/util"],  # the registry
    "lib/core": ["lib/core", "lib/config", "lib/util"],
    "dpdk_glue": ["dpdk_glue", "lib/config", "lib/util"],
    "transport/testing": ["transport/testing", "transport", "lib/util"],  # tests and benchmarks only
    "transport": ["transport", "lib/util"],
    "lib/config": ["lib/config", "lib/util"],
    "lib/util": ["lib/util"],
}
PRODUCT = [l for l in LAYERS if not l.startswith("apps")]
GENERATED = {"pollfab_build_config.h"}  # meson's configure_file, in the build directory
# System headers and the layers that may include them (DESIGN.md: only dpdk_glue/ and
# providers/dpdk include rte_*.h; only providers/verbs includes infiniband/*; transport/ sees
# no libfabric struct).
SYSTEM = [
    (re.compile(r"^(rte_|dpdk/)"), ["dpdk_glue", "providers/dpdk", "apps/bench"]),
    (re.compile(r"^hwloc"), ["dpdk_glue", "lib/core"]),
    (re.compile(r"^(infiniband/|rdma/rdma_cma|rdma/rdma_verbs)"), ["providers/verbs"]),
    (re.compile(r"^rdma/"), ["lib/core", "providers", "abi", "apps"]),
]
SOURCE_EXT = (".cpp", ".hpp", ".h", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    best = None
    for l in LAYERS:
        if path == l or path.startswith(l + "/"):
            if best is None or len(l) > len(best):
                best = l
    return best


def allowed_by(layer, target):
    """True if a file of `layer` may include the header at path `target`."""
    tl = layer_of(target)
    if tl is None:
        return False
    for a in LAYERS[layer]:
        if tl == a or tl.startswith(a + "/"):
            return True
    return False


def files(root):
    for top in sorted({l.split("/")[0] for l in LAYERS}):
        for d, subdirs, names in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for n in sorted(names):
                if n.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(d, n), root)


def includes(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield no, m.group(1), m.group(2)


def check_includes(root, inject=None):
    errors = []
    extra = {}
    if inject:
        f, h = inject.split(":", 1)
        extra[f] = h
    for rel in files(root):
        layer = layer_of(rel)
        if layer is None:
            continue
        incs = list(includes(root, rel))
        if rel in extra:
            incs.append((0, '"', extra[rel]))
        for no, kind, name in incs:
            where = f"{rel}:{no}" if no else f"{rel} (injected)"
            if kind == '"':
                if name in GENERATED:
                    continue
                if not os.path.exists(os.path.join(root, name)):
                    errors.append(f"{where}: includes \"{name}\", which is not a root-relative path of the tree")
                elif not allowed_by(layer, name):
                    errors.append(f"{where}: layer {layer} includes \"{name}\" of layer "
                                  f"{layer_of(name) or '?'} (may use: {', '.join(LAYERS[layer])})")
            else:
                for pat, ok in SYSTEM:
                    if pat.search(name):
                        if not any(layer == o or layer.startswith(o + "/") for o in ok):
                            errors.append(f"{where}: layer {layer} includes <{name}> "
                                          f"(only {', '.join(ok)} may)")
                        break
    return errors


def flags_for(build, commands, header):
    """The compile flags of a source of the header's own folder (else of its layer)."""
    folder = os.path.dirname(header)
    layer = layer_of(header)
    best = None
    for c in commands:
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        rel = os.path.relpath(src, ROOT)
        if os.path.dirname(rel) == folder:
            best = c
            break
        if best is None and layer_of(rel) == layer:
            best = c
    if best is None:
        return None
    args = shlex.split(best["command"]) if "command" in best else list(best["arguments"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MQ", "-MT"):
            skip = True  # and its argument
        elif a not in ("-c", "-MD", "-MMD", "-fdiagnostics-color=always", best["file"]):
            out.append(a)
    return args[0], out, best["directory"]


def check_headers(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    cache_path = os.path.join(build, "layers-headers.cache")
    try:
        with open(cache_path) as f:
            cache = set(f.read().split())
    except OSError:
        cache = set()
    # A header compiles on its own or not depending on the headers it includes too: the cache
    # key covers every header of the tree (any change recompiles all, about 20 s).
    tree = hashlib.sha256()
    for rel in files(ROOT):
        if rel.endswith((".hpp", ".h", ".inc")):
            with open(os.path.join(ROOT, rel), "rb") as f:
                tree.update(rel.encode() + b"\0" + f.read())
    jobs = []
    for rel in files(ROOT):
        if not rel.endswith((".hpp", ".h")) or layer_of(rel) not in PRODUCT:
            continue
        fl = flags_for(build, commands, rel)
        if fl is None:
            continue  # a layer not built in this configuration (e.g. no DPDK)
        cxx, flags, cwd = fl
        key = hashlib.sha256((rel + tree.hexdigest() + " ".join([cxx] + flags)).encode()).hexdigest()
        jobs.append((rel, key, cxx, flags, cwd))

    def run(job):
        rel, key, cxx, flags, cwd = job
        if key in cache:
            return rel, key, None
        src = f'#include "{rel}"\n#include "{rel}"\n'  # twice: include guards too
        p = subprocess.run([cxx, *flags, "-fsyntax-only", "-x", "c++", "-"], input=src,
                           capture_output=True, text=True, cwd=cwd)
        return rel, key, (p.stderr.strip() or "failed") if p.returncode else None

    errors, ok = [], set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for rel, key, err in ex.map(run, jobs):
            if err:
                first = next((l for l in err.splitlines() if "error" in l), err.splitlines()[0])
                errors.append(f"{rel}: does not compile on its own: {first}")
            else:
                ok.add(key)
    with open(cache_path, "w") as f:
        f.write("\n".join(sorted(ok)))
    print(f"headers: {len(jobs)} compiled on their own, {len(errors)} failed")
    return errors


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    ROOT = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    if args[:1] == ["--headers"] and len(args) == 2:
        errs = check_headers(os.path.abspath(args[1]))
    elif args[:1] == ["--inject"] and len(args) == 2:
        errs = check_includes(ROOT, args[1])
    elif not args:
        errs = check_includes(ROOT)
    else:
        print(__doc__)
        sys.exit(2)
    for e in errs:
        print(e)
    if not args[:1] == ["--headers"]:
        print(f"layers: {len(list(files(ROOT)))} files checked, {len(errs)} violations")
    sys.exit(1 if errs else 0)

#!/usr/bin/env python3
"""Fails on an include between top-level folders that goes up the layer order, or around a cycle.

The order is written once, here (docs/architecture.md explains it): a folder may include its own
files and those of the folders listed before it, never one listed after it. A file outside every
listed folder is an error too, so that a new folder must take its place in the order.

    python3 scripts/check_layers.py            # from any directory; exit 0 clean, 1 violations
    python3 scripts/check_layers.py --edges    # every cross-folder include count, bottom-up
    python3 scripts/check_layers.py --self-test  # the check fails on planted violations
"""
import argparse
import os
import re
import sys
import tempfile

# Bottom to top. Production code first; properties/ (tests) and fuzz/ sit above all of it.
LAYERS = [
    "include",          # the plugin ABI's C header: includes nothing of ours
    "src/core",         # dtypes, cases, metrics, the bound model: the vocabulary
    "oracles",          # certified references, templated on <Real>
    "src/kernels",      # kernels under test, templated on <Storage, Accum>
    "src/io",           # JSON input, output files, case JSON: what every writer and reader shares
    "src/bounds",       # a priori error bounds and the tolerance table (read oracles' certified types)
    "src/audit",        # normalization-axis audits
    "src/generators",   # our floating-point generators
    "src/ops",          # each op family's mathematics (oracle, bounds) and kernels, looked up by family
    "src/suite",        # runners and judges
    "src/report",       # report records and writers
    "src/external",     # plugins, exec, serve
    "src/contraction",  # the contract command's library: certificate, safetensors, module graph, block files
    "src/sections",     # report sections (the registry every command loops over)
    "src/nightly",      # merge, diff, history
    "src/render",       # HTML
    "src/adapters",     # third-party kernels as plugins
    "src/python",       # the Python module
    "src/cli",          # commands
    "properties",       # tests
    "fuzz",             # fuzz targets
]

SOURCE_ROOTS = ["include", "src", "oracles", "properties", "fuzz"]
EXTENSIONS = (".c", ".cpp", ".h", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    for i, layer in enumerate(LAYERS):
        if path == layer or path.startswith(layer + "/"):
            return i
    return None


def resolve(root, including_dir, name):
    """The repository-relative file an include names: beside the includer, then the include roots."""
    for base in (including_dir, "", "src", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None  # a system or generated header


def cross_folder_includes(root):
    for top in SOURCE_ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            for f in sorted(filenames):
                if not f.endswith(EXTENSIONS):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), root)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for name in INCLUDE.findall(text):
                    target = resolve(root, os.path.dirname(path), name)
                    if target is not None:
                        yield path, target


def test_files_in_production_libraries(root):
    """Files of properties/ (tests) that a production library's add_library() compiles."""
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as fh:
        cmake = fh.read()
    for m in re.finditer(r"add_library\((normcheck_lib|normcheck_oracles)\b([^)]*)\)", cmake):
        for source in m.group(2).split():
            if source.startswith("properties/"):
                yield m.group(1), source


def problems_of(root, edges):
    problems = []
    for path, target in cross_folder_includes(root):
        a, b = layer_of(path), layer_of(target)
        if a is None:
            problems.append(f"{path}: in no layer of scripts/check_layers.py (give its folder a place in LAYERS)")
            continue
        if b is None or a == b:
            continue
        edges[(a, b)] = edges.get((a, b), 0) + 1
        if b > a:
            problems.append(f"{path} includes {target}: {LAYERS[a]} may not include {LAYERS[b]}, a layer above it")
    for library, source in test_files_in_production_libraries(root):
        problems.append(f"CMakeLists.txt: {library} compiles {source}: production code does not live in properties/ (tests)")
    return sorted(set(problems))


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w", encoding="utf-8") as fh:
        fh.write(text)


def self_test():
    """A clean planted tree passes; an upward include, a folder in no layer and a test file in a
    production library each fail, named."""
    with tempfile.TemporaryDirectory() as root:
        write(root, "CMakeLists.txt", "add_library(normcheck_lib STATIC\n  src/cli/main.cpp)\n")
        write(root, "src/core/dtype.hpp", "#pragma once\n")
        write(root, "src/cli/main.cpp", '#include "core/dtype.hpp"\n')
        cases = [("clean", None, None)]
        cases.append(("upward", ("src/core/bad.hpp", '#include "cli/main.cpp"\n'), "src/core may not include src/cli"))
        cases.append(("no layer", ("src/newfolder/a.cpp", '#include "core/dtype.hpp"\n'), "in no layer"))
        cases.append(("test code", ("CMakeLists.txt", "add_library(normcheck_lib STATIC\n  properties/gen.cpp)\n"),
                      "production code does not live in properties/"))
        failed = 0
        for name, planted, expected in cases:
            backup = None
            if planted:
                full = os.path.join(root, planted[0])
                backup = open(full, encoding="utf-8").read() if os.path.exists(full) else None
                write(root, *planted)
            found = problems_of(root, {})
            ok = (not found) if expected is None else any(expected in p for p in found)
            print(f"self-test {name}: {'ok' if ok else 'WRONG'} {found}")
            failed += not ok
            if planted:
                if backup is None:
                    os.remove(os.path.join(root, planted[0]))
                else:
                    write(root, planted[0], backup)
        return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every cross-folder include count")
    parser.add_argument("--self-test", action="store_true", help="check the check on planted violations")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    edges = {}
    problems = problems_of(root, edges)
    if args.edges:
        for (a, b), n in sorted(edges.items()):
            print(f"{LAYERS[a]} -> {LAYERS[b]}: {n}")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} place(s) against the layer order", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that no #include runs back up the layers:

  launcher -> core/embed -> core/training -> core/host -> sdk <- plugins
  (launcher/cli, the torch-free skein executable: core/host and sdk only)

  - sdk/ includes only sdk/ headers (and third-party ones);
  - each part of core/ includes sdk/ headers, its own and those of the parts
    below it, never launcher/ or plugins/ ones;
  - plugins/ include sdk/ headers and their own folder's (or a sibling
    helper folder's, e.g. plugins/history/store_common), never core/ or
    launcher/ ones; a plugin folder's test program (test_*.cpp) may also
    include the harness, skein/testing.hpp (core/embed), and nothing else of core/;
  - tests/ and bench/ may include anything;
  - inside core/training, a part's files (core/training/<part>/) include
    only their own part's headers and those of the parts its CMakeLists.txt
    names after CALLS (skein_training_part(<part> CALLS ...));
  - launcher/ reaches core/training through its run/ part alone (train_run,
    model_io, node_agent: the train run, a finished run's model, what the
    nodes agree on);
  - no two headers or sources in different layers share a file name
    (sdk's skein/run.hpp and a core run.cpp read as one thing to tools
    and to people).

Each quoted include ("skein/...") is resolved against the folders that hold
headers; one that resolves into a layer above its file's is reported with
file and line. Exit 1 when any is found.

  scripts/check_layers.py     run by the test `include_layers`
"""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Longest prefix first: a file belongs to the first layer its path starts with.
LAYERS = ["launcher/cli", "launcher", "core/embed", "core/training", "core/host", "sdk", "plugins"]
# What each layer may include.
CORE = {"sdk", "core/host", "core/training", "core/embed"}
ALLOWED = {"sdk": {"sdk"}, "core/host": {"sdk", "core/host"},
           "core/training": {"sdk", "core/host", "core/training"}, "core/embed": CORE,
           "plugins": {"sdk", "plugins"}, "launcher/cli": {"sdk", "core/host", "launcher/cli"},
           "launcher": CORE | {"launcher", "launcher/cli"}}
# The one header of a layer above that a plugin folder's test program may include.
HARNESS = "skein/testing.hpp"


def layer_of(path):
    rel = os.path.relpath(path, ROOT)
    for layer in LAYERS:
        if rel == layer or rel.startswith(layer + os.sep):
            return layer
    return None


def include_dirs():
    """Every include/ folder below the layers, with the layer it belongs to."""
    dirs = []
    for top in ("sdk", "core", "plugins", "launcher"):
        for base, subdirs, _ in os.walk(os.path.join(ROOT, top)):
            if os.path.basename(base) == "include":
                dirs.append((layer_of(base), base))
                subdirs[:] = []
    return dirs


def resolved_path(name, source, dirs):
    """Where the header `name` included by `source` is, or "" (third-party)."""
    here = os.path.join(os.path.dirname(source), name)
    if os.path.exists(here):
        return here
    for _, d in dirs:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return ""


PART_CALLS = re.compile(r"skein_training_part\((\w+)((?:\s+CALLS)?[^)]*)\)")
TRAINING = os.path.join(ROOT, "core", "training")


def training_parts():
    """{part: set of parts it may call}, from each part's CMakeLists.txt."""
    parts = {}
    for name in sorted(os.listdir(TRAINING)):
        cmake = os.path.join(TRAINING, name, "CMakeLists.txt")
        if not os.path.isfile(cmake):
            continue
        m = PART_CALLS.search(open(cmake).read())
        if not m or m.group(1) != name:
            sys.exit(f"{os.path.relpath(cmake, ROOT)}: no skein_training_part({name} ...)")
        parts[name] = set(m.group(2).replace("CALLS", "").split()) | {name}
    return parts


def part_of(path):
    if not path:
        return None
    rel = os.path.relpath(path, TRAINING)
    return None if rel.startswith("..") else rel.split(os.sep)[0]


def name_clashes():
    """Files of the same name (without extension) in different layers."""
    seen = {}
    problems = []
    for top in ("sdk", "core", "launcher"):
        for base, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                stem, ext = os.path.splitext(f)
                if ext not in (".hpp", ".h", ".cpp", ".c"):
                    continue
                path = os.path.join(base, f)
                layer = layer_of(path)
                first = seen.setdefault(stem, (layer, path))
                if first[0] != layer:
                    problems.append(f"{os.path.relpath(path, ROOT)}: named as {os.path.relpath(first[1], ROOT)} "
                                    f"in {first[0]}/; rename one")
    return problems


def main():
    dirs = include_dirs()
    parts = training_parts()
    problems = name_clashes()
    for top in ("sdk", "core", "plugins", "launcher"):
        for base, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".hpp", ".h", ".cpp", ".c")):
                    continue
                path = os.path.join(base, f)
                layer = layer_of(path)
                text = open(path, errors="replace").read()
                for m in INCLUDE.finditer(text):
                    header = resolved_path(m.group(1), path, dirs)
                    target = layer_of(header) if header else None
                    if (layer == "plugins" and f.startswith("test_") and m.group(1) == HARNESS
                            and target == "core/embed"):
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    if target and target not in ALLOWED[layer]:
                        problems.append(f"{os.path.relpath(path, ROOT)}:{line}: includes {m.group(1)} "
                                        f"({target}/), a layer {layer}/ may not depend on")
                    mine, theirs = part_of(path), part_of(header)
                    if layer.startswith("launcher") and theirs and theirs != "run":
                        problems.append(f"{os.path.relpath(path, ROOT)}:{line}: includes {m.group(1)} "
                                        f"(core/training/{theirs}/); the launcher reaches training through "
                                        f"core/training/run/ alone")
                    if mine and theirs and theirs not in parts.get(mine, {mine}):
                        problems.append(f"{os.path.relpath(path, ROOT)}:{line}: includes {m.group(1)} "
                                        f"(core/training/{theirs}/), a part core/training/{mine}/ does not "
                                        f"name after CALLS in its CMakeLists.txt")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

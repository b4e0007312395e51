#!/usr/bin/env python3
"""Checks that no #include runs back up the layers:

  launcher -> core -> sdk <- plugins

  - sdk/ includes only sdk/ headers (and third-party ones);
  - core/ includes sdk/ and core/ headers, never launcher/ or plugins/;
  - plugins/ include sdk/ headers and their own folder's (or a sibling
    helper folder's, e.g. plugins/history/store_common), never core/ or
    launcher/ ones;
  - tests/ and bench/ may include anything.

Each quoted include ("skein/...") is resolved against the folders that hold
headers; one that resolves into a layer above its file's is reported with
file and line. Exit 1 when any is found.

  scripts/check_layers.py     run by the test `include_layers`
"""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYERS = ["sdk", "core", "plugins", "launcher"]
# What each layer may include.
ALLOWED = {"sdk": {"sdk"}, "core": {"sdk", "core"}, "plugins": {"sdk", "plugins"},
           "launcher": {"sdk", "core", "launcher"}}


def include_dirs():
    """Every include/ folder below the layers, with the layer it belongs to."""
    dirs = []
    for layer in LAYERS:
        for base, subdirs, _ in os.walk(os.path.join(ROOT, layer)):
            if os.path.basename(base) == "include":
                dirs.append((layer, base))
                subdirs[:] = []
    return dirs


def resolve(name, source, dirs):
    """The layer of the header `name` included by `source`, or None (third-party)."""
    here = os.path.join(os.path.dirname(source), name)
    if os.path.exists(here):
        return os.path.relpath(here, ROOT).split(os.sep)[0]
    for layer, d in dirs:
        if os.path.exists(os.path.join(d, name)):
            return layer
    return None


def main():
    dirs = include_dirs()
    problems = []
    for layer in LAYERS:
        for base, _, files in os.walk(os.path.join(ROOT, layer)):
            for f in files:
                if not f.endswith((".hpp", ".h", ".cpp", ".c")):
                    continue
                path = os.path.join(base, f)
                text = open(path, errors="replace").read()
                for m in INCLUDE.finditer(text):
                    target = resolve(m.group(1), path, dirs)
                    if target and target not in ALLOWED[layer]:
                        line = text.count("\n", 0, m.start()) + 1
                        problems.append(f"{os.path.relpath(path, ROOT)}:{line}: includes {m.group(1)} "
                                        f"({target}/), a layer {layer}/ may not depend on")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The C++ plugin examples of the docs, compiled and loaded by the tests.

  doc_examples.py extract OUT_DIR DOC.md...
      writes every ```cpp block of the docs that declares SKEIN_PLUGIN (and is
      not a snippet of a file built elsewhere) as OUT_DIR/<page>_<n>.cpp, and
      OUT_DIR/examples.txt: one "<file> <kind> <name>" line each.
      tests/CMakeLists.txt builds each as a plugin.
  doc_examples.py check SKEIN PLUGIN_DIR EXAMPLES_TXT
      `SKEIN plugins --plugin-dir PLUGIN_DIR` must list every example from
      PLUGIN_DIR and refuse none (test doc_examples_load).
"""
import json
import pathlib
import re
import subprocess
import sys

BLOCK = re.compile(r"(<!-- snippet: \S+ -->\n)?```cpp\n(.*?)```", re.S)
PLUGIN = re.compile(r'SKEIN_PLUGIN\(\s*\w+\s*,\s*(\w+)\s*,\s*"([^"]+)"')


def extract(out, docs):
    out.mkdir(parents=True, exist_ok=True)
    lines, written = [], set()
    for doc in docs:
        page = pathlib.Path(doc).stem.replace("-", "_")
        for n, (snippet, body) in enumerate(BLOCK.findall(pathlib.Path(doc).read_text())):
            found = PLUGIN.search(body)
            if snippet or not found:
                continue
            path = out / f"{page}_{n}.cpp"
            if not path.exists() or path.read_text() != body:  # unchanged: not rebuilt
                path.write_text(body)
            written.add(path.name)
            lines.append(f"{path.name} {found.group(1)} {found.group(2)}")
    for stale in out.glob("*.cpp"):
        if stale.name not in written:
            stale.unlink()
    (out / "examples.txt").write_text("\n".join(lines) + "\n")


def check(skein, plugin_dir, examples):
    r = subprocess.run([skein, "plugins", "--json", "--plugin-dir", plugin_dir], capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        sys.exit(f"skein plugins failed or warned (exit {r.returncode}): {r.stderr.strip()}")
    listed = {p["name"]: p["path"] for p in json.loads(r.stdout)}
    bad = []
    for line in pathlib.Path(examples).read_text().split("\n"):
        if not line:
            continue
        _, kind, name = line.split()
        if not listed.get(name, "").startswith(str(pathlib.Path(plugin_dir).resolve())):
            bad.append(f"{name} ({kind}) is not listed from {plugin_dir}")
    if bad:
        sys.exit("; ".join(bad))
    print(f"{len(listed)} plugins listed, every doc example among them")


if __name__ == "__main__":
    if sys.argv[1:2] == ["extract"]:
        extract(pathlib.Path(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1:2] == ["check"]:
        check(*sys.argv[2:5])
    else:
        sys.exit(__doc__)

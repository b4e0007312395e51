#!/usr/bin/env python3
"""Checks the Markdown docs (README.md, docs/*.md, plugins/*/*/README.md):

  - every relative link names a file that exists, and every #anchor a
    heading of that file (GitHub's anchor rule: lower case, punctuation
    dropped, spaces to '-');
  - every code block preceded by `<!-- snippet: PATH -->` is PATH's text,
    so an example shown in the docs is the file a test builds or runs;
  - every code block preceded by `<!-- excerpt: PATH -->` is lines of PATH,
    in their order (indentation aside; blank and `...` lines of the block skipped);
  - every "plugin API X.Y" (or "host supports X.Y") a sample shows is the SDK's version
    (sdk/include/skein/detail/version.hpp), and every "N contract headers"
    the number of headers at the top of sdk/include/skein.

  scripts/check_docs.py          exit 1, one line per problem, when any

The test `docs_are_consistent` runs it.
"""
import glob, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\(([^)\s]+)\)")
SNIPPET = re.compile(r"<!-- snippet: (\S+) -->\n```[^\n]*\n(.*?)```", re.S)
EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->\n```[^\n]*\n(.*?)```", re.S)


def is_excerpt(block, source):
    """Whether every line of `block` is a line of `source`, in order (indentation aside)."""
    lines = [l.strip() for l in source.split("\n")]
    at = 0
    for line in block.split("\n"):
        if not line.strip() or line.strip() == "...":
            continue
        try:
            at = lines.index(line.strip(), at) + 1
        except ValueError:
            return False
    return True


def anchors_of(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    found = set()
    for m in re.finditer(r"^#{1,6} (.*)$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n, candidate = 0, a
        while candidate in found:  # repeated headings get -1, -2, ...
            n += 1
            candidate = f"{a}-{n}"
        found.add(candidate)
    return found


def sdk_facts():
    """The SDK's plugin API version ("3.6") and its number of contract headers."""
    version = open(os.path.join(ROOT, "sdk", "include", "skein", "detail", "version.hpp")).read()
    major = re.search(r"#define SKEIN_API_MAJOR (\d+)", version).group(1)
    minor = re.search(r"#define SKEIN_API_MINOR (\d+)", version).group(1)
    headers = glob.glob(os.path.join(ROOT, "sdk", "include", "skein", "*.hpp"))
    return f"{major}.{minor}", len(headers)


def facts_problems(files):
    """Samples and counts in the docs that the SDK no longer has."""
    api, headers = sdk_facts()
    problems = []
    for f in files:
        rel = os.path.relpath(f, ROOT)
        text = open(f).read()
        for m in re.finditer(r"\(plugin API (\d+\.\d+)\)|host supports (\d+\.\d+)`", text):
            said = m.group(1) or m.group(2)
            if said != api:
                problems.append(f"{rel}: a sample says plugin API {said}, the SDK is {api}")
        for m in re.finditer(r"(\d+) contract headers", text):
            if int(m.group(1)) != headers:
                problems.append(f"{rel}: says {m.group(1)} contract headers, sdk/include/skein has {headers}")
    return problems


def main():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + \
        sorted(glob.glob(os.path.join(ROOT, "plugins", "*", "*", "README.md")))
    problems = []
    for f in files:
        rel = os.path.relpath(f, ROOT)
        text = open(f).read()
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in LINK.finditer(prose):
            target = m.group(1)
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = f if not path else os.path.normpath(os.path.join(os.path.dirname(f), path))
            if not os.path.exists(dest):
                problems.append(f"{rel}: link to missing {target}")
            elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                problems.append(f"{rel}: link to {target}: no such heading in {os.path.relpath(dest, ROOT)}")
        for m in SNIPPET.finditer(text):
            source = os.path.join(ROOT, m.group(1))
            if not os.path.exists(source):
                problems.append(f"{rel}: snippet of missing {m.group(1)}")
            elif open(source).read() != m.group(2):
                problems.append(f"{rel}: the snippet of {m.group(1)} differs from the file")
        for m in EXCERPT.finditer(text):
            source = os.path.join(ROOT, m.group(1))
            if not os.path.exists(source):
                problems.append(f"{rel}: excerpt of missing {m.group(1)}")
            elif not is_excerpt(m.group(2), open(source).read()):
                problems.append(f"{rel}: the excerpt of {m.group(1)} is not lines of the file")
    problems += facts_problems(files)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fails when a bundled plugin writes one of its option names as a string
literal more than once in its sources, or reads or blames an option by a
string literal (get_*("name"), has("name"), fail("name", ...), OptionError,
run_output_path(options, "name", ...) and the kit's readers).

  scripts/check_option_names.py SKEIN_EXE
  scripts/check_option_names.py SKEIN_EXE --keys-in DIR   only the config keys, in DIR's sources

An option is declared once (an X-macro entry, SKEIN_OPTION_SPECS, gives the
schema, the typed value and the name constant STRUCT::names::NAME); its limits
(SKEIN_CHOICES, SKEIN_RANGE) go with the declaration. A name written again as
"name" is a second place to change. The option names come from `skein plugins
--json`, i.e. from the manifests (the kit's shared declarations included); the
sources are plugins/<kind>/<name>/, its tests (test_*) left out. Each
offending literal is listed as FILE:LINE.

The run's own keys (the config's top-level keys, `skein train --help`) are
declared once too: their names are skein::run_key's (skein/run.hpp), their
spec is core's table (core/host/src/config_keys.cpp). In the sources of
sdk/, core/, launcher/ and plugins/ (comments and tests left out) a key's
name is not written as a string literal outside a named constant (`kName =
"name"`, as run_key's and trainer.json's meta_key are): never for a name
with an underscore (max_epochs), and for a one-word name (model, seed), which
other formats use too, not where a config is read by it (`cfg["seed"]`,
value("seed", ...), find, contains, at, erase, ConfigPathError("seed", ...),
schema_default("seed")).
"""
import glob, json, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bundled_plugins(exe):
    out = subprocess.run([exe, "plugins", "--json"], check=True, capture_output=True, text=True,
                         env=dict(os.environ, SKEIN_PLUGIN_PATH="")).stdout
    return [p for p in json.loads(out) if os.path.isdir(os.path.join(ROOT, "plugins", p["kind"], p["name"]))]


def sources(plugin):
    folder = os.path.join(ROOT, "plugins", plugin["kind"], plugin["name"])
    files = glob.glob(os.path.join(folder, "*.cpp")) + glob.glob(os.path.join(folder, "*.hpp"))
    return sorted(f for f in files if not os.path.basename(f).startswith("test_"))


# Calls that take an option's name: first argument, or second after the options.
FIRST_ARG = r"\b(?:fail|get_\w+|has|OptionError)\(\s*"
SECOND_ARG = r"\b(?:run_output_path|run_output_dir|require_\w+|read_\w+|check_parameters_fit)\([^,()]*,\s*"


def places(pattern, files):
    """FILE:LINE of every match of `pattern` in `files`."""
    found = []
    for path in files:
        text = open(path).read()
        for m in re.finditer(pattern, text):
            found.append(f"{os.path.relpath(path, ROOT)}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def top_level_keys(exe):
    """The config's top-level keys, as `skein train --help` lists them."""
    out = subprocess.run([exe, "train", "--help"], check=True, capture_output=True, text=True).stdout
    listing = out.split("config keys", 1)[-1]
    return re.findall(r"^  ([a-z_]+) \(", listing, re.M)


def string_literals(text):
    """(content, offset) of every ordinary string literal of C/C++ `text`;
    comments, character literals and raw strings are skipped."""
    found, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif c == "R" and text.startswith('"', i + 1) and not (text[i - 1:i].isalnum() or text[i - 1:i] == "_"):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            i = n if end < 0 else end + len(m.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                found.append((text[i + 1:j], i))
            i = j + 1
        else:
            i += 1
    return found


# Where a one-word key's literal reads a config; what a named constant's declaration looks like.
READ_BY = re.compile(r"(?:\[|\b(?:find|contains|value|at|erase|count|ConfigPathError|schema_default)\()\s*$")
DECLARED = re.compile(r"\bk\w*\s*=\s*$")


def key_literals(keys, tops):
    """FILE:LINE: KEY of each top-level key written as a literal where the
    check forbids it, in the folders `tops`."""
    files = []
    for top in tops:
        for dirpath, _, names in os.walk(top):
            files += [os.path.join(dirpath, f) for f in names
                      if f.endswith((".cpp", ".hpp", ".h", ".c")) and not f.startswith("test_")]
    found = []
    for path in sorted(files):
        text = open(path).read()
        for content, at in string_literals(text):
            if content not in keys:
                continue
            before = text[text.rfind("\n", 0, at) + 1:at]
            if DECLARED.search(before):
                continue
            if "_" in content or READ_BY.search(before):
                found.append(f"{os.path.relpath(path, ROOT)}:{text.count(chr(10), 0, at) + 1}: \"{content}\"")
    return found


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--keys-in"):
        sys.exit(__doc__)
    if len(sys.argv) == 4:  # the check's own test: a folder of planted literals
        literals = key_literals(set(top_level_keys(sys.argv[1])), [sys.argv[3]])
        sys.exit("\n".join(literals) if literals else f"{sys.argv[3]}: no config key written as a literal")
    plugins = bundled_plugins(sys.argv[1])
    if not plugins:
        sys.exit(f"{sys.argv[1]} found no bundled plugins")
    problems = []
    for p in plugins:
        files = sources(p)
        for option in p["options"]:
            literal = r'"' + re.escape(option["name"]) + r'"'
            written = places(r'(?<![\\\w])' + literal, files)
            if len(written) > 1:
                problems.append(f"plugin '{p['name']}': option '{option['name']}' is written "
                                f"{len(written)} times as a string literal: {', '.join(written)}")
            by_literal = places(FIRST_ARG + literal, files) + places(SECOND_ARG + literal, files)
            if by_literal:
                problems.append(f"plugin '{p['name']}': option '{option['name']}' is read or named by a string "
                                f"literal (use the options struct and STRUCT::names): {', '.join(by_literal)}")
    keys = top_level_keys(sys.argv[1])
    if not keys:
        sys.exit(f"{sys.argv[1]} train --help lists no config keys")
    literals = key_literals(set(keys), [os.path.join(ROOT, top) for top in ("sdk", "core", "launcher", "plugins")])
    if literals:
        problems.append("config keys written as string literals (use skein::run_key, skein/run.hpp):\n  " +
                        "\n  ".join(literals))
    if problems:
        sys.exit("\n".join(problems))
    print(f"{len(plugins)} plugins: every option name written at most once; "
          f"{len(keys)} config keys: never written as a literal outside their declaration")


if __name__ == "__main__":
    main()

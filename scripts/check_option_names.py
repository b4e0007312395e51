#!/usr/bin/env python3
"""Fails when a bundled plugin writes one of its option names as a string
literal more than once in its sources, or reads or blames an option by a
string literal (get_*("name"), has("name"), fail("name", ...), OptionError,
run_output_path(options, "name", ...) and the kit's readers).

  scripts/check_option_names.py SKEIN_EXE

An option is declared once (an X-macro entry, SKEIN_OPTION_SPECS, gives the
schema, the typed value and the name constant STRUCT::names::NAME); its limits
(SKEIN_CHOICES, SKEIN_RANGE) go with the declaration. A name written again as
"name" is a second place to change. The option names come from `skein plugins
--json`, i.e. from the manifests (the kit's shared declarations included); the
sources are plugins/<kind>/<name>/, its tests (test_*) left out. Each
offending literal is listed as FILE:LINE.
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
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
    if problems:
        sys.exit("\n".join(problems))
    print(f"{len(plugins)} plugins: every option name written at most once")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Configures and builds Skein into build/, or build-pypi/ with SKEIN_TORCH=pypi
# (scripts/torch-env.sh), with 2 parallel jobs: the machine has 2 cores.
#
#   scripts/build.sh            everything: bin/skein, the libraries, the plugins,
#                               the tests and test plugins, the benchmark programs
#   scripts/build.sh --example  only what `skein train` needs (the skein_runtime
#                               target: bin/skein, its libraries, the plugins)
#   scripts/build.sh --sdk      what `cmake --install` copies (the skein_install_set
#                               target): --example's, plus the embedding libraries
#                               (skein::session, skein::c) and the plugin test
#                               harness (skein::testing); no tests, no benchmarks
#
# All configure build/ identically (same options, same compiler flags) and
# differ only in the target they build, so scripts/test.sh after
# scripts/example.sh compiles just what the example did not: the tests, the
# test plugins, the benchmark programs (and --sdk's libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch-env.sh
skein_torch_env
target=all
case "${1:-}" in
  "") ;;
  --example) target=skein_runtime ;;
  --sdk) target=skein_install_set ;;
  *) echo "usage: scripts/build.sh [--example | --sdk]" >&2; exit 2 ;;
esac
cmake -S . -B "$SKEIN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_TESTING=ON -DSKEIN_BUILD_BENCH=ON \
  -DCMAKE_PREFIX_PATH="$SKEIN_TORCH_PREFIX" -DSKEIN_PYTHON="$SKEIN_PYTHON" \
  -DSKEIN_MLFLOW_PYTHON="$SKEIN_MLFLOW_VENV/bin/python3"
cmake --build "$SKEIN_BUILD_DIR" -j "${SKEIN_JOBS:-2}" --target "$target"

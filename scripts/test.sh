#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (Boost.Test under CTest),
# against Debian's libtorch 1.13, or PyPI's torch 2.x with SKEIN_TORCH=pypi
# (scripts/torch-env.sh). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch-env.sh
scripts/setup.sh
scripts/build.sh
ctest --test-dir "$SKEIN_BUILD_DIR" --output-on-failure -j 2 "$@"

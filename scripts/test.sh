#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (Boost.Test under CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2

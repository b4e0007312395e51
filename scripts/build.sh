#!/usr/bin/env bash
# Configures and builds Skein into build/ (2 parallel jobs: the machine has 2 cores).
#
#   scripts/build.sh            everything: bin/skein, the libraries, the plugins,
#                               the tests and test plugins, the benchmark programs
#   scripts/build.sh --example  only what `skein train` needs: bin/skein,
#                               libskein_core, libskein_sdk and the plugins,
#                               without the precompiled header (CMakeLists.txt)
#
# Both set every option explicitly, so a build/ configured by one is right for
# the other (scripts/test.sh after scripts/example.sh builds the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
extras=ON
pch=ON
case "${1:-}" in
  "") ;;
  --example) extras=OFF pch=OFF ;;  # no precompiled header: faster for these sources
  *) echo "usage: scripts/build.sh [--example]" >&2; exit 2 ;;
esac
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_TESTING="$extras" -DSKEIN_BUILD_BENCH="$extras" -DSKEIN_PCH="$pch"
cmake --build build -j "${SKEIN_JOBS:-2}"

#!/usr/bin/env bash
# Configures and builds Skein into build/ (2 parallel jobs: the machine has 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "${SKEIN_JOBS:-2}"

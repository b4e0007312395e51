#!/usr/bin/env bash
# Sets up, builds, and trains the main example job: Fashion-MNIST on 2 processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --example  # the build and run packages only
scripts/build.sh --example  # bin/skein, its libraries and the plugins: no tests, no benchmarks
build/bin/skein train --config examples/fashion_mnist_ddp.json --nproc-per-node 2 "$@"

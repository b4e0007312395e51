#!/usr/bin/env bash
# Sets up, builds, and trains the main example job: Fashion-MNIST on 2 processes,
# against Debian's libtorch 1.13, or PyPI's torch 2.x with SKEIN_TORCH=pypi
# (scripts/torch-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch-env.sh
scripts/setup.sh --example  # the build and run packages only
scripts/build.sh --example  # bin/skein, its libraries and the plugins: no tests, no benchmarks
"$SKEIN_BUILD_DIR/bin/skein" train --config examples/fashion_mnist_ddp.json --nproc-per-node 2 "$@"

#!/usr/bin/env bash
# Sets up, builds, and trains the main example job: Fashion-MNIST on 2 processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/skein train --config examples/fashion_mnist_ddp.json --nproc-per-node 2 "$@"

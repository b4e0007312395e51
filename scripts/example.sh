#!/usr/bin/env bash
# Sets up, builds, and trains the example job on Fashion-MNIST.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/skein train --config examples/fashion_mnist.json "$@"

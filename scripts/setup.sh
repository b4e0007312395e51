#!/usr/bin/env bash
# Installs Skein's build and run dependencies: Debian 12's packages, and with
# SKEIN_TORCH=pypi PyPI's torch in a virtual environment (scripts/torch-env.sh),
# and for the tests PyPI's mlflow in a virtual environment of its own.
#
#   scripts/setup.sh            everything the scripts use (tests, fuzzers, sanitizers)
#   scripts/setup.sh --example  what scripts/example.sh needs: building and training
#                               (no Python torch, no clang)
#   scripts/setup.sh --bench    everything, plus what bench/vs_pytorch.py compares
#                               against (torchvision, jemalloc, tcmalloc) and
#                               bench/scaling_model.py plots with (matplotlib)
#
# The fuzzers and the sanitizer build (scripts/fuzz.sh, scripts/sanitize.sh)
# use Debian's libtorch whatever SKEIN_TORCH says, so the full set always has it.
set -euo pipefail
source "$(dirname "$0")/torch-env.sh"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libopenblas0-pthread
  libboost-dev libboost-filesystem-dev libboost-program-options-dev libboost-test-dev
  nlohmann-json3-dev zlib1g-dev libstb-dev libssl-dev
  libcurl4-openssl-dev  # the mlflow callback's HTTP client
  dataset-fashion-mnist
)
debian_torch=(libtorch-dev libgloo-dev)
test_packages=(
  "${debian_torch[@]}"
  python3-torch python3-numpy  # tests: models, state dicts and arrays written and read by Python
  python3-sklearn  # tests: scoring's precision, recall, F1, ROC-AUC, RMSE, MAE, R² against scikit-learn
  python3-skorch  # tests: skorch's History.from_file reads history.json
  clang libclang-rt-14-dev llvm-14  # scripts/fuzz.sh: clang, libFuzzer; llvm-symbolizer-14 for sanitizer reports
  openmpi-bin  # tests: workers started by mpirun
  gfortran  # tests: the Fortran session example (examples/embed)
  chromium fonts-liberation  # tests: report.html rendered in a headless browser (its text in a font chromium recommends)
  python3-venv  # tests: the venv of PyPI's mlflow (scripts/mlflow-test.txt), whatever SKEIN_TORCH is
)
if [ "$SKEIN_TORCH" != debian ]; then
  packages+=(python3-venv)  # the venv that holds PyPI's torch
else
  packages+=("${debian_torch[@]}")
fi
case "${1:-}" in
  "") packages+=("${test_packages[@]}") ;;
  --example) ;;
  --bench) packages+=("${test_packages[@]}" python3-torchvision python3-matplotlib libjemalloc2 libtcmalloc-minimal4) ;;
  *) echo "usage: scripts/setup.sh [--example | --bench]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "${1:-}" = --example ]; then
  skein_torch_install
else
  skein_torch_install --with-tests
  skein_mlflow_install  # tests: a real MLflow server and client (tests/test_mlflow.cpp)
fi

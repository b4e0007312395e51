# Sourced by the scripts: which libtorch to build against, and where its
# build goes. The one home of that choice.
#
#   SKEIN_TORCH=debian   Debian 12's libtorch-dev 1.13 (CPU), tests with Debian's
#                        python3-torch; build in build/
#   SKEIN_TORCH=pypi     PyPI's torch 2.x wheel (scripts/torch-pypi.txt), which
#                        carries libtorch, in a virtual environment outside the
#                        clone (SKEIN_VENV, default ~/.cache/skein/torch-<version>),
#                        so later runs and CI reuse it; build in build-pypi/
#   SKEIN_TORCH=gpu-image  PyPI's torch of the GPU machines' image
#                        (scripts/torch-gpu.txt, 2.11.0 for CUDA 13), the wheel
#                        alone (pip --no-deps: its nvidia-* CUDA packages are not
#                        needed to compile and link; the CUDA toolkit's are found),
#                        in a venv as for pypi; build in build-gpu/, for
#                        scripts/gpu-bundle.sh (no tests: the venv has no numpy)
#
# Sets SKEIN_TORCH, SKEIN_BUILD_DIR, SKEIN_VENV and, once skein_torch_env has
# run, SKEIN_PYTHON (the Python whose torch is the libtorch) and
# SKEIN_TORCH_PREFIX (for CMAKE_PREFIX_PATH; empty for Debian's, which CMake
# finds itself).
SKEIN_TORCH=${SKEIN_TORCH:-debian}
case "$SKEIN_TORCH" in
  debian) SKEIN_BUILD_DIR=${SKEIN_BUILD_DIR:-build} ;;
  pypi) SKEIN_BUILD_DIR=${SKEIN_BUILD_DIR:-build-pypi} ;;
  gpu-image) SKEIN_BUILD_DIR=${SKEIN_BUILD_DIR:-build-gpu} ;;
  *) echo "SKEIN_TORCH must be 'debian', 'pypi' or 'gpu-image', not '$SKEIN_TORCH'" >&2; exit 2 ;;
esac
skein_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The pin file of the PyPI flavours and pip's extra arguments for it.
skein_pip_args=()
if [ "$SKEIN_TORCH" = gpu-image ]; then
  skein_pins=$skein_root/scripts/torch-gpu.txt
  skein_pip_args=(--no-deps)
else
  skein_pins=$skein_root/scripts/torch-pypi.txt
fi
skein_pypi_torch=$(sed -n 's/^torch==//p' "$skein_pins")
SKEIN_VENV=${SKEIN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skein/torch-$skein_pypi_torch}
export SKEIN_TORCH SKEIN_BUILD_DIR SKEIN_VENV

# skein_venv_install VENV PIN_FILE... [-- PIP_ARG...]: creates VENV (with
# /usr/bin/python3 -m venv) when it is missing and pip-installs the pin files
# into it. What was installed is stamped by the pin files' (and pip
# arguments') digest in VENV/.skein-installed: a second run costs no pip at all.
skein_venv_install() {
  local venv=$1 want=() pip_args=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do want+=("$1"); shift; done
  if [ $# -gt 0 ]; then shift; pip_args=("$@"); fi
  if [ ! -x "$venv/bin/python3" ]; then
    echo "setup: creating $venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
  fi
  local stamp="$venv/.skein-installed" digest
  digest=$( (cat "${want[@]}"; [ ${#pip_args[@]} -eq 0 ] || echo "${pip_args[@]}") | sha256sum | cut -c1-16)
  if ! grep -qx "$digest" "$stamp" 2>/dev/null; then
    local args=()
    for f in "${want[@]}"; do args+=(-r "$f"); done
    echo "setup: pip install into $venv: $(grep -hv '^#' "${want[@]}" | tr '\n' ' ')"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check "${pip_args[@]}" "${args[@]}"
    echo "$digest" >>"$stamp"
  fi
}

# pypi, gpu-image: creates or completes the venv (`--with-tests`, pypi only:
# also scripts/torch-pypi-test.txt). scripts/setup.sh runs it.
skein_torch_install() {
  [ "$SKEIN_TORCH" != debian ] || return 0
  local want=("$skein_pins")
  if [ "${1:-}" = --with-tests ] && [ "$SKEIN_TORCH" = pypi ]; then want+=("$skein_root/scripts/torch-pypi-test.txt"); fi
  skein_venv_install "$SKEIN_VENV" "${want[@]}" -- "${skein_pip_args[@]}"
}

# The tests' MLflow (plugins/callback/mlflow): PyPI's mlflow
# (scripts/mlflow-test.txt) in a venv of its own outside the clone, the same
# whatever SKEIN_TORCH is (SKEIN_MLFLOW_VENV, default
# ~/.cache/skein/mlflow-<version>). scripts/setup.sh (full mode) installs it;
# scripts/build.sh hands its python to CMake (SKEIN_MLFLOW_PYTHON).
skein_mlflow_pins=$skein_root/scripts/mlflow-test.txt
SKEIN_MLFLOW_VENV=${SKEIN_MLFLOW_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skein/mlflow-$(sed -n 's/^mlflow==//p' "$skein_mlflow_pins")}
export SKEIN_MLFLOW_VENV
skein_mlflow_install() { skein_venv_install "$SKEIN_MLFLOW_VENV" "$skein_mlflow_pins"; }

# Sets SKEIN_PYTHON and SKEIN_TORCH_PREFIX.
skein_torch_env() {
  if [ "$SKEIN_TORCH" = debian ]; then
    SKEIN_PYTHON=/usr/bin/python3
    SKEIN_TORCH_PREFIX=
  else
    SKEIN_PYTHON=$SKEIN_VENV/bin/python3
    if ! SKEIN_TORCH_PREFIX=$("$SKEIN_PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null); then
      echo "no torch in $SKEIN_VENV: run SKEIN_TORCH=$SKEIN_TORCH scripts/setup.sh first" >&2
      exit 2
    fi
  fi
  export SKEIN_PYTHON SKEIN_TORCH_PREFIX
}

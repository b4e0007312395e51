#!/bin/sh
# without_cuda_toolkit.sh PROGRAM [ARGS...]: runs PROGRAM where no CUDA toolkit
# can be found, as on a fresh machine: in a private mount namespace (unshare
# -rm; the host stays untouched) with an empty /usr/local (where NVIDIA's
# installers put cuda-X.Y, and some images nvcc, cuda*.h and libcudart too)
# and /opt/cuda, without CUDA_HOME, CUDA_PATH, CUDACXX, CUDAToolkit_ROOT or
# LIBRARY_PATH, and without the PATH entries that name cuda. Where this
# machine allows no such namespace, or nvcc or PROGRAM are still found
# elsewhere, PROGRAM runs as it is (saying so), as private_network.sh does.
hide='mount -t tmpfs none /usr/local && { [ ! -d /opt/cuda ] || mount -t tmpfs none /opt/cuda; }'
path=$(printf '%s\n' "$PATH" | tr ':' '\n' | grep -v cuda | paste -sd: -)
clean="env -u CUDA_HOME -u CUDA_PATH -u CUDACXX -u CUDAToolkit_ROOT -u LIBRARY_PATH PATH=$path"
check='! command -v nvcc && command -v "$0"'
if unshare -rm sh -c "$hide && exec $clean sh -c '$check' \"\$0\"" "$1" >/dev/null 2>&1; then
  exec unshare -rm sh -c "$hide && exec $clean \"\$0\" \"\$@\"" "$@"
fi
echo "note: cannot hide the CUDA toolkit here; running $1 with it" >&2
exec "$@"

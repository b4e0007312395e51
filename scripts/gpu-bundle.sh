#!/usr/bin/env bash
# Builds the bundle that scripts/gpu-check.sh runs on a GPU machine
# (docs/development.md, "Checking on a GPU machine"), then smoke-tests it here.
#
#   scripts/gpu-bundle.sh
#
# 1. SKEIN_TORCH=gpu-image (scripts/torch-env.sh): PyPI's torch of the GPU
#    machines' image (scripts/torch-gpu.txt, 2.11.0 for CUDA 13) in a venv
#    under ~/.cache/skein, and scripts/build.sh --example into build-gpu/: the
#    skein_runtime target (bin/skein, its libraries, the plugins), CUDA path
#    included.
# 2. build-gpu/bundle/: bin/skein, lib/ (Skein's libraries, lib/skein/plugins/,
#    and every other library they need directly but libtorch's, glibc's,
#    libgcc_s and libstdc++: Boost, zlib, libcrypto, stb), found through an
#    RPATH of $ORIGIN only; lib/compat/libstdc++.so.6 (used by gpu-check.sh
#    only where the image's own libstdc++ is too old for the bundle);
#    data/fashion-mnist/ (the example's data, which the GPU machine lacks);
#    BUNDLE.txt (what was built, from which commit, with what). Stripped; no
#    symbolic links.
#    libtorch and its CUDA libraries are the image's: gpu-check.sh puts them
#    on LD_LIBRARY_PATH.
# 3. Fails if the bundle exceeds what may travel to the GPU machine (64 MiB of
#    build outputs in all, SKEIN_GPU_BUNDLE_MAX_MIB).
# 4. Smoke test: scripts/gpu-check.sh --smoke with the venv's Python as the
#    image's and LD_LIBRARY_PATH unset (ldd of every file, skein --version,
#    a tiny CPU run).
set -euo pipefail
cd "$(dirname "$0")/.."
export SKEIN_TORCH=gpu-image
source scripts/torch-env.sh
max_mib=${SKEIN_GPU_BUNDLE_MAX_MIB:-64}
data_src=/usr/share/datasets/fashion-mnist
now() { date +%s; }
die() { echo "gpu-bundle: $*" >&2; exit 1; }

t0=$(now)
scripts/setup.sh --example
t1=$(now)
scripts/build.sh --example
t2=$(now)
skein_torch_env
build=$SKEIN_BUILD_DIR
bundle=$build/bundle
torch_real=$(realpath "$SKEIN_TORCH_PREFIX")
venv_real=$(realpath "$SKEIN_VENV")

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib/skein/plugins" "$bundle/lib/compat" "$bundle/data/fashion-mnist"
# No symbolic links (what carries the bundle may not keep them): each library
# once, under the name the loader asks for, its SONAME.
cp "$build/bin/skein" "$bundle/bin/"
for f in "$build"/lib/*.so*; do
  [ -L "$f" ] && continue
  soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  cp "$f" "$bundle/lib/${soname:-$(basename "$f")}"
done
cp "$build"/lib/skein/plugins/*.so "$bundle/lib/skein/plugins/"
mapfile -t own < <(find "$bundle/bin" "$bundle/lib" -type f | sort)

# Skein's own files: RPATH $ORIGIN-relative only (the build tree's and the
# venv's paths go), then stripped. CMake edits the RPATH in place (no patchelf).
rpath_script=$build/bundle-rpath.cmake
{
  for f in "${own[@]}"; do
    # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
    case $f in
      "$bundle"/lib/skein/plugins/*) rp='$ORIGIN/../..' ;;
      *) rp='$ORIGIN/../lib' ;;
    esac
    echo "file(RPATH_SET FILE \"$f\" NEW_RPATH \"$rp\")"
  done
} >"$rpath_script"
cmake -P "$rpath_script" >/dev/null
strip --strip-unneeded "${own[@]}"

# Every library a file of the bundle needs directly (DT_NEEDED), where the
# loader finds it here with the venv's torch/lib on LD_LIBRARY_PATH, sorted:
#   glibc's, libgcc_s       the image has them (its Python and libtorch need them)
#   libstdc++               lib/compat/, for gpu-check.sh to fall back on
#   in the bundle           nothing to do
#   libtorch's (the venv's) and CUDA's: the image's torch brings its own
#   anything else           copied into lib/, and its own needs looked at in turn
copied=()
scan=("${own[@]}")
while [ ${#scan[@]} -gt 0 ]; do
  next=()
  for f in "${scan[@]}"; do
    resolved=$(LD_LIBRARY_PATH=$SKEIN_TORCH_PREFIX/lib ldd "$f")
    for name in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case $name in
        libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libutil.so.* | \
          libresolv.so.* | ld-linux*.so.* | libgcc_s.so.*) continue ;;
      esac
      [ -e "$bundle/lib/$name" ] && continue
      path=$(awk -v n="$name" '$1 == n && $2 == "=>" { print $3 }' <<<"$resolved")
      if [ -z "$path" ] || [ "$path" = not ]; then die "$f needs $name, which is not found here"; fi
      real=$(realpath "$path")
      if [ "$name" = libstdc++.so.6 ]; then
        [ -e "$bundle/lib/compat/$name" ] || cp -L "$path" "$bundle/lib/compat/$name"
        continue
      fi
      case $real in
        "$torch_real"/* | "$venv_real"/* | /usr/local/cuda*) continue ;;
      esac
      cp -L "$path" "$bundle/lib/$name"
      copied+=("$name ($real)")
      next+=("$bundle/lib/$name")
    done
  done
  scan=("${next[@]}")
done

# What the bundle needs of libstdc++ (gpu-check.sh compares with the image's).
glibcxx=$(for f in "${own[@]}"; do objdump -T "$f"; done | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)

# The four files as Debian's dataset-fashion-mnist installs them (30 MB of gzip).
cp "$data_src"/*-ubyte.gz "$bundle/data/fashion-mnist/" 2>/dev/null ||
  die "no Fashion-MNIST in $data_src: scripts/setup.sh --example installs it"

mib() { echo "$(( ($(du -sb "$@" | awk '{ s += $1 } END { print s }') + 1048575) / 1048576 ))"; }
runtime_mib=$(mib "$bundle/bin" "$bundle/lib")
data_mib=$(mib "$bundle/data")
total_mib=$(mib "$bundle")
{
  echo "Skein GPU bundle, built $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m)"
  echo "commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built with: libtorch $("$SKEIN_PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null) ($SKEIN_TORCH_PREFIX)"
  echo "needs of libstdc++: $glibcxx (lib/compat/libstdc++.so.6 has up to $(grep -ao 'GLIBCXX_[0-9.]*' "$bundle/lib/compat/libstdc++.so.6" | sort -uV | tail -1))"
  echo "copied libraries: ${copied[*]:-none}"
  echo "size: ${total_mib} MiB (runtime ${runtime_mib} MiB, data ${data_mib} MiB)"
} >"$bundle/BUNDLE.txt"
t3=$(now)
cat "$bundle/BUNDLE.txt"
[ "$total_mib" -le "$max_mib" ] || die "the bundle is ${total_mib} MiB, more than the ${max_mib} MiB that may travel to the GPU machine"

# The bundle runs with the venv's torch and nothing else: LD_LIBRARY_PATH unset.
env -u LD_LIBRARY_PATH GPU_CHECK_PYTHON="$SKEIN_PYTHON" GPU_CHECK_BUNDLE="$bundle" scripts/gpu-check.sh --smoke
t4=$(now)
echo "gpu-bundle: $bundle, ${total_mib} MiB of ${max_mib}: setup $((t1 - t0)) s, build $((t2 - t1)) s, bundle $((t3 - t2)) s, smoke test $((t4 - t3)) s"

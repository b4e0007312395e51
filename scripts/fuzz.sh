#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang into build-fuzz/ and runs
# each for a bounded time over a copy of its seed corpus (fuzz/corpus/<target>/
# is never written to).
#
#   scripts/fuzz.sh            # 60 s per target
#   scripts/fuzz.sh 300        # 300 s per target (or SKEIN_FUZZ_SECONDS=300)
#   SKEIN_FUZZ_TARGETS="fuzz_idx fuzz_config" scripts/fuzz.sh 30
#   SKEIN_TORCH=pypi scripts/fuzz.sh 20   # against PyPI's torch, into build-fuzz-pypi/,
#                                         # fuzz_pt2 only (the .pt2 reader needs torch 2.x)
#
# One summary line per target. Exit status 1 when any target found something
# (a crash, a sanitizer report, a broken property, a timeout or running out
# of memory); the input that did it is kept in build-fuzz/findings/<target>/
# with the target's log. Reproduce with: build-fuzz/<target> <input file>.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${SKEIN_FUZZ_SECONDS:-60}}
source scripts/torch-env.sh
if [ "$SKEIN_TORCH" = pypi ]; then
  build=${SKEIN_FUZZ_BUILD_DIR:-build-fuzz-pypi}
  targets=${SKEIN_FUZZ_TARGETS:-fuzz_pt2}
else
  build=${SKEIN_FUZZ_BUILD_DIR:-build-fuzz}
  targets=${SKEIN_FUZZ_TARGETS:-fuzz_config fuzz_history fuzz_batch_log fuzz_idx fuzz_checkpoint_meta fuzz_npy fuzz_pickle}
fi
jobs=${SKEIN_JOBS:-2}
case $seconds in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [seconds-per-target]" >&2; exit 2 ;;
esac

scripts/setup.sh  # the packages (and PyPI's venv), as scripts/test.sh does (installs only what is missing)
skein_torch_env
t0=$(date +%s)
cmake -S fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_PREFIX_PATH="$SKEIN_TORCH_PREFIX" >/dev/null
cmake --build "$build" -j "$jobs"
echo "fuzz: build $(( $(date +%s) - t0 )) s"

work=$(mktemp -d "${TMPDIR:-/tmp}/skein-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$build/findings"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Leaks inside libraries we do not build, each explained there.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0}"
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
if [ -n "$symbolizer" ]; then export ASAN_SYMBOLIZER_PATH=$symbolizer; fi

failed=0
summary=()
for t in $targets; do
  dir=$work/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if [ -d "fuzz/corpus/$t" ]; then cp -R "fuzz/corpus/$t/." "$dir/corpus/"; fi
  max_len=16384
  if [ "$t" = fuzz_pt2 ]; then  # seeds written by PyPI's torch now, not binary files in the repository
    "$SKEIN_PYTHON" tests/python/pt2.py hostile "$dir/corpus" >/dev/null
    max_len=65536
  fi
  seeds=$(find "$dir/corpus" -type f | wc -l)
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=$max_len
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/")
  if [ -f "fuzz/dict/$t.dict" ]; then args+=(-dict="fuzz/dict/$t.dict"); fi
  rc=0
  "$build/$t" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2 || true)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ] && [ -z "$(ls -A "$dir/artifacts")" ]; then
    line="ok       $t: ${runs:-?} runs in ${seconds} s, coverage ${cov:-?} edges, corpus $seeds -> $corpus inputs"
  else
    failed=1
    mkdir -p "$build/findings/$t"
    cp "$dir/log" "$build/findings/$t/log"
    cp -R "$dir/artifacts/." "$build/findings/$t/" 2>/dev/null || true
    what=$(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|FINDING|runtime error|^==[0-9]+== ERROR: libFuzzer' "$dir/log" || true)
    line="FINDING  $t: exit $rc after ${runs:-?} runs: ${what:-see log}; input and log in $build/findings/$t/"
    tail -n 40 "$dir/log" >&2
  fi
  echo "fuzz: $line"
  summary+=("$line")
done

echo "fuzz: summary ($seconds s per target, $(( $(date +%s) - t0 )) s in all)"
for line in "${summary[@]}"; do echo "  $line"; done
exit $failed

#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs the whole CTest suite under them.
#
#   scripts/sanitize.sh                  # build, then every test
#   scripts/sanitize.sh -R test_config   # extra arguments go to ctest
#   SKEIN_ASAN_SKIP_BUILD=1 scripts/sanitize.sh ...   # tests only
#
# GCC, so the compiler fingerprint matches the plugin that test_sdk_install
# builds with the default compiler, and so plugins (linked --no-undefined) get
# libasan as a dependency. Every program the tests start (bin/skein, its
# workers, the test binaries) is instrumented, and so is every plugin they
# dlopen(); libasan comes first in each executable's library list.
#
# A report from any process, including children whose stderr a test
# swallows, lands in build-asan/sanitizer-logs/; the script fails if that
# directory is not empty at the end. Exit status: ctest's, or 1 on a report.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${SKEIN_ASAN_BUILD_DIR:-build-asan}
jobs=${SKEIN_JOBS:-2}
sanitize="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
link="-fsanitize=address,undefined"

now() { date +%s; }
scripts/setup.sh  # the packages, as scripts/test.sh does (installs only what is missing)
t0=$(now)
if [ "${SKEIN_ASAN_SKIP_BUILD:-0}" != 1 ]; then
  # -O1 -g1: fast enough for the suite, line numbers in every report. No
  # NDEBUG: assertions (nlohmann's too) stay on.
  cmake -S . -B "$build" -G Ninja \
    -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_EXE_LINKER_FLAGS="$link" \
    -DCMAKE_SHARED_LINKER_FLAGS="$link" \
    -DCMAKE_MODULE_LINKER_FLAGS="$link"
  cmake --build "$build" -j "$jobs"
fi
t1=$(now)

logs=$root/$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
supp=$root/tests/sanitizers
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
# halt_on_error: the first report ends the process. exitcode 66 keeps a report
# from passing for an expected "exit 1" in a test.
# intercept_tls_get_addr=0: the sanitizer runtime of GCC 12 (up to GCC 13 and LLVM 16) takes a
# dynamic TLS block that happens to start 16 bytes into a page for a pre-2.25
# glibc block with a header, reads two words before it as that header, and
# LeakSanitizer's tracer then dies at exit ("Tracer caught signal 11", no leak
# report). `skein train` dlopens libtorch, whose thread-locals are such blocks,
# so a few processes per suite run died that way (CI, 2026-12-01). The cost:
# pointers held only in dlopened libraries' thread-locals are not scanned.
export ASAN_OPTIONS="halt_on_error=1:exitcode=66:detect_leaks=1:check_initialization_order=1:intercept_tls_get_addr=0:log_path=$logs/asan:suppressions=$supp/asan.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
if [ -n "$symbolizer" ]; then export ASAN_SYMBOLIZER_PATH=$symbolizer; fi
# test_sdk_install builds examples/third-party-plugin with the installed SDK:
# CMake reads these when it first configures that build, so it is
# instrumented too.
export CXXFLAGS="$sanitize" LDFLAGS="$link"

status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" || status=$?
t2=$(now)

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "sanitize: sanitizer reports:"
  for f in $reports; do
    echo "---- $f"
    cat "$f"
  done
  status=1
fi
echo "sanitize: build $((t1 - t0)) s, tests $((t2 - t1)) s, $(echo "$reports" | grep -c . || true) report(s), exit $status"
exit $status

#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with ctest, then builds
# again with AddressSanitizer + UndefinedBehaviorSanitizer and runs the tests there too (the error
# paths must not crash or corrupt anything). CLEAVE_SKIP_SANITIZE=1 skips the second pass.
# CLEAVE_TSAN=1 adds a ThreadSanitizer build of the runtime's tests only (its worker threads) and
# runs them (ctest -L runtime); off by default (a third build), on in CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
bash scripts/build.sh
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600
if [ "${CLEAVE_SKIP_SANITIZE:-0}" != "1" ]; then
  CLEAVE_BUILD_DIR=build-asan CLEAVE_BUILD_TYPE=Debug bash scripts/build.sh \
    -DCLEAVE_SANITIZE=ON -DCLEAVE_BUILD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j "$jobs" --output-on-failure --timeout 900
fi
if [ "${CLEAVE_TSAN:-0}" = "1" ]; then
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLEAVE_SANITIZE_THREAD=ON \
    -DCLEAVE_BUILD_BENCH=OFF >/dev/null
  cmake --build build-tsan -j "$jobs" --target runtime_tests runtime_fault_tests
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -L runtime -j "$jobs" \
    --output-on-failure --timeout 900
fi

#!/usr/bin/env bash
# Builds the libFuzzer target for the ONNX importer with clang (ASan + UBSan) into build-fuzz/ and
# runs it for FUZZ_SECONDS (default 180) on a seed corpus of small models written with the onnx
# Python API. Crashes land in build-fuzz/crashes/; docs/import.md records the runs.
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-fuzz
seconds="${FUZZ_SECONDS:-180}"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCLEAVE_FUZZ=ON -DCLEAVE_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" --target onnx_import_fuzz
mkdir -p "$dir/corpus" "$dir/seeds" "$dir/crashes"
/usr/bin/python3 scripts/fuzz_seeds.py "$dir/seeds"
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
  "$dir/fuzz/onnx_import_fuzz" "$dir/corpus" "$dir/seeds" -max_total_time="$seconds" \
  -max_len=65536 -timeout=20 -rss_limit_mb=4096 -artifact_prefix="$dir/crashes/" \
  -print_final_stats=1 2>&1 | tee "$dir/fuzz.log" | grep -E '^#[0-9]+ +(DONE|pulse)|stat::|ERROR|SUMMARY' || true
echo "log: $dir/fuzz.log; crashes: $(ls "$dir/crashes" | wc -l) file(s) in $dir/crashes"

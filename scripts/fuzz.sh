#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan + UBSan) into build-fuzz/ and runs each for
# FUZZ_SECONDS (default 180) on its seed corpus, then prints the executions and crashes of each.
# Targets: the ONNX importer (seeds written with the onnx Python API, scripts/fuzz_seeds.py), the
# TDL parser and binder, and the cleave.graph, cleave.plan, cleave.cluster and cleave.profile
# readers (seeds written by the CLI, scripts/fuzz_seeds.sh, with the normal build's cleave:
# CLEAVE_BIN, default build/cleave, built if missing). Crashes land in build-fuzz/crashes/TARGET/;
# docs/fuzzing.md records the runs. Each target runs in libFuzzer's fork mode with FUZZ_WORKERS
# processes (default 1) and goes on past a crash, so a long run collects every crash it finds.
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh            # all targets
#   FUZZ_SECONDS=60 bash scripts/fuzz.sh tdl_fuzz    # some
#   FUZZ_WORKERS=8 FUZZ_SECONDS=540 bash scripts/fuzz.sh cluster_json_fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-fuzz
seconds="${FUZZ_SECONDS:-180}"
workers="${FUZZ_WORKERS:-1}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx_import_fuzz tdl_fuzz graph_json_fuzz plan_json_fuzz
                                     cluster_json_fuzz profile_json_fuzz)
cleave="${CLEAVE_BIN:-build/cleave}"
if [ ! -x "$cleave" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLEAVE_BUILD_BENCH=OFF >/dev/null
  cmake --build build -j "$(nproc)" --target cleave
fi
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCLEAVE_FUZZ=ON -DCLEAVE_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
rm -rf "$dir/seeds"
if [[ " ${targets[*]} " == *" onnx_import_fuzz "* ]]; then
  /usr/bin/python3 scripts/fuzz_seeds.py "$dir/seeds/onnx_import_fuzz"
fi
bash scripts/fuzz_seeds.sh "$cleave" "$dir/seeds"
summary=()
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t" "$dir/crashes/$t"
  # UBSan stops at its first report, so that libFuzzer keeps the input as a crash. No allocation
  # stacks (malloc_context_size=0): recording them was a tenth of a JSON target's time, and a
  # crash file replayed by hand prints them.
  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:malloc_context_size=0 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$dir/fuzz/$t" "$dir/corpus/$t" "$dir/seeds/$t" -fork="$workers" -ignore_crashes=1 \
    -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -max_len=65536 -timeout=20 \
    -rss_limit_mb=4096 -artifact_prefix="$dir/crashes/$t/" -print_funcs=0 >"$dir/$t.log" 2>&1 || true
  # The fork-mode parent's status lines start with the executions so far: "#12345: cov: ...".
  execs=$(sed -n 's/^#\([0-9]*\): .*/\1/p' "$dir/$t.log" | tail -1)
  summary+=("$(printf '%-18s %12s execs %8s/s  %s crash file(s) in %s' "$t" "${execs:-?}" \
    "$(( ${execs:-0} / seconds ))" "$(ls "$dir/crashes/$t" | wc -l)" "$dir/crashes/$t")")
done
printf '%s\n' "${summary[@]}"

#!/usr/bin/env bash
# Sanitizer and fuzz runs (CI runs this after scripts/test.sh; see README "Sanitizers and fuzzing").
#   asan: ASan+UBSan build (build-asan/) of everything, then every CPU test (ctest -L cpu).
#   tsan: TSan build (build-tsan/) of the cache, KernelCompiler and CompilePool concurrency tests
#         only (the other tuner code locks absl::Mutex, which the system Abseil hides from TSan).
#   fuzz: clang libFuzzer build (build-fuzz/), each fuzzer for FUZZ_SECONDS on a temp copy of its
#         seed corpus (the repo's corpus is never written).
# Any sanitizer report, failed test or fuzzer crash fails the script. Usage:
#   scripts/sanitize.sh [asan] [tsan] [fuzz]      (default: all three)
#   FUZZ_SECONDS=600 scripts/sanitize.sh fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
jobs=$(nproc)
parts=("$@")
((${#parts[@]})) || parts=(asan tsan fuzz)

# halt_on_error: the first report fails the test. LeakSanitizer is on; tests/sanitizers/lsan.supp
# only silences leaks whose allocation stack is inside libnvrtc (not ours, not instrumented).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

configure() {  # configure DIR ARGS...: quiet unless it fails
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc "$@" >"/tmp/tunejit-configure-$$.log" ||
    { cat "/tmp/tunejit-configure-$$.log"; return 1; }
}

# SeedCompile.TopHub*: NVRTC compiles of every TopHub kernel (~90 s, all of it inside libnvrtc,
# which is not instrumented); the normal run (scripts/test.sh) covers it.
run_asan() {
  configure build-asan -DTUNEJIT_ASAN=ON
  cmake --build build-asan -j"$jobs"
  ctest --test-dir build-asan -L cpu -E '^SeedCompile\.TopHub' --output-on-failure -j"$jobs"
}

tsan_targets=(cache_key_test kernel_cache_test cache_corruption_test cache_concurrency_test
              cache_cli_test jit_kernel_compiler_test tuner_compile_pool_test)
run_tsan() {
  configure build-tsan -DTUNEJIT_TSAN=ON
  cmake --build build-tsan -j"$jobs" --target "${tsan_targets[@]}"
  # Only the targets above are built: CTest lists every other GoogleTest binary as
  # <target>_NOT_BUILT, and the fuzz replay tests (single-threaded) by their own names.
  ctest --test-dir build-tsan -L cpu -E '_NOT_BUILT$|_fuzz_replay$' --output-on-failure -j"$jobs"
}

# fuzzer name -> seed corpus
declare -A fuzzers=(
  [tests/autotvm/autotvm_record_fuzz]=tests/data/autotvm/fuzz_corpus
  [tests/cache/cache_entry_fuzz]=tests/data/cache/fuzz_corpus
  [tests/graph/graph_safetensors_fuzz]=tests/data/graph/safetensors_corpus
  [tests/onnx/onnx_import_fuzz]=tests/data/onnx/import_corpus
  [tests/examples/examples_idx_file_fuzz]=tests/data/examples/idx_corpus
  [tests/executor/executor_build_plan_fuzz]=tests/data/executor/build_plan_fuzz_corpus
)
run_fuzz() {
  configure build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTUNEJIT_FUZZ=ON
  local targets=()
  for f in "${!fuzzers[@]}"; do targets+=("$(basename "$f")"); done
  cmake --build build-fuzz -j"$jobs" --target "${targets[@]}"
  local work
  work=$(mktemp -d /tmp/tunejit-fuzz.XXXXXX)
  local failed=0
  for f in "${!fuzzers[@]}"; do
    local name
    name=$(basename "$f")
    mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
    cp -r "${fuzzers[$f]}/." "$work/$name/corpus/"
    echo "fuzz: $name for ${FUZZ_SECONDS}s (corpus copy in $work/$name)"
    if ! build-fuzz/"$f" "$work/$name/corpus" -max_total_time="$FUZZ_SECONDS" -timeout=25 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$name/artifacts/" \
      >"$work/$name/log" 2>&1; then
      echo "fuzz: $name FAILED; last lines of its log and the crashing input:"
      tail -40 "$work/$name/log"
      # cache_entry_fuzz silences stderr around each call for speed, which can swallow the
      # sanitizer report: replay each crash input once with stderr kept.
      for input in "$work/$name/artifacts/"*; do
        [ -f "$input" ] || continue
        echo "fuzz: replaying $input"
        TUNEJIT_FUZZ_VERBOSE=1 build-fuzz/"$f" "$input" 2>&1 | tail -60 || true
      done
      failed=1
    else
      grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
        "$work/$name/log" || true
    fi
  done
  ((failed == 0)) || { echo "fuzz: crash inputs kept in $work"; return 1; }
  rm -rf "$work"
}

status=0
for part in "${parts[@]}"; do
  start=$(date +%s)
  echo "=== sanitize: $part ==="
  if "run_$part"; then result=passed; else result=FAILED; status=1; fi
  echo "=== sanitize: $part $result in $(($(date +%s) - start)) s ==="
done
exit $status

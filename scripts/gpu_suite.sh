#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by ../shared/tools/gpu-bundle (see docs/benchmarks.md):
# every GPU test binary, the JIT/cache benchmark, `tunejit warm` cold and warm, the seed log's layers
# on the GPU, and cuDNN's per-layer peer numbers, all in one call. Logs go to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export TUNEJIT_SOURCE_DIR=$PWD TUNEJIT_CACHE_DIR=/tmp/tunejit-cache
bin=.gpu/bin
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  "$bin/tunejit" info
  for t in jit_gpu_test ops_elementwise_test ops_dense_test ops_conv2d_direct_test \
           ops_depthwise_test ops_winograd_gpu_test ops_conv2d_int8_gpu_test; do
    echo "=== $t"
    # Straight to a file, line-buffered: a crash or timeout must not swallow the output.
    timeout 300 stdbuf -oL "$bin/$t" --gtest_brief=1 > "$out/$t.txt" 2>&1
    echo "=== $t exit $?"; tail -30 "$out/$t.txt"; rm -f "$out/$t.txt"
  done
} > "$out/tests.log" 2>&1
{
  echo "=== jit_bench"; timeout 120 "$bin/jit_bench"
  rm -rf "$TUNEJIT_CACHE_DIR"
  echo "=== warm, cold cache"; /usr/bin/time -f "wall %e s" "$bin/tunejit" warm --log data/seed-vgg16-v100.log 2>&1 | tail -3
  echo "=== warm, warm cache"; /usr/bin/time -f "wall %e s" "$bin/tunejit" warm --log data/seed-vgg16-v100.log 2>&1 | tail -3
  echo "=== seed layers"; timeout 300 "$bin/seed_layers" data/seed-vgg16-v100.log 20
} > "$out/bench.log" 2>&1
[ -n "${SKIP_PEERS:-}" ] || { echo "=== cudnn_convs"; LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH timeout 240 "$bin/cudnn_convs"; } > "$out/peers.log" 2>&1
grep -E "^=== .* exit|PASSED|FAILED|SKIPPED" "$out/tests.log" | tail -40
tail -40 "$out/bench.log"

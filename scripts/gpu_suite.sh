#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by ../shared/tools/gpu-bundle (see docs/benchmarks.md),
# in one call: `tunejit run` on VGG-16 batch 128 (fp32, then int8 with a cold and a warm kernel
# cache, weights from a safetensors file), the tensor-core runs (fp16 and int8 through the wgmma
# templates with the shipped logs, twice each, cuDNN fp16 beside them), the peers from
# ../shared/bench (copied to .gpu/peers; `compile` is torch.compile's, minutes of autotuning), then
# every GPU test binary. Logs are packed into $OUT/results.tgz (the device tool returns only a few
# files per call).
#   PARTS="run tc peers compile tests" (default all but compile)
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
parts=${PARTS:-run tc peers tests}
log=data/seed-vgg16-v100.log
w=/tmp/vgg16-random.safetensors

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv > "$out/gpu.txt"
"$bin/tunejit" info >> "$out/gpu.txt" 2>&1
rm -rf "$TUNEJIT_CACHE_DIR"
if [[ $parts == *run* ]]; then
  step run-fp32-cold 240 "$bin/tunejit" run --precision fp32 --log "$log" --save-weights "$w" \
    --json "$out/run-fp32.json" --plot "$out/run-fp32.svg"
  step run-int8-cold 240 "$bin/tunejit" run --precision int8 --log "$log" --weights "$w" \
    --json "$out/run-int8.json" --plot "$out/run-int8.svg"
  step run-int8-warm 200 "$bin/tunejit" run --precision int8 --log "$log" --weights "$w" \
    --json "$out/run-int8-warm.json"
fi
if [[ $parts == *tc* ]]; then
  for i in 1 2; do
    step "run-fp16-$i" 240 "$bin/tunejit" run --precision fp16 --log data/vgg16-fp16-wgmma.log \
      --json "$out/run-fp16-$i.json"
    step "run-int8-tc-$i" 240 "$bin/tunejit" run --precision int8 --tensor-cores \
      --log data/vgg16-int8-wgmma.log --json "$out/run-int8-tc-$i.json"
  done
fi
if [[ $parts == *peers* ]]; then
  OUT=$out step peer-pytorch 200 python3 .gpu/peers/pytorch_vgg16.py
fi
if [[ $parts == *compile* ]]; then
  OUT=$out step peer-compile 400 python3 .gpu/peers/pytorch_compile_vgg16.py
fi
if [[ $parts == *tests* ]]; then
  # Every binary that holds a test labelled gpu in CTest (`ctest -L gpu -N` lists them).
  for t in ${TESTS:-ops_conv2d_wgmma_gpu_test ops_gemm_wgmma_gpu_test ops_conv2d_stem_gpu_test \
           executor_gpu_test baseline_cudnn_gpu_test tuner_gpu_test tuner_isolation_gpu_test \
           jit_gpu_test ops_winograd_gpu_test ops_conv2d_int8_gpu_test cli_run_command_gpu_test \
           ops_conv2d_direct_test ops_dense_test ops_depthwise_test ops_elementwise_test \
           ops_tensor_ops_gpu_test graph_executor_gpu_test ops_depthwise_nhwc_gpu_test \
           ops_activation_epilogue_gpu_test ops_batch_matmul_gpu_test}; do
    [ -x "$bin/$t" ] && step "$t" 300 "$bin/$t" --gtest_brief=1
  done
fi
cat "$out/summary.txt"

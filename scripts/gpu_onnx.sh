#!/usr/bin/env bash
# ONNX models on the GPU machine (over a gpu-bundle, like scripts/gpu_tune.sh), in one call:
#   TESTS="bin ..."     GPU test binaries to run first
#   MODELS=vgg16,...    torchvision models exported by scripts/export_onnx.py (torch is on the GPU
#                       machine; random weights), run fp32 and compared with PyTorch's fp32 output
#   QDQ=1               also VGG-16 with QDQ fake quantization (export_onnx.py --qdq), run int8
#                       and compared with PyTorch's output of the fake-quantized model
#   INT8_LOG=FILE       tuning log of the int8 run (default: the shipped seed log)
#   REPEATS=N           timed runs of each `tunejit run` (default 10)
#   COMPARE_ORT=1       compare_outputs.py also runs the ONNX file in ONNX Runtime (CPU), if present
# Everything lands in $OUT/results.tgz.
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
onnx=/tmp/onnx
repeats=${REPEATS:-10}
for t in ${TESTS:-}; do
  step "$t" 200 "$bin/$t" --gtest_brief=1
done
run_model() {  # run_model NAME PRECISION LOG MAX_REL FILE_STEM
  local name=$1 precision=$2 log=$3 max_rel=$4 stem=$5
  step "run-$name" 240 "$bin/tunejit" run --model "$onnx/$stem.onnx" --precision "$precision" \
    --log "$log" --repeats "$repeats" --input "$onnx/$stem-input.bin" \
    --output "$onnx/$name-tunejit.bin" --json "$out/run-$name.json"
  step "compare-$name" 120 python3 scripts/compare_outputs.py "$onnx/$name-tunejit.bin" \
    "$onnx/$stem-torch.bin" --classes 1000 --max-rel "$max_rel" ${COMPARE_ORT:+--onnx "$onnx/$stem.onnx" --input "$onnx/$stem-input.bin"}
}
if [ -n "${MODELS:-}" ]; then
  step export 240 python3 scripts/export_onnx.py --out "$onnx" --models "$MODELS" --batch 128
  for m in ${MODELS//,/ }; do
    run_model "$m" fp32 data/seed-vgg16-v100.log 1e-4 "$m"
  done
fi
if [ -n "${QDQ:-}" ]; then
  step export-qdq 240 python3 scripts/export_onnx.py --out "$onnx" --qdq --batch 128
  run_model vgg16-qdq int8 "${INT8_LOG:-data/seed-vgg16-v100.log}" 0.05 vgg16-qdq
  # The float32 reference of the same fake-quant model, to show what float64 changes.
  step compare-vgg16-qdq-fp32ref 60 python3 scripts/compare_outputs.py \
    "$onnx/vgg16-qdq-tunejit.bin" "$onnx/vgg16-qdq-torch-fp32.bin" --max-rel 1
  step compare-refs 60 python3 scripts/compare_outputs.py "$onnx/vgg16-qdq-torch-fp32.bin" \
    "$onnx/vgg16-qdq-torch.bin" --max-rel 1
fi
cat "$out/summary.txt"

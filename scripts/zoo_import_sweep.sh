#!/usr/bin/env bash
# Every torchvision classifier (or MODELS=a,b) through the importer on the CPU, no GPU needed:
# exported at batch 1 with random weights (scripts/zoo.py export), imported and run by the CPU
# reference forward against PyTorch's float32 output (OnnxZooTest: relative L2 < 1e-4), then
# `tunejit warm --precision fp16 --arch sm_90a` (the kernels the model needs compile). One line
# per model in $OUT/sweep.txt: export / import / warm status, the test's "zoo" line or the first
# error. The models too large for a small CPU (SKIP, a regex) are left out by default.
#   scripts/zoo_import_sweep.sh                      # all of them, into build/zoo-sweep
#   MODELS=swin_t,regnet_y_400mf OUT=/tmp/s scripts/zoo_import_sweep.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/zoo-sweep}
skip=${SKIP:-'^(vit_h|vit_l|regnet_y_128gf|regnet_y_32gf|regnet_y_16gf|regnet_x_32gf|regnet_x_16gf|efficientnet_b[5-7]|efficientnet_v2_[lm]|maxvit|swin_v2_b|swin_b|vgg|wide_resnet101|resnext101)'}
mkdir -p "$out"
models=${MODELS:-$(python3 -c "import torchvision; print(','.join(torchvision.models.list_models(module=torchvision.models)))")}
: > "$out/sweep.txt"
for m in ${models//,/ }; do
  if [ -z "${MODELS:-}" ] && [[ $m =~ $skip ]]; then continue; fi
  export_rc=0 import_rc=- warm_rc=-
  timeout 300 python3 scripts/zoo.py export --out "$out" --models "$m" --batch 1 \
    > "$out/$m.export.log" 2>&1 || export_rc=$?
  line=$(tail -1 "$out/$m.export.log")
  if [ -f "$out/$m.onnx" ]; then
    TUNEJIT_ONNX_ZOO=$out TUNEJIT_ONNX_ZOO_MODELS=$m timeout 900 \
      build/tests/onnx/onnx_import_test --gtest_filter='OnnxZooTest.*' > "$out/$m.import.log" 2>&1
    import_rc=$?
    line=$(grep -m1 -E "^zoo |UNIMPLEMENTED|INVALID_ARGUMENT" "$out/$m.import.log")
    TUNEJIT_CACHE_DIR=$out/cache timeout 600 build/tunejit warm --model "$out/$m.onnx" \
      --precision fp16 --arch sm_90a > "$out/$m.warm.log" 2>&1
    warm_rc=$?
    rm -f "$out/$m.onnx"  # hundreds of MB each
  fi
  echo "$m: export $export_rc, import+compare $import_rc, warm $warm_rc: $line" | tee -a "$out/sweep.txt"
done

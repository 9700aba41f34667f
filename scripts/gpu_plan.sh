#!/usr/bin/env bash
# Start-up with a saved build plan (executor/build_plan.h), on the GPU machine over a gpu-bundle:
# VGG-16 batch 128 at fp16 and at int8 on the tensor cores, weights from a safetensors file, and
# ResNet-50 batch 128 from ONNX (MODELS="vgg16" skips it), each
#   cold:    empty kernel cache, no plan: the full build, which writes the plan;
#   plan:    warm cache + the plan (no kernel choice, verification or calibration);
#   noplan:  warm cache, no plan (today's warm start);
#   plan-cold-pages: the plan again after dropping the page cache (where the machine lets us).
# Each run's startup phases (model, log, weights, device, build, first run) are in its JSON and
# printed by `tunejit run`; summary lines go to $OUT/plan-summary.txt.
#   OUT=$OUT DEADLINE=300 bash scripts/gpu_plan.sh
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
w=/tmp/vgg16-random.safetensors
plans=/tmp/plans
rm -rf "$TUNEJIT_CACHE_DIR" "$plans"
mkdir -p "$plans"
"$bin/tunejit" run --precision fp32 --no-cudnn --repeats 1 --save-weights "$w" \
  > "$out/save-weights.txt" 2>&1 || true

startup() {  # startup NAME: the run's startup phases, one line
  python3 - "$out/$1.json" "$1" >> "$out/plan-summary.txt" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
phases = {p["phase"]: p["seconds"] for p in r["startup"]}
total = sum(v for k, v in phases.items())
b = r["build"]
print(f"{sys.argv[2]}: total {total:.3f} s; " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items())
      + f"; plan_used {b.get('plan_used')} fingerprint {b.get('fingerprint_seconds', 0):.3f} upload "
      f"{b['upload_seconds']:.3f} (prepare {b.get('weight_prepare_seconds', 0):.3f}, copy "
      f"{b.get('weight_copy_seconds', 0):.3f}; {r['memory']['weight_bytes'] / 1e6:.0f} MB at "
      f"{r['memory']['weight_bytes'] / max(b['upload_seconds'], 1e-9) / 1e9:.1f} GB/s) compile {b['compile_seconds']:.3f} verify {b['verify_seconds']:.3f}"
      f" calibrate {b['calibrate_seconds']:.3f}; e2e {r['end_to_end']['ours_seconds'] * 1e3:.3f} ms")
PY
}

drop_page_cache() { sync && echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; }

read_time() {  # read_time NAME FILE: seconds to read FILE, page cache warm and (if allowed) cold
  local read='import sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    while f.read(1 << 24):
        pass
print(f"{time.perf_counter() - t:.3f} s")'
  cat "$2" > /dev/null
  echo "$1 read warm: $(python3 -c "$read" "$2") ($(stat -c %s "$2") bytes)" >> "$out/plan-summary.txt"
  if drop_page_cache; then
    echo "$1 read cold: $(python3 -c "$read" "$2")" >> "$out/plan-summary.txt"
  fi
}

measure() {  # measure NAME ARGS...: cold, plan, noplan and plan-cold-pages runs of one model
  local mode=$1; shift
  local run=("$bin/tunejit" run "$@" --no-cudnn --repeats 5)
  rm -rf "$TUNEJIT_CACHE_DIR"
  step "$mode-cold" 240 "${run[@]}" --plan "$plans/$mode.plan" --output "$out/$mode-cold.bin" \
    --json "$out/$mode-cold.json" && startup "$mode-cold"
  step "$mode-plan" 120 "${run[@]}" --plan "$plans/$mode.plan" --output "$out/$mode-plan.bin" \
    --json "$out/$mode-plan.json" && startup "$mode-plan"
  step "$mode-noplan" 120 "${run[@]}" --json "$out/$mode-noplan.json" && startup "$mode-noplan"
  if drop_page_cache; then
    step "$mode-plan-cold-pages" 120 "${run[@]}" --plan "$plans/$mode.plan" \
      --json "$out/$mode-plan-cold-pages.json" && startup "$mode-plan-cold-pages"
  fi
  cmp "$out/$mode-cold.bin" "$out/$mode-plan.bin" \
    && echo "$mode: outputs with and without the plan are bit-identical" >> "$out/plan-summary.txt" \
    || echo "$mode: OUTPUTS DIFFER with the plan" >> "$out/plan-summary.txt"
}

read_time vgg16-weights "$w"
measure vgg16-fp16 --precision fp16 --log data/vgg16-fp16-wgmma.log --weights "$w"
measure vgg16-int8tc --precision int8 --tensor-cores --log data/vgg16-int8-wgmma.log --weights "$w"
# ResNet-50: its weights are the ONNX file's initializers, read in the "model" phase.
if [[ ${MODELS:-vgg16 resnet50} == *resnet50* ]]; then
  step export-resnet50 240 python3 scripts/export_onnx.py --out /tmp/plan-models \
    --models resnet50 --batch 128
  r50=/tmp/plan-models/resnet50.onnx
  if [ -f "$r50" ]; then
    read_time resnet50-onnx "$r50"
    measure resnet50-fp16 --model "$r50" --precision fp16
    measure resnet50-int8tc --model "$r50" --precision int8 --tensor-cores
  fi
fi
cp "$plans"/*.plan "$out/" 2> /dev/null
cat "$out/plan-summary.txt"
cat "$out/summary.txt"

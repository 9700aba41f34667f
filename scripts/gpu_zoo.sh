#!/usr/bin/env bash
# The model zoo on the GPU machine (over a gpu-bundle, like scripts/gpu_onnx.sh), in one call:
# torchvision classifiers with random weights exported to ONNX (scripts/zoo.py export), each run
# by `tunejit run` fp32 and fp16 and compared with PyTorch's fp32 output (scripts/compare_outputs.py,
# bounds 1e-4 and 1e-2), PyTorch's own fp16 eager and torch.compile timings (scripts/zoo.py peers),
# then one markdown table (scripts/zoo.py table), printed and written to $out/zoo-table.md.
#   MODELS=a,b,...    torchvision models (default: resnet18,resnet50,mobilenet_v2,
#                     mobilenet_v3_large,efficientnet_b0,densenet121,squeezenet1_1,convnext_tiny,
#                     vit_b_16), or a text model of scripts/export_onnx.py TEXT_MODELS
#                     (bert_base, gpt2_small, llama_tiny, ...: seq 128, int64 ids);
#                     NAME@B runs that model at batch B (bert_base@1,bert_base@32: both in one
#                     table); BERT's output (hidden states) is compared without top-1
#   BATCH=32          static batch of the exported files (of the names without @B)
#   REPEATS=N         timed runs of each `tunejit run` (default 20)
#   PRECISIONS="fp32 fp16"  the runs of each model (default both)
#   PARTS="export run peers table"  what to do (default all). The files stay in /tmp/zoo, which a
#                     warm machine keeps between calls: torch.compile's max-autotune takes minutes
#                     per model, so e.g. PARTS="export run table" in one call, PARTS="peers table"
#                     in the next
#   COMPILE_TIMEOUT=S torch.compile limit per model (default 300; 0 skips torch.compile)
#   RUN_LIMIT=S       limit of each `tunejit run` (default 300)
#   LOG=FILE          tuning log of the runs (default data/seed-vgg16-v100.log)
#   DEADLINE=S        no step past S seconds of this script (scripts/gpu_common.sh)
# One model failing (export, import, run, compile) does not stop the others: the table says why.
# The small files (JSON reports, stderr of each run, op counts, timings) are copied to $out/zoo;
# everything lands in $OUT/results.tgz. For example, on the device machine:
#   OUT=$OUT MODELS=resnet18,vit_b_16 DEADLINE=560 bash scripts/gpu_zoo.sh
#   OUT=$OUT MODELS=bert_base@1,bert_base@32 COMPILE_TIMEOUT=0 DEADLINE=560 bash scripts/gpu_zoo.sh
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
models=${MODELS:-resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,squeezenet1_1,convnext_tiny,vit_b_16}
batch=${BATCH:-32}
repeats=${REPEATS:-20}
parts=${PARTS:-export run peers table}
precisions=${PRECISIONS:-fp32 fp16}
compile_timeout=${COMPILE_TIMEOUT:-300}
run_limit=${RUN_LIMIT:-300}
log=${LOG:-data/seed-vgg16-v100.log}
work=/tmp/zoo
mkdir -p "$work" "$out/zoo"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv \
  > "$out/gpu.txt" 2>&1

keep() {  # keep MODEL: its small result files, into $out/zoo
  cp -f "$work/$1"-*.json "$work/$1"-*.err "$work/$1"-*.log "$out/zoo/" \
    2> /dev/null
  true
}

run_model() {  # run_model MODEL PRECISION MAX_REL: `tunejit run`, stderr to MODEL-PRECISION.err
  local m=$1 p=$2 max_rel=$3
  local err=$work/$m-$p.err
  rm -f "$work/$m-$p.json" "$work/$m-$p.bin" "$work/$m-$p-compare.json" "$err"
  [ -f "$work/$m.onnx" ] || return 0  # not exported: the table says so
  step "run-$m-$p" "$run_limit" bash -c 'exec "${@:2}" 2> "$1"' _ "$err" \
    "$bin/tunejit" run --model "$work/$m.onnx" --precision "$p" --log "$log" \
    --repeats "$repeats" --input "$work/$m-input.bin" --output "$work/$m-$p.bin" \
    --json "$work/$m-$p.json"
  case $last_rc in
    124 | 137) echo "tunejit run: timed out after $run_limit s" >> "$err" ;;
    skipped) echo "tunejit run: skipped (DEADLINE)" >> "$err" ;;
  esac
  local shape=(--classes 1000)
  case $m in bert* | gpt2* | opt* | llama*) shape=(--no-top1) ;; esac  # hidden states, no classes
  if [ -f "$work/$m-$p.bin" ]; then
    step "compare-$m-$p" 60 python3 scripts/compare_outputs.py "$work/$m-$p.bin" \
      "$work/$m-torch.bin" "${shape[@]}" --max-rel "$max_rel" --json "$work/$m-$p-compare.json"
  fi
}

for m in ${models//,/ }; do
  if [[ $parts == *export* ]]; then
    step "export-$m" 300 python3 scripts/zoo.py export --out "$work" --models "$m" --batch "$batch"
  fi
  if [[ $parts == *run* ]]; then
    [[ $precisions == *fp32* ]] && run_model "$m" fp32 1e-4
    [[ $precisions == *fp16* ]] && run_model "$m" fp16 1e-2
  fi
  keep "$m"
done
if [[ $parts == *peers* ]]; then
  for m in ${models//,/ }; do
    step "peers-$m" $((${compile_timeout%.*} + 240)) python3 scripts/zoo.py peers --out "$work" \
      --models "$m" --batch "$batch" --compile-timeout "$compile_timeout"
    keep "$m"
  done
fi
if [[ $parts == *table* ]]; then
  step table 60 python3 scripts/zoo.py table --dir "$work" --models "$models" \
    --markdown "$out/zoo-table.md"
  cat "$out/zoo-table.md" 2> /dev/null
fi
cat "$out/summary.txt"

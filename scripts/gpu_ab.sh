#!/usr/bin/env bash
# A/B on the GPU machine, in one call over a gpu-bundle holding two builds of tunejit: .gpu/bin/
# tunejit (the change) and .gpu/bin/tunejit-base (the commit before it). VGG-16 batch 128 at fp16
# and at int8 on the tensor cores with the shipped logs, each build twice, interleaved (base, new,
# base, new) so that clock drift hits both; cuDNN's fp16 network runs beside each in the same
# process. Then, unless PARTS leaves out `tests`, the GPU test binaries the bundle carries. Ends
# with the summary table; everything lands in $OUT/results.tgz.
#   PARTS="ab tests" (default both)
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
parts=${PARTS:-ab tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv > "$out/gpu.txt"
"$bin/tunejit" info >> "$out/gpu.txt" 2>&1
runs=()
if [[ $parts == *ab* ]]; then
  for i in 1 2; do
    for build in base new; do
      tj="$bin/tunejit"; [ "$build" = base ] && tj="$bin/tunejit-base"
      step "$build-fp16-$i" 240 "$tj" run --precision fp16 --log data/vgg16-fp16-wgmma.log \
        --json "$out/$build-fp16-$i.json"
      step "$build-int8tc-$i" 240 "$tj" run --precision int8 --tensor-cores \
        --log data/vgg16-int8-wgmma.log --json "$out/$build-int8tc-$i.json"
      runs+=("$out/$build-fp16-$i.json" "$out/$build-int8tc-$i.json")
    done
  done
fi
if [[ $parts == *tests* ]]; then
  for t in $bin/*_test; do
    step "$(basename "$t")" 300 "$t" --gtest_brief=1
  done
fi
cat "$out/summary.txt"
((${#runs[@]})) && python3 scripts/run_summary.py "${runs[@]}" | tee "$out/ab.txt"
exit 0

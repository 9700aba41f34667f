#!/usr/bin/env bash
# The main job: set up, build, then run VGG-16 (batch 128) with `tunejit run`. First as the seed
# user tuned it: int8 from the shipped seed log (TVM's dp4a templates): per-layer kernels, records,
# times beside cuDNN's, accuracy against cuDNN's float32 output, end-to-end latency and startup
# split. Then on a Hopper GPU what tunejit is for: the same model with the shipped tensor-core logs
# (fp16, and int8 with --tensor-cores) beside cuDNN's fp16 network. It ends with one summary table
# (model, precision, log, ours, cuDNN, ratio, accuracy check). Without a GPU it says so, and does
# what needs none: compiles every kernel of the log for the H200 (sm_90) into the kernel cache and
# shows, per layer, which records the log has and which one tunejit would choose.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
log=data/seed-vgg16-v100.log
if build/tunejit info >/dev/null 2>&1; then
  runs=(build/vgg16-int8.json)
  echo
  echo "== tunejit run: VGG-16, batch 128, int8, records from $log =="
  build/tunejit run --log "$log" --json build/vgg16-int8.json --plot build/vgg16-int8.svg ||
    echo "(the seed-log run failed: see above)"
  echo "(per-layer JSON in build/vgg16-int8.json, plot in build/vgg16-int8.svg)"
  if build/tunejit info 2>/dev/null | grep -qE "^device 0: .*, sm_90"; then
    echo
    echo "== tunejit run: VGG-16, batch 128, fp16 on the tensor cores, data/vgg16-fp16-wgmma.log =="
    build/tunejit run --precision fp16 --log data/vgg16-fp16-wgmma.log \
      --json build/vgg16-fp16.json || echo "(the fp16 run failed: see above)"
    echo
    echo "== tunejit run: VGG-16, batch 128, int8 on the tensor cores, data/vgg16-int8-wgmma.log =="
    build/tunejit run --precision int8 --tensor-cores --log data/vgg16-int8-wgmma.log \
      --json build/vgg16-int8-tc.json || echo "(the int8 tensor-core run failed: see above)"
    runs+=(build/vgg16-fp16.json build/vgg16-int8-tc.json)
  else
    echo
    echo "(the tensor-core runs need a Hopper GPU, sm_90: skipped)"
  fi
  echo
  echo "== summary =="
  python3 scripts/run_summary.py "${runs[@]}"
  exit 0
fi
echo
echo "No NVIDIA GPU here (tunejit info finds no CUDA device): running kernels needs one, so"
echo "'tunejit run' is skipped. What needs no GPU follows."
echo
echo "== tunejit warm: compile every kernel of $log for sm_90 into the kernel cache =="
build/tunejit warm --arch sm_90 --log "$log"
echo
echo "== again: a warm start is served from the cache =="
build/tunejit warm --arch sm_90 --log "$log"
echo
echo "== tunejit log show $log: per layer, the records and the one tunejit would choose =="
build/tunejit log show "$log"
echo
echo "On a machine with an NVIDIA GPU, scripts/main.sh runs the network: build/tunejit run --help"

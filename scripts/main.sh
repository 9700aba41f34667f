#!/usr/bin/env bash
# The main job: set up, build, then run VGG-16 (batch 128, int8 as the seed log was tuned) from the
# shipped seed log with `tunejit run`: per-layer kernels, records, times beside cuDNN's, accuracy
# against cuDNN's float32 output, end-to-end latency and startup split. Without a GPU it says so,
# and does what needs none: compiles every kernel of the log for the H200 (sm_90) into the kernel
# cache and shows, per layer, which records the log has and which one tunejit would choose.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
log=data/seed-vgg16-v100.log
if build/tunejit info >/dev/null 2>&1; then
  echo
  echo "== tunejit run: VGG-16, batch 128, int8, records from $log =="
  build/tunejit run --log "$log" --json build/vgg16-int8.json --plot build/vgg16-int8.svg
  echo "(per-layer JSON in build/vgg16-int8.json, plot in build/vgg16-int8.svg)"
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

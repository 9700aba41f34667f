#!/usr/bin/env bash
# The main job: set up, build, then compile (and cache) every kernel of the shipped seed log for the
# H200's architecture; where a GPU is present, also show it and check a kernel on it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
log=data/seed-vgg16-v100.log
echo
echo "== tunejit warm: compile every kernel of $log for sm_90 into the kernel cache =="
build/tunejit warm --arch sm_90 --log "$log"
echo
echo "== again: a warm start is served from the cache =="
build/tunejit warm --arch sm_90 --log "$log"
echo
echo "== tunejit log show $log =="
build/tunejit log show "$log"
echo
if build/tunejit info; then
  echo "(GPU present: run 'ctest --test-dir build -L gpu' for the GPU tests)"
else
  echo "No GPU here: the steps above needed none. Running kernels needs an NVIDIA GPU."
fi

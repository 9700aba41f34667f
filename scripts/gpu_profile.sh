#!/usr/bin/env bash
# Nsight Compute on the GPU machine (over a gpu-bundle of build/tunejit, like scripts/gpu_tune.sh),
# to set our conv kernels beside cuDNN's on the same shapes:
#   1. `ncu` details (speed of light, compute and memory workload, warp states, launch) of the
#      wgmma conv kernels of `tunejit run --precision PRECISION --log LOG` (default fp16 with the
#      shipped fp16 log): KERNELS conv2d_wgmma launches after SKIP (default all 12 of VGG-16; the
#      per-record checks run each layer's kernel once, in layer order, before anything else);
#   2. with SOURCE=N, the SASS source counters (stall samples per instruction) of launch N;
#   3. with CUDNN=1, the same details of cuDNN's fp16 NHWC kernels on VGG-16's conv shapes
#      (scripts/profile/cudnn_convs.py, each conv once inside an NVTX range).
# The clocks are left alone (--clock-control none: docs/history/2026-12-02-eleventh-session.md gives cycles, which are
# comparable across kernels the GPU clocked differently). Summarise the CSVs here with
# `python3 scripts/profile/ncu_summary.py FILE [--source]`. Everything lands in $OUT/results.tgz.
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
log=${LOG:-data/vgg16-fp16-wgmma.log}
run=("$bin/tunejit" run --precision "${PRECISION:-fp16}" --log "$log")
[ "${PRECISION:-fp16}" = int8 ] && run+=(--tensor-cores)
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis
  --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats)
step ncu-ours 300 ncu --clock-control none "${sections[@]}" --kernel-name regex:conv2d_wgmma \
  --launch-skip "${SKIP:-0}" --launch-count "${KERNELS:-12}" --csv --page details "${run[@]}"
if [ -n "${SOURCE:-}" ]; then
  step ncu-source 200 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --kernel-name regex:conv2d_wgmma --launch-skip "$SOURCE" --launch-count 1 --page source \
    --print-source sass --csv "${run[@]}"
fi
if [ -n "${CUDNN:-}" ]; then
  step ncu-cudnn 200 ncu --clock-control none "${sections[@]}" --nvtx --nvtx-include "prof/" \
    --csv --page details python3 scripts/profile/cudnn_convs.py
fi
cat "$out/summary.txt"

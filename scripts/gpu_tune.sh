#!/usr/bin/env bash
# Tuning on the GPU machine (over a gpu-bundle, like scripts/gpu_suite.sh), in one call:
#   TESTS="bin ..."   GPU test binaries to run first (TEST_LIMIT=S each, default 200; a failure
#                     stops the call unless KEEP_GOING=1)
#   TESTS_LAST="bin ..." the same, after everything else (when the tuning must not be cut short)
#   RUN_SEED=1        `tunejit run` int8 with the shipped seed log
#   PEERS=1           ../shared/bench's PyTorch VGG-16 (copied to .gpu/peers) in the same call
#   COMPARE="t,..." COMPARE_TRIALS=N   random vs model-guided search on those tasks, N trials in
#                     all (split by FLOPs); COMPARE_FLAGS adds flags (e.g. --trial-batch 8),
#                     COMPARE_LIMIT caps each of the two runs (seconds, default 620)
#   RUN_LOGS="a.log b.log"  `tunejit run` int8 with each of those logs too (same call, same GPU)
#   BUDGET=5m         VGG-16 batch 128 int8 tuned from nothing (or RESUME=FILE: continue that log
#                     up to BUDGET in all), then `tunejit run` with the resulting log
#   RUN_FP16=1        `tunejit run --precision fp16` with no fp16 records (every layer's fallback)
#   RUN_FP16_LOGS="a.log ..."  `tunejit run --precision fp16` with each of those logs
#   RUN_INT8_TC=1|FILE  `tunejit run --precision int8 --tensor-cores` (IGMMA convs) with the seed
#                     log (fallback configs) or with that log
#   FP16_BUDGET=4m    VGG-16 batch 128 --precision fp16 (the Hopper tensor-core tasks) tuned from
#                     nothing, then `tunejit run --precision fp16` with that log
#   RUN_FLAGS="..."   extra flags for the `tunejit run` of the BUDGET log (e.g. --tensor-cores,
#                     when TUNE_FLAGS has it)
#   KILL_AT=S         kill -9 the tuner S seconds in, resume, and check nothing was lost or repeated
# Everything lands in $OUT/results.tgz.
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
seed=data/seed-vgg16-v100.log
tlog=$out/vgg16-int8-tuned.log
run_net() {  # run_net NAME LOG [PRECISION [FLAG...]]
  local name=$1 log=$2 precision=${3:-int8}
  shift $(($# < 3 ? $# : 3))
  step "$name" 240 "$bin/tunejit" run --precision "$precision" --log "$log" \
    --json "$out/$name.json" --plot "$out/$name.svg" "$@"
}
tune() {  # tune NAME LIMIT EXTRA_FLAGS... (a later --precision wins)
  local name=$1 limit=$2; shift 2
  step "$name" "$limit" "$bin/tunejit" tune --model vgg16 --batch 128 --precision int8 "$@"
}

run_tests() {  # run_tests BIN...
  for t in "$@"; do
    step "$t" "${TEST_LIMIT:-200}" "$bin/$t" --gtest_brief=1
    # A failing test makes the measurements below meaningless: save the device time.
    grep -q "^=== $t exit 0 " "$out/summary.txt" || [ -n "${KEEP_GOING:-}" ] ||
      { echo "stopping: $t failed"; exit 1; }
  done
}

run_tests ${TESTS:-}
[ -n "${RUN_SEED:-}" ] && run_net run-seed "$seed"
for l in ${RUN_LOGS:-}; do run_net "run-$(basename "$l" .log)" "$l"; done
[ -n "${RUN_FP16:-}" ] && run_net run-fp16-fallback "$seed" fp16
for l in ${RUN_FP16_LOGS:-}; do run_net "run-fp16-$(basename "$l" .log)" "$l" fp16; done
if [ -n "${RUN_INT8_TC:-}" ]; then
  tc_log=$seed; [ -f "$RUN_INT8_TC" ] && tc_log=$RUN_INT8_TC
  run_net run-int8-tensor-cores "$tc_log" int8 --tensor-cores
fi
[ -n "${PEERS:-}" ] && OUT=$out step peer-pytorch 200 python3 .gpu/peers/pytorch_vgg16.py
if [ -n "${COMPARE:-}" ]; then
  for s in random xgb; do
    tune "compare-$s" "${COMPARE_LIMIT:-620}" --tasks "$COMPARE" --trials "${COMPARE_TRIALS:-64}" \
      --search "$s" --log "$out/compare-$s.log" ${COMPARE_FLAGS:-}
  done
fi
if [ -n "${FP16_BUDGET:-}" ]; then
  tune tune-fp16 "${TUNE_LIMIT:-620}" --precision fp16 --budget "$FP16_BUDGET" \
    --log "$out/vgg16-fp16-tuned.log"
  run_net run-fp16-tuned "$out/vgg16-fp16-tuned.log" fp16
fi
if [ -n "${BUDGET:-}" ]; then
  [ -n "${RESUME:-}" ] && cp "$RESUME" "$tlog"
  flags=(--budget "$BUDGET" --log "$tlog" ${RESUME:+--resume} ${TUNE_FLAGS:-})
  if [ -n "${KILL_AT:-}" ]; then
    (sleep "$KILL_AT"; pkill -9 -f "tunejit tune"; pkill -9 -f "tunejit tune-worker") &
    tune tune-killed "${TUNE_LIMIT:-620}" "${flags[@]}"
    cp "$tlog" "$out/before-kill.log"
    [[ " ${flags[*]} " == *" --resume "* ]] || flags+=(--resume)
    tune tune-resumed "${TUNE_LIMIT:-620}" "${flags[@]}"
    step check-resume 60 python3 scripts/check_resume.py "$out/before-kill.log" "$tlog"
  else
    tune tune "${TUNE_LIMIT:-620}" "${flags[@]}"
  fi
  run_net run-tuned "$tlog" int8 ${RUN_FLAGS:-}
fi
run_tests ${TESTS_LAST:-}
cat "$out/summary.txt"

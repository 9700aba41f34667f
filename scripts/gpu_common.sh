# Shared by scripts/gpu_suite.sh and scripts/gpu_tune.sh (sourced): output folders, the
# environment the binaries and tests need on the GPU machine, and `step`, which runs one command
# with its output straight to a file (a crash must not lose it) and a line in summary.txt.
out=${GPU_WORK:-/tmp/gpu-out}; rm -rf "$out"; mkdir -p "$out"  # GPU_WORK: a script run by another
final=${OUT:-gpu-out}; mkdir -p "$final"
trap 'tar czf "$final/results.tgz" -C "$out" .' EXIT  # the device tool returns only a few files
export TUNEJIT_SOURCE_DIR=$PWD TUNEJIT_CACHE_DIR=/tmp/tunejit-cache TUNEJIT_BINARY=$PWD/.gpu/bin/tunejit
bin=.gpu/bin

# DEADLINE=S (optional): no step runs past S seconds of this script, and a step that would get
# less than 10 s is skipped, so the results are packed before the device tool's own limit.
# After it, $last_rc is the command's exit code (124: timed out), or "skipped".
step() {  # step NAME TIMEOUT CMD...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  if [ -n "${DEADLINE:-}" ]; then
    ((limit > DEADLINE - SECONDS)) && limit=$((DEADLINE - SECONDS))
    if ((limit < 10)); then
      echo "=== $name skipped (deadline)" | tee -a "$out/summary.txt"
      last_rc=skipped
      return 0
    fi
  fi
  timeout "$limit" stdbuf -oL -eL "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  last_rc=$rc
  echo "=== $name exit $rc ($((SECONDS - start)) s)" | tee -a "$out/summary.txt"
}

#!/usr/bin/env bash
# The Fashion-MNIST accuracy run, on the GPU machine over a gpu-bundle that carries the example and the
# dataset (docs/design/executor.md, "Accuracy checks", gives the bundle command):
#   1. examples/fashion_mnist/train.py trains the network with PyTorch (EPOCHS, default 4) and
#      exports its weights and PyTorch's fp32 / fp16 test accuracy;
#   2. the `fashion_mnist` example runs the 10,000 test images through tunejit at fp32, fp16 and
#      int8 (LOG=FILE: with those tuning records) and checks the accuracy bounds.
# Everything lands in $OUT/results.tgz (fashion.json, the two programs' output, the weights).
set -uo pipefail
. "$(dirname "$0")/gpu_common.sh"
data=/tmp/fashion-mnist
mkdir -p "$data"
for f in .gpu/data/fashion-mnist/*.gz; do gunzip -c "$f" > "$data/$(basename "$f" .gz)"; done
step train 300 python3 examples/fashion_mnist/train.py --data "$data" --out "$out" \
  --epochs "${EPOCHS:-4}"
step fashion_mnist 300 "$bin/fashion_mnist" --data "$data" --weights "$out/fashion.safetensors" \
  --pytorch "$out/pytorch.json" --json "$out/fashion.json" ${LOG:+--log "$LOG"}
cat "$out/summary.txt"

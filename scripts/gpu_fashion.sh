#!/usr/bin/env bash
# The Fashion-MNIST accuracy run, on the GPU machine over a gpu-bundle that carries the example and the
# dataset (docs/design/executor.md, "Accuracy checks", gives the bundle command):
#   1. examples/fashion_mnist/train.py trains the network with PyTorch (EPOCHS, default 4) and
#      exports its weights and PyTorch's fp32 / fp16 test accuracy;
#   2. the `fashion_mnist` example runs the 10,000 test images through tunejit at fp32, fp16 and
#      int8 (LOG=FILE: with those tuning records) and checks the accuracy bounds.
# NET picks the network: vgg (the default), resnet (the small ResNet), or both (vgg, then resnet).
# Everything lands in $OUT/results.tgz: the VGG net's fashion.json, the two programs' output and
# the weights at its top, the ResNet's in resnet/ (steps train_resnet, fashion_mnist_resnet).
set -uo pipefail
case "${NET:-vgg}" in
  vgg | resnet) nets=${NET:-vgg} ;;
  both) nets="vgg resnet" ;;
  *) echo "gpu_fashion.sh: NET is vgg, resnet or both, not '$NET'" >&2; exit 2 ;;
esac
. "$(dirname "$0")/gpu_common.sh"
data=/tmp/fashion-mnist
mkdir -p "$data"
for f in .gpu/data/fashion-mnist/*.gz; do gunzip -c "$f" > "$data/$(basename "$f" .gz)"; done
for net in $nets; do
  dir=$out suffix=
  [ "$net" = vgg ] || { dir=$out/$net suffix=_$net; mkdir -p "$dir"; }
  step "train$suffix" 300 python3 examples/fashion_mnist/train.py --net "$net" --data "$data" \
    --out "$dir" --epochs "${EPOCHS:-4}"
  step "fashion_mnist$suffix" 300 "$bin/fashion_mnist" --net "$net" --data "$data" \
    --weights "$dir/fashion.safetensors" --pytorch "$dir/pytorch.json" --json "$dir/fashion.json" \
    ${LOG:+--log "$LOG"}
done
cat "$out/summary.txt"

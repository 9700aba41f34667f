#!/usr/bin/env python3
"""How far from float32 a float16 run of a model must land: its float32 math with every weight and
every layer's output rounded to float16, as any engine that stores activations in float16 does.

The zoo's models (scripts/export_onnx.py: random weights, seed 0, BatchNorm statistics calibrated
on one random batch) are deep random networks, which amplify rounding. When this bound is above
the 1e-2 relative L2 the zoo asks of float16, no float16 engine meets it on that model; tunejit's
float16 error is set beside it in docs/benchmarks.md. CPU only, a few seconds per model:
  scripts/fp16_storage_bound.py resnet50 mobilenet_v2 --batch 8
The error is the relative L2 distance of the logits from a float64 run on N(0, 1) images (seed 1).
"""
import argparse
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_onnx  # noqa: E402


def rel_l2(a, b):
    return float((a - b).norm() / b.norm())


def fp16_storage(model):
    """A copy whose weights are float16 values and whose every leaf module rounds its output."""
    m = copy.deepcopy(model).float()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(p.half().float())
    for mod in m.modules():
        if not list(mod.children()):
            mod.register_forward_hook(
                lambda _m, _i, o: o.half().float() if torch.is_tensor(o) else o)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="torchvision model names")
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    x = torch.randn(args.batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    for name in args.models:
        model = export_onnx.build(name, 0)
        with torch.no_grad():
            ref = copy.deepcopy(model).double()(x.double())
            bound = rel_l2(fp16_storage(model)(x.half().float()).double(), ref)
        print(f"{name}: float16 storage {bound:.1e} relative L2 from float64")


if __name__ == "__main__":
    main()

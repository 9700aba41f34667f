#!/usr/bin/env python3
"""Compares two raw float32 output files (e.g. `tunejit run --output` against
scripts/export_onnx.py's PyTorch output): relative L2 error ||a - b|| / ||b||, max abs difference,
and top-1 agreement over the batch. Exit code 1 when the relative error is above --max-rel or the
top-1 agreement below --min-top1.

  scripts/compare_outputs.py OUT/resnet50-tunejit.bin OUT/resnet50-torch.bin --classes 1000

int8 (a QDQ model run with --precision int8) is not bit-for-bit float: pass a looser --max-rel and
check --min-top1. With --onnx MODEL --input X.bin, and when onnxruntime is installed, the model is
also run on ONNX Runtime's CPU provider and both files are compared with its output too (for a QDQ
model that is ORT's int8 execution of the same file: a third opinion, not the reference).

  scripts/compare_outputs.py OUT/vgg16-qdq-tunejit.bin OUT/vgg16-qdq-torch.bin --max-rel 0.05 \\
      --min-top1 0.9 --onnx OUT/vgg16-qdq.onnx --input OUT/vgg16-qdq-input.bin
"""
import argparse
import sys

import numpy as np


def compare(label, a, b, classes, max_rel, min_top1):
    """Prints the comparison of a against reference b; returns whether it is within bounds."""
    if a.size != b.size or a.size % classes:
        print(f"{label}: size mismatch: {a.size} vs {b.size} floats ({classes} per image)")
        return False
    a, b = a.astype(np.float64), b.astype(np.float64)
    rel = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
    top1 = np.mean(a.reshape(-1, classes).argmax(1) == b.reshape(-1, classes).argmax(1))
    ok = rel <= max_rel and top1 >= min_top1
    print(f"{label}: images {a.size // classes}: relative L2 error {rel:.3e} (bound {max_rel:g}), "
          f"max |diff| {np.abs(a - b).max():.3e}, top-1 agreement {100 * top1:.1f}% "
          f"(bound {100 * min_top1:.1f}%): {'ok' if ok else 'FAIL'}")
    return ok


def run_onnxruntime(model, input_path):
    """ONNX Runtime's CPU output of `model` on the raw float32 input, or None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: skipping the ONNX Runtime comparison")
        return None
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) else -1 for d in inp.shape]
    x = np.fromfile(input_path, "<f4").reshape([-1] + shape[1:])
    return session.run(None, {inp.name: x})[0].ravel()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("ours")
    p.add_argument("reference")
    p.add_argument("--classes", type=int, default=1000, help="values per image")
    p.add_argument("--max-rel", type=float, default=1e-4,
                   help="largest relative L2 error allowed (default 1e-4: fp32)")
    p.add_argument("--min-top1", type=float, default=0.0,
                   help="smallest top-1 agreement allowed, as a fraction (default 0: not checked)")
    p.add_argument("--onnx", help="also compare with ONNX Runtime's CPU output of this model")
    p.add_argument("--input", help="the raw float32 input file (with --onnx)")
    args = p.parse_args()
    if args.onnx and not args.input:
        p.error("--onnx needs --input")
    a = np.fromfile(args.ours, "<f4")
    b = np.fromfile(args.reference, "<f4")
    ok = compare("ours vs reference", a, b, args.classes, args.max_rel, args.min_top1)
    if args.onnx:
        ort_out = run_onnxruntime(args.onnx, args.input)
        if ort_out is not None:
            ok &= compare("ours vs onnxruntime", a, ort_out, args.classes, args.max_rel,
                          args.min_top1)
            compare("onnxruntime vs reference (for scale)", ort_out, b, args.classes, np.inf, 0.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

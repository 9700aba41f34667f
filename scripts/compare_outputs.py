#!/usr/bin/env python3
"""Compares two raw float32 output files (e.g. `tunejit run --output` against
scripts/export_onnx.py's PyTorch output): relative L2 error ||a - b|| / ||b||, max abs difference,
and top-1 agreement over the batch. Exit code 1 when the relative error is above --max-rel or the
top-1 agreement below --min-top1. --json FILE also writes the numbers (rel_l2, max_abs_diff,
top1_agreement, images, the bounds and ok; "error" instead when the sizes do not match), as
scripts/zoo.py's table reads them. --no-top1 for outputs that are not class scores (BERT's
last_hidden_state): the relative L2 error and max |diff| only, top1_agreement null.

  scripts/compare_outputs.py OUT/bert_base-fp16.bin OUT/bert_base-torch.bin --no-top1 --max-rel 1e-2

  scripts/compare_outputs.py OUT/resnet50-tunejit.bin OUT/resnet50-torch.bin --classes 1000 \\
      --json OUT/resnet50-fp32-compare.json

int8 (a QDQ model run with --precision int8) is not bit-for-bit float: pass a looser --max-rel and
check --min-top1. With --onnx MODEL --input X.bin, and when onnxruntime is installed, the model is
also run on ONNX Runtime's CPU provider and both files are compared with its output too (for a QDQ
model that is ORT's int8 execution of the same file: a third opinion, not the reference).

  scripts/compare_outputs.py OUT/vgg16-qdq-tunejit.bin OUT/vgg16-qdq-torch.bin --max-rel 0.05 \\
      --min-top1 0.9 --onnx OUT/vgg16-qdq.onnx --input OUT/vgg16-qdq-input.bin
"""
import argparse
import json
import sys

import numpy as np


def compare(label, a, b, classes, max_rel, min_top1):
    """Prints the comparison of a against reference b; returns its numbers as a dict, "ok" saying
    whether it is within bounds. classes None: no top-1 (not class scores)."""
    result = {"label": label, "max_rel": max_rel, "min_top1": min_top1}
    if a.size != b.size or (classes and a.size % classes):
        per = f" ({classes} per image)" if classes else ""
        result.update(ok=False, error=f"size mismatch: {a.size} vs {b.size} floats{per}")
        print(f"{label}: {result['error']}")
        return result
    a, b = a.astype(np.float64), b.astype(np.float64)
    rel = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    if not classes:
        max_abs = float(np.abs(a - b).max()) if a.size else 0.0
        ok = bool(rel <= max_rel)
        result.update(values=int(a.size), rel_l2=rel, max_abs_diff=max_abs, top1_agreement=None,
                      ok=ok)
        print(f"{label}: {a.size} values: relative L2 error {rel:.3e} (bound {max_rel:g}), "
              f"max |diff| {max_abs:.3e}: {'ok' if ok else 'FAIL'}")
        return result
    top1 = float(np.mean(a.reshape(-1, classes).argmax(1) == b.reshape(-1, classes).argmax(1)))
    max_abs = float(np.abs(a - b).max())
    ok = bool(rel <= max_rel and top1 >= min_top1)
    result.update(images=a.size // classes, rel_l2=rel, max_abs_diff=max_abs, top1_agreement=top1,
                  ok=ok)
    print(f"{label}: images {a.size // classes}: relative L2 error {rel:.3e} (bound {max_rel:g}), "
          f"max |diff| {max_abs:.3e}, top-1 agreement {100 * top1:.1f}% "
          f"(bound {100 * min_top1:.1f}%): {'ok' if ok else 'FAIL'}")
    return result


def finite(value):
    """value for JSON, inf and nan (not JSON) as strings, in nested dicts too."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    return value if not isinstance(value, float) or np.isfinite(value) else str(value)


def run_onnxruntime(model, input_path):
    """ONNX Runtime's CPU output of `model` on the raw input (float32, or int64 ids), or None
    without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: skipping the ONNX Runtime comparison")
        return None
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) else -1 for d in inp.shape]
    dtype = "<i8" if inp.type == "tensor(int64)" else "<f4"  # token ids, or float32
    x = np.fromfile(input_path, dtype).reshape([-1] + shape[1:])
    return session.run(None, {inp.name: x})[0].ravel()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("ours")
    p.add_argument("reference")
    p.add_argument("--classes", type=int, default=1000, help="values per image")
    p.add_argument("--no-top1", action="store_true",
                   help="the output is not class scores (e.g. BERT's hidden states): relative L2 "
                        "and max |diff| only")
    p.add_argument("--max-rel", type=float, default=1e-4,
                   help="largest relative L2 error allowed (default 1e-4: fp32)")
    p.add_argument("--min-top1", type=float, default=0.0,
                   help="smallest top-1 agreement allowed, as a fraction (default 0: not checked)")
    p.add_argument("--onnx", help="also compare with ONNX Runtime's CPU output of this model")
    p.add_argument("--input", help="the raw float32 input file (with --onnx)")
    p.add_argument("--json", help="also write the numbers to this JSON file")
    args = p.parse_args()
    if args.onnx and not args.input:
        p.error("--onnx needs --input")
    a = np.fromfile(args.ours, "<f4")
    b = np.fromfile(args.reference, "<f4")
    classes = None if args.no_top1 else args.classes
    if args.no_top1 and args.min_top1 > 0:
        p.error("--min-top1 needs class scores (not --no-top1)")
    main_result = compare("ours vs reference", a, b, classes, args.max_rel, args.min_top1)
    ok = main_result["ok"]
    if args.onnx:
        ort_out = run_onnxruntime(args.onnx, args.input)
        if ort_out is not None:
            ort_result = compare("ours vs onnxruntime", a, ort_out, classes, args.max_rel,
                                 args.min_top1)
            ok &= ort_result["ok"]
            compare("onnxruntime vs reference (for scale)", ort_out, b, classes, np.inf, 0.0)
            main_result["onnxruntime"] = ort_result
    if args.json:
        main_result.update(ours=args.ours, reference=args.reference, ok=ok)
        with open(args.json, "w") as f:
            json.dump(finite(main_result), f, indent=1)
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

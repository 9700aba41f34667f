#!/usr/bin/env python3
"""Prints one short table from the JSON files `tunejit run --json` writes: model, precision, log,
tunejit's end-to-end latency, cuDNN's, their ratio and the accuracy check. scripts/main.sh ends
with it.

  python3 scripts/run_summary.py build/vgg16-int8.json build/vgg16-fp16.json ...

A file that does not exist (a run that failed or was skipped) is listed as such, so the table
always says what ran.
"""
import json
import os
import sys

MODES = {"fp32": "fp32", "int8": "int8 (dp4a)", "int8-tensor-cores": "int8 (tensor cores)",
         "fp16-tensor-cores": "fp16 (tensor cores)"}


def run_name(path):
    """The run's name: its JSON file's, without the folder and extension."""
    name = os.path.basename(path)
    return name[:-5] if name.endswith(".json") else name


def row(path):
    if not os.path.exists(path):
        return [run_name(path), "-", "-", "-", "not run", "-", "-", "-"]
    with open(path) as f:
        r = json.load(f)
    mode = MODES.get(r.get("numeric_mode") or "", r.get("precision", "?"))
    e2e = r.get("end_to_end", {})
    ours, cudnn = e2e.get("ours_seconds"), e2e.get("cudnn_seconds")
    ratio = "%.2fx" % (cudnn / ours) if ours and cudnn else "-"
    acc = r.get("accuracy", {})
    if not acc.get("checked"):
        check = "not checked"
    else:
        check = "%s (rel %s)" % ("pass" if acc.get("pass") else "FAIL",
                                 acc.get("rel_l2") if isinstance(acc.get("rel_l2"), str)
                                 else "%.2g" % acc.get("rel_l2", float("nan")))
    ms = lambda s: "%.2f ms" % (s * 1e3) if isinstance(s, (int, float)) else "-"  # noqa: E731
    baseline = "cuDNN %s" % e2e.get("baseline_precision", "?") if cudnn else "cuDNN"
    return [run_name(path), "%s b%s" % (r.get("model", "?"), r.get("batch", "?")), mode,
            os.path.basename(r.get("log") or "-"), ms(ours), "%s %s" % (baseline, ms(cudnn)),
            ratio, check]


def table(paths):
    head = ["run", "model", "precision", "log", "tunejit", "cuDNN", "cuDNN/tunejit", "accuracy"]
    rows = [head] + [row(p) for p in paths]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(table(argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

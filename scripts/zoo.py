#!/usr/bin/env python3
"""The model zoo test: torchvision classifiers (and BERT) exported to ONNX, run by tunejit fp32
and fp16, checked against PyTorch and timed beside PyTorch's own fp16 (eager and torch.compile).
scripts/gpu_zoo.sh runs it all on the GPU machine; the three subcommands:

A model name may carry its batch after "@" (bert_base@1): that model at that batch, its files
named after the whole name, so one table holds several batches. The text models (bert_base,
bert_tiny, gpt2_small, gpt2_tiny, opt_tiny, llama_tiny) are transformers models from a config
(scripts/export_onnx.py TEXT_MODELS): input_ids int64 [N, 128] (attention mask all ones), output
last_hidden_state, compared without top-1.

  export  --out DIR --models a,b --batch 32 [--opset 17] [--seed 0]
      Per model (scripts/export_onnx.py's functions: weights=None after torch.manual_seed(seed),
      BatchNorm statistics from one random batch (seed + 2) so that activations keep unit
      scale as in a trained network, eval(), the TorchScript exporter, constant folding, static
      batch):
        DIR/<m>.onnx         the model
        DIR/<m>-input.bin    the input, N(0, 1) from seed + 1, raw float32 [N, 3, 224, 224]
        DIR/<m>-torch.bin    PyTorch's float32 output on it (on the GPU, TF32 off), raw float32
        DIR/<m>-ops.json     the ONNX op types of the file and their counts
      A model that fails leaves DIR/<m>-export.err (its traceback) and the others go on.

  peers   --out DIR --models a,b --batch 32 [--compile-timeout 300]
      Per model, PyTorch fp16 channels_last on the GPU (cudnn.benchmark on), CUDA events, 10
      warm-up runs then the median of 50: eager, and torch.compile(mode="max-autotune") in a
      subprocess killed after --compile-timeout seconds (its whole life: import, compile, timing;
      0 skips it). Writes DIR/<m>-peers.json (and DIR/<m>-compile.log, the subprocess' output).

  table   --dir DIR --models a,b [--markdown FILE]
      One markdown table from what the others and scripts/gpu_zoo.sh left in DIR:
        <m>-ops.json, <m>-export.err                  (export)
        <m>-fp32.json, <m>-fp16.json, <m>-fp32.err, <m>-fp16.err   (`tunejit run --json`, stderr)
        <m>-fp32-compare.json, <m>-fp16-compare.json  (scripts/compare_outputs.py --json)
        <m>-peers.json                                (peers)
      A missing piece is "—" with a note in the status column. Needs no torch.

For example (torch on the GPU machine; the table anywhere):
  scripts/zoo.py export --out /tmp/zoo --models resnet18,vit_b_16 --batch 32
  build/tunejit run --model /tmp/zoo/resnet18.onnx --precision fp16 \\
      --input /tmp/zoo/resnet18-input.bin --output /tmp/zoo/resnet18-fp16.bin \\
      --json /tmp/zoo/resnet18-fp16.json 2> /tmp/zoo/resnet18-fp16.err
  scripts/compare_outputs.py /tmp/zoo/resnet18-fp16.bin /tmp/zoo/resnet18-torch.bin \\
      --max-rel 1e-2 --json /tmp/zoo/resnet18-fp16-compare.json
  scripts/zoo.py peers --out /tmp/zoo --models resnet18,vit_b_16 --batch 32
  scripts/zoo.py table --dir /tmp/zoo --models resnet18,vit_b_16 --markdown /tmp/zoo/table.md
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import traceback

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODELS = ("resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,"
                  "squeezenet1_1,convnext_tiny,vit_b_16")
DASH = "—"
WARMUP, TIMED = 10, 50


def model_list(text):
    """"a,b, c" -> ["a", "b", "c"]."""
    return [m.strip() for m in text.split(",") if m.strip()]


def split_batch(name, batch):
    """("bert_base", 1) for "bert_base@1"; (name, batch) for a name without "@"."""
    model, at, b = name.partition("@")
    return (model, int(b)) if at else (name, batch)


def file_of(directory, model, suffix):
    return os.path.join(directory, model + suffix)


def read_json(path):
    """The JSON in path, or None when it is missing or not valid JSON (a run cut short)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


def remove(*paths):
    for p in paths:
        if os.path.exists(p):
            os.remove(p)


# --- export (torch) ---------------------------------------------------------------------------

def export_onnx_module():
    """scripts/export_onnx.py, imported here: it imports torch, which the table does not need."""
    if SCRIPTS not in sys.path:
        sys.path.insert(0, SCRIPTS)
    import export_onnx
    return export_onnx


def cmd_export(args):
    export_onnx = export_onnx_module()
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for name in args.models:
        onnx_path = file_of(args.out, name, ".onnx")
        err = file_of(args.out, name, "-export.err")
        # Nothing stale from an earlier export may stand for this one.
        remove(onnx_path, err, *(file_of(args.out, name, s)
                                  for s in ("-input.bin", "-torch.bin", "-ops.json")))
        try:
            model, batch = split_batch(name, args.batch)
            export_args = argparse.Namespace(out=args.out, seed=args.seed, batch=batch,
                                             opset=args.opset, dynamic_batch=False)
            export_onnx.export_one(model, export_args, qdq=False, stem=name)
            ops = export_onnx.op_counts(onnx_path)
            write_json(file_of(args.out, name, "-ops.json"),
                       {"model": name, "batch": batch, "opset": args.opset,
                        "seed": args.seed, "nodes": sum(ops.values()),
                        "op_types": dict(sorted(ops.items()))})
        except Exception:  # one model failing must not stop the others
            text = traceback.format_exc()
            with open(err, "w") as f:
                f.write(text)
            print(f"{name}: export failed:\n{text}", file=sys.stderr)
            failed.append(name)
    if failed:
        print("export failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


# --- peers (torch) ----------------------------------------------------------------------------

def fp16_model_and_input(name, batch, seed):
    """The model as exported (same seeds), float16 (and channels_last for the convnets) on the
    GPU, and its input (BERT's token ids stay int64; its attention is PyTorch's SDPA)."""
    import torch
    export_onnx = export_onnx_module()
    name, batch = split_batch(name, batch)
    model = export_onnx.build(name, seed).to("cuda", torch.float16)
    x = export_onnx.model_input(name, batch, seed + 1).to("cuda")
    if export_onnx.is_text_model(name):
        return model, x
    model = model.to(memory_format=torch.channels_last)
    return model, x.to(torch.float16).contiguous(memory_format=torch.channels_last)


def median_ms(fn, x, warmup=WARMUP, timed=TIMED):
    """Median milliseconds of fn(x) by CUDA events, after `warmup` untimed calls."""
    import torch
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(timed):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failed|Unsupported|Interrupt)\w*: ")


def exception_line(path):
    """The last "SomeError: message" line of a Python traceback in a text file (after it, torch
    may add advice such as "... suppress_errors = True"), else its last non-empty line, or ""."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    exceptions = [line for line in lines if EXCEPTION.match(line)]
    return (exceptions or lines or [""])[-1]


def compile_in_subprocess(name, args):
    """Runs `zoo.py compile-one` for the model with the timeout; its result as a dict."""
    if args.compile_timeout <= 0:
        return {"status": "skipped", "note": "torch.compile skipped (--compile-timeout 0)"}
    result_path = file_of(args.out, name, "-compile.json")
    log_path = file_of(args.out, name, "-compile.log")
    remove(result_path)
    cmd = [sys.executable, os.path.abspath(__file__), "compile-one", "--model", name,
           "--batch", str(args.batch), "--seed", str(args.seed), "--json", result_path]
    start = time.perf_counter()
    with open(log_path, "w") as log:
        # A session of its own: on a timeout, Inductor's compile workers go with it.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=args.compile_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"status": "timeout", "timeout_seconds": args.compile_timeout,
                    "note": f"did not compile within {args.compile_timeout:g} s"}
    result = read_json(result_path)
    if rc != 0 or result is None:
        return {"status": "failed", "exit_code": rc,
                "wall_seconds": time.perf_counter() - start,
                "note": exception_line(log_path) or f"exit code {rc}"}
    return result


def cmd_compile_one(args):
    """The subprocess of `peers`: torch.compile(mode="max-autotune") of one model, timed."""
    import torch
    torch.backends.cudnn.benchmark = True
    model, x = fp16_model_and_input(args.model, args.batch, args.seed)
    start = time.perf_counter()
    compiled = torch.compile(model, mode="max-autotune")
    with torch.no_grad():
        compiled(x)  # the compilation (and autotuning) happens on the first call
    torch.cuda.synchronize()
    compile_seconds = time.perf_counter() - start
    write_json(args.json, {"status": "ok", "compile_seconds": compile_seconds,
                           "fp16_ms": median_ms(compiled, x)})
    return 0


def fp16_rel_l2(model, x, reference_path):
    """PyTorch's own float16 error: the relative L2 distance of its float16 output on `x` from
    the float32 reference <m>-torch.bin (None without it). A random network can amplify float16
    rounding past any fixed bound; this says how far float16 itself lands on the same model."""
    import numpy
    import torch
    if not os.path.exists(reference_path):
        return None
    with torch.no_grad():
        ours = model(x).float().cpu().numpy().ravel().astype(numpy.float64)
    want = numpy.fromfile(reference_path, dtype="<f4").astype(numpy.float64)
    if want.size != ours.size or not numpy.any(want):
        return None
    return float(numpy.linalg.norm(ours - want) / numpy.linalg.norm(want))


def cmd_peers(args):
    import torch
    torch.backends.cudnn.benchmark = True
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for name in args.models:
        path = file_of(args.out, name, "-peers.json")
        remove(path)
        result = {"model": name, "batch": split_batch(name, args.batch)[1],
                  "torch": torch.__version__,
                  "device": torch.cuda.get_device_name(), "warmup": WARMUP, "timed": TIMED}
        try:
            model, x = fp16_model_and_input(name, args.batch, args.seed)
            result["eager_fp16_ms"] = median_ms(model, x)
            rel = fp16_rel_l2(model, x, file_of(args.out, name, "-torch.bin"))
            if rel is not None:
                result["eager_fp16_rel_l2"] = rel
            del model, x
        except Exception as e:  # one model failing must not stop the others
            traceback.print_exc()
            result["eager_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
            failed.append(name)
        torch.cuda.empty_cache()
        if "eager_error" in result:  # it would fail the same way, after minutes
            result["compile"] = {"status": "skipped", "note": "not tried: eager failed"}
        else:
            result["compile"] = compile_in_subprocess(name, args)
        write_json(path, result)
        print(f"{name}: eager {result.get('eager_fp16_ms', DASH)} ms, "
              f"compile {json.dumps(result['compile'])}", flush=True)
    return 1 if failed else 0


# --- table (no torch) -------------------------------------------------------------------------

def error_line(path):
    """The line of tunejit's stderr that says why it failed: its "tunejit run: ..." line, else the
    first line naming an error, else the last line; "" when the file is missing or empty."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    for line in lines:
        if line.startswith("tunejit run:"):
            return line[len("tunejit run:"):].strip()
    for line in lines:
        lower = line.lower()
        if any(w in lower for w in ("error", "terminate called", "segmentation fault", "abort")):
            return line
    return lines[-1] if lines else ""


def run_failure(directory, name, precision):
    """Why <m>-<precision>.json is missing, from <m>-<precision>.err: "import failed: ...",
    "run failed: ..." or "not run"."""
    err = file_of(directory, name, f"-{precision}.err")
    if not os.path.exists(err):
        return "not run"
    with open(err, errors="replace") as f:
        built = "run: building" in f.read()  # tunejit's line once the model, input, log loaded
    why = error_line(err) or "no report, empty stderr"
    return f"{'run' if built else 'import'} failed: {why}"


def export_failure(directory, name):
    err = file_of(directory, name, "-export.err")
    if os.path.exists(err):
        return "export failed: " + (exception_line(err) or "see " + os.path.basename(err))
    return "not exported"


def sci(value):
    return f"{value:.1e}" if isinstance(value, (int, float)) else str(value)


def compare_cells(directory, name, precision, notes):
    """(rel L2, top-1) cells of <m>-<precision>-compare.json; notes get what went wrong."""
    c = read_json(file_of(directory, name, f"-{precision}-compare.json"))
    if c is None:
        if os.path.exists(file_of(directory, name, f"-{precision}.json")):
            notes.append(f"{precision} not compared")
        return DASH, DASH
    if "error" in c:
        notes.append(f"{precision} compare: {c['error']}")
        return DASH, DASH
    rel, top1 = c.get("rel_l2"), c.get("top1_agreement")
    if not c.get("ok", False):
        if isinstance(rel, (int, float)) and rel <= c.get("max_rel", float("inf")):
            notes.append(f"{precision} top-1 agreement below {c.get('min_top1')}")
        else:  # above the bound, or "nan" / "inf"
            notes.append(f"{precision} rel L2 {sci(rel)} above {sci(c.get('max_rel'))}")
    top1_cell = f"{100 * top1:.1f}%" if isinstance(top1, (int, float)) else DASH
    return (DASH if rel is None else sci(rel)), top1_cell


def ms(value):
    return f"{value:.2f}" if isinstance(value, (int, float)) else DASH


def model_row(directory, name):
    """The table's cells for one model."""
    notes = []
    ops = read_json(file_of(directory, name, "-ops.json"))
    if ops is None:
        notes.append(export_failure(directory, name))
        ops_cell = DASH
    else:
        types = ops.get("op_types", {})
        ops_cell = f"{len(types)} types / {ops.get('nodes', sum(types.values()))} nodes"

    runs, failures = {}, {}
    for precision in ("fp32", "fp16"):
        runs[precision] = read_json(file_of(directory, name, f"-{precision}.json"))
        if runs[precision] is None:
            if ops is not None:  # else the export note says it all
                failures[precision] = run_failure(directory, name, precision)
            continue
        acc = runs[precision].get("accuracy", {})
        if acc.get("checked") and not acc.get("pass"):
            notes.append(f"{precision} off cuDNN fp32 (rel {sci(acc.get('rel_l2'))})")
    if len(failures) == 2 and failures["fp32"] == failures["fp16"]:
        notes.append("fp32, fp16 " + failures["fp32"])  # the same reason once
    else:
        notes.extend(f"{precision} {why}" for precision, why in failures.items())
    fp32_rel, fp32_top1 = compare_cells(directory, name, "fp32", notes)
    fp16_rel, _ = compare_cells(directory, name, "fp16", notes)
    peers = read_json(file_of(directory, name, "-peers.json"))
    torch_fp16_rel = (peers or {}).get("eager_fp16_rel_l2")
    if isinstance(torch_fp16_rel, (int, float)):
        fp16_rel += f" (PyTorch fp16 {sci(torch_fp16_rel)})"
    ours_fp16 = DASH  # end_to_end.ours_seconds: the median of the run's --repeats
    if runs["fp16"] is not None:
        seconds = runs["fp16"].get("end_to_end", {}).get("ours_seconds")
        ours_fp16 = ms(1e3 * seconds) if isinstance(seconds, (int, float)) else DASH

    eager, compiled = DASH, DASH
    if peers is None:
        notes.append("no PyTorch timing")
    else:
        eager = ms(peers.get("eager_fp16_ms"))
        if "eager_error" in peers:
            notes.append(f"PyTorch eager failed: {peers['eager_error']}")
        c = peers.get("compile", {})
        if c.get("status") == "ok":
            compiled = f"{ms(c.get('fp16_ms'))} (compile {c.get('compile_seconds', 0):.0f} s)"
        elif c.get("status") == "timeout":
            compiled = c.get("note", "did not compile in time")
        elif c.get("status") == "failed":
            notes.append(f"torch.compile failed: {c.get('note', '?')}")
        elif c.get("status") == "skipped":
            compiled = "skipped"
    return [name, ops_cell, fp32_rel, fp32_top1, fp16_rel, ours_fp16, eager, compiled,
            "; ".join(notes) or "ok"]


HEADER = ["model", "ONNX ops", "fp32 rel L2", "fp32 top-1 agree", "fp16 rel L2", "ours fp16 ms",
          "PyTorch fp16 ms", "compile ms", "status"]


def cell(text, limit=160):
    """A markdown table cell: one line, "|" escaped, long error messages cut."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text.replace("|", "\\|")


def caption(directory, models):
    """One line on what was measured: batch, GPU, tunejit's and PyTorch's versions."""
    parts = []
    for name in models:
        run = read_json(file_of(directory, name, "-fp16.json")) or \
            read_json(file_of(directory, name, "-fp32.json"))
        if run:
            gpu = run.get("device", {}).get("name", "?")
            parts.append(f"batch {run.get('batch', '?')} on {gpu}, tunejit "
                         f"{run.get('tunejit_version', '?')} (log {run.get('log', '?')})")
            break
    for name in models:
        peers = read_json(file_of(directory, name, "-peers.json"))
        if peers:
            parts.append(f"PyTorch {peers.get('torch', '?')} fp16 channels_last, median of "
                         f"{peers.get('timed', TIMED)} after {peers.get('warmup', WARMUP)} warm-up")
            break
    return "; ".join(parts)


def table(directory, models):
    rows = [HEADER, ["---"] * len(HEADER)] + [model_row(directory, m) for m in models]
    lines = ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    head = caption(directory, models)
    return (head + "\n\n" if head else "") + "\n".join(lines) + "\n"


def cmd_table(args):
    text = table(args.dir, args.models)
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


# --- command line -----------------------------------------------------------------------------

def parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def common(s, out_flag):
        s.add_argument(out_flag, required=True, help="the zoo's folder")
        s.add_argument("--models", type=model_list, default=model_list(DEFAULT_MODELS),
                       help="torchvision classifiers or text models (export_onnx.TEXT_MODELS: bert_base, "
                       "gpt2_small, llama_tiny, ...), comma-separated; "
                            "NAME@B: at batch B (default: %(default)s)")

    e = sub.add_parser("export", help="ONNX files, inputs and PyTorch's fp32 outputs")
    common(e, "--out")
    e.add_argument("--batch", type=int, default=32)
    e.add_argument("--opset", type=int, default=17)
    e.add_argument("--seed", type=int, default=0, help="seed of the weights (input: seed + 1)")

    r = sub.add_parser("peers", help="PyTorch fp16 eager and torch.compile timings")
    common(r, "--out")
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--compile-timeout", type=float, default=300,
                   help="seconds for each torch.compile subprocess (0: skip; default 300)")

    t = sub.add_parser("table", help="the markdown table (no torch needed)")
    common(t, "--dir")
    t.add_argument("--markdown", help="also write the table to this file")

    c = sub.add_parser("compile-one", help="(internal) the torch.compile subprocess of peers")
    c.add_argument("--model", required=True)
    c.add_argument("--batch", type=int, default=32)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--json", required=True)
    return p


COMMANDS = {"export": cmd_export, "peers": cmd_peers, "table": cmd_table,
            "compile-one": cmd_compile_one}


def main(argv=None):
    args = parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

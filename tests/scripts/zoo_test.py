"""scripts/zoo.py's table and command line on fake result files (no torch, no GPU), and
scripts/compare_outputs.py --json (skipped without numpy).

Runs with plain `python3 -m unittest` from the repository root or from this folder.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import zoo  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None


def write(directory, name, value):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        if isinstance(value, str):
            f.write(value)
        else:
            json.dump(value, f)
    return path


def run_report(ours_seconds, accuracy_pass=True):
    """The keys of a `tunejit run --json` report (cli/run_report.cc) that the table reads."""
    return {"tunejit_version": "0.1.0 (abc)", "model": "/tmp/zoo/m.onnx", "batch": 32,
            "precision": "fp16", "log": "data/seed-vgg16-v100.log",
            "device": {"name": "NVIDIA H100 80GB HBM3"},
            "end_to_end": {"ours_seconds": ours_seconds, "cudnn_seconds": 2e-3},
            "accuracy": {"checked": True, "pass": accuracy_pass, "rel_l2": 3e-3}}


def compare_report(rel, top1, max_rel, ok):
    return {"rel_l2": rel, "top1_agreement": top1, "max_rel": max_rel, "min_top1": 0.0,
            "ok": ok, "images": 32}


def peers_report(compile_result):
    return {"model": "m", "batch": 32, "torch": "2.5.1", "device": "NVIDIA H100 80GB HBM3",
            "warmup": 10, "timed": 50, "eager_fp16_ms": 4.5678, "compile": compile_result}


def rows(text):
    """The table's data rows, as lists of cells."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[2:]]


class ZooTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_complete_row(self):
        d = self.dir
        write(d, "resnet18-ops.json", {"nodes": 49, "op_types": {"Conv": 20, "Relu": 17,
                                                                  "Add": 8, "Gemm": 1,
                                                                  "MaxPool": 1, "Flatten": 1,
                                                                  "GlobalAveragePool": 1}})
        write(d, "resnet18-fp32.json", run_report(3e-3))
        write(d, "resnet18-fp16.json", run_report(1.2345e-3))
        write(d, "resnet18-fp32-compare.json", compare_report(2.5e-7, 1.0, 1e-4, True))
        write(d, "resnet18-fp16-compare.json", compare_report(1.1e-3, 0.96875, 1e-2, True))
        write(d, "resnet18-peers.json",
              peers_report({"status": "ok", "compile_seconds": 83.4, "fp16_ms": 1.5}))
        text = zoo.table(d, ["resnet18"])
        self.assertEqual(rows(text), [["resnet18", "7 types / 49 nodes", "2.5e-07", "100.0%",
                                       "1.1e-03", "1.23", "4.57", "1.50 (compile 83 s)", "ok"]])
        self.assertIn("batch 32 on NVIDIA H100 80GB HBM3", text)
        self.assertIn("PyTorch 2.5.1", text)
        header = text.splitlines()[2]
        self.assertEqual(header.count("|"), len(zoo.HEADER) + 1)

    def test_failures_are_notes(self):
        d = self.dir
        # Exported, but tunejit could not import it at fp32 (no "run: building" line), and its
        # fp16 run is off; torch.compile timed out.
        write(d, "vit_b_16-ops.json", {"nodes": 3, "op_types": {"MatMul": 2, "Einsum": 1}})
        write(d, "vit_b_16-fp32.err", "run: loading\ntunejit run: vit_b_16.onnx: unsupported op "
                                      "'Einsum' (node 7) | more\n")
        write(d, "vit_b_16-fp16.json", run_report(2e-3, accuracy_pass=False))
        write(d, "vit_b_16-fp16-compare.json", compare_report(0.5, 0.25, 1e-2, False))
        write(d, "vit_b_16-peers.json", peers_report(
            {"status": "timeout", "timeout_seconds": 300, "note": "did not compile within 300 s"}))
        # Not exported at all: the run notes would only repeat it.
        write(d, "convnext_tiny-export.err", "Traceback (most recent call last):\n  ...\n"
                                             "RuntimeError: Unsupported: ONNX export of op\n")
        # Exported, the fp32 run crashed after building; no peers.
        write(d, "squeezenet1_1-ops.json", {"nodes": 66, "op_types": {"Conv": 26}})
        write(d, "squeezenet1_1-fp32.err", "run: building squeezenet1_1.onnx (fp32)\n"
                                           "tunejit run: timed out after 300 s\n")
        text = zoo.table(d, ["vit_b_16", "convnext_tiny", "squeezenet1_1"])
        vit, convnext, squeeze = rows(text)

        self.assertEqual(vit[1:8], ["2 types / 3 nodes", zoo.DASH, zoo.DASH, "5.0e-01", "2.00",
                                    "4.57", "did not compile within 300 s"])
        self.assertIn("fp32 import failed: vit_b_16.onnx: unsupported op 'Einsum' (node 7) \\| "
                      "more", vit[8])
        self.assertIn("fp16 off cuDNN fp32 (rel 3.0e-03)", vit[8])
        self.assertIn("fp16 rel L2 5.0e-01 above 1.0e-02", vit[8])

        self.assertEqual(convnext[1:8], [zoo.DASH] * 7)
        self.assertEqual(convnext[8], "export failed: RuntimeError: Unsupported: ONNX export of "
                                      "op; no PyTorch timing")

        self.assertIn("fp32 run failed: timed out after 300 s; fp16 not run", squeeze[8])
        self.assertIn("no PyTorch timing", squeeze[8])

    def test_hidden_states_have_no_top1(self):
        d = self.dir
        write(d, "bert_base@1-ops.json", {"nodes": 400, "op_types": {"MatMul": 96, "Gather": 3}})
        write(d, "bert_base@1-fp32.json", run_report(4e-3))
        write(d, "bert_base@1-fp16.json", run_report(2e-3))
        for precision, rel, bound in (("fp32", 3e-6, 1e-4), ("fp16", 2e-3, 1e-2)):
            c = compare_report(rel, None, bound, True)
            write(d, f"bert_base@1-{precision}-compare.json", c)
        write(d, "bert_base@1-peers.json", peers_report({"status": "skipped"}))
        [row] = rows(zoo.table(d, ["bert_base@1"]))
        self.assertEqual(row, ["bert_base@1", "2 types / 400 nodes", "3.0e-06", zoo.DASH,
                               "2.0e-03", "2.00", "4.57", "skipped", "ok"])

    def test_pytorch_fp16_error_beside_ours(self):
        write(self.dir, "m-ops.json", {"nodes": 1, "op_types": {"Conv": 1}})
        write(self.dir, "m-fp16-compare.json", compare_report(2.2e-2, 0.9, 1e-2, False))
        peers = peers_report({"status": "skipped"})
        peers["eager_fp16_rel_l2"] = 2.5e-2
        write(self.dir, "m-peers.json", peers)
        (row,) = rows(zoo.table(self.dir, ["m"]))
        self.assertEqual(row[4], "2.2e-02 (PyTorch fp16 2.5e-02)")
        self.assertIn("fp16 rel L2 2.2e-02 above 1.0e-02", row[8])

    def test_same_failure_once(self):
        write(self.dir, "m-ops.json", {"nodes": 1, "op_types": {"Conv": 1}})
        for precision in ("fp32", "fp16"):
            write(self.dir, f"m-{precision}.err", "tunejit run: m.onnx: unsupported op 'Einsum'\n")
        (row,) = rows(zoo.table(self.dir, ["m"]))
        self.assertEqual(row[8], "fp32, fp16 import failed: m.onnx: unsupported op 'Einsum'; "
                                 "no PyTorch timing")

    def test_compile_failure_and_nan(self):
        d = self.dir
        write(d, "m-ops.json", {"nodes": 1, "op_types": {"Conv": 1}})
        write(d, "m-fp32.json", run_report(1e-3))
        write(d, "m-fp32-compare.json", compare_report("nan", 0.0, 1e-4, False))
        write(d, "m-fp32.err", "")
        write(d, "m-peers.json", peers_report({"status": "failed", "exit_code": 1,
                                               "note": "torch._dynamo.exc.Unsupported: x"}))
        (row,) = rows(zoo.table(d, ["m"]))
        self.assertEqual(row[2], "nan")
        self.assertIn("fp32 rel L2 nan above 1.0e-04", row[8])
        self.assertIn("torch.compile failed: torch._dynamo.exc.Unsupported: x", row[8])
        self.assertIn("fp16 not run", row[8])

    def test_table_command_writes_markdown(self):
        out = os.path.join(self.dir, "table.md")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            self.assertEqual(zoo.main(["table", "--dir", self.dir, "--models", "a,b",
                                       "--markdown", out]), 0)
        self.assertIn("| a |", printed.getvalue())
        with open(out) as f:
            self.assertEqual([r[0] for r in rows(f.read())], ["a", "b"])

    def test_exception_line(self):
        log = write(self.dir, "m-compile.log", "Traceback (most recent call last):\n  File x\n"
                    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                    "RuntimeError: out of memory\n\nYou can suppress this exception and fall "
                    "back to eager by setting:\n    import torch._dynamo\n")
        self.assertEqual(zoo.exception_line(log), "RuntimeError: out of memory")
        self.assertEqual(zoo.exception_line(write(self.dir, "x.log", "a\nkilled\n")), "killed")
        self.assertEqual(zoo.exception_line(os.path.join(self.dir, "absent.log")), "")

    def test_error_line(self):
        err = write(self.dir, "x.err", "run: building\n  warning: w\nterminate called after "
                                       "throwing\nAborted\n")
        self.assertEqual(zoo.error_line(err), "terminate called after throwing")
        self.assertEqual(zoo.error_line(os.path.join(self.dir, "absent.err")), "")


class ZooCommandLineTest(unittest.TestCase):
    def test_arguments(self):
        args = zoo.parser().parse_args(["export", "--out", "d", "--models", "a, b,", "--batch",
                                        "8"])
        self.assertEqual((args.out, args.models, args.batch, args.opset, args.seed),
                         ("d", ["a", "b"], 8, 17, 0))
        args = zoo.parser().parse_args(["peers", "--out", "d"])
        self.assertEqual(args.models, zoo.model_list(zoo.DEFAULT_MODELS))
        self.assertEqual(len(args.models), 9)
        self.assertEqual((args.batch, args.compile_timeout), (32, 300))
        args = zoo.parser().parse_args(["peers", "--out", "d", "--compile-timeout", "0"])
        self.assertEqual(args.compile_timeout, 0)

    def test_batch_in_the_model_name(self):
        self.assertEqual(zoo.split_batch("bert_base@1", 32), ("bert_base", 1))
        self.assertEqual(zoo.split_batch("resnet18", 32), ("resnet18", 32))
        args = zoo.parser().parse_args(["export", "--out", "d", "--models",
                                        "bert_base@1,bert_base@32"])
        self.assertEqual(args.models, ["bert_base@1", "bert_base@32"])

    def test_import_needs_no_torch(self):
        code = "import sys; sys.path.insert(0, sys.argv[1]); import zoo; print('torch' in " \
               "sys.modules)"
        out = subprocess.run([sys.executable, "-c", code, SCRIPTS], capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(out.strip(), "False")


@unittest.skipIf(np is None, "numpy is not installed")
class CompareOutputsJsonTest(unittest.TestCase):
    def test_json(self):
        with tempfile.TemporaryDirectory() as d:
            ref = np.arange(2000, dtype="<f4").reshape(2, 1000)
            ref[1] = ref[1][::-1]
            ours = ref.copy()
            ours[0, 0] += 1.0
            ref.tofile(os.path.join(d, "ref.bin"))
            ours.tofile(os.path.join(d, "ours.bin"))
            out = os.path.join(d, "c.json")
            proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, "compare_outputs.py"),
                                   os.path.join(d, "ours.bin"), os.path.join(d, "ref.bin"),
                                   "--max-rel", "1e-2", "--json", out],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("top-1 agreement 100.0%", proc.stdout)
            with open(out) as f:
                c = json.load(f)
            self.assertTrue(c["ok"])
            self.assertEqual((c["images"], c["top1_agreement"], c["max_abs_diff"]), (2, 1.0, 1.0))
            self.assertAlmostEqual(c["rel_l2"], 1.0 / np.linalg.norm(ref.astype(np.float64)))

            np.zeros(3, "<f4").tofile(os.path.join(d, "short.bin"))
            proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, "compare_outputs.py"),
                                   os.path.join(d, "short.bin"), os.path.join(d, "ref.bin"),
                                   "--json", out], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 1)
            with open(out) as f:
                c = json.load(f)
            self.assertFalse(c["ok"])
            self.assertIn("size mismatch", c["error"])

    def test_no_top1(self):
        with tempfile.TemporaryDirectory() as d:
            ref = np.linspace(-1, 1, 3 * 128 * 8, dtype="<f4")  # hidden states: no classes
            ours = ref.copy()
            ours[5] += 1e-3
            ref.tofile(os.path.join(d, "ref.bin"))
            ours.tofile(os.path.join(d, "ours.bin"))
            out = os.path.join(d, "c.json")
            script = os.path.join(SCRIPTS, "compare_outputs.py")
            proc = subprocess.run([sys.executable, script, os.path.join(d, "ours.bin"),
                                   os.path.join(d, "ref.bin"), "--no-top1", "--max-rel", "1e-2",
                                   "--json", out], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertNotIn("top-1", proc.stdout)
            with open(out) as f:
                c = json.load(f)
            self.assertTrue(c["ok"])
            self.assertIsNone(c["top1_agreement"])
            self.assertEqual(c["values"], ref.size)
            proc = subprocess.run([sys.executable, script, os.path.join(d, "ours.bin"),
                                   os.path.join(d, "ref.bin"), "--no-top1", "--max-rel", "1e-6"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 1)
            self.assertIn("FAIL", proc.stdout)


if __name__ == "__main__":
    unittest.main()

"""scripts/benchmarks_table.py on a fake `tunejit run --json` report (cli/run_report.cc's schema).

Runs with plain `python3 -m unittest` from the repository root or from this folder.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "benchmarks_table.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import benchmarks_table  # noqa: E402


def layer(name, kernel, dtype, seconds, cudnn_seconds):
    """One entry of ReportJson's "layers" (LayerJson), with the keys in its order."""
    return {"name": name, "op": "conv2d", "kernel": kernel, "dtype": dtype, "fused": "bias+relu",
            "record": "vgg16-fp16-wgmma.log:3", "flops": 1e10, "bytes_moved": 1 << 20,
            "seconds": seconds, "ops_per_s": 1e10 / seconds, "fraction_of_peak": 0.5,
            "roofline_seconds": seconds / 2, "cudnn_seconds": cudnn_seconds,
            "cudnn_op_seconds": cudnn_seconds, "cudnn_algorithm": "ALGO_1",
            "cudnn_over_ours": cudnn_seconds / seconds if cudnn_seconds else None}


def report(precision="fp16", kernel="conv2d_nhwc_wgmma.cuda", compiled=0, hits=17,
           accuracy_pass=True):
    """A ReportJson document: every top-level key, in ReportJson's order."""
    return {
        "tunejit_version": "0.1.0 (366e12d)",
        "model": "vgg16",
        "batch": 128,
        "precision": precision,
        "weights": "random weights (seed 1)",
        "log": "/tmp/.gpu/data/vgg16-fp16-wgmma.log",
        "repeats": 50,
        "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "clock_khz": 1980000,
                   "peak_fp32_flops_per_s": 6.7e13, "peak_int8_ops_per_s": 1.3e14,
                   "peak_fp16_flops_per_s": 1.07e15, "peak_int8_tensor_ops_per_s": 2.1e15,
                   "peak_bytes_per_s": 3.35e12, "peak_assumptions": "peaks: ..."},
        "layers": [
            layer("features.0", "conv2d_nchw_stem_mma.cuda", "float16", 0.0004, 0.001),
            layer("features.2", kernel, "float16", 0.001, 0.002),
            layer("features.5", kernel, "float16", 0.002, 0.0019),
            dict(layer("features.4", "max_pool2d", "float16", 0.0001, None), op="max_pool2d"),
        ],
        "totals": {"ours_seconds": 0.0035, "ours_seconds_matched": 0.0034,
                   "cudnn_seconds_matched": 0.0049, "flops": 3e10},
        "end_to_end": {"ours_seconds": 0.006274, "cudnn_seconds": 0.00855,
                       "baseline": "cuDNN 9.14.0, cuBLAS 13.1.0", "baseline_precision": "fp16"},
        "startup": [{"phase": "model", "seconds": 0.01, "detail": "vgg16"},
                    {"phase": "log", "seconds": 0.2, "detail": "3000 records"},
                    {"phase": "weights", "seconds": 5.0, "detail": "random weights (seed 1)"},
                    {"phase": "build", "seconds": 3.0, "detail": "..."},
                    {"phase": "first run", "seconds": 0.09, "detail": "..."}],
        "build": {"lower_seconds": 0.01, "compile_seconds": 1.5 if compiled else 0.0,
                  "kernels_compiled": compiled, "kernel_cache_hits": hits,
                  "calibrate_seconds": 0.0, "upload_seconds": 0.4, "verify_seconds": 1.0,
                  "fallback_layers": 0, "warnings": []},
        "memory": {"peak_device_bytes": 3 << 30, "weight_bytes": 1 << 28,
                   "activation_sum_bytes": 1 << 30, "arena_bytes": 1 << 29, "workspace_bytes": 0},
        "accuracy": {"checked": True, "reference": "cuDNN fp32", "rows": 128, "rel_l2": 0.00108,
                     "top1_agreement": 1.0, "decisive_rows": 100, "decisive_top1_agreement": 1.0,
                     "max_rel_l2": 0.01, "min_top1": 0.9, "bounds": "fp16: ...",
                     "pass": accuracy_pass},
    }


class RowsTest(unittest.TestCase):
    def test_end_to_end_per_layer_and_warm_start(self):
        rows = benchmarks_table.rows_for(report(), "2026-12-05")
        self.assertEqual([r[0] for r in rows], [
            "VGG-16 b128 fp16: end to end", "VGG-16 b128 fp16: per layer",
            "VGG-16 b128 fp16: startup, warm cache"])
        e2e = rows[0]
        self.assertEqual(len(e2e), len(benchmarks_table.COLUMNS))
        self.assertEqual(e2e[1], "`vgg16-fp16-wgmma.log`")
        self.assertEqual(e2e[2], "6.274 ms")
        self.assertEqual(e2e[3], "cuDNN fp16 8.550 ms")
        self.assertEqual(e2e[4], "1.36x")
        self.assertEqual(e2e[5], "rel L2 0.00108 vs cuDNN fp32, top-1 100%: PASS")
        self.assertEqual(e2e[6:], ["NVIDIA H100 80GB HBM3", "`366e12d`", "2026-12-05"])
        per_layer = rows[1]
        self.assertEqual(per_layer[2], "layers' sum 3.400 ms")
        self.assertEqual(per_layer[3], "cuDNN fp16 layers' sum 4.900 ms")
        self.assertEqual(per_layer[4], "0.95x-2.50x per layer")  # 1.9/2 and 1/0.4
        self.assertIn("3 layers with a cuDNN counterpart; sums 1.44x", per_layer[5])
        startup = rows[2]
        self.assertEqual(startup[2], "8.30 s")
        self.assertIn("0 compiled, 17 cache hits", startup[5])

    def test_int8_mode_from_kernels_and_cold_start(self):
        tc = benchmarks_table.rows_for(report("int8", compiled=20, hits=0), "d")
        self.assertEqual(tc[0][0], "VGG-16 b128 int8 (tensor cores): end to end")
        self.assertEqual(tc[2][0], "VGG-16 b128 int8 (tensor cores): startup, cold cache")
        dp4a = benchmarks_table.rows_for(report("int8", kernel="conv2d_NCHWc_int8.cuda"), "d")
        self.assertEqual(dp4a[0][0], "VGG-16 b128 int8 (dp4a): end to end")

    def test_failed_or_unchecked_accuracy_and_no_baseline(self):
        r = report(accuracy_pass=False)
        self.assertTrue(benchmarks_table.rows_for(r, "d")[0][5].endswith("FAIL"))
        r["accuracy"] = {"checked": False, "skipped": "--no-cudnn"}
        r["end_to_end"]["cudnn_seconds"] = None
        for l in r["layers"]:
            l["cudnn_over_ours"] = None
        rows = benchmarks_table.rows_for(r, "d")
        self.assertEqual([row[0] for row in rows],
                         ["VGG-16 b128 fp16: end to end", "VGG-16 b128 fp16: startup, warm cache"])
        self.assertEqual(rows[0][3:6], ["-", "-", "not checked (--no-cudnn)"])


class UpdateTest(unittest.TestCase):
    def test_update_replaces_matching_rows_and_keeps_the_others(self):
        hand = [["VGG-16 b128 fp16: end to end", "`vgg16-fp16-wgmma.log`", "6.495 ms", "x", "x",
                 "x", "NVIDIA H100", "`old`", "2026-12-05"],
                ["VGG-16 b128 int8 (dp4a): tuning, 5 min", "`vgg16-int8-h200-5min.log`",
                 "47.08 ms", "-", "-", "a | b", "NVIDIA H200", "`93df051`", "2026-12-02"]]
        doc = ("# Benchmarks\n\nintro\n\n" + benchmarks_table.BEGIN + "\n" +
               benchmarks_table.format_table(hand) + benchmarks_table.END +
               "\n\nFeed the script these JSONs.\n")
        with tempfile.TemporaryDirectory() as tmp:
            json_path = os.path.join(tmp, "vgg16-fp16.json")
            with open(json_path, "w") as f:
                json.dump(report(), f, indent=2)
            md = os.path.join(tmp, "benchmarks.md")
            with open(md, "w") as f:
                f.write(doc)
            subprocess.run([sys.executable, SCRIPT, "--update", md, "--date", "2026-12-06",
                            json_path], check=True)
            with open(md) as f:
                text = f.read()
            printed = subprocess.run([sys.executable, SCRIPT, "--date", "2026-12-06", json_path],
                                     check=True, capture_output=True, text=True).stdout
        self.assertTrue(text.startswith("# Benchmarks\n\nintro\n\n" + benchmarks_table.BEGIN))
        self.assertTrue(text.endswith(benchmarks_table.END +
                                      "\n\nFeed the script these JSONs.\n"))
        block = text[text.index(benchmarks_table.BEGIN):text.index(benchmarks_table.END)]
        rows = benchmarks_table.parse_table(block)
        self.assertEqual([r[0] for r in rows], [
            "VGG-16 b128 fp16: end to end", "VGG-16 b128 int8 (dp4a): tuning, 5 min",
            "VGG-16 b128 fp16: per layer", "VGG-16 b128 fp16: startup, warm cache"])
        self.assertEqual(rows[0][2], "6.274 ms")  # replaced in place
        self.assertEqual(rows[0][7:], ["`366e12d`", "2026-12-06"])
        self.assertEqual(rows[1], hand[1])  # kept, its escaped "|" intact
        self.assertIn("| VGG-16 b128 fp16: end to end | `vgg16-fp16-wgmma.log` | 6.274 ms |",
                      printed)

    def test_a_later_json_wins_and_rows_are_not_repeated(self):
        cold = benchmarks_table.rows_for(report(compiled=20, hits=0), "d")
        warm = benchmarks_table.rows_for(report(), "d")
        warm[0][2] = "6.000 ms"
        merged = benchmarks_table.merge_rows([], cold + warm)
        self.assertEqual([r[0] for r in merged], [
            "VGG-16 b128 fp16: end to end", "VGG-16 b128 fp16: per layer",
            "VGG-16 b128 fp16: startup, cold cache", "VGG-16 b128 fp16: startup, warm cache"])
        self.assertEqual(merged[0][2], "6.000 ms")

    def test_missing_markers_is_an_error(self):
        with self.assertRaises(ValueError):
            benchmarks_table.update_markdown("no block here\n", [])


if __name__ == "__main__":
    unittest.main()

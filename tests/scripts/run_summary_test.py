"""scripts/run_summary.py on fake `tunejit run --json` reports (cli/run_report.cc's keys)."""

import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import run_summary  # noqa: E402


def write(directory, name, **fields):
    report = {"model": "vgg16", "batch": 128, "precision": "fp16",
              "numeric_mode": "fp16-tensor-cores", "log": "data/vgg16-fp16-wgmma.log",
              "end_to_end": {"ours_seconds": 6.3e-3, "cudnn_seconds": 8.6e-3,
                             "baseline_precision": "fp16"},
              "accuracy": {"checked": True, "pass": True, "rel_l2": 2.1e-3}}
    report.update(fields)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(report, f)
    return path


class RunSummaryTest(unittest.TestCase):
    def test_rows_and_missing_runs(self):
        with tempfile.TemporaryDirectory() as d:
            fp16 = write(d, "fp16.json")
            int8 = write(d, "int8.json", precision="int8", numeric_mode="int8",
                         log="data/seed-vgg16-v100.log",
                         end_to_end={"ours_seconds": 0.0857, "cudnn_seconds": 0.052,
                                     "baseline_precision": "fp32"},
                         accuracy={"checked": True, "pass": False, "rel_l2": "inf"})
            text = run_summary.table([int8, fp16, os.path.join(d, "absent.json")])
        lines = text.splitlines()
        self.assertEqual(len(lines), 5)
        self.assertIn("cuDNN/tunejit", lines[0])
        self.assertIn("int8 (dp4a)", lines[2])
        self.assertIn("seed-vgg16-v100.log", lines[2])
        self.assertIn("85.70 ms", lines[2])
        self.assertIn("cuDNN fp32 52.00 ms", lines[2])
        self.assertIn("0.61x", lines[2])
        self.assertIn("FAIL (rel inf)", lines[2])
        self.assertIn("fp16 (tensor cores)", lines[3])
        self.assertIn("1.37x", lines[3])
        self.assertIn("pass (rel 0.0021)", lines[3])
        self.assertTrue(lines[2].startswith("int8 "))
        self.assertTrue(lines[4].startswith("absent "))
        self.assertIn("not run", lines[4])


if __name__ == "__main__":
    unittest.main()

"""tests/data/zoo_convs.txt as scripts/zoo_conv_shapes.py writes it (the file the C++ zoo tests
read through tests/testing/zoo_convs.h), and the script's row extraction on a hand-made ONNX
model (skipped without onnx).

Runs with plain `python3 -m unittest` from the repository root or from this folder.
"""

import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import zoo_conv_shapes  # noqa: E402

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    onnx = None


class DataFileTest(unittest.TestCase):
    def test_rows_are_distinct_sorted_geometries_under_the_column_header(self):
        with open(os.path.join(ROOT, "tests", "data", "zoo_convs.txt")) as f:
            lines = f.read().splitlines()
        header = [line for line in lines if line.startswith("#")]
        self.assertIn("# " + zoo_conv_shapes.COLUMNS, header)
        rows = [tuple(int(v) for v in line.split()) for line in lines if not line.startswith("#")]
        self.assertGreater(len(rows), 200)
        columns = len(zoo_conv_shapes.COLUMNS.split())
        for row in rows:
            self.assertEqual(len(row), columns, row)
            c, h, w, co, kh, kw, sh, sw = row[:8]
            groups = row[-1]
            self.assertTrue(min(c, h, w, co, kh, kw, sh, sw, groups) >= 1, row)
            self.assertEqual(c % groups, 0, row)
        self.assertEqual(rows, sorted(set(rows)))
        # ResNet-50's 7x7 stride-2 stem and a MobileNetV2 depthwise conv are among them.
        self.assertIn((3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1), rows)
        self.assertIn((144, 56, 56, 144, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 144), rows)


@unittest.skipIf(onnx is None, "needs onnx")
class ExtractionTest(unittest.TestCase):
    def test_a_strided_grouped_conv_becomes_one_row(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 12])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4, 3, 3], [0.0] * (8 * 4 * 3 * 3))
        conv = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                                group=2)
        model = helper.make_model(helper.make_graph([conv], "g", [x], [y], [w]))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            onnx.save(model, path)
            rows = zoo_conv_shapes.conv_rows(path)
        self.assertEqual(rows, {(8, 10, 12, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2)})


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""The convolutions of exported zoo models, one line each, for tests/data/zoo_convs.txt.

  scripts/zoo_conv_shapes.py --dir /tmp/zoo --models resnet18,resnet50 > tests/data/zoo_convs.txt

Reads DIR/<model>.onnx (scripts/zoo.py export), infers the shapes with onnx, and prints each
distinct Conv as "c h w co kh kw stride_h stride_w pad_top pad_left pad_bottom pad_right
dilation_h dilation_w groups" (the batch left out: the test that reads them sets it), sorted.
"""
import argparse
import sys

DEFAULT_MODELS = ("resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,"
                  "squeezenet1_1,convnext_tiny,vit_b_16")
COLUMNS = ("c h w co kh kw stride_h stride_w pad_top pad_left pad_bottom pad_right dilation_h "
           "dilation_w groups")


def conv_rows(path):
    """The distinct Conv geometries of the ONNX file at path, as tuples in COLUMNS' order."""
    import onnx
    from onnx import helper, shape_inference
    model = shape_inference.infer_shapes(onnx.load(path, load_external_data=False))
    graph = model.graph
    shapes = {}
    for value in list(graph.value_info) + list(graph.input) + list(graph.output):
        shapes[value.name] = [d.dim_value for d in value.type.tensor_type.shape.dim]
    weights = {init.name: list(init.dims) for init in graph.initializer}
    rows = set()
    for node in graph.node:
        if node.op_type != "Conv":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        x, w = shapes[node.input[0]], weights[node.input[1]]
        kernel = attrs.get("kernel_shape", w[2:])
        strides = attrs.get("strides", [1, 1])
        pads = attrs.get("pads", [0, 0, 0, 0])
        dilations = attrs.get("dilations", [1, 1])
        rows.add((x[1], x[2], x[3], w[0], kernel[0], kernel[1], strides[0], strides[1], pads[0],
                  pads[1], pads[2], pads[3], dilations[0], dilations[1], attrs.get("group", 1)))
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="folder of <model>.onnx files")
    parser.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated model names")
    args = parser.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    rows = set()
    for m in models:
        rows |= conv_rows(f"{args.dir}/{m}.onnx")
    print(f"# The convolutions of torchvision's {', '.join(models)} as torch.onnx.export writes")
    print("# them (scripts/zoo_conv_shapes.py), one per line, without the batch:")
    print(f"# {COLUMNS}")
    for row in sorted(rows):
        print(*row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

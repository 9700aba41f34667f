#!/usr/bin/env python3
"""For tests/examples/fashion_net_test.cc: each of train.py's networks with its seeded PyTorch
initialization, exported the way train.py exports it, and PyTorch's float32 CPU logits for a fixed
batch of two images, so the test can hold tunejit's CPU reference forward to PyTorch's.

  python3 tests/examples/torch_reference.py OUT_DIR

writes OUT_DIR/{vgg,resnet}.safetensors and OUT_DIR/logits.json ({"vgg": [20 floats], ...}).
The images' pixels are i * 53 % 256 for i in 0 .. 2 * 28 * 28 - 1. Exit status 77 without torch.
"""
import json
import os
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                "fashion_mnist"))
import train  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pixels = torch.tensor([i * 53 % 256 for i in range(2 * 28 * 28)], dtype=torch.uint8)
    images = train.normalize(pixels.reshape(2, 28, 28))
    logits = {}
    for name, net in sorted(train.NETS.items()):
        torch.manual_seed(3)
        model = net().eval()
        with torch.no_grad():
            logits[name] = model(images).flatten().tolist()
        train.save_safetensors(os.path.join(out, name + ".safetensors"), model.state_dict(), name)
    with open(os.path.join(out, "logits.json"), "w") as f:
        json.dump(logits, f)


if __name__ == "__main__":
    main()

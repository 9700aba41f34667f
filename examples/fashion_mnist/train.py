#!/usr/bin/env python3
"""Trains one of examples/fashion_mnist's networks on Fashion-MNIST with PyTorch, and exports what
the `fashion_mnist` example needs to run it in tunejit (real weights).

--net vgg (the default) is the small VGG-style network, --net resnet a small ResNet (residual adds,
two stride-2 stages with 1x1 downsample convs); fashion_net.h builds both graphs.

Runs where PyTorch and a GPU are (the GPU machine; a minute or two). Reads the IDX files of
Debian's dataset-fashion-mnist (gzipped or not) from --data and writes to --out:
  fashion.safetensors  float32 parameters under the state dict's names (fashion_net.h binds them)
  pytorch.json         PyTorch's test top-1 in fp32 (TF32 off) and fp16 (autocast), with the
                       fp32 predictions per image (the example reports agreement with them)

  python3 examples/fashion_mnist/train.py --data /usr/share/datasets/fashion-mnist --out /tmp/fm
  python3 examples/fashion_mnist/train.py --net resnet --data ... --out /tmp/fm-resnet

Needs only torch (no torchvision, numpy or safetensors package: the file is written by hand).
"""
import argparse
import gzip
import json
import os
import struct
import time

import torch
from torch import nn

# The training pixels' mean and standard deviation (of pixel / 255); fashion_net.h has the same.
MEAN, STD = 0.2860, 0.3530


class FashionNet(nn.Module):
    """fashion_net.h's graph: the same layers under the same state dict names."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),  # features.0
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 32, 3, padding=1),  # features.2
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),  # 28 -> 14
            nn.Conv2d(32, 64, 3, padding=1),  # features.5
            nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, 3, padding=1),  # features.7
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),  # 14 -> 7
            nn.Conv2d(64, 128, 3, padding=1),  # features.10
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),  # 7 -> 3
        )
        self.classifier = nn.Sequential(
            nn.Linear(128 * 3 * 3, 256),  # classifier.0
            nn.ReLU(inplace=True),
            nn.Dropout(0.3),
            nn.Linear(256, 10),  # classifier.3
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    """relu(conv2(relu(conv1(x))) + skip): the skip is x, or its 1x1 strided conv `downsample`
    when the block strides or widens (fashion_net.cc's BasicBlock)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Conv2d(cin, cout, 1, stride=stride)

    def forward(self, x):
        y = self.conv2(torch.relu(self.conv1(x)))
        skip = x if self.downsample is None else self.downsample(x)
        return torch.relu(y + skip)


class FashionResNet(nn.Module):
    """fashion_net.h's BuildFashionResNet: the same layers under the same state dict names.

    Convs keep their bias and there is no BatchNorm: the exported state dict is the graph's weights
    one to one, and PyTorch's accuracy is that of the very model tunejit runs (no folding step
    between them). Nine convs with skips are shallow enough to train without it."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 32, 3, padding=1)
        self.layer1 = BasicBlock(32, 32, 1)  # 28 x 28
        self.layer2 = BasicBlock(32, 64, 2)  # 14 x 14
        self.layer3 = BasicBlock(64, 128, 2)  # 7 x 7
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(torch.relu(self.stem(x)))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


NETS = {"vgg": FashionNet, "resnet": FashionResNet}


def read_idx(data_dir, stem):
    """The unsigned-byte IDX file `stem` (or `stem`.gz) as a uint8 tensor of its dimensions."""
    for name, opener in ((stem, open), (stem + ".gz", gzip.open)):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            with opener(path, "rb") as f:
                data = f.read()
            break
    else:
        raise SystemExit(f"train.py: no {stem}[.gz] in {data_dir}")
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise SystemExit(f"train.py: {stem} is not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * rank, data[4 : 4 + 4 * rank])
    return torch.frombuffer(bytearray(data[4 + 4 * rank :]), dtype=torch.uint8).reshape(dims)


def normalize(images):
    return ((images.float() / 255.0 - MEAN) / STD).unsqueeze(1)  # [N, 1, 28, 28]


def predict(model, images, batch=1000, fp16=False):
    model.eval()
    out = []
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=fp16):
        for i in range(0, len(images), batch):
            out.append(model(images[i : i + batch]).float().argmax(1))
    return torch.cat(out)


def save_safetensors(path, tensors, net="vgg"):
    """The safetensors format: an 8-byte little-endian header length, a JSON header, the data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        values = t.detach().to("cpu", torch.float32).contiguous().flatten().tolist()
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"tunejit.weights": "examples/fashion_mnist/train.py",
                              "tunejit.net": net}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="folder of the Fashion-MNIST IDX files")
    parser.add_argument("--out", required=True, help="folder for fashion.safetensors, pytorch.json")
    parser.add_argument("--net", choices=sorted(NETS), default="vgg", help="which network")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("train.py: needs a CUDA GPU")
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    # The fp32 reference is real fp32: no TF32 in convs or matmuls.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")

    train_x = normalize(read_idx(args.data, "train-images-idx3-ubyte")).to(dev)
    train_y = read_idx(args.data, "train-labels-idx1-ubyte").long().to(dev)
    test_x = normalize(read_idx(args.data, "t10k-images-idx3-ubyte")).to(dev)
    test_y = read_idx(args.data, "t10k-labels-idx1-ubyte").long().to(dev)

    model = NETS[args.net]().to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator(device=dev).manual_seed(args.seed)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x), device=dev, generator=generator)
        for i in range(0, len(order), 128):
            idx = order[i : i + 128]
            loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        top1 = (predict(model, test_x) == test_y).float().mean().item() * 100
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test top-1 {top1:.2f}%", flush=True)
    train_seconds = time.time() - start

    fp32 = predict(model, test_x)
    fp16 = predict(model, test_x, fp16=True)
    result = {
        "net": args.net,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "epochs": args.epochs,
        "train_seconds": round(train_seconds, 1),
        "test_images": len(test_y),
        "fp32_top1": (fp32 == test_y).float().mean().item() * 100,
        "fp16_top1": (fp16 == test_y).float().mean().item() * 100,
        "fp32_predictions": fp32.tolist(),
    }
    save_safetensors(os.path.join(args.out, "fashion.safetensors"), model.state_dict(), args.net)
    with open(os.path.join(args.out, "pytorch.json"), "w") as f:
        json.dump(result, f)
    print(f"PyTorch {args.net}: fp32 {result['fp32_top1']:.2f}%, fp16 {result['fp16_top1']:.2f}% "
          f"({args.epochs} epochs, {train_seconds:.0f} s); wrote {args.out}")


if __name__ == "__main__":
    main()

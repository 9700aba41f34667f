"""cuDNN's fp16 NHWC convolutions on VGG-16's 3x3 shapes at batch 128, each run once inside an
NVTX range named "prof" after cuDNN has picked its algorithm, for `ncu --nvtx --nvtx-include prof/`
(scripts/gpu_profile.sh). Random inputs; needs PyTorch with CUDA (the GPU machine's python3)."""
import torch
import torch.nn.functional as F

# (H = W, C, CO) of VGG-16's convs after the stem, in layer order, each shape once.
SHAPES = [(224, 64, 64), (112, 64, 128), (112, 128, 128), (56, 128, 256), (56, 256, 256),
          (28, 256, 512), (28, 512, 512), (14, 512, 512)]


def main():
    torch.backends.cudnn.benchmark = True
    for h, c, co in SHAPES:
        x = torch.randn(128, c, h, h, device="cuda", dtype=torch.half)
        w = torch.randn(co, c, 3, 3, device="cuda", dtype=torch.half)
        x = x.to(memory_format=torch.channels_last)
        w = w.to(memory_format=torch.channels_last)
        for _ in range(5):  # cuDNN's algorithm search, then warm-up
            F.conv2d(x, w, padding=1)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("prof")
        F.conv2d(x, w, padding=1)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print(f"conv {h}x{h} {c}->{co}: profiled", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch's fused attention (torch.nn.functional.scaled_dot_product_attention) alone, fp16, on the
shapes tunejit's attention_mma.cuda benchmark times (tests/ops/attention_gpu_test.cc,
AttentionGpuBench): ViT-B/16 (32, 12, 197, 64) and BERT-base (32, 12, 128, 64, with an additive
float mask), contiguous [B, H, S, D]. CUDA events, 20 warm-up runs, median of 200, each backend
PyTorch offers for the shape (flash, efficient, cuDNN, math) and its default choice.
  python3 scripts/sdpa_bench.py
"""
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [("vit_b_16", 32, 12, 197, 64, False), ("bert_base", 32, 12, 128, 64, True)]
BACKENDS = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)]


def time_ms(fn, warmup=20, runs=200):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    for name, b, h, s, d, masked in SHAPES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        mask = torch.zeros(b, 1, 1, s, device="cuda", dtype=torch.float16) if masked else None
        flops = 4 * b * h * s * s * d
        for label, backend in BACKENDS:
            def run():
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            try:
                if backend is None:
                    ms = time_ms(run)
                else:
                    with sdpa_kernel(backend):
                        ms = time_ms(run)
            except RuntimeError as e:  # a backend that does not take the shape or the mask
                print(f"{name} ({b}, {h}, {s}, {d}{', mask' if masked else ''}) {label}: "
                      f"unavailable ({str(e).splitlines()[0][:80]})")
                continue
            print(f"{name} ({b}, {h}, {s}, {d}{', mask' if masked else ''}) {label}: {ms:.4f} ms "
                  f"{flops / ms / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Exports torchvision VGG-16 and ResNet-50 (or BERT) to ONNX with PyTorch's float32 reference output.

For the GPU machine (torch, torchvision and onnx installed; no internet, so the weights are random:
weights=None with a fixed torch.manual_seed). Per model, in --out:
  <model>.onnx        eval mode, opset 17 (TorchScript exporter), batch --batch (static, or dynamic
                      with --dynamic-batch: then pass `tunejit run --batch N`)
  <model>-input.bin   the input, N(0, 1) from --seed, raw little-endian float32 [N, 3, 224, 224]
  <model>-torch.bin   PyTorch's float32 output on it, raw float32 [N, 1000] (TF32 off)
BERT (--models bert_base, or bert_tiny: 2 layers of 128, heads of 64): transformers.BertModel(BertConfig(...))
without its pooler (likewise the decoders gpt2_small, gpt2_tiny, opt_tiny, llama_tiny: TEXT_MODELS), random weights (seed), every constant parameter (zero biases, LayerNorm's ones)
given N(value, 0.02) values so that each one is checked; exported with input_ids only, int64
[N, 128] (the attention mask all ones: tunejit takes one input), output last_hidden_state
[N, 128, hidden]:
  <model>-input.bin   the ids, uniform in [0, vocab) from --seed, raw little-endian int64
  <model>-torch.bin   PyTorch's float32 last_hidden_state, raw float32 [N, 128, hidden]
  <model>-torch-fp16.bin  PyTorch's float16 output of the same model (eager), as float32
Then compare with tunejit (scripts/compare_outputs.py; --no-top1 for BERT, whose output has no
classes):
  build/tunejit run --model OUT/resnet50.onnx --precision fp32 --input OUT/resnet50-input.bin \\
      --output OUT/resnet50-tunejit.bin
  scripts/compare_outputs.py OUT/resnet50-tunejit.bin OUT/resnet50-torch.bin --classes 1000

--qdq: VGG-16 with int8 fake quantization as TensorRT's pytorch-quantization does it, written as
<model>-qdq.onnx, <model>-qdq-input.bin and <model>-qdq-torch.bin:
  * activations: per tensor, symmetric (zero point 0), scale max|x| / 127 over a separate
    calibration batch (N(0, 1), another seed), torch.fake_quantize_per_tensor_affine on the input
    of every conv that tunejit's --precision int8 runs int8: all but the first one (3 input
    channels; executor/node_tasks.h keeps it and the dense layers float32, as the seed log was tuned);
  * weights of those convs: per output channel (axis 0), symmetric, scale max|w| / 127,
    torch.fake_quantize_per_channel_affine;
  * quant range -128..127: the exporter refuses -127..127, and it is what our kernels do for
    activations (requantize saturates to [-128, 127]); weights scaled by max|w| / 127 never reach
    -128, so they stay in our symmetric [-127, 127];
  * exported at opset 17, where each fake quantization becomes a QuantizeLinear/DequantizeLinear
    pair.
The reference <model>-qdq-torch.bin is PyTorch's output of the fake-quant model, computed in
float64: it IS the QDQ model's float semantics, the reference for `tunejit run --precision int8`
(which takes the file's activation scales, and recovers the file's int8 weights exactly from the
fake-quantized ones, each channel's max |q| being 127). The remaining differences are float
rounding order (a value on a rounding boundary lands one step apart). With untrained weights,
twelve stacked quantizations amplify them: on the H200 (docs/history/2026-12-01-third-session.md) ours was 2.15e-2
(rel L2) from this reference and PyTorch's own float32 run of the same model 2.24e-2
(<model>-qdq-torch-fp32.bin), top-1 ~90% for both; a wrong scale would be off by whole steps
everywhere. When onnxruntime is installed, scripts/compare_outputs.py --onnx also runs the QDQ
model on ONNX Runtime's CPU.
  scripts/export_onnx.py --out OUT --qdq --batch 128
  build/tunejit run --model OUT/vgg16-qdq.onnx --precision int8 \\
      --input OUT/vgg16-qdq-input.bin --output OUT/vgg16-qdq-tunejit.bin
  scripts/compare_outputs.py OUT/vgg16-qdq-tunejit.bin OUT/vgg16-qdq-torch.bin --max-rel 0.05 \\
      --onnx OUT/vgg16-qdq.onnx --input OUT/vgg16-qdq-input.bin
"""
import argparse
import collections
import inspect
import os

import torch
import torchvision


# Transformer encoders from `transformers` configs (random weights: nothing is downloaded):
# name -> (transformers architecture, config arguments beyond its defaults). BERT-base: 12 layers
# of 768, 12 heads; GPT-2: 12 layers of 768 (its 124M model); the decoders (gpt2, opt, llama)
# attend causally, their mask a constant the importer folds.
TINY = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512,
            vocab_size=1000, max_position_embeddings=128)
TEXT_MODELS = {
    "bert_base": ("Bert", {}),
    # Heads of 64, as BERT-base's: the fused attention takes head dims 64 and 128.
    "bert_tiny": ("Bert", dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                               intermediate_size=512, vocab_size=1000,
                               max_position_embeddings=128)),
    "gpt2_small": ("GPT2", {}),
    "gpt2_tiny": ("GPT2", dict(n_layer=2, n_embd=128, n_head=2, vocab_size=1000, n_positions=128)),
    "opt_tiny": ("OPT", dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                             ffn_dim=512, vocab_size=1000, max_position_embeddings=128,
                             word_embed_proj_dim=128)),
    "llama_tiny": ("Llama", dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                 intermediate_size=512, vocab_size=1000,
                                 max_position_embeddings=128)),
    # Encoders beside BERT (the importer's sweep in docs/benchmarks.md).
    "distilbert_tiny": ("DistilBert", dict(n_layers=2, dim=128, n_heads=2, hidden_dim=512,
                                           vocab_size=1000, max_position_embeddings=128)),
    "albert_tiny": ("Albert", dict(embedding_size=64, **TINY)),
    "electra_tiny": ("Electra", dict(embedding_size=64, **TINY)),
    "roberta_tiny": ("Roberta", dict(TINY, max_position_embeddings=130)),
    "deberta_v2_tiny": ("DebertaV2", dict(TINY)),
}
SEQUENCE = 128  # tokens per sequence of the exported text models (static)


def vocab_size(name):
    arch, args = TEXT_MODELS[name]
    return args["vocab_size"] if "vocab_size" in args else {"Bert": 30522, "GPT2": 50257}[arch]


def is_text_model(name):
    return name in TEXT_MODELS


class LastHiddenState(torch.nn.Module):
    """A transformers model with input_ids only, returning last_hidden_state: one input, one
    output."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids):
        return self.bert(input_ids=input_ids).last_hidden_state


def build_text(name, seed):
    import transformers  # only the text models need it
    torch.manual_seed(seed)
    arch, args = TEXT_MODELS[name]
    config = getattr(transformers, arch + "Config")(**args)
    model_class = getattr(transformers, arch + "Model")
    pooled = arch in ("Bert", "Albert", "Roberta")  # their pooler is left out
    bert = model_class(config, add_pooling_layer=False) if pooled else model_class(config)
    # BERT starts with zero biases and LayerNorms of ones and zeros: an importer that dropped a
    # bias or a LayerNorm's affine part would still match. Each gets N(value, 0.02) instead.
    with torch.no_grad():
        for p in bert.parameters():
            if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.normal_(p.flatten()[0].item(), 0.02)
    return LastHiddenState(bert).eval()


def model_input(name, batch, seed):
    """The model's input drawn from `seed`: N(0, 1) images, or token ids for BERT."""
    torch.manual_seed(seed)
    if is_text_model(name):
        return torch.randint(0, vocab_size(name), (batch, SEQUENCE), dtype=torch.int64)
    return torch.randn(batch, 3, 224, 224)


def io_names(name):
    """(input name, output name) of the exported file."""
    return ("input_ids", "last_hidden_state") if is_text_model(name) else ("input", "logits")


def build(name, seed):
    if is_text_model(name):
        return build_text(name, seed)
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None)
    # Some classifiers start from zeros (ViT's head): every logit would be 0 whatever ran
    # before, which checks nothing. Such weights get N(0, 0.02) values instead.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    calibrate_batch_norms(model, seed)
    return model.eval()


def calibrate_batch_norms(model, seed, images=8):
    """Sets every BatchNorm's running statistics to those of one random batch, as training would.

    With the initial statistics (mean 0, variance 1) a BatchNorm is the identity, and the
    initialization's fan-out scaling shrinks the activations at every depthwise conv (std
    sqrt(2 / (9 C)) where sqrt(2 / 9) would keep them): MobileNetV2's logits end near 1e-9, below
    float16's smallest subnormal, so a float16 run is all zeros and checks nothing. Calibrated,
    every BatchNorm's output has unit variance, as in a trained network."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    model.eval()
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
        m.train()
    generator = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        model(torch.randn(images, 3, 224, 224, generator=generator))
    for m in norms:
        m.momentum = 0.1
    model.eval()


def export(model, x, path, opset, dynamic, names=("input", "logits")):
    kwargs = dict(input_names=[names[0]], output_names=[names[1]], opset_version=opset,
                  do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
    if dynamic:
        kwargs["dynamic_axes"] = {names[0]: {0: "batch"}, names[1]: {0: "batch"}}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: plain Conv/Gemm/... graphs
    torch.onnx.export(model, x, path, **kwargs)


def reference(model, x, dtype=torch.float32):
    # Full float32: TF32 would put PyTorch's own error (~1e-3) above the bound we check (1e-4).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = x.to(device, dtype) if x.is_floating_point() else x.to(device)  # token ids stay int64
    with torch.no_grad():
        return model.to(device, dtype)(x).float().cpu()


class QdqConv2d(torch.nn.Module):
    """A conv with fake-quantized input (per tensor) and weight (per output channel)."""

    def __init__(self, conv, input_amax):
        super().__init__()
        self.conv = conv
        w = conv.weight.detach()
        w_amax = w.abs().amax(dim=(1, 2, 3)).clamp(min=1e-12)
        # Buffers, not Python numbers: they export as initializers (the zero points' cast to
        # INT8 is constant-folded).
        self.register_buffer("x_scale", torch.tensor(max(input_amax, 1e-12) / 127.0))
        self.register_buffer("x_zero", torch.tensor(0, dtype=torch.int32))
        self.register_buffer("w_scale", (w_amax / 127.0).float())
        self.register_buffer("w_zero", torch.zeros(w.shape[0], dtype=torch.int32))

    def forward(self, x):
        if x.dtype == torch.float64:
            return self.forward_float64(x)
        x = torch.fake_quantize_per_tensor_affine(x, self.x_scale, self.x_zero, -128, 127)
        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale, self.w_zero, 0,
                                                   -128, 127)
        c = self.conv
        return torch.nn.functional.conv2d(x, w, c.bias, c.stride, c.padding, c.dilation, c.groups)

    def forward_float64(self, x):
        """The same fake quantization for the reference, written out (the fake_quantize ops take
        float32 only) and followed by a float64 conv. round() is half-to-even, like the ops."""
        def fake_quant(v, scale):
            return torch.clamp(torch.round(v / scale), -128, 127) * scale
        c = self.conv
        x = fake_quant(x, self.x_scale.double())
        w = fake_quant(c.weight.double(), self.w_scale.double().view(-1, 1, 1, 1))
        return torch.nn.functional.conv2d(x, w, c.bias, c.stride, c.padding, c.dilation, c.groups)


def conv_input_amax(model, convs, x):
    """max |x| entering each of `convs` (names) over the batch x, in the float model."""
    amax, hooks = {}, []
    for name in convs:
        def hook(_, inputs, name=name):
            amax[name] = max(amax.get(name, 0.0), inputs[0].detach().abs().max().item())
        hooks.append(model.get_submodule(name).register_forward_pre_hook(hook))
    with torch.no_grad():
        for chunk in x.split(16):
            model(chunk)
    for h in hooks:
        h.remove()
    return amax


def make_qdq(model, calib):
    """Replaces every conv but the first (tunejit's int8 convs) by a QdqConv2d."""
    convs = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)][1:]
    amax = conv_input_amax(model, convs, calib)
    for name in convs:
        parent, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(parent), leaf, QdqConv2d(model.get_submodule(name), amax[name]))
    return model.eval()


def op_counts(path):
    import onnx  # only to report what was written
    m = onnx.load(path)
    return dict(collections.Counter(n.op_type for n in m.graph.node))


def export_one(name, args, qdq, stem=None):
    """Exports model `name`; its files are named after `stem` (default: the name)."""
    model = build(name, args.seed)
    suffix = "-qdq" if qdq else ""
    if qdq:
        torch.manual_seed(args.seed + 2)  # the calibration batch: not the evaluated input
        model = make_qdq(model, torch.randn(args.calib_batch, 3, 224, 224))
    x = model_input(name, args.batch, args.seed + 1)
    stem = stem or name
    path = os.path.join(args.out, stem + suffix + ".onnx")
    export(model, x, path, args.opset, args.dynamic_batch, io_names(name))
    x.numpy().astype("<i8" if is_text_model(name) else "<f4").tofile(
        os.path.join(args.out, stem + suffix + "-input.bin"))
    # QDQ: in float64, so that the reference's own conv rounding does not move values across a
    # rounding boundary of the next quantization; the float32 one is kept beside it to compare.
    if qdq:
        y32 = reference(model, x)
        y32.numpy().astype("<f4").tofile(os.path.join(args.out, stem + suffix + "-torch-fp32.bin"))
    y = reference(model, x, torch.float64 if qdq else torch.float32)
    y.numpy().astype("<f4").tofile(os.path.join(args.out, stem + suffix + "-torch.bin"))
    if is_text_model(name) and torch.cuda.is_available():  # float16 on a CPU is not PyTorch's
        y16 = reference(model, x, torch.float16)
        y16.numpy().astype("<f4").tofile(os.path.join(args.out, stem + "-torch-fp16.bin"))
    print(f"{stem}{suffix}: {path} ({os.path.getsize(path) / 1e6:.1f} MB), input {list(x.shape)}, "
          f"output {list(y.shape)}, ops {op_counts(path)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--models", default="vgg16,resnet50",
                   help="torchvision model names, or " + ", ".join(TEXT_MODELS))
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--dynamic-batch", action="store_true", help="export the batch as dynamic")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the input")
    p.add_argument("--qdq", action="store_true",
                   help="export VGG-16 with int8 fake quantization (QDQ) instead; see above")
    p.add_argument("--calib-batch", type=int, default=32,
                   help="--qdq: images of the calibration batch (default 32)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.qdq:
        if args.opset < 13:
            p.error("--qdq needs --opset 13 or later (per-channel DequantizeLinear)")
        export_one("vgg16", args, qdq=True)
        return
    for name in args.models.split(","):
        export_one(name, args, qdq=False)


if __name__ == "__main__":
    main()

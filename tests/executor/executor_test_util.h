// File: tests/executor/executor_test_util.h
// The small network of the executor tests (CPU lowering tests and GPU runs share it):
//   input [2, 4, 16, 16] -> conv3x3 8ch (pad 1) + bias + relu -> max pool 2x2
//   -> conv3x3 8ch (pad 1) + bias + relu -> flatten -> dense 10 + bias -> "logits"
// Both convs have channel counts divisible by 4, so at int8 both run int8 (the first one behind a
// quantize step of the float input).
//
// ResidualNet, a small ResNet with every op ResNet-50 adds (ops in node order):
//   input [N, 4, 16, 16] -> stem conv3x3 8ch + bias + relu -> max pool 3x3/2 pad 1 -> "pool.out"
//   b1: conv1x1 8 + bias + relu -> conv3x3 8 + bias -> add(pool.out) -> relu       [N, 8, 8, 8]
//   b2: conv3x3/2 16 + bias + relu -> conv1x1 16 + bias; down: conv1x1/2 16 + bias (of b1's
//       output) -> add -> relu                                                       [N, 16, 4, 4]
//   avg pool 3x3/1 pad 1 (padding excluded) -> global avg pool -> flatten -> clip [0, clip_max]
//   -> dense 10 + bias -> "logits"
// Every conv has channel counts divisible by 4 (all int8 at NumericMode::kInt8Dp4a).
//
// MobileNetNet (below, before GeluNet): MobileNet / EfficientNet activations after convs and
// dense layers.
//
// TensorOpsNet, the general tensor ops as the zoo's models chain them (an SE gate, then a
// one-head attention over the pixels with a class token):
//   input [N, 8, 6, 6] -> conv3x3 16 + bias -> "conv.out"; reduce_mean(H, W) -> hard_sigmoid
//   -> mul(conv.out) -> hard_swish -> reshape [N, 16, 36] -> transpose [N, 36, 16] -> layer_norm
//   -> concat(class token weight [N, 1, 16], axis 1) = "tokens" [N, 37, 16];
//   q = tokens + weight [16]; s = matmul(q, transpose(tokens)) / weight [1] -> softmax(axis 2)
//   -> matmul(tokens) -> gelu -> slice token 0 -> reshape [N, 16] -> dense 10 + bias -> "logits"
// (its two matmuls are rank 3: batch_matmul.cuda steps at fp32, tensor_ops.cu's at fp16).
//
// BatchMatmulNet: two rank-3 matmuls by weights, one broadcasting a batch of 1.
//
// PatchifyNet, ViT's patch embedding and head (below): a patchify conv (kernel == stride, no
// padding) of the RGB input, then the tokens as torchvision's ViT makes them.
#ifndef TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_
#define TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "executor/step_program.h"
#include "graph/graph.h"
#include "graph/weights.h"
#include "gtest/gtest.h"

namespace tunejit::testing {

inline Graph SmallNet(int64_t batch = 2, int64_t ci = 4) {
  Graph g;
  int x = g.AddTensor({"input", {batch, ci, 16, 16}, DType::kF32, TensorKind::kInput});
  NodeAttrs conv{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  NodeAttrs pool{.stride_h = 2, .stride_w = 2, .pool_h = 2, .pool_w = 2};
  int64_t channels = ci;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string n = "conv" + std::to_string(layer);
    int w = g.AddTensor({n + ".weight", {8, channels, 3, 3}, DType::kF32, TensorKind::kWeight});
    int b = g.AddTensor({n + ".bias", {8}, DType::kF32, TensorKind::kWeight});
    x = *g.AddNode(n, OpKind::kConv2d, {x, w}, conv, n + ".out");
    x = *g.AddNode(n + ".bias_add", OpKind::kBiasAdd, {x, b}, {}, n + ".bias_out");
    x = *g.AddNode(n + ".relu", OpKind::kRelu, {x}, {}, n + ".relu_out");
    if (layer == 0) x = *g.AddNode("pool0", OpKind::kMaxPool2d, {x}, pool, "pool0.out");
    channels = 8;
  }
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  int w = g.AddTensor({"fc.weight", {10, 8 * 8 * 8}, DType::kF32, TensorKind::kWeight});
  int b = g.AddTensor({"fc.bias", {10}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc", OpKind::kDense, {x, w}, {}, "fc.out");
  x = *g.AddNode("fc.bias_add", OpKind::kBiasAdd, {x, b}, {}, "logits", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

inline int ConvBias(Graph* g, const std::string& n, int x, int64_t ci, int64_t co, int k,
                    int stride, bool relu) {
  const int pad = k / 2;
  NodeAttrs conv{.stride_h = stride,
                 .stride_w = stride,
                 .pad_top = pad,
                 .pad_left = pad,
                 .pad_bottom = pad,
                 .pad_right = pad};
  int w = g->AddTensor({n + ".weight", {co, ci, k, k}, DType::kF32, TensorKind::kWeight});
  int b = g->AddTensor({n + ".bias", {co}, DType::kF32, TensorKind::kWeight});
  x = *g->AddNode(n, OpKind::kConv2d, {x, w}, conv, n + ".out");
  x = *g->AddNode(n + ".bias_add", OpKind::kBiasAdd, {x, b}, {}, n + ".bias_out");
  if (relu) x = *g->AddNode(n + ".relu", OpKind::kRelu, {x}, {}, n + ".relu_out");
  return x;
}

inline Graph ResidualNet(int64_t batch = 2, float clip_max = 1.0f) {
  Graph g;
  int x = g.AddTensor({"input", {batch, 4, 16, 16}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "stem", x, 4, 8, 3, 1, true);
  NodeAttrs pool{.stride_h = 2,
                 .stride_w = 2,
                 .pad_top = 1,
                 .pad_left = 1,
                 .pad_bottom = 1,
                 .pad_right = 1,
                 .pool_h = 3,
                 .pool_w = 3};
  const int pooled = *g.AddNode("pool", OpKind::kMaxPool2d, {x}, pool, "pool.out");
  x = ConvBias(&g, "b1.conv1", pooled, 8, 8, 1, 1, true);
  x = ConvBias(&g, "b1.conv2", x, 8, 8, 3, 1, false);
  x = *g.AddNode("b1.add", OpKind::kAdd, {x, pooled}, {}, "b1.add_out");
  const int b1 = *g.AddNode("b1.relu", OpKind::kRelu, {x}, {}, "b1.relu_out");
  x = ConvBias(&g, "b2.conv1", b1, 8, 16, 3, 2, true);
  x = ConvBias(&g, "b2.conv2", x, 16, 16, 1, 1, false);
  const int down = ConvBias(&g, "b2.down", b1, 8, 16, 1, 2, false);
  x = *g.AddNode("b2.add", OpKind::kAdd, {x, down}, {}, "b2.add_out");
  x = *g.AddNode("b2.relu", OpKind::kRelu, {x}, {}, "b2.relu_out");
  NodeAttrs avg = pool;
  avg.stride_h = avg.stride_w = 1;
  x = *g.AddNode("avgpool", OpKind::kAvgPool2d, {x}, avg, "avgpool.out");
  x = *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {x}, {}, "gap.out");
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  x = *g.AddNode("clip", OpKind::kClip, {x}, {.clip_min = 0.0f, .clip_max = clip_max}, "clip.out");
  int w = g.AddTensor({"fc.weight", {10, 16}, DType::kF32, TensorKind::kWeight});
  int b = g.AddTensor({"fc.bias", {10}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc", OpKind::kDense, {x, w}, {}, "fc.out");
  x = *g.AddNode("fc.bias_add", OpKind::kBiasAdd, {x, b}, {}, "logits", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// WideResidualNet: ResNet's three kinds of skip (from a conv's output, a stride-2 block with a
// downsample conv, an identity block after another block's add) wide enough for the int8
// tensor-core template (16 bytes of int8 channels):
//   input [N, 16, 8, 8] -> stem conv3x3 32 + bias + relu -> "stem.relu_out"
//   b1: conv1x1 32 + bias + relu -> conv3x3 32 + bias -> add(stem) -> relu       [N, 32, 8, 8]
//   b2: conv3x3/2 64 + bias + relu -> conv1x1 64 + bias; down: conv1x1/2 64 + bias (of b1's
//       output) -> add -> relu                                                   [N, 64, 4, 4]
//   b3: conv1x1 64 + bias + relu -> conv3x3 64 + bias -> add(b2's output) -> relu
//   global avg pool -> flatten -> dense 10 + bias -> "logits"
// Every add's output but b3's is read by int8 convs and an add only; b3's by the float pool.
inline Graph WideResidualNet(int64_t batch = 2) {
  Graph g;
  int x = g.AddTensor({"input", {batch, 16, 8, 8}, DType::kF32, TensorKind::kInput});
  const int stem = ConvBias(&g, "stem", x, 16, 32, 3, 1, true);
  x = ConvBias(&g, "b1.conv1", stem, 32, 32, 1, 1, true);
  x = ConvBias(&g, "b1.conv2", x, 32, 32, 3, 1, false);
  x = *g.AddNode("b1.add", OpKind::kAdd, {x, stem}, {}, "b1.add_out");
  const int b1 = *g.AddNode("b1.relu", OpKind::kRelu, {x}, {}, "b1.relu_out");
  x = ConvBias(&g, "b2.conv1", b1, 32, 64, 3, 2, true);
  x = ConvBias(&g, "b2.conv2", x, 64, 64, 1, 1, false);
  const int down = ConvBias(&g, "b2.down", b1, 32, 64, 1, 2, false);
  x = *g.AddNode("b2.add", OpKind::kAdd, {x, down}, {}, "b2.add_out");
  const int b2 = *g.AddNode("b2.relu", OpKind::kRelu, {x}, {}, "b2.relu_out");
  x = ConvBias(&g, "b3.conv1", b2, 64, 64, 1, 1, true);
  x = ConvBias(&g, "b3.conv2", x, 64, 64, 3, 1, false);
  x = *g.AddNode("b3.add", OpKind::kAdd, {x, b2}, {}, "b3.add_out");
  x = *g.AddNode("b3.relu", OpKind::kRelu, {x}, {}, "b3.relu_out");
  x = *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {x}, {}, "gap.out");
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  int w = g.AddTensor({"fc.weight", {10, 64}, DType::kF32, TensorKind::kWeight});
  int b = g.AddTensor({"fc.bias", {10}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc", OpKind::kDense, {x, w}, {}, "fc.out");
  x = *g.AddNode("fc.bias_add", OpKind::kBiasAdd, {x, b}, {}, "logits", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// N(0, 1) values (std::normal_distribution: tests only need them random, not portable).
inline std::vector<float> NormalFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The step kinds of a lowered program, in order ("conv2d", "add", ...).
inline std::vector<std::string> Kinds(const StepProgram& p) {
  std::vector<std::string> k;
  for (const Step& s : p.steps) k.push_back(std::string(StepKindName(s.kind)));
  return k;
}

// The step called `name` (a test failure, and the first step, when there is none).
inline const Step& StepNamed(const StepProgram& p, const std::string& name) {
  for (const Step& s : p.steps) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no step " << name;
  return p.steps.front();
}

inline int TensorOp(Graph* g, const std::string& name, OpKind op, std::vector<int> inputs,
                    NodeAttrs attrs = {}) {
  absl::StatusOr<int> out = g->AddNode(name, op, std::move(inputs), attrs, name + ".out");
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : 0;
}

inline NodeAttrs Attrs(UnaryFn fn) {
  NodeAttrs a;
  a.unary = fn;
  return a;
}
inline NodeAttrs Attrs(BinaryFn fn) {
  NodeAttrs a;
  a.binary = fn;
  return a;
}

// input [2, 5, 8] by a weight [1, 8, 6] (its batch of 1 broadcast), then by a weight [2, 6, 3]:
// two rank-3 matmuls (batch_matmul.cuda at fp32) -> "logits" [2, 5, 3].
inline Graph BatchMatmulNet() {
  Graph g;
  const int x = g.AddTensor({"input", {2, 5, 8}, DType::kF32, TensorKind::kInput});
  const int w1 = g.AddTensor({"w1", {1, 8, 6}, DType::kF32, TensorKind::kWeight});
  const int w2 = g.AddTensor({"w2", {2, 6, 3}, DType::kF32, TensorKind::kWeight});
  const int mm = TensorOp(&g, "mm1", OpKind::kMatMul, {x, w1});
  EXPECT_TRUE(g.AddNode("mm2", OpKind::kMatMul, {mm, w2}, {}, "logits", TensorKind::kOutput).ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

inline Graph TensorOpsNet(int64_t batch = 2) {
  Graph g;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    return g.AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
  };
  int x = g.AddTensor({"input", {batch, 8, 6, 6}, DType::kF32, TensorKind::kInput});
  const int conv = ConvBias(&g, "conv", x, 8, 16, 3, 1, false);
  NodeAttrs mean;
  mean.axes = {2, 3};
  x = TensorOp(&g, "se.mean", OpKind::kReduceMean, {conv}, mean);
  x = TensorOp(&g, "se.gate", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSigmoid));
  x = TensorOp(&g, "se.mul", OpKind::kBinary, {conv, x}, Attrs(BinaryFn::kMul));
  x = TensorOp(&g, "act", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  NodeAttrs reshape;
  reshape.shape = {batch, 16, 36};
  x = TensorOp(&g, "tokens.reshape", OpKind::kReshape, {x}, reshape);
  NodeAttrs swap;
  swap.perm = {0, 2, 1};
  x = TensorOp(&g, "tokens.transpose", OpKind::kTranspose, {x}, swap);
  NodeAttrs norm;
  norm.axis = 2;
  x = TensorOp(&g, "norm", OpKind::kLayerNorm,
               {x, weight("norm.weight", {16}), weight("norm.bias", {16})}, norm);
  NodeAttrs tokens_axis;
  tokens_axis.axis = 1;
  const int tokens = TensorOp(&g, "tokens", OpKind::kConcat,
                              {weight("class_token", {batch, 1, 16}), x}, tokens_axis);
  const int q =
      TensorOp(&g, "q", OpKind::kBinary, {tokens, weight("q.bias", {16})}, Attrs(BinaryFn::kAdd));
  const int kt = TensorOp(&g, "k.transpose", OpKind::kTranspose, {tokens}, swap);
  x = TensorOp(&g, "scores", OpKind::kMatMul, {q, kt});
  x = TensorOp(&g, "scores.scale", OpKind::kBinary, {x, weight("scale", {1})},
               Attrs(BinaryFn::kDiv));
  NodeAttrs last;
  last.axis = 2;
  x = TensorOp(&g, "probs", OpKind::kSoftmax, {x}, last);
  x = TensorOp(&g, "attend", OpKind::kMatMul, {x, tokens});
  x = TensorOp(&g, "gelu", OpKind::kUnary, {x}, Attrs(UnaryFn::kGelu));
  NodeAttrs first;
  first.axis = 1;
  first.start = 0;
  first.end = 1;
  x = TensorOp(&g, "class", OpKind::kSlice, {x}, first);
  NodeAttrs flat;
  flat.shape = {batch, 16};
  x = TensorOp(&g, "class.reshape", OpKind::kReshape, {x}, flat);
  x = *g.AddNode("fc", OpKind::kDense, {x, weight("fc.weight", {10, 16})}, {}, "fc.out");
  x = *g.AddNode("fc.bias_add", OpKind::kBiasAdd, {x, weight("fc.bias", {10})}, {}, "logits",
                 TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// LayerNorm2dNet: ConvNeXt's channel layer norm between two 32-channel convs: conv ->
// transpose (0, 2, 3, 1) -> layer_norm over the channels -> transpose (0, 3, 1, 2) -> a 3x3
// conv and a 1x1 conv reading it -> their sum, the output. At fp16 the conv writes NHWC, so
// both transposes only rename the storage order.
inline Graph LayerNorm2dNet(int64_t batch = 2) {
  Graph g;
  int x = g.AddTensor({"input", {batch, 32, 6, 7}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "a", x, 32, 32, 3, 1, false);
  NodeAttrs to_nhwc;
  to_nhwc.perm = {0, 2, 3, 1};
  x = TensorOp(&g, "to_nhwc", OpKind::kTranspose, {x}, to_nhwc);
  NodeAttrs channels;
  channels.axis = 3;
  x = TensorOp(&g, "norm", OpKind::kLayerNorm,
               {x, g.AddTensor({"norm.weight", {32}, DType::kF32, TensorKind::kWeight}),
                g.AddTensor({"norm.bias", {32}, DType::kF32, TensorKind::kWeight})},
               channels);
  NodeAttrs to_nchw;
  to_nchw.perm = {0, 3, 1, 2};
  x = TensorOp(&g, "to_nchw", OpKind::kTranspose, {x}, to_nchw);
  const int b = ConvBias(&g, "b", x, 32, 32, 3, 1, false);
  const int c = ConvBias(&g, "c", x, 32, 32, 1, 1, false);
  EXPECT_TRUE(g.AddNode("sum", OpKind::kAdd, {b, c}, {}, "logits", TensorKind::kOutput).ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// NhwcChainNet: two 32-channel convs (tensor-core sized) joined by a residual add (+relu), then
// hard_swish, a ReLU6 clip, SiLU as PyTorch exports it (sigmoid, mul), an SE-style gate, a
// standalone per-channel bias_add (global average pool,
// broadcast multiply) and a third conv -> output. At fp16 everything between the first and last
// conv can stay fp16 NHWC.
inline Graph NhwcChainNet(int64_t batch = 2) {
  Graph g;
  int x = g.AddTensor({"input", {batch, 32, 8, 8}, DType::kF32, TensorKind::kInput});
  const int a = ConvBias(&g, "a", x, 32, 32, 3, 1, true);
  const int b = ConvBias(&g, "b", a, 32, 32, 3, 1, false);
  x = *g.AddNode("add", OpKind::kAdd, {a, b}, {}, "add.out");
  x = TensorOp(&g, "act", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  NodeAttrs relu6;
  relu6.clip_min = 0;
  relu6.clip_max = 6;
  x = *g.AddNode("relu6", OpKind::kClip, {x}, relu6, "relu6.out");
  const int sigmoid = TensorOp(&g, "silu.sigmoid", OpKind::kUnary, {x}, Attrs(UnaryFn::kSigmoid));
  x = TensorOp(&g, "silu.mul", OpKind::kBinary, {sigmoid, x}, Attrs(BinaryFn::kMul));
  const int pooled = *g.AddNode("pool", OpKind::kGlobalAvgPool2d, {x}, {}, "pool.out");
  x = TensorOp(&g, "gate", OpKind::kBinary, {x, pooled}, Attrs(BinaryFn::kMul));
  const int shift = g.AddTensor({"shift", {32}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("shift.add", OpKind::kBiasAdd, {x, shift}, {}, "shift.out");
  x = ConvBias(&g, "c", x, 32, 32, 3, 1, false);
  g.mutable_tensor(x).kind = TensorKind::kOutput;
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// MobileNetNet: the activations of MobileNetV2 / V3 and EfficientNet after the layers that fuse
// them at fp16 (executor/step_program.cc FuseActivation):
//   input [N, 3, 16, 16] -> stem conv3x3/2 16 + bias -> hard_swish
//   -> expand conv1x1 64 + bias -> clip [0, 6] (ReLU6)
//   -> depthwise conv3x3 64 + bias -> clip [0, 6]
//   -> project conv1x1 32 + bias -> head conv1x1 64 + bias -> sigmoid, mul (SiLU as ONNX has it)
//   -> global avg pool -> flatten -> dense 48 + bias -> hard_swish -> dense 10 + bias -> "logits"
inline Graph MobileNetNet(int64_t batch = 2) {
  Graph g;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    return g.AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
  };
  NodeAttrs relu6;
  relu6.clip_min = 0;
  relu6.clip_max = 6;
  int x = g.AddTensor({"input", {batch, 3, 16, 16}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "stem", x, 3, 16, 3, 2, false);
  x = TensorOp(&g, "stem.hswish", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  x = ConvBias(&g, "expand", x, 16, 64, 1, 1, false);
  x = *g.AddNode("expand.relu6", OpKind::kClip, {x}, relu6, "expand.relu6.out");
  NodeAttrs depthwise{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .groups = 64};
  x = *g.AddNode("dw", OpKind::kConv2d, {x, weight("dw.weight", {64, 1, 3, 3})}, depthwise,
                 "dw.out");
  x = *g.AddNode("dw.bias_add", OpKind::kBiasAdd, {x, weight("dw.bias", {64})}, {}, "dw.bias_out");
  x = *g.AddNode("dw.relu6", OpKind::kClip, {x}, relu6, "dw.relu6.out");
  x = ConvBias(&g, "project", x, 64, 32, 1, 1, false);
  x = ConvBias(&g, "head", x, 32, 64, 1, 1, false);
  const int sigmoid = TensorOp(&g, "head.sigmoid", OpKind::kUnary, {x}, Attrs(UnaryFn::kSigmoid));
  x = TensorOp(&g, "head.silu", OpKind::kBinary, {x, sigmoid}, Attrs(BinaryFn::kMul));
  x = *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {x}, {}, "gap.out");
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  x = *g.AddNode("fc1", OpKind::kDense, {x, weight("fc1.weight", {48, 64})}, {}, "fc1.out");
  x = *g.AddNode("fc1.bias_add", OpKind::kBiasAdd, {x, weight("fc1.bias", {48})}, {},
                 "fc1.bias_out");
  x = TensorOp(&g, "fc1.hswish", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  x = *g.AddNode("fc2", OpKind::kDense, {x, weight("fc2.weight", {10, 48})}, {}, "fc2.out");
  x = *g.AddNode("fc2.bias_add", OpKind::kBiasAdd, {x, weight("fc2.bias", {10})}, {}, "logits",
                 TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// PatchifyNet (ViT's front and head around its patch embedding):
//   input [N, 3, H, W] -> conv PxP stride P (`stride` and `pad` when given) to C channels + bias
//   -> reshape [N, C, T] -> transpose [N, T, C] -> concat(class token weight [N, 1, C], axis 1)
//   -> add(position weight [1, T + 1, C]) -> layer_norm -> slice token 0 -> reshape [N, C]
//   -> dense 10 + bias -> "logits"
// With the default stride and no padding the conv is a patchify one; `conv_is_output` makes its
// biased value a graph output too (read back in float32 NCHW).
inline Graph PatchifyNet(int64_t batch = 2, int64_t h = 32, int64_t w = 32, int patch = 16,
                         int64_t channels = 64, int stride = 0, int pad = 0,
                         bool conv_is_output = false) {
  Graph g;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    return g.AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
  };
  const int s = stride > 0 ? stride : patch;
  const int64_t tokens = ((h + 2 * pad - patch) / s + 1) * ((w + 2 * pad - patch) / s + 1);
  int x = g.AddTensor({"input", {batch, 3, h, w}, DType::kF32, TensorKind::kInput});
  NodeAttrs conv{.stride_h = s,
                 .stride_w = s,
                 .pad_top = pad,
                 .pad_left = pad,
                 .pad_bottom = pad,
                 .pad_right = pad};
  x = *g.AddNode("conv_proj", OpKind::kConv2d,
                 {x, weight("conv_proj.weight", {channels, 3, patch, patch})}, conv,
                 "conv_proj.out");
  x = *g.AddNode("conv_proj.bias_add", OpKind::kBiasAdd, {x, weight("conv_proj.bias", {channels})},
                 {}, "conv_proj.bias_out",
                 conv_is_output ? TensorKind::kOutput : TensorKind::kActivation);
  NodeAttrs reshape;
  reshape.shape = {batch, channels, tokens};
  x = TensorOp(&g, "tokens.reshape", OpKind::kReshape, {x}, reshape);
  NodeAttrs swap;
  swap.perm = {0, 2, 1};
  x = TensorOp(&g, "tokens.transpose", OpKind::kTranspose, {x}, swap);
  NodeAttrs axis1;
  axis1.axis = 1;
  x = TensorOp(&g, "tokens", OpKind::kConcat, {weight("class_token", {batch, 1, channels}), x},
               axis1);
  x = TensorOp(&g, "tokens.position", OpKind::kBinary,
               {x, weight("pos_embedding", {1, tokens + 1, channels})}, Attrs(BinaryFn::kAdd));
  NodeAttrs norm;
  norm.axis = 2;
  x = TensorOp(&g, "norm", OpKind::kLayerNorm,
               {x, weight("norm.weight", {channels}), weight("norm.bias", {channels})}, norm);
  NodeAttrs first;
  first.axis = 1;
  first.start = 0;
  first.end = 1;
  x = TensorOp(&g, "class", OpKind::kSlice, {x}, first);
  NodeAttrs flat;
  flat.shape = {batch, channels};
  x = TensorOp(&g, "class.reshape", OpKind::kReshape, {x}, flat);
  x = *g.AddNode("head", OpKind::kDense, {x, weight("head.weight", {10, channels})}, {},
                 "head.out");
  x = *g.AddNode("head.bias_add", OpKind::kBiasAdd, {x, weight("head.bias", {10})}, {}, "logits",
                 TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// GeluNet: a 32-channel conv, PyTorch's exact GELU as its exporter writes it (x / sqrt(2), erf,
// + 1 as the importer's bias_add of ones, * x, * 0.5), then another conv -> output. Its
// constants need their values: GeluNetWeights.
inline Graph GeluNet(int64_t batch = 2) {
  Graph g;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    return g.AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
  };
  int x = g.AddTensor({"input", {batch, 32, 8, 8}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "a", x, 32, 32, 3, 1, false);
  int y = TensorOp(&g, "gelu.div", OpKind::kBinary, {x, weight("gelu.sqrt2", {1})},
                   Attrs(BinaryFn::kDiv));
  y = TensorOp(&g, "gelu.erf", OpKind::kUnary, {y}, Attrs(UnaryFn::kErf));
  y = *g.AddNode("gelu.add", OpKind::kBiasAdd, {y, weight("gelu.one", {32})}, {}, "gelu.add.out");
  y = TensorOp(&g, "gelu.mul", OpKind::kBinary, {x, y}, Attrs(BinaryFn::kMul));
  y = TensorOp(&g, "gelu.half", OpKind::kBinary, {y, weight("gelu.half", {1})},
               Attrs(BinaryFn::kMul));
  y = ConvBias(&g, "b", y, 32, 32, 3, 1, false);
  g.mutable_tensor(y).kind = TensorKind::kOutput;
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// GeluMlpNet: ConvNeXt's MLP on [N, H, W, C] rows as PyTorch's exporter writes a Linear on a
// rank-4 tensor and the tunejit importer takes it: reshape to [rows, 32] -> dense + bias_add ->
// reshape back to [N, 4, 4, 64] -> the five-op GELU -> reshape to rows -> dense + bias_add ->
// output [rows, 32]. GeluNetWeights sets its constants.
inline Graph GeluMlpNet(int64_t batch = 2) {
  Graph g;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    return g.AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
  };
  auto reshape = [&](const std::string& name, int x, std::vector<int64_t> shape) {
    NodeAttrs a;
    a.shape = std::move(shape);
    return TensorOp(&g, name, OpKind::kReshape, {x}, a);
  };
  int x = g.AddTensor({"input", {batch, 4, 4, 32}, DType::kF32, TensorKind::kInput});
  x = reshape("fc1.rows", x, {batch * 16, 32});
  x = *g.AddNode("fc1", OpKind::kDense, {x, weight("fc1.weight", {64, 32})}, {}, "fc1.out");
  x = *g.AddNode("fc1.bias_add", OpKind::kBiasAdd, {x, weight("fc1.bias", {64})}, {},
                 "fc1.bias_out");
  x = reshape("fc1.back", x, {batch, 4, 4, 64});
  int y = TensorOp(&g, "gelu.div", OpKind::kBinary, {x, weight("gelu.sqrt2", {1})},
                   Attrs(BinaryFn::kDiv));
  y = TensorOp(&g, "gelu.erf", OpKind::kUnary, {y}, Attrs(UnaryFn::kErf));
  y = TensorOp(&g, "gelu.add", OpKind::kBinary, {y, weight("gelu.one", {1})},
               Attrs(BinaryFn::kAdd));
  y = TensorOp(&g, "gelu.mul", OpKind::kBinary, {x, y}, Attrs(BinaryFn::kMul));
  y = TensorOp(&g, "gelu.half", OpKind::kBinary, {y, weight("gelu.half", {1})},
               Attrs(BinaryFn::kMul));
  y = reshape("fc2.rows", y, {batch * 16, 64});
  y = *g.AddNode("fc2", OpKind::kDense, {y, weight("fc2.weight", {32, 64})}, {}, "fc2.out");
  EXPECT_TRUE(g.AddNode("fc2.bias_add", OpKind::kBiasAdd, {y, weight("fc2.bias", {32})}, {},
                        "logits", TensorKind::kOutput)
                  .ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// Random weights with the named constants set: every element of a weight tensor for which
// `constant(name)` is nonzero holds that value; the others keep their random values.
inline WeightSet RandomWeightsWithConstants(
    const Graph& g, uint64_t seed, const std::function<float(const std::string&)>& constant,
    const std::string& label) {
  const WeightSet random = RandomWeights(g, seed);
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    const absl::Span<const uint8_t> b = random.Get(id);
    bytes[id].assign(b.begin(), b.end());
    const float value = constant(g.tensor(id).name);
    if (value == 0.0f) continue;
    for (size_t k = 0; k < bytes[id].size(); k += sizeof(float)) {
      std::memcpy(bytes[id].data() + k, &value, sizeof(float));
    }
  }
  absl::StatusOr<WeightSet> w = WeightsFromImport(g, std::move(bytes), label);
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

// Random weights for GeluNet with its GELU constants set (half != 0.5 makes it another function,
// which lowering must not fuse).
inline WeightSet GeluNetWeights(const Graph& g, uint64_t seed, float half = 0.5f) {
  return RandomWeightsWithConstants(
      g, seed,
      [half](const std::string& name) {
        return name == "gelu.sqrt2"  ? std::sqrt(2.0f)
               : name == "gelu.one"  ? 1.0f
               : name == "gelu.half" ? half
                                     : 0.0f;
      },
      "gelu net");
}

// Pieces of the transformer test graphs: a float32 weight, a reshape, a transpose, and a Linear
// on rows [R, in] (dense by "name.weight" [out, in], bias_add of "name.bias") -> "name.bias_out".
inline int AddWeight(Graph* g, const std::string& name, std::vector<int64_t> shape) {
  return g->AddTensor({name, std::move(shape), DType::kF32, TensorKind::kWeight});
}
inline int AddReshape(Graph* g, const std::string& name, int x, std::vector<int64_t> shape) {
  NodeAttrs a;
  a.shape = std::move(shape);
  return TensorOp(g, name, OpKind::kReshape, {x}, a);
}
inline int AddTranspose(Graph* g, const std::string& name, int x, std::vector<int64_t> perm) {
  NodeAttrs a;
  a.perm = std::move(perm);
  return TensorOp(g, name, OpKind::kTranspose, {x}, a);
}
inline int AddLinear(Graph* g, const std::string& name, int rows, int64_t in, int64_t out) {
  const int y = *g->AddNode(name, OpKind::kDense, {rows, AddWeight(g, name + ".weight", {out, in})},
                            {}, name + ".out");
  return *g->AddNode(name + ".bias_add", OpKind::kBiasAdd, {y, AddWeight(g, name + ".bias", {out})},
                     {}, name + ".bias_out");
}

// GptMlpNet: GPT-2's MLP on tokens [N, S, 32]: rows -> dense 128 + bias_add -> reshape back to
// [N, S, 128] -> gelu_new as transformers exports it (half = x * 0.5, x ^ 3 * 0.044715, x + that,
// * sqrt(2 / pi), tanh, + 1, half * that) -> rows -> dense 32 + bias_add -> the output
// "proj.bias_out" [N * S, 32]. GptMlpNetWeights sets its constants.
inline Graph GptMlpNet(int64_t batch = 2, int64_t seq = 16) {
  Graph g;
  const int in = g.AddTensor({"input", {batch, seq, 32}, DType::kF32, TensorKind::kInput});
  const int x = AddReshape(
      &g, "fc.back", AddLinear(&g, "fc", AddReshape(&g, "fc.rows", in, {batch * seq, 32}), 32, 128),
      {batch, seq, 128});
  auto times = [&](const std::string& name, int t, BinaryFn fn) {
    return TensorOp(&g, name, OpKind::kBinary, {t, AddWeight(&g, name + ".c", {})}, Attrs(fn));
  };
  const int half = times("act.half", x, BinaryFn::kMul);
  int y = times("act.scaled", times("act.cube", x, BinaryFn::kPow), BinaryFn::kMul);
  y = *g.AddNode("act.inner", OpKind::kAdd, {x, y}, {}, "act.inner.out");
  y = TensorOp(&g, "act.tanh", OpKind::kUnary, {times("act.u", y, BinaryFn::kMul)},
               Attrs(UnaryFn::kTanh));
  y = TensorOp(&g, "act.out", OpKind::kBinary, {half, times("act.one", y, BinaryFn::kAdd)},
               Attrs(BinaryFn::kMul));
  y = AddLinear(&g, "proj", AddReshape(&g, "proj.rows", y, {batch * seq, 128}), 128, 32);
  g.mutable_tensor(y).kind = TensorKind::kOutput;
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// RmsNormNet: Llama's RMS norm on tokens "input" [N, S, 32] as transformers exports it (x ^ 2,
// mean over the last axis, + eps, sqrt, 1 / that, x * that, * a scale [32]), then the residual
// add of x and the norm (x has a third reader) -> the output "sum". RmsNormNetWeights sets its
// constants; `mean_axis` 1 makes it another function.
inline Graph RmsNormNet(int64_t batch = 2, int64_t seq = 8, int64_t mean_axis = 2) {
  Graph g;
  const int x = g.AddTensor({"input", {batch, seq, 32}, DType::kF32, TensorKind::kInput});
  int y = TensorOp(&g, "norm.pow", OpKind::kBinary, {x, AddWeight(&g, "norm.two", {})},
                   Attrs(BinaryFn::kPow));
  NodeAttrs mean;
  mean.axes = {mean_axis};
  y = TensorOp(&g, "norm.mean", OpKind::kReduceMean, {y}, mean);
  // + eps as a weight of one value per row, as the importer materializes a scalar's bias.
  y = TensorOp(&g, "norm.eps", OpKind::kBinary, {y, AddWeight(&g, "norm.eps.c", {seq, 1})},
               Attrs(BinaryFn::kAdd));
  y = TensorOp(&g, "norm.sqrt", OpKind::kUnary, {y}, Attrs(UnaryFn::kSqrt));
  y = TensorOp(&g, "norm.inv", OpKind::kBinary, {AddWeight(&g, "norm.one", {}), y},
               Attrs(BinaryFn::kDiv));
  y = TensorOp(&g, "norm.x", OpKind::kBinary, {x, y}, Attrs(BinaryFn::kMul));
  y = TensorOp(&g, "norm.scale", OpKind::kBinary, {AddWeight(&g, "norm.weight", {32}), y},
               Attrs(BinaryFn::kMul));
  EXPECT_TRUE(g.AddNode("sum", OpKind::kAdd, {x, y}, {}, "sum", TensorKind::kOutput).ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// RopeNet: Llama's rotary embedding of q [N, H, S, D] = "input" [2, 2, 8, 16] as transformers
// applies it: x * cos + Concat(-x[..., 8:], x[..., :8]) * sin, the tables [1, 1, 8, 16] random
// weights -> the output "rot"; `lo_start` 1 makes the second slice another one.
inline Graph RopeNet(int64_t lo_start = 0) {
  Graph g;
  const int x = g.AddTensor({"input", {2, 2, 8, 16}, DType::kF32, TensorKind::kInput});
  auto slice = [&](const std::string& name, int64_t start, int64_t end) {
    NodeAttrs a;
    a.axis = 3;
    a.start = start;
    a.end = end;
    return TensorOp(&g, name, OpKind::kSlice, {x}, a);
  };
  const int xc = TensorOp(&g, "rope.cos", OpKind::kBinary, {x, AddWeight(&g, "cos", {1, 1, 8, 16})},
                          Attrs(BinaryFn::kMul));
  const int neg =
      TensorOp(&g, "rope.neg", OpKind::kUnary, {slice("rope.hi", 8, 16)}, Attrs(UnaryFn::kNeg));
  NodeAttrs cat;
  cat.axis = 3;
  const int rot = TensorOp(&g, "rope.cat", OpKind::kConcat,
                           {neg, slice("rope.lo", lo_start, lo_start + 8)}, cat);
  const int rs = TensorOp(&g, "rope.sin", OpKind::kBinary,
                          {rot, AddWeight(&g, "sin", {1, 1, 8, 16})}, Attrs(BinaryFn::kMul));
  EXPECT_TRUE(g.AddNode("rope.add", OpKind::kAdd, {xc, rs}, {}, "rot", TensorKind::kOutput).ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

inline WeightSet RmsNormNetWeights(const Graph& g, uint64_t seed, float eps = 1e-6f) {
  return RandomWeightsWithConstants(
      g, seed,
      [eps](const std::string& name) {
        return name == "norm.two"     ? 2.0f
               : name == "norm.eps.c" ? eps
               : name == "norm.one"   ? 1.0f
                                      : 0.0f;
      },
      "rms norm net");
}

// Random weights for GptMlpNet with gelu_new's constants (coef != 0.044715 makes it another
// function, which lowering must not fuse).
inline WeightSet GptMlpNetWeights(const Graph& g, uint64_t seed, float coef = 0.044715f) {
  return RandomWeightsWithConstants(
      g, seed,
      [coef](const std::string& name) {
        return name == "act.half.c"     ? 0.5f
               : name == "act.cube.c"   ? 3.0f
               : name == "act.scaled.c" ? coef
               : name == "act.u.c"      ? static_cast<float>(std::sqrt(2.0 / M_PI))
               : name == "act.one.c"    ? 1.0f
                                        : 0.0f;
      },
      "gpt mlp net");
}

// ResidualStreamNet: a transformer's residual stream on tokens "input" [B, S, E]: h = Linear "a"
// on its rows, back to [B, S, E] ("a.back.out"); h + Linear "b" of h's rows (back to [B, S, E])
// -> "sum"; a layer norm of it over E; Linear "c" on its rows -> "logits" [B * S, E].
inline Graph ResidualStreamNet(int64_t batch = 2, int64_t seq = 37, int64_t e = 128) {
  Graph g;
  const int x = g.AddTensor({"input", {batch, seq, e}, DType::kF32, TensorKind::kInput});
  const int h = AddReshape(&g, "a.back",
                           AddLinear(&g, "a", AddReshape(&g, "a.rows", x, {batch * seq, e}), e, e),
                           {batch, seq, e});
  const int b = AddReshape(&g, "b.back",
                           AddLinear(&g, "b", AddReshape(&g, "b.rows", h, {batch * seq, e}), e, e),
                           {batch, seq, e});
  const int sum = *g.AddNode("add", OpKind::kAdd, {h, b}, {}, "sum");
  NodeAttrs ln;
  ln.axis = 2;
  ln.epsilon = 1e-5f;
  const int normed = *g.AddNode(
      "ln", OpKind::kLayerNorm,
      {sum, AddWeight(&g, "ln.scale", {e}), AddWeight(&g, "ln.bias", {e})}, ln, "ln.out");
  const int c = *g.AddNode(
      "c", OpKind::kDense,
      {AddReshape(&g, "c.rows", normed, {batch * seq, e}), AddWeight(&g, "c.weight", {e, e})}, {},
      "c.out");
  EXPECT_TRUE(g.AddNode("c.bias_add", OpKind::kBiasAdd, {c, AddWeight(&g, "c.bias", {e})}, {},
                        "logits", TensorKind::kOutput)
                  .ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// AttentionNet: one self-attention block on tokens [B, S, E] (E = H * D) as PyTorch exports it:
// q, k and v projections (reshape to rows, dense + bias_add, reshape to [B, S, H, D], transpose
// to [B, H, S, D]); kVit: Q * c and K^T * c with c = D^-1/4 (torchvision's scaled dot product
// attention), scores Q K^T; kBert: (Q K^T) / sqrt(D) + the graph input "mask" [B, 1, 1, S];
// kBertSdpa: as kVit, but K^T one transpose (0, 2, 3, 1) of K's [B, S, H, D] and a reshape to
// the same shape after P V (Hugging Face BERT's export through scaled_dot_product_attention);
// kBertBoolMask: as kBert with a weight "mask" [B, 1, S, S] whose query rows repeat (a boolean
// padding mask as torch.onnx folds it: 0 or -inf) and replace_nan(., 0) after the softmax;
// kCausal: as kBertBoolMask without the guard, the weight "mask" [1, 1, S, S] a decoder's causal
// mask (GPT-2's: 0 on keys j <= i, float32's lowest value past them);
// softmax over the keys, P V, transpose to [B, S, H, D], reshape to rows, the output dense +
// bias_add -> "logits" [B * S, E]. AttentionNetWeights sets its constants.
enum class AttentionStyle { kVit, kBert, kBertSdpa, kBertBoolMask, kCausal };
inline Graph AttentionNet(AttentionStyle style, int64_t batch = 2, int64_t seq = 37,
                          int64_t heads = 2, int64_t d = 64) {
  Graph g;
  const int64_t e = heads * d;
  const int x = g.AddTensor({"input", {batch, seq, e}, DType::kF32, TensorKind::kInput});
  const int rows = AddReshape(&g, "rows", x, {batch * seq, e});
  auto heads_of = [&](const std::string& name) {
    const int y =
        AddReshape(&g, name + ".heads", AddLinear(&g, name, rows, e, e), {batch, seq, heads, d});
    return AddTranspose(&g, name + ".bhsd", y, {0, 2, 1, 3});
  };
  int q = heads_of("q");
  int kt = 0;
  if (style == AttentionStyle::kBertSdpa) {
    kt = AddTranspose(
        &g, "k.t",
        AddReshape(&g, "k.heads", AddLinear(&g, "k", rows, e, e), {batch, seq, heads, d}),
        {0, 2, 3, 1});
  } else {
    kt = AddTranspose(&g, "k.t", heads_of("k"), {0, 1, 3, 2});
  }
  const int v = heads_of("v");
  int s = 0;
  const bool bert = style == AttentionStyle::kBert || style == AttentionStyle::kBertBoolMask ||
                    style == AttentionStyle::kCausal;
  if (!bert) {
    q = TensorOp(&g, "q.scale", OpKind::kBinary, {q, AddWeight(&g, "q.c", {1})},
                 Attrs(BinaryFn::kMul));
    kt = TensorOp(&g, "k.scale", OpKind::kBinary, {kt, AddWeight(&g, "k.c", {1})},
                  Attrs(BinaryFn::kMul));
    s = TensorOp(&g, "scores", OpKind::kMatMul, {q, kt});
  } else {
    s = TensorOp(&g, "scores", OpKind::kMatMul, {q, kt});
    s = TensorOp(&g, "scores.div", OpKind::kBinary, {s, AddWeight(&g, "sqrt_d", {1})},
                 Attrs(BinaryFn::kDiv));
    const int mask =
        style == AttentionStyle::kBert
            ? g.AddTensor({"mask", {batch, 1, 1, seq}, DType::kF32, TensorKind::kInput})
            : AddWeight(&g, "mask", {style == AttentionStyle::kCausal ? 1 : batch, 1, seq, seq});
    s = TensorOp(&g, "scores.mask", OpKind::kBinary, {s, mask}, Attrs(BinaryFn::kAdd));
  }
  NodeAttrs last;
  last.axis = -1;
  int p = TensorOp(&g, "probs", OpKind::kSoftmax, {s}, last);
  if (style == AttentionStyle::kBertBoolMask) {
    NodeAttrs guard = Attrs(UnaryFn::kReplaceNan);
    guard.alpha = 0.0f;
    p = TensorOp(&g, "probs.guard", OpKind::kUnary, {p}, guard);
  }
  int o = TensorOp(&g, "attend", OpKind::kMatMul, {p, v});
  if (style == AttentionStyle::kBertSdpa) {
    o = AddReshape(&g, "attend.same", o, {batch, heads, seq, d});
  }
  o = AddTranspose(&g, "attend.bshd", o, {0, 2, 1, 3});
  o = AddReshape(&g, "attend.rows", o, {batch * seq, e});
  const int y =
      *g.AddNode("out", OpKind::kDense, {o, AddWeight(&g, "out.weight", {e, e})}, {}, "out.out");
  EXPECT_TRUE(g.AddNode("out.bias_add", OpKind::kBiasAdd, {y, AddWeight(&g, "out.bias", {e})}, {},
                        "logits", TensorKind::kOutput)
                  .ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// MhaNet: nn.MultiheadAttention(batch_first=True) on tokens "input" [B, S, E] as torchvision's
// ViT exports it: transpose to [S, B, E], rows, the packed q/k/v dense + bias_add (3E), back to
// [S, B, 3E], [S, B, 3, E] -> transpose to [3, S, B, E] -> a slice each, [S, B*H, D] ->
// transpose to [B*H, S, D] -> [B, H, S, D]; Q * c and K^T * c (c = D^-1/4: the weights "q.c",
// "k.c" of AttentionNetWeights), softmax, P V, transpose to [S, B, H, D], rows, the output dense +
// bias_add, back to [S, B, E], transpose to "logits" [B, S, E].
inline Graph MhaNet(int64_t batch = 2, int64_t seq = 37, int64_t heads = 2, int64_t d = 64) {
  Graph g;
  const int64_t e = heads * d;
  const int x = g.AddTensor({"input", {batch, seq, e}, DType::kF32, TensorKind::kInput});
  const int sbe = AddTranspose(&g, "in.t", x, {1, 0, 2});
  const int qkv =
      AddReshape(&g, "qkv.back",
                 AddLinear(&g, "qkv", AddReshape(&g, "in.rows", sbe, {seq * batch, e}), e, 3 * e),
                 {seq, batch, 3 * e});
  const int packed =
      AddTranspose(&g, "qkv.t", AddReshape(&g, "qkv.split", qkv, {seq, batch, 3, e}), {2, 0, 1, 3});
  auto heads_of = [&](const std::string& name, int64_t index) {
    NodeAttrs a;
    a.axis = 0;
    a.start = index;
    a.end = index + 1;
    const int one = TensorOp(&g, name + ".slice", OpKind::kSlice, {packed}, a);
    const int bhsd = AddTranspose(
        &g, name + ".t", AddReshape(&g, name + ".heads", one, {seq, batch * heads, d}), {1, 0, 2});
    return AddReshape(&g, name + ".bhsd", bhsd, {batch, heads, seq, d});
  };
  int q = heads_of("q", 0);
  int kt = AddTranspose(&g, "k.kt", heads_of("k", 1), {0, 1, 3, 2});
  const int v = heads_of("v", 2);
  q = TensorOp(&g, "q.scale", OpKind::kBinary, {q, AddWeight(&g, "q.c", {1})},
               Attrs(BinaryFn::kMul));
  kt = TensorOp(&g, "k.scale", OpKind::kBinary, {kt, AddWeight(&g, "k.c", {1})},
                Attrs(BinaryFn::kMul));
  NodeAttrs last;
  last.axis = -1;
  const int p = TensorOp(&g, "probs", OpKind::kSoftmax,
                         {TensorOp(&g, "scores", OpKind::kMatMul, {q, kt})}, last);
  const int o = AddTranspose(&g, "attend.sbhd", TensorOp(&g, "attend", OpKind::kMatMul, {p, v}),
                             {2, 0, 1, 3});
  const int out =
      AddReshape(&g, "out.back",
                 AddLinear(&g, "out", AddReshape(&g, "attend.rows", o, {seq * batch, e}), e, e),
                 {seq, batch, e});
  NodeAttrs to_bse;
  to_bse.perm = {1, 0, 2};
  EXPECT_TRUE(
      g.AddNode("out.t", OpKind::kTranspose, {out}, to_bse, "logits", TensorKind::kOutput).ok());
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// A weight "mask" [B, 1, S, S] of AttentionNet's kBertBoolMask: batch b masks (-inf) its last
// 17 b keys, every key from batch 2 on (rows that are NaN after the softmax, 0 after the guard).
inline std::vector<uint8_t> PaddingMaskBytes(const std::vector<int64_t>& shape) {
  const int64_t batch = shape[0], seq = shape[3];
  std::vector<float> v(batch * seq * seq, 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t kept = b >= 2 ? 0 : std::max<int64_t>(seq - 17 * b, 0);
    for (int64_t i = 0; i < seq; ++i) {
      for (int64_t j = kept; j < seq; ++j) v[(b * seq + i) * seq + j] = -INFINITY;
    }
  }
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// A weight "mask" [1, 1, S, S] of AttentionNet's kCausal: 0 where key j <= query i, float32's
// lowest value elsewhere (transformers' causal mask).
inline std::vector<uint8_t> CausalMaskBytes(int64_t seq) {
  std::vector<float> v(seq * seq, 0.0f);
  for (int64_t i = 0; i < seq; ++i) {
    for (int64_t j = i + 1; j < seq; ++j) v[i * seq + j] = std::numeric_limits<float>::lowest();
  }
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// Random weights for AttentionNet, its scale constants set: D^-1/4 (q.c, k.c) and sqrt(D)
// (sqrt_d), and kBertBoolMask's or kCausal's mask (PaddingMaskBytes, CausalMaskBytes).
inline WeightSet AttentionNetWeights(const Graph& g, uint64_t seed, int64_t d = 64) {
  WeightSet w = RandomWeightsWithConstants(
      g, seed,
      [d](const std::string& name) {
        return name == "q.c" || name == "k.c"
                   ? static_cast<float>(std::pow(static_cast<double>(d), -0.25))
               : name == "sqrt_d" ? static_cast<float>(std::sqrt(static_cast<double>(d)))
                                  : 0.0f;
      },
      "attention net");
  const std::optional<int> mask = g.FindTensor("mask");
  if (!mask || g.tensor(*mask).kind != TensorKind::kWeight) return w;
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    const absl::Span<const uint8_t> b = w.Get(id);
    const std::vector<int64_t>& shape = g.tensor(id).shape;
    bytes[id] = id != *mask     ? std::vector<uint8_t>(b.begin(), b.end())
                : shape[0] == 1 ? CausalMaskBytes(shape[3])
                                : PaddingMaskBytes(shape);
  }
  absl::StatusOr<WeightSet> masked = WeightsFromImport(g, std::move(bytes), "attention net");
  EXPECT_TRUE(masked.ok()) << masked.status();
  return *std::move(masked);
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_

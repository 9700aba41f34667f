// The executor's fusion of an activation into a tensor-core step's epilogue
// (executor/step_program.cc FuseActivation; ops/op_template.h Epilogue::activation), CPU only:
// MobileNetV2's ReLU6 (clip [0, 6]) after a 1x1 conv and a depthwise conv, EfficientNet's SiLU as
// ONNX spells it (sigmoid, then mul, operands either way round), MobileNetV3's hard_swish after
// its stem and its classifier's dense layer, the activation after a fused residual add; and the
// cases that must not fuse: a value with another reader, a graph output, a sigmoid read twice,
// float32 networks, and an int8 output.
#include <string>
#include <vector>

#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using Act = Epilogue::Activation;
using testing::Attrs;
using testing::ConvBias;
using testing::Kinds;
using testing::StepNamed;
using testing::TensorOp;

NodeAttrs ClipAttrs(float lo, float hi) {
  NodeAttrs a;
  a.clip_min = lo;
  a.clip_max = hi;
  return a;
}

// input [2, 32, 8, 8] -> conv 1x1 64 + bias -> `activation` (nodes appended by `add`, returning
// the activation's output) -> conv 1x1 32 + bias -> output. The second conv keeps the first
// one's output float16 (a conv reads it).
template <typename AddActivation>
Graph ConvActConv(AddActivation add) {
  Graph g;
  const int x = g.AddTensor({"input", {2, 32, 8, 8}, DType::kF32, TensorKind::kInput});
  const int a = ConvBias(&g, "a", x, 32, 64, 1, 1, /*relu=*/false);
  const int act = add(&g, a);
  const int out = ConvBias(&g, "b", act, 64, 32, 1, 1, /*relu=*/false);
  g.mutable_tensor(out).kind = TensorKind::kOutput;
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

StepProgram LowerFp16(const Graph& g) {
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : StepProgram{};
}

int Relu6(Graph* g, int x) {
  return *g->AddNode("relu6", OpKind::kClip, {x}, ClipAttrs(0.0f, 6.0f), "relu6.out");
}

TEST(ActivationFusionTest, Relu6AfterAnFp16ConvIsItsEpilogue) {
  const Graph g = ConvActConv(Relu6);
  const StepProgram p = LowerFp16(g);
  EXPECT_THAT(Kinds(p), ElementsAre("convert", "conv2d", "conv2d", "convert"));
  const Step& a = StepNamed(p, "a");
  EXPECT_EQ(a.fused, "bias+clip");
  EXPECT_EQ(a.epilogue,
            (Epilogue{.bias = true, .activation = Act::kClip, .clip_lo = 0.0f, .clip_hi = 6.0f}));
  // The step writes the clip's value, float16 NHWC, which the next conv reads as it is.
  EXPECT_EQ(p.tensors[a.output].name, "relu6.out");
  EXPECT_EQ(p.tensors[a.output].dtype, DType::kF16);
  EXPECT_TRUE(p.tensors[a.output].nhwc);
  EXPECT_EQ(StepNamed(p, "b").input, a.output);
  EXPECT_EQ(p.value_of[*g.FindTensor("a.bias_out")], -1);  // fused away
  EXPECT_EQ(a.fused_nodes.size(), 2u);                     // bias_add, clip
}

TEST(ActivationFusionTest, ClipBoundsTravelAsTheyAre) {
  const Graph g = ConvActConv([](Graph* g, int x) {
    return *g->AddNode("clip", OpKind::kClip, {x}, ClipAttrs(-1.5f, 0.25f), "clip.out");
  });
  const StepProgram p = LowerFp16(g);
  const Step& a = StepNamed(p, "a");
  EXPECT_EQ(a.epilogue.activation, Act::kClip);
  EXPECT_EQ(a.epilogue.clip_lo, -1.5f);
  EXPECT_EQ(a.epilogue.clip_hi, 0.25f);
}

TEST(ActivationFusionTest, HardSwishAfterAnFp16ConvIsItsEpilogue) {
  const Graph g = ConvActConv([](Graph* g, int x) {
    return TensorOp(g, "hswish", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  });
  const StepProgram p = LowerFp16(g);
  EXPECT_THAT(Kinds(p), ElementsAre("convert", "conv2d", "conv2d", "convert"));
  const Step& a = StepNamed(p, "a");
  EXPECT_EQ(a.fused, "bias+hard_swish");
  EXPECT_EQ(a.epilogue.activation, Act::kHardSwish);
  EXPECT_EQ(p.tensors[a.output].name, "hswish.out");
}

// EfficientNet's SiLU from ONNX: Sigmoid(t) and Mul(t, sigmoid) both read t; either operand order.
TEST(ActivationFusionTest, SigmoidTimesTheValueIsSiluInTheEpilogue) {
  for (bool sigmoid_first : {false, true}) {
    const Graph g = ConvActConv([&](Graph* g, int x) {
      const int s = TensorOp(g, "sig", OpKind::kUnary, {x}, Attrs(UnaryFn::kSigmoid));
      const std::vector<int> operands =
          sigmoid_first ? std::vector<int>{s, x} : std::vector<int>{x, s};
      return TensorOp(g, "silu", OpKind::kBinary, operands, Attrs(BinaryFn::kMul));
    });
    const StepProgram p = LowerFp16(g);
    EXPECT_THAT(Kinds(p), ElementsAre("convert", "conv2d", "conv2d", "convert")) << sigmoid_first;
    const Step& a = StepNamed(p, "a");
    EXPECT_EQ(a.fused, "bias+silu");
    EXPECT_EQ(a.epilogue.activation, Act::kSilu);
    EXPECT_EQ(p.tensors[a.output].name, "silu.out");
    EXPECT_EQ(a.fused_nodes.size(), 3u);  // bias_add, sigmoid, mul
  }
}

TEST(ActivationFusionTest, ValueWithAnotherReaderIsNotFused) {
  // a's value feeds the clip and a residual add after it: the clip stays a step of its own.
  Graph g;
  const int x = g.AddTensor({"input", {2, 32, 8, 8}, DType::kF32, TensorKind::kInput});
  const int a = ConvBias(&g, "a", x, 32, 32, 1, 1, false);
  const int clipped = Relu6(&g, a);
  const int b = ConvBias(&g, "b", clipped, 32, 32, 1, 1, false);
  const int sum = *g.AddNode("add", OpKind::kAdd, {b, a}, {}, "add.out");
  const int out = ConvBias(&g, "c", sum, 32, 32, 1, 1, false);
  g.mutable_tensor(out).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const StepProgram p = LowerFp16(g);
  const Step& step_a = StepNamed(p, "a");
  EXPECT_EQ(step_a.fused, "bias");
  EXPECT_EQ(step_a.epilogue.activation, Act::kNone);
  const Step& clip = StepNamed(p, "relu6");
  EXPECT_EQ(clip.kind, StepKind::kClip);
  EXPECT_EQ(clip.input, step_a.output);
  EXPECT_EQ(p.tensors[clip.output].dtype, DType::kF16);  // the separate step stays fp16 NHWC
}

TEST(ActivationFusionTest, GraphOutputBeforeTheActivationIsNotFused) {
  Graph g = ConvActConv(Relu6);
  g.mutable_tensor(*g.FindTensor("a.bias_out")).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const StepProgram p = LowerFp16(g);
  EXPECT_EQ(StepNamed(p, "a").epilogue.activation, Act::kNone);
  EXPECT_EQ(StepNamed(p, "relu6").kind, StepKind::kClip);
}

// The sigmoid's value read by another node too: the mul is not t * sigmoid(t) alone.
TEST(ActivationFusionTest, SigmoidReadTwiceIsNotSilu) {
  Graph g;
  const int x = g.AddTensor({"input", {2, 32, 8, 8}, DType::kF32, TensorKind::kInput});
  const int a = ConvBias(&g, "a", x, 32, 32, 1, 1, false);
  const int s = TensorOp(&g, "sig", OpKind::kUnary, {a}, Attrs(UnaryFn::kSigmoid));
  const int m = TensorOp(&g, "silu", OpKind::kBinary, {a, s}, Attrs(BinaryFn::kMul));
  const int gated = TensorOp(&g, "gate", OpKind::kBinary, {m, s}, Attrs(BinaryFn::kMul));
  const int out = ConvBias(&g, "b", gated, 32, 32, 1, 1, false);
  g.mutable_tensor(out).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const StepProgram p = LowerFp16(g);
  EXPECT_EQ(StepNamed(p, "a").epilogue.activation, Act::kNone);
  EXPECT_EQ(StepNamed(p, "sig").unary, UnaryFn::kSigmoid);
  EXPECT_EQ(StepNamed(p, "silu").kind, StepKind::kBinary);
}

// MobileNetV2's inverted residual block: ReLU6 after the expansion conv and after the depthwise
// conv, both in their epilogues; the projection conv has none.
TEST(ActivationFusionTest, MobileNetV2BlockFusesBothRelu6) {
  Graph g;
  int x = g.AddTensor({"input", {2, 16, 14, 14}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "expand", x, 16, 96, 1, 1, false);
  x = *g.AddNode("expand.relu6", OpKind::kClip, {x}, ClipAttrs(0, 6), "expand.relu6.out");
  const int w = g.AddTensor({"dw.weight", {96, 1, 3, 3}, DType::kF32, TensorKind::kWeight});
  const int b = g.AddTensor({"dw.bias", {96}, DType::kF32, TensorKind::kWeight});
  NodeAttrs depthwise{.stride_h = 1,
                      .stride_w = 1,
                      .pad_top = 1,
                      .pad_left = 1,
                      .pad_bottom = 1,
                      .pad_right = 1,
                      .groups = 96};
  x = *g.AddNode("dw", OpKind::kConv2d, {x, w}, depthwise, "dw.out");
  x = *g.AddNode("dw.bias_add", OpKind::kBiasAdd, {x, b}, {}, "dw.bias_out");
  x = *g.AddNode("dw.relu6", OpKind::kClip, {x}, ClipAttrs(0, 6), "dw.relu6.out");
  x = ConvBias(&g, "project", x, 96, 24, 1, 1, false);
  g.mutable_tensor(x).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const StepProgram p = LowerFp16(g);
  EXPECT_THAT(Kinds(p), ElementsAre("convert", "conv2d", "conv2d", "conv2d", "convert"));
  const Step& dw = StepNamed(p, "dw");
  EXPECT_EQ(p.tasks[dw.task].implementations[0].workload.task_name, "depthwise_conv2d_nhwc.cuda");
  for (const char* name : {"expand", "dw"}) {
    const Step& s = StepNamed(p, name);
    EXPECT_EQ(s.fused, "bias+clip") << name;
    EXPECT_EQ(s.epilogue.activation, Act::kClip) << name;
    EXPECT_EQ(s.epilogue.clip_hi, 6.0f) << name;
  }
  EXPECT_EQ(StepNamed(p, "project").epilogue.activation, Act::kNone);
}

// MobileNetV3: hard_swish after the RGB stem (conv2d_nchw_stem_mma.cuda, which reads the float32
// input itself) and after the classifier's first dense layer (dense_wgmma.cuda).
TEST(ActivationFusionTest, StemAndDenseTakeHardSwish) {
  Graph g;
  int x = g.AddTensor({"input", {2, 3, 16, 16}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "stem", x, 3, 16, 3, 2, false);
  x = TensorOp(&g, "stem.hswish", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  x = ConvBias(&g, "conv", x, 16, 32, 1, 1, false);
  x = *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {x}, {}, "gap.out");
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  const int w1 = g.AddTensor({"fc1.weight", {64, 32}, DType::kF32, TensorKind::kWeight});
  const int b1 = g.AddTensor({"fc1.bias", {64}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc1", OpKind::kDense, {x, w1}, {}, "fc1.out");
  x = *g.AddNode("fc1.bias_add", OpKind::kBiasAdd, {x, b1}, {}, "fc1.bias_out");
  x = TensorOp(&g, "fc1.hswish", OpKind::kUnary, {x}, Attrs(UnaryFn::kHardSwish));
  const int w2 = g.AddTensor({"fc2.weight", {10, 64}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc2", OpKind::kDense, {x, w2}, {}, "logits", TensorKind::kOutput);
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const StepProgram p = LowerFp16(g);
  const Step& stem = StepNamed(p, "stem");
  EXPECT_EQ(p.tasks[stem.task].implementations[0].workload.task_name, "conv2d_nchw_stem_mma.cuda");
  EXPECT_EQ(stem.fused, "bias+hard_swish");
  const Step& fc1 = StepNamed(p, "fc1");
  EXPECT_EQ(p.tasks[fc1.task].implementations[0].workload.task_name, "dense_wgmma.cuda");
  EXPECT_EQ(fc1.fused, "bias+hard_swish");
  EXPECT_EQ(p.tensors[fc1.output].name, "fc1.hswish.out");
  for (const Step& s : p.steps) EXPECT_NE(s.kind, StepKind::kUnary) << s.name;
}

// The residual add is fused first; the activation after it follows in the same epilogue.
TEST(ActivationFusionTest, ActivationAfterAFusedResidualAdd) {
  const Graph g = testing::NhwcChainNet();
  const StepProgram p = LowerFp16(g);
  const Step& b = StepNamed(p, "b");
  EXPECT_EQ(b.fused, "bias+residual_add+hard_swish");
  EXPECT_TRUE(b.epilogue.residual);
  EXPECT_EQ(b.epilogue.activation, Act::kHardSwish);
  EXPECT_EQ(p.tensors[b.output].name, "act.out");
  // One activation per epilogue: the ReLU6 after it stays a step.
  EXPECT_EQ(StepNamed(p, "relu6").kind, StepKind::kClip);
}

// Every activation of MobileNetNet is in an epilogue at fp16: no element-wise step is left.
TEST(ActivationFusionTest, MobileNetNetRunsNoActivationStep) {
  const Graph g = testing::MobileNetNet();
  const StepProgram p = LowerFp16(g);
  EXPECT_THAT(Kinds(p), ElementsAre("conv2d", "conv2d", "conv2d", "conv2d", "conv2d",
                                    "global_avg_pool2d", "dense", "dense"));
  EXPECT_EQ(StepNamed(p, "stem").fused, "bias+hard_swish");
  EXPECT_EQ(StepNamed(p, "expand").fused, "bias+clip");
  EXPECT_EQ(StepNamed(p, "dw").fused, "bias+clip");
  EXPECT_EQ(StepNamed(p, "project").fused, "bias");
  EXPECT_EQ(StepNamed(p, "head").fused, "bias+silu");
  EXPECT_EQ(StepNamed(p, "fc1").fused, "bias+hard_swish");
  EXPECT_EQ(StepNamed(p, "fc2").fused, "bias");
}

TEST(ActivationFusionTest, Float32NetworksKeepTheActivationAsAStep) {
  const Graph g = ConvActConv(Relu6);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("conv2d", "clip", "conv2d"));
  EXPECT_EQ(StepNamed(*p, "a").epilogue.activation, Act::kNone);
}

// At int8 on the tensor cores the RGB stem (fp16) requantizes what int8 convs read: a ReLU6
// between them cannot go into an int8 output, so it stays a step and the stem writes float16.
TEST(ActivationFusionTest, RequantizedOutputKeepsTheActivationAsAStep) {
  Graph g;
  int x = g.AddTensor({"input", {2, 3, 16, 16}, DType::kF32, TensorKind::kInput});
  x = ConvBias(&g, "stem", x, 3, 32, 3, 1, false);
  x = Relu6(&g, x);
  x = ConvBias(&g, "conv", x, 32, 32, 3, 1, false);
  g.mutable_tensor(x).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  const Step& stem = StepNamed(*p, "stem");
  EXPECT_TRUE(p->tasks[stem.task].half());
  EXPECT_EQ(stem.epilogue.activation, Act::kNone);
  EXPECT_EQ(StepNamed(*p, "relu6").kind, StepKind::kClip);
}

}  // namespace
}  // namespace tunejit

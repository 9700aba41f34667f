// A small residual network (tests/executor/executor_test_util.h ResidualNet) on the CPU: the
// reference forward of every ResNet op on hand-checkable graphs, the executor's lowering (add+relu
// fusion, the residual operand, int8 adds between int8 convs on dp4a and the tensor cores
// (WideResidualNet)), the step memory plan keeping both add operands alive, and the conv task
// extraction and fallback kernel choice for ResNet's conv shapes (1x1, 3x3 stride 1 and 2, 7x7
// stride 2 pad 3).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "executor/kernel_choice.h"
#include "executor/reference_forward.h"
#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Out = Epilogue::Output;
using testing::Kinds;
using testing::StepNamed;

int ValueOf(const Graph& g, const StepProgram& p, const std::string& tensor) {
  return p.value_of[*g.FindTensor(tensor)];
}

// The values of `tensor` when `input` runs through `g` on the CPU.
std::vector<float> Reference(const Graph& g, const WeightSet& w, const std::vector<float>& input,
                             const std::string& tensor) {
  absl::StatusOr<std::vector<std::vector<float>>> v = ReferenceForward(g, w, {{"input", input}});
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? (*v)[*g.FindTensor(tensor)] : std::vector<float>{};
}

TEST(ResidualNetTest, ReferenceForwardOfEachNewOp) {
  // input [1, 1, 2, 2] = {1, -2, 3, -4}; every op reads it, so each result is checked by hand.
  Graph g;
  int x = g.AddTensor({"input", {1, 1, 2, 2}, DType::kF32, TensorKind::kInput});
  NodeAttrs pad1{.stride_h = 1,
                 .stride_w = 1,
                 .pad_top = 1,
                 .pad_left = 1,
                 .pad_bottom = 1,
                 .pad_right = 1,
                 .pool_h = 2,
                 .pool_w = 2};
  *g.AddNode("max", OpKind::kMaxPool2d, {x}, pad1, "max", TensorKind::kOutput);
  *g.AddNode("avg", OpKind::kAvgPool2d, {x}, pad1, "avg", TensorKind::kOutput);
  NodeAttrs with_pad = pad1;
  with_pad.count_include_pad = true;
  *g.AddNode("avg_pad", OpKind::kAvgPool2d, {x}, with_pad, "avg_pad", TensorKind::kOutput);
  *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {x}, {}, "gap", TensorKind::kOutput);
  *g.AddNode("add", OpKind::kAdd, {x, x}, {}, "add", TensorKind::kOutput);
  *g.AddNode("clip", OpKind::kClip, {x}, {.clip_min = -1.f, .clip_max = 2.f}, "clip",
             TensorKind::kOutput);
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const WeightSet w = RandomWeights(g, 1);
  const std::vector<float> in = {1, -2, 3, -4};
  // 2x2 windows at stride 1 over the 4x4 padded map: 3x3 outputs, padding never wins a max.
  EXPECT_THAT(Reference(g, w, in, "max"), ElementsAre(1, 1, -2, 3, 3, -2, 3, 3, -4));
  EXPECT_THAT(Reference(g, w, in, "avg"), ElementsAre(1, -0.5, -2, 2, -0.5, -3, 3, -0.5, -4));
  EXPECT_THAT(Reference(g, w, in, "avg_pad"),
              ElementsAre(0.25, -0.25, -0.5, 1, -0.5, -1.5, 0.75, -0.25, -1));
  EXPECT_THAT(Reference(g, w, in, "gap"), ElementsAre(-0.5));
  EXPECT_THAT(Reference(g, w, in, "add"), ElementsAre(2, -4, 6, -8));
  EXPECT_THAT(Reference(g, w, in, "clip"), ElementsAre(1, -1, 2, -1));
}

TEST(ResidualNetTest, ReferenceForwardOfResidualNetComposesTheOps) {
  const Graph g = testing::ResidualNet();
  const WeightSet w = RandomWeights(g, 11);
  const std::vector<float> input = testing::NormalFloats(2 * 4 * 16 * 16, 21);
  absl::StatusOr<std::vector<std::vector<float>>> v = ReferenceForward(g, w, {{"input", input}});
  ASSERT_TRUE(v.ok()) << v.status();
  auto at = [&](const std::string& name) { return (*v)[*g.FindTensor(name)]; };
  // The residual adds and the relu after them.
  const std::vector<float> sum = cpuref::AddRelu(at("b1.conv2.bias_out"), at("pool.out"), false);
  EXPECT_EQ(at("b1.add_out"), sum);
  EXPECT_EQ(at("b1.relu_out"), cpuref::AddRelu(sum, std::vector<float>(sum.size()), true));
  EXPECT_EQ(at("b2.add_out"),
            cpuref::AddRelu(at("b2.conv2.bias_out"), at("b2.down.bias_out"), false));
  EXPECT_THAT(g.tensor(*g.FindTensor("b2.relu_out")).shape, ElementsAre(2, 16, 4, 4));
  // Global average pooling of the [2, 16, 4, 4] avg-pooled map, then a view.
  EXPECT_EQ(at("gap.out"), cpuref::GlobalAvgPool(32, 16, at("avgpool.out")));
  EXPECT_EQ(at("flatten.out"), at("gap.out"));
  // The clip is exercised on both sides (some values above clip_max = 1, some in range), so the
  // GPU test's comparison covers it.
  const std::vector<float>& pooled = at("gap.out");
  const auto clipped = std::count_if(pooled.begin(), pooled.end(), [](float e) { return e > 1; });
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, static_cast<long>(pooled.size()));
  EXPECT_EQ(at("clip.out"), cpuref::Clip(pooled, 0, 1));
  EXPECT_EQ(at("logits").size(), 20u);
}

TEST(ResidualNetTest, Fp32LoweringFusesAddReluAndKeepsTheResidual) {
  const Graph g = testing::ResidualNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p),
              ElementsAre("conv2d", "max_pool2d", "conv2d", "conv2d", "add", "conv2d", "conv2d",
                          "conv2d", "add", "avg_pool2d", "global_avg_pool2d", "clip", "dense"));
  const Step& add1 = StepNamed(*p, "b1.add");
  EXPECT_EQ(add1.fused, "relu");
  EXPECT_TRUE(add1.epilogue.relu);
  EXPECT_EQ(add1.input, ValueOf(g, *p, "b1.conv2.bias_out"));
  EXPECT_EQ(add1.residual, ValueOf(g, *p, "pool.out"));
  EXPECT_EQ(add1.output, ValueOf(g, *p, "b1.relu_out"));
  EXPECT_EQ(ValueOf(g, *p, "b1.add_out"), -1);  // fused away
  EXPECT_EQ(StepNamed(*p, "b1.conv2").fused, "bias");
  const Step& add2 = StepNamed(*p, "b2.add");
  EXPECT_EQ(add2.residual, ValueOf(g, *p, "b2.down.bias_out"));
  // flatten views the global pool's [2, 16, 1, 1] output.
  const int flat = ValueOf(g, *p, "flatten.out");
  EXPECT_EQ(p->tensors[flat].alias_of, StepNamed(*p, "gap").output);
  EXPECT_EQ(StepNamed(*p, "clip").input, flat);
  for (const Step& s : p->steps) {
    EXPECT_FALSE(s.int8) << s.name;
    if (s.kind != StepKind::kAdd) {
      EXPECT_EQ(s.residual, -1) << s.name;  // float32 convs take no residual
    }
  }
}

// Any two step tensors live at the same step occupy disjoint bytes.
void ExpectNoLiveOverlap(const StepProgram& p, const StepMemory& m) {
  for (size_t a = 0; a < p.tensors.size(); ++a) {
    for (size_t b = a + 1; b < p.tensors.size(); ++b) {
      if (p.tensors[a].alias_of >= 0 || p.tensors[b].alias_of >= 0) continue;
      const bool live_together = m.first[a] <= m.last[b] && m.first[b] <= m.last[a];
      const bool bytes_overlap = m.offsets[a] < m.offsets[b] + p.tensors[b].Bytes() &&
                                 m.offsets[b] < m.offsets[a] + p.tensors[a].Bytes();
      EXPECT_FALSE(live_together && bytes_overlap)
          << p.tensors[a].name << " and " << p.tensors[b].name;
    }
  }
}

TEST(ResidualNetTest, MemoryPlanKeepsBothAddOperandsAlive) {
  const Graph g = testing::ResidualNet();
  for (NumericMode precision : {NumericMode::kFp32, NumericMode::kInt8Dp4a}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(g, precision);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
    ASSERT_TRUE(m.ok()) << m.status();
    for (int s = 0; s < static_cast<int>(p->steps.size()); ++s) {
      const Step& step = p->steps[s];
      if (step.kind != StepKind::kAdd) continue;
      // The residual was produced long before, and is still live when the add reads it.
      EXPECT_LT(m->first[step.residual], s) << step.name;
      EXPECT_GE(m->last[step.residual], s) << step.name;
      EXPECT_GE(m->last[step.input], s) << step.name;
      EXPECT_LE(m->first[step.output], s) << step.name;
    }
    ExpectNoLiveOverlap(*p, *m);
    EXPECT_LT(m->arena_bytes, m->sum_bytes);  // still reuses memory
  }
}

// On the tensor cores the skip add (and its relu) is the epilogue of the block's later conv when
// the other operand is already a float16 NHWC value: b2's downsample conv runs after b2.conv2, so
// it reads b2.conv2's output as its residual. b1's add keeps its step: its residual, the max
// pool's output, is float32 NCHW (the stem's 4 channels run in float32).
TEST(ResidualNetTest, Fp16LoweringFusesTheSkipAddIntoTheLaterConv) {
  const Graph g = testing::ResidualNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  const Step& down = StepNamed(*p, "b2.down");
  EXPECT_EQ(down.fused, "bias+residual_add+relu");
  EXPECT_TRUE(down.epilogue.residual);
  EXPECT_TRUE(down.epilogue.relu);
  EXPECT_EQ(down.residual, ValueOf(g, *p, "b2.conv2.bias_out"));
  EXPECT_EQ(down.output, ValueOf(g, *p, "b2.relu_out"));
  EXPECT_EQ(p->tensors[down.output].dtype, DType::kF16);
  EXPECT_TRUE(p->tensors[down.output].nhwc);
  EXPECT_EQ(StepNamed(*p, "b2.conv2").fused, "bias");
  int adds = 0;
  for (const Step& s : p->steps) adds += s.kind == StepKind::kAdd;
  EXPECT_EQ(adds, 1);  // b1's
  EXPECT_EQ(StepNamed(*p, "b1.add").fused, "relu");
  // The residual is live from b2.conv2's step through the downsample's.
  absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  int at = 0;
  while (p->steps[at].name != "b2.down") ++at;
  EXPECT_LT(m->first[down.residual], at);
  EXPECT_GE(m->last[down.residual], at);
  ExpectNoLiveOverlap(*p, *m);
}

// A transformer's residual stream: the add after a dense layer on rows (through the reshape
// back) is that dense step's epilogue; the add's float16 operand is read in place.
TEST(ResidualNetTest, Fp16LoweringFusesTheStreamAddIntoTheDense) {
  const Graph g = testing::ResidualStreamNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  const Step& b = StepNamed(*p, "b");
  EXPECT_EQ(b.kind, StepKind::kDense);
  EXPECT_EQ(b.fused, "bias+residual_add");
  EXPECT_TRUE(b.epilogue.residual);
  EXPECT_FALSE(b.epilogue.relu);
  EXPECT_EQ(b.residual, ValueOf(g, *p, "a.back.out"));
  EXPECT_EQ(p->tensors[b.residual].dtype, DType::kF16);
  EXPECT_FALSE(p->tensors[b.residual].nhwc);
  EXPECT_EQ(b.output, ValueOf(g, *p, "sum"));
  EXPECT_EQ(p->tensors[b.output].dtype, DType::kF16);
  for (const Step& s : p->steps) EXPECT_NE(s.kind, StepKind::kAdd) << s.name;
  absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  ExpectNoLiveOverlap(*p, *m);
  // The fp32 lowering keeps the add a step of its own.
  absl::StatusOr<StepProgram> f = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(StepNamed(*f, "b").epilogue.residual);
}

// The int8 residual add (AddInt8Kernel) reads the int8 outputs of the convs feeding it: those
// convs requantize, and no dequantize or quantize step surrounds the add. (This test asserted the
// old lowering before: float adds between int8 convs, a quantize step after b1's add.)
TEST(ResidualNetTest, Int8AddsReadAndWriteInt8WithoutQuantizeSteps) {
  const Graph g = testing::ResidualNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("quantize", "conv2d", "max_pool2d", "conv2d", "conv2d", "add",
                                     "conv2d", "conv2d", "conv2d", "add", "avg_pool2d",
                                     "global_avg_pool2d", "clip", "dense"));
  // The stem's output feeds a max pool whose output b1.conv1 and b1's add read: int8 throughout.
  EXPECT_EQ(StepNamed(*p, "stem").fused, "bias+relu+requantize");
  EXPECT_EQ(p->tensors[StepNamed(*p, "pool").output].dtype, DType::kI8);
  // Convs feeding only int8 convs and int8 adds requantize.
  EXPECT_EQ(StepNamed(*p, "b1.conv1").epilogue.output, Out::kInt8Requantize);
  EXPECT_EQ(StepNamed(*p, "b1.conv2").fused, "bias+requantize");
  EXPECT_EQ(StepNamed(*p, "b2.conv2").epilogue.output, Out::kInt8Requantize);
  EXPECT_EQ(StepNamed(*p, "b2.down").epilogue.output, Out::kInt8Requantize);
  // b1's add: both operands as their producers wrote them, int8 out with its own scale slot
  // (b1.relu_out's, the tensor calibration measures), read as is by b2.conv1 and b2.down.
  const Step& add1 = StepNamed(*p, "b1.add");
  EXPECT_TRUE(add1.int8);
  EXPECT_EQ(add1.fused, "relu+requantize");
  EXPECT_EQ(add1.input, StepNamed(*p, "b1.conv2").output);
  EXPECT_EQ(add1.residual, StepNamed(*p, "pool").output);
  const StepTensor& out1 = p->tensors[add1.output];
  EXPECT_EQ(out1.dtype, DType::kI8);
  EXPECT_EQ(p->scale_sources[out1.scale_slot], *g.FindTensor("b1.relu_out"));
  EXPECT_EQ(StepNamed(*p, "b2.conv1").input, add1.output);
  EXPECT_EQ(StepNamed(*p, "b2.down").input, add1.output);
  // b2's add feeds the float average pool: it writes the dequantized sum in float32.
  const Step& add2 = StepNamed(*p, "b2.add");
  EXPECT_TRUE(add2.int8);
  EXPECT_EQ(add2.fused, "relu+dequantize");
  EXPECT_EQ(add2.input, StepNamed(*p, "b2.conv2").output);
  EXPECT_EQ(add2.residual, StepNamed(*p, "b2.down").output);
  EXPECT_EQ(p->tensors[add2.output].dtype, DType::kF32);
  EXPECT_EQ(p->tensors[add2.output].scale_slot, -1);
  EXPECT_EQ(StepNamed(*p, "avgpool").input, add2.output);
}

// The names of the steps of `p` reading step tensor `t` (as input, residual or operand).
std::vector<std::string> Readers(const StepProgram& p, int t) {
  std::vector<std::string> names;
  for (const Step& s : p.steps) {
    bool reads = s.input == t || s.residual == t;
    for (const StepOperand& o : s.operands) reads = reads || o.tensor == t;
    if (reads) names.push_back(s.name);
  }
  return names;
}

// --precision int8 --tensor-cores (ResNet-50's case): a skip add of two int8 NHWC values whose
// sum only int8 readers take is the epilogue of the later of its convs (the conv's value
// requantized to its own slot, the residual added as the int8 add does, the ReLU, the sum
// requantized to its slot); the last block's add, read by the float global pool, stays a step
// writing float32. The only quantize and convert steps are at the graph's edges.
TEST(ResidualNetTest, Int8TensorCoresFuseTheSkipAddsIntoTheConvs) {
  const Graph g = testing::WideResidualNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* conv : {"stem", "b1.conv1", "b1.conv2", "b2.conv1", "b2.conv2", "b2.down",
                           "b3.conv1", "b3.conv2"}) {
    const Step& s = StepNamed(*p, conv);
    EXPECT_EQ(p->tasks[s.task].mode, NumericMode::kInt8TensorCores) << conv;
    EXPECT_EQ(s.epilogue.output, Out::kInt8Requantize) << conv;
    EXPECT_EQ(p->tensors[s.output].dtype, DType::kI8) << conv;
    EXPECT_TRUE(p->tensors[s.output].nhwc) << conv;
  }
  const std::vector<std::string> kinds = Kinds(*p);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "add"), 1);       // b3's
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "quantize"), 1);  // the input's
  for (const Step& s : p->steps) {
    if (s.kind != StepKind::kQuantize && s.kind != StepKind::kConvert) continue;
    EXPECT_THAT(s.name,
                ::testing::AnyOf("stem.quantize", "stem.convert", "gap.convert", "fc.convert"));
  }
  const auto source = [&](int slot) { return g.tensor(p->scale_sources[slot]).name; };
  // b1: the add of b1.conv2's value and the stem's output is b1.conv2's epilogue.
  const Step& c1 = StepNamed(*p, "b1.conv2");
  EXPECT_EQ(c1.fused, "bias+residual_add+relu+requantize");
  EXPECT_TRUE(c1.epilogue.residual);
  EXPECT_TRUE(c1.epilogue.relu);
  EXPECT_EQ(c1.residual, StepNamed(*p, "stem").output);
  EXPECT_EQ(source(c1.pre_residual_slot), "b1.conv2.bias_out");
  EXPECT_EQ(source(p->tensors[c1.output].scale_slot), "b1.relu_out");
  EXPECT_EQ(c1.output, ValueOf(g, *p, "b1.relu_out"));
  EXPECT_THAT(Readers(*p, c1.output), ElementsAre("b2.conv1", "b2.down"));
  // b2: the downsample runs after b2.conv2, so it takes the add, b2.conv2's output its residual.
  EXPECT_EQ(StepNamed(*p, "b2.conv2").fused, "bias+requantize");
  const Step& down = StepNamed(*p, "b2.down");
  EXPECT_EQ(down.fused, "bias+residual_add+relu+requantize");
  EXPECT_EQ(down.residual, StepNamed(*p, "b2.conv2").output);
  EXPECT_EQ(source(down.pre_residual_slot), "b2.down.bias_out");
  EXPECT_EQ(source(p->tensors[down.output].scale_slot), "b2.relu_out");
  EXPECT_THAT(Readers(*p, down.output), ElementsAre("b3.conv1", "b3.add"));
  // b3's add feeds the float global pool: the dequantized sum, float32 NHWC, a step of its own.
  EXPECT_FALSE(StepNamed(*p, "b3.conv2").epilogue.residual);
  EXPECT_EQ(StepNamed(*p, "b3.conv2").pre_residual_slot, -1);
  const Step& add3 = StepNamed(*p, "b3.add");
  EXPECT_TRUE(add3.int8);
  EXPECT_EQ(add3.fused, "relu+dequantize");
  EXPECT_EQ(add3.input, StepNamed(*p, "b3.conv2").output);
  EXPECT_EQ(add3.residual, down.output);
  EXPECT_EQ(p->tensors[add3.output].dtype, DType::kF32);
  EXPECT_TRUE(p->tensors[add3.output].nhwc);
  // The memory plan keeps each residual alive through the step that reads it.
  absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  ExpectNoLiveOverlap(*p, *m);
  // A scale given for the conv's value before the add (a QDQ model's) sets that slot.
  absl::StatusOr<GivenScales> given =
      MatchGivenScales(g, *p, {{"b1.conv2.bias_out", 0.25f}, {"b1.relu_out", 0.5f}});
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->per_slot[c1.pre_residual_slot], 0.25f);
  EXPECT_EQ(given->per_slot[p->tensors[c1.output].scale_slot], 0.5f);
  EXPECT_TRUE(given->unused.empty());
}

// The float lowerings of the same network have no int8 step and no scale slot.
TEST(ResidualNetTest, FloatLoweringsOfTheWideNetHaveNoInt8Adds) {
  const Graph g = testing::WideResidualNet();
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(g, mode);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(p->scale_sources.empty()) << NumericModeName(mode);
    for (const Step& s : p->steps) {
      EXPECT_FALSE(s.int8) << s.name;
      EXPECT_NE(p->tensors[s.output].dtype, DType::kI8) << s.name;
    }
  }
}

TEST(ResidualNetTest, StandaloneReluAndClipRunAsClipSteps) {
  Graph g;
  int x = g.AddTensor({"input", {2, 3}, DType::kF32, TensorKind::kInput});
  x = *g.AddNode("relu", OpKind::kRelu, {x}, {}, "r");
  *g.AddNode("clip", OpKind::kClip, {x}, {.clip_min = 0.f, .clip_max = 6.f}, "y",
             TensorKind::kOutput);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("clip", "clip"));

  Graph ints;
  int i = ints.AddTensor({"input", {2, 3}, DType::kI32, TensorKind::kInput});
  *ints.AddNode("relu", OpKind::kRelu, {i}, {}, "y", TensorKind::kOutput);
  absl::StatusOr<StepProgram> bad = LowerToSteps(ints, NumericMode::kFp32);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(bad.status().message(), HasSubstr("'relu' (relu): input 'input' is I32"));
}

// ResNet-50's conv shapes at batch 1 (N, CI, H, CO, K, stride, pad): the stem, 1x1 reduce and
// expand, 3x3 stride 1, 3x3 stride 2 (torchvision v1.5 strides the 3x3) and the 1x1 stride-2
// downsample.
struct ConvShape {
  int64_t ci, h, co;
  int k, stride, pad;
};
constexpr ConvShape kResnetConvs[] = {
    {3, 224, 64, 7, 2, 3},  {64, 56, 64, 1, 1, 0},     {64, 56, 64, 3, 1, 1},
    {64, 56, 256, 1, 1, 0}, {128, 56, 128, 3, 2, 1},   {256, 56, 512, 1, 2, 0},
    {512, 7, 512, 3, 1, 1}, {1024, 14, 2048, 1, 2, 0}, {512, 7, 2048, 1, 1, 0}};

Graph OneConv(const ConvShape& c) {
  Graph g;
  int x = g.AddTensor({"input", {1, c.ci, c.h, c.h}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {c.co, c.ci, c.k, c.k}, DType::kF32, TensorKind::kWeight});
  NodeAttrs a{.stride_h = c.stride,
              .stride_w = c.stride,
              .pad_top = c.pad,
              .pad_left = c.pad,
              .pad_bottom = c.pad,
              .pad_right = c.pad};
  EXPECT_TRUE(g.AddNode("conv", OpKind::kConv2d, {x, w}, a, "y", TensorKind::kOutput).ok());
  return g;
}

TEST(ResidualNetTest, ResnetConvShapesGetTasksAndFallbackKernels) {
  const DeviceLimits limits = DeviceLimits::ForArch(GpuArch{9, 0, false});
  for (const ConvShape& c : kResnetConvs) {
    const std::string label = absl::StrCat(c.k, "x", c.k, "/", c.stride, " ", c.ci, "->", c.co);
    const Graph g = OneConv(c);
    for (NumericMode precision : {NumericMode::kFp32, NumericMode::kInt8Dp4a}) {
      absl::StatusOr<std::vector<NodeTask>> tasks = ExtractTasks(g, precision);
      ASSERT_TRUE(tasks.ok()) << label << ": " << tasks.status();
      ASSERT_EQ(tasks->size(), 1u);
      const NodeTask& t = tasks->front();
      std::vector<std::string> names;
      for (const autotvm::Implementation& impl : t.implementations) {
        names.push_back(impl.workload.task_name);
      }
      const bool int8 = precision == NumericMode::kInt8Dp4a && c.ci % 4 == 0;
      EXPECT_EQ(t.int8(), int8) << label;
      EXPECT_EQ(names.front(), int8 ? "conv2d_NCHWc_int8.cuda" : "conv2d_nchw.cuda") << label;
      // Winograd only for 3x3 stride 1 (Relay's CUDA strategy).
      const bool winograd = c.k == 3 && c.stride == 1;
      EXPECT_EQ(names.size(), winograd ? 2u : 1u) << label;
      // No log: the highest-priority template's fallback config, specialized for an H200.
      Epilogue e{.bias = true, .relu = true};
      if (int8) e.output = Out::kFloat32;
      absl::StatusOr<KernelChoice> choice =
          ChooseKernel(t, /*history=*/nullptr, autotvm::Target{}, limits, e);
      ASSERT_TRUE(choice.ok()) << label << ": " << choice.status();
      const KernelCandidate& chosen = choice->candidates.front();
      EXPECT_TRUE(chosen.fallback) << label;
      EXPECT_EQ(chosen.task_name, names.front()) << label;
      EXPECT_FALSE(chosen.plan.kernels.empty()) << label;
    }
  }
}

}  // namespace
}  // namespace tunejit

// Lowering of graphs into executor steps (executor/step_program.h): fusion, int8 placement and
// scale slots, the step-level memory plan, and weight checks. CPU only.
#include "executor/step_program.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "executor/memory_plan.h"
#include "gmock/gmock.h"
#include "graph/vgg16.h"
#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Out = Epilogue::Output;
using testing::Kinds;
using testing::StepNamed;

TEST(ExecutorStepsTest, Fp32FusesBiasAndReluIntoConvAndDense) {
  Graph g = testing::SmallNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("conv2d", "max_pool2d", "conv2d", "dense"));
  const Step& conv0 = p->steps[0];
  EXPECT_EQ(conv0.name, "conv0");
  EXPECT_EQ(conv0.fused, "bias+relu");
  EXPECT_EQ(conv0.epilogue, (Epilogue{true, true, Out::kAccumulator}));
  EXPECT_EQ(conv0.bias, *g.FindTensor("conv0.bias"));
  EXPECT_EQ(p->tensors[conv0.output].name, "conv0.relu_out");  // the fused chain's end
  const Step& fc = p->steps[3];
  EXPECT_EQ(fc.epilogue, (Epilogue{true, false, Out::kAccumulator}));
  EXPECT_EQ(fc.fused, "bias");
  EXPECT_TRUE(p->tensors[fc.output].external);
  // flatten is a view of conv1's output, with no step of its own.
  const int flat = p->value_of[*g.FindTensor("flatten.out")];
  EXPECT_EQ(p->tensors[flat].alias_of, p->steps[2].output);
  EXPECT_EQ(fc.input, flat);
  EXPECT_TRUE(p->scale_sources.empty());
  for (const Step& s : p->steps) EXPECT_FALSE(s.int8) << s.name;
}

TEST(ExecutorStepsTest, Int8QuantizesFloatInputAndRequantizesBetweenInt8Convs) {
  Graph g = testing::SmallNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("quantize", "conv2d", "max_pool2d", "conv2d", "dense"));
  const Step& q = p->steps[0];
  const Step& conv0 = p->steps[1];
  const Step& pool = p->steps[2];
  const Step& conv1 = p->steps[3];
  EXPECT_EQ(p->tensors[q.input].name, "input");
  EXPECT_EQ(p->tensors[q.output].dtype, DType::kI8);
  EXPECT_EQ(conv0.input, q.output);
  EXPECT_TRUE(conv0.int8);
  // conv0 feeds (through the pool, on int8) another int8 conv: requantize in the epilogue.
  EXPECT_EQ(conv0.epilogue, (Epilogue{true, true, Out::kInt8Requantize}));
  EXPECT_EQ(conv0.fused, "bias+relu+requantize");
  EXPECT_TRUE(pool.int8);
  EXPECT_EQ(p->tensors[pool.output].dtype, DType::kI8);
  // conv1 feeds the float dense (through flatten): float output, dequantized in the epilogue.
  EXPECT_TRUE(conv1.int8);
  EXPECT_EQ(conv1.epilogue, (Epilogue{true, true, Out::kFloat32}));
  EXPECT_EQ(p->tensors[conv1.output].dtype, DType::kF32);
  EXPECT_FALSE(p->steps[4].int8);
  // Scale slots: the input's, and conv0's output, shared by the pool (max keeps the scale).
  ASSERT_EQ(p->scale_sources.size(), 2u);
  EXPECT_EQ(p->scale_sources[p->tensors[q.output].scale_slot], *g.FindTensor("input"));
  const int conv0_slot = p->tensors[conv0.output].scale_slot;
  EXPECT_EQ(p->scale_sources[conv0_slot], *g.FindTensor("conv0.relu_out"));
  EXPECT_EQ(p->tensors[pool.output].scale_slot, conv0_slot);
  EXPECT_EQ(p->tensors[conv1.input].scale_slot, conv0_slot);
}

// SmallNet's slots: "input" (the quantize step) and "conv0.relu_out", shared by "pool0.out".
TEST(ExecutorStepsTest, GivenScalesOverrideTheirSlotsAndTheRestIsCalibrated) {
  Graph g = testing::SmallNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->scale_sources.size(), 2u);
  const int in_slot = p->scale_sources[0] == *g.FindTensor("input") ? 0 : 1;
  const int pool_slot = 1 - in_slot;
  // Nothing given: every slot is calibrated, each as max |x| / 127.
  absl::StatusOr<GivenScales> none = MatchGivenScales(g, *p, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(SlotsToCalibrate(*none), ElementsAre(0, 1));
  EXPECT_THAT(ResolveSlotScales(*none, {12.7f, 25.4f}), ElementsAre(0.1f, 0.2f));
  // A QDQ model gives the pool's output (the next conv's input): it sets the pool's input slot.
  absl::StatusOr<GivenScales> pool = MatchGivenScales(g, *p, {{"pool0.out", 0.5f}});
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_THAT(SlotsToCalibrate(*pool), ElementsAre(in_slot));
  std::vector<float> want(2);
  want[in_slot] = 0.1f;  // calibrated: 12.7 / 127
  want[pool_slot] = 0.5f;
  EXPECT_THAT(ResolveSlotScales(*pool, {12.7f}), ::testing::ElementsAreArray(want));
  // Everything given: nothing to calibrate. Both sides of the pool given: the larger; a name no
  // int8 tensor carries (the float dense's input) is reported unused.
  absl::StatusOr<GivenScales> all = MatchGivenScales(
      g, *p,
      {{"input", 0.03f}, {"conv0.relu_out", 0.2f}, {"pool0.out", 0.3f}, {"flatten.out", 1.f}});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(SlotsToCalibrate(*all).empty());
  want[in_slot] = 0.03f;
  want[pool_slot] = 0.3f;
  EXPECT_THAT(ResolveSlotScales(*all, {}), ::testing::ElementsAreArray(want));
  EXPECT_THAT(all->unused, ElementsAre("flatten.out"));
  // fp32 has no slots: every given scale is unused.
  absl::StatusOr<StepProgram> fp32 = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(fp32.ok());
  absl::StatusOr<GivenScales> f = MatchGivenScales(g, *fp32, {{"input", 0.03f}});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->per_slot.empty());
  EXPECT_THAT(f->unused, ElementsAre("input"));
}

TEST(ExecutorStepsTest, GivenScaleMustBePositiveAndFinite) {
  Graph g = testing::SmallNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  for (float bad : {0.f, -1.f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    absl::StatusOr<GivenScales> s = MatchGivenScales(g, *p, {{"input", bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("'input'"));
  }
}

TEST(ExecutorStepsTest, Vgg16Int8FirstConvFloatRequantizesLastConvDequantizes) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<StepProgram> p = LowerToSteps(*g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  // 13 convs + 5 pools + 3 dense; no quantize step: the float first conv requantizes itself.
  EXPECT_EQ(p->steps.size(), 21u);
  EXPECT_EQ(std::count_if(p->steps.begin(), p->steps.end(),
                          [](const Step& s) { return s.kind == StepKind::kQuantize; }),
            0);
  const Step& first = StepNamed(*p, "features.0");
  EXPECT_FALSE(first.int8);
  EXPECT_EQ(first.epilogue, (Epilogue{true, true, Out::kInt8Requantize}));
  EXPECT_TRUE(StepNamed(*p, "features.2").int8);
  EXPECT_EQ(StepNamed(*p, "features.2").epilogue.output, Out::kInt8Requantize);
  EXPECT_TRUE(StepNamed(*p, "features.4").int8);  // pool between int8 convs
  EXPECT_EQ(StepNamed(*p, "features.28").epilogue.output, Out::kFloat32);
  EXPECT_FALSE(StepNamed(*p, "features.30").int8);  // last pool feeds the float classifier
  EXPECT_EQ(StepNamed(*p, "classifier.0").epilogue, (Epilogue{true, true, Out::kAccumulator}));
  EXPECT_EQ(StepNamed(*p, "classifier.6").epilogue, (Epilogue{true, false, Out::kAccumulator}));
  // One scale per int8 conv output feeding an int8 conv (features.0 .. features.26).
  EXPECT_EQ(p->scale_sources.size(), 12u);
}

// --precision fp16: the tensor-core layers run NHWC float16 end to end, from the stem (features.0,
// which reads the float32 NCHW input itself) to the classifier, which reads the flatten of the
// last pool's NHWC output in place (its weight's columns reordered to match): no convert step.
TEST(ExecutorStepsTest, Vgg16Fp16RunsNhwcHalfFromTheStemToTheClassifier) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<StepProgram> p = LowerToSteps(*g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->steps.size(), 16u);  // 13 convs (5 with their pool) + 3 dense
  for (const Step& s : p->steps) EXPECT_NE(s.kind, StepKind::kConvert) << s.name;
  auto dtype = [&](int t) { return p->tensors[t].dtype; };
  auto nhwc = [&](int t) { return p->tensors[t].nhwc; };
  const Step& first = p->steps[0];
  EXPECT_EQ(first.name, "features.0");
  EXPECT_TRUE(p->tasks[first.task].forms.float_nchw_data);
  EXPECT_EQ(p->tasks[first.task].implementations[0].workload.task_name,
            "conv2d_nchw_stem_mma.cuda");
  EXPECT_EQ(p->tensors[first.input].name, "input");  // float32 NCHW, as the graph has it
  EXPECT_EQ(dtype(first.input), DType::kF32);
  EXPECT_FALSE(nhwc(first.input));
  for (const Step& s : p->steps) {
    if (s.kind == StepKind::kConv2d || s.kind == StepKind::kMaxPool2d) {
      EXPECT_EQ(dtype(s.output), DType::kF16) << s.name;
      EXPECT_TRUE(nhwc(s.output)) << s.name;
      if (s.name == "features.0") continue;
      EXPECT_EQ(dtype(s.input), DType::kF16) << s.name;
      EXPECT_TRUE(nhwc(s.input)) << s.name;
    }
    if (s.kind == StepKind::kConv2d) {
      EXPECT_TRUE(p->tasks[s.task].half()) << s.name;
      EXPECT_EQ(s.epilogue, (Epilogue{true, true, Out::kAccumulator})) << s.name;
    }
  }
  // The last conv of each block runs as conv2d_nhwc_wgmma_pool.cuda, writing its pool's output.
  for (const auto& [conv, pool] :
       std::vector<std::pair<std::string, std::string>>{{"features.2", "features.4"},
                                                        {"features.7", "features.9"},
                                                        {"features.14", "features.16"},
                                                        {"features.21", "features.23"},
                                                        {"features.28", "features.30"}}) {
    const Step& s = StepNamed(*p, conv);
    const NodeTask& task = p->tasks[s.task];
    ASSERT_GE(task.pool, 0) << conv;
    EXPECT_EQ(g->nodes()[task.pool].name, pool);
    EXPECT_EQ(task.implementations[0].workload.task_name, "conv2d_nhwc_wgmma_pool.cuda") << conv;
    EXPECT_EQ(s.fused, "bias+relu+max_pool") << conv;
    EXPECT_EQ(p->tensors[s.output].name, pool + ".out");
    EXPECT_EQ(p->tensors[s.output].shape, g->tensor(g->nodes()[task.pool].output).shape);
  }
  EXPECT_EQ(p->tasks[StepNamed(*p, "features.12").task].pool, -1);
  EXPECT_EQ(p->tasks[StepNamed(*p, "features.12").task].implementations[0].workload.task_name,
            "conv2d_nhwc_wgmma.cuda");
  // The flatten views the last pool's NHWC output in (h, w, c) order; classifier.0 takes its
  // weight's columns in that order. The dense layers read and write float16 rows, except the
  // logits.
  const Step& fc0 = StepNamed(*p, "classifier.0");
  const StepTensor& flat = p->tensors[fc0.input];
  EXPECT_EQ(flat.alias_of, StepNamed(*p, "features.28").output);
  EXPECT_EQ(flat.dtype, DType::kF16);
  EXPECT_FALSE(flat.nhwc);
  EXPECT_THAT(flat.flattened_hwc, ElementsAre(512, 7, 7));
  EXPECT_TRUE(p->tensors[StepNamed(*p, "classifier.3").input].flattened_hwc.empty());
  EXPECT_EQ(dtype(fc0.output), DType::kF16);
  const Step& logits = StepNamed(*p, "classifier.6");
  EXPECT_EQ(dtype(logits.input), DType::kF16);
  EXPECT_EQ(dtype(logits.output), DType::kF32);
  EXPECT_TRUE(p->tensors[logits.output].external);
  EXPECT_TRUE(p->scale_sources.empty());
}

// MobileNetV2's inverted residual block at fp16: the depthwise conv between the 1x1 convs runs
// on depthwise_conv2d_nhwc.cuda, reading and writing the float16 NHWC activations as they are
// (no convert steps around it), with its bias and ReLU in the epilogue and its weight [C, 1, 3, 3]
// uploaded as OHWI, which is the same order.
TEST(ExecutorStepsTest, Fp16DepthwiseConvStaysNhwcHalf) {
  Graph g;
  int x = g.AddTensor({"input", {2, 16, 14, 14}, DType::kF32, TensorKind::kInput});
  x = testing::ConvBias(&g, "expand", x, 16, 96, 1, 1, true);
  const int dw_weight = g.AddTensor({"dw.weight", {96, 1, 3, 3}, DType::kF32, TensorKind::kWeight});
  const int dw_bias = g.AddTensor({"dw.bias", {96}, DType::kF32, TensorKind::kWeight});
  NodeAttrs depthwise{.stride_h = 2,
                      .stride_w = 2,
                      .pad_top = 1,
                      .pad_left = 1,
                      .pad_bottom = 1,
                      .pad_right = 1,
                      .groups = 96};
  x = *g.AddNode("dw", OpKind::kConv2d, {x, dw_weight}, depthwise, "dw.out");
  x = *g.AddNode("dw.bias_add", OpKind::kBiasAdd, {x, dw_bias}, {}, "dw.bias_out");
  x = *g.AddNode("dw.relu", OpKind::kRelu, {x}, {}, "dw.relu_out");
  x = testing::ConvBias(&g, "project", x, 96, 24, 1, 1, false);
  g.mutable_tensor(x).kind = TensorKind::kOutput;
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("convert", "conv2d", "conv2d", "conv2d", "convert"));
  const Step& dw = StepNamed(*p, "dw");
  const NodeTask& task = p->tasks[dw.task];
  EXPECT_TRUE(task.half());
  EXPECT_TRUE(task.forms.nhwc);
  ASSERT_EQ(task.implementations.size(), 1u);
  EXPECT_EQ(task.implementations[0].workload.task_name, "depthwise_conv2d_nhwc.cuda");
  EXPECT_EQ(dw.fused, "bias+relu");
  EXPECT_EQ(dw.epilogue, (Epilogue{true, true, Out::kAccumulator}));
  for (int t : {dw.input, dw.output}) {
    EXPECT_EQ(p->tensors[t].dtype, DType::kF16);
    EXPECT_TRUE(p->tensors[t].nhwc);
  }
  EXPECT_EQ(dw.input, StepNamed(*p, "expand").output);
  EXPECT_EQ(StepNamed(*p, "project").input, dw.output);
}

// The in-place (h, w, c) flatten is for dense layers that own their weight alone: a flatten that is
// also a graph output is read back in the graph's order, so it converts to NCHW first.
TEST(ExecutorStepsTest, Fp16FlattenReadBackAsAnOutputConvertsToNchw) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  Graph exposed = *g;
  exposed.mutable_tensor(*g->FindTensor("flatten.out")).kind = TensorKind::kOutput;
  absl::StatusOr<StepProgram> p = LowerToSteps(exposed, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  const Step& convert = StepNamed(*p, "flatten.convert");
  EXPECT_TRUE(p->tensors[convert.input].nhwc);
  EXPECT_FALSE(p->tensors[convert.output].nhwc);
  const StepTensor& flat = p->tensors[StepNamed(*p, "classifier.0").input];
  EXPECT_EQ(flat.alias_of, convert.output);
  EXPECT_TRUE(flat.flattened_hwc.empty());
}

// --precision int8 --tensor-cores: every conv runs NHWC on the tensor-core template. The RGB stem
// runs on the stem template, from the float32 NCHW input, and requantizes its output to int8 NHWC
// itself (no transpose); the last conv of each block pools in its own step (int8 between int8
// convs); the last conv dequantizes and pools NHWC float32, which the flatten views in (h, w, c)
// order.
TEST(ExecutorStepsTest, Vgg16Int8OnTensorCoresRunsNhwcFromTheStemAndFp16Dense) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<StepProgram> p = LowerToSteps(*g, NumericMode::kInt8TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->steps.size(), 17u);  // 13 convs (5 with their pool) + 3 dense + a convert
  std::vector<std::string> converts;
  for (const Step& s : p->steps) {
    if (s.kind == StepKind::kConvert) converts.push_back(s.name);
  }
  EXPECT_THAT(converts, ElementsAre("classifier.0.convert"));
  const Step& stem = StepNamed(*p, "features.0");
  EXPECT_EQ(p->steps[0].name, "features.0");
  EXPECT_EQ(p->tensors[stem.input].name, "input");
  EXPECT_EQ(p->tensors[stem.input].dtype, DType::kF32);
  EXPECT_EQ(stem.epilogue.output, Out::kInt8Requantize);
  EXPECT_EQ(stem.fused, "bias+relu+requantize");
  const StepTensor& stem_out = p->tensors[stem.output];
  EXPECT_EQ(stem_out.dtype, DType::kI8);
  EXPECT_TRUE(stem_out.nhwc);
  EXPECT_GE(stem_out.scale_slot, 0);
  EXPECT_EQ(StepNamed(*p, "features.2").input, stem.output);  // read as written
  for (const Step& s : p->steps) {
    if (s.kind != StepKind::kConv2d) continue;
    const NodeTask& task = p->tasks[s.task];
    EXPECT_EQ(task.implementations[0].workload.task_name,
              s.name == "features.0" ? "conv2d_nchw_stem_mma.cuda"
              : task.pool >= 0       ? "conv2d_nhwc_wgmma_pool.cuda"
                                     : "conv2d_nhwc_wgmma.cuda")
        << s.name;
    if (s.name == "features.0") continue;
    EXPECT_TRUE(p->tensors[s.input].nhwc) << s.name;
    EXPECT_EQ(p->tensors[s.input].dtype, DType::kI8) << s.name;
    EXPECT_TRUE(p->tensors[s.output].nhwc) << s.name;
  }
  EXPECT_EQ(StepNamed(*p, "features.26").epilogue.output, Out::kInt8Requantize);
  EXPECT_EQ(StepNamed(*p, "features.28").epilogue.output, Out::kFloat32);
  const Step& pooled = StepNamed(*p, "features.21");
  EXPECT_EQ(pooled.fused, "bias+relu+max_pool+requantize");
  EXPECT_EQ(p->tensors[pooled.output].name, "features.23.out");
  EXPECT_EQ(p->tensors[pooled.output].dtype, DType::kI8);
  EXPECT_TRUE(p->tensors[pooled.output].nhwc);
  EXPECT_GE(p->tensors[pooled.output].scale_slot, 0);
  const Step& last = StepNamed(*p, "features.28");
  EXPECT_EQ(p->tensors[last.output].name, "features.30.out");
  EXPECT_EQ(p->tensors[last.output].dtype, DType::kF32);
  const Step& to_f16 = StepNamed(*p, "classifier.0.convert");
  EXPECT_EQ(p->tensors[to_f16.input].alias_of, last.output);  // the flatten's view
  EXPECT_THAT(p->tensors[to_f16.output].flattened_hwc, ElementsAre(512, 7, 7));  // kept
  EXPECT_EQ(StepNamed(*p, "classifier.0").input, to_f16.output);  // the dense reads the kept order
  EXPECT_EQ(p->scale_sources.size(), 12u);  // the same slots as on the dp4a templates
  // The classifier runs float16 on wgmma: one float32 -> float16 convert at its input, float16
  // between the dense layers, float32 logits.
  EXPECT_EQ(p->tensors[to_f16.input].dtype, DType::kF32);
  EXPECT_EQ(p->tensors[to_f16.output].dtype, DType::kF16);
  for (const char* name : {"classifier.0", "classifier.3", "classifier.6"}) {
    const Step& dense = StepNamed(*p, name);
    EXPECT_EQ(p->tasks[dense.task].implementations[0].workload.task_name, "dense_wgmma.cuda")
        << name;
    EXPECT_EQ(p->tensors[dense.input].dtype, DType::kF16) << name;
  }
  EXPECT_EQ(p->tensors[StepNamed(*p, "classifier.3").output].dtype, DType::kF16);
  EXPECT_EQ(p->tensors[StepNamed(*p, "classifier.6").output].dtype, DType::kF32);
  // Without the option, nothing changes: TVM's NCHW int8 templates and no transposes.
  absl::StatusOr<StepProgram> dp4a = LowerToSteps(*g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(dp4a.ok());
  EXPECT_EQ(dp4a->steps.size(), 21u);
}

// A float16 value wanted as float32 (a softmax, a graph output) is converted once, and the
// converted tensor is what Executor::Output reads.
TEST(ExecutorStepsTest, Fp16ValuesLeaveAsFloat32ThroughOneConvertEach) {
  Graph g;
  int x = g.AddTensor({"x", {2, 16, 8, 8}, DType::kF32, TensorKind::kInput});
  int w1 = g.AddTensor({"w1", {16, 16, 3, 3}, DType::kF32, TensorKind::kWeight});
  int w2 = g.AddTensor({"w2", {16, 16, 3, 3}, DType::kF32, TensorKind::kWeight});
  NodeAttrs pad;
  pad.pad_top = pad.pad_left = pad.pad_bottom = pad.pad_right = 1;
  // y feeds a conv (so it is float16) and is a graph output too; the relu reads it as the conv
  // wrote it (fp16 NHWC), and its output, a graph output, is converted like y's.
  int y = *g.AddNode("conv1", OpKind::kConv2d, {x, w1}, pad, "y", TensorKind::kOutput);
  *g.AddNode("conv2", OpKind::kConv2d, {y, w2}, pad, "z", TensorKind::kOutput);
  int r = *g.AddNode("relu", OpKind::kRelu, {y}, {}, "r", TensorKind::kOutput);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p),
              ElementsAre("convert", "conv2d", "conv2d", "clip", "convert", "convert", "convert"));
  const int y_value = p->value_of[y];
  EXPECT_EQ(p->tensors[y_value].dtype, DType::kF32);  // the converted copy, read by Output
  EXPECT_FALSE(p->tensors[y_value].nhwc);
  EXPECT_TRUE(p->tensors[y_value].external);
  EXPECT_EQ(p->tensors[p->steps[3].input].dtype, DType::kF16);  // the clip reads y unconverted
  EXPECT_EQ(p->tensors[p->value_of[r]].dtype, DType::kF32);
  EXPECT_TRUE(p->tensors[p->value_of[r]].external);
  // conv2's output feeds nothing: float32 straight from its epilogue, NHWC, converted for Output.
  const int z_value = p->value_of[*g.FindTensor("z")];
  EXPECT_EQ(p->tensors[z_value].dtype, DType::kF32);
  EXPECT_FALSE(p->tensors[z_value].nhwc);
}

TEST(ExecutorStepsTest, NoFusionWhenTheIntermediateIsAGraphOutput) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {4, 4, 1, 1}, DType::kF32, TensorKind::kWeight});
  int b = g.AddTensor({"b", {4}, DType::kF32, TensorKind::kWeight});
  int y = *g.AddNode("conv", OpKind::kConv2d, {x, w}, {}, "y", TensorKind::kOutput);
  *g.AddNode("bias", OpKind::kBiasAdd, {y, b}, {}, "z");
  *g.AddNode("relu", OpKind::kRelu, {*g.FindTensor("z")}, {}, "r", TensorKind::kOutput);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Kinds(*p), ElementsAre("conv2d", "bias_add"));
  EXPECT_EQ(p->steps[0].epilogue, Epilogue{});
  EXPECT_EQ(p->steps[1].fused, "bias+relu");
  EXPECT_TRUE(p->steps[1].epilogue.relu);
}

// A relu no producer absorbs runs as a clip step to [0, inf) (tests/executor/residual_net_test.cc);
// graph-level quantization ops are the executor's own business.
TEST(ExecutorStepsTest, GraphLevelQuantizeIsUnimplemented) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4}, DType::kF32, TensorKind::kInput});
  *g.AddNode("q", OpKind::kQuantize, {x}, {}, "y", TensorKind::kOutput);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(p.status().message(), HasSubstr("'q' (quantize)"));
}

TEST(ExecutorStepsTest, MemoryPlanReusesAndNeverOverlapsLiveTensors) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok());
  for (NumericMode precision : {NumericMode::kFp32, NumericMode::kInt8Dp4a}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(*g, precision);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
    ASSERT_TRUE(m.ok()) << m.status();
    // Reuse: the arena holds about the two largest maps and the input, under half the sum.
    EXPECT_LT(m->arena_bytes, m->sum_bytes / 2);
    const int n = static_cast<int>(p->tensors.size());
    for (int a = 0; a < n; ++a) {
      EXPECT_EQ(m->offsets[a] % 256, 0);
      for (int b = a + 1; b < n; ++b) {
        if (p->tensors[a].alias_of >= 0 || p->tensors[b].alias_of >= 0) continue;
        const bool live = m->first[a] <= m->last[b] && m->first[b] <= m->last[a];
        const bool disjoint = m->offsets[a] + p->tensors[a].Bytes() <= m->offsets[b] ||
                              m->offsets[b] + p->tensors[b].Bytes() <= m->offsets[a];
        EXPECT_TRUE(!live || disjoint) << p->tensors[a].name << " / " << p->tensors[b].name;
      }
      EXPECT_LE(m->offsets[a] + p->tensors[a].Bytes(), m->arena_bytes);
    }
    // The input stays live for the whole run (set before Run, reused by later runs).
    const int input = p->value_of[*g->FindTensor("input")];
    EXPECT_EQ(m->first[input], 0);
    EXPECT_EQ(m->last[input], static_cast<int>(p->steps.size()) - 1);
    const int flat = p->value_of[*g->FindTensor("flatten.out")];
    EXPECT_EQ(m->offsets[flat], m->offsets[p->tensors[flat].alias_of]);
  }
}

TEST(ExecutorStepsTest, PlanBuffersReusesDeadBytesAndRejectsBadInput) {
  // A chain a -> b -> c -> d of 1000-byte buffers: a and c share, b and d share.
  absl::StatusOr<BufferPlan> plan =
      PlanBuffers({{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 3}}, 256);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->arena_bytes, 2048);
  EXPECT_EQ(plan->sum_bytes, 4000);
  EXPECT_EQ(plan->offsets[0], plan->offsets[2]);
  EXPECT_EQ(plan->offsets[1], plan->offsets[3]);
  EXPECT_NE(plan->offsets[0], plan->offsets[1]);
  EXPECT_FALSE(PlanBuffers({{10, 2, 1}}).ok());
  EXPECT_FALSE(PlanBuffers({{-1, 0, 0}}).ok());
  EXPECT_FALSE(PlanBuffers({{10, 0, 0}}, 3).ok());
}

TEST(ExecutorStepsTest, CheckWeightsListsMissingTensors) {
  Graph g = testing::SmallNet();
  WeightSet good = RandomWeights(g, 1);
  EXPECT_TRUE(CheckWeights(g, good).ok());
  // The same graph with conv1.bias declared an input: its random weight set lacks that tensor.
  Graph other = g;
  other.mutable_tensor(*g.FindTensor("conv1.bias")).kind = TensorKind::kInput;
  WeightSet missing = RandomWeights(other, 1);
  absl::Status s = CheckWeights(g, missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("conv1.bias (0 bytes, expected 32)"));
}

}  // namespace
}  // namespace tunejit

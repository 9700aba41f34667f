// The ONNX importer (onnx/import.h): one small model per op, checked node by node with its
// shapes and weights; one per error case; a conv/relu/pool/gemm net run through the CPU reference
// forward against a direct computation; QDQ int8; external data; the fuzzer's seed corpus.
#include "onnx/import.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "executor/reference_forward.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/tensor.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/tensor_corpus.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using testing::OnnxBuilder;
using ::testing::Pointwise;
using testing::Ramp;
using testing::WeightFloats;

std::vector<OpKind> Ops(const Graph& g) {
  std::vector<OpKind> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

const TensorDesc& Out(const OnnxModel& m) {
  return m.graph.tensor(m.graph.TensorsOfKind(TensorKind::kOutput).at(0));
}

TEST(OnnxImportTest, ConvWithBiasStridePadsDilation) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 9, 9}).Init("w", {4, 3, 3, 3}, Ramp(108)).Init("b", {4}, {1, 2, 3, 4});
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w", "b"}, {"y"}, "conv1");
  OnnxBuilder::Ints(conv, "strides", {2, 2});
  OnnxBuilder::Ints(conv, "pads", {1, 2, 1, 0});
  OnnxBuilder::Ints(conv, "dilations", {2, 1});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kConv2d, OpKind::kBiasAdd));
  const Node& n = m->graph.nodes()[0];
  EXPECT_EQ(n.name, "conv1");
  EXPECT_EQ(n.attrs.stride_h, 2);
  EXPECT_EQ(n.attrs.pad_top, 1);
  EXPECT_EQ(n.attrs.pad_left, 2);
  EXPECT_EQ(n.attrs.pad_right, 0);
  EXPECT_EQ(n.attrs.dilation_h, 2);
  // H: (9 + 2 - 5) / 2 + 1 = 4; W: (9 + 2 - 3) / 2 + 1 = 5.
  EXPECT_EQ(Out(*m).name, "y");
  EXPECT_THAT(Out(*m).shape, ElementsAre(2, 4, 4, 5));
  EXPECT_EQ(WeightFloats(*m, "w"), Ramp(108));
  EXPECT_THAT(WeightFloats(*m, "b"), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(m->opset, 17);
  EXPECT_EQ(m->weights.Label(), "weights from test.onnx");
}

TEST(OnnxImportTest, DepthwiseConvWithoutBiasAndSameUpper) {
  OnnxBuilder b;
  b.Input("x", {1, 8, 7, 7}).Init("w", {8, 1, 3, 3}, Ramp(72));
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w"}, {"y"});
  OnnxBuilder::Int(conv, "group", 8);
  OnnxBuilder::Ints(conv, "strides", {2, 2});
  OnnxBuilder::String(conv, "auto_pad", "SAME_UPPER");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kConv2d));
  const NodeAttrs& a = m->graph.nodes()[0].attrs;
  EXPECT_EQ(a.groups, 8);
  // ceil(7 / 2) = 4 outputs need (4 - 1) * 2 + 3 - 7 = 2 padding: 1 before, 1 after.
  EXPECT_EQ(a.pad_top, 1);
  EXPECT_EQ(a.pad_bottom, 1);
  EXPECT_THAT(Out(*m).shape, ElementsAre(1, 8, 4, 4));
}

// 1 < group < C (ResNeXt, RegNet): one conv per group on its channel slice, each with its bias,
// joined by a concat; the same values as the grouped conv.
TEST(OnnxImportTest, GroupedConvIsOneConvPerGroup) {
  OnnxBuilder b;
  b.Input("x", {2, 4, 5, 5}).Init("w", {6, 2, 3, 3}, Ramp(108)).Init("b", {6}, Ramp(6, 0.5f));
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w", "b"}, {"y"});
  OnnxBuilder::Int(conv, "group", 2);
  OnnxBuilder::Ints(conv, "pads", {1, 1, 1, 1});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph),
              ElementsAre(OpKind::kSlice, OpKind::kConv2d, OpKind::kBiasAdd, OpKind::kSlice,
                          OpKind::kConv2d, OpKind::kBiasAdd, OpKind::kConcat));
  EXPECT_EQ(m->graph.nodes()[3].attrs.start, 2);
  EXPECT_EQ(m->graph.nodes()[3].attrs.end, 4);
  EXPECT_EQ(m->graph.nodes()[4].attrs.groups, 1);
  const std::vector<float> w = Ramp(108);
  EXPECT_EQ(WeightFloats(*m, "w.group1"), std::vector<float>(w.begin() + 54, w.end()));
  EXPECT_THAT(Out(*m).shape, ElementsAre(2, 6, 5, 5));

  // The grouped conv itself, on the CPU reference.
  Graph g;
  const int x = g.AddTensor({"x", {2, 4, 5, 5}, DType::kF32, TensorKind::kInput});
  const int wt = g.AddTensor({"w", {6, 2, 3, 3}, DType::kF32, TensorKind::kWeight});
  const int bt = g.AddTensor({"b", {6}, DType::kF32, TensorKind::kWeight});
  NodeAttrs a;
  a.groups = 2;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  const int c = *g.AddNode("conv", OpKind::kConv2d, {x, wt}, a, "c");
  ASSERT_TRUE(g.AddNode("bias", OpKind::kBiasAdd, {c, bt}, {}, "y", TensorKind::kOutput).ok());
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  bytes[wt] = onnx_import::PackBytes(w);
  bytes[bt] = onnx_import::PackBytes(Ramp(6, 0.5f));
  absl::StatusOr<WeightSet> gw = WeightsFromImport(g, std::move(bytes), "grouped");
  ASSERT_TRUE(gw.ok()) << gw.status();
  const std::vector<float> input = Ramp(200, 0.03f);
  absl::StatusOr<std::vector<std::vector<float>>> want = ReferenceForward(g, *gw, {{"x", input}});
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<std::vector<float>>> got =
      ReferenceForward(m->graph, m->weights, {{"x", input}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT((*got)[*m->graph.FindTensor(Out(*m).name)],
              Pointwise(FloatNear(1e-6), (*want)[*g.FindTensor("y")]));
}

// A group that does not divide the output channels is an error naming both.
TEST(OnnxImportTest, GroupedConvWithIndivisibleChannelsIsRefused) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 5, 5}).Init("w", {5, 2, 3, 3}, Ramp(90));
  OnnxBuilder::Int(b.Node("Conv", {"x", "w"}, {"y"}), "group", 2);
  b.Output("y");
  EXPECT_THAT(testing::ImportError(b), HasSubstr("output channels (5) divisible by it"));
}

// Conv (no bias) + BatchNormalization: the weight and a new bias carry the BN.
TEST(OnnxImportTest, BatchNormFoldsIntoConv) {
  OnnxBuilder b;
  const std::vector<float> w = {1, 2, 3, 4, -1, -2, -3, -4};  // [2, 1, 2, 2]
  b.Input("x", {1, 1, 3, 3}).Init("w", {2, 1, 2, 2}, w);
  b.Init("gamma", {2}, {2, 0.5}).Init("beta", {2}, {0.1f, -0.2f});
  b.Init("mean", {2}, {1, -1}).Init("var", {2}, {3, 0.25f});
  b.Node("Conv", {"x", "w"}, {"c"});
  onnx::NodeProto& bn = b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  OnnxBuilder::Float(bn, "epsilon", 1.f);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kConv2d, OpKind::kBiasAdd));
  // k = gamma / sqrt(var + eps): 2 / 2 = 1, 0.5 / sqrt(1.25).
  const float k1 = 0.5f / std::sqrt(1.25f);
  EXPECT_THAT(
      WeightFloats(*m, "w"),
      Pointwise(FloatNear(1e-6), std::vector<float>{1, 2, 3, 4, -k1, -2 * k1, -3 * k1, -4 * k1}));
  // b' = (0 - mean) k + beta.
  EXPECT_THAT(WeightFloats(*m, "y.bias"),
              Pointwise(FloatNear(1e-6), std::vector<float>{-1 + 0.1f, k1 - 0.2f}));
  EXPECT_EQ(Out(*m).name, "y");
}

TEST(OnnxImportTest, BatchNormFoldsIntoConvBias) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 3, 3}).Init("w", {1, 1, 1, 1}, {2}).Init("b", {1}, {3});
  b.Init("gamma", {1}, {4}).Init("beta", {1}, {5}).Init("mean", {1}, {1}).Init("var", {1}, {3});
  b.Node("Conv", {"x", "w", "b"}, {"c"});
  onnx::NodeProto& bn = b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  OnnxBuilder::Float(bn, "epsilon", 1.f);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kConv2d, OpKind::kBiasAdd));
  // k = 4 / 2 = 2: w' = 4, b' = (3 - 1) * 2 + 5 = 9; the output is renamed to the BN's.
  EXPECT_THAT(WeightFloats(*m, "w"), ElementsAre(4));
  EXPECT_THAT(WeightFloats(*m, "b"), ElementsAre(9));
  EXPECT_EQ(Out(*m).name, "y");
}

// A BatchNormalization with no conv right before it (or whose conv output is read elsewhere) is a
// per-channel multiply and bias_add, not folded.
TEST(OnnxImportTest, BatchNormNotAfterAConvIsMultiplyAndBiasAdd) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3}).Init("w", {2, 2, 1, 1}, {1, 0, 0, 1});
  for (const char* p : {"g", "be", "mu", "v"}) b.Init(p, {2}, {1, 1});
  b.Node("Relu", {"x"}, {"r"}, "act");
  b.Node("BatchNormalization", {"r", "g", "be", "mu", "v"}, {"bn"}, "bn");
  b.Node("Conv", {"bn", "w"}, {"c"});
  b.Node("BatchNormalization", {"c", "g", "be", "mu", "v"}, {"bn2"});
  b.Node("Add", {"bn2", "c"}, {"y"});  // the conv output is read twice: not folded
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph),
              ElementsAre(OpKind::kRelu, OpKind::kBinary, OpKind::kBiasAdd, OpKind::kConv2d,
                          OpKind::kBinary, OpKind::kBiasAdd, OpKind::kAdd));
  EXPECT_THAT(WeightFloats(*m, "w"), ElementsAre(1, 0, 0, 1));  // untouched
}

TEST(OnnxImportTest, ReluAndClip) {
  OnnxBuilder b;
  b.Input("x", {2, 4}).Init("lo", {}, {0}).Init("hi", {}, {6}).Init("neg", {}, {-1});
  b.Node("Relu", {"x"}, {"r"});
  b.Node("Clip", {"r", "lo", "hi"}, {"c6"});
  b.Node("Clip", {"c6", "lo"}, {"c0"});      // min 0, no max: relu
  b.Node("Clip", {"c0", "neg", ""}, {"y"});  // min -1 only
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph),
              ElementsAre(OpKind::kRelu, OpKind::kClip, OpKind::kRelu, OpKind::kClip));
  EXPECT_EQ(m->graph.nodes()[1].attrs.clip_min, 0.f);
  EXPECT_EQ(m->graph.nodes()[1].attrs.clip_max, 6.f);
  EXPECT_EQ(m->graph.nodes()[3].attrs.clip_min, -1.f);
  EXPECT_TRUE(std::isinf(m->graph.nodes()[3].attrs.clip_max));
}

TEST(OnnxImportTest, MaxPoolWithPaddingAndCeilMode) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 6, 6});
  onnx::NodeProto& p = b.Node("MaxPool", {"x"}, {"p"});
  OnnxBuilder::Ints(p, "kernel_shape", {3, 3});
  OnnxBuilder::Ints(p, "strides", {2, 2});
  OnnxBuilder::Ints(p, "pads", {1, 1, 1, 1});
  onnx::NodeProto& c = b.Node("MaxPool", {"p"}, {"y"});
  OnnxBuilder::Ints(c, "kernel_shape", {2, 2});
  OnnxBuilder::Ints(c, "strides", {2, 2});
  OnnxBuilder::Int(c, "ceil_mode", 1);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->graph.tensor(m->graph.nodes()[0].output).shape, ElementsAre(1, 2, 3, 3));
  // ceil((3 - 2) / 2) + 1 = 2 (floor would give 1): one extra row/column of end padding.
  EXPECT_EQ(m->graph.nodes()[1].attrs.pad_bottom, 1);
  EXPECT_EQ(m->graph.nodes()[1].attrs.pad_right, 1);
  EXPECT_THAT(Out(*m).shape, ElementsAre(1, 2, 2, 2));
}

TEST(OnnxImportTest, AveragePoolsAndFlatten) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 8, 8});
  onnx::NodeProto& a = b.Node("AveragePool", {"x"}, {"a"});
  OnnxBuilder::Ints(a, "kernel_shape", {3, 3});
  OnnxBuilder::Ints(a, "strides", {2, 2});
  OnnxBuilder::Ints(a, "pads", {1, 1, 1, 1});
  OnnxBuilder::Int(a, "count_include_pad", 1);
  onnx::NodeProto& id = b.Node("AveragePool", {"a"}, {"same"});  // 1x1: dropped
  OnnxBuilder::Ints(id, "kernel_shape", {1, 1});
  b.Node("GlobalAveragePool", {"same"}, {"g"});
  b.Node("Flatten", {"g"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph),
              ElementsAre(OpKind::kAvgPool2d, OpKind::kGlobalAvgPool2d, OpKind::kFlatten));
  EXPECT_TRUE(m->graph.nodes()[0].attrs.count_include_pad);
  EXPECT_EQ(m->graph.nodes()[0].attrs.pool_h, 3);
  EXPECT_THAT(m->graph.tensor(m->graph.nodes()[0].output).shape, ElementsAre(2, 3, 4, 4));
  EXPECT_THAT(Out(*m).shape, ElementsAre(2, 3));
}

TEST(OnnxImportTest, GemmTransBAlphaBeta) {
  OnnxBuilder b;
  b.Input("x", {4, 3}).Init("W", {2, 3}, {1, 2, 3, 4, 5, 6}).Init("C", {2}, {1, -1});
  onnx::NodeProto& g = b.Node("Gemm", {"x", "W", "C"}, {"y"}, "fc");
  OnnxBuilder::Int(g, "transB", 1);
  OnnxBuilder::Float(g, "alpha", 2);
  OnnxBuilder::Float(g, "beta", 0.5);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kDense, OpKind::kBiasAdd));
  EXPECT_THAT(WeightFloats(*m, "W"), ElementsAre(2, 4, 6, 8, 10, 12));
  EXPECT_THAT(WeightFloats(*m, "C"), ElementsAre(0.5, -0.5));
  EXPECT_THAT(Out(*m).shape, ElementsAre(4, 2));
}

TEST(OnnxImportTest, GemmWithoutTransBTransposesTheWeight) {
  OnnxBuilder b;
  b.Input("x", {1, 3}).Init("W", {3, 2}, {1, 2, 3, 4, 5, 6});  // [K, N]
  b.Node("Gemm", {"x", "W"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kDense));
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("W")).shape, ElementsAre(2, 3));
  EXPECT_THAT(WeightFloats(*m, "W"), ElementsAre(1, 3, 5, 2, 4, 6));
}

TEST(OnnxImportTest, MatMulPlusConstantIsDensePlusBias) {
  OnnxBuilder b;
  b.Input("x", {2, 2}).Init("W", {2, 3}, {1, 2, 3, 4, 5, 6}).Init("bias", {1, 3}, {7, 8, 9});
  b.Node("MatMul", {"x", "W"}, {"mm"});
  b.Node("Add", {"bias", "mm"}, {"y"});  // constant first: still a bias
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kDense, OpKind::kBiasAdd));
  EXPECT_THAT(WeightFloats(*m, "W"), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_THAT(WeightFloats(*m, "bias"), ElementsAre(7, 8, 9));
}

TEST(OnnxImportTest, ResidualAddAndPerChannelBias) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4}).Init("w", {2, 2, 1, 1}, {1, 0, 0, 1}).Init("c", {1, 2, 1, 1}, {3, 4});
  b.Node("Conv", {"x", "w"}, {"conv"});
  b.Node("Add", {"conv", "x"}, {"sum"});
  b.Node("Add", {"sum", "c"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kConv2d, OpKind::kAdd, OpKind::kBiasAdd));
  EXPECT_THAT(WeightFloats(*m, "c"), ElementsAre(3, 4));
}

TEST(OnnxImportTest, AddOfDifferentShapesBroadcasts) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4}).Input("z", {1, 2, 1, 4}).Init("c", {4}, {1, 2, 3, 4});
  b.Node("Add", {"x", "z"}, {"s"});
  b.Node("Add", {"s", "c"}, {"y"});  // a constant along the last axis: no channel bias
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kBinary, OpKind::kBinary));
  EXPECT_THAT(Out(*m).shape, ElementsAre(1, 2, 4, 4));
}

TEST(OnnxImportTest, ReshapeSoftmaxDropoutIdentityConstant) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 2, 2});
  onnx::NodeProto& k = b.Node("Constant", {}, {"shape"});
  onnx::AttributeProto* v = k.add_attribute();
  v->set_name("value_ints");
  v->set_type(onnx::AttributeProto::INTS);
  v->add_ints(0);
  v->add_ints(-1);
  b.Node("Reshape", {"x", "shape"}, {"flat"});
  b.Node("Dropout", {"flat"}, {"d"});
  b.Node("Identity", {"d"}, {"i"});
  b.Node("Softmax", {"i"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kFlatten, OpKind::kSoftmax));
  EXPECT_THAT(Out(*m).shape, ElementsAre(2, 12));
}

TEST(OnnxImportTest, ReshapeThatIsNotAFlattenIsAReshape) {
  OnnxBuilder b;
  b.Input("x", {2, 12}).InitI64("s", {3}, {2, 3, 4});
  b.Node("Reshape", {"x", "s"}, {"y"}, "rs");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ops(m->graph), ElementsAre(OpKind::kReshape));
  EXPECT_THAT(Out(*m).shape, ElementsAre(2, 3, 4));
}

TEST(OnnxImportTest, IdentityAtTheOutputRenamesTheTensor) {
  OnnxBuilder b;
  b.Input("x", {1, 4});
  b.Node("Relu", {"x"}, {"r"});
  b.Node("Identity", {"r"}, {"logits"});
  b.Output("logits");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Out(*m).name, "logits");
}

// ---- Errors.

TEST(OnnxImportTest, UnsupportedOpNamesOpNodeAndInputs) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8}).Init("scales", {4}, {1, 1, 2, 2});
  b.Node("Resize", {"x", "", "scales"}, {"y"}, "up1");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(),
              HasSubstr("test.onnx: unsupported op 'Resize' (node 'up1', inputs: x, , scales)"));

  OnnxBuilder nms;
  nms.Input("boxes", {1, 4, 4}).Input("scores", {1, 1, 4});
  nms.Node("NonMaxSuppression", {"boxes", "scores"}, {"keep"}, "nms");
  nms.Output("keep");
  m = nms.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(),
              HasSubstr("unsupported op 'NonMaxSuppression' (node 'nms', inputs: boxes, scores)"));
}

TEST(OnnxImportTest, DynamicBatchNeedsBatchOption) {
  OnnxBuilder b;
  b.Input("x", {-1, 3, 4, 4});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("input 'x' dim 0 ('N') is dynamic: pass --batch N"));
  m = b.Import({.batch = 5});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Out(*m).shape, ElementsAre(5, 3, 4, 4));
}

TEST(OnnxImportTest, DynamicSpatialDimIsAnError) {
  OnnxBuilder b;
  b.Input("x", {1, 3, -1, 4});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import({.batch = 2});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("input 'x' dim 2 ('N') is dynamic"));
  EXPECT_THAT(m.status().message(), HasSubstr("fixed input size"));
}

TEST(OnnxImportTest, TruncatedAndNonOnnxBytes) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4}).Init("w", {2, 3, 1, 1}, Ramp(6));
  b.Node("Conv", {"x", "w"}, {"y"});
  b.Output("y");
  const std::string bytes = b.Bytes();
  int failures = 0;
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    absl::StatusOr<OnnxModel> m =
        ImportOnnxFromBytes({reinterpret_cast<const uint8_t*>(bytes.data()), cut}, {}, "cut.onnx");
    failures += !m.ok();
    if (!m.ok()) {
      EXPECT_THAT(m.status().message(), HasSubstr("cut.onnx: ")) << cut;
    }
  }
  EXPECT_EQ(failures, static_cast<int>(bytes.size()) - 1);  // no prefix imports
  const std::string text = "hello, this is not a model\n";
  absl::StatusOr<OnnxModel> m = ImportOnnxFromBytes(
      {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, {}, "text.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("text.onnx: not an ONNX model"));
}

TEST(OnnxImportTest, OpsetOutOfRange) {
  for (int64_t opset : {10, 22}) {
    OnnxBuilder b(opset);
    b.Input("x", {1, 4});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(m.status().message(),
                HasSubstr("opset " + std::to_string(opset) +
                          " is not supported: tunejit imports opset 11 to 21"));
  }
}

TEST(OnnxImportTest, MissingInitializerNamesTheFileAndValue) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Node("Conv", {"x", "conv.weight"}, {"y"}, "c");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("test.onnx: Conv node 'c'"));
  EXPECT_THAT(m.status().message(), HasSubstr("'conv.weight' is not a graph input, an "
                                              "initializer"));
}

TEST(OnnxImportTest, InitializerWithTooFewBytes) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4}).Init("w", {2, 3, 1, 1}, Ramp(6));
  b.LastInit().mutable_raw_data()->resize(20);
  b.Node("Conv", {"x", "w"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("tensor 'w' (FLOAT [2, 3, 1, 1]): raw_data has 20 "
                                              "bytes, expected 24"));
}

TEST(OnnxImportTest, NonConstantWeightAndNonFloatInput) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4}).Input("w", {2, 3, 1, 1});
  b.Node("Conv", {"x", "w"}, {"y"}, "c");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("the weight (input 1 'w') must be a constant"));

  OnnxBuilder i;
  i.Input("x", {1, 4});
  i.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  i.Node("Relu", {"x"}, {"y"});
  i.Output("y");
  m = i.Import();
  ASSERT_FALSE(m.ok());
  // INT64 inputs are token ids: only an embedding Gather may read them.
  EXPECT_THAT(m.status().message(), HasSubstr("Relu node"));
  EXPECT_THAT(m.status().message(), HasSubstr("'x' is INT64: only a Gather"));
}

// ---- External data.

class OnnxExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tunejit-onnx-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A 1x1 conv whose weight [2, 3, 1, 1] lives at `offset` of "<location>".
  std::string Write(const std::string& location, int64_t offset, bool write_data) {
    OnnxBuilder b;
    b.Input("x", {1, 3, 2, 2});
    onnx::TensorProto* t = b.model().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {2, 3, 1, 1}) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : std::map<std::string, std::string>{
             {"location", location}, {"offset", std::to_string(offset)}, {"length", "24"}}) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    b.Node("Conv", {"x", "w"}, {"y"});
    b.Output("y");
    if (write_data) {
      std::vector<float> w = Ramp(6, 1.f);
      std::ofstream data(dir_ / "weights.bin", std::ios::binary);
      data << std::string(static_cast<size_t>(offset), 'z');
      data.write(reinterpret_cast<const char*>(w.data()), 24);
    }
    const std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << b.Bytes();
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(OnnxExternalDataTest, ReadsWeightsBesideTheModel) {
  absl::StatusOr<OnnxModel> m = ImportOnnx(Write("weights.bin", 16, true), {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(WeightFloats(*m, "w"), Ramp(6, 1.f));
}

TEST_F(OnnxExternalDataTest, MissingFileIsNamed) {
  absl::StatusOr<OnnxModel> m = ImportOnnx(Write("nope.bin", 0, false), {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("nope.bin"));
  EXPECT_THAT(m.status().message(), HasSubstr("of tensor 'w'"));
}

TEST_F(OnnxExternalDataTest, TruncatedFileAndEscapingLocation) {
  absl::StatusOr<OnnxModel> m = ImportOnnx(Write("weights.bin", 0, true), {});
  ASSERT_TRUE(m.ok()) << m.status();
  std::filesystem::resize_file(dir_ / "weights.bin", 10);
  m = ImportOnnx((dir_ / "model.onnx").string(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("has 10 bytes; the tensor needs bytes [0, 24)"));
  m = ImportOnnx(Write("../weights.bin", 0, true), {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("must be a relative path inside"));
  // From bytes there is no directory: external data is refused rather than read from the cwd.
  std::ifstream in(dir_ / "model.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  m = ImportOnnxFromBytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("can only be read from a model file"));
}

TEST(OnnxImportTest, MissingModelFile) {
  absl::StatusOr<OnnxModel> m = ImportOnnx("/nonexistent/model.onnx", {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("/nonexistent/model.onnx"));
}

// ---- Numerics: the imported graph through the CPU reference forward against a direct
// computation of conv(3x3, pad 1) + bias -> relu -> max pool 2x2 -> flatten -> gemm + bias.

std::vector<float> DirectNet(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, const std::vector<float>& fw,
                             const std::vector<float>& fb) {
  const int n = 2, ci = 3, co = 4, h = 6, oh = 3, classes = 5;
  std::vector<float> pooled(n * co * oh * oh, -INFINITY);
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < co; ++o)
      for (int y = 0; y < h; ++y)
        for (int xx = 0; xx < h; ++xx) {
          double acc = b[o];
          for (int c = 0; c < ci; ++c)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = y + ky - 1, ix = xx + kx - 1;
                if (iy < 0 || iy >= h || ix < 0 || ix >= h) continue;
                acc += x[((i * ci + c) * h + iy) * h + ix] * w[((o * ci + c) * 3 + ky) * 3 + kx];
              }
          float& p = pooled[((i * co + o) * oh + y / 2) * oh + xx / 2];
          p = std::max(p, std::max(0.f, static_cast<float>(acc)));
        }
  const int k = co * oh * oh;
  std::vector<float> out(n * classes);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < classes; ++j) {
      double acc = fb[j];
      for (int t = 0; t < k; ++t) acc += pooled[i * k + t] * fw[j * k + t];
      out[i * classes + j] = static_cast<float>(acc);
    }
  return out;
}

TEST(OnnxImportTest, SmallNetMatchesDirectComputation) {
  const std::vector<float> x = Ramp(2 * 3 * 6 * 6, 0.1f), w = Ramp(4 * 3 * 9, 0.05f);
  const std::vector<float> b = {0.1f, -0.2f, 0.3f, 0.f}, fw = Ramp(5 * 36, 0.02f);
  const std::vector<float> fb = {1, 2, 3, 4, 5};
  OnnxBuilder g;
  g.Input("input", {-1, 3, 6, 6}).Init("w", {4, 3, 3, 3}, w).Init("b", {4}, b);
  g.Init("fw", {5, 36}, fw).Init("fb", {5}, fb);
  OnnxBuilder::Ints(g.Node("Conv", {"input", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  g.Node("Relu", {"c"}, {"r"});
  onnx::NodeProto& p = g.Node("MaxPool", {"r"}, {"p"});
  OnnxBuilder::Ints(p, "kernel_shape", {2, 2});
  OnnxBuilder::Ints(p, "strides", {2, 2});
  g.Node("Flatten", {"p"}, {"f"});
  OnnxBuilder::Int(g.Node("Gemm", {"f", "fw", "fb"}, {"logits"}), "transB", 1);
  g.Output("logits");
  absl::StatusOr<OnnxModel> m = g.Import({.batch = 2});
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<std::vector<float>>> values =
      ReferenceForward(m->graph, m->weights, {{"input", x}});
  ASSERT_TRUE(values.ok()) << values.status();
  const std::vector<float>& got = (*values)[*m->graph.FindTensor("logits")];
  const std::vector<float> want = DirectNet(x, w, b, fw, fb);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_THAT(got, Pointwise(FloatNear(1e-4), want));
  double moved = 0;  // the conv/gemm path contributes, not only the final bias
  for (size_t i = 0; i < want.size(); ++i)
    moved = std::max<double>(moved, std::abs(want[i] - fb[i % 5]));
  EXPECT_GT(moved, 0.1);
}

// ---- QDQ.

// x -> Q/DQ(0.5) -> conv1 (int8 initializer + DQ, per channel) + bias -> relu -> Q/DQ(0.25)
// -> conv2 (float initializer -> Q -> DQ, per channel) -> "y".
struct QdqNet {
  std::vector<int8_t> q1 = {127, -3, 5, 0, 1, -127, 2, 3, 0, 0, 127, -9, -127, 4, 4, 4};
  std::vector<float> s1 = {0.1f, 0.2f, 0.05f, 0.4f};
  std::vector<float> w2 = Ramp(16, 0.1f);
  std::vector<float> s2 = std::vector<float>(4);
  OnnxBuilder b;

  QdqNet() {
    for (int c = 0; c < 4; ++c) {  // max |w| / 127 per channel: the symmetric max calibration
      for (int i = 0; i < 4; ++i) s2[c] = std::max(s2[c], std::fabs(w2[c * 4 + i]) / 127.f);
    }
    b.Input("x", {1, 4, 4, 4}).Init("sx", {}, {0.5f}).Init("sr", {}, {0.25f});
    b.InitI8("zp", {}, {0}).InitI8("zpc", {4}, {0, 0, 0, 0});
    b.InitI8("w1q", {4, 4, 1, 1}, q1).Init("s1", {4}, s1).Init("b1", {4}, {1, 2, 3, 4});
    b.Init("w2", {4, 4, 1, 1}, w2).Init("s2", {4}, s2);
    b.Node("QuantizeLinear", {"x", "sx", "zp"}, {"xq"});
    b.Node("DequantizeLinear", {"xq", "sx", "zp"}, {"xd"});
    OnnxBuilder::Int(b.Node("DequantizeLinear", {"w1q", "s1", "zpc"}, {"w1d"}), "axis", 0);
    b.Node("Conv", {"xd", "w1d", "b1"}, {"c1"}, "conv1");
    b.Node("Relu", {"c1"}, {"r1"});
    b.Node("QuantizeLinear", {"r1", "sr", "zp"}, {"r1q"});
    b.Node("DequantizeLinear", {"r1q", "sr", "zp"}, {"r1d"});
    OnnxBuilder::Int(b.Node("QuantizeLinear", {"w2", "s2", "zpc"}, {"w2q"}), "axis", 0);
    OnnxBuilder::Int(b.Node("DequantizeLinear", {"w2q", "s2", "zpc"}, {"w2d"}), "axis", 0);
    b.Node("Conv", {"r1d", "w2d"}, {"y"}, "conv2");
    b.Output("y");
  }
};

TEST(OnnxImportTest, QdqConvNetImportsAsTheFloatGraphWithItsScales) {
  QdqNet net;
  absl::StatusOr<OnnxModel> m = net.b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  const Graph& g = m->graph;
  // No quantization op is left: the fake quantization of the activations is the identity.
  EXPECT_THAT(Ops(g),
              ElementsAre(OpKind::kConv2d, OpKind::kBiasAdd, OpKind::kRelu, OpKind::kConv2d));
  for (const TensorDesc& t : g.tensors()) EXPECT_EQ(t.dtype, DType::kF32) << t.name;
  EXPECT_EQ(g.tensor(g.nodes()[0].inputs[0]).name, "x");
  EXPECT_EQ(g.tensor(g.nodes()[3].inputs[0]).name, "r1");
  EXPECT_THAT(m->activation_scales, ::testing::UnorderedElementsAre(::testing::Pair("x", 0.5f),
                                                                    ::testing::Pair("r1", 0.25f)));
  // Weights: q * s[c], from the int8 initializer and from float -> Q -> DQ.
  std::vector<float> w1(16), w2(16);
  for (int i = 0; i < 16; ++i) {
    w1[i] = net.q1[i] * net.s1[i / 4];
    w2[i] = std::nearbyint(net.w2[i] / net.s2[i / 4]) * net.s2[i / 4];
  }
  EXPECT_THAT(WeightFloats(*m, g.tensor(g.nodes()[0].inputs[1]).name), ElementsAreArray(w1));
  EXPECT_THAT(WeightFloats(*m, g.tensor(g.nodes()[3].inputs[1]).name), ElementsAreArray(w2));
  EXPECT_THAT(WeightFloats(*m, "b1"), ElementsAre(1, 2, 3, 4));
  // Max-calibrated weights (max |q| = 127 per channel, or an all-zero one): no warning.
  EXPECT_THAT(m->warnings, ::testing::Not(::testing::Contains(HasSubstr("int8 weight"))));
  // The float graph runs on the CPU reference forward as any float model.
  EXPECT_TRUE(ReferenceForward(g, m->weights, {{"x", Ramp(64, 0.1f)}}).ok());
}

TEST(OnnxImportTest, QdqWeightNotMaxCalibratedWarns) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4}).InitI8("wq", {2, 2, 1, 1}, {1, 2, -3, 127});
  b.Init("s", {}, {0.1f}).InitI8("zp", {}, {0}).Init("bq_s", {}, {0.5f});
  b.InitI32("bq", {2}, {10, -20});
  b.Node("DequantizeLinear", {"wq", "s", "zp"}, {"wd"});  // per tensor
  b.Node("DequantizeLinear", {"bq", "bq_s"}, {"bd"});     // int32 bias, no zero point
  b.Node("Conv", {"x", "wd", "bd"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(WeightFloats(*m, "wq"), Pointwise(FloatNear(1e-6), {0.1f, 0.2f, -0.3f, 12.7f}));
  EXPECT_THAT(WeightFloats(*m, "bd"), ElementsAre(5.f, -10.f));  // named after the bias input
  EXPECT_THAT(m->warnings, ::testing::Contains(HasSubstr("'wq': 1 of 2 output channels")));
  EXPECT_TRUE(m->activation_scales.empty());
}

// Fuzzing found this one: dequantizing an empty constant handed memcpy a null pointer (UBSan).
TEST(OnnxImportTest, DequantizedEmptyWeightIsAnErrorNotACrash) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4}).InitI8("wq", {0, 2, 1, 1}, {});
  b.Init("s", {}, {0.1f}).InitI8("zp", {}, {0});
  b.Node("DequantizeLinear", {"wq", "s", "zp"}, {"wd"});
  b.Node("Conv", {"x", "wd"}, {"y"}, "conv");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("'conv'"));
}

// Fuzzing found this one too: a NaN weight reached the int8 conversion (UB; UBSan).
TEST(OnnxImportTest, QuantizingANanConstantIsAnError) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4}).Init("w", {1, 2, 1, 1}, {1.f, std::nanf("")});
  b.Init("s", {}, {0.1f}).InitI8("zp", {}, {0});
  b.Node("QuantizeLinear", {"w", "s", "zp"}, {"wq"}, "wq");
  b.Node("DequantizeLinear", {"wq", "s", "zp"}, {"wd"});
  b.Node("Conv", {"x", "wd"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("QuantizeLinear node 'wq'"));
  EXPECT_THAT(m.status().message(), HasSubstr("'w' holds NaN"));
}

TEST(OnnxImportTest, AsymmetricQuantizationIsAnError) {
  OnnxBuilder b;
  b.Input("x", {1, 4}).Init("s", {}, {0.5f});
  b.Node("QuantizeLinear", {"x", "s"}, {"q"}, "q");  // no zero point: uint8
  b.Node("DequantizeLinear", {"q", "s"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("QuantizeLinear node 'q'"));
  EXPECT_THAT(m.status().message(), HasSubstr("only symmetric INT8"));

  QdqNet net;  // a non-zero int8 zero point on a weight
  for (onnx::TensorProto& t : *net.b.model().mutable_graph()->mutable_initializer()) {
    if (t.name() == "zpc") t.set_raw_data(std::string("\0\3\0\0", 4));
  }
  m = net.b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(), HasSubstr("only symmetric int8 (zero point 0)"));
}

// Each case changes one node of QdqNet; the error names the node and the reason.
TEST(OnnxImportTest, QdqLayoutErrors) {
  struct Case {
    std::string what, expected;
    std::function<void(onnx::GraphProto&)> edit;
  };
  auto node = [](onnx::GraphProto& g, const std::string& out) -> onnx::NodeProto& {
    for (onnx::NodeProto& n : *g.mutable_node()) {
      if (n.output(0) == out) return n;
    }
    return *g.mutable_node(0);
  };
  const std::vector<Case> cases = {
      {"a Q output read by a conv", "only DequantizeLinear may read it",
       [&](onnx::GraphProto& g) { node(g, "y").set_input(0, "r1q"); }},
      {"DQ with another scale than its Q", "differs from its QuantizeLinear's",
       [&](onnx::GraphProto& g) { node(g, "r1d").set_input(1, "sx"); }},
      {"per-channel activation scale", "per-axis scales only for constants",
       [&](onnx::GraphProto& g) {
         node(g, "r1q").set_input(1, "s1");
         OnnxBuilder::Int(node(g, "r1q"), "axis", 1);
       }},
      {"blocked quantization", "blocked quantization",
       [&](onnx::GraphProto& g) { OnnxBuilder::Int(node(g, "w1d"), "block_size", 2); }},
      {"DQ of a float activation", "is not a QuantizeLinear output",
       [&](onnx::GraphProto& g) { node(g, "r1d").set_input(0, "r1"); }},
  };
  for (const Case& c : cases) {
    QdqNet net;
    c.edit(*net.b.model().mutable_graph());
    absl::StatusOr<OnnxModel> m = net.b.Import();
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_THAT(m.status().message(), HasSubstr(c.expected)) << c.what;
  }
}

// ---- The fuzzer's seed corpus: small valid models (onnx_import_fuzz). Rewritten with
// TUNEJIT_WRITE_CORPUS=1; otherwise the files must match what the builders make.

std::vector<std::pair<std::string, std::string>> CorpusModels() {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("conv_relu_pool_gemm.onnx", testing::SmallConvNet().Bytes());

  OnnxBuilder res(13);
  res.Input("x", {1, 4, 4, 4}).Init("w", {4, 4, 1, 1}, Ramp(16));
  for (const char* name : {"g", "be", "mu", "v"}) res.Init(name, {4}, {1, 0.5f, 2, 1});
  res.Node("Conv", {"x", "w"}, {"c"});
  res.Node("BatchNormalization", {"c", "g", "be", "mu", "v"}, {"bn"});
  res.Node("Add", {"bn", "x"}, {"s"});
  res.Node("GlobalAveragePool", {"s"}, {"gap"});
  res.Node("Flatten", {"gap"}, {"f"});
  res.Node("Softmax", {"f"}, {"y"});
  res.Output("y");
  out.emplace_back("bn_residual_gap_softmax.onnx", res.Bytes());

  OnnxBuilder q;
  q.Input("x", {1, 2, 4, 4}).Init("sx", {}, {0.5f}).InitI8("zp", {}, {0});
  q.InitI8("wq", {2, 2, 1, 1}, {1, 2, -3, 4}).Init("sw", {2}, {0.1f, 0.2f});
  q.Node("QuantizeLinear", {"x", "sx", "zp"}, {"xq"});
  q.Node("DequantizeLinear", {"xq", "sx", "zp"}, {"xd"});
  OnnxBuilder::Int(q.Node("DequantizeLinear", {"wq", "sw", "zp"}, {"wd"}), "axis", 0);
  q.Node("Conv", {"xd", "wd"}, {"c"});
  q.Node("Relu", {"c"}, {"y"});
  q.Output("y");
  out.emplace_back("qdq_conv.onnx", q.Bytes());
  out.emplace_back("bert_layer.onnx", testing::BertLayerModel().Bytes());
  out.emplace_back("vit_block.onnx", testing::VitBlockModel().Bytes());
  out.emplace_back("squeeze_excite.onnx", testing::SqueezeExciteModel().Bytes());
  out.emplace_back("dense_concat_bn.onnx", testing::DenseConcatModel().Bytes());
  out.emplace_back("fold_arithmetic.onnx", testing::FoldArithmeticModel().Bytes());

  // A weight of 4.5 KB: over kMinSplitRawData, so the import reads it outside protobuf.
  OnnxBuilder big;
  big.Input("x", {1, 16, 4, 4}).Init("w", {8, 16, 3, 3}, Ramp(8 * 16 * 9));
  OnnxBuilder::Ints(big.Node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  big.Output("y");
  out.emplace_back("conv_split_weight.onnx", big.Bytes());

  OnnxBuilder grouped;
  grouped.Input("x", {1, 4, 4, 4}).Init("w", {6, 2, 3, 3}, Ramp(108)).Init("b", {6}, Ramp(6));
  onnx::NodeProto& gc = grouped.Node("Conv", {"x", "w", "b"}, {"y"});
  OnnxBuilder::Int(gc, "group", 2);
  OnnxBuilder::Ints(gc, "pads", {1, 1, 1, 1});
  grouped.Output("y");
  out.emplace_back("grouped_conv.onnx", grouped.Bytes());

  // Swin's window ops: a constant pad, a folded ScatterND mask, ReduceL2 and an Expand.
  OnnxBuilder swin(18);
  swin.Input("x", {1, 2, 2}).InitI64("pads", {6}, {0, 1, 0, 0, 0, 1}).Init("value", {}, {0});
  swin.Init("data", {3, 3}, std::vector<float>(9, 0.0f)).InitI64("idx", {1, 1}, {2});
  swin.Init("updates", {1, 3}, {1, 2, 3}).InitI64("axes", {1}, {2});
  swin.InitI64("shape", {3}, {1, 3, 3});
  swin.Node("Pad", {"x", "pads", "value"}, {"p"});
  swin.Node("ScatterND", {"data", "idx", "updates"}, {"mask"});
  swin.Node("Add", {"p", "mask"}, {"masked"});
  swin.Node("ReduceL2", {"masked", "axes"}, {"norm"});
  swin.Node("Expand", {"norm", "shape"}, {"wide"});
  swin.Node("Div", {"masked", "wide"}, {"y"});
  swin.Output("y");
  out.emplace_back("swin_window_ops.onnx", swin.Bytes());

  // A decoder's folds: a causal mask by Trilu, position ids by CumSum, a rotary table by Cos,
  // and a Reshape of the token ids that keeps their shape.
  OnnxBuilder dec(17);
  dec.InputI64("ids", {2, 3}).Init("table", {4, 3}, Ramp(12)).InitI64("view", {2}, {-1, 3});
  dec.Init("ones", {3, 3}, std::vector<float>(9, 1.0f)).InitI64("axis", {}, {1});
  dec.Init("angle", {3}, {0.0f, 0.5f, 1.0f});
  dec.Node("Reshape", {"ids", "view"}, {"ids2"});
  dec.Node("Gather", {"table", "ids2"}, {"e"});
  OnnxBuilder::Int(dec.Node("Trilu", {"ones"}, {"tril"}), "upper", 0);
  dec.Node("CumSum", {"tril", "axis"}, {"cum"});
  dec.Node("Cos", {"angle"}, {"cos"});
  dec.Node("MatMul", {"e", "cum"}, {"m"});
  dec.Node("Mul", {"m", "cos"}, {"y"});
  dec.Output("y");
  out.emplace_back("decoder_folds.onnx", dec.Bytes());
  return out;
}

TEST(OnnxImportTest, SeedCorpus) {
  const std::filesystem::path dir =
      std::filesystem::path(TUNEJIT_SOURCE_DIR) / "tests/data/onnx/import_corpus";
  const bool write = std::getenv("TUNEJIT_WRITE_CORPUS") != nullptr;
  for (const auto& [name, bytes] : CorpusModels()) {
    absl::StatusOr<OnnxModel> m = ImportOnnxFromBytes(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, {.batch = 2}, name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    if (write) std::ofstream(dir / name, std::ios::binary) << bytes;
    std::ifstream in(dir / name, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), bytes) << name;
  }
}

}  // namespace
}  // namespace tunejit

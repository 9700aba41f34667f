// The general tensor ops of the importer (element-wise functions, broadcasting binaries, Concat,
// Transpose, reshapes, Slice / Split / Gather, ReduceMean, LayerNormalization, MatMul, Softmax,
// standalone BatchNormalization): each imports a small model, checks the graph ops and the numbers
// through the CPU reference forward against values computed here, and one bad input per op
// checks that the error names the node, the op and the attribute or shape.
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/import.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/reference_util.h"
#include "tests/onnx/tensor_corpus.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using testing::ImportError;
using testing::OnnxBuilder;
using testing::OpsOf;
using testing::OutputOf;
using ::testing::Pointwise;
using testing::Ramp;
using testing::RunOutput;
using testing::WeightFloats;

std::vector<float> Map(const std::vector<float>& x, float (*f)(float)) {
  std::vector<float> y(x);
  for (float& v : y) v = f(v);
  return y;
}

// ---- Unary functions.

TEST(OnnxTensorOpsTest, UnaryFunctions) {
  struct Case {
    const char* op;
    UnaryFn fn;
    float (*want)(float);
  };
  const Case cases[] = {
      {"Sigmoid", UnaryFn::kSigmoid, [](float x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", UnaryFn::kTanh, [](float x) { return std::tanh(x); }},
      {"Erf", UnaryFn::kErf, [](float x) { return std::erf(x); }},
      {"Exp", UnaryFn::kExp, [](float x) { return std::exp(x); }},
      {"Neg", UnaryFn::kNeg, [](float x) { return -x; }},
      {"HardSwish", UnaryFn::kHardSwish,
       [](float x) { return x * std::min(1.f, std::max(0.f, x / 6 + 0.5f)); }},
  };
  const std::vector<float> x = Ramp(24, 0.7f);  // -5.6 .. 5.6
  for (const Case& c : cases) {
    OnnxBuilder b;
    b.Input("x", {2, 3, 4});
    b.Node(c.op, {"x"}, {"y"});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << c.op << ": " << m.status();
    ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kUnary)) << c.op;
    EXPECT_EQ(m->graph.nodes()[0].attrs.unary, c.fn) << c.op;
    EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-4), Map(x, c.want))) << c.op;
  }
}

// Sqrt and Reciprocal of positive values; HardSigmoid with torch's alpha 1/6; Gelu (opset 20).
TEST(OnnxTensorOpsTest, SqrtReciprocalHardSigmoidGelu) {
  OnnxBuilder b(20);
  b.Input("x", {2, 4});
  b.Node("Exp", {"x"}, {"e"});
  b.Node("Sqrt", {"e"}, {"s"});
  b.Node("Reciprocal", {"s"}, {"r"});
  onnx::NodeProto& hs = b.Node("HardSigmoid", {"r"}, {"h"});
  OnnxBuilder::Float(hs, "alpha", 1.f / 6);
  OnnxBuilder::Float(hs, "beta", 0.5f);
  OnnxBuilder::String(b.Node("Gelu", {"h"}, {"y"}), "approximate", "none");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->graph.nodes().size(), 5u);
  EXPECT_EQ(m->graph.nodes()[3].attrs.unary, UnaryFn::kHardSigmoid);
  EXPECT_FLOAT_EQ(m->graph.nodes()[3].attrs.alpha, 1.f / 6);
  EXPECT_EQ(m->graph.nodes()[4].attrs.unary, UnaryFn::kGelu);
  const std::vector<float> x = Ramp(8, 0.9f);
  std::vector<float> want;
  for (float v : x) {
    const float r = 1 / std::sqrt(std::exp(v));
    const float h = std::min(1.f, std::max(0.f, r / 6 + 0.5f));
    want.push_back(h * (1 + std::erf(h / std::sqrt(2.f))) / 2);
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-5), want));
}

// Gelu's approximate = "tanh" (GPT-2's gelu_new) is the gelu_tanh function; other values name
// what is supported.
TEST(OnnxTensorOpsTest, GeluTanhApproximation) {
  OnnxBuilder b(20);
  b.Input("x", {2, 4});
  OnnxBuilder::String(b.Node("Gelu", {"x"}, {"y"}, "gelu"), "approximate", "tanh");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->graph.nodes().size(), 1u);
  EXPECT_EQ(m->graph.nodes()[0].attrs.unary, UnaryFn::kGeluTanh);
  const std::vector<float> x = {-3, -1, -0.5f, 0, 0.25f, 1, 2, 4};
  std::vector<float> want;
  for (double v : x) {
    want.push_back(static_cast<float>(
        0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))));
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-6), want));

  OnnxBuilder bad(20);
  bad.Input("x", {2, 4});
  OnnxBuilder::String(bad.Node("Gelu", {"x"}, {"y"}, "gelu"), "approximate", "sigmoid");
  bad.Output("y");
  const std::string e = ImportError(bad);
  EXPECT_THAT(e, HasSubstr("Gelu node 'gelu'"));
  EXPECT_THAT(e, HasSubstr("attribute 'approximate' = 'sigmoid'"));
  EXPECT_THAT(e, HasSubstr("'none' (the exact erf form) and 'tanh'"));
}

// ---- Binary functions with broadcasting.

// MobileNetV3 / EfficientNet squeeze-excitation: x [N, C, H, W] * gate [N, C, 1, 1].
TEST(OnnxTensorOpsTest, SqueezeExcitationGateBroadcasts) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 2, 2});
  b.Node("GlobalAveragePool", {"x"}, {"pool"});
  b.Node("Sigmoid", {"pool"}, {"gate"});
  b.Node("Mul", {"x", "gate"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph),
              ElementsAre(OpKind::kGlobalAvgPool2d, OpKind::kUnary, OpKind::kBinary));
  EXPECT_EQ(m->graph.nodes()[2].attrs.binary, BinaryFn::kMul);
  const std::vector<float> x = Ramp(24, 0.3f);
  std::vector<float> want(24);
  for (int nc = 0; nc < 6; ++nc) {
    float mean = 0;
    for (int i = 0; i < 4; ++i) mean += x[nc * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) want[nc * 4 + i] = x[nc * 4 + i] / (1 + std::exp(-mean));
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-6), want));
}

// Constant operands become float32 weights (a scalar one [1], an INT64 one converted); Add of a
// dim-1 vector stays a bias_add.
TEST(OnnxTensorOpsTest, BinaryFunctionsWithConstants) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Init("v", {3}, {1, 2, 3}).Init("half", {}, {0.5f});
  b.InitI64("two", {}, {2});
  b.Node("Add", {"x", "v"}, {"a"});      // [2, 3] + [3]
  b.Node("Sub", {"a", "half"}, {"s"});   // - 0.5
  b.Node("Pow", {"s", "two"}, {"p"});    // ^ 2 (INT64 exponent)
  b.Node("Div", {"half", "p"}, {"d"});   // 0.5 / p (constant first)
  b.Node("Max", {"d", "half"}, {"mx"});  // max(., 0.5)
  b.Node("Min", {"mx", "two"}, {"y"});   // min(., 2)
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kBiasAdd, OpKind::kBinary, OpKind::kBinary,
                                           OpKind::kBinary, OpKind::kBinary, OpKind::kBinary));
  EXPECT_EQ(m->graph.nodes()[2].attrs.binary, BinaryFn::kPow);
  EXPECT_EQ(m->graph.nodes()[3].attrs.binary, BinaryFn::kDiv);
  EXPECT_EQ(m->graph.tensor(m->graph.nodes()[3].inputs[0]).kind, TensorKind::kWeight);
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("two")).shape, ElementsAre(1));
  EXPECT_THAT(WeightFloats(*m, "two"), ElementsAre(2.f));
  const std::vector<float> x = {0, 0.5f, -1, 2, 1, -3.5f};
  std::vector<float> want;
  for (int i = 0; i < 6; ++i) {
    const float s = x[i] + (i % 3 + 1) - 0.5f;
    want.push_back(std::min(2.f, std::max(0.5f / (s * s), 0.5f)));
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-6), want));
}

TEST(OnnxTensorOpsTest, BinaryShapesThatDoNotBroadcastAreAnError) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Input("z", {4});
  b.Node("Mul", {"x", "z"}, {"y"}, "mul");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Mul node 'mul'"));
  EXPECT_THAT(e, HasSubstr("do not broadcast"));
}

// The existing fused forms stay: a per-channel constant is a bias_add, two activations of one
// shape the residual add; other Adds (an activation of another shape, a last-dim constant)
// broadcast.
TEST(OnnxTensorOpsTest, AddKeepsBiasAndResidualForms) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 2, 2}).Input("row", {1, 1, 2, 2}).Init("c", {2, 1, 1}, {10, 20});
  b.Init("last", {2}, {100, 200});
  b.Node("Add", {"x", "c"}, {"biased"});
  b.Node("Add", {"biased", "x"}, {"res"});
  b.Node("Add", {"res", "row"}, {"rows"});
  b.Node("Add", {"last", "rows"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph),
              ElementsAre(OpKind::kBiasAdd, OpKind::kAdd, OpKind::kBinary, OpKind::kBinary));
  const std::vector<float> x = Ramp(8), row = {1, 2, 3, 4};
  std::vector<float> want;
  for (int i = 0; i < 8; ++i) {
    want.push_back(2 * x[i] + (i < 4 ? 10 : 20) + row[i % 4] + (i % 2 ? 200 : 100));
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}, {"row", row}}), Pointwise(FloatNear(1e-6), want));
}

TEST(OnnxTensorOpsTest, CastOfAnActivation) {
  OnnxBuilder b;
  b.Input("x", {2});
  OnnxBuilder::Int(b.Node("Cast", {"x"}, {"f"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Relu", {"f"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kRelu));

  OnnxBuilder i;
  i.Input("x", {2});
  OnnxBuilder::Int(i.Node("Cast", {"x"}, {"y"}, "cast"), "to", onnx::TensorProto::INT64);
  i.Output("y");
  const std::string e = ImportError(i);
  EXPECT_THAT(e, HasSubstr("Cast node 'cast'"));
  EXPECT_THAT(e, HasSubstr("attribute 'to' = INT64"));
}

// ---- Concat, Transpose, reshapes.

TEST(OnnxTensorOpsTest, ConcatOfActivationsAndAConstant) {
  OnnxBuilder b;
  b.Input("x", {2, 1, 2}).Input("z", {2, 2, 2}).Init("c", {2, 1, 2}, {9, 8, 7, 6});
  OnnxBuilder::Int(b.Node("Concat", {"x", "c", "z"}, {"y"}), "axis", -2);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kConcat));
  EXPECT_EQ(m->graph.nodes()[0].attrs.axis, 1);
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 4, 2));
  EXPECT_THAT(RunOutput(*m, {{"x", {1, 2, 3, 4}}, {"z", {11, 12, 13, 14, 15, 16, 17, 18}}}),
              ElementsAre(1, 2, 9, 8, 11, 12, 13, 14, 3, 4, 7, 6, 15, 16, 17, 18));
}

TEST(OnnxTensorOpsTest, ConcatWithoutAxisIsAnError) {
  OnnxBuilder b;
  b.Input("x", {2, 1}).Input("z", {2, 1});
  b.Node("Concat", {"x", "z"}, {"y"}, "cat");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Concat node 'cat'"));
  EXPECT_THAT(e, HasSubstr("attribute 'axis' is missing"));
}

TEST(OnnxTensorOpsTest, Transpose) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 4});
  OnnxBuilder::Ints(b.Node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1});
  b.Node("Transpose", {"t"}, {"r"});                                        // default: reversed
  OnnxBuilder::Ints(b.Node("Transpose", {"r"}, {"y"}), "perm", {0, 1, 2});  // identity: no node
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kTranspose, OpKind::kTranspose));
  EXPECT_THAT(m->graph.nodes()[1].attrs.perm, ElementsAre(2, 1, 0));
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(3, 4, 2));
  const std::vector<float> x = Ramp(24, 1.f);
  const std::vector<float> y = RunOutput(*m, {{"x", x}});
  ASSERT_EQ(y.size(), 24u);
  // t[n][k][c] = x[n][c][k]; y = t reversed: y[c][k][n] = x[n][c][k].
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(y[(c * 4 + k) * 2 + n], x[(n * 3 + c) * 4 + k]);

  OnnxBuilder bad;
  bad.Input("x", {2, 3});
  OnnxBuilder::Ints(bad.Node("Transpose", {"x"}, {"y"}, "tr"), "perm", {0, 0});
  bad.Output("y");
  const std::string e = ImportError(bad);
  EXPECT_THAT(e, HasSubstr("Transpose node 'tr'"));
  EXPECT_THAT(e, HasSubstr("attribute 'perm' [0, 0] is not a permutation"));
}

// Reshape to [N, -1] of a rank > 2 input stays the flatten fast path; others are reshapes;
// Flatten at another axis, Squeeze and Unsqueeze are reshapes too.
TEST(OnnxTensorOpsTest, ReshapeFlattenSqueezeUnsqueeze) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 4});
  b.InitI64("flat", {2}, {0, -1}).InitI64("split", {3}, {4, -1, 3}).InitI64("ax", {2}, {0, -1});
  b.InitI64("sq", {1}, {2});
  b.Node("Reshape", {"x", "flat"}, {"f"});                                     // [2, 12]: flatten
  OnnxBuilder::Int(b.Node("Reshape", {"f", "split"}, {"r"}), "allowzero", 0);  // [4, 2, 3]
  OnnxBuilder::Int(b.Node("Flatten", {"r"}, {"f2"}), "axis", 2);               // [8, 3]
  b.Node("Unsqueeze", {"f2", "ax"}, {"u"});                                    // [1, 8, 3, 1]
  b.Node("Squeeze", {"u"}, {"s"});                                             // [8, 3]
  OnnxBuilder::Int(b.Node("Flatten", {"s"}, {"f0"}), "axis", 0);               // [1, 24]
  b.Node("Unsqueeze", {"f0", "sq"}, {"y"});                                    // [1, 24, 1]
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph),
              ElementsAre(OpKind::kFlatten, OpKind::kReshape, OpKind::kReshape, OpKind::kReshape,
                          OpKind::kReshape, OpKind::kReshape, OpKind::kReshape));
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("u")).shape, ElementsAre(1, 8, 3, 1));
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("f0")).shape, ElementsAre(1, 24));
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(1, 24, 1));
  const std::vector<float> x = Ramp(24, 1.f);
  EXPECT_EQ(RunOutput(*m, {{"x", x}}), x);
}

TEST(OnnxTensorOpsTest, ReshapeToAnotherElementCountIsAnError) {
  OnnxBuilder b;
  b.Input("x", {2, 12}).InitI64("s", {3}, {1, 3, 4});
  b.Node("Reshape", {"x", "s"}, {"y"}, "rs");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Reshape node 'rs'"));
  EXPECT_THAT(e, HasSubstr("does not match the 24 elements"));
  EXPECT_THAT(e, HasSubstr("a batch size written into the file?"));
}

TEST(OnnxTensorOpsTest, SqueezeOfANonUnitDimIsAnError) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).InitI64("ax", {1}, {1});
  b.Node("Squeeze", {"x", "ax"}, {"y"}, "sq");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Squeeze node 'sq'"));
  EXPECT_THAT(e, HasSubstr("axis 1 of [2, 3] is 3, not 1"));
}

// ---- Slice, Split, Gather.

TEST(OnnxTensorOpsTest, SliceOfTwoAxesIsTwoChainedSlices) {
  OnnxBuilder b;
  b.Input("x", {2, 5, 6});
  b.InitI64("starts", {3}, {1, -5, 0}).InitI64("ends", {3}, {LLONG_MAX, -1, 100});
  b.InitI64("axes", {3}, {1, 2, 0}).InitI64("steps", {3}, {1, 2, 1});
  b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  // Axis 0 is taken whole: no node for it.
  ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kSlice, OpKind::kSlice));
  const NodeAttrs& s2 = m->graph.nodes()[1].attrs;
  EXPECT_EQ(s2.axis, 2);
  EXPECT_EQ(s2.start, 1);
  EXPECT_EQ(s2.step, 2);
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 4, 2));  // rows 1..4, columns 1 and 3
  const std::vector<float> x = Ramp(60, 1.f);
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int r = 1; r < 5; ++r)
      for (int c : {1, 3}) want.push_back(x[(n * 5 + r) * 6 + c]);
  EXPECT_EQ(RunOutput(*m, {{"x", x}}), want);
}

TEST(OnnxTensorOpsTest, SliceWithANegativeStepIsUnsupported) {
  OnnxBuilder b;
  b.Input("x", {2, 5});
  b.InitI64("st", {1}, {-1}).InitI64("en", {1}, {LLONG_MIN}).InitI64("ax", {1}, {1});
  b.InitI64("sp", {1}, {-1});
  b.Node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "flip");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Slice node 'flip'"));
  EXPECT_THAT(e, HasSubstr("steps: step -1 on axis 1"));
}

TEST(OnnxTensorOpsTest, SplitInItsThreeForms) {
  const std::vector<float> x = Ramp(12, 1.f);  // [2, 6]
  auto column = [&](int n, int c) { return x[n * 6 + c]; };
  {
    OnnxBuilder b(13);  // sizes as input 1
    b.Input("x", {2, 6}).InitI64("sizes", {2}, {2, 4});
    OnnxBuilder::Int(b.Node("Split", {"x", "sizes"}, {"a", "y"}), "axis", -1);
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kSlice, OpKind::kSlice));
    EXPECT_THAT(RunOutput(*m, {{"x", x}}),
                ElementsAre(column(0, 2), column(0, 3), column(0, 4), column(0, 5), column(1, 2),
                            column(1, 3), column(1, 4), column(1, 5)));
  }
  {
    OnnxBuilder b(11);  // sizes as the attribute
    b.Input("x", {2, 6});
    onnx::NodeProto& s = b.Node("Split", {"x"}, {"a", "y"});
    OnnxBuilder::Int(s, "axis", 1);
    OnnxBuilder::Ints(s, "split", {5, 1});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(RunOutput(*m, {{"x", x}}), ElementsAre(column(0, 5), column(1, 5)));
  }
  {
    OnnxBuilder b(18);  // num_outputs 3: parts of ceil(6 / 3) = 2
    b.Input("x", {2, 6});
    onnx::NodeProto& s = b.Node("Split", {"x"}, {"a", "b", "y"});
    OnnxBuilder::Int(s, "axis", 1);
    OnnxBuilder::Int(s, "num_outputs", 3);
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(RunOutput(*m, {{"x", x}}),
                ElementsAre(column(0, 4), column(0, 5), column(1, 4), column(1, 5)));
  }
}

TEST(OnnxTensorOpsTest, SplitNumOutputsMismatchIsAnError) {
  OnnxBuilder b(18);
  b.Input("x", {2, 6});
  onnx::NodeProto& s = b.Node("Split", {"x"}, {"a", "y"}, "split");
  OnnxBuilder::Int(s, "axis", 1);
  OnnxBuilder::Int(s, "num_outputs", 3);
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Split node 'split'"));
  EXPECT_THAT(e, HasSubstr("attribute 'num_outputs' is 3 but the node has 2 outputs"));
}

// ViT's class token x[:, 0] (a scalar index: slice + reshape dropping the axis) and a run of
// consecutive indices (a slice).
TEST(OnnxTensorOpsTest, GatherOfAClassTokenAndOfARun) {
  OnnxBuilder b;
  b.Input("x", {2, 5, 3}).InitI64("zero", {}, {0}).InitI64("run", {2}, {-3, -2});
  OnnxBuilder::Int(b.Node("Gather", {"x", "zero"}, {"cls"}), "axis", 1);
  OnnxBuilder::Int(b.Node("Gather", {"x", "run"}, {"mid"}), "axis", 1);
  b.Output("cls").Output("mid");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  // [2, 1, 3] -> [2, 3] is the flatten view.
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kSlice, OpKind::kFlatten, OpKind::kSlice));
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("cls")).shape, ElementsAre(2, 3));
  EXPECT_THAT(m->graph.tensor(*m->graph.FindTensor("mid")).shape, ElementsAre(2, 2, 3));
  const std::vector<float> x = Ramp(30, 1.f);
  absl::StatusOr<std::vector<std::vector<float>>> v =
      ReferenceForward(m->graph, m->weights, {{"x", x}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT((*v)[*m->graph.FindTensor("cls")],
              ElementsAre(x[0], x[1], x[2], x[15], x[16], x[17]));
  EXPECT_THAT(
      (*v)[*m->graph.FindTensor("mid")],
      ElementsAre(x[6], x[7], x[8], x[9], x[10], x[11], x[21], x[22], x[23], x[24], x[25], x[26]));
}

TEST(OnnxTensorOpsTest, GatherOfScatteredIndicesIsUnsupported) {
  OnnxBuilder b;
  b.Input("x", {2, 5}).InitI64("idx", {2}, {0, 2});
  OnnxBuilder::Int(b.Node("Gather", {"x", "idx"}, {"y"}, "pick"), "axis", 1);
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Gather node 'pick'"));
  EXPECT_THAT(e, HasSubstr("indices [2] (0, 2) on axis 1"));
  EXPECT_THAT(e, HasSubstr("consecutive increasing indices"));
}

// ---- ReduceMean, LayerNormalization, Softmax.

TEST(OnnxTensorOpsTest, ReduceMeanAxesAttributeAndInput) {
  const std::vector<float> x = Ramp(24, 1.f);  // [2, 3, 4]
  std::vector<float> want(2 * 4, 0.f);         // mean over axis 1, keepdims 0
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k) want[n * 4 + k] += x[(n * 3 + c) * 4 + k] / 3;
  {
    OnnxBuilder b(17);
    b.Input("x", {2, 3, 4});
    onnx::NodeProto& r = b.Node("ReduceMean", {"x"}, {"y"});
    OnnxBuilder::Ints(r, "axes", {-2});
    OnnxBuilder::Int(r, "keepdims", 0);
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kReduceMean));
    EXPECT_THAT(m->graph.nodes()[0].attrs.axes, ElementsAre(1));
    EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 4));
    EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-5), want));
  }
  {
    OnnxBuilder b(18);
    b.Input("x", {2, 3, 4}).InitI64("axes", {2}, {2, 1});
    b.Node("ReduceMean", {"x", "axes"}, {"y"});  // keepdims 1 by default
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(m->graph.nodes()[0].attrs.axes, ElementsAre(1, 2));
    EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 1, 1));
  }
  {
    OnnxBuilder b(18);  // no axes, noop_with_empty_axes: the identity
    b.Input("x", {2, 3});
    OnnxBuilder::Int(b.Node("ReduceMean", {"x"}, {"m"}), "noop_with_empty_axes", 1);
    b.Node("Relu", {"m"}, {"y"});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kRelu));
  }
}

TEST(OnnxTensorOpsTest, ReduceMeanAxesInputBeforeOpset18IsAnError) {
  OnnxBuilder b(17);
  b.Input("x", {2, 3}).InitI64("axes", {1}, {1});
  b.Node("ReduceMean", {"x", "axes"}, {"y"}, "mean");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("ReduceMean node 'mean'"));
  EXPECT_THAT(e, HasSubstr("input 1 (axes) is an opset 18 form"));
}

std::vector<float> LayerNormRows(const std::vector<float>& x, int cols,
                                 const std::vector<float>& scale, const std::vector<float>& bias,
                                 float eps) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += x[r * cols + c] / cols;
    for (int c = 0; c < cols; ++c) var += std::pow(x[r * cols + c] - mean, 2) / cols;
    for (int c = 0; c < cols; ++c) {
      y[r * cols + c] =
          static_cast<float>((x[r * cols + c] - mean) / std::sqrt(var + eps) * scale[c] + bias[c]);
    }
  }
  return y;
}

TEST(OnnxTensorOpsTest, LayerNormalization) {
  const std::vector<float> scale = {1, 2, 0.5f, -1}, bias = {0.1f, 0, -0.2f, 3};
  OnnxBuilder b;
  b.Input("x", {2, 3, 4}).Init("g", {4}, scale).Init("beta", {4}, bias);
  onnx::NodeProto& ln = b.Node("LayerNormalization", {"x", "g", "beta"}, {"y", "", ""});
  OnnxBuilder::Float(ln, "epsilon", 1e-3f);
  OnnxBuilder::Int(ln, "stash_type", 1);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kLayerNorm));
  EXPECT_EQ(m->graph.nodes()[0].attrs.axis, 2);
  EXPECT_FLOAT_EQ(m->graph.nodes()[0].attrs.epsilon, 1e-3f);
  const std::vector<float> x = Ramp(24, 0.4f);
  EXPECT_THAT(RunOutput(*m, {{"x", x}}),
              Pointwise(FloatNear(1e-5), LayerNormRows(x, 4, scale, bias, 1e-3f)));

  OnnxBuilder nb;  // no bias: zeros; axis 1 of [2, 2, 2] normalizes 4 values per row
  nb.Input("x", {2, 2, 2}).Init("g", {2, 2}, {1, 1, 1, 1});
  OnnxBuilder::Int(nb.Node("LayerNormalization", {"x", "g"}, {"y"}), "axis", 1);
  nb.Output("y");
  m = nb.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<float> x2 = Ramp(8, 0.4f);
  EXPECT_THAT(RunOutput(*m, {{"x", x2}}),
              Pointwise(FloatNear(1e-5), LayerNormRows(x2, 4, {1, 1, 1, 1}, {0, 0, 0, 0}, 1e-5f)));
}

TEST(OnnxTensorOpsTest, LayerNormalizationErrors) {
  OnnxBuilder b;  // the Mean output is used
  b.Input("x", {2, 4}).Init("g", {4}, {1, 1, 1, 1});
  b.Node("LayerNormalization", {"x", "g"}, {"y", "mean"}, "ln");
  b.Node("Relu", {"mean"}, {"z"});
  b.Output("y").Output("z");
  std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("LayerNormalization node 'ln'"));
  EXPECT_THAT(e, HasSubstr("output 1 ('mean') is used"));

  OnnxBuilder s;  // a scale of the wrong size
  s.Input("x", {2, 4}).Init("g", {3}, {1, 1, 1});
  s.Node("LayerNormalization", {"x", "g"}, {"y"}, "ln");
  s.Output("y");
  e = ImportError(s);
  EXPECT_THAT(e, HasSubstr("LayerNormalization node 'ln'"));
  EXPECT_THAT(e, HasSubstr("the scale 'g' (F32 [3]) must be FLOAT of the normalized dims [4]"));
}

// Attention: softmax(q k^T) v with two activation MatMuls and a softmax over the last axis.
TEST(OnnxTensorOpsTest, AttentionMatMulsAndSoftmax) {
  OnnxBuilder b;
  b.Input("q", {2, 3, 4}).Input("k", {2, 4, 3}).Input("v", {2, 3, 2});
  b.Node("MatMul", {"q", "k"}, {"s"});
  OnnxBuilder::Int(b.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "v"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kMatMul, OpKind::kSoftmax, OpKind::kMatMul));
  EXPECT_EQ(m->graph.nodes()[1].attrs.axis, 2);
  const std::vector<float> q = Ramp(24, 0.3f), k = Ramp(24, 0.2f), v = Ramp(12, 1.f);
  std::vector<float> want;
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 3; ++i) {
      double s[3], sum = 0;
      for (int j = 0; j < 3; ++j) {
        s[j] = 0;
        for (int d = 0; d < 4; ++d) s[j] += q[(n * 3 + i) * 4 + d] * k[(n * 4 + d) * 3 + j];
      }
      const double top = std::max({s[0], s[1], s[2]});
      for (double& e : s) sum += (e = std::exp(e - top));
      for (int c = 0; c < 2; ++c) {
        double acc = 0;
        for (int j = 0; j < 3; ++j) acc += s[j] / sum * v[(n * 3 + j) * 2 + c];
        want.push_back(static_cast<float>(acc));
      }
    }
  }
  EXPECT_THAT(RunOutput(*m, {{"q", q}, {"k", k}, {"v", v}}), Pointwise(FloatNear(1e-5), want));
}

// torch.onnx's guard after the softmax of attention with a boolean mask: Where(IsNaN(p), c, p)
// is replace_nan(p, c). Row 1 is masked everywhere (-inf): NaN after the softmax, c after the
// guard. An IsNaN of a constant folds.
TEST(OnnxTensorOpsTest, WhereIsNaNGuardIsReplaceNan) {
  const float inf = INFINITY, nan = NAN;
  OnnxBuilder b;
  b.Input("x", {2, 3}).Init("mask", {2, 3}, {0, 0, -inf, -inf, -inf, -inf});
  b.Init("c", {}, {0.25f}).Init("folded", {3}, {nan, 1, 2});
  b.Node("Add", {"x", "mask"}, {"s"});
  OnnxBuilder::Int(b.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  b.Node("IsNaN", {"p"}, {"bad"});
  b.Node("Where", {"bad", "c", "p"}, {"g"});
  b.Node("IsNaN", {"folded"}, {"fbad"});
  b.Node("Where", {"fbad", "c", "folded"}, {"f"});  // {0.25, 1, 2}
  b.Node("Add", {"g", "f"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(OpsOf(m->graph)[2], OpKind::kUnary);
  EXPECT_EQ(m->graph.nodes()[2].attrs.unary, UnaryFn::kReplaceNan);
  EXPECT_EQ(m->graph.nodes()[2].attrs.alpha, 0.25f);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const float e = 1 / (1 + std::exp(-1.0f));  // softmax of {1, 2}: {1 - e, e}
  EXPECT_THAT(
      RunOutput(*m, {{"x", x}}),
      Pointwise(FloatNear(1e-6), std::vector<float>{1 - e + 0.25f, e + 1, 2, 0.5f, 1.25f, 2.25f}));
}

TEST(OnnxTensorOpsTest, WhereAndIsNaNOtherwiseAreUnsupported) {
  auto error = [](const std::string& cond_op, const std::vector<std::string>& where_in,
                  const std::string& out) {
    OnnxBuilder b;
    b.Input("x", {2, 3}).Input("z", {2, 3}).Init("c", {}, {0}).Init("two", {2}, {0, 1});
    b.Node(cond_op, {"x"}, {"cond"}, "isnan");
    if (!where_in.empty()) b.Node("Where", where_in, {"y"}, "where");
    b.Output(out);
    return ImportError(b);
  };
  constexpr char kOnly[] = "only Where(IsNaN(x), c, x) with a single value c";
  EXPECT_THAT(error("IsNaN", {"x", "c", "x"}, "y"), HasSubstr(kOnly));       // not IsNaN
  EXPECT_THAT(error("IsNaN", {"cond", "c", "z"}, "y"), HasSubstr(kOnly));    // another tensor
  EXPECT_THAT(error("IsNaN", {"cond", "two", "x"}, "y"), HasSubstr(kOnly));  // two values
  EXPECT_THAT(error("IsNaN", {"cond", "x", "x"}, "y"), HasSubstr("must be a constant"));
  EXPECT_THAT(error("IsNaN", {"cond", "c"}, "y"), HasSubstr("expects 3 inputs, got 2"));
  EXPECT_THAT(error("IsNaN", {}, "cond"), HasSubstr("is an IsNaN output (boolean)"));
  EXPECT_THAT(error("IsNaN", {"x", "cond", "x"}, "y"), HasSubstr(kOnly));
}

// A Linear layer on [N, T, K] (ViT, ConvNeXt): reshape, dense, the bias Add taken in as the
// dense's bias_add, reshape back.
TEST(OnnxTensorOpsTest, LinearOnRank3IsDenseWithItsBias) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6}, bias = {0.5f, -1};  // W^T [3, 2]
  OnnxBuilder b;
  b.Input("x", {2, 2, 3}).Init("wt", {3, 2}, w).Init("bias", {2}, bias);
  b.Node("MatMul", {"x", "wt"}, {"mm"}, "fc");
  b.Node("Add", {"mm", "bias"}, {"y"}, "fc_bias");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph),
              ElementsAre(OpKind::kReshape, OpKind::kDense, OpKind::kBiasAdd, OpKind::kReshape));
  EXPECT_EQ(OutputOf(*m).name, "y");
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 2, 2));
  EXPECT_THAT(WeightFloats(*m, "wt"), ElementsAre(1, 3, 5, 2, 4, 6));
  const std::vector<float> x = Ramp(12, 1.f);
  std::vector<float> want;
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 2; ++j) {
      float acc = bias[j];
      for (int k = 0; k < 3; ++k) acc += x[r * 3 + k] * w[k * 2 + j];
      want.push_back(acc);
    }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-5), want));

  OnnxBuilder two;  // the MatMul output read twice: the Add stays a binary add
  two.Input("x", {2, 2, 3}).Init("wt", {3, 2}, w).Init("bias", {2}, bias);
  two.Node("MatMul", {"x", "wt"}, {"mm"});
  two.Node("Add", {"mm", "bias"}, {"a"});
  two.Node("Mul", {"a", "mm"}, {"y"});
  two.Output("y");
  m = two.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kReshape, OpKind::kDense, OpKind::kReshape,
                                           OpKind::kBinary, OpKind::kBinary));
}

TEST(OnnxTensorOpsTest, MatMulOfAVectorIsUnsupported) {
  OnnxBuilder b;
  b.Input("a", {2, 3}).Input("v", {3});
  b.Node("MatMul", {"a", "v"}, {"y"}, "mv");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("MatMul node 'mv'"));
  EXPECT_THAT(e, HasSubstr("A [2, 3] x B [3]: a 1-D operand"));
}

TEST(OnnxTensorOpsTest, SoftmaxAxes) {
  OnnxBuilder b(13);
  b.Input("x", {2, 3, 2});
  OnnxBuilder::Int(b.Node("Softmax", {"x"}, {"y"}), "axis", 1);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph.nodes()[0].attrs.axis, 1);
  const std::vector<float> x = Ramp(12, 0.5f);
  std::vector<float> want(12);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 2; ++k) {
      double sum = 0;
      for (int c = 0; c < 3; ++c) sum += std::exp(x[(n * 3 + c) * 2 + k]);
      for (int c = 0; c < 3; ++c) {
        want[(n * 3 + c) * 2 + k] = static_cast<float>(std::exp(x[(n * 3 + c) * 2 + k]) / sum);
      }
    }
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), Pointwise(FloatNear(1e-6), want));

  OnnxBuilder old(11);  // before opset 13 axis 1 of a 3-D tensor flattens [3, 2]: refused
  old.Input("x", {2, 3, 2});
  old.Node("Softmax", {"x"}, {"y"}, "sm");
  old.Output("y");
  const std::string e = ImportError(old);
  EXPECT_THAT(e, HasSubstr("Softmax node 'sm'"));
  EXPECT_THAT(e, HasSubstr("attribute 'axis' = 1 on [2, 3, 2] at opset 11"));
}

// DenseNet normalizes a concatenation: a BatchNormalization with no conv to fold into is a
// per-channel multiply and a bias_add.
TEST(OnnxTensorOpsTest, StandaloneBatchNormalization) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2}).Input("z", {1, 1, 2, 2});
  b.Init("gamma", {2}, {2, 0.5f}).Init("beta", {2}, {0.1f, -0.2f});
  b.Init("mean", {2}, {1, -1}).Init("var", {2}, {3, 0.25f});
  OnnxBuilder::Int(b.Node("Concat", {"x", "z"}, {"cat"}), "axis", 1);
  OnnxBuilder::Float(b.Node("BatchNormalization", {"cat", "gamma", "beta", "mean", "var"}, {"bn"}),
                     "epsilon", 1.f);
  b.Node("Relu", {"bn"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph),
              ElementsAre(OpKind::kConcat, OpKind::kBinary, OpKind::kBiasAdd, OpKind::kRelu));
  const std::vector<float> x = {1, 2, 3, 4}, z = {-1, 0, 1, 2};
  std::vector<float> want;
  for (int i = 0; i < 8; ++i) {
    const int c = i / 4;
    const float v = c == 0 ? x[i] : z[i - 4];
    const float mean = c == 0 ? 1.f : -1.f, var = c == 0 ? 3.f : 0.25f;
    const float g = c == 0 ? 2.f : 0.5f, be = c == 0 ? 0.1f : -0.2f;
    want.push_back(std::max(0.f, g * (v - mean) / std::sqrt(var + 1) + be));
  }
  EXPECT_THAT(RunOutput(*m, {{"x", x}, {"z", z}}), Pointwise(FloatNear(1e-6), want));
}

// The corpus' model-shaped graphs import with a static batch and run on the reference forward.
TEST(OnnxTensorOpsTest, CorpusModelsImportAndRun) {
  struct Case {
    const char* name;
    OnnxBuilder b;
    std::vector<OpKind> ops;
  };
  const std::vector<Case> cases = {
      {"vit",
       testing::VitBlockModel(),
       {OpKind::kConv2d,    OpKind::kBiasAdd, OpKind::kReshape,   OpKind::kTranspose,
        OpKind::kConcat,    OpKind::kBinary,  OpKind::kLayerNorm, OpKind::kReshape,
        OpKind::kDense,     OpKind::kBiasAdd, OpKind::kReshape,   OpKind::kSlice,
        OpKind::kSlice,     OpKind::kSlice,   OpKind::kTranspose, OpKind::kMatMul,
        OpKind::kBinary,    OpKind::kSoftmax, OpKind::kMatMul,    OpKind::kAdd,
        OpKind::kLayerNorm, OpKind::kReshape, OpKind::kDense,     OpKind::kReshape,
        OpKind::kBinary,    OpKind::kUnary,   OpKind::kBiasAdd,   OpKind::kBinary,
        OpKind::kBinary,    OpKind::kAdd,     OpKind::kSlice,     OpKind::kFlatten,
        OpKind::kDense,     OpKind::kBiasAdd}},
      {"se", testing::SqueezeExciteModel(), {}},
      {"dense", testing::DenseConcatModel(), {}},
      {"fold", testing::FoldArithmeticModel(), {}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<OnnxModel> m = c.b.Import({.batch = 2});
    ASSERT_TRUE(m.ok()) << c.name << ": " << m.status();
    if (!c.ops.empty()) {
      EXPECT_EQ(OpsOf(m->graph), c.ops) << c.name;
    }
    const TensorDesc& in = m->graph.tensor(m->graph.TensorsOfKind(TensorKind::kInput).at(0));
    const std::vector<float> y =
        RunOutput(*m, {{in.name, Ramp(static_cast<size_t>(in.NumElements()), 0.1f)}});
    EXPECT_EQ(static_cast<int64_t>(y.size()), OutputOf(*m).NumElements()) << c.name;
    for (float v : y) EXPECT_TRUE(std::isfinite(v)) << c.name;
  }
  absl::StatusOr<OnnxModel> fold = testing::FoldArithmeticModel().Import({.batch = 1});
  ASSERT_TRUE(fold.ok()) << fold.status();
  EXPECT_THAT(WeightFloats(*fold, "wf"), ElementsAre(1, 1, 3, 3));
  // y = min(max(concat(x[1:] * w[1:], x[0] * w[0]), x), w).
  EXPECT_THAT(RunOutput(*fold, {{"x", {-1, 2, 0.5f, -4}}}), ElementsAre(1, 1, 0.5f, -1));
}

}  // namespace
}  // namespace tunejit

// Constant folding at import (onnx/fold.h): the shape arithmetic PyTorch writes around a dynamic
// batch folds away once --batch makes shapes static; folded constants keep their ONNX names;
// integer and float evaluation; errors name the node and what went wrong.
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/import.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/reference_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::OnnxBuilder;
using testing::OpsOf;
using testing::OutputOf;
using ::testing::Pointwise;
using testing::Ramp;
using testing::RunOutput;
using testing::WeightFloats;

// x.reshape(n, c, h * w) of a dynamic-batch export: Shape -> Gather -> Mul -> Unsqueeze -> Concat
// -> Reshape folds to the shape [3, 4, 6], so one reshape node is left.
TEST(OnnxFoldTest, ShapeChainFoldsToOneReshape) {
  OnnxBuilder b;
  b.Input("x", {-1, 4, 2, 3});
  b.InitI64("i0", {}, {0}).InitI64("i2", {}, {2}).InitI64("i3", {}, {3});
  b.InitI64("axes0", {1}, {0}).InitI64("c4", {1}, {4});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Gather", {"s", "i0"}, {"n"});
  b.Node("Gather", {"s", "i2"}, {"h"});
  b.Node("Gather", {"s", "i3"}, {"w"});
  b.Node("Mul", {"h", "w"}, {"hw"});
  b.Node("Unsqueeze", {"n", "axes0"}, {"n1"});
  b.Node("Unsqueeze", {"hw", "axes0"}, {"hw1"});
  OnnxBuilder::Int(b.Node("Concat", {"n1", "c4", "hw1"}, {"shape"}), "axis", 0);
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import({.batch = 3});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kReshape));
  EXPECT_THAT(m->graph.nodes()[0].attrs.shape, ElementsAre(3, 4, 6));
  EXPECT_THAT(m->graph.TensorsOfKind(TensorKind::kWeight), IsEmpty());
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(3, 4, 6));
  const std::vector<float> x = Ramp(72);
  EXPECT_EQ(RunOutput(*m, {{"x", x}}), x);
}

// ViT's class token: class_token.expand(n, -1, -1), which PyTorch writes as Where(size == -1,
// 1, size) over a shape from Shape(x), then Concat with the activation.
TEST(OnnxFoldTest, ExpandedClassTokenKeepsItsValueName) {
  OnnxBuilder b;
  b.Input("x", {-1, 3, 4}).Init("cls", {1, 1, 4}, {1, 2, 3, 4});
  b.InitI64("i0", {}, {0}).InitI64("axes0", {1}, {0}).InitI64("neg1", {1}, {-1});
  b.InitI64("three", {1}, {3});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Gather", {"s", "i0"}, {"n"});
  b.Node("Unsqueeze", {"n", "axes0"}, {"n1"});
  OnnxBuilder::Int(b.Node("Concat", {"n1", "neg1", "neg1"}, {"size"}), "axis", 0);
  b.Node("Equal", {"size", "neg1"}, {"is_neg"});
  onnx::NodeProto& ones = b.Node("ConstantOfShape", {"three"}, {"ones"});
  onnx::AttributeProto* v = ones.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int64_data(1);
  b.Node("Where", {"is_neg", "ones", "size"}, {"expand_shape"});
  b.Node("Expand", {"cls", "expand_shape"}, {"cls_expanded"});
  OnnxBuilder::Int(b.Node("Concat", {"cls_expanded", "x"}, {"y"}), "axis", 1);
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import({.batch = 2});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kConcat));
  const TensorDesc& token = m->graph.tensor(m->graph.nodes()[0].inputs[0]);
  EXPECT_EQ(token.name, "cls_expanded");
  EXPECT_EQ(token.kind, TensorKind::kWeight);
  EXPECT_THAT(token.shape, ElementsAre(2, 1, 4));
  EXPECT_THAT(WeightFloats(*m, "cls_expanded"), ElementsAre(1, 2, 3, 4, 1, 2, 3, 4));
  const std::vector<float> x = Ramp(24);
  const std::vector<float> y = RunOutput(*m, {{"x", x}});
  ASSERT_EQ(y.size(), 32u);
  for (int n = 0; n < 2; ++n) {
    for (int t = 0; t < 4; ++t) {
      for (int c = 0; c < 4; ++c) {
        const float want = t == 0 ? c + 1.f : x[(n * 3 + t - 1) * 4 + c];
        EXPECT_EQ(y[(n * 4 + t) * 4 + c], want) << n << " " << t << " " << c;
      }
    }
  }
}

// The attention scale 1 / sqrt(head size) of PyTorch's scaled_dot_product_attention export:
// Shape(q, start = -1) -> Cast -> Sqrt -> Div, a single weight.
TEST(OnnxFoldTest, AttentionScaleFoldsToAWeight) {
  OnnxBuilder b;
  b.Input("q", {2, 3, 8}).Init("one", {1}, {1.f});
  OnnxBuilder::Int(b.Node("Shape", {"q"}, {"last"}), "start", -1);
  OnnxBuilder::Int(b.Node("Cast", {"last"}, {"e"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Sqrt", {"e"}, {"r"});
  b.Node("Div", {"one", "r"}, {"scale"});
  b.Node("Mul", {"q", "scale"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kBinary));
  const float s = 1 / std::sqrt(8.f);
  EXPECT_THAT(WeightFloats(*m, "scale"), Pointwise(FloatNear(1e-7), std::vector<float>{s}));
  const std::vector<float> q = Ramp(48);
  std::vector<float> want(q);
  for (float& v : want) v *= s;
  EXPECT_THAT(RunOutput(*m, {{"q", q}}), Pointwise(FloatNear(1e-7), want));
}

// Integer arithmetic is exact: Div truncates, Mod (fmod 0) takes the divisor's sign, Pow, Min,
// Max, Neg, Abs; Range, Slice (negative start, INT64_MAX end), Squeeze and Size fold too.
TEST(OnnxFoldTest, IntegerArithmeticFoldsExactly) {
  OnnxBuilder b;
  b.Input("x", {2, 4});
  b.InitI64("a", {4}, {7, -7, 9, 2}).InitI64("d", {4}, {2, 2, 4, -3}).InitI64("two", {}, {2});
  b.Node("Div", {"a", "d"}, {"q"});     // [3, -3, 2, 0]
  b.Node("Mod", {"a", "d"}, {"r"});     // [1, 1, 1, -1]
  b.Node("Pow", {"d", "two"}, {"p"});   // [4, 4, 16, 9]
  b.Node("Neg", {"q"}, {"nq"});         // [-3, 3, -2, 0]
  b.Node("Abs", {"nq"}, {"aq"});        // [3, 3, 2, 0]
  b.Node("Max", {"r", "aq"}, {"mx"});   // [3, 3, 2, 0]
  b.Node("Min", {"p", "mx"}, {"mn"});   // [3, 3, 2, 0]
  b.Node("Add", {"mn", "p"}, {"sum"});  // [7, 7, 18, 9]
  OnnxBuilder::Int(b.Node("Cast", {"sum"}, {"w"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Mul", {"x", "w"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(WeightFloats(*m, "w"), ElementsAre(7, 7, 18, 9));

  OnnxBuilder r;  // Range(0, 5, 2) = [0, 2, 4] -> [2, 4]; its Size 2: the shape [-1, 2, 2, 4]
  r.Input("x", {2, 16});
  r.InitI64("zero", {}, {0}).InitI64("five", {}, {5}).InitI64("step", {}, {2});
  r.InitI64("start", {1}, {-2}).InitI64("end", {1}, {LLONG_MAX}).InitI64("ax", {1}, {0});
  r.InitI64("lead", {1}, {-1});
  r.Node("Range", {"zero", "five", "step"}, {"range"});
  r.Node("Slice", {"range", "start", "end"}, {"tail"});
  r.Node("Size", {"tail"}, {"count"});  // 2
  r.Node("Unsqueeze", {"count", "ax"}, {"count1"});
  OnnxBuilder::Int(r.Node("Concat", {"lead", "count1", "tail"}, {"shape"}), "axis", 0);
  r.Node("Reshape", {"x", "shape"}, {"y"});
  r.Output("y");
  m = r.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 2, 2, 4));
}

// Constant weights transformed in the file (an export without constant folding): Transpose,
// Split and Squeeze of initializers fold, and the dense sees the final matrix.
TEST(OnnxFoldTest, WeightTransformsFold) {
  OnnxBuilder b(13);
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // [2, 2, 3]
  b.Input("x", {1, 3}).Init("w", {2, 2, 3}, w).InitI64("sizes", {2}, {1, 1});
  b.InitI64("ax0", {1}, {0});
  OnnxBuilder::Int(b.Node("Split", {"w", "sizes"}, {"w0", "w1"}), "axis", 0);
  b.Node("Squeeze", {"w1", "ax0"}, {"w1s"});  // [2, 3]: 7..12
  b.Node("Transpose", {"w1s"}, {"wt"});       // [3, 2]
  b.Node("MatMul", {"x", "wt"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kDense));
  EXPECT_THAT(WeightFloats(*m, "wt"), ElementsAre(7, 8, 9, 10, 11, 12));  // [N, K] again
  EXPECT_THAT(RunOutput(*m, {{"x", {1, 2, 3}}}), ElementsAre(50, 68));
}

// ---- Errors.

TEST(OnnxFoldTest, IntegerDivisionByZeroNamesTheNode) {
  OnnxBuilder b;
  b.Input("x", {2, 4}).InitI64("a", {2}, {8, 1}).InitI64("z", {2}, {2, 0});
  b.Node("Div", {"a", "z"}, {"q"}, "div");
  b.Node("Reshape", {"x", "q"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("Div node 'div'"));
  EXPECT_THAT(m.status().message(), HasSubstr("division by zero"));
}

TEST(OnnxFoldTest, CastToAnUnsupportedTypeNamesTheAttribute) {
  OnnxBuilder b;
  b.Input("x", {2}).Init("c", {2}, {1, 2});
  OnnxBuilder::Int(b.Node("Cast", {"c"}, {"h"}, "cast"), "to", onnx::TensorProto::FLOAT16);
  b.Node("Mul", {"x", "h"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(), HasSubstr("Cast node 'cast'"));
  EXPECT_THAT(m.status().message(), HasSubstr("attribute 'to' = FLOAT16"));
}

TEST(OnnxFoldTest, ConstantOnlyOpOnAnActivationIsUnsupported) {
  OnnxBuilder b;
  b.Input("x", {2}).Init("c", {2}, {1, 2});
  b.Node("Equal", {"x", "c"}, {"y"}, "eq");
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(), HasSubstr("Equal node 'eq'"));
  EXPECT_THAT(m.status().message(), HasSubstr("input 0 ('x') is an activation"));
}

TEST(OnnxFoldTest, HugeFoldedConstantIsRefused) {
  OnnxBuilder b;
  b.Input("x", {2}).InitI64("s", {2}, {1 << 20, 1 << 20});
  b.Node("ConstantOfShape", {"s"}, {"big"}, "fill");
  b.Node("Mul", {"x", "big"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("ConstantOfShape node 'fill'"));
  EXPECT_THAT(m.status().message(), HasSubstr("over what constant folding may allocate"));
}

TEST(OnnxFoldTest, GatherIndexOutOfRangeNamesTheIndex) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).InitI64("i", {}, {5});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Gather", {"s", "i"}, {"g"}, "gather");
  b.Node("Reshape", {"x", "g"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("Gather node 'gather'"));
  EXPECT_THAT(m.status().message(), HasSubstr("index 5 is out of range for axis 0 of [2]"));
}

TEST(OnnxFoldTest, UnsqueezeAxesFormFollowsTheOpset) {
  OnnxBuilder b(11);  // opset 11: axes are an attribute
  b.Input("x", {2, 3}).InitI64("k", {}, {6});
  OnnxBuilder::Ints(b.Node("Unsqueeze", {"k"}, {"k1"}), "axes", {0});
  b.Node("Reshape", {"x", "k1"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(6));

  OnnxBuilder c(13);  // opset 13: the attribute is an error, not silently used
  c.Input("x", {2, 3}).InitI64("k", {}, {6});
  OnnxBuilder::Ints(c.Node("Unsqueeze", {"k"}, {"k1"}, "unsq"), "axes", {0});
  c.Node("Reshape", {"x", "k1"}, {"y"});
  c.Output("y");
  m = c.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("Unsqueeze node 'unsq'"));
  EXPECT_THAT(m.status().message(), HasSubstr("attribute 'axes' is not valid from opset 13"));
}

}  // namespace
}  // namespace tunejit

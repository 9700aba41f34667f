// The ops Swin and Swin V2 bring (torchvision's swin_t / swin_v2_t): Pad (constant mode, as
// concats of the fill value), Expand of an activation, ReduceL2, and the folds of ScatterND,
// MatMul and Clip on constants; each against hand-computed values through the CPU reference, and
// the forms that are refused named with what is supported.
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
using ::testing::FloatNear;
using ::testing::HasSubstr;
using testing::OnnxBuilder;
using testing::OpsOf;
using testing::OutputOf;
using ::testing::Pointwise;
using testing::RunOutput;

// x [1, 2, 2] padded by pads `p` with `value`.
OnnxBuilder PadModel(const std::vector<int64_t>& p, const std::string& mode = "constant") {
  OnnxBuilder b;
  b.Input("x", {1, 2, 2}).InitI64("pads", {static_cast<int64_t>(p.size())}, p);
  b.Init("value", {}, {7});
  onnx::NodeProto& pad = b.Node("Pad", {"x", "pads", "value"}, {"padded"});
  if (mode != "constant") OnnxBuilder::String(pad, "mode", mode);
  b.Node("Relu", {"padded"}, {"y"});
  b.Output("y");
  return b;
}

TEST(WindowOpsImportTest, PadIsConcatsOfTheFillValue) {
  // One row before axis 1, one column after axis 2.
  absl::StatusOr<OnnxModel> m = PadModel({0, 1, 0, 0, 0, 1}).Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kConcat, OpKind::kConcat, OpKind::kRelu));
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(1, 3, 3));
  EXPECT_EQ(RunOutput(*m, {{"x", {1, 2, 3, 4}}}), (std::vector<float>{7, 7, 7, 1, 2, 7, 3, 4, 7}));
  // No padding: the input itself.
  absl::StatusOr<OnnxModel> none = PadModel({0, 0, 0, 0, 0, 0}).Import();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(OpsOf(none->graph), ElementsAre(OpKind::kRelu));
}

TEST(WindowOpsImportTest, PadRefusesOtherModesAndCrops) {
  EXPECT_THAT(testing::ImportError(PadModel({0, 1, 0, 0, 0, 0}, "reflect")),
              HasSubstr("only mode 'constant' with pads >= 0"));
  EXPECT_THAT(testing::ImportError(PadModel({0, -1, 0, 0, 0, 0})),
              HasSubstr("only mode 'constant' with pads >= 0"));
  EXPECT_THAT(testing::ImportError(PadModel({0, 1, 0, 0})), HasSubstr("needs 6"));
}

// F.normalize(x, dim=-1): x / clamp(||x||, eps).expand_as(x) (opset 18: axes as an input).
TEST(WindowOpsImportTest, ReduceL2AndExpandOfAnActivation) {
  OnnxBuilder b(18);
  b.Input("x", {2, 3}).InitI64("axes", {1}, {1}).InitI64("shape", {2}, {2, 3});
  b.Node("ReduceL2", {"x", "axes"}, {"norm"});
  b.Node("Expand", {"norm", "shape"}, {"wide"});
  b.Node("Div", {"x", "wide"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<float> y = RunOutput(*m, {{"x", {3, 4, 0, 1, 2, 2}}});
  EXPECT_THAT(
      y, Pointwise(FloatNear(1e-6), std::vector<float>{0.6f, 0.8f, 0, 1 / 3.f, 2 / 3.f, 2 / 3.f}));
}

// Swin's shifted-window mask: a zeros image with regions numbered by ScatterND.
TEST(WindowOpsImportTest, ScatterNDOfConstantsFolds) {
  OnnxBuilder b;
  b.Input("x", {2, 3});
  b.Init("data", {2, 3}, {0, 0, 0, 0, 0, 0});
  b.InitI64("idx", {2, 1}, {1, 0});
  b.Init("updates", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.Node("ScatterND", {"data", "idx", "updates"}, {"mask"});
  b.Node("Add", {"x", "mask"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunOutput(*m, {{"x", {0, 0, 0, 0, 0, 0}}}), (std::vector<float>{4, 5, 6, 1, 2, 3}));
  b.model().mutable_graph()->mutable_initializer(2)->set_raw_data(std::string(32, '\0'));
  b.model().mutable_graph()->mutable_initializer(2)->clear_dims();
  b.model().mutable_graph()->mutable_initializer(2)->add_dims(8);
  EXPECT_THAT(testing::ImportError(b), HasSubstr("updates F32 [8]: expected F32 [2, 3]"));
}

// Swin V2's continuous position bias: an MLP on a constant table, and its clamped logit scale.
TEST(WindowOpsImportTest, MatMulAndClipOfConstantsFold) {
  OnnxBuilder b;
  b.Input("x", {2, 2});
  b.Init("table", {1, 2, 3}, {1, 2, 3, 4, 5, 6}).Init("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.Init("lo", {}, {0}).Init("hi", {}, {8});
  b.Node("MatMul", {"table", "w"}, {"mlp"});  // [1, 2, 2]: [[4, 5], [10, 11]]
  b.Node("Clip", {"mlp", "lo", "hi"}, {"clamped"});
  b.Node("Add", {"x", "clamped"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunOutput(*m, {{"x", {0, 0, 0, 0}}}), (std::vector<float>{4, 5, 8, 8}));
  OnnxBuilder bad;
  bad.Input("x", {2, 2}).Init("a", {2, 3}, {1, 2, 3, 4, 5, 6}).Init("b", {2, 2}, {1, 0, 0, 1});
  bad.Node("MatMul", {"a", "b"}, {"c"});
  bad.Node("Add", {"x", "c"}, {"y"});
  bad.Output("y");
  EXPECT_THAT(testing::ImportError(bad), HasSubstr("[..., M, K] x [..., K, N]"));
}

}  // namespace
}  // namespace tunejit

// The pieces decoder transformers (GPT-2, OPT, Llama as transformers exports them) add to an
// encoder's graph, folded at import: a causal mask from Trilu of a table of ones, position ids as
// the CumSum of an all-ones attention mask, rotary tables by Cos and Sin of constant angles, and a
// Reshape of the token ids that keeps their shape. Each is checked against hand-computed values
// through the CPU reference; bad inputs name the node and what is supported.
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
using testing::ImportError;
using testing::OnnxBuilder;
using testing::OpsOf;
using ::testing::Pointwise;
using testing::RunOutput;

// x [1, 3, 3] + the causal mask GPT-2 builds: tril of ones (Trilu upper = 0), then
// Where(mask == 0, -1e9, 0). The mask folds to a weight; one add node is left.
TEST(OnnxDecoderTest, CausalMaskFromTriluFolds) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 3}).Init("ones", {3, 3}, std::vector<float>(9, 1.0f));
  b.Init("zero", {}, {0.0f}).Init("neg", {}, {-1e9f});
  OnnxBuilder::Int(b.Node("Trilu", {"ones"}, {"tril"}), "upper", 0);
  b.Node("Equal", {"tril", "zero"}, {"masked"});
  b.Node("Where", {"masked", "neg", "zero"}, {"mask"});
  b.Node("Add", {"x", "mask"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph.nodes().size(), 1u);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_THAT(RunOutput(*m, {{"x", x}}), ElementsAre(1, -1e9f, -1e9f, 4, 5, -1e9f, 7, 8, 9));
}

// Trilu's k (input 1) moves the diagonal; upper = 1 (the default) keeps j - i >= k.
TEST(OnnxDecoderTest, TriluDiagonalsAndTheUpperTriangle) {
  for (const auto& [upper, k, want] : std::vector<std::tuple<int, int64_t, std::vector<float>>>{
           {1, 0, {1, 2, 3, 0, 5, 6, 0, 0, 9}},
           {1, 1, {0, 2, 3, 0, 0, 6, 0, 0, 0}},
           {0, -1, {0, 0, 0, 4, 0, 0, 7, 8, 0}}}) {
    OnnxBuilder b;
    b.Input("x", {3, 3}).Init("t", {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}).InitI64("k", {}, {k});
    OnnxBuilder::Int(b.Node("Trilu", {"t", "k"}, {"tri"}), "upper", upper);
    b.Node("Add", {"x", "tri"}, {"y"});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(RunOutput(*m, {{"x", std::vector<float>(9, 0.0f)}}), ElementsAreArray(want))
        << "upper " << upper << " k " << k;
  }
}

// OPT's position ids: cumsum(mask, 1) * mask - 1 over an all-ones int64 mask [2, 4], offset by
// 2 and looking up a table. The ids fold; the lookup folds into a weight added to x.
TEST(OnnxDecoderTest, PositionIdsFromCumSumFold) {
  OnnxBuilder b;
  b.Input("x", {2, 4, 1}).InitI64("mask", {2, 4}, std::vector<int64_t>(8, 1));
  b.InitI64("axis", {}, {1}).InitI64("one", {}, {1}).InitI64("two", {}, {2});
  std::vector<float> table(6);
  for (int i = 0; i < 6; ++i) table[i] = 10.0f * i;
  b.Init("table", {6, 1}, table);
  b.Node("CumSum", {"mask", "axis"}, {"cum"});
  b.Node("Mul", {"cum", "mask"}, {"masked"});
  b.Node("Sub", {"masked", "one"}, {"pos"});
  b.Node("Add", {"pos", "two"}, {"ids"});
  b.Node("Gather", {"table", "ids"}, {"pe"});
  b.Node("Add", {"x", "pe"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph.nodes().size(), 1u);
  EXPECT_THAT(RunOutput(*m, {{"x", std::vector<float>(8, 0.5f)}}),
              ElementsAre(20.5f, 30.5f, 40.5f, 50.5f, 20.5f, 30.5f, 40.5f, 50.5f));
}

// exclusive and reverse, on floats along the last axis.
TEST(OnnxDecoderTest, CumSumExclusiveAndReverse) {
  for (const auto& [exclusive, reverse, want] :
       std::vector<std::tuple<int, int, std::vector<float>>>{{0, 0, {1, 3, 6, 4, 9, 15}},
                                                             {1, 0, {0, 1, 3, 0, 4, 9}},
                                                             {0, 1, {6, 5, 3, 15, 11, 6}},
                                                             {1, 1, {5, 3, 0, 11, 6, 0}}}) {
    OnnxBuilder b;
    b.Input("x", {2, 3}).Init("t", {2, 3}, {1, 2, 3, 4, 5, 6}).InitI64("axis", {}, {-1});
    onnx::NodeProto& n = b.Node("CumSum", {"t", "axis"}, {"c"});
    OnnxBuilder::Int(n, "exclusive", exclusive);
    OnnxBuilder::Int(n, "reverse", reverse);
    b.Node("Add", {"x", "c"}, {"y"});
    b.Output("y");
    absl::StatusOr<OnnxModel> m = b.Import();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(RunOutput(*m, {{"x", std::vector<float>(6, 0.0f)}}), ElementsAreArray(want))
        << "exclusive " << exclusive << " reverse " << reverse;
  }
}

// Llama's rotary tables: cos and sin of constant angles, multiplied into the activation.
TEST(OnnxDecoderTest, RotaryTablesFromCosAndSinFold) {
  OnnxBuilder b;
  b.Input("x", {1, 4}).Init("angle", {1, 4}, {0.0f, 0.5f, 1.0f, 2.0f});
  b.Node("Cos", {"angle"}, {"cos"});
  b.Node("Sin", {"angle"}, {"sin"});
  b.Node("Mul", {"x", "cos"}, {"xc"});
  b.Node("Add", {"xc", "sin"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<float> want;
  for (float a : {0.0f, 0.5f, 1.0f, 2.0f}) want.push_back(2.0f * std::cos(a) + std::sin(a));
  EXPECT_THAT(RunOutput(*m, {{"x", std::vector<float>(4, 2.0f)}}),
              Pointwise(FloatNear(1e-6f), want));
}

// GPT-2's input_ids.view(-1, seq): the ids themselves. Another shape is refused, naming the node
// and the shapes.
TEST(OnnxDecoderTest, ReshapeOfTokenIdsKeepingTheirShapeIsTheIds) {
  OnnxBuilder b;
  b.InputI64("ids", {2, 3}).Init("table", {5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  b.InitI64("shape", {2}, {-1, 3});
  b.Node("Reshape", {"ids", "shape"}, {"ids2"}, "view");
  b.Node("Gather", {"table", "ids2"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kGather));
  EXPECT_THAT(RunOutput(*m, {{"ids", {4, 0, 1, 2, 3, 4}}}),
              ElementsAre(8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9));

  OnnxBuilder flat;
  flat.InputI64("ids", {2, 3}).Init("table", {5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  flat.InitI64("shape", {1}, {6});
  flat.Node("Reshape", {"ids", "shape"}, {"ids2"}, "flatten_ids");
  flat.Node("Gather", {"table", "ids2"}, {"y"});
  flat.Output("y");
  const std::string e = ImportError(flat);
  EXPECT_THAT(e, HasSubstr("Reshape node 'flatten_ids'"));
  EXPECT_THAT(e, HasSubstr("from [2, 3] to [6]"));
  EXPECT_THAT(e, HasSubstr("only one that keeps their shape"));
}

TEST(OnnxDecoderTest, BadTriluAndCumSumNameTheNode) {
  OnnxBuilder trilu;
  trilu.Input("x", {3}).Init("t", {3}, {1, 2, 3});
  trilu.Node("Trilu", {"t"}, {"tri"}, "tri_node");
  trilu.Node("Add", {"x", "tri"}, {"y"});
  trilu.Output("y");
  EXPECT_THAT(ImportError(trilu), HasSubstr("Trilu node 'tri_node'"));
  EXPECT_THAT(ImportError(trilu), HasSubstr("needs rank >= 2"));

  OnnxBuilder cumsum;
  cumsum.Input("x", {2, 3}).Init("t", {2, 3}, {1, 2, 3, 4, 5, 6}).InitI64("axis", {}, {2});
  cumsum.Node("CumSum", {"t", "axis"}, {"c"}, "cum_node");
  cumsum.Node("Add", {"x", "c"}, {"y"});
  cumsum.Output("y");
  EXPECT_THAT(ImportError(cumsum), HasSubstr("CumSum node 'cum_node'"));
  EXPECT_THAT(ImportError(cumsum), HasSubstr("axis must be one value in [-2, 2)"));
}

}  // namespace
}  // namespace tunejit

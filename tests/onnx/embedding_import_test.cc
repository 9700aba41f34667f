// Token ids in the importer: int64 graph inputs, a Gather of a constant table by them (an
// embedding lookup: a gather node, ids read on the device), GatherElements folded, and a BERT
// encoder layer as PyTorch exports transformers' BertModel; each bad input's error names the node
// and what is supported.
#include <cmath>
#include <string>
#include <vector>

#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/import.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/reference_util.h"
#include "tests/onnx/tensor_corpus.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using testing::ImportError;
using testing::OnnxBuilder;
using testing::OpsOf;
using testing::OutputOf;
using ::testing::Pointwise;
using testing::Ramp;
using testing::RunOutput;

// ids [2, 3] into a table of 5 rows of 4 -> y [2, 3, 4].
OnnxBuilder EmbeddingModel() {
  OnnxBuilder b;
  b.InputI64("ids", {2, 3}).Init("table", {5, 4}, Ramp(20, 0.1f));
  b.Node("Gather", {"table", "ids"}, {"y"}, "embed");
  b.Output("y");
  return b;
}

TEST(OnnxEmbeddingTest, GatherOfATableByTokenIdsIsAGatherNode) {
  absl::StatusOr<OnnxModel> m = EmbeddingModel().Import();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kGather));
  const TensorDesc& ids = m->graph.tensor(m->graph.TensorsOfKind(TensorKind::kInput).at(0));
  EXPECT_EQ(ids.dtype, DType::kI64);
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 3, 4));
  // Ids (as floats for the reference forward): in range, counted from the end (-1: row 4), and
  // out of range both ways (clamped to rows 4 and 0).
  const std::vector<float> table = Ramp(20, 0.1f);
  const std::vector<int> rows = {0, 3, 4, 4, 4, 0};
  std::vector<float> want;
  for (int r : rows) want.insert(want.end(), table.begin() + 4 * r, table.begin() + 4 * r + 4);
  EXPECT_THAT(RunOutput(*m, {{"ids", {0, 3, -1, 4, 99, -6}}}), ElementsAreArray(want));
}

TEST(OnnxEmbeddingTest, Int64InputReadByAnotherOpIsUnsupported) {
  OnnxBuilder b;
  b.InputI64("ids", {2, 3});
  b.Node("Relu", {"ids"}, {"y"}, "relu");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Relu node 'relu'"));
  EXPECT_THAT(e, HasSubstr("'ids' is INT64"));
  EXPECT_THAT(e, HasSubstr("only a Gather of a constant table"));
}

// transformers' export with an attention mask input: its Cast to BOOL is refused for the int64
// input it reads, with what to do instead.
TEST(OnnxEmbeddingTest, AttentionMaskInputIsUnsupportedWithTheWayOut) {
  OnnxBuilder b;
  b.InputI64("attention_mask", {2, 3});
  OnnxBuilder::Int(b.Node("Cast", {"attention_mask"}, {"y"}, "cast"), "to",
                   onnx::TensorProto::BOOL);
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Cast node 'cast'"));
  EXPECT_THAT(e, HasSubstr("'attention_mask' is INT64"));
  EXPECT_THAT(e, HasSubstr("export with input_ids only"));
}

TEST(OnnxEmbeddingTest, OtherInputTypesAreUnsupported) {
  OnnxBuilder b;
  b.Input("ids", {2, 3}, onnx::TensorProto::INT32).Init("table", {5, 4}, Ramp(20));
  b.Node("Gather", {"table", "ids"}, {"y"});
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("input 'ids' has element type INT32"));
  EXPECT_THAT(e, HasSubstr("only FLOAT (float32) inputs and INT64 ones"));
}

TEST(OnnxEmbeddingTest, GatherOfATableOnAxis1IsUnsupported) {
  OnnxBuilder b = EmbeddingModel();
  OnnxBuilder::Int(*b.model().mutable_graph()->mutable_node(0), "axis", 1);
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Gather node 'embed'"));
  EXPECT_THAT(e, HasSubstr("axis 1 of the constant table [5, 4]"));
  EXPECT_THAT(e, HasSubstr("only axis 0 (an embedding lookup)"));
}

TEST(OnnxEmbeddingTest, FloatIndicesOfATableAreUnsupported) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Init("table", {5, 4}, Ramp(20));
  b.Node("Gather", {"table", "x"}, {"y"}, "embed");
  b.Output("y");
  const std::string e = ImportError(b);
  EXPECT_THAT(e, HasSubstr("Gather node 'embed'"));
  EXPECT_THAT(e, HasSubstr("must be an INT64 activation (token ids), got F32"));
}

TEST(OnnxEmbeddingTest, IntegerTablesAreUnsupported) {
  OnnxBuilder b;
  b.InputI64("ids", {2, 3}).InitI64("table", {5, 1}, {1, 2, 3, 4, 5});
  b.Node("Gather", {"table", "ids"}, {"y"}, "embed");
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("the table 'table' is I64"));
}

TEST(OnnxEmbeddingTest, ScalarTableIsAnError) {
  OnnxBuilder b;
  b.InputI64("ids", {2, 3}).Init("table", {}, {1.f});
  b.Node("Gather", {"table", "ids"}, {"y"}, "embed");
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("the data is a scalar"));
}

// torch.gather of constants (BERT's token type ids) folds; the result feeds an activation.
TEST(OnnxEmbeddingTest, GatherElementsOfConstantsFolds) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Init("data", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.InitI64("idx", {2, 3}, {2, 0, 1, -1, 1, 0});
  OnnxBuilder::Int(b.Node("GatherElements", {"data", "idx"}, {"g"}), "axis", 1);
  b.Node("Add", {"x", "g"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kBinary));
  EXPECT_THAT(RunOutput(*m, {{"x", {0, 0, 0, 0, 0, 0}}}), ElementsAre(3, 1, 2, 6, 5, 4));
}

TEST(OnnxEmbeddingTest, GatherElementsOnAxis0AndSmallerIndices) {
  OnnxBuilder b;
  b.Input("x", {1, 2}).Init("data", {3, 2}, {1, 2, 3, 4, 5, 6});
  b.InitI64("idx", {1, 2}, {2, 1});  // out[0][j] = data[idx[0][j]][j]
  b.Node("GatherElements", {"data", "idx"}, {"g"});
  b.Node("Add", {"x", "g"}, {"y"});
  b.Output("y");
  absl::StatusOr<OnnxModel> m = b.Import();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(RunOutput(*m, {{"x", {0, 0}}}), ElementsAre(5, 4));
}

TEST(OnnxEmbeddingTest, GatherElementsErrors) {
  struct Case {
    std::vector<int64_t> idx_dims;
    std::vector<int64_t> idx;
    bool float_idx;
    const char* want;
  };
  const Case cases[] = {
      {{2, 3}, {0, 0, 0, 0, 0, 3}, false, "index 3 is out of range for axis 1 of [2, 3]"},
      {{6}, {0, 0, 0, 0, 0, 0}, false, "indices [6] do not fit data [2, 3]"},
      {{3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}, false, "indices [3, 3] do not fit data [2, 3]"},
      {{2, 3}, {}, true, "the indices must be integers, got F32"},
  };
  for (const Case& c : cases) {
    OnnxBuilder b;
    b.Input("x", {2, 3}).Init("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    if (c.float_idx) {
      b.Init("idx", c.idx_dims, std::vector<float>(6, 0.f));
    } else {
      b.InitI64("idx", c.idx_dims, c.idx);
    }
    OnnxBuilder::Int(b.Node("GatherElements", {"data", "idx"}, {"g"}, "ge"), "axis", 1);
    b.Node("Add", {"x", "g"}, {"y"});
    b.Output("y");
    const std::string e = ImportError(b);
    EXPECT_THAT(e, HasSubstr("GatherElements node 'ge'")) << c.want;
    EXPECT_THAT(e, HasSubstr(c.want));
  }
}

TEST(OnnxEmbeddingTest, GatherElementsOfAnActivationIsUnsupported) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).InitI64("idx", {2, 3}, {0, 0, 0, 0, 0, 0});
  b.Node("GatherElements", {"x", "idx"}, {"y"}, "ge");
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("GatherElements is only supported on constants"));
}

// The BERT layer: its constants fold away (token type and position embeddings are weights added),
// the rest is what the executor runs (the GELU chain stays five nodes here, its + 1 a bias_add:
// lowering fuses it), and the reference forward of one sequence matches the other's when the ids
// are the same.
TEST(OnnxEmbeddingTest, BertLayerImportsAndRuns) {
  absl::StatusOr<OnnxModel> m = testing::BertLayerModel().Import({.batch = 2});
  ASSERT_TRUE(m.ok()) << m.status();
  std::string ops;
  for (OpKind op : OpsOf(m->graph)) ops += std::string(OpKindName(op)) + " ";
  EXPECT_EQ(ops,
            "gather binary binary layer_norm "         // embeddings
            "reshape dense bias_add reshape reshape "  // q
            "reshape dense bias_add reshape reshape "  // k
            "reshape dense bias_add reshape reshape "  // v
            "transpose transpose transpose binary binary matmul softmax unary matmul "  // attention
            "transpose reshape reshape dense bias_add reshape add layer_norm "          // output
            "reshape dense bias_add reshape binary unary bias_add binary binary "       // MLP, GELU
            "reshape dense bias_add reshape add layer_norm ");
  EXPECT_THAT(OutputOf(*m).shape, ElementsAre(2, 4, 8));
  const std::vector<float> y = RunOutput(*m, {{"input_ids", {3, 1, 4, 1, 3, 1, 4, 1}}});
  ASSERT_EQ(y.size(), 64u);
  for (float v : y) EXPECT_TRUE(std::isfinite(v));
  EXPECT_THAT(std::vector<float>(y.begin() + 32, y.end()),
              Pointwise(FloatNear(0), std::vector<float>(y.begin(), y.begin() + 32)));
  // Normalized rows: each row's mean is the mean of ln2's bias, about 0.
  double mean = 0;
  for (int j = 0; j < 8; ++j) mean += y[j];
  EXPECT_NEAR(mean / 8, 0.0, 0.2);
}

// Lowered, the gather is the first step, reading the int64 input as it is (no convert) and the
// table as a weight; the erf GELU chain is one gelu (fp32) or the dense's epilogue (fp16).
TEST(OnnxEmbeddingTest, BertLayerLowersWithTheGatherReadingTheIds) {
  absl::StatusOr<OnnxModel> m = testing::BertLayerModel().Import({.batch = 2});
  ASSERT_TRUE(m.ok()) << m.status();
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(m->graph, mode, &m->weights);
    ASSERT_TRUE(p.ok()) << NumericModeName(mode) << ": " << p.status();
    const Step& gather = p->steps.at(0);
    EXPECT_EQ(gather.kind, StepKind::kGather);
    ASSERT_EQ(gather.operands.size(), 2u);
    EXPECT_EQ(m->graph.tensor(gather.operands[0].weight).name, "word");
    const StepTensor& ids = p->tensors[gather.operands[1].tensor];
    EXPECT_EQ(ids.dtype, DType::kI64);
    EXPECT_TRUE(ids.external);
    EXPECT_EQ(gather.input, gather.operands[1].tensor);
    EXPECT_EQ(p->tensors[gather.output].dtype, DType::kF32);
    int erf = 0, gelu = 0;
    for (const Step& s : p->steps) {
      erf += s.kind == StepKind::kUnary && s.unary == UnaryFn::kErf;
      gelu += s.kind == StepKind::kUnary && s.unary == UnaryFn::kGelu;
      gelu += s.epilogue.activation == Epilogue::Activation::kGelu;
    }
    EXPECT_EQ(erf, 0) << NumericModeName(mode);
    EXPECT_EQ(gelu, 1) << NumericModeName(mode);
  }
}

}  // namespace
}  // namespace tunejit

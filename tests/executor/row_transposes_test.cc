// Moving transposes across dense layers (executor/row_transposes.h) on MhaNet, torchvision's
// nn.MultiheadAttention export (tests/executor/executor_test_util.h): both of its [B, S] <-> [S, B]
// transposes leave the fp16 step program, the moved graph computes what the graph did (CPU
// reference forward), and where the attention cannot fuse (head dim 32) only the out-side move,
// which saves a copy by itself, is made. CPU only.
#include <string>
#include <vector>

#include "executor/reference_forward.h"
#include "executor/row_transposes.h"
#include "executor/step_program.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

int CountOps(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op ? 1 : 0;
  return n;
}

int CountSteps(const Graph& g, const WeightSet& w, StepKind kind) {
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores, &w);
  EXPECT_TRUE(p.ok()) << p.status();
  int n = 0;
  for (const Step& s : p->steps) n += s.kind == kind ? 1 : 0;
  return n;
}

std::vector<float> Forward(const Graph& g, const WeightSet& w, int64_t inputs) {
  absl::StatusOr<std::vector<std::vector<float>>> out =
      ReferenceForward(g, w, {{"input", testing::NormalFloats(inputs, 3)}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[*g.FindTensor("logits")] : std::vector<float>{};
}

TEST(RowTransposes, MultiheadAttentionLosesBothTransposes) {
  const Graph g = testing::MhaNet(2, 37, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 5);
  const Graph moved = SinkRowTransposes(g, w);
  ASSERT_TRUE(moved.Validate().ok()) << moved.Validate();
  EXPECT_EQ(CountSteps(g, w, StepKind::kTranspose), 2);
  EXPECT_EQ(CountSteps(moved, w, StepKind::kTranspose), 0);
  EXPECT_EQ(CountSteps(moved, w, StepKind::kAttention), 1);
  // The output transpose is a view now, under the same name.
  const Node& last = moved.nodes().back();
  EXPECT_EQ(last.op, OpKind::kReshape);
  EXPECT_EQ(moved.tensor(last.output).name, "logits");
  EXPECT_EQ(cpuref::RelativeError(Forward(moved, w, 2 * 37 * 128), Forward(g, w, 2 * 37 * 128)),
            0.0);
}

// Head dim 32: no fused attention to read the moved in-side transpose through (it would copy 3E
// columns instead of E), so only the out-side move is made.
TEST(RowTransposes, InSideMoveNeedsTheFusedAttention) {
  const Graph g = testing::MhaNet(2, 16, 4, 32);
  const WeightSet w = testing::AttentionNetWeights(g, 6, 32);
  const Graph moved = SinkRowTransposes(g, w);
  ASSERT_TRUE(moved.Validate().ok()) << moved.Validate();
  EXPECT_EQ(CountSteps(moved, w, StepKind::kAttention), 0);
  const std::optional<int> in_t = moved.FindTensor("in.t.out");
  ASSERT_TRUE(in_t.has_value());
  EXPECT_EQ(moved.tensor(*in_t).shape, (std::vector<int64_t>{16, 2, 128}));
  EXPECT_EQ(CountOps(moved, OpKind::kTranspose), CountOps(g, OpKind::kTranspose) - 1);
  EXPECT_LT(cpuref::RelativeError(Forward(moved, w, 2 * 16 * 128), Forward(g, w, 2 * 16 * 128)),
            1e-7);
}

TEST(RowTransposes, GraphsWithoutRowTransposesAreKept) {
  const Graph g = testing::AttentionNet(testing::AttentionStyle::kBert, 2, 16, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 7);
  const Graph moved = SinkRowTransposes(g, w);
  EXPECT_EQ(moved.nodes().size(), g.nodes().size());
  EXPECT_EQ(moved.tensors().size(), g.tensors().size());
}

}  // namespace
}  // namespace tunejit

#include "executor/memory_plan.h"

#include <cstdio>

#include "gmock/gmock.h"
#include "graph/vgg16.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

TEST(MemoryPlanTest, ChainReusesTwoBuffers) {
  Graph g;
  int x = g.AddTensor({"x", {1, 1000}, DType::kF32, TensorKind::kInput});
  std::vector<int> a;
  for (int i = 0; i < 5; ++i) {
    x = *g.AddNode("r" + std::to_string(i), OpKind::kRelu, {x}, {}, "a" + std::to_string(i),
                   i == 4 ? TensorKind::kOutput : TensorKind::kActivation);
    a.push_back(x);
  }
  absl::StatusOr<MemoryPlan> plan = PlanMemory(g);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // a0..a3 are activations (4000 bytes, 4096 aligned); a4 is the output, outside the arena.
  EXPECT_EQ(plan->planned_tensors, 4);
  EXPECT_EQ(plan->sum_bytes, 16000);
  EXPECT_EQ(plan->arena_bytes, 8192);
  EXPECT_EQ(plan->offsets[a[0]], plan->offsets[a[2]]);
  EXPECT_EQ(plan->offsets[a[1]], plan->offsets[a[3]]);
  EXPECT_NE(plan->offsets[a[0]], plan->offsets[a[1]]);
  EXPECT_EQ(plan->offsets[a[4]], -1);
  EXPECT_EQ(plan->offsets[*g.FindTensor("x")], -1);
}

TEST(MemoryPlanTest, AlignmentAndInvalidGraph) {
  Graph g;
  int x = g.AddTensor({"x", {3}, DType::kF32, TensorKind::kInput});
  int a = *g.AddNode("r0", OpKind::kRelu, {x}, {}, "a");
  int b = *g.AddNode("r1", OpKind::kRelu, {a}, {}, "b");
  (void)*g.AddNode("r2", OpKind::kRelu, {b}, {}, "y", TensorKind::kOutput);
  absl::StatusOr<MemoryPlan> plan = PlanMemory(g, 64);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->arena_bytes, 128);  // 12 bytes each, two live at once, 64-aligned
  EXPECT_EQ(plan->offsets[b] % 64, 0);
  EXPECT_THAT(PlanMemory(g, 48).status().message(), HasSubstr("not a power of two"));
  g.AddTensor({"orphan", {3}, DType::kF32, TensorKind::kActivation});
  EXPECT_THAT(PlanMemory(g).status().message(), HasSubstr("'orphan' (activation)"));
}

// Each tensor's own lifetime, computed here from the node list: produced at its node, live to its
// last reader. Flatten views share their source's bytes (same group).
struct Life {
  int first = -1, last = -1, group = -1;
};

std::vector<Life> IndependentLifetimes(const Graph& g) {
  std::vector<Life> life(g.tensors().size());
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.nodes()[i];
    for (int in : n.inputs) life[in].last = i;
    life[n.output].first = life[n.output].last = i;
    life[n.output].group = n.output;
    if (n.op == OpKind::kFlatten) life[n.output].group = life[n.inputs[0]].group;
  }
  return life;
}

TEST(MemoryPlanTest, Vgg16Batch128NoLiveOverlap) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 128});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<MemoryPlan> plan = PlanMemory(*g);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::printf("VGG-16 batch 128: %s (arena %lld bytes, sum %lld bytes)\n", plan->Summary().c_str(),
              static_cast<long long>(plan->arena_bytes), static_cast<long long>(plan->sum_bytes));

  const std::vector<Life> life = IndependentLifetimes(*g);
  std::vector<int> acts = g->TensorsOfKind(TensorKind::kActivation);
  int64_t largest = 0;
  for (int t : acts) {
    const int64_t size = g->tensor(t).Bytes();
    largest = std::max(largest, size);
    ASSERT_GE(plan->offsets[t], 0) << g->tensor(t).name;
    EXPECT_EQ(plan->offsets[t] % 256, 0) << g->tensor(t).name;
    EXPECT_LE(plan->offsets[t] + size, plan->arena_bytes) << g->tensor(t).name;
  }
  int live_pairs = 0;
  for (size_t i = 0; i < acts.size(); ++i) {
    for (size_t j = i + 1; j < acts.size(); ++j) {
      const int a = acts[i], b = acts[j];
      if (life[a].group == life[b].group) continue;  // a view and its source
      if (life[a].first > life[b].last || life[b].first > life[a].last) continue;
      ++live_pairs;
      const int64_t a_end = plan->offsets[a] + g->tensor(a).Bytes();
      const int64_t b_end = plan->offsets[b] + g->tensor(b).Bytes();
      EXPECT_TRUE(a_end <= plan->offsets[b] || b_end <= plan->offsets[a])
          << g->tensor(a).name << " and " << g->tensor(b).name << " are live together but overlap";
    }
  }
  EXPECT_GT(live_pairs, 40);  // every conv -> bias_add -> relu hand-off is one
  // The view shares its source's bytes.
  EXPECT_EQ(plan->offsets[*g->FindTensor("flatten.out")],
            plan->offsets[*g->FindTensor("features.30.out")]);
  // Reuse: the whole network fits in two of its largest activation (128x64x224x224 floats), far
  // below the sum of all activations.
  EXPECT_EQ(largest, int64_t{128} * 64 * 224 * 224 * 4);
  EXPECT_GE(plan->arena_bytes, 2 * largest);
  EXPECT_LE(plan->arena_bytes, 2 * largest + 2 * 256);
  EXPECT_LT(plan->arena_bytes, plan->sum_bytes / 4);
}

}  // namespace
}  // namespace tunejit

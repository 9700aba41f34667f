// Model fingerprints (graph/fingerprint.h): equal models give equal fingerprints, and any change a
// build plan depends on (a name, a shape, an attribute, one weight byte) gives another.
#include "graph/fingerprint.h"

#include <vector>

#include "graph/vgg16.h"
#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

TEST(FingerprintTest, GraphFingerprintIsStableAndSeesEveryChange) {
  const Graph g = testing::SmallNet();
  const std::string id = GraphFingerprint(g);
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(GraphFingerprint(testing::SmallNet()), id);
  EXPECT_NE(GraphFingerprint(testing::SmallNet(/*batch=*/3)), id);
  std::vector<Graph> edits(6, g);
  edits[0].mutable_tensor(0).name = "pixels";
  const_cast<Node&>(edits[1].nodes()[0]).attrs.pad_top = 0;
  const_cast<Node&>(edits[2].nodes()[0]).attrs.clip_max = 6;
  const_cast<Node&>(edits[3].nodes()[0]).attrs.perm = {1};
  const_cast<Node&>(edits[4].nodes()[1]).name = "renamed";
  edits[5].mutable_tensor(1).kind = TensorKind::kActivation;
  for (size_t i = 0; i < edits.size(); ++i) {
    EXPECT_NE(GraphFingerprint(edits[i]), id) << "edit " << i;
  }
}

TEST(FingerprintTest, WeightsFingerprintSeesOneByteAndNotTheThreadCount) {
  const Graph g = testing::SmallNet();
  const std::string id = WeightsFingerprint(g, RandomWeights(g, 11), 1);
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(WeightsFingerprint(g, RandomWeights(g, 11), 4), id);
  EXPECT_EQ(WeightsFingerprint(g, RandomWeights(g, 11), 0), id);
  EXPECT_NE(WeightsFingerprint(g, RandomWeights(g, 12), 4), id);
  // One byte of the last weight tensor.
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  const WeightSet w = RandomWeights(g, 11);
  int last = -1;
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    absl::Span<const uint8_t> b = w.Get(static_cast<int>(t));
    bytes[t].assign(b.begin(), b.end());
    if (!b.empty()) last = static_cast<int>(t);
  }
  ASSERT_GE(last, 0);
  bytes[last][0] ^= 1;
  absl::StatusOr<WeightSet> flipped = WeightsFromImport(g, bytes, "flipped");
  ASSERT_TRUE(flipped.ok()) << flipped.status();
  EXPECT_NE(WeightsFingerprint(g, *flipped, 2), id);
}

}  // namespace
}  // namespace tunejit

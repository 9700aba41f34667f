// Model fingerprints (graph/fingerprint.h): equal models give equal fingerprints, and any change a
// build plan depends on (a name, a shape, an attribute, one weight byte) gives another.
#include "graph/fingerprint.h"

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/digest.h"
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

// A model with a weight of a little over two fingerprint chunks and a small one, its bytes set
// directly (a counting pattern) so that single bytes can be flipped anywhere.
struct ChunkedModel {
  Graph graph;
  std::vector<std::vector<uint8_t>> bytes;  // per tensor id

  ChunkedModel() {
    const int64_t k = 1000, n = (2 * kWeightsFingerprintChunkBytes + 12345) / (4 * k) + 1;
    graph.AddTensor({"x", {1, k}, DType::kF32, TensorKind::kInput});
    graph.AddTensor({"big", {n, k}, DType::kF32, TensorKind::kWeight});
    graph.AddTensor({"small", {3}, DType::kF32, TensorKind::kWeight});
    bytes.resize(3);
    bytes[1].resize(static_cast<size_t>(n * k * 4));
    bytes[2].resize(12);
    for (std::vector<uint8_t>* b : {&bytes[1], &bytes[2]}) {
      for (size_t i = 0; i < b->size(); ++i) (*b)[i] = static_cast<uint8_t>(i * 7 + i / 251);
    }
  }
  std::string Fingerprint(int threads) const {
    absl::StatusOr<WeightSet> w = WeightsFromImport(graph, bytes, "test");
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? WeightsFingerprint(graph, *w, threads) : "";
  }
};

TEST(FingerprintTest, ChunkedWeightsFingerprintIsItsDefinition) {
  const ChunkedModel m;
  ASSERT_EQ(m.bytes[1].size() / kWeightsFingerprintChunkBytes, 2u);  // 3 chunks, the last short
  auto tensor_digest = [](const std::vector<uint8_t>& b) {
    std::string d;
    AppendBytes(&d, "tunejit-weight-chunks");
    AppendU64(&d, kWeightsFingerprintChunkBytes);
    AppendU64(&d, b.size());
    const absl::string_view all(reinterpret_cast<const char*>(b.data()), b.size());
    for (size_t at = 0; at < b.size(); at += kWeightsFingerprintChunkBytes) {
      d += Sha256(all.substr(at, kWeightsFingerprintChunkBytes));
    }
    return Sha256(d);
  };
  std::string want;
  AppendBytes(&want, "tunejit-weights");
  AppendU64(&want, 2);
  AppendBytes(&want, "big");
  AppendBytes(&want, tensor_digest(m.bytes[1]));
  AppendBytes(&want, "small");
  AppendBytes(&want, tensor_digest(m.bytes[2]));
  EXPECT_EQ(m.Fingerprint(1), Sha256Hex(want));
}

TEST(FingerprintTest, ChunkedWeightsFingerprintIgnoresTheThreadCountAndSeesEveryByte) {
  const ChunkedModel m;
  const std::string id = m.Fingerprint(1);
  for (int threads : {2, 3, 8, 0}) EXPECT_EQ(m.Fingerprint(threads), id) << threads << " threads";
  const size_t chunk = kWeightsFingerprintChunkBytes, size = m.bytes[1].size();
  // The first and last byte of a chunk, the bytes around each chunk boundary, the last byte.
  for (size_t at :
       {size_t{0}, chunk - 1, chunk, 2 * chunk - 1, 2 * chunk, 2 * chunk + 17, size - 1}) {
    ChunkedModel flipped;
    flipped.bytes[1][at] ^= 0x40;
    EXPECT_NE(flipped.Fingerprint(8), id) << "byte " << at;
  }
  ChunkedModel small_flipped;
  small_flipped.bytes[2][11] ^= 1;
  EXPECT_NE(small_flipped.Fingerprint(8), id);
}

}  // namespace
}  // namespace tunejit

#include "graph/vgg16.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// torchvision.models.vgg16().state_dict().keys(), in order (written out by hand from torchvision).
const std::vector<std::string> kTorchvisionKeys = {
    "features.0.weight",   "features.0.bias",   "features.2.weight",   "features.2.bias",
    "features.5.weight",   "features.5.bias",   "features.7.weight",   "features.7.bias",
    "features.10.weight",  "features.10.bias",  "features.12.weight",  "features.12.bias",
    "features.14.weight",  "features.14.bias",  "features.17.weight",  "features.17.bias",
    "features.19.weight",  "features.19.bias",  "features.21.weight",  "features.21.bias",
    "features.24.weight",  "features.24.bias",  "features.26.weight",  "features.26.bias",
    "features.28.weight",  "features.28.bias",  "classifier.0.weight", "classifier.0.bias",
    "classifier.3.weight", "classifier.3.bias", "classifier.6.weight", "classifier.6.bias"};

TEST(Vgg16Test, WeightNamesMatchTorchvisionStateDict) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> names;
  for (int id : g->TensorsOfKind(TensorKind::kWeight)) names.push_back(g->tensor(id).name);
  EXPECT_THAT(names, ElementsAreArray(kTorchvisionKeys));
}

TEST(Vgg16Test, LayerShapesMatchTorchvision) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 2});
  ASSERT_TRUE(g.ok()) << g.status();
  // (CI, CO) of each conv, 0 = a max pool, then the dense layers (K, N).
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {3, 64},    {64, 64},   {0, 0},     {64, 128},  {128, 128},    {0, 0},       {128, 256},
      {256, 256}, {256, 256}, {0, 0},     {256, 512}, {512, 512},    {512, 512},   {0, 0},
      {512, 512}, {512, 512}, {512, 512}, {0, 0},     {25088, 4096}, {4096, 4096}, {4096, 1000}};
  std::vector<std::pair<int64_t, int64_t>> got;
  std::vector<std::string> pools;
  for (const Node& n : g->nodes()) {
    const TensorDesc& out = g->tensor(n.output);
    if (n.op == OpKind::kConv2d) {
      const TensorDesc& w = g->tensor(n.inputs[1]);
      EXPECT_THAT(w.shape, ElementsAre(w.shape[0], w.shape[1], 3, 3)) << n.name;
      got.emplace_back(w.shape[1], w.shape[0]);
    } else if (n.op == OpKind::kMaxPool2d) {
      got.emplace_back(0, 0);
      pools.push_back(n.name);
    } else if (n.op == OpKind::kDense) {
      got.emplace_back(g->tensor(n.inputs[1]).shape[1], out.shape[1]);
    }
  }
  EXPECT_EQ(got, expected);
  EXPECT_THAT(pools,
              ElementsAre("features.4", "features.9", "features.16", "features.23", "features.30"));
  EXPECT_THAT(g->tensor(*g->FindTensor("features.30.out")).shape, ElementsAre(2, 512, 7, 7));
  EXPECT_THAT(g->tensor(*g->FindTensor("features.28.out")).shape, ElementsAre(2, 512, 14, 14));
  EXPECT_THAT(g->tensor(*g->FindTensor("input")).shape, ElementsAre(2, 3, 224, 224));
  const TensorDesc& logits = g->tensor(*g->FindTensor("logits"));
  EXPECT_THAT(logits.shape, ElementsAre(2, 1000));
  EXPECT_EQ(logits.kind, TensorKind::kOutput);
}

TEST(Vgg16Test, MacsPerImage) {
  absl::StatusOr<Graph> g1 = BuildVgg16({.batch = 1});
  absl::StatusOr<Graph> g4 = BuildVgg16({.batch = 4});
  ASSERT_TRUE(g1.ok() && g4.ok());
  // Hand sum over the layers: sum CO*CI*9*H*W for the 13 convs (15,346,630,656) plus
  // 25088*4096 + 4096*4096 + 4096*1000 (123,633,664): the usual "15.5 GMACs".
  EXPECT_EQ(GraphMacs(*g1), 15'470'264'320);
  EXPECT_NEAR(GraphMacs(*g1) / 1e9, 15.5, 0.05);
  EXPECT_EQ(GraphMacs(*g4), 4 * GraphMacs(*g1));
}

TEST(Vgg16Test, SoftmaxOptionAndBadBatch) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1, .with_softmax = true});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes().back().op, OpKind::kSoftmax);
  EXPECT_EQ(g->tensor(g->nodes().back().output).name, "probs");
  EXPECT_EQ(g->tensor(*g->FindTensor("logits")).kind, TensorKind::kActivation);
  EXPECT_EQ(g->TensorsOfKind(TensorKind::kOutput).size(), 1u);
  EXPECT_FALSE(BuildVgg16({.batch = 0}).ok());
}

}  // namespace
}  // namespace tunejit

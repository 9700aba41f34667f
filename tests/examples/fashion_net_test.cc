// examples/fashion_mnist/fashion_net.h: the graph mirrors train.py's PyTorch module (the same
// parameter names and shapes, so its safetensors binds), lowers at every precision the way the
// example expects (the 1-channel stem on the stem template at fp16, float32 at int8), and its CPU
// reference forward gives finite logits. CPU only.
#include "examples/fashion_mnist/fashion_net.h"

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/node_tasks.h"
#include "executor/reference_forward.h"
#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "graph/weights.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FashionNet, ParametersAreTrainPysStateDict) {
  absl::StatusOr<Graph> g = BuildFashionNet(4);
  ASSERT_TRUE(g.ok()) << g.status();
  std::map<std::string, std::vector<int64_t>> weights;
  for (int id : g->TensorsOfKind(TensorKind::kWeight)) {
    weights[g->tensor(id).name] = g->tensor(id).shape;
  }
  // torch: [p.shape for p in FashionNet().state_dict().values()] (train.py).
  const std::map<std::string, std::vector<int64_t>> want = {
      {"features.0.weight", {32, 1, 3, 3}},    {"features.0.bias", {32}},
      {"features.2.weight", {32, 32, 3, 3}},   {"features.2.bias", {32}},
      {"features.5.weight", {64, 32, 3, 3}},   {"features.5.bias", {64}},
      {"features.7.weight", {64, 64, 3, 3}},   {"features.7.bias", {64}},
      {"features.10.weight", {128, 64, 3, 3}}, {"features.10.bias", {128}},
      {"classifier.0.weight", {256, 1152}},    {"classifier.0.bias", {256}},
      {"classifier.3.weight", {10, 256}},      {"classifier.3.bias", {10}}};
  EXPECT_EQ(weights, want);
  const std::optional<int> logits = g->FindTensor("logits");
  ASSERT_TRUE(logits.has_value());
  EXPECT_THAT(g->tensor(*logits).shape, ElementsAre(4, 10));
  EXPECT_FALSE(BuildFashionNet(0).ok());
}

// train.py names the same parameters: every one of them appears there as a module index.
TEST(FashionNet, TrainPyDefinesTheSameLayers) {
  std::ifstream in(std::string(TUNEJIT_SOURCE_DIR) + "/examples/fashion_mnist/train.py");
  ASSERT_TRUE(in.good());
  const std::string py((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* layer : {"nn.Conv2d(1, 32, 3, padding=1),  # features.0",
                            "nn.Conv2d(32, 32, 3, padding=1),  # features.2",
                            "nn.Conv2d(32, 64, 3, padding=1),  # features.5",
                            "nn.Conv2d(64, 64, 3, padding=1),  # features.7",
                            "nn.Conv2d(64, 128, 3, padding=1),  # features.10",
                            "nn.Linear(128 * 3 * 3, 256),  # classifier.0",
                            "nn.Linear(256, 10),  # classifier.3", "MEAN, STD = 0.2860, 0.3530"}) {
    EXPECT_THAT(py, HasSubstr(layer));
  }
}

TEST(FashionNet, LowersAtEveryPrecision) {
  absl::StatusOr<Graph> g = BuildFashionNet(8);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<NodeTask>> fp16 = ExtractTasks(*g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  ASSERT_EQ(fp16->size(), 7u);
  EXPECT_TRUE((*fp16)[0].forms.float_nchw_data);  // 1 channel: the stem template
  for (const NodeTask& t : *fp16) EXPECT_TRUE(t.half()) << t.name;
  absl::StatusOr<std::vector<NodeTask>> int8 = ExtractTasks(*g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(int8.ok()) << int8.status();
  EXPECT_FALSE((*int8)[0].int8());  // 1 input channel: float32
  EXPECT_TRUE((*int8)[1].int8());
  for (NumericMode p :
       {NumericMode::kFp32, NumericMode::kFp16TensorCores, NumericMode::kInt8Dp4a}) {
    EXPECT_TRUE(LowerToSteps(*g, p).ok()) << NumericModeName(p);
  }
}

TEST(FashionNet, ReferenceForwardGivesFiniteLogits) {
  absl::StatusOr<Graph> g = BuildFashionNet(2);
  ASSERT_TRUE(g.ok()) << g.status();
  const WeightSet w = RandomWeights(*g, 5);
  std::vector<uint8_t> pixels(2 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 256);
  const std::vector<float> input = NormalizePixels(pixels);
  EXPECT_FLOAT_EQ(input[0], (0.0f - kFashionMean) / kFashionStd);
  absl::StatusOr<std::vector<std::vector<float>>> v = ReferenceForward(*g, w, {{"input", input}});
  ASSERT_TRUE(v.ok()) << v.status();
  const std::vector<float>& logits = (*v)[*g->FindTensor("logits")];
  ASSERT_EQ(logits.size(), 20u);
  for (float x : logits) EXPECT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace tunejit

// examples/fashion_mnist/fashion_net.h: each graph (the VGG-style net and the ResNet) mirrors
// train.py's PyTorch module (the same parameter names and shapes, so its safetensors binds), lowers
// at every precision the way the example expects (the 1-channel stem on the stem template at fp16,
// float32 at int8; the ResNet's adds int8 between int8 convs), and its CPU reference forward gives
// finite logits (the ResNet's: each block's add and skip, checked). CPU only.
#include "examples/fashion_mnist/fashion_net.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
#include "nlohmann/json.hpp"
#include "ops/cpu_reference.h"

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

std::map<std::string, std::vector<int64_t>> WeightShapes(const Graph& g) {
  std::map<std::string, std::vector<int64_t>> weights;
  for (int id : g.TensorsOfKind(TensorKind::kWeight))
    weights[g.tensor(id).name] = g.tensor(id).shape;
  return weights;
}

std::vector<int64_t> ShapeOf(const Graph& g, const std::string& tensor) {
  const std::optional<int> id = g.FindTensor(tensor);
  EXPECT_TRUE(id.has_value()) << tensor;
  return id.has_value() ? g.tensor(*id).shape : std::vector<int64_t>{};
}

TEST(FashionResNet, ParametersAreTrainPysStateDict) {
  absl::StatusOr<Graph> g = BuildFashionResNet(4);
  ASSERT_TRUE(g.ok()) << g.status();
  // torch: {k: list(v.shape) for k, v in FashionResNet().state_dict().items()} (train.py).
  const std::map<std::string, std::vector<int64_t>> want = {
      {"stem.weight", {32, 1, 3, 3}},
      {"stem.bias", {32}},
      {"layer1.conv1.weight", {32, 32, 3, 3}},
      {"layer1.conv1.bias", {32}},
      {"layer1.conv2.weight", {32, 32, 3, 3}},
      {"layer1.conv2.bias", {32}},
      {"layer2.conv1.weight", {64, 32, 3, 3}},
      {"layer2.conv1.bias", {64}},
      {"layer2.conv2.weight", {64, 64, 3, 3}},
      {"layer2.conv2.bias", {64}},
      {"layer2.downsample.weight", {64, 32, 1, 1}},
      {"layer2.downsample.bias", {64}},
      {"layer3.conv1.weight", {128, 64, 3, 3}},
      {"layer3.conv1.bias", {128}},
      {"layer3.conv2.weight", {128, 128, 3, 3}},
      {"layer3.conv2.bias", {128}},
      {"layer3.downsample.weight", {128, 64, 1, 1}},
      {"layer3.downsample.bias", {128}},
      {"fc.weight", {10, 128}},
      {"fc.bias", {10}}};
  EXPECT_EQ(WeightShapes(*g), want);
  EXPECT_THAT(ShapeOf(*g, "logits"), ElementsAre(4, 10));
  EXPECT_FALSE(BuildFashionResNet(0).ok());
}

TEST(FashionResNet, StridedStagesHalveTheSide) {
  absl::StatusOr<Graph> g = BuildFashionResNet(3);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(ShapeOf(*g, "stem.relu.out"), ElementsAre(3, 32, 28, 28));
  EXPECT_THAT(ShapeOf(*g, "layer1.relu.out"), ElementsAre(3, 32, 28, 28));
  EXPECT_THAT(ShapeOf(*g, "layer2.conv1.relu.out"), ElementsAre(3, 64, 14, 14));
  EXPECT_THAT(ShapeOf(*g, "layer2.downsample.bias_add.out"), ElementsAre(3, 64, 14, 14));
  EXPECT_THAT(ShapeOf(*g, "layer2.relu.out"), ElementsAre(3, 64, 14, 14));
  EXPECT_THAT(ShapeOf(*g, "layer3.downsample.bias_add.out"), ElementsAre(3, 128, 7, 7));
  EXPECT_THAT(ShapeOf(*g, "layer3.relu.out"), ElementsAre(3, 128, 7, 7));
  EXPECT_THAT(ShapeOf(*g, "avgpool.out"), ElementsAre(3, 128, 1, 1));
  EXPECT_THAT(ShapeOf(*g, "flatten.out"), ElementsAre(3, 128));
  // layer1 keeps its width and side: an identity skip, no downsample conv.
  EXPECT_FALSE(g->FindTensor("layer1.downsample.weight").has_value());
  int adds = 0;
  for (const Node& n : g->nodes()) adds += n.op == OpKind::kAdd;
  EXPECT_EQ(adds, 3);
}

TEST(FashionResNet, BuildFashionGraphPicksByName) {
  absl::StatusOr<Graph> vgg = BuildFashionGraph("vgg", 2);
  ASSERT_TRUE(vgg.ok()) << vgg.status();
  EXPECT_TRUE(vgg->FindTensor("features.0.weight").has_value());
  absl::StatusOr<Graph> resnet = BuildFashionGraph("resnet", 2);
  ASSERT_TRUE(resnet.ok()) << resnet.status();
  EXPECT_TRUE(resnet->FindTensor("layer3.downsample.weight").has_value());
  absl::StatusOr<Graph> other = BuildFashionGraph("alexnet", 2);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("alexnet"));
}

TEST(FashionResNet, TrainPyDefinesTheSameLayers) {
  std::ifstream in(std::string(TUNEJIT_SOURCE_DIR) + "/examples/fashion_mnist/train.py");
  ASSERT_TRUE(in.good());
  const std::string py((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* line :
       {"self.stem = nn.Conv2d(1, 32, 3, padding=1)",
        "self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)",
        "self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)", "if stride != 1 or cin != cout:",
        "self.downsample = nn.Conv2d(cin, cout, 1, stride=stride)",
        "self.layer1 = BasicBlock(32, 32, 1)", "self.layer2 = BasicBlock(32, 64, 2)",
        "self.layer3 = BasicBlock(64, 128, 2)", "self.fc = nn.Linear(128, 10)",
        "adaptive_avg_pool2d(x, 1)", "return torch.relu(y + skip)", "\"resnet\": FashionResNet"}) {
    EXPECT_THAT(py, HasSubstr(line));
  }
}

TEST(FashionResNet, LowersAtEveryPrecision) {
  absl::StatusOr<Graph> g = BuildFashionResNet(8);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<NodeTask>> fp16 = ExtractTasks(*g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  ASSERT_EQ(fp16->size(), 10u);                   // 9 convs and the dense layer
  EXPECT_TRUE((*fp16)[0].forms.float_nchw_data);  // 1 channel: the stem template
  for (const NodeTask& t : *fp16) EXPECT_TRUE(t.half()) << t.name;
  absl::StatusOr<std::vector<NodeTask>> int8 = ExtractTasks(*g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(int8.ok()) << int8.status();
  ASSERT_EQ(int8->size(), 10u);
  EXPECT_FALSE((*int8)[0].int8());  // 1 input channel: float32
  for (size_t i = 1; i + 1 < int8->size(); ++i) EXPECT_TRUE((*int8)[i].int8()) << (*int8)[i].name;
  for (NumericMode p :
       {NumericMode::kFp32, NumericMode::kFp16TensorCores, NumericMode::kInt8Dp4a}) {
    absl::StatusOr<StepProgram> steps = LowerToSteps(*g, p);
    ASSERT_TRUE(steps.ok()) << NumericModeName(p) << ": " << steps.status();
  }
}

// The skip adds take the paths ResNet-50's take: at fp16 each is the epilogue of the block's last
// conv (the downsample comes after conv2 for that), at int8 an int8 add step between int8 convs.
TEST(FashionResNet, SkipAddsFuseAtFp16AndStayInt8AtInt8) {
  absl::StatusOr<Graph> g = BuildFashionResNet(8);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<StepProgram> fp16 = LowerToSteps(*g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  std::map<std::string, std::string> fused;
  for (const Step& s : fp16->steps) {
    EXPECT_NE(s.kind, StepKind::kAdd) << s.name;
    fused[s.name] = s.fused;
  }
  for (const char* conv : {"layer1.conv2", "layer2.downsample", "layer3.downsample"}) {
    EXPECT_EQ(fused[conv], "bias+residual_add+relu") << conv;
  }
  EXPECT_EQ(fused["layer2.conv2"], "bias");
  absl::StatusOr<StepProgram> int8 = LowerToSteps(*g, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(int8.ok()) << int8.status();
  std::vector<std::string> adds;
  for (const Step& s : int8->steps) {
    if (s.kind != StepKind::kAdd) continue;
    adds.push_back(s.name);
    EXPECT_TRUE(s.int8) << s.name;
    EXPECT_GE(s.residual, 0) << s.name;
  }
  EXPECT_THAT(adds, ElementsAre("layer1.add", "layer2.add", "layer3.add"));
}

// Each block's add is conv2's output plus its skip (the block's input, or the downsample conv's
// output), then relu; the logits are the dense layer of the pooled channels.
TEST(FashionResNet, ReferenceForwardComposesTheBlocks) {
  absl::StatusOr<Graph> g = BuildFashionResNet(2);
  ASSERT_TRUE(g.ok()) << g.status();
  const WeightSet w = RandomWeights(*g, 9);
  std::vector<uint8_t> pixels(2 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 53 % 256);
  absl::StatusOr<std::vector<std::vector<float>>> v =
      ReferenceForward(*g, w, {{"input", NormalizePixels(pixels)}});
  ASSERT_TRUE(v.ok()) << v.status();
  auto at = [&](const std::string& name) { return (*v)[*g->FindTensor(name)]; };
  EXPECT_EQ(at("layer1.add.out"),
            cpuref::AddRelu(at("layer1.conv2.bias_add.out"), at("stem.relu.out"), false));
  for (const std::string layer : {"layer2", "layer3"}) {
    EXPECT_EQ(at(layer + ".add.out"),
              cpuref::AddRelu(at(layer + ".conv2.bias_add.out"),
                              at(layer + ".downsample.bias_add.out"), false))
        << layer;
  }
  for (const std::string layer : {"layer1", "layer2", "layer3"}) {
    const std::vector<float> sum = at(layer + ".add.out");
    EXPECT_EQ(at(layer + ".relu.out"), cpuref::AddRelu(sum, std::vector<float>(sum.size()), true));
  }
  EXPECT_EQ(at("avgpool.out"), cpuref::GlobalAvgPool(2 * 128, 7 * 7, at("layer3.relu.out")));
  // Random weights still leave some channels dead and some alive after each relu.
  const std::vector<float> last = at("layer3.relu.out");
  const auto zeros = std::count(last.begin(), last.end(), 0.0f);
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, static_cast<long>(last.size()));
  const std::vector<float> logits = at("logits");
  ASSERT_EQ(logits.size(), 20u);
  for (float x : logits) EXPECT_TRUE(std::isfinite(x));
  EXPECT_NE(std::vector<float>(logits.begin(), logits.begin() + 10),
            std::vector<float>(logits.begin() + 10, logits.end()));  // the two images differ
}

// PyTorch's own forward of train.py's modules (their seeded initialization, float32 on the CPU)
// against each graph's CPU reference forward over the safetensors train.py's exporter wrote from
// the same modules: equal logits mean the layers are wired as PyTorch wires them (padding,
// strides, the skips, the pooling, the flatten order), not only named alike. Skipped without
// python3 or torch.
TEST(FashionNets, MatchPyTorchOnTheCpu) {
  const std::string dir = ::testing::TempDir() + "fashion_net_test_torch";
  const std::string command = absl::StrCat("python3 ", TUNEJIT_SOURCE_DIR,
                                           "/tests/examples/torch_reference.py ", dir, " 2>&1");
  const int rc = std::system(command.c_str());
  if (WIFEXITED(rc) && (WEXITSTATUS(rc) == 77 || WEXITSTATUS(rc) == 127)) {
    GTEST_SKIP() << "no python3 with torch";
  }
  ASSERT_EQ(rc, 0) << command;
  std::ifstream in(dir + "/logits.json");
  const nlohmann::json torch = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(torch.is_discarded());
  std::vector<uint8_t> pixels(2 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 53 % 256);
  const std::vector<float> input = NormalizePixels(pixels);
  for (const std::string net : {"vgg", "resnet"}) {
    absl::StatusOr<Graph> g = BuildFashionGraph(net, 2);
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<WeightSet> w = LoadWeights(*g, dir + "/" + net + ".safetensors");
    ASSERT_TRUE(w.ok()) << w.status();
    absl::StatusOr<std::vector<std::vector<float>>> v =
        ReferenceForward(*g, *w, {{"input", input}});
    ASSERT_TRUE(v.ok()) << v.status();
    const std::vector<float>& logits = (*v)[*g->FindTensor("logits")];
    const std::vector<float> want = torch[net].get<std::vector<float>>();
    ASSERT_EQ(logits.size(), want.size()) << net;
    float scale = 0;
    for (float x : want) scale = std::max(scale, std::abs(x));
    ASSERT_GT(scale, 0.0f) << net;
    // Float32 both, summed in other orders: equal to 1e-5 of the largest logit.
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(logits[i], want[i], 1e-5f * scale) << net << " logit " << i;
    }
  }
}

}  // namespace
}  // namespace tunejit

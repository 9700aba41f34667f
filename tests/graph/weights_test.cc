#include "graph/weights.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

// x [1, 16, 6, 6] -> conv "c" 3x3 (32 ch) + bias -> flatten -> dense "d" [10, 32*4*4] + bias.
Graph SmallGraph() {
  Graph g;
  int x = g.AddTensor({"x", {1, 16, 6, 6}, DType::kF32, TensorKind::kInput});
  int cw = g.AddTensor({"c.weight", {32, 16, 3, 3}, DType::kF32, TensorKind::kWeight});
  int cb = g.AddTensor({"c.bias", {32}, DType::kF32, TensorKind::kWeight});
  int dw = g.AddTensor({"d.weight", {10, 512}, DType::kF32, TensorKind::kWeight});
  int db = g.AddTensor({"d.bias", {10}, DType::kF32, TensorKind::kWeight});
  int y = *g.AddNode("c", OpKind::kConv2d, {x, cw}, {}, "c.out");
  y = *g.AddNode("c.bias_add", OpKind::kBiasAdd, {y, cb}, {}, "c.b.out");
  y = *g.AddNode("flatten", OpKind::kFlatten, {y}, {}, "flat");
  y = *g.AddNode("d", OpKind::kDense, {y, dw}, {}, "d.out");
  (void)*g.AddNode("d.bias_add", OpKind::kBiasAdd, {y, db}, {}, "out", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

std::vector<float> Floats(absl::Span<const uint8_t> bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(WeightsTest, RandomWeightsAreDeterministicAndHeScaled) {
  Graph g = SmallGraph();
  WeightSet a = RandomWeights(g, 7), b = RandomWeights(g, 7), c = RandomWeights(g, 8);
  EXPECT_TRUE(a.random());
  EXPECT_EQ(a.Label(), "random weights (seed 7)");
  const int cw = *g.FindTensor("c.weight");
  EXPECT_EQ(Floats(a.Get(cw)), Floats(b.Get(cw)));
  EXPECT_NE(Floats(a.Get(cw)), Floats(c.Get(cw)));
  EXPECT_TRUE(a.Get(*g.FindTensor("x")).empty());
  for (const char* name : {"c.weight", "d.weight"}) {
    const int id = *g.FindTensor(name);
    std::vector<float> w = Floats(a.Get(id));
    ASSERT_EQ(static_cast<int64_t>(w.size()), g.tensor(id).NumElements());
    double sum = 0, sq = 0;
    for (float v : w) sum += v, sq += double(v) * v;
    const double mean = sum / w.size(), std = std::sqrt(sq / w.size() - mean * mean);
    const double fan_in = (name[0] == 'c') ? 16 * 9 : 512;
    EXPECT_NEAR(std, std::sqrt(2 / fan_in), 0.06 * std::sqrt(2 / fan_in)) << name;
    EXPECT_NEAR(mean, 0, 0.1 * std) << name;
  }
  for (float v : Floats(a.Get(*g.FindTensor("c.bias")))) EXPECT_LE(std::abs(v), 0.05f);
}

// He scaling keeps a deep ReLU MLP's activations O(1): 8 layers of width 256 on unit-variance
// input.
TEST(WeightsTest, RandomWeightsKeepActivationsOrderOne) {
  Graph g;
  const int width = 256, depth = 8;
  int x = g.AddTensor({"x", {4, width}, DType::kF32, TensorKind::kInput});
  std::vector<int> ws;
  for (int l = 0; l < depth; ++l) {
    ws.push_back(
        g.AddTensor({"w" + std::to_string(l), {width, width}, DType::kF32, TensorKind::kWeight}));
    x = *g.AddNode("fc" + std::to_string(l), OpKind::kDense, {x, ws.back()}, {},
                   "h" + std::to_string(l));
  }
  WeightSet weights = RandomWeights(g, 3);
  std::vector<double> act(4 * width);
  uint64_t s = 12345;
  for (double& v : act) {  // uniform with variance 1
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = ((s >> 11) * 0x1.0p-53 - 0.5) * std::sqrt(12.0);
  }
  double rms = 0;
  for (int l = 0; l < depth; ++l) {
    std::vector<float> w = Floats(weights.Get(ws[l]));
    std::vector<double> next(4 * width, 0);
    for (int m = 0; m < 4; ++m) {
      for (int n = 0; n < width; ++n) {
        double acc = 0;
        for (int k = 0; k < width; ++k) acc += act[m * width + k] * w[n * width + k];
        next[m * width + n] = acc;
      }
    }
    rms = 0;
    for (double v : next) rms += v * v;
    rms = std::sqrt(rms / next.size());
    for (double& v : next) v = std::max(v, 0.0);  // relu
    act = next;
  }
  EXPECT_GT(rms, 0.5);  // pre-activation variance stays ~2 under He init
  EXPECT_LT(rms, 3.0);
}

TEST(WeightsTest, ExportThenLoadRoundTrips) {
  Graph g = SmallGraph();
  WeightSet random = RandomWeights(g, 11);
  const std::string path = TempPath("small.safetensors");
  ASSERT_TRUE(ExportWeights(g, random, path).ok());
  absl::StatusOr<WeightSet> loaded = LoadWeights(g, path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->random());
  EXPECT_EQ(loaded->Label(), "weights from " + path);
  EXPECT_TRUE(loaded->warnings().empty());
  WeightSet moved = std::move(*loaded);
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    EXPECT_EQ(Floats(moved.Get(id)), Floats(random.Get(id))) << g.tensor(id).name;
  }
  EXPECT_EQ(SafetensorsFile::Open(path)->metadata().at("tunejit.weights"),
            "random weights (seed 11)");
}

// Writes SmallGraph's weights with edits: `drop` omitted, `reshape` given a wrong shape.
std::string WriteEdited(const std::string& file, const char* drop, const char* reshape,
                        bool extra) {
  Graph g = SmallGraph();
  WeightSet w = RandomWeights(g, 1);
  std::vector<TensorView> views;
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    TensorView v{g.tensor(id).name, DType::kF32, g.tensor(id).shape, w.Get(id)};
    if (v.name == drop) continue;
    if (v.name == reshape) v.shape = {v.shape[0], 2, 8, 9};
    views.push_back(v);
  }
  static const float kSpare[2] = {1, 2};
  if (extra) {
    views.push_back(
        {"num_batches_tracked", DType::kF32, {2}, {reinterpret_cast<const uint8_t*>(kSpare), 8}});
  }
  const std::string path = TempPath(file);
  EXPECT_TRUE(WriteSafetensors(path, views).ok());
  return path;
}

TEST(WeightsTest, LoadReportsMissingWrongAndExtraTensors) {
  Graph g = SmallGraph();
  std::string path = WriteEdited("missing.safetensors", "d.bias", "", false);
  absl::Status s = LoadWeights(g, path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path + ": missing tensors: d.bias"));

  path = WriteEdited("shape.safetensors", "", "c.weight", false);
  s = LoadWeights(g, path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("tensor 'c.weight': expected F32 [32, 16, 3, 3], got F32 [32, 2, 8, 9]"));

  path = WriteEdited("extra.safetensors", "", "", true);
  absl::StatusOr<WeightSet> loaded = LoadWeights(g, path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->warnings().size(), 1u);
  EXPECT_THAT(loaded->warnings()[0], HasSubstr("1 tensors not used by the graph: "
                                               "num_batches_tracked"));
  EXPECT_EQ(LoadWeights(g, TempPath("none.safetensors")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(WeightsTest, WrongDtypeIsNamed) {
  Graph g;
  g.AddTensor({"q", {4}, DType::kI8, TensorKind::kWeight});
  const float f[4] = {};
  const std::string path = TempPath("dtype.safetensors");
  ASSERT_TRUE(
      WriteSafetensors(path, {{"q", DType::kF32, {4}, {reinterpret_cast<const uint8_t*>(f), 16}}})
          .ok());
  EXPECT_THAT(LoadWeights(g, path).status().message(),
              HasSubstr("tensor 'q': expected I8 [4], got F32 [4]"));
}

}  // namespace
}  // namespace tunejit

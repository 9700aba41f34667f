// Knob features (hand-computed values, constant length, a real conv2d space) and the XGBoost
// ranking model (argument errors, determinism, rank quality on a synthetic cost function).
#include "tuner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "autotvm/config_space.h"
#include "autotvm/target.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"
#include "tests/tuner/synthetic_task.h"

namespace tunejit {
namespace {

using ::tunejit::testing::SyntheticCost;
using ::tunejit::testing::SyntheticSpace;

int64_t Position(const autotvm::KnobSpace& knob, const std::vector<int64_t>& value) {
  auto it = std::find(knob.candidates.begin(), knob.candidates.end(), value);
  return it == knob.candidates.end() ? -1 : it - knob.candidates.begin();
}

TEST(ConfigFeaturesTest, HandComputedLog2Values) {
  autotvm::ConfigSpace space = SyntheticSpace();
  const auto& k = space.knobs();
  std::vector<int64_t> digits = {Position(k[0], {-1, 2, 4, 2}), Position(k[1], {-1, 1, 8, 2}),
                                 Position(k[2], {-1, 4}), Position(k[3], {512}),
                                 Position(k[4], {1})};
  for (int64_t d : digits) ASSERT_GE(d, 0);
  int64_t index = space.IndexOfDigits(digits);
  FeatureVector expected = {
      2,
      1,
      2,
      1,  // tile_f: 64 / 16 = 4 outer
      1,
      0,
      3,
      1,  // tile_x: 32 / 16 = 2 outer
      2,
      2,                                     // tile_rc: 16 / 4 = 4 outer
      static_cast<float>(std::log2(513.0)),  // auto_unroll_max_step
      1,                                     // unroll_explicit
      5,
      1,
      2,
      3,
      3,
      2};  // threads 4*8, vthreads 2*1, inner 2*2, work 8, blocks 4*2, chunk 4
  FeatureVector got = ConfigFeaturesOfIndex(space, index);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]) << "feature " << i;

  // The entity path agrees, also when the outer factor is a real extent (TopHub) instead of -1.
  autotvm::ConfigEntity entity = *space.Get(index);
  EXPECT_EQ(ConfigFeatures(space, entity), got);
  entity.knobs[0].value = autotvm::Json::array({4, 2, 4, 2});
  EXPECT_EQ(ConfigFeatures(space, entity), got);
  // A missing knob leaves its slots at 0 but keeps the layout.
  entity.knobs.erase(entity.knobs.begin() + 2);
  FeatureVector missing = ConfigFeatures(space, entity);
  ASSERT_EQ(missing.size(), got.size());
  EXPECT_EQ(missing[8], 0.0f);
  EXPECT_EQ(missing[9], 0.0f);
}

TEST(ConfigFeaturesTest, ConstantLengthOverTheSpace) {
  autotvm::ConfigSpace space = SyntheticSpace();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(ConfigFeaturesOfIndex(space, space.RandomIndex(rng)).size(), 18u);
  }
}

TEST(ConfigFeaturesTest, RealConv2dSpaceIsFiniteAndFixedLength) {
  // VGG-16 conv1_2: 64 -> 64 channels, 224x224, 3x3, pad 1.
  autotvm::Json args = autotvm::Json::parse(
      R"([["TENSOR", [1, 64, 224, 224], "float32"], ["TENSOR", [64, 64, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  absl::StatusOr<autotvm::ConfigSpace> space =
      BuildConfigSpace({"conv2d_nchw.cuda", args}, *autotvm::ParseTarget("cuda"));
  ASSERT_TRUE(space.ok()) << space.status();
  // 3 four-way splits, 3 two-way splits, 2 other knobs, 6 derived.
  const size_t kWidth = 3 * 4 + 3 * 2 + 2 + 6;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 500; ++i) {
    int64_t index = space->RandomIndex(rng);
    FeatureVector f = ConfigFeaturesOfIndex(*space, index);
    ASSERT_EQ(f.size(), kWidth);
    for (float v : f) ASSERT_TRUE(std::isfinite(v)) << index;
    // tile_f's four log2 factors add up to log2(64) = 6.
    EXPECT_FLOAT_EQ(f[0] + f[1] + f[2] + f[3], 6.0f);
  }
}

TEST(XgbCostModelTest, RejectsBadInput) {
  XgbCostModel model({.seed = 1, .threads = 1});
  EXPECT_FALSE(model.trained());
  EXPECT_EQ(model.Predict({{1, 2}}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model.Fit({}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Fit({{1, 2}, {1}}, {1e-3, 2e-3}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Fit({{}, {}}, {1e-3, 2e-3}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Fit({{1, 2}, {3, 4}}, {1e-3}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Fit({{1, 2}, {3, 4}}, {1e-3, -1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.Fit({{1, 2}, {3, 4}}, {1e-3, std::nan("")}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(model.trained());
  ASSERT_TRUE(model.Fit({{1, 2}, {3, 4}, {5, 6}}, {1e-3, 2e-3, 1e9}).ok());
  EXPECT_TRUE(model.trained());
  EXPECT_EQ(model.Predict({{1, 2, 3}}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<float>> none = model.Predict({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

struct Data {
  std::vector<int64_t> indices;
  std::vector<FeatureVector> features;
  std::vector<double> costs;
};

Data Sample(const autotvm::ConfigSpace& space, int n, uint64_t seed) {
  Data d;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    int64_t index = space.RandomIndex(rng);
    d.indices.push_back(index);
    d.features.push_back(ConfigFeaturesOfIndex(space, index));
    d.costs.push_back(SyntheticCost(space, index));
  }
  return d;
}

std::vector<double> Ranks(const std::vector<double>& v) {  // average ranks for ties
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t t = i; t <= j; ++t) ranks[order[t]] = (i + j) / 2.0;
    i = j + 1;
  }
  return ranks;
}

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ra = Ranks(a), rb = Ranks(b);
  double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / ra.size();
  double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / rb.size();
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return cov / std::sqrt(va * vb);
}

TEST(XgbCostModelTest, RanksHeldOutConfigs) {
  autotvm::ConfigSpace space = SyntheticSpace();
  Data train = Sample(space, 200, 11);
  Data test = Sample(space, 1000, 12);
  XgbCostModel model({.seed = 1, .threads = 1});
  ASSERT_TRUE(model.Fit(train.features, train.costs).ok());
  absl::StatusOr<std::vector<float>> scores = model.Predict(test.features);
  ASSERT_TRUE(scores.ok()) << scores.status();
  std::vector<double> speed, score;  // valid held-out configs only
  for (size_t i = 0; i < test.costs.size(); ++i) {
    if (test.costs[i] >= 1e9) continue;
    speed.push_back(1 / test.costs[i]);
    score.push_back((*scores)[i]);
  }
  double rho = Spearman(speed, score);
  EXPECT_GT(rho, 0.7);

  // The model's top 20 of the held-out set are mostly among its true fastest 10%.
  std::vector<size_t> by_score(score.size()), by_speed(score.size());
  std::iota(by_score.begin(), by_score.end(), 0);
  std::iota(by_speed.begin(), by_speed.end(), 0);
  std::sort(by_score.begin(), by_score.end(),
            [&](size_t a, size_t b) { return score[a] > score[b]; });
  std::sort(by_speed.begin(), by_speed.end(),
            [&](size_t a, size_t b) { return speed[a] > speed[b]; });
  std::vector<bool> fast(score.size(), false);
  for (size_t i = 0; i < score.size() / 10; ++i) fast[by_speed[i]] = true;
  int hits = 0;
  for (int i = 0; i < 20; ++i) hits += fast[by_score[i]];
  EXPECT_GE(hits, 10) << "random would hit about 2";
  std::printf("spearman %.3f over %zu held-out configs; top-20 precision %d/20 (random ~2)\n", rho,
              score.size(), hits);
}

TEST(XgbCostModelTest, DeterministicForASeed) {
  autotvm::ConfigSpace space = SyntheticSpace();
  Data train = Sample(space, 100, 21);
  Data test = Sample(space, 50, 22);
  XgbCostModel a({.seed = 7, .threads = 1}), b({.seed = 7, .threads = 1});
  ASSERT_TRUE(a.Fit(train.features, train.costs).ok());
  ASSERT_TRUE(b.Fit(train.features, train.costs).ok());
  EXPECT_EQ(*a.Predict(test.features), *b.Predict(test.features));
  // Refitting replaces the model (a different training set changes the scores).
  XgbCostModel moved = std::move(a);
  ASSERT_TRUE(moved.Fit(test.features, test.costs).ok());
  EXPECT_NE(*moved.Predict(test.features), *b.Predict(test.features));
}

}  // namespace
}  // namespace tunejit

// Model-guided search against a simulated measurer (tests/tuner/synthetic_task.h): no repeats,
// exhaustion, determinism, beating random search, and warm starts from transfer history.
#include "tuner/model_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "autotvm/config_space.h"
#include "autotvm/record.h"
#include "autotvm/target.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"
#include "tests/tuner/synthetic_task.h"
#include "tuner/search.h"

namespace tunejit {
namespace {

using ::tunejit::testing::SyntheticCost;
using ::tunejit::testing::SyntheticSpace;

// Small and fast annealing settings: the tests run on 2 shared cores.
ModelSearchOptions FastOptions(uint64_t seed) {
  ModelSearchOptions o;
  o.seed = seed;
  o.plan_size = 32;
  o.min_train = 16;
  o.sa_chains = 64;
  o.sa_steps = 80;
  o.diversity = 2;
  o.model.seed = seed;
  o.model.num_boost_rounds = 30;
  o.model.threads = 1;
  return o;
}

std::vector<autotvm::MeasureResult> Measure(const autotvm::ConfigSpace& space,
                                            const std::vector<int64_t>& batch) {
  std::vector<autotvm::MeasureResult> results;
  for (int64_t i : batch) {
    double cost = SyntheticCost(space, i);
    autotvm::MeasureResult r;
    r.costs = {cost};
    r.error_no = cost >= 1e9 ? autotvm::kRuntimeDevice : autotvm::kNoError;
    results.push_back(r);
  }
  return results;
}

// Runs the NextBatch / measure / Update loop; returns the proposed indices in order. With
// `pipelined`, batch k+1 is requested before batch k is reported (as TuneTask does).
std::vector<int64_t> RunLoop(const autotvm::ConfigSpace& space, SearchStrategy& search, int trials,
                             int batch_size, bool pipelined = false) {
  std::vector<int64_t> all, pending;
  while (static_cast<int>(all.size()) < trials && search.HasNext()) {
    std::vector<int64_t> batch = search.NextBatch(batch_size);
    if (batch.empty()) break;
    all.insert(all.end(), batch.begin(), batch.end());
    if (pipelined) std::swap(batch, pending);
    if (!batch.empty()) search.Update(batch, Measure(space, batch));
  }
  if (!pending.empty()) search.Update(pending, Measure(space, pending));
  return all;
}

TEST(ModelGuidedSearchTest, ExhaustsASmallSpaceWithoutRepeats) {
  autotvm::ConfigSpace space;
  ASSERT_TRUE(space.AddSplit("tile_f", 8, 4).ok());   // 20
  ASSERT_TRUE(space.AddSplit("tile_rc", 4, 2).ok());  // 3
  ASSERT_TRUE(space.AddOther("auto_unroll_max_step", {0, 512}).ok());
  ASSERT_EQ(space.size(), 120);
  for (bool pipelined : {false, true}) {
    ModelGuidedSearch search(space, FastOptions(3));
    std::vector<int64_t> all;
    while (search.HasNext()) {
      std::vector<int64_t> batch = search.NextBatch(7);
      ASSERT_FALSE(batch.empty());
      all.insert(all.end(), batch.begin(), batch.end());
      std::vector<autotvm::MeasureResult> results(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) results[i].costs = {1e-3 * (1 + batch[i] % 17)};
      search.Update(batch, results);
    }
    EXPECT_EQ(all.size(), 120u) << pipelined;
    EXPECT_EQ(absl::flat_hash_set<int64_t>(all.begin(), all.end()).size(), 120u);
    for (int64_t i : all) EXPECT_TRUE(i >= 0 && i < 120);
    EXPECT_GT(search.model_fits(), 5);
    EXPECT_TRUE(search.NextBatch(4).empty());
  }
}

TEST(ModelGuidedSearchTest, PipelinedBatchesNeverRepeat) {
  autotvm::ConfigSpace space = SyntheticSpace();
  ModelGuidedSearch search(space, FastOptions(4));
  std::vector<int64_t> all = RunLoop(space, search, 160, 16, /*pipelined=*/true);
  EXPECT_EQ(all.size(), 160u);
  EXPECT_EQ(absl::flat_hash_set<int64_t>(all.begin(), all.end()).size(), all.size());
  EXPECT_GT(search.model_fits(), 0);
}

TEST(ModelGuidedSearchTest, DeterministicForASeed) {
  autotvm::ConfigSpace space = SyntheticSpace();
  ModelGuidedSearch a(space, FastOptions(5)), b(space, FastOptions(5)), c(space, FastOptions(6));
  std::vector<int64_t> ra = RunLoop(space, a, 96, 16), rb = RunLoop(space, b, 96, 16);
  std::vector<int64_t> rc = RunLoop(space, c, 96, 16);
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  EXPECT_EQ(a.model_fits(), b.model_fits());
}

// Trials until a config within 5% of the optimum is measured (`cap` + 1 when none is).
int TrialsToNearOptimum(const autotvm::ConfigSpace& space, SearchStrategy& search, double target,
                        int cap) {
  int trials = 0;
  while (trials < cap && search.HasNext()) {
    std::vector<int64_t> batch = search.NextBatch(16);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (trials + static_cast<int>(i) < cap && SyntheticCost(space, batch[i]) <= target) {
        return trials + static_cast<int>(i) + 1;
      }
    }
    trials += static_cast<int>(batch.size());
    search.Update(batch, Measure(space, batch));
  }
  return cap + 1;
}

TEST(ModelGuidedSearchTest, FindsNearOptimumFasterThanRandom) {
  autotvm::ConfigSpace space = SyntheticSpace();
  double best = 1e9;
  for (int64_t i = 0; i < space.size(); ++i) best = std::min(best, SyntheticCost(space, i));
  const double target = best * 1.05;
  int64_t near = 0;
  for (int64_t i = 0; i < space.size(); ++i) near += SyntheticCost(space, i) <= target;
  // Rare enough that random search needs many trials (expected ~ size / near).
  ASSERT_LT(near * 200, space.size()) << near;

  const int kCap = 400;
  double model_sum = 0, random_sum = 0;
  int model_found = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    ModelGuidedSearch model(space, FastOptions(seed));
    RandomSearch random(space.size(), seed);
    int m = TrialsToNearOptimum(space, model, target, kCap);
    int r = TrialsToNearOptimum(space, random, target, kCap);
    std::printf("seed %d: model-guided %d trials, random %d trials (cap %d)\n",
                static_cast<int>(seed), m, r, kCap);
    model_sum += m;
    random_sum += r;
    model_found += m <= kCap;
  }
  std::printf("near-optimal configs: %lld of %lld; mean trials model %.1f, random %.1f\n",
              static_cast<long long>(near), static_cast<long long>(space.size()), model_sum / 5,
              random_sum / 5);
  EXPECT_GE(model_found, 4);
  EXPECT_LT(model_sum * 2, random_sum);
}

autotvm::Record MeasuredRecord(const autotvm::ConfigSpace& space, int64_t index) {
  autotvm::Record r;
  r.index = index;
  r.config = *space.Get(index);
  r.result.costs = {SyntheticCost(space, index)};
  r.result.error_no = r.result.costs[0] >= 1e9 ? autotvm::kRuntimeDevice : autotvm::kNoError;
  return r;
}

TEST(ModelGuidedSearchTest, TransferHistoryWarmStarts) {
  autotvm::ConfigSpace space = SyntheticSpace();
  std::vector<autotvm::Record> history;
  std::mt19937_64 rng(99);
  absl::flat_hash_set<int64_t> old;
  while (history.size() < 150) {
    int64_t index = space.RandomIndex(rng);
    if (old.insert(index).second) history.push_back(MeasuredRecord(space, index));
  }
  autotvm::Record foreign = history[0];
  foreign.config.knobs.pop_back();  // lacks unroll_explicit: skipped
  history.push_back(foreign);

  double warm_sum = 0, cold_sum = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    ModelGuidedSearch warm(space, FastOptions(seed));
    warm.AddTransferHistory(history, /*same_workload=*/true);
    EXPECT_EQ(warm.model_fits(), 0);  // fitted when first asked for a batch
    RandomSearch cold(space.size(), seed);
    std::vector<int64_t> w = warm.NextBatch(32), c = cold.NextBatch(32);
    EXPECT_EQ(warm.model_fits(), 1);
    ASSERT_EQ(w.size(), 32u);
    for (int64_t i : w) EXPECT_FALSE(old.contains(i)) << "measured before: " << i;
    auto median = [&](std::vector<int64_t> batch) {
      std::vector<double> costs;
      for (int64_t i : batch) costs.push_back(SyntheticCost(space, i));
      std::nth_element(costs.begin(), costs.begin() + costs.size() / 2, costs.end());
      return costs[costs.size() / 2];
    };
    warm_sum += median(w);
    cold_sum += median(c);
  }
  std::printf("first batch median cost: warm %.3g s, random %.3g s\n", warm_sum / 3, cold_sum / 3);
  EXPECT_LT(warm_sum * 1.3, cold_sum);

  // Too little history: no model yet, batches stay random until min_train valid measurements.
  ModelGuidedSearch few(space, FastOptions(1));
  few.AddTransferHistory(absl::MakeConstSpan(history).subspan(0, 5), true);
  few.NextBatch(4);
  EXPECT_EQ(few.model_fits(), 0);
}

// Real conv2d_nchw.cuda spaces of two VGG-16 layers; the cost is a function of the launch shape
// read from the entity (not from the features under test): 128 threads per block, 8 items each.
autotvm::ConfigSpace VggSpace(int64_t channels, int64_t size, autotvm::Workload* workload) {
  autotvm::Json args = autotvm::Json::parse(
      R"([["TENSOR", [1, 64, 224, 224], "float32"], ["TENSOR", [64, 64, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  args[0][1] = autotvm::Json::array({1, channels, size, size});
  args[1][1] = autotvm::Json::array({channels, channels, 3, 3});
  *workload = {"conv2d_nchw.cuda", args};
  return *BuildConfigSpace(*workload, *autotvm::ParseTarget("cuda"));
}

double LaunchShapeCost(const autotvm::ConfigEntity& c) {
  double threads = 1, inner = 1;
  for (const char* name : {"tile_f", "tile_y", "tile_x"}) {
    std::vector<int64_t> s = *c.Split(name);
    threads *= s[2];
    inner *= s[1] * s[3];
  }
  if (threads > 1024) return 1e9;
  double t = std::log2(threads) - 7, i = std::log2(inner) - 3;
  return 1e-3 * (1 + 0.2 * t * t + 0.1 * i * i);
}

TEST(ModelGuidedSearchTest, TransferFromAnotherWorkloadOfTheTask) {
  autotvm::Workload w_old, w_new;
  autotvm::ConfigSpace old_space = VggSpace(64, 224, &w_old);
  autotvm::ConfigSpace space = VggSpace(128, 112, &w_new);
  autotvm::Target cuda = *autotvm::ParseTarget("cuda");
  std::vector<autotvm::Record> history;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    int64_t index = old_space.RandomIndex(rng);
    autotvm::ConfigEntity c = *old_space.Get(index);
    autotvm::MeasureResult r;
    r.costs = {LaunchShapeCost(c)};
    r.error_no = r.costs[0] >= 1e9 ? autotvm::kRuntimeDevice : autotvm::kNoError;
    history.push_back(autotvm::MakeRecord(cuda, w_old, index, c, r));
  }
  auto median_cost = [&](const std::vector<int64_t>& batch) {
    std::vector<double> costs;
    for (int64_t i : batch) costs.push_back(LaunchShapeCost(*space.Get(i)));
    std::nth_element(costs.begin(), costs.begin() + costs.size() / 2, costs.end());
    return costs[costs.size() / 2];
  };
  ModelSearchOptions options = FastOptions(1);
  options.plan_size = 64;
  ModelGuidedSearch warm(space, options);
  warm.AddTransferHistory(history, /*same_workload=*/false);
  RandomSearch cold(space.size(), 1);
  double warm_median = median_cost(warm.NextBatch(48)),
         cold_median = median_cost(cold.NextBatch(48));
  EXPECT_EQ(warm.model_fits(), 1);
  std::printf("other-workload transfer, first batch median: warm %.3g s, random %.3g s\n",
              warm_median, cold_median);
  EXPECT_LT(warm_median * 1.5, cold_median);
}

// The default options (128 chains x 300 steps, 60 rounds) on a real space: a few replans, no
// repeats, and a bound on the time per replan that tuning pays after every batch.
TEST(ModelGuidedSearchTest, DefaultOptionsOnARealSpace) {
  autotvm::Workload w;
  autotvm::ConfigSpace space = VggSpace(128, 112, &w);
  ModelSearchOptions options;
  options.model.threads = 1;
  ModelGuidedSearch search(space, options);
  absl::flat_hash_set<int64_t> seen;
  auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < 6; ++b) {
    std::vector<int64_t> batch = search.NextBatch(16);
    ASSERT_EQ(batch.size(), 16u);
    std::vector<autotvm::MeasureResult> results;
    for (int64_t i : batch) {
      EXPECT_TRUE(seen.insert(i).second) << i;
      autotvm::MeasureResult r;
      r.costs = {LaunchShapeCost(*space.Get(i))};
      r.error_no = r.costs[0] >= 1e9 ? autotvm::kRuntimeDevice : autotvm::kNoError;
      results.push_back(r);
    }
    search.Update(batch, results);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("default options: %d fits in %.2f s\n", search.model_fits(), seconds);
  EXPECT_GE(search.model_fits(), 4);
}

}  // namespace
}  // namespace tunejit

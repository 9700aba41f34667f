#include "tuner/budget.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(SplitBudget, ProportionalToFlopsAfterMinimum) {
  // 100 trials, min 10 each: the remaining 80 split 1:3.
  EXPECT_EQ(SplitBudget({1e9, 3e9}, 100, 10), (std::vector<int64_t>{30, 70}));
  EXPECT_EQ(SplitBudget({1e9, 3e9}, 100, 0), (std::vector<int64_t>{25, 75}));
}

TEST(SplitBudget, SumsToTotalAndFavoursBigTasks) {
  const std::vector<double> flops = {3.7e9, 1.2e8, 9.9e9, 5.5e8, 2.0e9, 1.0e7, 7.3e9};
  for (int64_t total : {7, 50, 99, 1000, 2001, 12345}) {
    for (int64_t min : {0, 1, 5, 32}) {
      std::vector<int64_t> share = SplitBudget(flops, total, min);
      ASSERT_EQ(share.size(), flops.size());
      EXPECT_EQ(Sum(share), total) << total << " " << min;
      if (total >= min * static_cast<int64_t>(flops.size())) {
        for (int64_t s : share) EXPECT_GE(s, min);
        // A task with more FLOPs never gets fewer trials.
        for (size_t i = 0; i < flops.size(); ++i) {
          for (size_t j = 0; j < flops.size(); ++j) {
            if (flops[i] > flops[j]) {
              EXPECT_GE(share[i], share[j]) << total << " " << min;
            }
          }
        }
      }
    }
  }
  std::vector<int64_t> share = SplitBudget(flops, 2000, 20);
  EXPECT_GT(share[2], 10 * share[5]);  // 9.9 GFLOP vs 10 MFLOP
}

TEST(SplitBudget, TooSmallTotalSplitsEvenly) {
  std::vector<int64_t> share = SplitBudget({1e9, 1e6, 5e9}, 10, 8);
  EXPECT_EQ(Sum(share), 10);
  for (int64_t s : share) EXPECT_GE(s, 3);
}

TEST(SplitBudget, ZeroOrBadFlopsSplitEvenly) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(SplitBudget({0, -1, nan}, 9, 1), (std::vector<int64_t>{3, 3, 3}));
  // A bad entry counts as zero beside a real one: it keeps only the minimum.
  EXPECT_EQ(SplitBudget({nan, 1e9}, 50, 5), (std::vector<int64_t>{5, 45}));
}

TEST(SplitBudget, EmptyOrNoBudget) {
  EXPECT_TRUE(SplitBudget({}, 100, 1).empty());
  EXPECT_EQ(SplitBudget({1, 2}, 0, 1), (std::vector<int64_t>{0, 0}));
}

TEST(GainWeights, TheBestAlternativeCarriesTheNodesTimeSlowerOnesLess) {
  // Two alternatives for one pair of nodes (2 ms and 2.2 ms), one single node, one with no valid
  // time, and an alternative for f.17 more than kMaxBehindBest times slower.
  std::vector<std::string> labels = {"f.12,f.14", "f.12,f.14", "f.17", "f.19", "f.17"};
  std::vector<double> w = GainWeights(labels, {2e-3, 2.2e-3, 1e-3, 0.0, 1.3e-3});
  ASSERT_EQ(w.size(), 5u);
  EXPECT_DOUBLE_EQ(w[0], 2 * 2e-3);  // two nodes at the best time
  // 10% slower: (1 / 1.1)^3 = 75% of the weight.
  EXPECT_NEAR(w[1], 2 * 2e-3 * 0.7513, 1e-7);
  EXPECT_DOUBLE_EQ(w[2], 1e-3);
  EXPECT_EQ(w[3], 0.0);
  EXPECT_EQ(w[4], 0.0);  // 1.3x behind
  // Exactly at the cut still gets time.
  EXPECT_GT(GainWeights({"a", "a"}, {1e-3, kMaxBehindBest * 1e-3})[1], 0.0);
  EXPECT_EQ(GainWeights({"a"}, {std::numeric_limits<double>::infinity()})[0], 0.0);
  EXPECT_EQ(GainWeights({"a"}, {std::nan("")})[0], 0.0);
}

TEST(ShareOfRemaining, WeightShareOfTheSlotsTimeNeverPastTheDeadline) {
  EXPECT_DOUBLE_EQ(ShareOfRemaining(100, 1, 1, 4), 25);
  EXPECT_DOUBLE_EQ(ShareOfRemaining(100, 2, 1, 4), 50);   // two slots do twice the work
  EXPECT_DOUBLE_EQ(ShareOfRemaining(100, 4, 3, 4), 100);  // capped at the deadline
  EXPECT_DOUBLE_EQ(ShareOfRemaining(100, 1, 4, 4), 100);  // the last task gets all that is left
  EXPECT_EQ(ShareOfRemaining(-5, 1, 1, 1), 0);            // past the deadline
  EXPECT_EQ(ShareOfRemaining(100, 1, 0, 1), 0);
  EXPECT_EQ(ShareOfRemaining(100, 1, 1, 0), 0);
}

}  // namespace
}  // namespace tunejit

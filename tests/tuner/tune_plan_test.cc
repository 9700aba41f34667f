// Budget durations, shard parsing and the task partition of `tunejit tune` (tuner/tune_plan.h).
#include "tuner/tune_plan.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

TEST(ParseDuration, Units) {
  EXPECT_DOUBLE_EQ(*ParseDuration("90s"), 90);
  EXPECT_DOUBLE_EQ(*ParseDuration("5m"), 300);
  EXPECT_DOUBLE_EQ(*ParseDuration("1h"), 3600);
  EXPECT_DOUBLE_EQ(*ParseDuration("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(*ParseDuration("1h2m3s"), 3723);
  EXPECT_DOUBLE_EQ(*ParseDuration("2.5m"), 150);
  EXPECT_DOUBLE_EQ(*ParseDuration("45"), 45);
  EXPECT_DOUBLE_EQ(*ParseDuration("0.5"), 0.5);
}

TEST(ParseDuration, BadInput) {
  for (const char* bad :
       {"", "m", "5x", "5 m", "-5m", "0", "0s", "5m3", "h1", "..s", "1e400", "nan", "-1"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(ParseShard, GoodAndBad) {
  absl::StatusOr<Shard> s = ParseShard("2/4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  EXPECT_TRUE(ParseShard("0/1").ok());
  for (const char* bad : {"", "4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", "/2", "1/"}) {
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  }
}

std::vector<std::string> Keys(int n) {
  std::vector<std::string> k;
  for (int i = 0; i < n; ++i) k.push_back("task" + std::to_string(i * 7919 % 101));
  return k;
}

TEST(ShardTasks, DisjointAndCoversEverything) {
  const std::vector<std::string> keys = Keys(23);
  std::vector<double> w;
  for (int i = 0; i < 23; ++i) w.push_back(1e9 * (1 + (i * 37) % 11));
  for (int n : {1, 2, 3, 5, 23, 30}) {
    std::vector<int> owner(keys.size(), -1);
    for (int i = 0; i < n; ++i) {
      for (size_t t : ShardTasks(keys, w, {i, n})) {
        EXPECT_EQ(owner[t], -1) << "task " << t << " in two shards";
        owner[t] = i;
      }
    }
    for (size_t t = 0; t < keys.size(); ++t) EXPECT_GE(owner[t], 0) << "task " << t << " lost";
  }
}

TEST(ShardTasks, IndependentOfInputOrder) {
  std::vector<std::string> keys = Keys(12);
  std::vector<double> w = {5, 1, 9, 9, 2, 0, 3, 7, 7, 1, 4, 6};
  std::vector<std::set<std::string>> want;
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> s;
    for (size_t t : ShardTasks(keys, w, {i, 3})) s.insert(keys[t]);
    want.push_back(s);
  }
  std::vector<size_t> perm(keys.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  std::rotate(perm.begin(), perm.begin() + 5, perm.end());
  std::vector<std::string> k2;
  std::vector<double> w2;
  for (size_t p : perm) {
    k2.push_back(keys[p]);
    w2.push_back(w[p]);
  }
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> got;
    for (size_t t : ShardTasks(k2, w2, {i, 3})) got.insert(k2[t]);
    EXPECT_EQ(got, want[i]) << "shard " << i;
  }
}

TEST(ShardTasks, BalancesWork) {
  // One huge task and many small ones: the huge one gets a shard mostly to itself.
  std::vector<std::string> keys = Keys(9);
  std::vector<double> w = {100, 10, 10, 10, 10, 10, 10, 10, 10};
  std::vector<size_t> s0 = ShardTasks(keys, w, {0, 2});
  std::vector<size_t> s1 = ShardTasks(keys, w, {1, 2});
  EXPECT_EQ(s0, std::vector<size_t>{0});  // the biggest goes first, to shard 0
  EXPECT_EQ(s1.size(), 8u);
  // Equal weights are dealt round robin: shard sizes differ by at most one.
  std::vector<double> flat(10, 1.0);
  for (int i = 0; i < 3; ++i) {
    const size_t n = ShardTasks(Keys(10), flat, {i, 3}).size();
    EXPECT_TRUE(n == 3 || n == 4) << n;
  }
}

}  // namespace
}  // namespace tunejit

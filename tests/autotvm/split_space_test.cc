// Split candidate lists in TVM's order (docs/tvm-templates.md section 1.6).
#include "autotvm/split_space.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tunejit::autotvm {
namespace {

using Splits = std::vector<std::vector<int64_t>>;

TEST(SplitSpaceTest, CountsFromTheSpec) {
  struct Case {
    int64_t length;
    int n;
    int64_t count;
  };
  const Case kCases[] = {{128, 4, 120},     {224, 4, 224},   {1000, 4, 400},  {4096, 4, 455},
                         {4096, 3, 91},     {4096, 2, 13},   {25088, 3, 330}, {25088, 2, 30},
                         {401408, 4, 5600}, {6272, 4, 1200}, {512, 4, 220},   {512, 2, 10},
                         {64, 4, 84},       {1, 4, 1},       {8, 4, 20}};
  for (const Case& c : kCases) {
    absl::StatusOr<Splits> s = SplitFactorCandidates(c.length, c.n);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(static_cast<int64_t>(s->size()), c.count) << c.length << " n=" << c.n;
    EXPECT_EQ(CountSplitCandidates(c.length, c.n), c.count) << c.length << " n=" << c.n;
    for (const std::vector<int64_t>& e : *s) {
      int64_t p = 1;
      for (size_t i = 1; i < e.size(); ++i) p *= e[i];
      EXPECT_EQ(e[0], -1);
      EXPECT_EQ(c.length % p, 0);
    }
  }
}

TEST(SplitSpaceTest, OrderMatchesTvm) {
  absl::StatusOr<Splits> s = SplitFactorCandidates(8, 4);
  ASSERT_TRUE(s.ok());
  Splits first(s->begin(), s->begin() + 11);
  EXPECT_EQ(first, (Splits{{-1, 1, 1, 1},
                           {-1, 2, 1, 1},
                           {-1, 4, 1, 1},
                           {-1, 8, 1, 1},
                           {-1, 1, 2, 1},
                           {-1, 2, 2, 1},
                           {-1, 4, 2, 1},
                           {-1, 1, 4, 1},
                           {-1, 2, 4, 1},
                           {-1, 1, 8, 1},
                           {-1, 1, 1, 2}}));
  s = SplitFactorCandidates(4, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Splits{{-1, 1, 1}, {-1, 2, 1}, {-1, 4, 1}, {-1, 1, 2}, {-1, 2, 2}, {-1, 1, 4}}));
  EXPECT_EQ(Divisors(28), (std::vector<int64_t>{1, 2, 4, 7, 14, 28}));
  EXPECT_FALSE(SplitFactorCandidates(0, 4).ok());
  EXPECT_FALSE(SplitFactorCandidates(int64_t{1} << 50, 4).ok());
  EXPECT_FALSE(SplitFactorCandidates(720720, 8, 1000).ok());  // over the candidate cap
}

}  // namespace
}  // namespace tunejit::autotvm

#include "tuner/search.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

std::vector<int64_t> Drain(SearchStrategy& s, int batch) {
  std::vector<int64_t> all;
  while (s.HasNext()) {
    std::vector<int64_t> b = s.NextBatch(batch);
    EXPECT_FALSE(b.empty());
    EXPECT_LE(static_cast<int>(b.size()), batch);
    all.insert(all.end(), b.begin(), b.end());
  }
  EXPECT_TRUE(s.NextBatch(batch).empty());
  return all;
}

TEST(RandomSearch, CoversSmallSpaceWithoutRepeats) {
  RandomSearch search(100, 7);
  std::vector<int64_t> all = Drain(search, 7);
  ASSERT_EQ(all.size(), 100u);
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(all, expected);  // shuffled, not index order
}

TEST(RandomSearch, SeedDeterminesOrder) {
  RandomSearch a(1000, 3), b(1000, 3), c(1000, 4);
  std::vector<int64_t> first_a = a.NextBatch(50);
  EXPECT_EQ(first_a, b.NextBatch(50));
  EXPECT_NE(first_a, c.NextBatch(50));
}

TEST(RandomSearch, HugeSpaceNoRepeatsInRange) {
  const int64_t size = 16986931200;  // the conv2d_nchw space of a VGG layer
  RandomSearch search(size, 1);
  std::set<int64_t> seen;
  for (int i = 0; i < 20; ++i) {
    for (int64_t index : search.NextBatch(500)) {
      EXPECT_GE(index, 0);
      EXPECT_LT(index, size);
      EXPECT_TRUE(seen.insert(index).second) << index;
    }
  }
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_GT(*seen.rbegin(), size / 2);  // not stuck in a corner of the space
  EXPECT_TRUE(search.HasNext());
}

TEST(RandomSearch, TinyAndEmptySpaces) {
  RandomSearch one(1, 9);
  EXPECT_EQ(one.NextBatch(4), std::vector<int64_t>{0});
  EXPECT_FALSE(one.HasNext());
  RandomSearch none(0, 9);
  EXPECT_FALSE(none.HasNext());
  EXPECT_TRUE(none.NextBatch(4).empty());
}

TEST(GridSearch, IndexOrderInBatches) {
  GridSearch search(10);
  EXPECT_EQ(search.NextBatch(4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(search.NextBatch(4), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_TRUE(search.HasNext());
  EXPECT_EQ(search.NextBatch(4), (std::vector<int64_t>{8, 9}));
  EXPECT_FALSE(search.HasNext());
  EXPECT_TRUE(search.NextBatch(4).empty());
}

TEST(GridSearch, DrainIsIota) {
  GridSearch search(37);
  std::vector<int64_t> expected(37);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(Drain(search, 5), expected);
}

}  // namespace
}  // namespace tunejit

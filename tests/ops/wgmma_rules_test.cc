// ops/wgmma_rules.h: the persistent grid of the wgmma templates, with and without clusters.
#include "ops/wgmma_rules.h"

#include "gtest/gtest.h"

namespace tunejit {
namespace {

DeviceLimits Sms(int count) {
  DeviceLimits limits = DeviceLimits::ForArch(GpuArch{9, 0, true});
  limits.sm_count = count;
  return limits;
}

TEST(PersistentGrid, OneBlockPerSmOrPerTile) {
  EXPECT_EQ(*PersistentGrid("t", 1, Sms(132)), 1u);
  EXPECT_EQ(*PersistentGrid("t", 100, Sms(132)), 100u);
  EXPECT_EQ(*PersistentGrid("t", 1568, Sms(132)), 132u);
}

// Clusters of two: the grid is even (a cluster's blocks take neighbouring tiles), at most one
// block per SM, and never more blocks than tiles.
TEST(PersistentGrid, ClustersOfTwoTakeAnEvenGrid) {
  EXPECT_EQ(*PersistentGrid("t", 1568, Sms(132), 2), 132u);
  EXPECT_EQ(*PersistentGrid("t", 1568, Sms(7), 2), 6u);
  EXPECT_EQ(*PersistentGrid("t", 6, Sms(132), 2), 6u);
  EXPECT_EQ(*PersistentGrid("t", 2, Sms(1), 2), 2u);  // one cluster even on one SM's limits
}

TEST(PersistentGrid, BadTileCountsAreInvalidArgument) {
  for (int64_t tiles : {int64_t{0}, int64_t{-4}, int64_t{1} << 31}) {
    const absl::StatusOr<uint32_t> grid = PersistentGrid("conv2d_nhwc_wgmma.cuda", tiles, Sms(132));
    EXPECT_EQ(grid.status().code(), absl::StatusCode::kInvalidArgument) << tiles;
  }
  const absl::StatusOr<uint32_t> odd = PersistentGrid("conv2d_nhwc_wgmma.cuda", 5, Sms(132), 2);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(odd.status().message(), "conv2d_nhwc_wgmma.cuda: 5 output tiles in clusters of 2");
}

}  // namespace
}  // namespace tunejit

#include "ops/winograd_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"

namespace tunejit {

WinogradGeometry WinogradGeometryOf(const autotvm::Conv2dParams& params) {
  WinogradGeometry g;
  g.m = params.h % 8 == 0 ? 4 : 2;
  g.alpha = g.m + static_cast<int>(params.kh) - 1;
  g.oh = params.OutH();
  g.ow = params.OutW();
  g.nh = CeilDiv64(g.oh, g.m);
  g.nw = CeilDiv64(g.ow, g.m);
  g.tiles = params.n * g.nh * g.nw;
  return g;
}

absl::StatusOr<WinogradTiling> ReadWinogradTiling(absl::string_view task,
                                                  const autotvm::ConfigEntity& config) {
  if (config.Find("tile_b") != nullptr) {
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile b, ReadSpatialTile(config, "tile_b"));
    if (b.block() != 1) {
      return InvalidConfig(task, "tile_b must be [-1, 1, 1, 1] (its only candidate)");
    }
  }
  WinogradTiling t;
  TUNEJIT_ASSIGN_OR_RETURN(t.y, ReadSpatialTile(config, "tile_y"));
  TUNEJIT_ASSIGN_OR_RETURN(t.x, ReadSpatialTile(config, "tile_x"));
  TUNEJIT_ASSIGN_OR_RETURN(t.rc, ReadInnerFactor(config, "tile_rc"));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, ReadOtherOr(config, "auto_unroll_max_step", 0));
  if (unroll < 0 || unroll > 1 << 16) {
    return InvalidConfig(task, absl::StrCat("auto_unroll_max_step = ", unroll));
  }
  t.unroll = static_cast<int>(unroll);
  return t;
}

autotvm::ConfigEntity WinogradFallback(const autotvm::Conv2dParams& params) {
  const WinogradGeometry g = WinogradGeometryOf(params);
  const int64_t ty = std::min<int64_t>(8, params.co);
  const int64_t yi = params.co >= 32 ? 4 : 1;
  const int64_t tx = std::min<int64_t>(16, g.tiles);
  const int64_t xi = g.tiles >= 32 ? 2 : 1;
  autotvm::ConfigEntity config;
  config.knobs.push_back(SplitKnob("tile_b", {-1, 1, 1, 1}));
  config.knobs.push_back(SplitKnob("tile_y", {-1, 1, ty, yi}));
  config.knobs.push_back(SplitKnob("tile_x", {-1, 1, tx, xi}));
  config.knobs.push_back(SplitKnob("tile_rc", {-1, LargestDivisorAtMost(params.ci, 8)}));
  config.knobs.push_back(OtherKnob("auto_unroll_max_step", 1500));
  config.knobs.push_back(OtherKnob("unroll_explicit", 1));
  return config;
}

}  // namespace tunejit

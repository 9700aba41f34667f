// File: ops/winograd_plan.h
// Internal to ops/winograd.cc and its tests: the tile geometry of conv2d_nchw_winograd.cuda
// (docs/tvm-templates.md 5.2-5.5), its knobs as read from a config, and our fallback config.
//
//   WinogradGeometry g = WinogradGeometryOf(params);   // m = 4 if H % 8 == 0 else 2
//   g.tiles  // P = N * ceil(OH/m) * ceil(OW/m), the bgemm's x axis
#ifndef TUNEJIT_OPS_WINOGRAD_PLAN_H_
#define TUNEJIT_OPS_WINOGRAD_PLAN_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "autotvm/config_entity.h"
#include "autotvm/workload.h"
#include "ops/split.h"

namespace tunejit {

// int8 winograd is exact while |true output| < 2^29 (winograd_matrices.cuh). With |int8| <= 128 a
// 3x3 output is bounded by 128 * 128 * 9 * CI, which stays below 2^29 up to this CI.
inline constexpr int64_t kWinogradInt8MaxChannels = (int64_t{1} << 29) / (128 * 128 * 9);

struct WinogradGeometry {
  int m = 2;      // output tile: 4 if H % 8 == 0 else 2 (TVM's rule, on the input height)
  int alpha = 4;  // m + r - 1 with r = 3
  int64_t oh = 0, ow = 0;
  int64_t nh = 0, nw = 0;  // tile rows / columns
  int64_t tiles = 0;       // P = N * nh * nw
};
WinogradGeometry WinogradGeometryOf(const autotvm::Conv2dParams& params);

struct WinogradTiling {
  SpatialTile y;   // tile_y over CO
  SpatialTile x;   // tile_x over P
  int rc = 1;      // tile_rc inner factor over CI
  int unroll = 0;  // auto_unroll_max_step
};
// Reads tile_b (must be [-1,1,1,1] when present, its only candidate), tile_y, tile_x, tile_rc and
// auto_unroll_max_step (unroll_explicit is accepted and ignored: CUDA C has one loop form).
absl::StatusOr<WinogradTiling> ReadWinogradTiling(absl::string_view task,
                                                  const autotvm::ConfigEntity& config);

// Our default when the log has no record (TVM's first-candidate fallback runs one thread per
// block): tile_y [-1,1,8,4], tile_x [-1,1,16,2], tile_rc [-1,8], clamped to small axes.
autotvm::ConfigEntity WinogradFallback(const autotvm::Conv2dParams& params);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_WINOGRAD_PLAN_H_

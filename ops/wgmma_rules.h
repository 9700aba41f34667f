// File: ops/wgmma_rules.h
// What every Hopper wgmma template (ops/gemm_wgmma.cc, ops/conv2d_wgmma.cc) checks before
// compiling, on the tile kernel_sources/wgmma_core.cuh runs: wgmma instruction shapes, stage count,
// registers per consumer thread, shared memory, and the architecture. Each rejection is
// InvalidConfig (AutoTVM's "invalid", error_no 1) with the rule and the numbers.
//
//   WgmmaTile t{.m = 128, .n = 128, .k = 64, .stages = 4, .consumer_wg = 2};
//   TUNEJIT_RETURN_IF_ERROR(CheckWgmmaTile("dense_wgmma.cuda", t, limits));
#ifndef TUNEJIT_OPS_WGMMA_RULES_H_
#define TUNEJIT_OPS_WGMMA_RULES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jit/tensor_map.h"
#include "ops/op_template.h"

namespace tunejit {

inline constexpr int64_t kWgmmaAtomK = 64;  // fp16 in one 128-byte swizzled row (wgmma_core.cuh)

struct WgmmaTile {
  int64_t m = 0;  // rows of the output tile (the GEMM's M)
  int64_t n = 0;  // columns (N: output channels)
  int64_t k = 0;  // K per pipeline stage
  int64_t stages = 0;
  int64_t consumer_wg = 0;
  int64_t threads() const { return 128 * (1 + consumer_wg); }
  int64_t rows_per_consumer() const { return m / consumer_wg; }
  // wgmma_core.cuh WgmmaSmemBytes: the stage ring, two mbarriers per stage, 1 KiB alignment.
  int64_t smem_bytes() const { return stages * (m + n) * k * 2 + stages * 2 * 8 + 1024; }
};

// wgmma and setmaxnreg exist only on Hopper (sm_90, built as sm_90a; Blackwell has tcgen05).
absl::Status CheckHopper(absl::string_view task, const DeviceLimits& limits);

// The tile rules: m a multiple of 64 per consumer warpgroup (1 or 2), n one of our wgmma N
// (64/128/192/256), k whole 128-byte rows, 2..8 stages, accumulators + overhead within the
// consumer's registers, the ring within the opt-in shared memory.
absl::Status CheckWgmmaTile(absl::string_view task, const WgmmaTile& t, const DeviceLimits& limits);

// A K-major fp16 TMA view as the core loads it: `dims` innermost first (dims[0] = the contiguous
// channels / K), box {64, box...}, 128-byte swizzle; strides from the dims (dense tensor).
TensorMapDesc Fp16SwizzledMap(std::initializer_list<int64_t> dims,
                              std::initializer_list<int64_t> box);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_WGMMA_RULES_H_

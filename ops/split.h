// File: ops/split.h
// Reading AutoTVM split knobs the way SplitEntity.apply does (docs/tvm-templates.md 1.5): an entity
// [s0, s1, ..., s(n-1)] makes n nested loops whose outer extent is ceil(L / (s1*...*s(n-1))); s0 is
// never read (-1 in generated records, the real outer extent in TopHub and fallback records).
// Also the `factors` candidate list (1.6), for fallbacks and tests, and knob builders.
//
//   TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tf, ReadSpatialTile(config, "tile_f"));  // [-1, V, T, I]
//   tf.block()   // V*T*I outputs per block along that axis
//   TUNEJIT_ASSIGN_OR_RETURN(KernelSplits k, ReadKernelSplits(config, kh, kw));  // TopHub-safe
#ifndef TUNEJIT_OPS_SPLIT_H_
#define TUNEJIT_OPS_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/target.h"

namespace tunejit {

// The largest split factor we accept (larger ones cannot be a block or a thread count anyway).
inline constexpr int64_t kMaxSplitFactor = 1 << 20;

// The split knob `name` with exactly `parts` sizes, each of s1.. in [1, kMaxSplitFactor].
// NotFound if absent; InvalidArgument (naming the knob) if malformed.
absl::StatusOr<std::vector<int64_t>> ReadSplit(const autotvm::ConfigEntity& config,
                                               const std::string& name, int parts);

// A 4-way spatial split [-1, V, T, I]: V virtual threads, T threads, I per-thread inner loop.
struct SpatialTile {
  int v = 1;
  int t = 1;
  int i = 1;
  int block() const { return v * t * i; }   // axis extent covered by one block
  int per_thread() const { return v * i; }  // elements each thread owns along the axis
};
absl::StatusOr<SpatialTile> ReadSpatialTile(const autotvm::ConfigEntity& config,
                                            const std::string& name);

// s1 of a 2-way split [-1, f].
absl::StatusOr<int> ReadInnerFactor(const autotvm::ConfigEntity& config, const std::string& name);

// tile_ry / tile_rx of conv2d_nchw, by name. Converted TopHub records have the two labels swapped
// (docs/tvm-templates.md 1.7): for a non-square kernel, when the split labelled tile_ry does not
// divide KH but divides KW while tile_rx divides KH, the two are swapped back and `swapped` is set.
// A split's "product" is s0*s1 when s0 is a real extent (> 0), else s1.
struct KernelSplits {
  int ry = 1;
  int rx = 1;
  bool swapped = false;
};
absl::StatusOr<KernelSplits> ReadKernelSplits(const autotvm::ConfigEntity& config, int64_t kh,
                                              int64_t kw);

// An `ot` knob's integer value, or `fallback` when the knob is absent.
absl::StatusOr<int64_t> ReadOtherOr(const autotvm::ConfigEntity& config, const std::string& name,
                                    int64_t fallback);

// The `factors` policy candidates of a `parts`-way split of an axis of `length`, in AutoTVM's exact
// order (s(n-1) slowest, s1 fastest; each stored as [-1, s1, ..., s(n-1)]).
std::vector<std::vector<int64_t>> FactorSplitCandidates(int64_t length, int parts);

// The largest divisor of n that is <= bound (>= 1).
int64_t LargestDivisorAtMost(int64_t n, int64_t bound);

// unroll_explicit's candidates: [0, 1] for cuda, [1] for nvptx and rocm.
std::vector<int64_t> UnrollExplicitCandidates(const autotvm::Target& target);

// Knob builders for fallback configs and tests.
autotvm::Knob SplitKnob(const std::string& name, const std::vector<int64_t>& sizes);
autotvm::Knob OtherKnob(const std::string& name, int64_t value);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_SPLIT_H_

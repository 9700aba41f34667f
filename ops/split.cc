#include "ops/split.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunejit {

absl::StatusOr<std::vector<int64_t>> ReadSplit(const autotvm::ConfigEntity& config,
                                               const std::string& name, int parts) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, config.Split(name));
  if (static_cast<int>(sizes.size()) != parts) {
    return absl::InvalidArgumentError(absl::StrCat("split knob ", name, " has ", sizes.size(),
                                                   " sizes [", absl::StrJoin(sizes, ", "),
                                                   "], the template needs ", parts));
  }
  for (int i = 1; i < parts; ++i) {
    if (sizes[i] < 1 || sizes[i] > kMaxSplitFactor) {
      return absl::InvalidArgumentError(absl::StrCat("split knob ", name, " = [",
                                                     absl::StrJoin(sizes, ", "), "]: size ", i,
                                                     " must be in [1, ", kMaxSplitFactor, "]"));
    }
  }
  return sizes;
}

absl::StatusOr<SpatialTile> ReadSpatialTile(const autotvm::ConfigEntity& config,
                                            const std::string& name) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> s, ReadSplit(config, name, 4));
  SpatialTile tile{static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])};
  if (int64_t{tile.v} * tile.t * tile.i > kMaxSplitFactor) {
    return absl::InvalidArgumentError(absl::StrCat("split knob ", name, ": block tile ",
                                                   int64_t{tile.v} * tile.t * tile.i, " exceeds ",
                                                   kMaxSplitFactor));
  }
  return tile;
}

absl::StatusOr<int> ReadInnerFactor(const autotvm::ConfigEntity& config, const std::string& name) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> s, ReadSplit(config, name, 2));
  return static_cast<int>(s[1]);
}

namespace {

int64_t SplitProduct(const std::vector<int64_t>& s) { return s[0] > 0 ? s[0] * s[1] : s[1]; }

}  // namespace

absl::StatusOr<KernelSplits> ReadKernelSplits(const autotvm::ConfigEntity& config, int64_t kh,
                                              int64_t kw) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> ry, ReadSplit(config, "tile_ry", 2));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> rx, ReadSplit(config, "tile_rx", 2));
  KernelSplits out{static_cast<int>(ry[1]), static_cast<int>(rx[1]), false};
  const int64_t p_ry = SplitProduct(ry);
  const int64_t p_rx = SplitProduct(rx);
  const bool as_labelled = kh % p_ry == 0 && kw % p_rx == 0;
  const bool as_swapped = kw % p_ry == 0 && kh % p_rx == 0;
  if (kh != kw && !as_labelled && as_swapped) {
    std::swap(out.ry, out.rx);
    out.swapped = true;
  }
  return out;
}

std::vector<int64_t> UnrollExplicitCandidates(const autotvm::Target& target) {
  if (target.name == "nvptx" || target.name == "rocm") return {1};
  return {0, 1};
}

absl::StatusOr<int64_t> ReadOtherOr(const autotvm::ConfigEntity& config, const std::string& name,
                                    int64_t fallback) {
  if (config.Find(name) == nullptr) return fallback;
  return config.Other(name);
}

namespace {

void EnumerateSplits(const std::vector<int64_t>& factors, int64_t length, int position,
                     std::vector<int64_t>& current, std::vector<std::vector<int64_t>>& out) {
  if (position == 0) {
    int64_t product = 1;
    for (size_t i = 1; i < current.size(); ++i) product *= current[i];
    if (product <= length && length % product == 0) out.push_back(current);
    return;
  }
  // The outermost DFS level picks the last size, the innermost s1 (so s1 varies fastest).
  for (int64_t f : factors) {
    current[position] = f;
    EnumerateSplits(factors, length, position - 1, current, out);
  }
}

}  // namespace

std::vector<std::vector<int64_t>> FactorSplitCandidates(int64_t length, int parts) {
  std::vector<int64_t> factors;
  for (int64_t f = 1; f <= length; ++f) {
    if (length % f == 0) factors.push_back(f);
  }
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> current(parts, -1);
  EnumerateSplits(factors, length, parts - 1, current, out);
  return out;
}

int64_t LargestDivisorAtMost(int64_t n, int64_t bound) {
  for (int64_t d = std::min(n, bound); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

autotvm::Knob SplitKnob(const std::string& name, const std::vector<int64_t>& sizes) {
  return autotvm::Knob{name, "sp", autotvm::Json(sizes)};
}

autotvm::Knob OtherKnob(const std::string& name, int64_t value) {
  return autotvm::Knob{name, "ot", autotvm::Json(value)};
}

}  // namespace tunejit

// File: executor/weight_values.h
// Reading a float32 weight's values where a fusion depends on them (the exact GELU's constants,
// attention's scale): each value in turn, unaligned bytes included (a mapped safetensors file).
//
//   EveryWeightValue(graph, weights, t, [](float v) { return v == 0.5f; })
#ifndef TUNEJIT_EXECUTOR_WEIGHT_VALUES_H_
#define TUNEJIT_EXECUTOR_WEIGHT_VALUES_H_

#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

// Passes each value of float32 weight tensor `t` to `fn` until it returns false. False when `t`
// is not a float32 weight, its bytes are missing or empty, or `fn` returned false.
inline bool EveryWeightValue(const Graph& graph, const WeightSet& weights, int t,
                             absl::FunctionRef<bool(float)> fn) {
  const TensorDesc& d = graph.tensor(t);
  if (d.kind != TensorKind::kWeight || d.dtype != DType::kF32) return false;
  absl::Span<const uint8_t> bytes = weights.Get(t);
  if (bytes.empty() || static_cast<int64_t>(bytes.size()) != d.Bytes()) return false;
  for (size_t k = 0; k < bytes.size(); k += sizeof(float)) {
    float v;
    std::memcpy(&v, bytes.data() + k, sizeof(float));
    if (!fn(v)) return false;
  }
  return true;
}

// Weight `t`'s single value, when every element of it is the same float32; else nullopt.
inline std::optional<float> UniformWeightValue(const Graph& graph, const WeightSet& weights,
                                               int t) {
  std::optional<float> first;
  const bool uniform = EveryWeightValue(graph, weights, t, [&first](float v) {
    if (!first) first = v;
    return v == *first;
  });
  if (!uniform) return std::nullopt;
  return first;
}

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_WEIGHT_VALUES_H_

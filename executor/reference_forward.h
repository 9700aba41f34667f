// File: executor/reference_forward.h
// A plain CPU float32 forward pass of a whole Graph (ops/cpu_reference.h per node), the ground
// truth of the executor tests. Slow (naive loops, double accumulation): for small graphs.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<std::vector<float>> values,
//                            ReferenceForward(graph, weights, {{"input", pixels}}));
//   values[*graph.FindTensor("logits")]
#ifndef TUNEJIT_EXECUTOR_REFERENCE_FORWARD_H_
#define TUNEJIT_EXECUTOR_REFERENCE_FORWARD_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

// Values of every tensor, by graph tensor id (weights included). InvalidArgument for a missing or
// mis-sized input; Unimplemented for the quantization ops (quantize, dequantize, requantize) and
// non-float32 tensors, but for int64 graph inputs (a gather's ids), which are given and held as
// floats: exact for ids below 2^24, far above any vocabulary.
absl::StatusOr<std::vector<std::vector<float>>> ReferenceForward(
    const Graph& graph, const WeightSet& weights,
    const std::map<std::string, std::vector<float>>& inputs);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_REFERENCE_FORWARD_H_

// File: graph/weights.h
// Weight values for a graph's weight tensors, by name: from a safetensors file (memory-mapped, not
// copied), from an importer's decoded bytes (WeightsFromImport), or generated deterministically
// from a seed when no file is given. Random weights are
// flagged (random(), Label()) so every result computed with them can say "random weights".
//
//   TUNEJIT_ASSIGN_OR_RETURN(WeightSet w, LoadWeights(graph, "vgg16.safetensors"));
//   for (const std::string& s : w.warnings()) LOG(s);      // extra tensors in the file
//   absl::Span<const uint8_t> bytes = w.Get(tensor_id);    // memcpy to the device
//   TUNEJIT_ASSIGN_OR_RETURN(WeightSet r, RandomWeights(graph, /*seed=*/1));
//   r.Label();  // "random weights (seed 1)"
//
// Binding errors are InvalidArgument (NotFound when tensors are missing) and list every problem
// at once: "vgg16.safetensors: missing tensors: classifier.6.bias; tensor 'features.0.weight':
// expected F32 [64, 3, 3, 3], got F32 [64, 3, 5, 5]".
#ifndef TUNEJIT_GRAPH_WEIGHTS_H_
#define TUNEJIT_GRAPH_WEIGHTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/shared_bytes.h"
#include "graph/graph.h"
#include "graph/safetensors.h"

namespace tunejit {

class WeightSet {
 public:
  WeightSet(WeightSet&&) noexcept = default;
  WeightSet& operator=(WeightSet&&) noexcept = default;

  // The bytes of weight tensor `tensor_id` (graph tensor id); empty for non-weights.
  absl::Span<const uint8_t> Get(int tensor_id) const { return data_[tensor_id]; }
  bool random() const { return random_; }
  // "weights from <path>" or "random weights (seed N)": put it on every reported result.
  const std::string& Label() const { return label_; }
  // Non-fatal findings, e.g. tensors in the file that the graph does not use.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend absl::StatusOr<WeightSet> LoadWeights(const Graph&, const std::string&);
  friend WeightSet RandomWeights(const Graph&, uint64_t);
  friend absl::StatusOr<WeightSet> WeightsFromImport(const Graph&, std::vector<SharedBytes>,
                                                     std::string);
  WeightSet() = default;

  std::vector<absl::Span<const uint8_t>> data_;  // per graph tensor id
  std::optional<SafetensorsFile> file_;          // owns the mapping the spans point into
  std::vector<std::vector<uint8_t>> owned_;      // random weights' storage
  std::vector<SharedBytes> shared_;              // imported weights' (a model file's mapping)
  bool random_ = false;
  std::string label_;
  std::vector<std::string> warnings_;
};

// Binds every kWeight tensor of `graph` to the tensor of the same name in the safetensors file:
// same dtype and shape required. Extra tensors in the file are warnings (listed), not errors.
absl::StatusOr<WeightSet> LoadWeights(const Graph& graph, const std::string& path);

// Deterministic weights from `seed` (same values on every platform: splitmix64 + Box-Muller, no
// std:: distributions). He initialisation keeps ReLU activations O(1): a weight with shape
// [out, fan_in...] gets N(0, 2 / fan_in) where fan_in is the product of the dims after the first;
// rank-1 tensors (biases, scales) get uniform [-0.05, 0.05] (scales: [0.5, 1.5] x 1/64, so a
// (de/re)quantize stays in range). Int8 weights are uniform in [-64, 64]; int32 uniform [-1000,
// 1000].
WeightSet RandomWeights(const Graph& graph, uint64_t seed);

// Weights an importer decoded (onnx/import.h), taken over without a copy (views into a model
// file stay views): `bytes` is indexed by graph tensor id and must hold exactly
// TensorDesc::Bytes() for every kWeight tensor (empty for the others). `label` is what Label()
// reports, e.g. "weights from resnet50.onnx". InvalidArgument listing every weight tensor whose
// size is wrong or missing.
absl::StatusOr<WeightSet> WeightsFromImport(const Graph& graph, std::vector<SharedBytes> bytes,
                                            std::string label);
// The same for bytes held in vectors (tests, generated weights).
absl::StatusOr<WeightSet> WeightsFromImport(const Graph& graph,
                                            std::vector<std::vector<uint8_t>> bytes,
                                            std::string label);

// Writes the weights of `graph` to a safetensors file (e.g. random weights, to feed another tool),
// with metadata {"tunejit.weights": Label()}.
absl::Status ExportWeights(const Graph& graph, const WeightSet& weights, const std::string& path);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_WEIGHTS_H_

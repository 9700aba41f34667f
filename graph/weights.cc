#include "graph/weights.h"

#include <cmath>
#include <cstring>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/random.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

std::string Describe(DType dtype, const std::vector<int64_t>& shape) {
  return absl::StrCat(std::string(DTypeName(dtype)), " [", absl::StrJoin(shape, ", "), "]");
}

// splitmix64: tiny, fast, and its stream is fixed by its definition (unlike std:: distributions).
// Per-tensor seed: mixes the graph seed with the tensor's name, so adding a layer does not change
// the values of the others.
uint64_t TensorSeed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return SplitMix64(seed ^ h).Next();
}

template <typename T>
void Store(std::vector<uint8_t>* bytes, size_t i, T value) {
  std::memcpy(bytes->data() + i * sizeof(T), &value, sizeof(T));
}

std::vector<uint8_t> Generate(const TensorDesc& t, bool is_scale, uint64_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.Bytes()));
  SplitMix64 rng(TensorSeed(seed, t.name));
  const size_t n = static_cast<size_t>(t.NumElements());
  const double fan_in = t.shape.size() >= 2 ? static_cast<double>(n / t.shape[0]) : 1.0;
  const double he_std = std::sqrt(2.0 / fan_in);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::kF32: {
        double v = t.shape.size() >= 2 ? rng.Normal() * he_std
                   : is_scale          ? (0.5 + rng.Uniform()) / 64.0
                                       : (rng.Uniform() - 0.5) * 0.1;
        Store(&bytes, i, static_cast<float>(v));
        break;
      }
      case DType::kI8:
        Store(&bytes, i, static_cast<int8_t>(static_cast<int>(rng.Next() % 129) - 64));
        break;
      case DType::kI32:
        Store(&bytes, i, static_cast<int32_t>(static_cast<int64_t>(rng.Next() % 2001) - 1000));
        break;
      default:  // other dtypes never reach a graph weight today: leave zeros
        break;
    }
  }
  return bytes;
}

}  // namespace

absl::StatusOr<WeightSet> LoadWeights(const Graph& graph, const std::string& path) {
  TUNEJIT_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(path));
  WeightSet set;
  set.data_.resize(graph.tensors().size());
  std::vector<std::string> missing, mismatched;
  std::set<std::string> used;
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) {
    const TensorDesc& t = graph.tensor(id);
    absl::StatusOr<TensorView> view = file.Get(t.name);
    if (!view.ok()) {
      missing.push_back(t.name);
      continue;
    }
    used.insert(t.name);
    if (view->dtype != t.dtype || view->shape != t.shape) {
      mismatched.push_back(absl::StrCat("tensor '", t.name, "': expected ",
                                        Describe(t.dtype, t.shape), ", got ",
                                        Describe(view->dtype, view->shape)));
      continue;
    }
    set.data_[id] = view->bytes;
  }
  if (!missing.empty() || !mismatched.empty()) {
    std::vector<std::string> parts;
    if (!missing.empty())
      parts.push_back(absl::StrCat("missing tensors: ", absl::StrJoin(missing, ", ")));
    for (std::string& m : mismatched) parts.push_back(std::move(m));
    const std::string message = absl::StrCat(path, ": ", absl::StrJoin(parts, "; "));
    return mismatched.empty() ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::vector<std::string> extra;
  for (const std::string& name : file.Names()) {
    if (!used.count(name)) extra.push_back(name);
  }
  if (!extra.empty()) {
    set.warnings_.push_back(absl::StrCat(
        path, ": ", extra.size(), " tensors not used by the graph: ", absl::StrJoin(extra, ", ")));
  }
  set.label_ = absl::StrCat("weights from ", path);
  set.file_.emplace(std::move(file));  // spans stay valid: the mapping does not move
  return set;
}

WeightSet RandomWeights(const Graph& graph, uint64_t seed) {
  std::set<int> scales;
  for (const Node& node : graph.nodes()) {
    if (node.op == OpKind::kDequantize || node.op == OpKind::kRequantize) {
      scales.insert(node.inputs.at(1));
    }
  }
  WeightSet set;
  set.data_.resize(graph.tensors().size());
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) {
    set.owned_.push_back(Generate(graph.tensor(id), scales.count(id) > 0, seed));
    set.data_[id] = set.owned_.back();  // the inner buffer never moves after this
  }
  set.random_ = true;
  set.label_ = absl::StrCat("random weights (seed ", seed, ")");
  return set;
}

absl::StatusOr<WeightSet> WeightsFromImport(const Graph& graph,
                                            std::vector<std::vector<uint8_t>> bytes,
                                            std::string label) {
  std::vector<SharedBytes> shared;
  shared.reserve(bytes.size());
  for (std::vector<uint8_t>& b : bytes) shared.emplace_back(std::move(b));
  return WeightsFromImport(graph, std::move(shared), std::move(label));
}

absl::StatusOr<WeightSet> WeightsFromImport(const Graph& graph, std::vector<SharedBytes> bytes,
                                            std::string label) {
  bytes.resize(graph.tensors().size());
  std::vector<std::string> wrong;
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) {
    const TensorDesc& t = graph.tensor(id);
    if (static_cast<int64_t>(bytes[id].size()) != t.Bytes()) {
      wrong.push_back(absl::StrCat("'", t.name, "' (", Describe(t.dtype, t.shape),
                                   "): ", bytes[id].size(), " bytes, expected ", t.Bytes()));
    }
  }
  if (!wrong.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": weight tensors of the wrong size: ", absl::StrJoin(wrong, "; ")));
  }
  WeightSet set;
  set.shared_ = std::move(bytes);
  set.data_.resize(set.shared_.size());
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) set.data_[id] = set.shared_[id].span();
  set.label_ = std::move(label);
  return set;
}

absl::Status ExportWeights(const Graph& graph, const WeightSet& weights, const std::string& path) {
  std::vector<TensorView> views;
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) {
    const TensorDesc& t = graph.tensor(id);
    views.push_back({t.name, t.dtype, t.shape, weights.Get(id)});
  }
  return WriteSafetensors(path, views, {{"tunejit.weights", weights.Label()}});
}

}  // namespace tunejit

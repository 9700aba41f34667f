#include "cli/model_source.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "graph/vgg16.h"
#include "onnx/import.h"

namespace tunejit::cli {
namespace {

// The one tensor of `kind`; the CLI feeds one input and reads one output.
absl::StatusOr<std::string> OnlyTensor(const Graph& g, TensorKind kind, const std::string& model) {
  const std::vector<int> ids = g.TensorsOfKind(kind);
  if (ids.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(model, " has ", ids.size(), " ",
                                                   std::string(TensorKindName(kind)),
                                                   "s: tunejit's commands need exactly one"));
  }
  return g.tensor(ids[0]).name;
}

}  // namespace

absl::StatusOr<ModelSource> LoadModel(const std::string& model, int64_t batch,
                                      int64_t builtin_batch) {
  ModelSource m;
  if (model == "vgg16") {
    TUNEJIT_ASSIGN_OR_RETURN(m.graph, BuildVgg16({.batch = batch > 0 ? batch : builtin_batch}));
  } else if (IsOnnxPath(model)) {
    TUNEJIT_ASSIGN_OR_RETURN(OnnxModel onnx, ImportOnnx(model, {.batch = batch}));
    m.graph = std::move(onnx.graph);
    m.weights.emplace(std::move(onnx.weights));
    m.activation_scales = std::move(onnx.activation_scales);
    m.onnx = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown model '", model, "': expected vgg16 or an ONNX file (a path ending in .onnx)"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(m.input, OnlyTensor(m.graph, TensorKind::kInput, model));
  TUNEJIT_ASSIGN_OR_RETURN(m.output, OnlyTensor(m.graph, TensorKind::kOutput, model));
  const std::vector<int64_t>& shape = m.graph.tensor(*m.graph.FindTensor(m.input)).shape;
  if (shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(model, ": input '", m.input, "' is a scalar"));
  }
  m.batch = shape[0];
  return m;
}

}  // namespace tunejit::cli

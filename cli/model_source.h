// File: cli/model_source.h
// The model a command works on, from --model: the built-in "vgg16" or an ONNX file (a path ending
// in .onnx), as a Graph with its one input and one output, and for ONNX the file's weights.
//
//   TUNEJIT_ASSIGN_OR_RETURN(ModelSource m, LoadModel("resnet50.onnx", /*batch=*/0, 128));
//   m.graph; m.input ("input"); m.output ("logits"); m.batch; *m.weights (ONNX only);
//   m.activation_scales (QDQ ONNX models only)
#ifndef TUNEJIT_CLI_MODEL_SOURCE_H_
#define TUNEJIT_CLI_MODEL_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit::cli {

struct ModelSource {
  Graph graph;
  std::optional<WeightSet> weights;  // the ONNX initializers; nullopt for built-in models
  std::string input, output;         // tensor names of the graph's single input and output
  int64_t batch = 0;                 // dim 0 of the input
  bool onnx = false;
  // A QDQ ONNX model's activation scales (OnnxModel::activation_scales); empty otherwise.
  absl::flat_hash_map<std::string, float> activation_scales;
};

// `batch` > 0 sets the batch (an ONNX model's dim 0, static or dynamic); 0 takes the model's:
// `builtin_batch` for vgg16, the file's for ONNX (an error naming --batch when it is dynamic).
// InvalidArgument for another name, or an ONNX graph without exactly one input and one output.
absl::StatusOr<ModelSource> LoadModel(const std::string& model, int64_t batch,
                                      int64_t builtin_batch);

// "--model NAME|FILE.onnx" help text shared by the commands.
inline constexpr char kModelHelp[] = "vgg16 (built in) or an ONNX file (FILE.onnx)";

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_MODEL_SOURCE_H_

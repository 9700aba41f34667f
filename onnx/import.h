// File: onnx/import.h
// ONNX models (opset 11 to 21) as a Graph plus its weights, parsed with the reference ONNX protobuf
// schema (Debian's libonnx-dev). The graph is the same IR the built-in VGG-16 uses, so imported
// models go through the same lowering, kernels, cache and executor.
//
//   TUNEJIT_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx("resnet50.onnx", {.batch = 128}));
//   m.graph.TensorsOfKind(TensorKind::kInput);  // e.g. "input" [128, 3, 224, 224]
//   m.weights.Label();                          // "weights from resnet50.onnx"
//   m.activation_scales;                        // QDQ models: tensor name -> int8 scale
//
// Operators and how they map (graph/graph.h ops):
//   Conv                 conv2d (+ bias_add when B is given); any stride, padding (incl. auto_pad),
//                        dilation and group (depthwise too); the weight must be an initializer
//   BatchNormalization   folded into the preceding Conv's weight and bias (an error elsewhere)
//   Relu, Clip           relu; clip (Clip(0, inf) is relu); min/max must be constants
//   MaxPool              max_pool2d (ceil_mode as extra end padding, which max ignores)
//   AveragePool          avg_pool2d (count_include_pad); a 1x1 stride-1 pool is dropped
//   GlobalAveragePool    global_avg_pool2d
//   Gemm                 dense [M, K] x weight [N, K]: alpha folded into the weight, transB = 0
//                        weights transposed at import, beta * C as bias_add
//   MatMul               dense, with a constant [K, N] right operand (transposed at import)
//   Add                  add (two activations of one shape: residuals) or bias_add (a constant
//                        per-channel vector over dim 1)
//   Flatten, Reshape     flatten; Reshape only to [N, -1] (or an equivalent flatten)
//   Softmax              softmax over the last axis of a 2-D tensor
//   Dropout, Identity    nothing (the output is the input)
//   Constant             a constant (as an initializer)
//   QuantizeLinear /     QDQ int8 (symmetric: zero points 0), imported as the float graph it
//   DequantizeLinear     fake-quantizes (onnx/qdq.cc): Q(s) -> DQ(s) on an activation x is
//                        the identity, with s recorded in activation_scales[x]; DQ of an int8 (or
//                        int32 bias) initializer and DQ(Q(float initializer)) are the constant
//                        q * s (per tensor or per slice of `axis`). `--precision int8` runs it on
//                        our int8 kernels with those scales (ExecutorOptions::activation_scales).
//
// Errors are absl::Status naming the source and, for a node, its op type, name and inputs:
//   resnet.onnx: unsupported op 'Resize' (node 'up1', inputs: x, roi, scales)
//   resnet.onnx: input 'input' dim 0 ('batch_size') is dynamic: pass --batch N
// External data (weights in files beside the model, TensorProto data_location EXTERNAL) is read
// relative to the model's directory; a location outside it is refused.
#ifndef TUNEJIT_ONNX_IMPORT_H_
#define TUNEJIT_ONNX_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

struct OnnxImportOptions {
  // > 0: the first dimension of every graph input (a dynamic batch must be resolved this way; a
  // static one is replaced). 0: the file's, which must then be static.
  int64_t batch = 0;
  // Where external-data locations are resolved. ImportOnnx sets it to the model's directory;
  // empty (ImportOnnxFromBytes' default) refuses external data, so bytes never name a file read.
  std::string external_data_dir = {};
};

struct OnnxModel {
  Graph graph;                        // validated
  WeightSet weights;                  // every kWeight tensor of graph, decoded from the file
  int64_t opset = 0;                  // the ai.onnx opset the file imports
  std::string producer;               // e.g. "pytorch 2.4.0"
  std::vector<std::string> warnings;  // e.g. unused initializers
  // QDQ models: graph tensor name -> the per-tensor int8 scale of its Q -> DQ pair (zero point
  // 0), for ExecutorOptions::activation_scales. Empty for float models.
  absl::flat_hash_map<std::string, float> activation_scales = {};
};

// Reads and imports the model at `path`. NotFound when it cannot be opened.
absl::StatusOr<OnnxModel> ImportOnnx(const std::string& path, const OnnxImportOptions& options);

// Imports a model held in memory (tests, the fuzzer). `source` names it in errors and labels.
absl::StatusOr<OnnxModel> ImportOnnxFromBytes(absl::Span<const uint8_t> bytes,
                                              const OnnxImportOptions& options,
                                              absl::string_view source = "onnx model");

// True when `model` names an ONNX file (ends in ".onnx", any case): how the CLI tells a file from
// a built-in model name.
bool IsOnnxPath(absl::string_view model);

}  // namespace tunejit

#endif  // TUNEJIT_ONNX_IMPORT_H_

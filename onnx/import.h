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
//                        dilation and group (depthwise too; 1 < group < C, ResNeXt's and RegNet's,
//                        as one conv per group on a channel slice, then a concat); the weight
//                        must be an initializer
//   BatchNormalization   folded into the preceding Conv's weight and bias when that conv's output
//                        feeds only it; elsewhere (DenseNet) binary mul by [C, 1, ...] + bias_add
//   Relu, Clip           relu; clip (Clip(0, inf) is relu); min/max must be constants
//   MaxPool              max_pool2d (ceil_mode as extra end padding, which max ignores)
//   AveragePool          avg_pool2d (count_include_pad); a 1x1 stride-1 pool is dropped
//   GlobalAveragePool    global_avg_pool2d
//   Gemm                 dense [M, K] x weight [N, K]: alpha folded into the weight, transB = 0
//                        weights transposed at import, beta * C as bias_add
//   MatMul               activation x constant [K, N]: dense (weight transposed at import); an
//                        activation of rank != 2 through reshape [rows, K] -> dense -> reshape
//                        back, taking a following per-last-dim constant Add in as the dense's
//                        bias_add (Linear layers of ViT / ConvNeXt); otherwise (two activations,
//                        constant A, batched constant B) matmul, constants as weights
//   Add                  bias_add (a constant per-channel vector over dim 1), add (two activations
//                        of one shape: residuals), else binary add with numpy broadcasting
//   Sub, Mul, Div, Pow,  binary with numpy broadcasting; a constant operand becomes a float32
//   Max, Min             weight (an integer one converted; a scalar [1]); Max / Min of more than
//                        two inputs are refused
//   Sigmoid, Tanh, Erf,  unary; HardSigmoid reads alpha and beta; Gelu (opset 20) only
//   Sqrt, Exp, Neg,      approximate = "none"
//   Reciprocal, HardSigmoid, HardSwish, Gelu
//   Concat               concat on any axis, activations and constants (as weights) mixed
//   Pad                  constant mode, pads >= 0: a concat of the fill value before and after
//                        each padded axis (no padding: nothing); other modes are refused
//   Expand               of an activation: a binary add of zeros shaped like the broadcast dims
//   ReduceL2             sqrt(count * reduce_mean(x * x)) (Swin V2's cosine attention)
//   Transpose            transpose (perm; default reversed); the identity permutation is dropped
//   Reshape, Flatten,    flatten when the result is [N, prod(rest)] of a rank > 2 input (Flatten
//   Squeeze, Unsqueeze   axis 1 too), else reshape (0 / -1 / allowzero rules; axes as attributes
//                        before opset 13, as inputs from 13)
//   Slice                one slice per narrowed axis, chained; ONNX clamping; steps >= 1
//   Split                one slice per output (sizes as input from opset 13, attribute before,
//                        num_outputs in opset 18, or equal parts)
//   Gather               on an activation with constant indices: a scalar index is a slice of
//                        one and a reshape dropping the axis (ViT's x[:, 0]); a 1-D run of
//                        consecutive increasing indices a slice; other indices are refused. A
//                        constant float table on axis 0 by INT64 activation indices (BERT's
//                        token ids into its word embeddings): gather, the table a weight
//   ReduceMean           reduce_mean (axes attribute before opset 18, input from 18; keepdims;
//                        noop_with_empty_axes)
//   LayerNormalization   layer_norm (axis, epsilon; Scale and B constants broadcast to the
//                        normalized dims, B absent: zeros); Mean / InvStdDev must be unused
//   Softmax              softmax over any axis from opset 13; before, only over the last axis
//                        (where "coerce to 2-D" is the same thing)
//   Shape, Size          constants (every shape is static once the batch is)
//   Cast                 of an activation only to FLOAT (nothing to do)
//   Dropout, Identity    nothing (the output is the input)
//   Constant             a constant (as an initializer)
//   QuantizeLinear /     QDQ int8 (symmetric: zero points 0), imported as the float graph it
//   DequantizeLinear     fake-quantizes (onnx/qdq.cc): Q(s) -> DQ(s) on an activation x is
//                        the identity, with s recorded in activation_scales[x]; DQ of an int8 (or
//                        int32 bias) initializer and DQ(Q(float initializer)) are the constant
//                        q * s (per tensor or per slice of `axis`). `--precision int8` runs it on
//                        our int8 kernels with those scales (ExecutorOptions::activation_scales).
// A node whose inputs are all constants is evaluated at import (onnx/fold.h) and its outputs bound
// as constants named after their ONNX values, so the shape arithmetic of a dynamic-batch export
// folds away: Shape, Size, Gather, GatherElements, Unsqueeze, Squeeze, Concat, Reshape, Flatten,
// Expand, Transpose, Slice, Split, ConstantOfShape, Range, Cast, CastLike, Where, ScatterND,
// MatMul, Clip, the arithmetic
// (Add, Sub, Mul, Div, Mod, Pow, Min, Max, Neg, Abs, Sign, Sqrt, Reciprocal, Exp, Log, Floor, Ceil,
// Round, Sigmoid, Tanh, Erf, Relu), comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual)
// and logic (Not, And, Or, Xor). Ops of that list with no mapping above (Equal, Where, Range, ...)
// are refused on activations.
//
// Graph inputs are FLOAT, or INT64 (token ids) read by such embedding Gathers only.
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

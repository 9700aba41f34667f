// File: ops/cpu_reference.h
// Plain CPU implementations of every op, the ground truth of the op tests (ours and the int8 /
// winograd ones): NCHW conv2d with groups (depthwise), stride, padding, dilation (float inputs
// accumulated in double; int8 in int32), a patchify conv's patch gather, dense, batch matmul, the
// fused epilogue, max and average pooling, the residual add, clip, softmax and the quantization
// ops. Rounding rules are the kernels' (round half to even, saturate to int8), so int8 results
// compare bit-exactly.
//
//   std::vector<double> acc = cpuref::Conv2dFloat(params, data, weight);
//   std::vector<float> out = cpuref::EpilogueFloat(acc, params.co, oh * ow, epilogue, bias, scale);
#ifndef TUNEJIT_OPS_CPU_REFERENCE_H_
#define TUNEJIT_OPS_CPU_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "autotvm/workload.h"
#include "ops/elementwise.h"
#include "ops/op_template.h"

namespace tunejit::cpuref {

// NCHW conv; weight [co, ci/groups, kh, kw] (depthwise [C, multiplier, kh, kw]: co = C*multiplier,
// groups = C). Output [n, co, OutH, OutW] accumulators.
std::vector<double> Conv2dFloat(const autotvm::Conv2dParams& p, absl::Span<const float> data,
                                absl::Span<const float> weight);
std::vector<int32_t> Conv2dInt8(const autotvm::Conv2dParams& p, absl::Span<const int8_t> data,
                                absl::Span<const int8_t> weight);

// [m, k] x [n, k]^T -> [m, n] accumulators.
std::vector<double> DenseFloat(int64_t m, int64_t n, int64_t k, absl::Span<const float> a,
                               absl::Span<const float> w);
std::vector<int32_t> DenseInt8(int64_t m, int64_t n, int64_t k, absl::Span<const int8_t> a,
                               absl::Span<const int8_t> w);

// The patch matrix of a patchify conv (kernel == stride, no padding; ops/patchify.h): row
// m = (n * OH + y) * OW + x holds the patch of output pixel (y, x) of image n, in the (c, kh, kw)
// order of an OIHW weight's row, then zeros up to `columns` (>= C*KH*KW). [N*OH*OW, columns].
// Its product with the weight [CO, columns] (zero-padded alike) is the conv's output in NHWC.
std::vector<float> PatchGather(const autotvm::Conv2dParams& p, int64_t columns,
                               absl::Span<const float> data);

// TVM's batch_matmul: x [XB, M, K] by y [YB, N, K] (y_kn: y stored [YB, K, N]), a batch dim of 1
// broadcasting -> [B, M, N] accumulators (its epilogue: channels = N, inner = 1).
std::vector<double> BatchMatmulFloat(const autotvm::BatchMatmulParams& p, absl::Span<const float> x,
                                     absl::Span<const float> y, bool y_kn = false);

// The fused epilogue (ops/op_template.h) on accumulators whose channel is (i / inner) % channels
// (conv: inner = OH*OW; dense: inner = 1, channels = N). Float accumulators are first rounded to
// float, as the kernels hold them. `bias` / `scale` are read only when the epilogue uses them.
//   EpilogueFloat: outputs kAccumulator (float ops) and kFloat32.
//   EpilogueInt8:  output kInt8Requantize.
//   EpilogueInt32: output kAccumulator of int8 ops (relu only).
std::vector<float> EpilogueFloat(absl::Span<const double> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale);
std::vector<float> EpilogueFloat(absl::Span<const int32_t> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale);
std::vector<int8_t> EpilogueInt8(absl::Span<const double> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale);
std::vector<int8_t> EpilogueInt8(absl::Span<const int32_t> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale);
std::vector<int32_t> EpilogueInt32(absl::Span<const int32_t> acc, const Epilogue& e);

// The epilogue's activation (Epilogue::activation) of one float value, by the formulas of the
// separate steps' CPU references (Clip below; tensor_ops_reference.h UnaryValue for silu and
// hard_swish). EpilogueFloat applies it last; a test adding a residual applies it after that.
float ActivationValue(const Epilogue& e, float v);

// round half to even, then saturate to [-128, 127].
int8_t SaturateToInt8(float v);

std::vector<float> BiasRelu(absl::Span<const float> x, int64_t channels, int64_t inner,
                            absl::Span<const float> bias, bool relu);
std::vector<float> MaxPool2d(const Pool2dParams& p, absl::Span<const float> x);
std::vector<int8_t> MaxPool2d(const Pool2dParams& p, absl::Span<const int8_t> x);
// Average pooling (Pool2dParams::count_include_pad), summed in double.
std::vector<float> AvgPool2d(const Pool2dParams& p, absl::Span<const float> x);
// Means of `planes` consecutive runs of `inner` floats (global average pooling of NCHW).
std::vector<float> GlobalAvgPool(int64_t planes, int64_t inner, absl::Span<const float> x);
// x + r elementwise (then relu); same sizes.
std::vector<float> AddRelu(absl::Span<const float> x, absl::Span<const float> r, bool relu);
// The int8 residual add's value (AddInt8Kernel): x * scale_x + r * scale_r per element (each
// product and the sum rounded to float once), then relu. Its int8 output is Quantize(value,
// scale_out); its float32 output the value itself. Same sizes.
std::vector<float> AddInt8(absl::Span<const int8_t> x, absl::Span<const int8_t> r, float scale_x,
                           float scale_r, bool relu);
// min(max(x, lo), hi), NaN passing through.
std::vector<float> Clip(absl::Span<const float> x, float lo, float hi);
std::vector<float> Softmax(int64_t rows, int64_t cols, absl::Span<const float> x);
std::vector<int8_t> Quantize(absl::Span<const float> x, float scale);
std::vector<float> Dequantize(absl::Span<const int8_t> x, int64_t channels, int64_t inner,
                              absl::Span<const float> scale);
std::vector<float> Dequantize(absl::Span<const int32_t> x, int64_t channels, int64_t inner,
                              absl::Span<const float> scale);
std::vector<int8_t> Requantize(absl::Span<const int32_t> x, int64_t channels, int64_t inner,
                               absl::Span<const float> scale);

// ||a - b|| / ||b|| (0 when both are zero; infinity on a NaN or a size mismatch).
double RelativeError(absl::Span<const float> a, absl::Span<const float> b);

}  // namespace tunejit::cpuref

#endif  // TUNEJIT_OPS_CPU_REFERENCE_H_

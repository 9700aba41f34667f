// File: ops/elementwise.h
// Builders of the graph's non-tuned kernels (kernel_sources/elementwise.cu): they are not AutoTVM
// tasks and have no knobs, so each returns one PlannedKernel (launch shape + symbolic arguments,
// bound by ops/plan_runner.h like any template's plan). Tensors are contiguous; input/output
// indices are listed per builder.
//
// flatten (and reshape of a contiguous tensor) is a no-op view: the consumer reads the producer's
// buffer with the new shape, so there is no kernel for it.
//
//   TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k, MaxPool2dKernel(pool, ElementType::kFloat32));
//   OpPlan plan{.kernels = {k}};  // then PlanRunner::Create(device, compiler, plan, arch)
#ifndef TUNEJIT_OPS_ELEMENTWISE_H_
#define TUNEJIT_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "ops/op_template.h"

namespace tunejit {

enum class ElementType { kFloat32, kInt8, kInt32, kFloat16 };

// y = x + bias[c] (then relu). Input 0 x [N, C, inner...] float, input 1 bias [C]; output 0 y.
// float32, or float16 on the tensor-core path (NHWC: n = N*H*W, inner = 1; the bias float32).
absl::StatusOr<PlannedKernel> BiasReluKernel(int64_t n, int64_t channels, int64_t inner, bool relu,
                                             ElementType type = ElementType::kFloat32);

// NCHW max / average pooling (floor output size). Max: padding counts as the type's lowest value.
// Average: padding counts as zeros in the divisor only with count_include_pad (ONNX's default is
// to divide by the real elements of each window).
struct Pool2dParams {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int kh = 2, kw = 2, stride_h = 2, stride_w = 2;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;  // average pooling only
  // 0 when the window does not fit (C++ division would truncate a negative numerator to 0).
  int64_t OutH() const {
    const int64_t span = h + pad_top + pad_bottom - kh;
    return span < 0 ? 0 : span / stride_h + 1;
  }
  int64_t OutW() const {
    const int64_t span = w + pad_left + pad_right - kw;
    return span < 0 ? 0 : span / stride_w + 1;
  }
};
// Input 0 x, output 0 y (same type: kFloat32 or kInt8).
absl::StatusOr<PlannedKernel> MaxPool2dKernel(const Pool2dParams& params, ElementType type);

// NHWC max pooling of the tensor-core paths (executor/step_program.h): the same windows as
// MaxPool2dKernel, on [N, H, W, C] float16 (C a multiple of 8), int8 (C a multiple of 16) or
// float32 (C a multiple of 4; the pooled conv's reference): 16-byte loads. Input 0 x, output 0 y.
absl::StatusOr<PlannedKernel> MaxPool2dNhwcKernel(const Pool2dParams& params, ElementType type);

// Pools a conv plan's NHWC output (`conv`'s [N, OH, OW, CO], `type`) with a 2x2 max pool of
// stride 2 after its kernel: the conv writes workspace 0 (it must have no workspace yet) and an
// appended MaxPool2dNhwcKernel reads it into output 0. conv2d_nhwc_wgmma_pool.cuda's plan when
// its tile cannot pool, and that task's reference. MaxPool2dNhwcKernel's errors pass through.
absl::Status AppendMaxPool2x2Nhwc(const autotvm::Conv2dParams& conv, ElementType type,
                                  OpPlan* plan);

// Float32 average pooling; pads must be below the window. Input 0 x, output 0 y.
absl::StatusOr<PlannedKernel> AvgPool2dKernel(const Pool2dParams& params);

// [planes, inner] floats -> [planes] means (global average pooling of NCHW with planes = N*C,
// inner = H*W). Input 0 x, output 0 y.
absl::StatusOr<PlannedKernel> GlobalAvgPoolKernel(int64_t planes, int64_t inner);

// y = x + r (then relu), `total` elements each (float32, or float16 on the tensor-core path): the
// residual add. Input 0 x, input 1 r; output 0 y.
absl::StatusOr<PlannedKernel> AddReluKernel(int64_t total, bool relu,
                                            ElementType type = ElementType::kFloat32);

// The residual add of the int8 modes (+relu): x and r int8, `total` elements each in one layout,
// with their per-tensor scales. `out` kInt8: y = saturate(round_half_even(v / scale_out)) with
// v = x * scale_x + r * scale_r (relu'd before rounding), as QuantizeKernel of v; kFloat32: y = v.
// The scales are kernel arguments (one compiled kernel serves every add); each must be > 0
// (scale_out unused for a float output). Input 0 x, input 1 r; output 0 y.
absl::StatusOr<PlannedKernel> AddInt8Kernel(int64_t total, bool relu, ElementType out,
                                            float scale_x, float scale_r, float scale_out);

// y = min(max(x, lo), hi) over `total` floats (lo <= hi; infinite bounds allowed). Input 0 x,
// output 0 y.
absl::StatusOr<PlannedKernel> ClipKernel(int64_t total, float lo, float hi,
                                         ElementType type = ElementType::kFloat32);

// Softmax over each row of a float [rows, cols]. Input 0 x, output 0 y.
absl::StatusOr<PlannedKernel> SoftmaxKernel(int64_t rows, int64_t cols);

// A 4-D tensor [n, c, h*w] into another element type and/or layout: float32 <-> fp16 (round to
// nearest even) and NCHW <-> NHWC, where the tensor-core paths meet NCHW ops (the graph's edges,
// a flatten); int8 changes layout only. Same type and layout is InvalidArgument (nothing to do).
// Input 0 x, output 0 y.
struct ConvertParams {
  int64_t n = 1, c = 1, hw = 1;
  ElementType from = ElementType::kFloat32, to = ElementType::kFloat16;
  bool from_nhwc = false, to_nhwc = false;
};
absl::StatusOr<PlannedKernel> ConvertKernel(const ConvertParams& params);

// int8 q = saturate(round_half_even(x / scale)). Input 0 float x, output 0 int8 q.
absl::StatusOr<PlannedKernel> QuantizeKernel(int64_t total, float scale);

// float y = x * scale[c], c = (i / inner) % channels; channels == 1 means one per-tensor scale.
// Input 0 x (kInt8 or kInt32), input 1 float scale [channels]; output 0 y.
absl::StatusOr<PlannedKernel> DequantizeKernel(ElementType input, int64_t total, int64_t channels,
                                               int64_t inner);

// int8 q = saturate(round_half_even(x * scale[c])) from int32 x; scale as for DequantizeKernel.
// Input 0 int32 x, input 1 float scale [channels]; output 0 int8 q.
absl::StatusOr<PlannedKernel> RequantizeKernel(int64_t total, int64_t channels, int64_t inner);

// out[0] = max(out[0], max |x|) over `total` floats (int8 calibration). Input 0 float x, output 0
// float [1], which the caller zeroes before the first launch (maxima accumulate across launches).
absl::StatusOr<PlannedKernel> AbsMaxKernel(int64_t total);

// Device-side comparison of an output with its reference (kernel_sources/elementwise.cu,
// compare_to_reference). Input 0 got (`total` elements of `out_dtype`: "float32", "int32", "int8"
// (requantized, against the reference's int8), or "float16", an fp16 output against the
// reference's float32), input 1 want (float32 / int32 / int8); output 0 double [3]: sum of squared
// differences, sum of squared reference values, count of NaNs / (integer) differing elements. The
// caller zeroes the output first. Unimplemented for another dtype.
absl::StatusOr<PlannedKernel> CompareKernel(int64_t total, std::string_view out_dtype);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_ELEMENTWISE_H_

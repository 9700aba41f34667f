// File: autotvm/workload.h
// An AutoTVM workload: the task name plus the serialized compute arguments, exactly as a log record
// stores them (`["TENSOR", [128, 512, 14, 14], "int8"]`, `[1, 1]`, `[1, 1, 1, 1]`, `"int32"`, ...).
// The raw JSON is kept so records round-trip byte for byte and workloads compare exactly as TVM's
// tuple keys do (padding 1, [1,1] and [1,1,1,1] are different workloads). Typed views
// (Conv2dParams, DenseParams, BatchMatmulParams) normalise the arguments for kernels; Make*Workload
// go the other way, writing arguments the way Relay does (4-element padding, 2-element strides and
// dilation).
//
//   TUNEJIT_ASSIGN_OR_RETURN(Conv2dParams p, ParseConv2dWorkload(record.workload));
//   p.OutH()  // (H + pt + pb - ((KH-1)*dh + 1)) / sh + 1
#ifndef TUNEJIT_AUTOTVM_WORKLOAD_H_
#define TUNEJIT_AUTOTVM_WORKLOAD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tunejit::autotvm {

using Json = nlohmann::ordered_json;

struct Workload {
  std::string task_name;  // e.g. "conv2d_nchw_winograd.cuda"
  Json args;              // the record's args list, as written

  std::string Key() const;  // canonical text of (task_name, args): equality == TVM's tuple equality
  friend bool operator==(const Workload& a, const Workload& b) { return a.Key() == b.Key(); }
};

// NCHW convolution (also depthwise: then groups == ci and kernel is [C, multiplier, KH, KW]).
struct Conv2dParams {
  int64_t n = 0, ci = 0, h = 0, w = 0;  // data [N, CI, H, W]
  int64_t co = 0, kh = 0, kw = 0;       // kernel [CO, CI/groups, KH, KW]
  int64_t groups = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int dilation_h = 1, dilation_w = 1;
  std::string data_dtype = "float32", kernel_dtype = "float32", out_dtype = "float32";
  // conv2d_NCHWc_int8: "NCHW" or "NCHW4c" (then shapes are unpacked here); "NHWC" for
  // conv2d_nhwc_wgmma.cuda (the fields still mean N, CI, H, W, CO, KH, KW).
  std::string layout = "NCHW";
  // NCHW data written NHWC (conv2d_nchw_stem_mma.cuda, conv2d_nchw_patchify_wgmma.cuda: the
  // graph's input into NHWC layers).
  bool nhwc_out = false;

  // One filter per input channel (groups == C > 1): Relay's depthwise conv.
  bool Depthwise() const { return groups > 1 && groups == ci; }
  int64_t OutH() const;
  int64_t OutW() const;
  double Flops() const;  // 2 * N * CO * OH * OW * (CI/groups) * KH * KW
};

struct DenseParams {
  int64_t m = 0, n = 0, k = 0;  // data [M, K], weight [N, K]
  bool has_bias = false;
  std::string data_dtype = "float32", out_dtype = "float32";
  double Flops() const;  // 2 * M * N * K
};

// TVM's batch_matmul (topi nn.batch_matmul, TVM 0.7): x [XB, M, K], y [YB, N, K] (y transposed),
// out[b, i, j] = sum_k x[b, i, k] * y[b, j, k], [B, M, N] with B = max(XB, YB); a batch dim of 1
// broadcasts. The workload is [x, y]: 0.7's compute takes no out_shape or out_dtype (later TVMs
// added them), so the output has x's dtype.
struct BatchMatmulParams {
  int64_t x_batch = 1, y_batch = 1, m = 0, n = 0, k = 0;
  std::string dtype = "float32";
  int64_t batch() const { return x_batch > y_batch ? x_batch : y_batch; }
  double Flops() const;  // 2 * B * M * N * K
};

inline constexpr char kBatchMatmul[] = "batch_matmul.cuda";

// tunejit's Hopper tensor-core GEMM (ops/gemm_wgmma.cc).
inline constexpr char kDenseWgmma[] = "dense_wgmma.cuda";
// tunejit's Hopper tensor-core convolution: NHWC data, OHWI kernel (layout "NHWC" in the params).
inline constexpr char kConv2dNhwcWgmma[] = "conv2d_nhwc_wgmma.cuda";
// The same convolution followed by a 2x2 max pool of stride 2 (its epilogue's output pooled):
// the workload is the convolution's, the output [N, OH / 2, OW / 2, CO] NHWC. A task of its own
// because where the pool goes (in the kernel or a kernel after it) depends on the config, and
// its records' times are the pair's (the fused epilogues).
inline constexpr char kConv2dNhwcWgmmaPool[] = "conv2d_nhwc_wgmma_pool.cuda";
// tunejit's stem convolution: NCHW float32 data and OIHW float32 kernel as the graph has them,
// float16 products on mma.sync, the output NHWC (Conv2dParams::nhwc_out).
inline constexpr char kConv2dNchwStemMma[] = "conv2d_nchw_stem_mma.cuda";
// tunejit's patchify convolution (kernel == stride, no padding: ViT's 16x16 patch embedding): the
// same tensors as the stem's (NCHW float32 data, OIHW float32 kernel, the output NHWC), run as a
// patch gather into [N*OH*OW, C*KH*KW] float16 and dense_wgmma.cuda's GEMM on it.
inline constexpr char kConv2dNchwPatchifyWgmma[] = "conv2d_nchw_patchify_wgmma.cuda";
// tunejit's depthwise convolution of the tensor-core networks: NHWC float16 data, the kernel
// [C, KH, KW, multiplier] (the depthwise OIHW [C, multiplier, KH, KW] reordered OHWI, as the
// NHWC templates take their weights; layout "NHWC", groups C in the params).
inline constexpr char kDepthwiseConv2dNhwc[] = "depthwise_conv2d_nhwc.cuda";

// Accepts conv2d_nchw.cuda, conv2d_nchw_winograd.cuda (+ _without_weight_transform),
// conv2d_NCHWc_int8.cuda and depthwise_conv2d_nchw.cuda argument lists, with every encoding real
// logs use (int / 2- / 4-element padding, missing dilation, packed 5-D/6-D int8 tensors); and
// conv2d_nhwc_wgmma(_pool).cuda (data [N, H, W, C], kernel [CO, KH, KW, C]) and
// conv2d_nchw_stem_mma.cuda and conv2d_nchw_patchify_wgmma.cuda (data [N, C, H, W], kernel
// [CO, C, KH, KW], output NHWC) and
// depthwise_conv2d_nhwc.cuda (data [N, H, W, C], kernel [C, KH, KW, multiplier]).
absl::StatusOr<Conv2dParams> ParseConv2dWorkload(const Workload& workload);
// Accepts dense_small_batch.cuda, dense_large_batch.cuda and dense_wgmma.cuda (same arguments;
// the wgmma one is tunejit's, with float16 data).
absl::StatusOr<DenseParams> ParseDenseWorkload(const Workload& workload);

// TVM 0.8 (2021, apache/tvm#8336) renamed the dense templates' tasks, same arguments and knobs:
// dense_small_batch.gpu and dense_large_batch.gpu. A record written under such a later name reads
// as the template TVM 0.7 named (this function's result, e.g. "dense_small_batch.cuda"); the record
// keeps the name it was written with (Record::written_task_name). Any other name is returned as
// given.
std::string_view CanonicalTaskName(std::string_view task_name);

// Accepts batch_matmul.cuda: [["TENSOR", [XB, M, K], dt], ["TENSOR", [YB, N, K], dt]], the same
// dtype, equal K, and batch dims equal or one of them 1.
absl::StatusOr<BatchMatmulParams> ParseBatchMatmulWorkload(const Workload& workload);

Workload MakeConv2dWorkload(const std::string& task_name, const Conv2dParams& params);
Workload MakeDenseWorkload(const std::string& task_name, const DenseParams& params);
Workload MakeBatchMatmulWorkload(const BatchMatmulParams& params);  // batch_matmul.cuda

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_WORKLOAD_H_

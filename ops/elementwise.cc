#include "ops/elementwise.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"

namespace tunejit {
namespace {

constexpr int kBlock = 256;
// Grid-stride kernels: enough blocks to fill any GPU, never more than needed.
constexpr int64_t kMaxBlocks = 1 << 16;

absl::Status CheckCount(absl::string_view op, absl::string_view what, int64_t value) {
  if (value < 1) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", what, " = ", value, " must be >= 1"));
  }
  return absl::OkStatus();
}

PlannedKernel GridStrideKernel(std::string label, std::string expression, int64_t total,
                               std::vector<KernelArg> args) {
  return GridStrideLaunch("elementwise.cu", std::move(label), std::move(expression), total,
                          std::move(args));
}

absl::StatusOr<const char*> ScaledInputType(absl::string_view op, ElementType type) {
  switch (type) {
    case ElementType::kInt8:
      return "signed char";
    case ElementType::kInt32:
      return "int";
    case ElementType::kFloat32:
    case ElementType::kFloat16:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(op, ": input must be int8 or int32"));
}

// The kernels' name of a float element type: "float" or "tunejit::f16".
absl::StatusOr<const char*> FloatTypeName(absl::string_view op, ElementType type) {
  if (type == ElementType::kFloat32) return "float";
  if (type == ElementType::kFloat16) return "tunejit::f16";
  return absl::InvalidArgumentError(absl::StrCat(op, ": float32 or float16 only"));
}

absl::Status CheckPool(absl::string_view op, const Pool2dParams& p) {
  for (int64_t v : {p.n, p.c, p.h, p.w, int64_t{p.kh}, int64_t{p.kw}, int64_t{p.stride_h},
                    int64_t{p.stride_w}}) {
    TUNEJIT_RETURN_IF_ERROR(CheckCount(op, "shape, window and stride", v));
  }
  if (p.pad_top < 0 || p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0 || p.pad_top >= p.kh ||
      p.pad_left >= p.kw || p.pad_bottom >= p.kh || p.pad_right >= p.kw) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": padding must be in [0, window)"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckCount(op, "output height", p.OutH()));
  TUNEJIT_RETURN_IF_ERROR(CheckCount(op, "output width", p.OutW()));
  TUNEJIT_RETURN_IF_ERROR(ToInt32(op, "N*C", p.n * p.c).status());
  return ToInt32(op, "input elements", p.n * p.c * p.h * p.w).status();
}

// Both pools' kernels take the same arguments (kernel_sources/elementwise.cu).
PlannedKernel PoolKernel(std::string label, std::string expression, const Pool2dParams& p) {
  const int64_t total = p.n * p.c * p.OutH() * p.OutW();
  return GridStrideKernel(
      std::move(label), std::move(expression), total,
      {InputArg(0), OutputArg(0), Int32Arg(p.n * p.c), Int32Arg(p.h), Int32Arg(p.w),
       Int32Arg(p.OutH()), Int32Arg(p.OutW()), Int32Arg(p.kh), Int32Arg(p.kw), Int32Arg(p.stride_h),
       Int32Arg(p.stride_w), Int32Arg(p.pad_top), Int32Arg(p.pad_left)});
}

}  // namespace

absl::StatusOr<PlannedKernel> BiasReluKernel(int64_t n, int64_t channels, int64_t inner, bool relu,
                                             ElementType type) {
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, FloatTypeName("bias_add", type));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("bias_add", "batch", n));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("bias_add", "channels", channels));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("bias_add", "inner", inner));
  TUNEJIT_ASSIGN_OR_RETURN(int c, ToInt32("bias_add", "channels", channels));
  const int64_t total = n * channels * inner;
  return GridStrideKernel(
      relu ? "bias_add_relu" : "bias_add",
      absl::StrCat("tunejit::bias_relu<", relu ? 1 : 0, ", ", t, ">"), total,
      {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total), Int32Arg(c), Int64Arg(inner)});
}

absl::StatusOr<PlannedKernel> MaxPool2dKernel(const Pool2dParams& p, ElementType type) {
  if (type != ElementType::kFloat32 && type != ElementType::kInt8) {
    return absl::InvalidArgumentError("max_pool2d: only float32 and int8");
  }
  TUNEJIT_RETURN_IF_ERROR(CheckPool("max_pool2d", p));
  const char* t = type == ElementType::kFloat32 ? "float" : "signed char";
  return PoolKernel("max_pool2d", absl::StrCat("tunejit::max_pool2d<", t, ">"), p);
}

absl::StatusOr<PlannedKernel> MaxPool2dNhwcKernel(const Pool2dParams& p, ElementType type) {
  if (type == ElementType::kInt32) {
    return absl::InvalidArgumentError("max_pool2d_nhwc: only float32, float16 and int8");
  }
  const bool f16 = type == ElementType::kFloat16, f32 = type == ElementType::kFloat32;
  constexpr char op[] = "max_pool2d_nhwc";
  TUNEJIT_RETURN_IF_ERROR(CheckPool(op, p));
  const int64_t lanes = f32 ? 4 : f16 ? 8 : 16;  // elements per 16-byte vector
  if (p.c % lanes != 0) {
    return absl::UnimplementedError(absl::StrCat(op, ": C = ", p.c, " is not a multiple of ", lanes,
                                                 " (16-byte channel vectors)"));
  }
  const int64_t vectors = p.c / lanes;
  return GridStrideKernel(
      op,
      f32   ? "tunejit::max_pool2d_nhwc<float>"
      : f16 ? "tunejit::max_pool2d_nhwc<tunejit::f16>"
            : "tunejit::max_pool2d_nhwc<signed char>",
      p.n * p.OutH() * p.OutW() * vectors,
      {InputArg(0), OutputArg(0), Int32Arg(p.n), Int32Arg(p.h), Int32Arg(p.w), Int32Arg(vectors),
       Int32Arg(p.OutH()), Int32Arg(p.OutW()), Int32Arg(p.kh), Int32Arg(p.kw), Int32Arg(p.stride_h),
       Int32Arg(p.stride_w), Int32Arg(p.pad_top), Int32Arg(p.pad_left)});
}

absl::Status AppendMaxPool2x2Nhwc(const autotvm::Conv2dParams& conv, ElementType type,
                                  OpPlan* plan) {
  if (plan->kernels.size() != 1 || !plan->workspace_bytes.empty()) {
    return absl::InternalError("max_pool2d_nhwc after a conv: the conv plan is not one kernel");
  }
  Pool2dParams pool;
  pool.n = conv.n;
  pool.c = conv.co;
  pool.h = conv.OutH();
  pool.w = conv.OutW();
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel max_pool, MaxPool2dNhwcKernel(pool, type));
  const int64_t bytes = type == ElementType::kFloat16 ? 2 : type == ElementType::kInt8 ? 1 : 4;
  max_pool.args[0] = WorkspaceArg(0);
  plan->kernels[0].args[4] = WorkspaceArg(0);  // the conv's output (EpilogueTensorArgs)
  plan->kernels.push_back(std::move(max_pool));
  plan->workspace_bytes = {pool.n * pool.h * pool.w * pool.c * bytes};
  plan->workspace_persistent = {false};
  return absl::OkStatus();
}

absl::StatusOr<PlannedKernel> AvgPool2dKernel(const Pool2dParams& p) {
  TUNEJIT_RETURN_IF_ERROR(CheckPool("avg_pool2d", p));
  return PoolKernel("avg_pool2d",
                    absl::StrCat("tunejit::avg_pool2d<", p.count_include_pad ? 1 : 0, ">"), p);
}

absl::StatusOr<PlannedKernel> GlobalAvgPoolKernel(int64_t planes, int64_t inner) {
  constexpr char kOp[] = "global_avg_pool2d";
  TUNEJIT_RETURN_IF_ERROR(CheckCount(kOp, "planes", planes));
  TUNEJIT_RETURN_IF_ERROR(CheckCount(kOp, "inner", inner));
  TUNEJIT_ASSIGN_OR_RETURN(int in, ToInt32(kOp, "inner", inner));
  // One warp per plane: kBlock / 32 planes per block.
  return GridStrideKernel(kOp, "tunejit::global_avg_pool", planes * 32,
                          {InputArg(0), OutputArg(0), Int64Arg(planes), Int32Arg(in)});
}

absl::StatusOr<PlannedKernel> AddReluKernel(int64_t total, bool relu, ElementType type) {
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, FloatTypeName("add", type));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("add", "elements", total));
  return GridStrideKernel(relu ? "add_relu" : "add",
                          absl::StrCat("tunejit::add_relu<", relu ? 1 : 0, ", ", t, ">"), total,
                          {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total)});
}

absl::StatusOr<PlannedKernel> AddInt8Kernel(int64_t total, bool relu, ElementType out,
                                            float scale_x, float scale_r, float scale_out) {
  constexpr char kOp[] = "add_int8";
  if (out != ElementType::kInt8 && out != ElementType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": writes int8 or float32"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckCount(kOp, "elements", total));
  const bool to_int8 = out == ElementType::kInt8;
  if (!(scale_x > 0.0f) || !(scale_r > 0.0f) || (to_int8 && !(scale_out > 0.0f))) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": scales must be > 0"));
  }
  return GridStrideKernel(
      absl::StrCat(kOp, relu ? "_relu" : "", to_int8 ? "" : "_dequantize"),
      absl::StrCat("tunejit::add_int8<", relu ? 1 : 0, ", ", to_int8 ? "signed char" : "float",
                   ">"),
      total,
      {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total), Float32Arg(scale_x),
       Float32Arg(scale_r), Float32Arg(to_int8 ? scale_out : 1.0f)});
}

absl::StatusOr<PlannedKernel> ClipKernel(int64_t total, float lo, float hi, ElementType type) {
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, FloatTypeName("clip", type));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("clip", "elements", total));
  if (!(lo <= hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip: range [", lo, ", ", hi, "] must be ordered, without NaN"));
  }
  return GridStrideKernel(
      "clip", absl::StrCat("tunejit::clip<", t, ">"), total,
      {InputArg(0), OutputArg(0), Int64Arg(total), Float32Arg(lo), Float32Arg(hi)});
}

absl::StatusOr<PlannedKernel> SoftmaxKernel(int64_t rows, int64_t cols) {
  TUNEJIT_RETURN_IF_ERROR(CheckCount("softmax", "rows", rows));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("softmax", "cols", cols));
  TUNEJIT_ASSIGN_OR_RETURN(int r, ToInt32("softmax", "rows", rows));
  TUNEJIT_ASSIGN_OR_RETURN(int c, ToInt32("softmax", "cols", cols));
  PlannedKernel kernel;
  kernel.label = "softmax";
  const RowGroups groups = RowGroupsFor(rows, cols, kBlock, kMaxBlocks);
  kernel.spec = KernelSpec{"elementwise.cu",
                           groups.warp_per_row
                               ? absl::StrCat("tunejit::softmax_rows_warp<", kWarpRowsPerBlock, ">")
                               : absl::StrCat("tunejit::softmax_rows<", kBlock, ">"),
                           {}};
  kernel.shape = groups.shape;
  kernel.args = {InputArg(0), OutputArg(0), Int32Arg(r), Int32Arg(c)};
  return kernel;
}

absl::StatusOr<PlannedKernel> ConvertKernel(const ConvertParams& p) {
  constexpr char kOp[] = "convert";
  auto type_name = [](ElementType t) -> const char* {
    switch (t) {
      case ElementType::kFloat32:
        return "float";
      case ElementType::kFloat16:
        return "tunejit::f16";
      case ElementType::kInt8:
        return "signed char";
      case ElementType::kInt32:
        break;
    }
    return nullptr;
  };
  const char* from = type_name(p.from);
  const char* to = type_name(p.to);
  const bool int8 = p.from == ElementType::kInt8 || p.to == ElementType::kInt8;
  if (from == nullptr || to == nullptr || (int8 && p.from != p.to)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOp, ": float32 <-> float16, or int8 to int8 (quantizing is QuantizeKernel's job)"));
  }
  for (int64_t v : {p.n, p.c, p.hw}) TUNEJIT_RETURN_IF_ERROR(CheckCount(kOp, "shape", v));
  const int64_t total = p.n * p.c * p.hw;
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "C*H*W", p.c * p.hw).status());
  if (p.from_nhwc == p.to_nhwc) {
    if (p.from == p.to) {
      return absl::InvalidArgumentError(absl::StrCat(kOp, ": same type and layout"));
    }
    return GridStrideKernel(kOp, absl::StrCat("tunejit::convert<", from, ", ", to, ">"), total,
                            {InputArg(0), OutputArg(0), Int64Arg(total)});
  }
  // Per image a [rows, cols] matrix to transpose: NCHW is [C, HW], NHWC [HW, C].
  const int64_t rows = p.from_nhwc ? p.hw : p.c, cols = p.from_nhwc ? p.c : p.hw;
  const int64_t col_tiles = CeilDiv64(cols, 32), tiles = CeilDiv64(rows, 32) * col_tiles;
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "tiles per image", tiles).status());
  if (p.n > 65535) return absl::UnimplementedError(absl::StrCat(kOp, ": batch over 65535"));
  PlannedKernel kernel;
  kernel.label = "transpose_convert";
  kernel.spec = KernelSpec{
      "elementwise.cu", absl::StrCat("tunejit::transpose_convert<", from, ", ", to, ">"), {}};
  kernel.shape.grid[0] = static_cast<uint32_t>(tiles);
  kernel.shape.grid[1] = static_cast<uint32_t>(p.n);
  kernel.shape.block[0] = 32;
  kernel.shape.block[1] = 8;
  kernel.args = {InputArg(0), OutputArg(0), Int32Arg(rows), Int32Arg(cols), Int32Arg(col_tiles)};
  return kernel;
}

absl::StatusOr<PlannedKernel> QuantizeKernel(int64_t total, float scale) {
  TUNEJIT_RETURN_IF_ERROR(CheckCount("quantize", "elements", total));
  if (!(scale > 0.0f)) return absl::InvalidArgumentError("quantize: scale must be > 0");
  return GridStrideKernel("quantize", "tunejit::quantize", total,
                          {InputArg(0), OutputArg(0), Int64Arg(total), Float32Arg(scale)});
}

absl::StatusOr<PlannedKernel> DequantizeKernel(ElementType input, int64_t total, int64_t channels,
                                               int64_t inner) {
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, ScaledInputType("dequantize", input));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("dequantize", "elements", total));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("dequantize", "channels", channels));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("dequantize", "inner", inner));
  TUNEJIT_ASSIGN_OR_RETURN(int c, ToInt32("dequantize", "channels", channels));
  return GridStrideKernel(
      "dequantize", absl::StrCat("tunejit::dequantize<", t, ">"), total,
      {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total), Int32Arg(c), Int64Arg(inner)});
}

absl::StatusOr<PlannedKernel> RequantizeKernel(int64_t total, int64_t channels, int64_t inner) {
  TUNEJIT_RETURN_IF_ERROR(CheckCount("requantize", "elements", total));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("requantize", "channels", channels));
  TUNEJIT_RETURN_IF_ERROR(CheckCount("requantize", "inner", inner));
  TUNEJIT_ASSIGN_OR_RETURN(int c, ToInt32("requantize", "channels", channels));
  return GridStrideKernel(
      "requantize", "tunejit::requantize", total,
      {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total), Int32Arg(c), Int64Arg(inner)});
}

absl::StatusOr<PlannedKernel> AbsMaxKernel(int64_t total) {
  TUNEJIT_RETURN_IF_ERROR(CheckCount("abs_max", "elements", total));
  return GridStrideKernel("abs_max", absl::StrCat("tunejit::abs_max<", kBlock, ">"), total,
                          {InputArg(0), OutputArg(0), Int64Arg(total)});
}

absl::StatusOr<PlannedKernel> CompareKernel(int64_t total, std::string_view out_dtype) {
  TUNEJIT_RETURN_IF_ERROR(CheckCount("compare_to_reference", "elements", total));
  const char* types = out_dtype == "int32"     ? "int, int"
                      : out_dtype == "int8"    ? "signed char, signed char"
                      : out_dtype == "float16" ? "tunejit::f16, float"
                      : out_dtype == "float32" ? "float, float"
                                               : nullptr;
  if (types == nullptr) {
    return absl::UnimplementedError(absl::StrCat("compare_to_reference: no comparison of ",
                                                 std::string(out_dtype), " outputs"));
  }
  return GridStrideKernel("compare_to_reference",
                          absl::StrCat("tunejit::compare_to_reference<", types, ">"), total,
                          {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total)});
}

}  // namespace tunejit

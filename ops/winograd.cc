// conv2d_nchw_winograd.cuda: Winograd F(m x m, 3 x 3) convolution (kernel_sources/winograd.cu;
// docs/tvm-templates.md section 5). Four kernels: weight transform (kPrepare, into persistent
// workspace 0), input transform (workspace 1), the tuned batched GEMM (workspace 2) and the inverse
// transform with the fused epilogue.
//
// Two numeric variants, chosen by the workload's dtypes:
//   float32 x float32 -> float32: TVM's float algebra (Cook-Toom matrices rounded to float32);
//   int8 x int8 -> int32: an EXACT integer algebra (kernel_sources/winograd_matrices.cuh),
//   bit-equal
//     to direct convolution. TVM's own int8 winograd truncates the matrices to integers and
//     computes wrong results (spec 5.8); we keep its schedule (m = 4 when H % 8 == 0, else 2, and
//     the same knobs and launch shapes) but not its arithmetic. Both F(2,3) and F(4,3) are exact.
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "ops/winograd_plan.h"

namespace tunejit {
namespace {

constexpr char kTask[] = "conv2d_nchw_winograd.cuda";

// Kernels are int-indexed per tensor; the fused indices (ci*P + p, ...) are 64-bit inside.
absl::Status CheckSizes(const autotvm::Conv2dParams& p, const WinogradGeometry& g) {
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "input elements", p.n * p.ci * p.h * p.w).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "output elements", p.n * p.co * g.oh * g.ow).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "tiles P", g.tiles).status());
  return absl::OkStatus();
}

absl::StatusOr<autotvm::Conv2dParams> ParseWinogradConv(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
  const bool fp32 =
      p.data_dtype == "float32" && p.kernel_dtype == "float32" && p.out_dtype == "float32";
  const bool int8 = p.data_dtype == "int8" && p.kernel_dtype == "int8" && p.out_dtype == "int32";
  if (!fp32 && !int8) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": supports float32 -> float32 and int8 -> int32 (got ", p.data_dtype,
                     ", ", p.kernel_dtype, " -> ", p.out_dtype, ")"));
  }
  if (p.groups != 1 || p.layout != "NCHW") {
    return absl::UnimplementedError(absl::StrCat(kTask, ": needs groups 1 and NCHW"));
  }
  if (p.n < 1 || p.ci < 1 || p.co < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 || p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape or output"));
  }
  // TVM's own preconditions (the strategy offers winograd only for these, spec 5.1).
  if (p.stride_h != 1 || p.stride_w != 1 || p.dilation_h != 1 || p.dilation_w != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": winograd needs stride 1 and dilation 1 (got stride ", p.stride_h,
                     "x", p.stride_w, ", dilation ", p.dilation_h, "x", p.dilation_w, ")"));
  }
  if (p.kh != p.kw || p.kh <= 2 || p.kh >= 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        kTask, ": winograd needs a square kernel with 2 < KH < 8 (got ", p.kh, "x", p.kw, ")"));
  }
  if (p.kh != 3) {
    return absl::UnimplementedError(absl::StrCat(
        kTask, ": only 3x3 kernels are implemented (F(2,3) and F(4,3)); got ", p.kh, "x", p.kw));
  }
  if (int8 && p.ci > kWinogradInt8MaxChannels) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": int8 winograd is exact only while |output| < 2^29, i.e. CI <= ",
                     kWinogradInt8MaxChannels, " (got CI ", p.ci, ")"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckSizes(p, WinogradGeometryOf(p)));
  return p;
}

std::string ElementType(bool int8) { return int8 ? "tunejit::s8" : "float"; }

PlannedKernel ElementwiseKernel(std::string label, std::string name, int64_t threads) {
  PlannedKernel k;
  k.label = std::move(label);
  k.spec.source_file = "winograd.cu";
  k.spec.name_expression = std::move(name);
  k.shape.grid[0] = static_cast<uint32_t>(std::min<int64_t>(CeilDiv64(threads, 128), UINT32_MAX));
  k.shape.block[0] = 128;
  return k;
}

int64_t SaturatingProduct(std::initializer_list<int64_t> values) {
  __int128 p = 1;
  for (int64_t v : values) {
    p *= v;
    if (p > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(p);
}

// TVM's winograd knobs (docs/tvm-templates.md section 5.4): tile_b over the alpha x alpha
// transform points (only [-1, 1, 1, 1] passes its filter), then output channels, tiles and the
// input-channel reduction.
absl::StatusOr<autotvm::ConfigSpace> WinogradSpace(const autotvm::Conv2dParams& p,
                                                   const autotvm::Target& target) {
  if (p.kh != p.kw || p.stride_h != 1 || p.stride_w != 1) {
    return absl::InvalidArgumentError("winograd needs KH == KW and stride 1");
  }
  int64_t m = p.h % 8 == 0 ? 4 : 2;  // section 5.2: the INPUT height decides
  int64_t alpha = m + p.kw - 1;
  int64_t oh = p.h + p.pad_top + p.pad_bottom - p.kh + 1;
  int64_t ow = p.w + p.pad_left + p.pad_right - p.kw + 1;
  if (oh <= 0 || ow <= 0) return absl::InvalidArgumentError("winograd output size is not positive");
  int64_t tiles = SaturatingProduct({p.n, (oh + m - 1) / m, (ow + m - 1) / m});
  autotvm::ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_b", alpha * alpha, 4, [](const std::vector<int64_t>& e) {
    return e[1] == 1 && e[2] == 1 && e[3] == 1;
  }));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.co, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", tiles, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 128, 1500}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicitCandidates(target)));
  return s;
}

class Conv2dNchwWinograd final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseWinogradConv(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseWinogradConv(workload));
    TUNEJIT_RETURN_IF_ERROR(
        CheckActivation(kTask, epilogue, "it runs on the CUDA cores and fuses relu only"));
    const bool int8 = p.data_dtype == "int8";
    if (int8 && epilogue.bias && epilogue.output == Epilogue::Output::kAccumulator) {
      return InvalidConfig(kTask,
                           "an int32 output takes no float bias (use a float32 or int8 "
                           "requantized output)");
    }
    TUNEJIT_ASSIGN_OR_RETURN(WinogradTiling t, ReadWinogradTiling(kTask, config));
    const WinogradGeometry g = WinogradGeometryOf(p);
    const int64_t alpha2 = int64_t{g.alpha} * g.alpha;

    LaunchShape bgemm_shape;
    bgemm_shape.grid[0] = static_cast<uint32_t>(CeilDiv64(g.tiles, t.x.block()));
    bgemm_shape.grid[1] = static_cast<uint32_t>(CeilDiv64(p.co, t.y.block()));
    bgemm_shape.grid[2] = static_cast<uint32_t>(alpha2);
    bgemm_shape.block[0] = static_cast<uint32_t>(t.x.t);
    bgemm_shape.block[1] = static_cast<uint32_t>(t.y.t);
    const int64_t smem = int64_t{t.rc} * (t.y.block() + t.x.block()) * 4;
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, bgemm_shape, smem, limits));
    TUNEJIT_RETURN_IF_ERROR(
        CheckAccumulators(kTask, int64_t{t.y.per_thread()} * t.x.per_thread(), limits));

    const std::string elem = ElementType(int8);
    const std::string acc = int8 ? "unsigned" : "float";
    OpPlan plan;
    PlannedKernel wt = ElementwiseKernel(
        "weight_transform",
        absl::StrFormat("tunejit::winograd_weight_transform<%d, %s>", g.m, elem), p.ci * p.co);
    wt.phase = PlannedKernel::Phase::kPrepare;
    wt.args = {InputArg(1), WorkspaceArg(0), Int32Arg(p.ci), Int32Arg(p.co)};

    PlannedKernel it = ElementwiseKernel(
        "input_transform", absl::StrFormat("tunejit::winograd_input_transform<%d, %s>", g.m, elem),
        p.ci * g.tiles);
    it.args = {InputArg(0),    WorkspaceArg(1), Int32Arg(p.n),       Int32Arg(p.ci),
               Int32Arg(p.h),  Int32Arg(p.w),   Int32Arg(p.pad_top), Int32Arg(p.pad_left),
               Int32Arg(g.nh), Int32Arg(g.nw)};

    PlannedKernel gemm;
    gemm.label = "bgemm";
    gemm.spec.source_file = "winograd.cu";
    gemm.spec.name_expression =
        absl::StrFormat("tunejit::winograd_bgemm<%s, %d, %d, %d, %d, %d, %d, %d, %d>", acc, t.y.v,
                        t.y.t, t.y.i, t.x.v, t.x.t, t.x.i, t.rc, t.unroll);
    gemm.shape = bgemm_shape;
    gemm.args = {WorkspaceArg(0), WorkspaceArg(1), WorkspaceArg(2),
                 Int32Arg(p.ci),  Int32Arg(p.co),  Int32Arg(g.tiles)};

    PlannedKernel inv =
        ElementwiseKernel("inverse_transform",
                          absl::StrFormat("tunejit::winograd_inverse_transform<%d, %s, %d>", g.m,
                                          elem, EpilogueCode(epilogue)),
                          p.co * g.tiles);
    const std::vector<KernelArg> tensors =
        EpilogueTensorArgs(epilogue);  // data, w, bias, scale, out
    inv.args = {WorkspaceArg(2), tensors[4],     tensors[2],     tensors[3],     Int32Arg(p.n),
                Int32Arg(p.co),  Int32Arg(g.oh), Int32Arg(g.ow), Int32Arg(g.nh), Int32Arg(g.nw)};

    for (const PlannedKernel* k : {&wt, &it, &inv}) {
      TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, k->shape, 0, limits));
    }
    plan.kernels = {std::move(wt), std::move(it), std::move(gemm), std::move(inv)};
    plan.workspace_bytes = {alpha2 * p.ci * p.co * 4, alpha2 * p.ci * g.tiles * 4,
                            alpha2 * p.co * g.tiles * 4};
    plan.workspace_persistent = {true, false, false};
    if (int8) {
      plan.notes.push_back(absl::StrCat(
          kTask, ": int8 computed with exact integer F(", g.m,
          ",3) matrices (TVM's truncated int8 winograd is wrong, docs/tvm-templates.md 5.8)"));
    }
    return plan;
  }

  // TVM has no fallback (first candidates: one thread per block). Ours: a 32 (co) x 32 (tiles)
  // block of 8 x 16 threads, 4 x 2 outputs per thread, up to 8 channels per reduction step.
  // Splits need not divide (the kernels handle tails); thread counts shrink for small axes.
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseWinogradConv(workload));
    return WinogradFallback(p);
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                   const autotvm::Target& target) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
    return WinogradSpace(p, target);
  }

  std::vector<std::string_view> space_aliases() const override {
    return {"conv2d_nchw_winograd_without_weight_transform.cuda"};
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // Relay's rule: 2 < KH < 8, KH == KW, stride 1, dilation 1; at float32, and on int8 data
    // beside conv2d_NCHWc_int8.cuda; never for a depthwise conv.
    autotvm::Conv2dParams p = request.conv;
    const bool mode_ok =
        request.mode == NumericMode::kFp32 || request.mode == NumericMode::kInt8Dp4a;
    if (request.op != OpRequest::Op::kConv2d || !mode_ok || p.Depthwise() || p.kh <= 2 ||
        p.kh >= 8 || p.kh != p.kw || p.stride_h != 1 || p.stride_w != 1 || p.dilation_h != 1 ||
        p.dilation_w != 1) {
      return std::nullopt;
    }
    if (request.mode == NumericMode::kInt8Dp4a) {
      p.data_dtype = p.kernel_dtype = "int8";
      p.out_dtype = "int32";
    }
    return OpOffer{{autotvm::MakeConv2dWorkload(kTask, p), 5}, {}};
  }
};

}  // namespace

const OpTemplate* Conv2dNchwWinogradTemplate() {
  static const Conv2dNchwWinograd* const kTemplate = new Conv2dNchwWinograd();
  return kTemplate;
}

}  // namespace tunejit

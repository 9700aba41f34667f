// conv2d_nchw.cuda: the direct convolution (kernel_sources/conv2d_direct.cu;
// docs/tvm-templates.md section 4).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"

namespace tunejit {
namespace {

constexpr char kTask[] = "conv2d_nchw.cuda";

absl::StatusOr<autotvm::Conv2dParams> ParseFloatConv(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
  if (p.data_dtype != "float32" || p.kernel_dtype != "float32" || p.out_dtype != "float32") {
    return absl::UnimplementedError(absl::StrCat(kTask, ": only float32 (got ", p.data_dtype, ", ",
                                                 p.kernel_dtype, " -> ", p.out_dtype, ")"));
  }
  if (p.groups != 1 || p.layout != "NCHW") {
    return absl::UnimplementedError(absl::StrCat(kTask, ": needs groups 1 and NCHW (got groups ",
                                                 p.groups, ", ", p.layout, ")"));
  }
  if (p.n < 1 || p.ci < 1 || p.co < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 || p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape or output"));
  }
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": stride and dilation must be >= 1"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "input elements", p.n * p.ci * p.h * p.w).status());
  TUNEJIT_RETURN_IF_ERROR(
      ToInt32(kTask, "output elements", p.n * p.co * p.OutH() * p.OutW()).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "weight elements", p.co * p.ci * p.kh * p.kw).status());
  return p;
}

class Conv2dNchwDirect final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseFloatConv(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseFloatConv(workload));
    TUNEJIT_RETURN_IF_ERROR(
        CheckActivation(kTask, epilogue, "it runs on the CUDA cores and fuses relu only"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tf, ReadSpatialTile(config, "tile_f"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile ty, ReadSpatialTile(config, "tile_y"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tx, ReadSpatialTile(config, "tile_x"));
    TUNEJIT_ASSIGN_OR_RETURN(int rc, ReadInnerFactor(config, "tile_rc"));
    TUNEJIT_ASSIGN_OR_RETURN(KernelSplits kr, ReadKernelSplits(config, p.kh, p.kw));
    TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, ReadOtherOr(config, "auto_unroll_max_step", 0));
    const int64_t oh = p.OutH(), ow = p.OutW();

    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(CeilDiv64(ow, tx.block()));
    shape.grid[1] = static_cast<uint32_t>(CeilDiv64(oh, ty.block()));
    const int64_t grid_z = p.n * CeilDiv64(p.co, tf.block());
    shape.grid[2] = static_cast<uint32_t>(std::min<int64_t>(grid_z, UINT32_MAX));
    shape.block[0] = static_cast<uint32_t>(tx.t);
    shape.block[1] = static_cast<uint32_t>(ty.t);
    shape.block[2] = static_cast<uint32_t>(tf.t);
    const int64_t rows =
        int64_t{ty.block() - 1} * p.stride_h + int64_t{kr.ry - 1} * p.dilation_h + 1;
    const int64_t cols =
        int64_t{tx.block() - 1} * p.stride_w + int64_t{kr.rx - 1} * p.dilation_w + 1;
    const int64_t smem = (rc * rows * cols + int64_t{tf.block()} * rc * kr.ry * kr.rx) * 4;
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, smem, limits));
    TUNEJIT_RETURN_IF_ERROR(CheckAccumulators(
        kTask, int64_t{tf.per_thread()} * ty.per_thread() * tx.per_thread(), limits));
    if (unroll < 0 || unroll > 1 << 16) {
      return InvalidConfig(kTask, absl::StrCat("auto_unroll_max_step = ", unroll));
    }

    PlannedKernel kernel;
    kernel.label = "conv2d_nchw_direct";
    kernel.spec.source_file = "conv2d_direct.cu";
    kernel.spec.name_expression = absl::StrFormat(
        "tunejit::conv2d_nchw_direct<%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
        "%d, %d, %d, %d, %d>",
        tf.v, tf.t, tf.i, ty.v, ty.t, ty.i, tx.v, tx.t, tx.i, rc, kr.ry, kr.rx, p.kh, p.kw,
        p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, unroll, EpilogueCode(epilogue));
    kernel.shape = shape;
    kernel.args = EpilogueTensorArgs(epilogue);
    for (int64_t v : {p.ci, p.h, p.w, p.co, oh, ow, int64_t{p.pad_top}, int64_t{p.pad_left}}) {
      kernel.args.push_back(Int32Arg(v));
    }
    OpPlan plan;
    plan.kernels.push_back(std::move(kernel));
    if (kr.swapped) {
      plan.notes.push_back(absl::StrCat(kTask, ": tile_ry/tile_rx labels swapped back for the ",
                                        p.kh, "x", p.kw,
                                        " kernel (converted TopHub records carry them swapped)"));
    }
    return plan;
  }

  // TVM falls back to TopHub reference records, which we do not ship. Our hand-made default: a
  // 16 (f) x 8 (y) x 8 (x) output tile per block, 128 threads (4 x 4 x 8), 8 outputs per thread,
  // up to 8 input channels and the whole kernel window per reduction step, shrunk (channels, then
  // window, then tile) until the shared tiles fit in 40 KiB. Splits need not divide (the kernel
  // handles tails); thread counts shrink for small outputs.
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseFloatConv(workload));
    int64_t tx = std::min<int64_t>(8, p.OutW());
    int64_t ty = std::min<int64_t>(4, p.OutH());
    int64_t yi = p.OutH() >= 8 ? 2 : 1;
    const int64_t tf = std::min<int64_t>(4, p.co);
    const int64_t fi = p.co >= 16 ? 4 : 1;
    int64_t rc = LargestDivisorAtMost(p.ci, 8), ry = p.kh, rx = p.kw;
    auto smem = [&] {
      const int64_t rows = (ty * yi - 1) * p.stride_h + (ry - 1) * p.dilation_h + 1;
      const int64_t cols = (tx - 1) * p.stride_w + (rx - 1) * p.dilation_w + 1;
      return (rc * rows * cols + tf * fi * rc * ry * rx) * 4;
    };
    while (smem() > 40 * 1024) {
      if (rc > 1) {
        rc = LargestDivisorAtMost(p.ci, rc - 1);
      } else if (ry > 1 || rx > 1) {
        ry = rx = 1;
      } else if (yi > 1) {
        yi = 1;
      } else if (ty > 1 || tx > 1) {
        ty = std::max<int64_t>(1, ty / 2);
        tx = std::max<int64_t>(1, tx / 2);
      } else {
        break;  // one output row and column: cannot shrink further (Specialize will say why)
      }
    }
    autotvm::ConfigEntity config;
    config.knobs.push_back(SplitKnob("tile_f", {-1, 1, tf, fi}));
    config.knobs.push_back(SplitKnob("tile_y", {-1, 1, ty, yi}));
    config.knobs.push_back(SplitKnob("tile_x", {-1, 1, tx, 1}));
    config.knobs.push_back(SplitKnob("tile_rc", {-1, rc}));
    config.knobs.push_back(SplitKnob("tile_ry", {-1, ry}));
    config.knobs.push_back(SplitKnob("tile_rx", {-1, rx}));
    config.knobs.push_back(OtherKnob("auto_unroll_max_step", 1500));
    config.knobs.push_back(OtherKnob("unroll_explicit", 1));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                   const autotvm::Target& target) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_ry", p.kh, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rx", p.kw, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 512, 1500}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicitCandidates(target)));
    return s;
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // Relay gives a depthwise conv (groups == C > 1) to the depthwise template alone.
    const autotvm::Conv2dParams& p = request.conv;
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kFp32 ||
        p.Depthwise()) {
      return std::nullopt;
    }
    return OpOffer{{autotvm::MakeConv2dWorkload(kTask, p), 10}, {}};
  }
};

}  // namespace

const OpTemplate* Conv2dNchwTemplate() {
  static const Conv2dNchwDirect* const kTemplate = new Conv2dNchwDirect();
  return kTemplate;
}

}  // namespace tunejit

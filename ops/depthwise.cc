// depthwise_conv2d_nchw.cuda (kernel_sources/depthwise.cu; docs/tvm-templates.md section 9).
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

constexpr char kTask[] = "depthwise_conv2d_nchw.cuda";

struct DepthwiseShape {
  autotvm::Conv2dParams p;
  int64_t multiplier = 1;
  int64_t co() const { return p.ci * multiplier; }
};

// The channel multiplier comes from the kernel tensor [C, multiplier, KH, KW] as written in the
// record, whatever the typed view makes of CO.
absl::StatusOr<int64_t> KernelMultiplier(const autotvm::Workload& workload, int64_t channels) {
  try {
    const autotvm::Json& kernel = workload.args.at(1);
    const autotvm::Json& shape = kernel.at(1);
    if (kernel.at(0) != "TENSOR" || shape.size() != 4 || shape.at(0).get<int64_t>() != channels) {
      return absl::InvalidArgumentError(absl::StrCat(
          kTask, ": kernel must be [\"TENSOR\", [C, multiplier, KH, KW], dtype] with C = ",
          channels, ", got ", kernel.dump()));
    }
    return shape.at(1).get<int64_t>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": bad kernel argument: ", e.what()));
  }
}

absl::StatusOr<DepthwiseShape> ParseDepthwise(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  DepthwiseShape s;
  TUNEJIT_ASSIGN_OR_RETURN(s.p, autotvm::ParseConv2dWorkload(workload));
  const autotvm::Conv2dParams& p = s.p;
  if (p.data_dtype != "float32" || p.kernel_dtype != "float32" || p.out_dtype != "float32") {
    return absl::UnimplementedError(absl::StrCat(kTask, ": only float32 (got ", p.data_dtype, ", ",
                                                 p.kernel_dtype, " -> ", p.out_dtype, ")"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(s.multiplier, KernelMultiplier(workload, p.ci));
  if (s.multiplier < 1 || p.n < 1 || p.ci < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 ||
      p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape or output"));
  }
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": stride and dilation must be >= 1"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "input elements", p.n * p.ci * p.h * p.w).status());
  TUNEJIT_RETURN_IF_ERROR(
      ToInt32(kTask, "output elements", p.n * s.co() * p.OutH() * p.OutW()).status());
  return s;
}

class DepthwiseConv2dNchw final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseDepthwise(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(DepthwiseShape s, ParseDepthwise(workload));
    TUNEJIT_RETURN_IF_ERROR(
        CheckActivation(kTask, epilogue, "it runs on the CUDA cores and fuses relu only"));
    const autotvm::Conv2dParams& p = s.p;
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tf, ReadSpatialTile(config, "tile_f"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile ty, ReadSpatialTile(config, "tile_y"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tx, ReadSpatialTile(config, "tile_x"));
    TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, ReadOtherOr(config, "auto_unroll_max_step", 0));
    if (unroll < 0 || unroll > 1 << 16) {
      return InvalidConfig(kTask, absl::StrCat("auto_unroll_max_step = ", unroll));
    }
    const int64_t oh = p.OutH(), ow = p.OutW();
    // Input channels one block's BF output channels read: at most this many for any block.
    const int64_t cspan =
        std::min<int64_t>((tf.block() + s.multiplier - 2) / s.multiplier + 1, p.ci);

    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(CeilDiv64(ow, tx.block()));
    shape.grid[1] = static_cast<uint32_t>(CeilDiv64(oh, ty.block()));
    shape.grid[2] =
        static_cast<uint32_t>(std::min<int64_t>(p.n * CeilDiv64(s.co(), tf.block()), UINT32_MAX));
    shape.block[0] = static_cast<uint32_t>(tx.t);
    shape.block[1] = static_cast<uint32_t>(ty.t);
    shape.block[2] = static_cast<uint32_t>(tf.t);
    const int64_t rows = int64_t{ty.block() - 1} * p.stride_h + (p.kh - 1) * p.dilation_h + 1;
    const int64_t cols = int64_t{tx.block() - 1} * p.stride_w + (p.kw - 1) * p.dilation_w + 1;
    const int64_t smem = (cspan * rows * cols + int64_t{tf.block()} * p.kh * p.kw) * 4;
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, smem, limits));
    TUNEJIT_RETURN_IF_ERROR(CheckAccumulators(
        kTask, int64_t{tf.per_thread()} * ty.per_thread() * tx.per_thread(), limits));

    PlannedKernel kernel;
    kernel.label = "depthwise_conv2d_nchw";
    kernel.spec.source_file = "depthwise.cu";
    kernel.spec.name_expression = absl::StrFormat(
        "tunejit::depthwise_conv2d_nchw<%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
        "%d, %d, %d, %d, %d>",
        tf.v, tf.t, tf.i, ty.v, ty.t, ty.i, tx.v, tx.t, tx.i, p.kh, p.kw, p.stride_h, p.stride_w,
        p.dilation_h, p.dilation_w, s.multiplier, cspan, unroll, EpilogueCode(epilogue));
    kernel.shape = shape;
    kernel.args = EpilogueTensorArgs(epilogue);
    for (int64_t v : {p.ci, p.h, p.w, oh, ow, int64_t{p.pad_top}, int64_t{p.pad_left}}) {
      kernel.args.push_back(Int32Arg(v));
    }
    OpPlan plan;
    plan.kernels.push_back(std::move(kernel));
    return plan;
  }

  // TVM uses TopHub reference records (then forces unroll_explicit = 0). Our default: one channel
  // per block, a 16 (y) x 16 (x) output tile on 8 x 16 threads, two outputs per thread; threads
  // shrink for small outputs and the tile halves until the window fits in 40 KiB. Grid z holds N x
  // the channel blocks, at most 65,535 (MobileNetV2's 576 channels at batch 128: 73,728): there a
  // thread takes the fewest channels, a divisor of CO (the split's factors divide it), that fit.
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(DepthwiseShape s, ParseDepthwise(workload));
    const autotvm::Conv2dParams& p = s.p;
    constexpr int64_t kMaxGridZ = 65535;
    int64_t fi = 1;
    while (fi < s.co() && (s.co() % fi != 0 || p.n * (s.co() / fi) > kMaxGridZ)) ++fi;
    const int64_t cspan = std::min<int64_t>((fi + s.multiplier - 2) / s.multiplier + 1, p.ci);
    int64_t tx = std::min<int64_t>(16, p.OutW());
    int64_t ty = std::min<int64_t>(8, p.OutH());
    int64_t yi = p.OutH() >= 16 ? 2 : 1;
    auto smem = [&] {
      const int64_t rows = (ty * yi - 1) * p.stride_h + (p.kh - 1) * p.dilation_h + 1;
      const int64_t cols = (tx - 1) * p.stride_w + (p.kw - 1) * p.dilation_w + 1;
      return (cspan * rows * cols + fi * p.kh * p.kw) * 4;
    };
    while (smem() > 40 * 1024 && (yi > 1 || ty > 1 || tx > 1)) {
      if (yi > 1) {
        yi = 1;
      } else {
        ty = std::max<int64_t>(1, ty / 2);
        tx = std::max<int64_t>(1, tx / 2);
      }
    }
    autotvm::ConfigEntity config;
    config.knobs.push_back(SplitKnob("tile_f", {-1, 1, 1, fi}));
    config.knobs.push_back(SplitKnob("tile_y", {-1, 1, ty, yi}));
    config.knobs.push_back(SplitKnob("tile_x", {-1, 1, tx, 1}));
    config.knobs.push_back(OtherKnob("auto_unroll_max_step", 256));
    config.knobs.push_back(OtherKnob("unroll_explicit", 0));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                   const autotvm::Target& target) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 256, 1500}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicitCandidates(target)));
    return s;
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    const autotvm::Conv2dParams& p = request.conv;
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kFp32 ||
        !p.Depthwise()) {
      return std::nullopt;
    }
    return OpOffer{{autotvm::MakeConv2dWorkload(kTask, p), 10}, {}};
  }
};

}  // namespace

const OpTemplate* DepthwiseConv2dNchwTemplate() {
  static const DepthwiseConv2dNchw* const kTemplate = new DepthwiseConv2dNchw();
  return kTemplate;
}

}  // namespace tunejit

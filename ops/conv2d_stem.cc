// conv2d_nchw_stem_mma.cuda (kernel_sources/conv2d_stem.cu): the first conv of an fp16 or int8
// tensor-core network, whose few input channels (RGB) the wgmma template's 16-byte pixels cannot
// take. It reads the graph's float32 NCHW input and OIHW weight directly, multiplies in float16
// with float32 sums (mma.sync, sm_80+), and writes NHWC: float16, float32, or int8 requantized.
//
// Workload: [data [N, C, H, W] float32, kernel [CO, C, KH, KW] float32, strides, padding,
// dilation, out_dtype float16 | float32] (autotvm::ParseConv2dWorkload; nhwc_out). Knobs (all
// `ot`, its ConfigSpace below): tile_h x tile_w output pixels per block, `warps` warps taking its
// 16-pixel row pieces in turn. Template rules: C * KH * KW <= 256 (the patch is at most 16 k16
// steps; weight fragments of more than 32 registers a lane live in shared memory: ResNet's 7x7
// RGB stem, 147 values), CO a multiple of 16 up to 128 (the accumulators live in registers),
// groups 1, shared memory within 48 KiB. The epilogue's activation (clip, silu, hard_swish) is
// the kernel's last template argument, into a float16 or float32 output.
#include <iterator>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "ops/wgmma_rules.h"

namespace tunejit {
namespace {

constexpr const char* kTask = autotvm::kConv2dNchwStemMma;
// The patch C * KH * KW is at most 16 k16 steps (VGG-16's RGB stem: 27, ResNet's: 147). The
// weight fragments (k steps x 8-channel tiles x 2 words a lane) stay in registers up to
// kFragmentRegisters, else move to shared memory (conv2d_stem.cu StemShape). The output channels
// (multiples of 16, accumulators in registers) are at most 128 (ConvNeXt's stem: 96).
constexpr int64_t kMaxStemPatch = 256;
constexpr int64_t kFragmentRegisters = 32;
constexpr int64_t kMaxStemChannels = 128;

struct StemTile {
  int64_t h = 0, w = 0, warps = 0;
};

absl::StatusOr<autotvm::Conv2dParams> ParseStem(const autotvm::Workload& workload) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseFloatInputConv(kTask, workload));
  if (p.groups != 1) return absl::UnimplementedError(absl::StrCat(kTask, ": groups != 1"));
  if (p.n < 1 || p.ci < 1 || p.co < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 || p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape"));
  }
  if (p.ci * p.kh * p.kw > kMaxStemPatch) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": patch C*KH*KW = ", p.ci * p.kh * p.kw, " > ", kMaxStemPatch));
  }
  if (p.co % 16 != 0 || p.co > kMaxStemChannels) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": CO = ", p.co, " (a multiple of 16 up to ", kMaxStemChannels, ")"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*C*H*W", p.n * p.ci * p.h * p.w).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "OH*OW*CO", p.OutH() * p.OutW() * p.co).status());
  return p;
}

absl::StatusOr<StemTile> ReadTile(const autotvm::ConfigEntity& config) {
  StemTile t;
  TUNEJIT_ASSIGN_OR_RETURN(t.h, config.Other("tile_h"));
  TUNEJIT_ASSIGN_OR_RETURN(t.w, config.Other("tile_w"));
  TUNEJIT_ASSIGN_OR_RETURN(t.warps, config.Other("warps"));
  if (t.h < 1 || t.w < 16 || t.w % 16 != 0 || t.warps < 1) {
    return InvalidConfig(kTask, absl::StrCat("tile ", t.h, "x", t.w, " with ", t.warps,
                                             " warps (tile_w a multiple of 16)"));
  }
  return t;
}

// Bytes written per output value: float16, int8 (requantized) or float32.
int64_t OutBytes(const autotvm::Conv2dParams& p, const Epilogue& epilogue) {
  if (epilogue.output == Epilogue::Output::kInt8Requantize) return 1;
  return p.out_dtype == "float16" ? 2 : 4;
}

// The kernel's static shared memory (conv2d_stem.cu StemShape): the float16 input window, per
// warp 16 staged output rows of CO values + 16 bytes, and weight fragments past
// kFragmentRegisters (a 4-byte word per lane, k16 step, 8-channel tile and half step).
int64_t StemSharedBytes(const autotvm::Conv2dParams& p, const StemTile& t, int64_t out_bytes) {
  const int64_t win_h = (t.h - 1) * p.stride_h + (p.kh - 1) * p.dilation_h + 1;
  const int64_t win_w = (t.w - 1) * p.stride_w + (p.kw - 1) * p.dilation_w + 1;
  const int64_t window = p.ci * win_h * win_w * 2;
  const int64_t registers = CeilDiv64(p.ci * p.kh * p.kw, 16) * (p.co / 8) * 2;  // a lane's
  const int64_t fragments = registers > kFragmentRegisters ? registers * 32 * 4 : 4;
  return (window + 15) / 16 * 16 + t.warps * 16 * (p.co * out_bytes + 16) + fragments;
}

class Conv2dNchwStemMma final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseStem(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseStem(workload));
    TUNEJIT_RETURN_IF_ERROR(CheckWgmmaEpilogue(kTask, epilogue, /*int8=*/false, p.out_dtype));
    if (limits.arch.major < 8) {
      return absl::UnimplementedError(
          absl::StrCat(kTask, ": needs sm_80 or newer (mma.sync m16n8k16 float16)"));
    }
    TUNEJIT_ASSIGN_OR_RETURN(StemTile t, ReadTile(config));
    if (t.h * t.w / 16 < t.warps) {
      return InvalidConfig(kTask, absl::StrCat(t.warps, " warps for ", t.h * t.w / 16,
                                               " rows of 16 pixels (a warp would idle)"));
    }
    const int64_t tiles_w = CeilDiv64(p.OutW(), t.w);
    const int64_t tiles = CeilDiv64(p.OutH(), t.h) * tiles_w;
    TUNEJIT_ASSIGN_OR_RETURN(const int grid, ToInt32(kTask, "blocks", p.n * tiles));
    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(grid);
    shape.block[0] = static_cast<uint32_t>(32 * t.warps);
    TUNEJIT_RETURN_IF_ERROR(
        CheckLaunch(kTask, shape, StemSharedBytes(p, t, OutBytes(p, epilogue)), limits));
    PlannedKernel kernel;
    kernel.label = "conv2d_stem";
    kernel.spec = KernelSpec{
        "conv2d_stem.cu",
        absl::StrFormat(
            "tunejit::conv2d_stem<%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d%s>", p.ci,
            p.kh, p.kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.co, t.h, t.w, t.warps,
            EpilogueCode(epilogue), WgmmaOutF16(p.out_dtype, epilogue), ActivationArg(epilogue)),
        {}};
    kernel.shape = shape;
    kernel.args = EpilogueTensorArgs(epilogue);
    for (int64_t v :
         {p.h, p.w, p.OutH(), p.OutW(), int64_t{p.pad_top}, int64_t{p.pad_left}, tiles_w, tiles}) {
      kernel.args.push_back(Int32Arg(v));
    }
    OpPlan plan;
    plan.kernels.push_back(std::move(kernel));
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(const autotvm::Conv2dParams p, ParseStem(workload));
    // 8 x 32 pixels by 4 warps (4.2 KiB of window for a 3x3 RGB stem, 16 rows of 16 pixels),
    // else the largest shorter tile whose shared memory fits the static 48 KiB whatever the
    // epilogue writes (float32 the widest): long patches to many channels stage the most.
    constexpr StemTile kPreferred[] = {{8, 32, 4}, {4, 32, 4}, {2, 32, 4}, {1, 32, 2}, {1, 16, 1}};
    const DeviceLimits static_limits;
    const StemTile* chosen = nullptr;
    for (const StemTile& t : kPreferred) {
      if (StemSharedBytes(p, t, /*out_bytes=*/4) <= static_limits.shared_bytes_per_block) {
        chosen = &t;
        break;
      }
    }
    if (chosen == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(kTask, ": the weight fragments of a ", p.ci * p.kh * p.kw,
                       "-value patch to ", p.co, " channels leave no tile within ",
                       static_limits.shared_bytes_per_block, " bytes of shared memory"));
    }
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_h", chosen->h));
    config.knobs.push_back(OtherKnob("tile_w", chosen->w));
    config.knobs.push_back(OtherKnob("warps", chosen->warps));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& /*workload*/, const autotvm::Target& /*target*/) const override {
    // A block computes tile_h x tile_w output pixels (all channels) with `warps` warps, 16
    // pixels of a row at a time; Specialize rejects tiles with fewer 16-pixel rows than warps,
    // and shared memory past 48 KiB.
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_h", {1, 2, 4, 8, 16}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_w", {16, 32, 64, 128}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("warps", {1, 2, 4, 8}));
    return s;
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // A float16 conv with too few input channels for the wgmma template (the RGB stem), when the
    // patch and channels fit: it reads the float32 NCHW input and weight as they
    // are and writes NHWC. Rank 1: only where conv2d_nhwc_wgmma.cuda cannot take the conv.
    const autotvm::Conv2dParams& geometry = request.conv;
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kFp16TensorCores ||
        geometry.groups != 1 || geometry.ci * geometry.kh * geometry.kw > kMaxStemPatch ||
        geometry.co % 16 != 0 || geometry.co > kMaxStemChannels) {
      return std::nullopt;
    }
    autotvm::Conv2dParams p = geometry;
    p.out_dtype = request.half_output ? "float16" : "float32";
    autotvm::Workload workload = autotvm::MakeConv2dWorkload(kTask, p);
    if (!FallbackConfig(workload).ok()) return std::nullopt;  // no tile fits shared memory
    return OpOffer{{std::move(workload), 10},
                   {.nhwc = true, .float_nchw_data = true},
                   /*rank=*/1};
  }

  // Into float16 or float32 (CheckWgmmaEpilogue): the stems of MobileNetV2 (ReLU6), MobileNetV3
  // (hard_swish) and EfficientNet (silu).
  bool takes_activation() const override { return true; }
};

}  // namespace

const OpTemplate* Conv2dNchwStemMmaTemplate() {
  static const Conv2dNchwStemMma* const kTemplate = new Conv2dNchwStemMma();
  return kTemplate;
}

}  // namespace tunejit

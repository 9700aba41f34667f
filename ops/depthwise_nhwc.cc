// depthwise_conv2d_nhwc.cuda (kernel_sources/depthwise_nhwc.cu): the depthwise convolutions of an
// fp16 tensor-core network (MobileNetV2, EfficientNet, ConvNeXt) on its NHWC float16 activations,
// where depthwise_conv2d_nchw.cuda needed them as float32 NCHW, converted there and back around
// every depthwise layer. Memory-bound: a block stages its input window in shared memory with
// 16-byte loads (each input value comes from DRAM about once; neighbouring tiles' halos from L2)
// and writes each output once, in 16-byte stores; float32 products and sums.
//
// Workload: [data [N, H, W, C] float16, kernel [C, KH, KW, multiplier] float16, strides, padding,
// dilation, out_dtype float16 | float32] (autotvm::ParseConv2dWorkload; layout "NHWC", groups C).
// The kernel is the graph's depthwise OIHW weight [C, 1, KH, KW] reordered OHWI, as the executor
// uploads every NHWC template's weight (an identity for one input channel per filter).
// Knobs (all `ot`, its ConfigSpace below): tile_c channels (whole 8-channel vectors) by tile_h x
// tile_w output pixels per block; thread_h x thread_w adjacent pixels per thread, which walk
// their input rows once, each value converted once for every tap that reads it.
// Limits: channel multiplier 1 (groups == C == CO), any stride, padding and dilation, any C (C
// not a multiple of 8 loads and stores element by element), the window and the weights within
// 48 KiB of static shared memory. Epilogues: common.cuh's, written float16, float32 (with or
// without a scale) or requantized int8; no scaled float32 value into a float16 output; an
// activation (clip, silu, hard_swish: MobileNetV2's ReLU6 after every depthwise conv) into a
// float16 or float32 output.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

constexpr const char* kTask = autotvm::kDepthwiseConv2dNhwc;
// Channels per 16-byte vector of float16.
constexpr int64_t kVector = 8;
// A thread's outputs (8 float32 accumulators each) beyond this would not stay in registers.
constexpr int64_t kMaxThreadPixels = 8;
// The floats a thread holds at once (DepthwiseRegisters), past which ptxas spills.
constexpr int64_t kMaxThreadFloats = 168;

// The per-block and per-thread tiles of a config.
struct DepthwiseTile {
  int64_t c = 0, h = 0, w = 0;         // tile_c x tile_h x tile_w per block
  int64_t thread_h = 0, thread_w = 0;  // pixels per thread
  int64_t vectors() const { return c / kVector; }
  int64_t threads() const { return vectors() * (h / thread_h) * (w / thread_w); }
};

absl::StatusOr<autotvm::Conv2dParams> ParseDepthwiseNhwc(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
  if (p.data_dtype != "float16" || p.kernel_dtype != "float16" ||
      (p.out_dtype != "float16" && p.out_dtype != "float32")) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": ", p.data_dtype, " x ", p.kernel_dtype,
                                                 " -> ", p.out_dtype,
                                                 " (expected float16 x float16 -> float16 | "
                                                 "float32)"));
  }
  if (p.n < 1 || p.ci < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 || p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape or output"));
  }
  if (p.co != p.ci) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": channel multiplier ", p.co / p.ci,
                                                 " (only 1: one filter per channel)"));
  }
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": stride and dilation must be >= 1"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*H*W*C", p.n * p.h * p.w * p.ci).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*OH*OW*C", p.n * p.OutH() * p.OutW() * p.ci).status());
  return p;
}

absl::StatusOr<DepthwiseTile> ReadTile(const autotvm::ConfigEntity& config) {
  DepthwiseTile t;
  TUNEJIT_ASSIGN_OR_RETURN(t.c, config.Other("tile_c"));
  TUNEJIT_ASSIGN_OR_RETURN(t.h, config.Other("tile_h"));
  TUNEJIT_ASSIGN_OR_RETURN(t.w, config.Other("tile_w"));
  TUNEJIT_ASSIGN_OR_RETURN(t.thread_h, config.Other("thread_h"));
  TUNEJIT_ASSIGN_OR_RETURN(t.thread_w, config.Other("thread_w"));
  if (t.c < kVector || t.c % kVector != 0) {
    return InvalidConfig(kTask, absl::StrCat("tile_c ", t.c, " (whole 8-channel vectors)"));
  }
  if (t.h < 1 || t.w < 1 || t.thread_h < 1 || t.thread_w < 1 || t.h % t.thread_h != 0 ||
      t.w % t.thread_w != 0) {
    return InvalidConfig(kTask, absl::StrCat("thread tile ", t.thread_h, "x", t.thread_w,
                                             " does not divide the block tile ", t.h, "x", t.w));
  }
  if (t.thread_h * t.thread_w > kMaxThreadPixels) {
    return InvalidConfig(kTask, absl::StrCat(t.thread_h * t.thread_w, " pixels per thread > ",
                                             kMaxThreadPixels, " (8 accumulators each)"));
  }
  return t;
}

// A tile twice as large as the work along a dimension only adds idle threads: the half tile
// covers the same outputs.
absl::Status CheckTileFitsWork(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  const int64_t vector_channels = CeilDiv64(p.ci, kVector) * kVector;
  const struct {
    const char* knob;
    int64_t tile, work;
    const char* what;
  } sides[] = {{"tile_c", t.c, vector_channels, "channels (in 8s)"},
               {"tile_h", t.h, p.OutH(), "output rows"},
               {"tile_w", t.w, p.OutW(), "output columns"}};
  for (const auto& side : sides) {
    if (side.tile > 1 && side.tile / 2 >= side.work) {
      return InvalidConfig(kTask, absl::StrCat(side.knob, " ", side.tile, " for ", side.work, " ",
                                               side.what, ": half the block would idle"));
    }
  }
  return absl::OkStatus();
}

// depthwise_nhwc.cu DepthwiseShape: the window's rows and columns.
int64_t WindowRows(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  return (t.h - 1) * p.stride_h + (p.kh - 1) * p.dilation_h + 1;
}
int64_t WindowCols(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  return (t.w - 1) * p.stride_w + (p.kw - 1) * p.dilation_w + 1;
}

// The kernel's static shared memory: the float16 window and the float32 [tap][channel] weights.
int64_t SharedBytes(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  return WindowRows(t, p) * WindowCols(t, p) * t.c * 2 + p.kh * p.kw * t.c * 4;
}

// The input columns of a row that a thread's taps read: x * SW + s * DW for its thread_w
// outputs x and the filter's columns s (the kernel loads the columns between and ptxas drops
// them, unread).
int64_t ThreadInputColumns(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  std::vector<bool> read((t.thread_w - 1) * p.stride_w + (p.kw - 1) * p.dilation_w + 1);
  for (int64_t x = 0; x < t.thread_w; ++x) {
    for (int64_t s = 0; s < p.kw; ++s) read[x * p.stride_w + s * p.dilation_w] = true;
  }
  return std::count(read.begin(), read.end(), true);
}

// The floats a thread holds while it accumulates: 8 per output, 8 per input column of a row it
// reads, 8 weights of a tap, and about 32 more for addresses and the loads in flight.
int64_t DepthwiseRegisters(const DepthwiseTile& t, const autotvm::Conv2dParams& p) {
  return kVector * (t.thread_h * t.thread_w + ThreadInputColumns(t, p) + 1) + 32;
}

absl::Status CheckRegisters(const DepthwiseTile& t, const autotvm::Conv2dParams& p,
                            const DeviceLimits& limits) {
  const int64_t floats = DepthwiseRegisters(t, p);
  if (floats > kMaxThreadFloats) {
    return InvalidConfig(kTask, absl::StrCat("about ", floats, " registers per thread > ",
                                             kMaxThreadFloats, " (thread_w ", t.thread_w,
                                             " over a ", p.kw, "-wide filter would spill)"));
  }
  if (floats * t.threads() > limits.regs_per_block) {
    return InvalidConfig(kTask,
                         absl::StrCat(t.threads(), " threads x about ", floats,
                                      " registers > regs_per_block ", limits.regs_per_block));
  }
  return absl::OkStatus();
}

// The kernel's name expression: depthwise_nhwc.cu's template with its three policies.
std::string KernelName(const DepthwiseTile& t, const autotvm::Conv2dParams& p,
                       const Epilogue& epilogue) {
  return absl::StrFormat(
      "tunejit::depthwise_conv2d_nhwc<tunejit::DepthwiseFilter<%d, %d, %d, %d, %d, %d>, "
      "tunejit::DepthwiseTile<%d, %d, %d, %d, %d>, tunejit::DepthwiseIo<%d, %s, %d>>",
      p.kh, p.kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,  // filter
      t.c, t.h, t.w, t.thread_h, t.thread_w,                           // tile
      p.ci % kVector == 0 ? 1 : 0, EpilogueTypeName(epilogue), WgmmaOutF16(p.out_dtype, epilogue));
}

// Whether one 8-channel vector of one output pixel, the smallest tile, fits in shared memory:
// not for dilations so wide that a single filter's window does not.
bool SmallestTileFits(const autotvm::Conv2dParams& p) {
  const DepthwiseTile t{.c = kVector, .h = 1, .w = 1, .thread_h = 1, .thread_w = 1};
  return SharedBytes(t, p) <= DeviceLimits{}.shared_bytes_per_block;
}

class DepthwiseConv2dNhwc final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseDepthwiseNhwc(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseDepthwiseNhwc(workload));
    TUNEJIT_RETURN_IF_ERROR(CheckWgmmaEpilogue(kTask, epilogue, /*int8=*/false, p.out_dtype));
    TUNEJIT_ASSIGN_OR_RETURN(DepthwiseTile t, ReadTile(config));
    TUNEJIT_RETURN_IF_ERROR(CheckTileFitsWork(t, p));
    TUNEJIT_RETURN_IF_ERROR(CheckRegisters(t, p, limits));
    const int64_t channel_blocks = CeilDiv64(p.ci, t.c);
    const int64_t tiles_w = CeilDiv64(p.OutW(), t.w);
    const int64_t tiles = CeilDiv64(p.OutH(), t.h) * tiles_w;
    TUNEJIT_ASSIGN_OR_RETURN(const int grid,
                             ToInt32(kTask, "blocks", p.n * tiles * channel_blocks));
    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(grid);
    shape.block[0] = static_cast<uint32_t>(t.threads());
    shape.overlaps_previous = true;  // the kernel waits for the previous grid before any access
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, SharedBytes(t, p), limits));
    PlannedKernel kernel;
    kernel.label = "depthwise_conv2d_nhwc";
    kernel.spec = KernelSpec{"depthwise_nhwc.cu", KernelName(t, p, epilogue), {}};
    kernel.shape = shape;
    kernel.args = EpilogueTensorArgs(epilogue);
    for (int64_t v : {p.ci, p.h, p.w, p.OutH(), p.OutW(), int64_t{p.pad_top}, int64_t{p.pad_left},
                      channel_blocks, tiles_w, tiles}) {
      kernel.args.push_back(Int32Arg(v));
    }
    OpPlan plan;
    plan.kernels.push_back(std::move(kernel));
    return plan;
  }

  // 32 channels by 8 x 8 pixels, 4 adjacent pixels of a row per thread (64 threads, 7.4 KiB for
  // a 3x3 filter), each side cut to the power of two that covers the work; then smaller pixel
  // tiles (and channel tiles) while the window is past 48 KiB, and narrower thread tiles while a
  // wide stride or dilation would spill.
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseDepthwiseNhwc(workload));
    const DeviceLimits limits;  // 48 KiB of static shared memory, 64K registers: any sm_70+
    DepthwiseTile t{
        .c = std::min<int64_t>(32, PowerOfTwoAtLeast(CeilDiv64(p.ci, kVector)) * kVector),
        .h = std::min<int64_t>(8, PowerOfTwoAtLeast(p.OutH())),
        .w = std::min<int64_t>(8, PowerOfTwoAtLeast(p.OutW())),
        .thread_h = 1,
        .thread_w = 4};
    while (SharedBytes(t, p) > limits.shared_bytes_per_block) {
      // Pixel tiles down to 4 x 4 (past that, the halo outweighs the tile), then channels, then
      // pixels again.
      if (t.h * t.w > 16 || (t.c == kVector && (t.h > 1 || t.w > 1))) {
        t.h = std::max<int64_t>(1, t.h / 2);
        t.w = std::max<int64_t>(1, t.w / 2);
      } else if (t.c > kVector) {
        t.c /= 2;
      } else {
        break;
      }
    }
    t.thread_w = std::min(t.thread_w, t.w);
    while (!CheckRegisters(t, p, limits).ok() && t.thread_w > 1) t.thread_w /= 2;
    const autotvm::ConfigEntity config = TileConfig(t);
    TUNEJIT_RETURN_IF_ERROR(Specialize(workload, config, limits, Epilogue{}).status());
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& /*workload*/, const autotvm::Target& /*target*/) const override {
    // Specialize rejects thread tiles that do not divide the block's, more than 8 pixels or
    // about 168 registers a thread, tiles twice the work, and shared memory past 48 KiB.
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_c", {8, 16, 32, 64, 128}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_h", {1, 2, 4, 8, 16}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_w", {1, 2, 4, 8, 16, 32}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("thread_h", {1, 2, 4}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("thread_w", {1, 2, 4, 8}));
    return s;
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // A depthwise conv of multiplier 1 in an fp16 tensor-core network (and, down the int8
    // network's ladder, its depthwise convs), on the NHWC float16 activations around it.
    const autotvm::Conv2dParams& geometry = request.conv;
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kFp16TensorCores ||
        !geometry.Depthwise() || geometry.co != geometry.ci || !SmallestTileFits(geometry)) {
      return std::nullopt;
    }
    autotvm::Conv2dParams p = geometry;
    p.data_dtype = p.kernel_dtype = "float16";
    p.out_dtype = request.half_output ? "float16" : "float32";
    return OpOffer{{autotvm::MakeConv2dWorkload(kTask, p), 10}, {.nhwc = true}};
  }

  // Into float16 or float32 (CheckWgmmaEpilogue).
  bool takes_activation() const override { return true; }

 private:
  static int64_t PowerOfTwoAtLeast(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
  }

  static autotvm::ConfigEntity TileConfig(const DepthwiseTile& t) {
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_c", t.c));
    config.knobs.push_back(OtherKnob("tile_h", t.h));
    config.knobs.push_back(OtherKnob("tile_w", t.w));
    config.knobs.push_back(OtherKnob("thread_h", t.thread_h));
    config.knobs.push_back(OtherKnob("thread_w", t.thread_w));
    return config;
  }
};

}  // namespace

const OpTemplate* DepthwiseConv2dNhwcTemplate() {
  static const DepthwiseConv2dNhwc* const kTemplate = new DepthwiseConv2dNhwc();
  return kTemplate;
}

}  // namespace tunejit

// conv2d_NCHWc_int8.cuda: int8 convolution on 4-channel-packed tensors with dp4a
// (kernel_sources/conv2d_int8.cu; docs/tvm-templates.md section 6). Three kernels: weight packing
// OIHW -> OIHW4o4i (kPrepare, persistent workspace 0), data packing NCHW -> NCHW4c (workspace 1)
// and the tuned convolution, whose epilogue writes the NCHW output directly.
//
// The knobs are those of the packed (AlterOpLayout) workload: tile_f splits CO/4 and tile_rc
// splits CI/4, so NCHW and NCHW4c workloads with the same shapes give the same kernels.
// Channel counts must be multiples of 4 (Relay's conv2d_legalize pads them; so does our executor).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"

namespace tunejit {
namespace {

constexpr char kTask[] = "conv2d_NCHWc_int8.cuda";

absl::StatusOr<autotvm::Conv2dParams> ParseInt8Conv(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
  if (p.data_dtype != "int8" || p.kernel_dtype != "int8" || p.out_dtype != "int32") {
    return absl::UnimplementedError(absl::StrCat(kTask, ": supports int8 x int8 -> int32 (got ",
                                                 p.data_dtype, ", ", p.kernel_dtype, " -> ",
                                                 p.out_dtype, ")"));
  }
  if (p.groups != 1 || (p.layout != "NCHW" && p.layout != "NCHW4c")) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": needs groups 1 and layout NCHW or NCHW4c (got ", p.layout, ")"));
  }
  if (p.n < 1 || p.ci < 1 || p.co < 1 || p.kh < 1 || p.kw < 1 || p.OutH() < 1 || p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape or output"));
  }
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": stride and dilation must be >= 1"));
  }
  if (p.ci % 4 != 0 || p.co % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": input and output channels must be multiples of 4 (got CI ", p.ci,
                     ", CO ", p.co, "); pad the channels first, as Relay's conv2d_legalize does"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "input elements", p.n * p.ci * p.h * p.w).status());
  TUNEJIT_RETURN_IF_ERROR(
      ToInt32(kTask, "output elements", p.n * p.co * p.OutH() * p.OutW()).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "weight elements", p.co * p.ci * p.kh * p.kw).status());
  return p;
}

struct Int8Knobs {
  SpatialTile n, f, y, x;
  bool fuse_yx = false;
  int rc = 1, ry = 1, rx = 1;
  std::vector<int64_t> perm{0, 1, 2};
  bool aa_db = false, ww_db = false;
  int unroll = 0;
};

absl::StatusOr<bool> ReadFlag(const autotvm::ConfigEntity& config, const std::string& name) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t v, ReadOtherOr(config, name, 0));
  if (v != 0 && v != 1) return InvalidConfig(kTask, absl::StrCat(name, " = ", v, ", not 0 or 1"));
  return v == 1;
}

absl::StatusOr<Int8Knobs> ReadKnobs(const autotvm::ConfigEntity& config) {
  Int8Knobs k;
  TUNEJIT_ASSIGN_OR_RETURN(k.n, ReadSpatialTile(config, "tile_n"));
  TUNEJIT_ASSIGN_OR_RETURN(k.f, ReadSpatialTile(config, "tile_f"));
  TUNEJIT_ASSIGN_OR_RETURN(k.y, ReadSpatialTile(config, "tile_y"));
  TUNEJIT_ASSIGN_OR_RETURN(k.x, ReadSpatialTile(config, "tile_x"));
  TUNEJIT_ASSIGN_OR_RETURN(k.fuse_yx, ReadFlag(config, "fuse_yx"));
  TUNEJIT_ASSIGN_OR_RETURN(k.rc, ReadInnerFactor(config, "tile_rc"));
  TUNEJIT_ASSIGN_OR_RETURN(k.ry, ReadInnerFactor(config, "tile_ry"));
  TUNEJIT_ASSIGN_OR_RETURN(k.rx, ReadInnerFactor(config, "tile_rx"));
  if (config.Find("reorder_inner") != nullptr) {
    TUNEJIT_ASSIGN_OR_RETURN(k.perm, config.Reorder("reorder_inner"));
    std::vector<int64_t> sorted = k.perm;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<int64_t>{0, 1, 2}) {
      return InvalidConfig(kTask, absl::StrCat("reorder_inner [", absl::StrJoin(k.perm, ", "),
                                               "] is not a permutation of [0, 1, 2]"));
    }
  }
  TUNEJIT_ASSIGN_OR_RETURN(k.aa_db, ReadFlag(config, "AA_double_buffer"));
  TUNEJIT_ASSIGN_OR_RETURN(k.ww_db, ReadFlag(config, "WW_double_buffer"));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, ReadOtherOr(config, "auto_unroll_max_step", 0));
  if (unroll < 0 || unroll > 1 << 16) {
    return InvalidConfig(kTask, absl::StrCat("auto_unroll_max_step = ", unroll));
  }
  k.unroll = static_cast<int>(unroll);
  return k;
}

// Grid (ceil(OH/BY) * ceil(OW/BX), ceil((CO/4)/BF), ceil(N/BN)); block per fuse_yx (spec 6.4).
LaunchShape ConvShape(const autotvm::Conv2dParams& p, const Int8Knobs& k) {
  LaunchShape s;
  const int64_t gx = CeilDiv64(p.OutH(), k.y.block()) * CeilDiv64(p.OutW(), k.x.block());
  s.grid[0] = static_cast<uint32_t>(std::min<int64_t>(gx, UINT32_MAX));
  s.grid[1] = static_cast<uint32_t>(CeilDiv64(p.co / 4, k.f.block()));
  s.grid[2] = static_cast<uint32_t>(CeilDiv64(p.n, k.n.block()));
  if (k.fuse_yx) {
    s.block[0] = static_cast<uint32_t>(k.y.t * k.x.t);
    s.block[1] = static_cast<uint32_t>(k.f.t);
    s.block[2] = static_cast<uint32_t>(k.n.t);
  } else {
    s.block[0] = static_cast<uint32_t>(k.x.t);
    s.block[1] = static_cast<uint32_t>(k.y.t);
    s.block[2] = static_cast<uint32_t>(k.n.t * k.f.t);
  }
  return s;
}

int64_t SharedBytes(const autotvm::Conv2dParams& p, const Int8Knobs& k) {
  const int64_t rows = int64_t{k.y.block() - 1} * p.stride_h + int64_t{k.ry - 1} * p.dilation_h + 1;
  const int64_t cols = int64_t{k.x.block() - 1} * p.stride_w + int64_t{k.rx - 1} * p.dilation_w + 1;
  const int64_t aa = int64_t{k.n.block()} * k.rc * rows * cols * 4;
  const int64_t ww = int64_t{k.f.block()} * k.rc * k.ry * k.rx * 16;
  return aa * (k.aa_db ? 2 : 1) + ww * (k.ww_db ? 2 : 1);
}

PlannedKernel PackKernel(std::string label, std::string name, int64_t words) {
  PlannedKernel k;
  k.label = std::move(label);
  k.spec.source_file = "conv2d_int8.cu";
  k.spec.name_expression = std::move(name);
  k.shape.grid[0] = static_cast<uint32_t>(std::min<int64_t>(CeilDiv64(words, 128), UINT32_MAX));
  k.shape.block[0] = 128;
  return k;
}

class Conv2dNchwcInt8 final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseInt8Conv(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseInt8Conv(workload));
    TUNEJIT_RETURN_IF_ERROR(
        CheckActivation(kTask, epilogue, "it runs on the CUDA cores and fuses relu only"));
    if (epilogue.bias && epilogue.output == Epilogue::Output::kAccumulator) {
      return InvalidConfig(kTask,
                           "an int32 output takes no float bias (use a float32 or int8 "
                           "requantized output)");
    }
    TUNEJIT_ASSIGN_OR_RETURN(Int8Knobs k, ReadKnobs(config));
    const LaunchShape shape = ConvShape(p, k);
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, SharedBytes(p, k), limits));
    TUNEJIT_RETURN_IF_ERROR(CheckAccumulators(
        kTask,
        int64_t{k.n.per_thread()} * k.f.per_thread() * k.y.per_thread() * k.x.per_thread() * 4,
        limits));

    PlannedKernel conv;
    conv.label = "conv2d_nchwc_int8";
    conv.spec.source_file = "conv2d_int8.cu";
    conv.spec.name_expression = absl::StrFormat(
        "tunejit::conv2d_nchwc_int8<%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
        "%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d>",
        k.n.v, k.n.t, k.n.i, k.f.v, k.f.t, k.f.i, k.y.v, k.y.t, k.y.i, k.x.v, k.x.t, k.x.i,
        k.fuse_yx ? 1 : 0, k.rc, k.ry, k.rx, k.perm[0], k.perm[1], k.perm[2], k.aa_db ? 1 : 0,
        k.ww_db ? 1 : 0, k.unroll, p.kh, p.kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
        EpilogueCode(epilogue));
    conv.shape = shape;
    const std::vector<KernelArg> tensors =
        EpilogueTensorArgs(epilogue);  // data, w, bias, scale, out
    conv.args = {WorkspaceArg(1), WorkspaceArg(0), tensors[2], tensors[3], tensors[4]};
    for (int64_t v : {p.n, p.ci / 4, p.h, p.w, p.co / 4, p.OutH(), p.OutW(), int64_t{p.pad_top},
                      int64_t{p.pad_left}}) {
      conv.args.push_back(Int32Arg(v));
    }

    PlannedKernel pack_w = PackKernel("pack_weight", "tunejit::nchwc_int8_pack_weight",
                                      p.co * (p.ci / 4) * p.kh * p.kw);
    pack_w.phase = PlannedKernel::Phase::kPrepare;
    pack_w.args = {InputArg(1),    WorkspaceArg(0), Int32Arg(p.co),
                   Int32Arg(p.ci), Int32Arg(p.kh),  Int32Arg(p.kw)};
    PlannedKernel pack_d =
        PackKernel("pack_data", "tunejit::nchwc_int8_pack_data", p.n * (p.ci / 4) * p.h * p.w);
    pack_d.args = {InputArg(0),    WorkspaceArg(1), Int32Arg(p.n),
                   Int32Arg(p.ci), Int32Arg(p.h),   Int32Arg(p.w)};
    for (const PlannedKernel* pk : {&pack_w, &pack_d}) {
      TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, pk->shape, 0, limits));
    }

    OpPlan plan;
    plan.kernels = {std::move(pack_w), std::move(pack_d), std::move(conv)};
    plan.workspace_bytes = {p.co * p.ci * p.kh * p.kw, p.n * p.ci * p.h * p.w};
    plan.workspace_persistent = {true, false};
    return plan;
  }

  // TVM has no fallback (first candidates: one thread per block). Ours, modelled on the tuned
  // VGG records: 4 x 2 output-channel chunks, 2 x 2 rows, up to 16 columns per block (128
  // threads, 16 accumulators each), one channel chunk and the kernel column per step, both tiles
  // double-buffered. Splits need not divide (the kernel handles tails).
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseInt8Conv(workload));
    const int64_t co4 = p.co / 4;
    const int64_t ow = p.OutW();
    int64_t tx = LargestDivisorAtMost(ow, 16);
    if (tx < 7) tx = std::min<int64_t>(ow, 16);  // a poor divisor: accept a tail instead
    autotvm::ConfigEntity config;
    config.knobs.push_back(SplitKnob("tile_n", {-1, 1, 1, 1}));
    config.knobs.push_back(
        SplitKnob("tile_f", {-1, 1, std::min<int64_t>(4, co4), co4 >= 8 ? 2 : 1}));
    config.knobs.push_back(
        SplitKnob("tile_y", {-1, 1, std::min<int64_t>(2, p.OutH()), p.OutH() >= 4 ? 2 : 1}));
    config.knobs.push_back(SplitKnob("tile_x", {-1, 1, tx, 1}));
    config.knobs.push_back(OtherKnob("fuse_yx", 1));
    config.knobs.push_back(SplitKnob("tile_rc", {-1, 1}));
    config.knobs.push_back(SplitKnob("tile_ry", {-1, p.kh <= 7 ? p.kh : 1}));
    config.knobs.push_back(SplitKnob("tile_rx", {-1, 1}));
    autotvm::Knob reorder{"reorder_inner", "re", autotvm::Json::array({0, 1, 2})};
    config.knobs.push_back(std::move(reorder));
    config.knobs.push_back(OtherKnob("AA_double_buffer", 1));
    config.knobs.push_back(OtherKnob("WW_double_buffer", 1));
    config.knobs.push_back(OtherKnob("auto_unroll_max_step", 512));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& workload, const autotvm::Target& /*target*/) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_n", p.n, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co / 4, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("fuse_yx", {0, 1}));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci / 4, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_ry", p.kh, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rx", p.kw, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddReorder("reorder_inner", 3));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("AA_double_buffer", {0, 1}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("WW_double_buffer", {0, 1}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 512, 1500}));
    return s;
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // Whole 4-channel groups, groups 1 (the executor keeps other convs float: Relay.quantize's
    // rule).
    const autotvm::Conv2dParams& geometry = request.conv;
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kInt8Dp4a ||
        geometry.groups != 1 || geometry.ci % 4 != 0 || geometry.co % 4 != 0) {
      return std::nullopt;
    }
    autotvm::Conv2dParams p = request.conv;
    p.layout = "NCHW";
    p.data_dtype = p.kernel_dtype = "int8";
    p.out_dtype = "int32";
    return OpOffer{{autotvm::MakeConv2dWorkload(kTask, p), 10}, {}};
  }
};

}  // namespace

const OpTemplate* Conv2dNchwcInt8Template() {
  static const Conv2dNchwcInt8* const kTemplate = new Conv2dNchwcInt8();
  return kTemplate;
}

}  // namespace tunejit

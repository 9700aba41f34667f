// conv2d_nchw_patchify_wgmma.cuda (ops/patchify.h): the patch gather and weight kernels of
// kernel_sources/patchify.cu, and the template that puts them before dense_wgmma.cuda's GEMM.
//
// Workload: the stem template's [data [N, C, H, W] float32, kernel [CO, C, KH, KW] float32,
// strides, padding, dilation, out_dtype float16 | float32] (autotvm::ParseConv2dWorkload;
// nhwc_out). Knobs: dense_wgmma.cuda's (tile_m, tile_n, tile_k, stages, consumer_wg, split_k),
// for the GEMM [N*OH*OW, KP] x [CO, KP]; every rule of that template applies to it.
#include "ops/patchify.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/templates.h"

namespace tunejit {
namespace {

constexpr const char* kTask = autotvm::kConv2dNchwPatchifyWgmma;

// The widest access (4, 2 or 1 elements) that keeps every load of a patch row piece and every
// store of its columns aligned: it must divide KW (a piece's length), W (the input row's start)
// and KP (the patch row's start; a multiple of 8).
int64_t GatherVector(const PatchifyGeometry& g) {
  for (int64_t v : {4, 2}) {
    if (g.kw % v == 0 && g.w % v == 0) return v;
  }
  return 1;
}

absl::Status CheckInt32(absl::string_view op, const PatchifyGeometry& g) {
  TUNEJIT_RETURN_IF_ERROR(ToInt32(op, "N*C*H*W", g.n * g.c * g.h * g.w).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(op, "M*KP", g.m() * g.kp()).status());
  return absl::OkStatus();
}

absl::StatusOr<autotvm::Conv2dParams> ParsePatchify(const autotvm::Workload& workload) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, ParseFloatInputConv(kTask, workload));
  TUNEJIT_RETURN_IF_ERROR(PatchifyGeometryOf(p).status());
  return p;
}

// dense_wgmma.cuda's workload for the conv's GEMM: [M, KP] float16 x [CO, KP] float16, the
// conv's output dtype (the bias is the epilogue's, as for every dense step).
autotvm::Workload GemmWorkload(const autotvm::Conv2dParams& p, const PatchifyGeometry& g) {
  autotvm::DenseParams d;
  d.m = g.m();
  d.n = p.co;
  d.k = g.kp();
  d.data_dtype = "float16";
  d.out_dtype = p.out_dtype;
  return autotvm::MakeDenseWorkload(std::string(DenseWgmmaTemplate()->task_name()), d);
}

// The patchify conv's geometry and its GEMM's workload, which dense_wgmma.cuda takes.
struct PatchifyGemm {
  autotvm::Conv2dParams conv;
  PatchifyGeometry geometry;
  autotvm::Workload gemm;
};

absl::StatusOr<PatchifyGemm> ParseWithGemm(const autotvm::Workload& workload) {
  PatchifyGemm out;
  TUNEJIT_ASSIGN_OR_RETURN(out.conv, ParsePatchify(workload));
  TUNEJIT_ASSIGN_OR_RETURN(out.geometry, PatchifyGeometryOf(out.conv));
  TUNEJIT_RETURN_IF_ERROR(CheckInt32(kTask, out.geometry));
  out.gemm = GemmWorkload(out.conv, out.geometry);
  TUNEJIT_RETURN_IF_ERROR(DenseWgmmaTemplate()->CanImplement(out.gemm));
  return out;
}

// The GEMM template's errors, said as this task's (its rules are this task's rules).
absl::Status AsOurs(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(kTask, ": the GEMM: ", status.message()));
}

// A dense plan's tensor references moved onto the patchify plan's: its data and weight (inputs
// 0 and 1) are our workspaces 0 and 1 (the patches, the float16 weight), its own workspaces
// follow ours; bias, scale and the output stay.
void MoveOntoWorkspaces(KernelArg& arg) {
  constexpr int kOurWorkspaces = 2;
  if (arg.kind == KernelArg::Kind::kInput && arg.index_or_int < 2) {
    arg = WorkspaceArg(static_cast<int>(arg.index_or_int));
  } else if (arg.kind == KernelArg::Kind::kWorkspace) {
    arg = WorkspaceArg(static_cast<int>(arg.index_or_int) + kOurWorkspaces);
  }
}

// The whole plan: the weight's conversion (kPrepare), the gather, then `gemm`'s kernels.
absl::StatusOr<OpPlan> ComposePlan(const PatchifyGemm& s, OpPlan gemm) {
  const PatchifyGeometry& g = s.geometry;
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel weight, PatchWeightKernel(g, s.conv.co));
  weight.args[0] = InputArg(1);
  weight.args[1] = WorkspaceArg(1);
  weight.phase = PlannedKernel::Phase::kPrepare;
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel gather, PatchGatherKernel(g, ElementType::kFloat32));
  gather.args[1] = WorkspaceArg(0);
  OpPlan plan;
  plan.kernels = {std::move(weight), std::move(gather)};
  for (PlannedKernel& k : gemm.kernels) {
    for (KernelArg& arg : k.args) MoveOntoWorkspaces(arg);
    plan.kernels.push_back(std::move(k));
  }
  for (PlannedTensorMap& map : gemm.tensor_maps) MoveOntoWorkspaces(map.tensor);
  plan.tensor_maps = std::move(gemm.tensor_maps);
  plan.workspace_bytes = {g.m() * g.kp() * 2, s.conv.co * g.kp() * 2};
  plan.workspace_persistent = {false, true};
  for (size_t w = 0; w < gemm.workspace_bytes.size(); ++w) {
    plan.workspace_bytes.push_back(gemm.workspace_bytes[w]);
    plan.workspace_persistent.push_back(w < gemm.workspace_persistent.size() &&
                                        gemm.workspace_persistent[w]);
  }
  plan.notes = std::move(gemm.notes);
  return plan;
}

class Conv2dNchwPatchifyWgmma final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseWithGemm(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(PatchifyGemm s, ParseWithGemm(workload));
    if (epilogue.residual) {
      return absl::UnimplementedError(absl::StrCat(kTask, ": takes no residual in its epilogue"));
    }
    absl::StatusOr<OpPlan> gemm =
        DenseWgmmaTemplate()->Specialize(s.gemm, config, limits, epilogue);
    if (!gemm.ok()) return AsOurs(gemm.status());
    return ComposePlan(s, *std::move(gemm));
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(PatchifyGemm s, ParseWithGemm(workload));
    // The GEMM's: for ViT-B/16 at batch 32 (6272 x 768 x 768) 128 x 128 tiles, two consumers,
    // four stages of 64 K: 294 tiles over the persistent grid.
    return DenseWgmmaTemplate()->FallbackConfig(s.gemm);
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                   const autotvm::Target& target) const override {
    TUNEJIT_ASSIGN_OR_RETURN(PatchifyGemm s, ParseWithGemm(workload));
    return DenseWgmmaTemplate()->ConfigSpace(s.gemm, target);
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // A float16 patchify conv that the wgmma conv template cannot take (its data is the graph's
    // float32 RGB input). Rank 1, as the stem's; registered after the stem, which stays the
    // fallback where both take a conv.
    if (request.op != OpRequest::Op::kConv2d || request.mode != NumericMode::kFp16TensorCores) {
      return std::nullopt;
    }
    autotvm::Conv2dParams p = request.conv;
    p.data_dtype = p.kernel_dtype = "float32";
    p.out_dtype = request.half_output ? "float16" : "float32";
    const autotvm::Workload workload = autotvm::MakeConv2dWorkload(kTask, p);
    if (!ParseWithGemm(workload).ok()) return std::nullopt;
    return OpOffer{{workload, 10}, {.nhwc = true, .float_nchw_data = true}, /*rank=*/1};
  }

  // dense_wgmma.cuda's epilogue takes the activation (into float16 or float32).
  bool takes_activation() const override { return true; }
};

}  // namespace

absl::StatusOr<PatchifyGeometry> PatchifyGeometryOf(const autotvm::Conv2dParams& p) {
  if (p.groups != 1) return absl::UnimplementedError(absl::StrCat(kTask, ": groups != 1"));
  if (p.kh != p.stride_h || p.kw != p.stride_w) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": kernel ", p.kh, "x", p.kw,
                                                 " is not the stride ", p.stride_h, "x", p.stride_w,
                                                 " (not a patchify conv)"));
  }
  if (p.pad_top != 0 || p.pad_left != 0 || p.pad_bottom != 0 || p.pad_right != 0) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": padding (not a patchify conv)"));
  }
  if (p.dilation_h != 1 || p.dilation_w != 1) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": dilation (not a patchify conv)"));
  }
  if (p.n < 1 || p.ci < 1 || p.co < 1 || p.kh < 1 || p.kw < 1 || p.h < p.kh || p.w < p.kw) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape (data ", p.n, "x", p.ci,
                                                   "x", p.h, "x", p.w, ", ", p.co, " channels of ",
                                                   p.kh, "x", p.kw, " patches)"));
  }
  PatchifyGeometry g;
  g.n = p.n, g.c = p.ci, g.h = p.h, g.w = p.w, g.kh = p.kh, g.kw = p.kw;
  g.oh = p.h / p.kh;
  g.ow = p.w / p.kw;
  return g;
}

absl::StatusOr<PlannedKernel> PatchGatherKernel(const PatchifyGeometry& g, ElementType data) {
  constexpr char kOp[] = "patch_gather";
  if (data != ElementType::kFloat32 && data != ElementType::kFloat16) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": float32 or float16 data only"));
  }
  if (g.n < 1 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.oh < 1 || g.ow < 1 || g.oh * g.kh > g.h ||
      g.ow * g.kw > g.w) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": inconsistent geometry"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckInt32(kOp, g));
  // A thread per patch row piece (m, c, kh), and one per patch row for its zero columns.
  const int64_t rows = g.c * g.kh + (g.kp() > g.k() ? 1 : 0);
  TUNEJIT_ASSIGN_OR_RETURN(const int total, ToInt32(kOp, "threads", g.m() * rows));
  std::vector<KernelArg> args = {InputArg(0), OutputArg(0)};
  for (int64_t v : {g.c, g.h, g.w, g.oh, g.ow, g.kp()}) args.push_back(Int32Arg(v));
  args.push_back(Int32Arg(total));
  return GridStrideLaunch(
      "patchify.cu", kOp,
      absl::StrCat("tunejit::patch_gather<", g.kh, ", ", g.kw, ", ", GatherVector(g), ", ",
                   data == ElementType::kFloat32 ? "float" : "tunejit::f16", ">"),
      total, std::move(args));
}

absl::StatusOr<PlannedKernel> PatchWeightKernel(const PatchifyGeometry& g, int64_t co) {
  constexpr char kOp[] = "patch_weight_f16";
  if (co < 1 || g.k() < 1) return absl::InvalidArgumentError(absl::StrCat(kOp, ": empty weight"));
  TUNEJIT_ASSIGN_OR_RETURN(const int total, ToInt32(kOp, "CO*KP", co * g.kp()));
  return GridStrideLaunch(
      "patchify.cu", kOp, "tunejit::patch_weight_f16", total,
      {InputArg(0), OutputArg(0), Int32Arg(g.k()), Int32Arg(g.kp()), Int32Arg(total)});
}

const OpTemplate* Conv2dNchwPatchifyWgmmaTemplate() {
  static const Conv2dNchwPatchifyWgmma* const kTemplate = new Conv2dNchwPatchifyWgmma();
  return kTemplate;
}

}  // namespace tunejit

// dense_wgmma.cuda (kernel_sources/gemm_wgmma.cu): fp16 GEMM on Hopper tensor cores, a tunejit
// task name (docs/tensorcore-design.md 2.1 and 2.3 for the knobs and rules).
//
// Knobs (all `ot`, DenseWgmmaSpace below): tile_m, tile_n, tile_k, stages, consumer_wg, split_k
// (records without it are split_k 1: one kernel; above 1 the GEMM writes split_k slices of
// partial sums to a workspace and a second kernel adds them and applies the epilogue, and the
// activation, which fp16 GEMMs take into float16 or float32 outputs). A float16 residual
// (Epilogue::residual, input 4) is added in the epilogue of single-kernel configs only. Every
// rule below is checked before compiling and rejects with its reason (AutoTVM's "invalid").
//
// Launch: the kernel's first two parameters are TMA descriptors of inputs 0 and 1 (OpPlan::
// tensor_maps, encoded when tensors are bound: fp16, {K, rows}, box {64, tile}, 128-byte swizzle);
// the spec is arch_specific (wgmma and setmaxnreg exist only on sm_90a).
#include <algorithm>
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

constexpr char kTask[] = "dense_wgmma.cuda";

constexpr int64_t kMaxTmaBox = 256;  // cuTensorMapEncodeTiled: boxDim[i] <= 256

// The knobs of one config: the tile, and how many slices K is split into.
struct DenseTile {
  WgmmaTile gemm;
  int64_t split_k = 1;
};

absl::StatusOr<DenseTile> ReadTile(const autotvm::ConfigEntity& config) {
  DenseTile d;
  WgmmaTile& t = d.gemm;
  TUNEJIT_ASSIGN_OR_RETURN(t.m, config.Other("tile_m"));
  TUNEJIT_ASSIGN_OR_RETURN(t.n, config.Other("tile_n"));
  TUNEJIT_ASSIGN_OR_RETURN(t.k, config.Other("tile_k"));
  TUNEJIT_ASSIGN_OR_RETURN(t.stages, config.Other("stages"));
  TUNEJIT_ASSIGN_OR_RETURN(t.consumer_wg, config.Other("consumer_wg"));
  TUNEJIT_ASSIGN_OR_RETURN(d.split_k, ReadOtherOr(config, "split_k", 1));
  return d;
}

// The tensor's dtype in a workload argument ["TENSOR", shape, dtype] (already validated).
std::string TensorDtype(const autotvm::Workload& workload, int index) {
  return workload.args[index][2].get<std::string>();
}

// A dense workload this template takes, with its operand kind.
struct WgmmaDense {
  autotvm::DenseParams p;
  bool int8 = false;
  int64_t element_bytes() const { return int8 ? 1 : 2; }
};

absl::StatusOr<WgmmaDense> ParseWgmmaDense(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  WgmmaDense d;
  TUNEJIT_ASSIGN_OR_RETURN(d.p, autotvm::ParseDenseWorkload(workload));
  const autotvm::DenseParams& p = d.p;
  TUNEJIT_ASSIGN_OR_RETURN(d.int8,
                           WgmmaIsInt8(kTask, p.data_dtype, TensorDtype(workload, 1), p.out_dtype));
  if (p.m < 1 || p.n < 1 || p.k < 1)
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape"));
  // TMA: the global row stride (K elements) must be a multiple of 16 bytes.
  if (p.k * d.element_bytes() % 16 != 0) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": K = ", p.k, " is not a multiple of ",
                                                 16 / d.element_bytes(),
                                                 " (TMA needs 16-byte row strides)"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "M*K", p.m * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*K", p.n * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "M*N", p.m * p.n).status());
  return d;
}

absl::Status CheckEpilogue(const Epilogue& epilogue, const WgmmaDense& d) {
  if (d.p.has_bias && !epilogue.bias) {
    return absl::InvalidArgumentError(absl::StrCat(
        kTask, ": the workload has a bias tensor; apply it through the epilogue (bias = true)"));
  }
  return CheckWgmmaEpilogue(kTask, epilogue, d.int8, d.p.out_dtype, /*reads_residual=*/true);
}

// T: a TMA box dimension is at most 256 elements (the A box is {64, tile_m}, B's {64, tile_n}).
absl::Status CheckTmaBoxes(const WgmmaTile& t) {
  if (t.m > kMaxTmaBox || t.n > kMaxTmaBox) {
    return InvalidConfig(
        kTask, absl::StrCat("TMA box {", t.row_elements(), ", ", std::max(t.m, t.n), "} exceeds ",
                            kMaxTmaBox, " per dimension"));
  }
  return absl::OkStatus();
}

absl::Status CheckTile(const WgmmaTile& t, const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckWgmmaTile(kTask, t, limits));
  return CheckTmaBoxes(t);
}

// split_k: a kernel instantiation per value (1, 2, 4, 8), each slice at least one K tile.
absl::Status CheckSplitK(int64_t split_k, const WgmmaTile& t, const autotvm::DenseParams& p) {
  if (split_k != 1 && split_k != 2 && split_k != 4 && split_k != 8) {
    return InvalidConfig(kTask, absl::StrCat("split_k = ", split_k, " (1, 2, 4 or 8)"));
  }
  const int64_t k_tiles = CeilDiv64(p.k, t.k);
  const int64_t per_split = CeilDiv64(k_tiles, split_k);
  if ((split_k - 1) * per_split >= k_tiles) {
    return InvalidConfig(kTask, absl::StrCat("split_k = ", split_k, " leaves a slice without K (",
                                             k_tiles, " K tiles of ", t.k, ")"));
  }
  return ToInt32(kTask, "split_k*M*N", split_k * p.m * p.n).status();
}

// The GEMM kernel. Split-K: no epilogue, its raw accumulators into workspace 0's slices.
PlannedKernel GemmKernel(const DenseTile& tile, const WgmmaDense& d, const Epilogue& epilogue,
                         const LaunchShape& shape) {
  const autotvm::DenseParams& p = d.p;
  const WgmmaTile& t = tile.gemm;
  const bool split = tile.split_k > 1;
  PlannedKernel kernel;
  kernel.label = "gemm_wgmma";
  kernel.spec = KernelSpec{
      "gemm_wgmma.cu",
      absl::StrFormat("tunejit::gemm_wgmma<%d, %d, %d, %d, %d, %d, %d, %d, %d%s>", t.m, t.n, t.k,
                      t.stages, t.consumer_wg, d.int8 ? 1 : 0, split ? 0 : EpilogueCode(epilogue),
                      split ? 0 : WgmmaOutF16(p.out_dtype, epilogue), tile.split_k,
                      split ? "" : ActivationArg(epilogue)),
      {},
      /*arch_specific=*/true};
  kernel.shape = shape;
  kernel.args = split ? EpilogueTensorArgs(Epilogue{}) : EpilogueTensorArgs(epilogue);
  kernel.args[0] = TensorMapArg(0);
  kernel.args[1] = TensorMapArg(1);
  if (split) kernel.args[4] = WorkspaceArg(0);
  kernel.args.push_back(Int32Arg(p.m));
  kernel.args.push_back(Int32Arg(p.n));
  kernel.args.push_back(Int32Arg(p.k));
  kernel.args.push_back(epilogue.residual && !split ? InputArg(4) : Int64Arg(0));
  return kernel;
}

// Split-K's second kernel: the slices' sum through the epilogue into the output.
PlannedKernel SplitKSumKernel(const DenseTile& tile, const WgmmaDense& d, const Epilogue& epilogue,
                              const DeviceLimits& limits) {
  const autotvm::DenseParams& p = d.p;
  constexpr int kBlock = 256;
  PlannedKernel kernel;
  kernel.label = "split_k_sum";
  kernel.spec =
      KernelSpec{"gemm_wgmma.cu",
                 absl::StrFormat("tunejit::gemm_split_k_sum<%d, %d, %d, %d%s>", tile.split_k,
                                 d.int8 ? 1 : 0, EpilogueCode(epilogue),
                                 WgmmaOutF16(p.out_dtype, epilogue), ActivationArg(epilogue)),
                 {},
                 /*arch_specific=*/true};
  kernel.shape.grid[0] = static_cast<uint32_t>(
      std::min<int64_t>(CeilDiv64(p.m * p.n, kBlock), int64_t{limits.sm_count} * 8));
  kernel.shape.block[0] = kBlock;
  kernel.shape.overlaps_previous = true;  // it waits for the partial sums in GridDependencyWait
  kernel.args = EpilogueTensorArgs(epilogue);
  kernel.args.erase(kernel.args.begin());  // no A
  kernel.args[0] = WorkspaceArg(0);        // the partial sums in place of B
  kernel.args.push_back(Int32Arg(p.m));
  kernel.args.push_back(Int32Arg(p.n));
  return kernel;
}

// The kernel is shape-generic (TMA zero-fills tails, the epilogue checks bounds), so the space
// does not depend on M, N, K. All `ot` knobs; Specialize rejects the combinations that cannot
// run, with the reason.
absl::StatusOr<autotvm::ConfigSpace> DenseWgmmaSpace(bool int8) {
  autotvm::ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_m", {64, 128, 256}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_n", {64, 128, 192, 256}));
  // One or two 128-byte rows of K per stage: 64 / 128 fp16, 128 / 256 int8.
  TUNEJIT_RETURN_IF_ERROR(
      s.AddOther("tile_k", int8 ? std::vector<int64_t>{128, 256} : std::vector<int64_t>{64, 128}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("stages", {2, 3, 4, 5, 6}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("consumer_wg", {1, 2}));
  // Last, 1 first: records from before it keep their index.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("split_k", {1, 2, 4, 8}));
  return s;
}

class DenseWgmma final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseWgmmaDense(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(WgmmaDense d, ParseWgmmaDense(workload));
    const autotvm::DenseParams& p = d.p;
    TUNEJIT_RETURN_IF_ERROR(CheckEpilogue(epilogue, d));
    TUNEJIT_RETURN_IF_ERROR(CheckHopper(kTask, limits));
    TUNEJIT_ASSIGN_OR_RETURN(DenseTile tile, ReadTile(config));
    WgmmaTile& t = tile.gemm;
    t.element_bytes = d.element_bytes();
    TUNEJIT_RETURN_IF_ERROR(CheckTile(t, limits));
    TUNEJIT_RETURN_IF_ERROR(CheckSplitK(tile.split_k, t, p));
    if (epilogue.residual && tile.split_k > 1) {
      return InvalidConfig(kTask, "split-K adds no residual (its sum kernel reads none)");
    }
    LaunchShape shape;
    TUNEJIT_ASSIGN_OR_RETURN(
        shape.grid[0],
        PersistentGrid(kTask, CeilDiv64(p.m, t.m) * CeilDiv64(p.n, t.n) * tile.split_k, limits));
    shape.block[0] = static_cast<uint32_t>(t.threads());
    shape.shared_bytes = static_cast<uint32_t>(t.smem_bytes());
    shape.overlaps_previous = true;  // WgmmaBlock waits for the previous grid after its setup
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, 0, limits, /*allow_optin_smem=*/true));
    OpPlan plan;
    plan.kernels.push_back(GemmKernel(tile, d, epilogue, shape));
    if (tile.split_k > 1) {
      plan.kernels.push_back(SplitKSumKernel(tile, d, epilogue, limits));
      plan.workspace_bytes = {tile.split_k * p.m * p.n * 4};  // fp32 / int32 partial sums
      plan.workspace_persistent = {false};
    }
    // K-major operands [rows, K]: boxes of one swizzled row of K by the tile's rows.
    const TensorMapDesc::Element e =
        d.int8 ? TensorMapDesc::Element::kI8 : TensorMapDesc::Element::kF16;
    plan.tensor_maps = {{InputArg(0), SwizzledMap(e, {p.k, p.m}, {t.m})},
                        {InputArg(1), SwizzledMap(e, {p.k, p.n}, {t.n})}};
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(WgmmaDense d, ParseWgmmaDense(workload));
    const autotvm::DenseParams& p = d.p;
    // The design's first milestone (6.1 step 1): a 128 x 128 tile, two cooperative consumers,
    // one 128-byte K row per stage, 4 stages (about 129 KiB of shared memory).
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_m", 128));
    config.knobs.push_back(OtherKnob("tile_n", p.n <= 64 ? 64 : 128));
    config.knobs.push_back(OtherKnob("tile_k", d.int8 ? 128 : 64));
    config.knobs.push_back(OtherKnob("stages", 4));
    config.knobs.push_back(OtherKnob("consumer_wg", 2));
    config.knobs.push_back(OtherKnob("split_k", 1));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& workload, const autotvm::Target& /*target*/) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(workload));
    return DenseWgmmaSpace(p.data_dtype == "int8");
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // The dense layers of both tensor-core modes run float16; K in whole 16 bytes (TMA's row
    // stride).
    if (request.op != OpRequest::Op::kDense || request.mode != NumericMode::kFp16TensorCores ||
        request.dense.k % WgmmaAlignment(request.mode) != 0) {
      return std::nullopt;
    }
    autotvm::DenseParams p = request.dense;
    p.data_dtype = "float16";
    p.out_dtype = request.half_output ? "float16" : "float32";
    return OpOffer{{autotvm::MakeDenseWorkload(kTask, p), 10}, {}};
  }

  // Into float16 or float32 (CheckWgmmaEpilogue), split-K's in its sum kernel: MobileNetV3's
  // hard_swish classifier.
  bool takes_activation() const override { return true; }
};

}  // namespace

const OpTemplate* DenseWgmmaTemplate() {
  static const DenseWgmma* const kTemplate = new DenseWgmma();
  return kTemplate;
}

}  // namespace tunejit

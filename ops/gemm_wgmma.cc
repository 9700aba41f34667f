// dense_wgmma.cuda (kernel_sources/gemm_wgmma.cu): fp16 GEMM on Hopper tensor cores, a tunejit
// task name (issue 7; shared/docs/tensorcore-design.md 2.1 and 2.3 for the knobs and rules).
//
// Knobs (all `ot`, autotvm/task_spaces.cc): tile_m, tile_n, tile_k, stages, consumer_wg. Every
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

absl::StatusOr<WgmmaTile> ReadTile(const autotvm::ConfigEntity& config) {
  WgmmaTile t;
  TUNEJIT_ASSIGN_OR_RETURN(t.m, config.Other("tile_m"));
  TUNEJIT_ASSIGN_OR_RETURN(t.n, config.Other("tile_n"));
  TUNEJIT_ASSIGN_OR_RETURN(t.k, config.Other("tile_k"));
  TUNEJIT_ASSIGN_OR_RETURN(t.stages, config.Other("stages"));
  TUNEJIT_ASSIGN_OR_RETURN(t.consumer_wg, config.Other("consumer_wg"));
  return t;
}

// The tensor's dtype in a workload argument ["TENSOR", shape, dtype] (already validated).
std::string TensorDtype(const autotvm::Workload& workload, int index) {
  return workload.args[index][2].get<std::string>();
}

absl::StatusOr<autotvm::DenseParams> ParseWgmmaDense(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(workload));
  if (p.data_dtype != "float16" || TensorDtype(workload, 1) != "float16" ||
      (p.out_dtype != "float32" && p.out_dtype != "float16")) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": only float16 data and weight, float32 or float16 output (got ",
                     p.data_dtype, " x ", TensorDtype(workload, 1), " -> ", p.out_dtype, ")"));
  }
  if (p.m < 1 || p.n < 1 || p.k < 1)
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape"));
  // TMA: the global row stride (K * 2 bytes) must be a multiple of 16 bytes.
  if (p.k % 8 != 0) {
    return absl::UnimplementedError(absl::StrCat(
        kTask, ": K = ", p.k, " is not a multiple of 8 (TMA needs 16-byte row strides)"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "M*K", p.m * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*K", p.n * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "M*N", p.m * p.n).status());
  return p;
}

absl::Status CheckEpilogue(const Epilogue& epilogue, const autotvm::DenseParams& p) {
  if (p.has_bias && !epilogue.bias) {
    return absl::InvalidArgumentError(absl::StrCat(
        kTask, ": the workload has a bias tensor; apply it through the epilogue (bias = true)"));
  }
  if (epilogue.output == Epilogue::Output::kInt8Requantize) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": no int8 requantize epilogue yet"));
  }
  if (epilogue.output == Epilogue::Output::kFloat32 && p.out_dtype == "float16") {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": a scaled float32 epilogue does not fit a float16 output"));
  }
  return absl::OkStatus();
}

// T: a TMA box dimension is at most 256 elements (the A box is {64, tile_m}, B's {64, tile_n}).
absl::Status CheckTmaBoxes(const WgmmaTile& t) {
  if (t.m > kMaxTmaBox || t.n > kMaxTmaBox) {
    return InvalidConfig(kTask, absl::StrCat("TMA box {", kWgmmaAtomK, ", ", std::max(t.m, t.n),
                                             "} exceeds ", kMaxTmaBox, " per dimension"));
  }
  return absl::OkStatus();
}

absl::Status CheckTile(const WgmmaTile& t, const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckWgmmaTile(kTask, t, limits));
  return CheckTmaBoxes(t);
}

PlannedKernel GemmKernel(const WgmmaTile& t, const autotvm::DenseParams& p,
                         const Epilogue& epilogue, const LaunchShape& shape) {
  PlannedKernel kernel;
  kernel.label = "gemm_wgmma";
  kernel.spec = KernelSpec{
      "gemm_wgmma.cu",
      absl::StrFormat("tunejit::gemm_wgmma<%d, %d, %d, %d, %d, %d, %d>", t.m, t.n, t.k, t.stages,
                      t.consumer_wg, EpilogueCode(epilogue), p.out_dtype == "float16" ? 1 : 0),
      {},
      /*arch_specific=*/true};
  kernel.shape = shape;
  kernel.args = EpilogueTensorArgs(epilogue);
  kernel.args[0] = TensorMapArg(0);
  kernel.args[1] = TensorMapArg(1);
  kernel.args.push_back(Int32Arg(p.m));
  kernel.args.push_back(Int32Arg(p.n));
  kernel.args.push_back(Int32Arg(p.k));
  return kernel;
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
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseWgmmaDense(workload));
    TUNEJIT_RETURN_IF_ERROR(CheckEpilogue(epilogue, p));
    TUNEJIT_RETURN_IF_ERROR(CheckHopper(kTask, limits));
    TUNEJIT_ASSIGN_OR_RETURN(WgmmaTile t, ReadTile(config));
    TUNEJIT_RETURN_IF_ERROR(CheckTile(t, limits));
    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(CeilDiv64(p.m, t.m));  // M on x: up to 2^31 - 1 tiles
    shape.grid[1] = static_cast<uint32_t>(CeilDiv64(p.n, t.n));
    shape.block[0] = static_cast<uint32_t>(t.threads());
    shape.shared_bytes = static_cast<uint32_t>(t.smem_bytes());
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, 0, limits, /*allow_optin_smem=*/true));
    OpPlan plan;
    plan.kernels.push_back(GemmKernel(t, p, epilogue, shape));
    // K-major operands [rows, K]: boxes of 64 K (one swizzled row) by the tile's rows.
    plan.tensor_maps = {{InputArg(0), Fp16SwizzledMap({p.k, p.m}, {t.m})},
                        {InputArg(1), Fp16SwizzledMap({p.k, p.n}, {t.n})}};
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseWgmmaDense(workload));
    // The design's first milestone (6.1 step 1): a 128 x 128 tile, two cooperative consumers,
    // one 128-byte K row per stage, 4 stages (about 129 KiB of shared memory).
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_m", 128));
    config.knobs.push_back(OtherKnob("tile_n", p.n <= 64 ? 64 : 128));
    config.knobs.push_back(OtherKnob("tile_k", 64));
    config.knobs.push_back(OtherKnob("stages", 4));
    config.knobs.push_back(OtherKnob("consumer_wg", 2));
    return config;
  }
};

}  // namespace

const OpTemplate* DenseWgmmaTemplate() {
  static const DenseWgmma* const kTemplate = new DenseWgmma();
  return kTemplate;
}

}  // namespace tunejit

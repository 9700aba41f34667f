// dense_small_batch.cuda and dense_large_batch.cuda (kernel_sources/dense.cu;
// docs/tvm-templates.md sections 2 and 3).
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

constexpr char kSmallTask[] = "dense_small_batch.cuda";
constexpr char kLargeTask[] = "dense_large_batch.cuda";

absl::StatusOr<autotvm::DenseParams> ParseFloatDense(absl::string_view task,
                                                     const autotvm::Workload& workload) {
  if (workload.task_name != task) {
    return absl::InvalidArgumentError(absl::StrCat(task, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(workload));
  if (p.data_dtype != "float32" || p.out_dtype != "float32") {
    return absl::UnimplementedError(absl::StrCat(task, ": only float32 data and output (got ",
                                                 p.data_dtype, " -> ", p.out_dtype, ")"));
  }
  if (p.m < 1 || p.n < 1 || p.k < 1) {
    return absl::InvalidArgumentError(absl::StrCat(task, ": empty shape"));
  }
  return p;
}

// Checks shared by both templates; returns M, N, K as kernel ints.
absl::Status CheckDenseShape(absl::string_view task, const autotvm::DenseParams& p,
                             const Epilogue& epilogue) {
  TUNEJIT_RETURN_IF_ERROR(
      CheckActivation(task, epilogue, "it runs on the CUDA cores and fuses relu only"));
  if (p.has_bias && !epilogue.bias) {
    return absl::InvalidArgumentError(absl::StrCat(
        task, ": the workload has a bias tensor; apply it through the epilogue (bias = true)"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(task, "M*K", p.m * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(task, "N*K", p.n * p.k).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(task, "M*N", p.m * p.n).status());
  return absl::OkStatus();
}

PlannedKernel DenseKernel(std::string label, std::string expression, const LaunchShape& shape,
                          const Epilogue& epilogue, const autotvm::DenseParams& p) {
  PlannedKernel kernel;
  kernel.label = std::move(label);
  kernel.spec = KernelSpec{"dense.cu", std::move(expression), {}};
  kernel.shape = shape;
  kernel.args = EpilogueTensorArgs(epilogue);
  kernel.args.push_back(Int32Arg(p.m));
  kernel.args.push_back(Int32Arg(p.n));
  kernel.args.push_back(Int32Arg(p.k));
  return kernel;
}

// dense_small_batch: one tile_k split; dense_large_batch: the template's pruning filters always
// end in IndexError, so TVM redefines the three knobs without filters (docs/tvm-templates.md
// section 3.2); the unpruned lists are the real space.
absl::StatusOr<autotvm::ConfigSpace> DenseSpace(const autotvm::DenseParams& p, bool large) {
  autotvm::ConfigSpace s;
  if (large) {
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.m, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.n, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_k", p.k, 3));
  } else {
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_k", p.k, 2));
  }
  return s;
}

class DenseSmallBatch final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kSmallTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseFloatDense(kSmallTask, workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseFloatDense(kSmallTask, workload));
    TUNEJIT_RETURN_IF_ERROR(CheckDenseShape(kSmallTask, p, epilogue));
    TUNEJIT_ASSIGN_OR_RETURN(int kf, ReadInnerFactor(config, "tile_k"));
    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(p.n);  // blockIdx.x = j (out features)
    shape.grid[1] = static_cast<uint32_t>(p.m);  // blockIdx.y = i (batch)
    shape.block[0] = static_cast<uint32_t>(kf);
    const int64_t static_smem = 4 * CeilDiv64(kf, 32);  // BlockSum's per-warp partials
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kSmallTask, shape, static_smem, limits));
    OpPlan plan;
    plan.kernels.push_back(DenseKernel(
        "dense_small_batch",
        absl::StrFormat("tunejit::dense_small_batch<%d, %d>", kf, EpilogueCode(epilogue)), shape,
        epilogue, p));
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseFloatDense(kSmallTask, workload));
    autotvm::ConfigEntity config;
    // TVM: [-1, 64] when K > 64, else [1, 64] (a 64-thread block with a bounds guard).
    config.knobs.push_back(SplitKnob("tile_k", {p.k > 64 ? -1 : 1, 64}));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& workload, const autotvm::Target& /*target*/) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(workload));
    return DenseSpace(p, /*large=*/false);
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    if (request.op != OpRequest::Op::kDense || request.mode != NumericMode::kFp32) {
      return std::nullopt;
    }
    return OpOffer{{autotvm::MakeDenseWorkload(kSmallTask, request.dense), 10}, {}};
  }
};

class DenseLargeBatch final : public OpTemplate {
  static constexpr int64_t kMaxOperandRegisters = 255;  // a thread's register file

 public:
  std::string_view task_name() const override { return kLargeTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseFloatDense(kLargeTask, workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseFloatDense(kLargeTask, workload));
    TUNEJIT_RETURN_IF_ERROR(CheckDenseShape(kLargeTask, p, epilogue));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile tx, ReadSpatialTile(config, "tile_x"));
    TUNEJIT_ASSIGN_OR_RETURN(SpatialTile ty, ReadSpatialTile(config, "tile_y"));
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> tk, ReadSplit(config, "tile_k", 3));
    // The A loader binds threadIdx.y with extent tile_x[2], the output with tile_y[2]: TVM's
    // VerifyGPUCode rejects differing extents of one thread axis.
    if (tx.t != ty.t) {
      return InvalidConfig(kLargeTask, absl::StrCat("tile_x[2] = ", tx.t, " != tile_y[2] = ", ty.t,
                                                    " (threadIdx.y bound with two extents)"));
    }
    // Each k step holds tile_k[2] operands per output row and column in registers, fully
    // unrolled: past the register file they spill, and ptxas takes minutes over the body.
    const int64_t operand_regs = (int64_t{tx.per_thread()} + ty.per_thread()) * tk[2];
    if (operand_regs > kMaxOperandRegisters) {
      TUNEJIT_RETURN_IF_ERROR(
          SearchRule(kLargeTask,
                     absl::StrCat("tile_k[2] = ", tk[2], " x ", tx.per_thread() + ty.per_thread(),
                                  " rows and columns per thread = ", operand_regs,
                                  " operand registers > ", kMaxOperandRegisters),
                     limits));
    }
    const int64_t kc = tk[1] * tk[2];
    LaunchShape shape;
    shape.grid[0] = static_cast<uint32_t>(CeilDiv64(p.m, tx.block()));
    shape.grid[1] = static_cast<uint32_t>(CeilDiv64(p.n, ty.block()));
    shape.block[0] = static_cast<uint32_t>(tx.t);
    shape.block[1] = static_cast<uint32_t>(ty.t);
    const int64_t smem = 2 * (int64_t{tx.block()} + ty.block()) * kc * 4;
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kLargeTask, shape, smem, limits));
    TUNEJIT_RETURN_IF_ERROR(
        CheckAccumulators(kLargeTask, int64_t{tx.per_thread()} * ty.per_thread(), limits));
    OpPlan plan;
    plan.kernels.push_back(DenseKernel(
        "dense_large_batch",
        absl::StrFormat("tunejit::dense_large_batch<%d, %d, %d, %d, %d, %d, %d, %d, %d>", tx.v,
                        tx.t, tx.i, ty.v, ty.t, ty.i, tk[1], tk[2], EpilogueCode(epilogue)),
        shape, epilogue, p));
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, ParseFloatDense(kLargeTask, workload));
    // TVM (section 3.4): a 16x16 thread block, 64x64 output tile, KC = 8. TVM's [1,1,1,1] for a
    // length-1 axis would break its own tile_x[2] == tile_y[2] rule: we keep 16 threads there
    // (bounds guards make the extra rows idle).
    autotvm::ConfigEntity config;
    config.knobs.push_back(SplitKnob("tile_x", p.m > 1 ? std::vector<int64_t>{-1, 2, 16, 2}
                                                       : std::vector<int64_t>{1, 1, 16, 1}));
    config.knobs.push_back(SplitKnob("tile_y", p.n > 1 ? std::vector<int64_t>{-1, 2, 16, 2}
                                                       : std::vector<int64_t>{1, 1, 16, 1}));
    config.knobs.push_back(SplitKnob(
        "tile_k", p.k > 8 ? std::vector<int64_t>{-1, 8, 1} : std::vector<int64_t>{-1, 1, 1}));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& workload, const autotvm::Target& /*target*/) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(workload));
    return DenseSpace(p, /*large=*/true);
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // Relay offers the large-batch template from 32 rows on, above the small-batch one.
    if (request.op != OpRequest::Op::kDense || request.mode != NumericMode::kFp32 ||
        request.dense.m < 32) {
      return std::nullopt;
    }
    return OpOffer{{autotvm::MakeDenseWorkload(kLargeTask, request.dense), 15}, {}};
  }
};

}  // namespace

const OpTemplate* DenseSmallBatchTemplate() {
  static const DenseSmallBatch* const kTemplate = new DenseSmallBatch();
  return kTemplate;
}

const OpTemplate* DenseLargeBatchTemplate() {
  static const DenseLargeBatch* const kTemplate = new DenseLargeBatch();
  return kTemplate;
}

}  // namespace tunejit

// batch_matmul.cuda (kernel_sources/batch_matmul.cu): TVM 0.7's tunable batch_matmul schedule
// (topi/cuda/batch_matmul.py, PR #5752). Knobs in definition order: tile_y (3-way split of M),
// tile_x (3-way split of N), tile_k (2-way split of K), auto_unroll_max_step [8, 16, 32, 64],
// unroll_explicit ([0, 1] on cuda, [1] on nvptx / rocm); every split is the default `factors`
// policy with no filter.
#include "ops/batch_matmul.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"

namespace tunejit {
namespace {

constexpr const char* kTask = autotvm::kBatchMatmul;

absl::StatusOr<autotvm::BatchMatmulParams> ParseFloatBatchMatmul(
    const autotvm::Workload& workload) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p,
                           autotvm::ParseBatchMatmulWorkload(workload));
  if (p.dtype != "float32") {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": only float32 (got ", p.dtype, "; TVM's default)"));
  }
  // The kernel indexes rows and columns with int (a batch's offsets with int64).
  for (auto [what, v] : {std::pair{"M", p.m}, {"N", p.n}, {"K", p.k}}) {
    TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, what, v).status());
  }
  return p;
}

// The knobs as the kernel takes them: tile_y = [-1, ty, yi], tile_x = [-1, tx, xi],
// tile_k = [-1, kf].
struct MatmulTile {
  int64_t ty = 1, yi = 1, tx = 1, xi = 1, kf = 1, unroll = 0;
  int64_t rows() const { return ty * yi; }  // of x (and out) per block
  int64_t cols() const { return tx * xi; }  // of y (and out) per block
  // AA[rows][kf] and BB[cols][kf], float32, one buffer each.
  int64_t SharedBytes() const { return (rows() + cols()) * kf * 4; }
};

absl::StatusOr<MatmulTile> ReadTile(const autotvm::ConfigEntity& config) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> y, ReadSplit(config, "tile_y", 3));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, ReadSplit(config, "tile_x", 3));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> k, ReadSplit(config, "tile_k", 2));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, config.Other("auto_unroll_max_step"));
  MatmulTile t{y[1], y[2], x[1], x[2], k[1], unroll};
  if (t.rows() > kMaxSplitFactor || t.cols() > kMaxSplitFactor) {
    return InvalidConfig(kTask, absl::StrCat("block tile ", t.rows(), " x ", t.cols(), " exceeds ",
                                             kMaxSplitFactor));
  }
  if (t.unroll < 0 || t.unroll > 1 << 16) {
    return InvalidConfig(kTask, absl::StrCat("auto_unroll_max_step = ", t.unroll));
  }
  return t;
}

// TVM's instantiation errors (VerifyGPUCode: threads, shared memory; the launch limits it met at
// run time) and our register limit (a search rule: DeviceLimits::search_rules).
absl::Status CheckTile(const MatmulTile& t, const LaunchShape& shape, const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, t.SharedBytes(), limits));
  return CheckAccumulators(kTask, t.yi * t.xi, limits);
}

std::string KernelName(const MatmulTile& t, MatmulYLayout y_layout, const Epilogue& epilogue) {
  return absl::StrFormat(
      "tunejit::batch_matmul<tunejit::BatchMatmulTile<%d, %d, %d, %d, %d, %d>, "
      "tunejit::BatchMatmulIo<%d, %d>>",
      t.ty, t.yi, t.tx, t.xi, t.kf, t.unroll, y_layout == MatmulYLayout::kKN ? 1 : 0,
      EpilogueCode(epilogue));
}

// get_max_power2_factor(n, max_value) of TVM's topi utils.
int64_t MaxPowerOfTwoFactor(int64_t n, int64_t max_value) {
  int64_t x = 1;
  while (n % 2 == 0 && x * 2 <= max_value) {
    x *= 2;
    n /= 2;
  }
  return x;
}

class BatchMatmul final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseFloatBatchMatmul(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    return SpecializeBatchMatmul(workload, config, limits, epilogue, MatmulYLayout::kNK);
  }

  // TVM's own (cfg.is_fallback): blocks of the largest power-of-two factor of M and of N up to
  // 64, at most 8 threads along each, K in steps of 8, auto_unroll_max_step 16.
  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p, ParseFloatBatchMatmul(workload));
    const int64_t y_bn = MaxPowerOfTwoFactor(p.m, 64);
    const int64_t x_bn = MaxPowerOfTwoFactor(p.n, 64);
    const int64_t y_threads = std::min<int64_t>(y_bn, 8);
    const int64_t x_threads = std::min<int64_t>(x_bn, 8);
    autotvm::ConfigEntity config;
    config.knobs.push_back(SplitKnob("tile_y", {-1, y_threads, y_bn / y_threads}));
    config.knobs.push_back(SplitKnob("tile_x", {-1, x_threads, x_bn / x_threads}));
    config.knobs.push_back(SplitKnob("tile_k", {-1, 8}));
    config.knobs.push_back(OtherKnob("auto_unroll_max_step", 16));
    config.knobs.push_back(OtherKnob("unroll_explicit", 0));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                   const autotvm::Target& target) const override {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p,
                             autotvm::ParseBatchMatmulWorkload(workload));
    autotvm::ConfigSpace s;
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.m, 3));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.n, 3));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_k", p.k, 2));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {8, 16, 32, 64}));
    TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicitCandidates(target)));
    return s;
  }

  // Relay's CUDA strategy offers batch_matmul.cuda at plevel 10 (cuBLAS, which we do not have,
  // above it). The batch is the grid's z dimension. The executor's y is the graph's matmul
  // operand, [B, K, N] (OperandForms::y_kn).
  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    const autotvm::BatchMatmulParams& p = request.batch_matmul;
    if (request.op != OpRequest::Op::kBatchMatMul || request.mode != NumericMode::kFp32 ||
        p.batch() > DeviceLimits{}.max_grid_dim[2] || p.dtype != "float32") {
      return std::nullopt;
    }
    return OpOffer{{autotvm::MakeBatchMatmulWorkload(p), 10}, {.y_kn = true}};
  }
};

}  // namespace

absl::StatusOr<OpPlan> SpecializeBatchMatmul(const autotvm::Workload& workload,
                                             const autotvm::ConfigEntity& config,
                                             const DeviceLimits& limits, const Epilogue& epilogue,
                                             MatmulYLayout y_layout) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p, ParseFloatBatchMatmul(workload));
  if (epilogue.residual) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": no residual epilogue"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(MatmulTile t, ReadTile(config));
  LaunchShape shape;
  shape.grid[0] = static_cast<uint32_t>(CeilDiv64(p.n, t.cols()));
  shape.grid[1] = static_cast<uint32_t>(CeilDiv64(p.m, t.rows()));
  shape.grid[2] = static_cast<uint32_t>(p.batch());
  shape.block[0] = static_cast<uint32_t>(t.tx);
  shape.block[1] = static_cast<uint32_t>(t.ty);
  TUNEJIT_RETURN_IF_ERROR(CheckTile(t, shape, limits));

  PlannedKernel kernel;
  kernel.label = "batch_matmul";
  kernel.spec = KernelSpec{"batch_matmul.cu", KernelName(t, y_layout, epilogue), {}};
  kernel.shape = shape;
  kernel.args = EpilogueTensorArgs(epilogue);
  for (int64_t v : {p.m, p.n, p.k}) kernel.args.push_back(Int32Arg(v));
  // A batch dim of 1 broadcasts: stride 0.
  kernel.args.push_back(Int64Arg(p.x_batch == 1 ? 0 : p.m * p.k));
  kernel.args.push_back(Int64Arg(p.y_batch == 1 ? 0 : p.n * p.k));
  OpPlan plan;
  plan.kernels.push_back(std::move(kernel));
  return plan;
}

const OpTemplate* BatchMatmulTemplate() {
  static const BatchMatmul* const kTemplate = new BatchMatmul();
  return kTemplate;
}

}  // namespace tunejit

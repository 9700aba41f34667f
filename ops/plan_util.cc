#include "ops/plan_util.h"

#include <algorithm>

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {

absl::Status InvalidConfig(absl::string_view task, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(task, ": invalid config: ", reason));
}

absl::Status CheckLaunch(absl::string_view task, const LaunchShape& shape,
                         int64_t static_smem_bytes, const DeviceLimits& limits,
                         bool allow_optin_smem) {
  static constexpr const char* kAxis[3] = {"x", "y", "z"};
  if (shape.threads_per_block() > static_cast<uint64_t>(limits.max_threads_per_block)) {
    return InvalidConfig(
        task, absl::StrCat(shape.threads_per_block(), " threads per block > max_threads_per_block ",
                           limits.max_threads_per_block));
  }
  for (int d = 0; d < 3; ++d) {
    if (shape.block[d] < 1 || shape.block[d] > static_cast<uint32_t>(limits.max_block_dim[d])) {
      return InvalidConfig(
          task, absl::StrCat("block dim ", kAxis[d], " = ", shape.block[d],
                             " outside [1, max_block_dim ", limits.max_block_dim[d], "]"));
    }
    if (shape.grid[d] < 1 || shape.grid[d] > static_cast<uint32_t>(limits.max_grid_dim[d])) {
      return InvalidConfig(task,
                           absl::StrCat("grid dim ", kAxis[d], " = ", shape.grid[d],
                                        " outside [1, max_grid_dim ", limits.max_grid_dim[d], "]"));
    }
  }
  const int64_t smem = static_smem_bytes + shape.shared_bytes;
  const int64_t smem_limit =
      allow_optin_smem ? limits.shared_bytes_per_block_optin : limits.shared_bytes_per_block;
  if (smem > smem_limit) {
    return InvalidConfig(task, absl::StrCat("shared memory ", smem, " bytes > ",
                                            allow_optin_smem ? "shared_bytes_per_block_optin "
                                                             : "shared_bytes_per_block ",
                                            smem_limit));
  }
  return absl::OkStatus();
}

absl::Status CheckActivation(absl::string_view task, const Epilogue& epilogue,
                             absl::string_view why_not) {
  if (epilogue.activation == Epilogue::Activation::kNone) return absl::OkStatus();
  const std::string name(ActivationName(epilogue.activation));
  if (!why_not.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        task, ": takes no ", name, " activation in its epilogue: ", why_not,
        " (supported: clip, silu and hard_swish into the float16 or float32 output of "
        "conv2d_nhwc_wgmma.cuda, depthwise_conv2d_nhwc.cuda, conv2d_nchw_stem_mma.cuda, "
        "conv2d_nchw_patchify_wgmma.cuda and dense_wgmma.cuda, without a pool; relu on every "
        "template)"));
  }
  if (epilogue.activation == Epilogue::Activation::kClip &&
      !(epilogue.clip_lo <= epilogue.clip_hi)) {  // also false for a NaN bound
    return absl::InvalidArgumentError(absl::StrCat(task, ": clip bounds [", epilogue.clip_lo, ", ",
                                                   epilogue.clip_hi, "] are not ordered"));
  }
  return absl::OkStatus();
}

std::string ActivationArg(const Epilogue& epilogue) {
  if (epilogue.activation == Epilogue::Activation::kNone) return "";
  return absl::StrCat(", ", ActivationTypeName(epilogue));
}

absl::Status SearchRule(absl::string_view task, absl::string_view reason,
                        const DeviceLimits& limits) {
  if (!limits.search_rules) return absl::OkStatus();
  return InvalidConfig(task, absl::StrCat(reason, " (a tunejit search rule)"));
}

absl::Status CheckAccumulators(absl::string_view task, int64_t accumulators,
                               const DeviceLimits& limits) {
  if (accumulators <= kMaxAccumulatorsPerThread) return absl::OkStatus();
  return SearchRule(task,
                    absl::StrCat(accumulators, " accumulators per thread > ",
                                 kMaxAccumulatorsPerThread, " (registers; the kernel would spill)"),
                    limits);
}

std::vector<KernelArg> EpilogueTensorArgs(const Epilogue& epilogue) {
  const bool scaled = epilogue.output != Epilogue::Output::kAccumulator;
  return {InputArg(0), InputArg(1), epilogue.bias ? InputArg(2) : Int64Arg(0),
          scaled ? InputArg(3) : Int64Arg(0), OutputArg(0)};
}

KernelArg Int32Arg(int64_t value) { return KernelArg{KernelArg::Kind::kInt32, value, 0.0f}; }
KernelArg Int64Arg(int64_t value) { return KernelArg{KernelArg::Kind::kInt64, value, 0.0f}; }
KernelArg Float32Arg(float value) { return KernelArg{KernelArg::Kind::kFloat32, 0, value}; }
KernelArg InputArg(int index) { return KernelArg{KernelArg::Kind::kInput, index, 0.0f}; }
KernelArg OutputArg(int index) { return KernelArg{KernelArg::Kind::kOutput, index, 0.0f}; }
KernelArg WorkspaceArg(int index) { return KernelArg{KernelArg::Kind::kWorkspace, index, 0.0f}; }
KernelArg TensorMapArg(int index) { return KernelArg{KernelArg::Kind::kTensorMap, index, 0.0f}; }
PlannedKernel GridStrideLaunch(std::string source, std::string label, std::string expression,
                               int64_t total, std::vector<KernelArg> args) {
  constexpr int kBlock = 256;
  constexpr int64_t kMaxBlocks = 1 << 16;
  PlannedKernel kernel;
  kernel.label = std::move(label);
  kernel.spec = KernelSpec{std::move(source), std::move(expression), {}};
  kernel.shape.grid[0] = static_cast<uint32_t>(std::min(CeilDiv64(total, kBlock), kMaxBlocks));
  kernel.shape.block[0] = kBlock;
  kernel.args = std::move(args);
  return kernel;
}

KernelArg Int64ArrayArg(std::vector<int64_t> values) {
  return KernelArg{KernelArg::Kind::kInt64Array, 0, 0.0f, std::move(values)};
}

RowGroups RowGroupsFor(int64_t rows, int64_t cols, int block, int64_t max_blocks) {
  RowGroups g;
  g.warp_per_row = cols <= kWarpRowMaxCols;
  const int64_t blocks = g.warp_per_row ? CeilDiv64(rows, kWarpRowsPerBlock) : rows;
  g.shape.grid[0] = static_cast<uint32_t>(std::min(blocks, max_blocks));
  g.shape.block[0] = static_cast<uint32_t>(g.warp_per_row ? 32 * kWarpRowsPerBlock : block);
  return g;
}

absl::StatusOr<autotvm::Conv2dParams> ParseFloatInputConv(absl::string_view task,
                                                          const autotvm::Workload& workload) {
  if (workload.task_name != task) {
    return absl::InvalidArgumentError(absl::StrCat(task, ": workload is for ", workload.task_name));
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(workload));
  if (p.data_dtype != "float32" || p.kernel_dtype != "float32" ||
      (p.out_dtype != "float16" && p.out_dtype != "float32")) {
    return absl::UnimplementedError(absl::StrCat(task, ": ", p.data_dtype, " x ", p.kernel_dtype,
                                                 " -> ", p.out_dtype,
                                                 " (expected float32 x float32 -> float16 | "
                                                 "float32)"));
  }
  return p;
}

absl::StatusOr<int> ToInt32(absl::string_view task, absl::string_view what, int64_t value) {
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(task, ": ", what, " = ", value, " does not fit the kernel's int argument"));
  }
  return static_cast<int>(value);
}

int64_t CeilDiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace tunejit

// File: ops/plan_util.h
// Helpers shared by the op templates' Specialize: TVM's validity rules (VerifyGPUCode plus the
// launch limits TVM only met at run time), the fixed conv/dense tensor argument list, and checked
// narrowing of shapes to the kernels' int arguments. Every rejection is InvalidArgument with a
// message that starts with the task name and names the rule, e.g.
//   "conv2d_nchw.cuda: invalid config: 1280 threads per block > max_threads_per_block 1024"
//
//   TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, static_smem, limits));
#ifndef TUNEJIT_OPS_PLAN_UTIL_H_
#define TUNEJIT_OPS_PLAN_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "autotvm/workload.h"
#include "jit/kernel_spec.h"
#include "ops/op_template.h"

namespace tunejit {

// Accumulators one thread may hold (each is a register; beyond this the kernel would spill).
inline constexpr int64_t kMaxAccumulatorsPerThread = 256;

// InvalidArgument "<task>: invalid config: <reason>".
absl::Status InvalidConfig(absl::string_view task, absl::string_view reason);

// Threads per block, each block dimension, grid dimensions and shared memory (static +
// shape.shared_bytes) against `limits`. Shared memory is compared with the default per-block
// limit (48 KiB), as TVM's VerifyGPUCode did, unless `allow_optin_smem`.
absl::Status CheckLaunch(absl::string_view task, const LaunchShape& shape,
                         int64_t static_smem_bytes, const DeviceLimits& limits,
                         bool allow_optin_smem = false);

// One of tunejit's own rules (DeviceLimits::search_rules): InvalidConfig "<reason> (a tunejit
// search rule)" while the limits enforce them, else OK.
absl::Status SearchRule(absl::string_view task, absl::string_view reason,
                        const DeviceLimits& limits);

// Per-thread accumulator count against kMaxAccumulatorsPerThread: a search rule.
absl::Status CheckAccumulators(absl::string_view task, int64_t accumulators,
                               const DeviceLimits& limits);

// The epilogue's activation (Epilogue::activation) against what the template fuses: OK without
// one. With one, Unimplemented when `why_not` says why this template (or this form of its output)
// takes none, naming the activation and what is supported, e.g.
//   "conv2d_nchw.cuda: takes no silu activation in its epilogue: it fuses relu only (supported:
//   clip, silu and hard_swish into the float16 or float32 output of conv2d_nhwc_wgmma.cuda, ...)"
// and InvalidArgument for a clip whose bounds are NaN or out of order. Every template calls it
// in Specialize: those that never fuse one with a reason, those that do with "" where they can.
absl::Status CheckActivation(absl::string_view task, const Epilogue& epilogue,
                             absl::string_view why_not);

// ", tunejit::Act<...>" (op_template.h ActivationTypeName) when the epilogue has an activation,
// else "": the last template argument of the kernels that take it apart from an Epi type (the
// stem, dense_wgmma, the references), left out when there is none so their names stay as they
// were.
std::string ActivationArg(const Epilogue& epilogue);

// Conv/dense tensor arguments in kernel order: data, weight, bias (or null), scale (or null), out.
std::vector<KernelArg> EpilogueTensorArgs(const Epilogue& epilogue);

KernelArg Int32Arg(int64_t value);
KernelArg Int64Arg(int64_t value);
KernelArg Float32Arg(float value);
KernelArg InputArg(int index);
KernelArg OutputArg(int index);
KernelArg WorkspaceArg(int index);
KernelArg TensorMapArg(int index);                     // OpPlan::tensor_maps[index]
KernelArg Int64ArrayArg(std::vector<int64_t> values);  // a struct of int64 by value

// A grid-stride launch of `expression` from kernel file `source`: 256-thread blocks, enough to
// cover `total` elements, at most 2^16 (the kernels loop, so any grid is correct).
PlannedKernel GridStrideLaunch(std::string source, std::string label, std::string expression,
                               int64_t total, std::vector<KernelArg> args);

// `value` as an int kernel argument; InvalidArgument naming `what` if it does not fit.
absl::StatusOr<int> ToInt32(absl::string_view task, absl::string_view what, int64_t value);

// Row kernels (layer_norm, softmax) take a group of threads per row: a warp for rows of up to
// kWarpRowMaxCols values, kWarpRowsPerBlock rows to a block (a block's threads would idle on
// short rows: ConvNeXt's 96 channels, attention's 197 scores); a block of `block` threads per row
// past that. Grid-stride over rows, at most `max_blocks` blocks.
inline constexpr int64_t kWarpRowMaxCols = 1024;
inline constexpr int64_t kWarpRowsPerBlock = 8;
struct RowGroups {
  bool warp_per_row = false;
  LaunchShape shape;
};
RowGroups RowGroupsFor(int64_t rows, int64_t cols, int block, int64_t max_blocks);

// A conv workload of `task` that reads float32 NCHW data and a float32 OIHW weight as the graph
// holds them, into float16 or float32 (the stem and patchify templates); its geometry unchecked.
absl::StatusOr<autotvm::Conv2dParams> ParseFloatInputConv(absl::string_view task,
                                                          const autotvm::Workload& workload);

int64_t CeilDiv64(int64_t a, int64_t b);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_PLAN_UTIL_H_

// File: ops/numeric_mode.h
// How a network computes, chosen once from the user's options (`--precision`, `--tensor-cores`)
// and carried by every lowered node; the op templates declare which modes they implement
// (OpTemplate::Implement), so no template or executor step re-derives it from dtype strings.
//
//   TUNEJIT_ASSIGN_OR_RETURN(NumericMode mode, ResolveNumericMode("int8", /*tensor_cores=*/true));
//   ExecutorOptions options;  options.mode = mode;   // NumericMode::kInt8TensorCores
#ifndef TUNEJIT_OPS_NUMERIC_MODE_H_
#define TUNEJIT_OPS_NUMERIC_MODE_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace tunejit {

enum class NumericMode {
  // float32 on the CUDA cores: TVM's conv2d_nchw / winograd / depthwise / dense templates.
  kFp32,
  // int8 x int8 -> int32 with dp4a on NCHW data, as the seed log was tuned (TVM's relay.quantize:
  // convs with whole 4-channel groups; the rest, and the dense layers, stay float32).
  kInt8Dp4a,
  // int8 x int8 -> int32 on the Hopper tensor cores (wgmma, NHWC); the convs the quantization
  // rule keeps float (the RGB stem) and the dense layers run at kFp16TensorCores.
  kInt8TensorCores,
  // float16 x float16 -> float32 on the Hopper tensor cores (wgmma, NHWC), float16 activations.
  kFp16TensorCores,
};

// "fp32", "int8", "int8-tensor-cores", "fp16-tensor-cores": stable names for reports and JSON.
std::string_view NumericModeName(NumericMode mode);
// The user-facing precision of a mode: "fp32", "int8" or "fp16".
std::string_view PrecisionName(NumericMode mode);
// int8 data and int32 accumulators (either int8 mode).
bool IsInt8(NumericMode mode);
// Runs on the Hopper tensor cores (sm_90a wgmma templates).
bool UsesTensorCores(NumericMode mode);

// The mode for `--precision P [--tensor-cores]`: fp32, int8 (dp4a, or the tensor cores with
// `tensor_cores`), fp16 (always the tensor cores). InvalidArgument naming the accepted values for
// an unknown precision, or for --tensor-cores with fp32.
absl::StatusOr<NumericMode> ResolveNumericMode(std::string_view precision, bool tensor_cores);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_NUMERIC_MODE_H_

// File: ops/reference_kernels.h
// Plans of the naive GPU reference kernels (kernel_sources/reference.cu): one thread per output,
// double (float inputs) or int64 (int8 inputs) accumulation, the same epilogue and the same tensor
// conventions as the tuned templates (ops/op_template.h), the activation included (into float
// outputs; a float16 workload's reference writes float32 and applies it before any rounding). The
// tuner checks every candidate against these on shapes too large for the CPU reference.
//
//   autotvm::Conv2dParams p = ...;   // p.co = output channels, p.groups (depthwise: groups == ci)
//   TUNEJIT_ASSIGN_OR_RETURN(OpPlan ref, ReferenceConv2dPlan(p, Epilogue{}));
#ifndef TUNEJIT_OPS_REFERENCE_KERNELS_H_
#define TUNEJIT_OPS_REFERENCE_KERNELS_H_

#include "absl/status/statusor.h"
#include "autotvm/workload.h"
#include "ops/attention.h"
#include "ops/op_template.h"

namespace tunejit {

// NCHW conv with groups; weight [co, ci/groups, kh, kw] (depthwise [C, multiplier, kh, kw] is the
// same memory with co = C * multiplier, groups = C); with params.layout "NHWC" (the tensor-core
// template's), NHWC data and output, weight [co, kh, kw, ci/groups]. data_dtype "float32",
// "float16" or "int8".
absl::StatusOr<OpPlan> ReferenceConv2dPlan(const autotvm::Conv2dParams& params,
                                           const Epilogue& epilogue);
// conv2d_nhwc_wgmma_pool.cuda's reference: ReferenceConv2dPlan (NHWC) into workspace 0, then the
// 2x2 max pool of stride 2 (ops/elementwise.h MaxPool2dNhwcKernel) into output 0, float32 or
// requantized int8. Unimplemented for an int32 output (no NHWC pool of it).
absl::StatusOr<OpPlan> ReferenceConv2dPoolPlan(const autotvm::Conv2dParams& params,
                                               const Epilogue& epilogue);

// [M, K] x [N, K]^T; data_dtype "float32", "float16" or "int8".
absl::StatusOr<OpPlan> ReferenceDensePlan(const autotvm::DenseParams& params,
                                          const Epilogue& epilogue);

// batch_matmul.cuda's: x [XB, M, K] by y [YB, N, K]^T, a batch dim of 1 broadcasting; float32.
absl::StatusOr<OpPlan> ReferenceBatchMatmulPlan(const autotvm::BatchMatmulParams& params,
                                                const Epilogue& epilogue);

// attention_mma.cuda's: contiguous [B, H, S, D] float16 Q (input 0), K (1), V (2), the mask
// [B, S_kv] (3, float32 or float16, not read without one), scale 1 / sqrt(D); output 0 float32
// [B, H, S_q, D]. One thread per query row, double sums.
absl::StatusOr<OpPlan> ReferenceAttentionPlan(const AttentionParams& params);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_REFERENCE_KERNELS_H_

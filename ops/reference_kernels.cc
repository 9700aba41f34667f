#include "ops/reference_kernels.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "ops/elementwise.h"
#include "ops/plan_util.h"

namespace tunejit {
namespace {

constexpr int kBlock = 128;

absl::StatusOr<const char*> ReferenceType(absl::string_view op, const std::string& dtype,
                                          const Epilogue& epilogue) {
  // The activation is taken on float outputs only (the fused templates' float16 and float32).
  const bool float_out = epilogue.output == Epilogue::Output::kFloat32 ||
                         (epilogue.output == Epilogue::Output::kAccumulator && dtype != "int8");
  if (epilogue.activation != Epilogue::Activation::kNone && !float_out) {
    return absl::UnimplementedError(absl::StrCat(op, ": a ",
                                                 std::string(ActivationName(epilogue.activation)),
                                                 " activation into a float output only"));
  }
  if (dtype == "float32") return "float";
  if (dtype == "float16") return "tunejit::f16";  // the tensor-core templates' data
  if (dtype == "int8") {
    if (epilogue.bias && epilogue.output == Epilogue::Output::kAccumulator) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": an int32 output cannot take a float bias"));
    }
    return "signed char";
  }
  return absl::UnimplementedError(absl::StrCat(op, ": data type ", dtype));
}

LaunchShape GridStride(int64_t total) {
  LaunchShape shape;
  shape.grid[0] = static_cast<uint32_t>(std::min<int64_t>(CeilDiv64(total, kBlock), 1 << 16));
  shape.block[0] = kBlock;
  return shape;
}

}  // namespace

absl::StatusOr<OpPlan> ReferenceConv2dPlan(const autotvm::Conv2dParams& p,
                                           const Epilogue& epilogue) {
  constexpr char kOp[] = "conv2d reference";
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, ReferenceType(kOp, p.data_dtype, epilogue));
  if (p.groups < 1 || p.ci % p.groups != 0 || p.co % p.groups != 0 || p.OutH() < 1 ||
      p.OutW() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": bad groups or empty output"));
  }
  const int64_t total = p.n * p.co * p.OutH() * p.OutW();
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "output elements", total).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "input elements", p.n * p.ci * p.h * p.w).status());
  PlannedKernel kernel;
  kernel.label = "conv2d_reference";
  kernel.spec =
      KernelSpec{"reference.cu",
                 absl::StrCat("tunejit::conv2d_reference<", t, ", ", EpilogueCode(epilogue), ", ",
                              p.layout == "NHWC" ? "true" : "false", ", ",
                              p.layout == "NHWC" || p.nhwc_out ? "true" : "false",
                              ActivationArg(epilogue), ">"),
                 {}};
  kernel.shape = GridStride(total);
  kernel.args = EpilogueTensorArgs(epilogue);
  for (int64_t v : {p.n, p.ci, p.h, p.w, p.co, p.OutH(), p.OutW(), p.kh, p.kw, int64_t{p.stride_h},
                    int64_t{p.stride_w}, int64_t{p.pad_top}, int64_t{p.pad_left},
                    int64_t{p.dilation_h}, int64_t{p.dilation_w}, p.groups}) {
    kernel.args.push_back(Int32Arg(v));
  }
  OpPlan plan;
  plan.kernels.push_back(std::move(kernel));
  return plan;
}

absl::StatusOr<OpPlan> ReferenceConv2dPoolPlan(const autotvm::Conv2dParams& p,
                                               const Epilogue& epilogue) {
  const bool int8_out = epilogue.output == Epilogue::Output::kInt8Requantize;
  if (p.data_dtype == "int8" && epilogue.output == Epilogue::Output::kAccumulator) {
    return absl::UnimplementedError("conv2d + max_pool2d reference: pooling an int32 output");
  }
  TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan, ReferenceConv2dPlan(p, epilogue));
  TUNEJIT_RETURN_IF_ERROR(
      AppendMaxPool2x2Nhwc(p, int8_out ? ElementType::kInt8 : ElementType::kFloat32, &plan));
  return plan;
}

absl::StatusOr<OpPlan> ReferenceDensePlan(const autotvm::DenseParams& p, const Epilogue& epilogue) {
  constexpr char kOp[] = "dense reference";
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, ReferenceType(kOp, p.data_dtype, epilogue));
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "M*N", p.m * p.n).status());
  PlannedKernel kernel;
  kernel.label = "dense_reference";
  kernel.spec = KernelSpec{"reference.cu",
                           absl::StrCat("tunejit::dense_reference<", t, ", ",
                                        EpilogueCode(epilogue), ActivationArg(epilogue), ">"),
                           {}};
  kernel.shape = GridStride(p.m * p.n);
  kernel.args = EpilogueTensorArgs(epilogue);
  for (int64_t v : {p.m, p.n, p.k}) kernel.args.push_back(Int32Arg(v));
  OpPlan plan;
  plan.kernels.push_back(std::move(kernel));
  return plan;
}

absl::StatusOr<OpPlan> ReferenceBatchMatmulPlan(const autotvm::BatchMatmulParams& p,
                                                const Epilogue& epilogue) {
  constexpr char kOp[] = "batch_matmul reference";
  TUNEJIT_ASSIGN_OR_RETURN(const char* t, ReferenceType(kOp, p.dtype, epilogue));
  for (int64_t v : {p.batch(), p.m, p.n, p.k})
    TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "a dim", v).status());
  PlannedKernel kernel;
  kernel.label = "batch_matmul_reference";
  kernel.spec = KernelSpec{
      "reference.cu",
      absl::StrCat("tunejit::batch_matmul_reference<", t, ", ", EpilogueCode(epilogue), ">"),
      {}};
  kernel.shape = GridStride(p.batch() * p.m * p.n);
  kernel.args = EpilogueTensorArgs(epilogue);
  for (int64_t v : {p.batch(), p.m, p.n, p.k}) kernel.args.push_back(Int32Arg(v));
  kernel.args.push_back(Int64Arg(p.x_batch == 1 ? 0 : p.m * p.k));
  kernel.args.push_back(Int64Arg(p.y_batch == 1 ? 0 : p.n * p.k));
  OpPlan plan;
  plan.kernels.push_back(std::move(kernel));
  return plan;
}

absl::StatusOr<OpPlan> ReferenceAttentionPlan(const AttentionParams& p) {
  constexpr char kOp[] = "attention reference";
  if (p.head_dim != 64 && p.head_dim != 128) {
    return absl::UnimplementedError(absl::StrCat(kOp, ": head dim 64 or 128"));
  }
  for (int64_t v : {p.batch * p.heads, p.seq_q, p.seq_kv}) {
    TUNEJIT_RETURN_IF_ERROR(ToInt32(kOp, "a dim", v).status());
  }
  const int mask = p.mask == AttentionMask::kF32      ? 1
                   : p.mask == AttentionMask::kF16    ? 2
                   : p.mask == AttentionMask::kCausal ? 3
                                                      : 0;
  PlannedKernel kernel;
  kernel.label = "attention_reference";
  kernel.spec =
      KernelSpec{"reference.cu",
                 absl::StrCat("tunejit::attention_reference<", mask, ", ", p.head_dim, ">"),
                 {}};
  kernel.shape = GridStride(p.batch * p.heads * p.seq_q);
  kernel.args = {InputArg(0), InputArg(1), InputArg(2),
                 ReadsMaskTensor(p.mask) ? InputArg(3) : Int64Arg(0), OutputArg(0)};
  for (int64_t v : {p.batch * p.heads, p.heads, p.seq_q, p.seq_kv}) {
    kernel.args.push_back(Int32Arg(v));
  }
  kernel.args.push_back(Float32Arg(ContiguousAttentionLayout(p).scale));
  kernel.args.push_back(Int64Arg(p.seq_kv));
  OpPlan plan;
  plan.kernels.push_back(std::move(kernel));
  return plan;
}

}  // namespace tunejit

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

namespace tunejit {
namespace {

constexpr char kTask[] = "dense_wgmma.cuda";

// Mirrors of kernel_sources/gemm_wgmma.cu.
constexpr int64_t kAtomK = 64;         // fp16 in one 128-byte swizzled row
constexpr int64_t kMaxTmaBox = 256;    // cuTensorMapEncodeTiled: boxDim[i] <= 256
constexpr int64_t kMaxWgmmaN = 256;    // wgmma m64nNk16
constexpr int64_t kProducerRegs = 40;  // setmaxnreg with two consumer warpgroups
constexpr int64_t kConsumerRegs = 232;
constexpr int64_t kMaxThreadRegs = 255;  // one thread's register file
// Registers a consumer thread needs beside its accumulators (descriptors, addresses, loop state,
// epilogue indices); ptxas reported 168 with 128 accumulators and no spills.
constexpr int64_t kConsumerOverheadRegs = 64;
constexpr int64_t kMinStages = 2;
constexpr int64_t kMaxStages = 8;

struct WgmmaTile {
  int64_t m = 0, n = 0, k = 0, stages = 0, consumer_wg = 0;
  int64_t threads() const { return 128 * (1 + consumer_wg); }
  int64_t rows_per_consumer() const { return m / consumer_wg; }
  // gemm_wgmma.cu GemmWgmmaSmemBytes: the stage ring, two mbarriers per stage, 1 KiB alignment.
  int64_t smem_bytes() const { return stages * (m + n) * k * 2 + stages * 2 * 8 + 1024; }
};

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

// wgmma, sm_90a only: Hopper. (Blackwell has no wgmma; it has tcgen05.)
absl::Status CheckArch(const DeviceLimits& limits) {
  if (limits.arch.sm() != 90) {
    return InvalidConfig(kTask, absl::StrCat("wgmma and setmaxnreg need Hopper (sm_90, built as "
                                             "sm_90a); the target is ",
                                             limits.arch.ToString()));
  }
  return absl::OkStatus();
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

// W: the instruction shapes. Each consumer warpgroup issues m64nNk16 wgmmas over its rows.
absl::Status CheckWgmmaShape(const WgmmaTile& t) {
  if (t.consumer_wg != 1 && t.consumer_wg != 2) {
    return InvalidConfig(kTask, absl::StrCat("consumer_wg = ", t.consumer_wg, " (1 or 2)"));
  }
  if (t.m < 64 || t.m % (64 * t.consumer_wg) != 0) {
    return InvalidConfig(kTask, absl::StrCat("tile_m = ", t.m, " is not a multiple of 64 x ",
                                             t.consumer_wg, " consumer warpgroups (wgmma is m64)"));
  }
  if (t.n != 64 && t.n != 128 && t.n != 192 && t.n != 256) {
    return InvalidConfig(kTask, absl::StrCat("tile_n = ", t.n,
                                             " is not a wgmma N of ours (f16 allows multiples of 8 "
                                             "up to ",
                                             kMaxWgmmaN, "; hopper_ptx.cuh has 64/128/192/256)"));
  }
  if (t.k < kAtomK || t.k % kAtomK != 0) {
    return InvalidConfig(kTask, absl::StrCat("tile_k = ", t.k, " is not a multiple of ", kAtomK,
                                             " (one 128-byte swizzled row of fp16)"));
  }
  return absl::OkStatus();
}

// T: a TMA box dimension is at most 256 elements (the A box is {64, tile_m}, B's {64, tile_n}).
absl::Status CheckTmaBoxes(const WgmmaTile& t) {
  if (t.m > kMaxTmaBox || t.n > kMaxTmaBox) {
    return InvalidConfig(kTask, absl::StrCat("TMA box {", kAtomK, ", ", std::max(t.m, t.n),
                                             "} exceeds ", kMaxTmaBox, " per dimension"));
  }
  return absl::OkStatus();
}

absl::Status CheckStages(const WgmmaTile& t) {
  if (t.stages < kMinStages || t.stages > kMaxStages) {
    return InvalidConfig(kTask, absl::StrCat("stages = ", t.stages, " outside [", kMinStages, ", ",
                                             kMaxStages, "]"));
  }
  return absl::OkStatus();
}

// R: two consumer warpgroups run at kConsumerRegs after setmaxnreg, which the block's register
// file must hold; one consumer warpgroup gets what ptxas can give 256 threads. Accumulators plus
// kConsumerOverheadRegs must fit the consumer's registers or the kernel spills.
absl::Status CheckRegisters(const WgmmaTile& t, const DeviceLimits& limits) {
  int64_t consumer_regs = 0;
  if (t.consumer_wg == 2) {
    const int64_t block_regs = 128 * (kProducerRegs + 2 * kConsumerRegs);
    if (block_regs > limits.regs_per_block) {
      return InvalidConfig(
          kTask,
          absl::StrCat("setmaxnreg split 128 x (", kProducerRegs, " + 2 x ", kConsumerRegs,
                       ") = ", block_regs, " registers > regs_per_block ", limits.regs_per_block));
    }
    consumer_regs = kConsumerRegs;
  } else {
    consumer_regs = std::min(kMaxThreadRegs, limits.regs_per_block / t.threads() / 8 * 8);
  }
  const int64_t accumulators = t.rows_per_consumer() / 64 * t.n / 2;
  if (accumulators + kConsumerOverheadRegs > consumer_regs) {
    return InvalidConfig(kTask,
                         absl::StrCat(accumulators, " accumulator registers per consumer thread + ",
                                      kConsumerOverheadRegs, " > ", consumer_regs,
                                      " registers per consumer thread (the kernel would spill)"));
  }
  return absl::OkStatus();
}

// S: the stage ring (plus barriers and alignment slack) against the opt-in shared memory limit
// (227 KiB on H100/H200).
absl::Status CheckSharedMemory(const WgmmaTile& t, const DeviceLimits& limits) {
  if (t.smem_bytes() > limits.shared_bytes_per_block_optin) {
    return InvalidConfig(
        kTask, absl::StrCat("shared memory ", t.stages, " stages x (", t.m, " + ", t.n, ") x ", t.k,
                            " x 2 bytes + barriers + 1 KiB alignment = ", t.smem_bytes(),
                            " bytes > shared_bytes_per_block_optin ",
                            limits.shared_bytes_per_block_optin));
  }
  return absl::OkStatus();
}

absl::Status CheckTile(const WgmmaTile& t, const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckWgmmaShape(t));
  TUNEJIT_RETURN_IF_ERROR(CheckTmaBoxes(t));
  TUNEJIT_RETURN_IF_ERROR(CheckStages(t));
  TUNEJIT_RETURN_IF_ERROR(CheckRegisters(t, limits));
  return CheckSharedMemory(t, limits);
}

// A K-major fp16 operand [rows, K] as the kernel loads it: boxes of one 128-byte swizzled row
// (64 fp16 of K) by `tile_rows` rows.
TensorMapDesc OperandMap(int64_t rows, int64_t k, int64_t tile_rows) {
  TensorMapDesc d;
  d.element = TensorMapDesc::Element::kF16;
  d.rank = 2;
  d.dims = {static_cast<uint64_t>(k), static_cast<uint64_t>(rows)};
  d.strides_bytes = {static_cast<uint64_t>(k) * 2};
  d.box = {static_cast<uint32_t>(kAtomK), static_cast<uint32_t>(tile_rows)};
  d.swizzle = TensorMapDesc::Swizzle::k128B;
  return d;
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
    TUNEJIT_RETURN_IF_ERROR(CheckArch(limits));
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
    plan.tensor_maps = {{InputArg(0), OperandMap(p.m, p.k, t.m)},
                        {InputArg(1), OperandMap(p.n, p.k, t.n)}};
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

#include "ops/wgmma_rules.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "ops/plan_util.h"

namespace tunejit {
namespace {

// Mirrors of kernel_sources/wgmma_core.cuh.
constexpr int64_t kMaxWgmmaN = 256;    // wgmma m64nNk16
constexpr int64_t kProducerRegs = 40;  // setmaxnreg with two consumer warpgroups
constexpr int64_t kConsumerRegs = 232;
constexpr int64_t kMaxThreadRegs = 255;  // one thread's register file
// Registers a consumer thread needs beside its accumulators (descriptors, addresses, loop state,
// epilogue indices); ptxas reported 168 with 128 accumulators and no spills.
constexpr int64_t kConsumerOverheadRegs = 64;
constexpr int64_t kMinStages = 2;
constexpr int64_t kMaxStages = 8;

// W: the instruction shapes. Each consumer warpgroup issues m64nNk16 wgmmas over its rows.
absl::Status CheckWgmmaShape(absl::string_view task, const WgmmaTile& t) {
  if (t.consumer_wg != 1 && t.consumer_wg != 2) {
    return InvalidConfig(task, absl::StrCat("consumer_wg = ", t.consumer_wg, " (1 or 2)"));
  }
  if (t.pingpong != 0 && t.pingpong != 1) {
    return InvalidConfig(task, absl::StrCat("pingpong = ", t.pingpong, " (0 or 1)"));
  }
  if (t.pingpong == 1 && t.consumer_wg != 2) {
    return InvalidConfig(task, absl::StrCat("pingpong = 1 with consumer_wg = ", t.consumer_wg,
                                            " (ping-pong alternates two consumer warpgroups)"));
  }
  if (t.m < 64 || t.rows_per_consumer() % 64 != 0) {
    return InvalidConfig(task, absl::StrCat("tile_m = ", t.m, " is not a multiple of 64 x ",
                                            t.consumer_wg, " consumer warpgroups (wgmma is m64)"));
  }
  if (t.n != 64 && t.n != 128 && t.n != 192 && t.n != 256) {
    return InvalidConfig(task, absl::StrCat("tile_n = ", t.n,
                                            " is not a wgmma N of ours (f16 allows multiples of 8 "
                                            "up to ",
                                            kMaxWgmmaN, "; hopper_ptx.cuh has 64/128/192/256)"));
  }
  const int64_t atom_elements = t.atom_bytes / t.element_bytes;
  if (t.k < atom_elements || t.k % atom_elements != 0) {
    return InvalidConfig(
        task, absl::StrCat("tile_k = ", t.k, " is not a multiple of ", atom_elements, " (one ",
                           t.atom_bytes, "-byte swizzled row of ",
                           t.element_bytes == 1 ? "int8" : "fp16", ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckStages(absl::string_view task, const WgmmaTile& t) {
  if (t.stages < kMinStages || t.stages > kMaxStages) {
    return InvalidConfig(
        task, absl::StrCat("stages = ", t.stages, " outside [", kMinStages, ", ", kMaxStages, "]"));
  }
  return absl::OkStatus();
}

// R: two consumer warpgroups run at kConsumerRegs after setmaxnreg, which the block's register
// file must hold; one consumer warpgroup gets what ptxas can give 256 threads. Accumulators plus
// kConsumerOverheadRegs must fit the consumer's registers or the kernel spills.
absl::Status CheckRegisters(absl::string_view task, const WgmmaTile& t,
                            const DeviceLimits& limits) {
  int64_t consumer_regs = 0;
  if (t.consumer_wg == 2) {
    const int64_t block_regs = 128 * (kProducerRegs + 2 * kConsumerRegs);
    if (block_regs > limits.regs_per_block) {
      return InvalidConfig(
          task,
          absl::StrCat("setmaxnreg split 128 x (", kProducerRegs, " + 2 x ", kConsumerRegs,
                       ") = ", block_regs, " registers > regs_per_block ", limits.regs_per_block));
    }
    consumer_regs = kConsumerRegs;
  } else {
    consumer_regs = std::min(kMaxThreadRegs, limits.regs_per_block / t.threads() / 8 * 8);
  }
  const int64_t accumulators = t.rows_per_consumer() / 64 * t.n / 2;
  if (accumulators + kConsumerOverheadRegs > consumer_regs) {
    return InvalidConfig(task,
                         absl::StrCat(accumulators, " accumulator registers per consumer thread + ",
                                      kConsumerOverheadRegs, " > ", consumer_regs,
                                      " registers per consumer thread (the kernel would spill)"));
  }
  return absl::OkStatus();
}

// One stage's bytes as the sum that makes them: (m + n) x k x element bytes, or with shared A
// rows (shift_rows) A's block of rows and B.
std::string StageText(const WgmmaTile& t) {
  if (t.shift_rows == 0) {
    return absl::StrCat("(", t.m, " + ", t.n, ") x ", t.k, " x ", t.element_bytes, " bytes");
  }
  return absl::StrCat("(A ", t.shared_a_rows(), " rows x ", t.atom_bytes, " + B ", t.n, " x ",
                      t.k * t.element_bytes, ") bytes");
}

// S: the stage ring (plus barriers and alignment slack) against the opt-in shared memory limit
// (227 KiB on H100/H200).
absl::Status CheckSharedMemory(absl::string_view task, const WgmmaTile& t,
                               const DeviceLimits& limits) {
  if (t.smem_bytes() > limits.shared_bytes_per_block_optin) {
    return InvalidConfig(
        task,
        absl::StrCat(
            "shared memory ", t.stages, " stages x ", StageText(t), " + barriers + 1 KiB alignment",
            t.extra_smem > 0 ? absl::StrCat(" + ", t.extra_smem, " (", t.extra_smem_use, ")") : "",
            " = ", t.smem_bytes(), " bytes > shared_bytes_per_block_optin ",
            limits.shared_bytes_per_block_optin));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHopper(absl::string_view task, const DeviceLimits& limits) {
  if (limits.arch.sm() != 90) {
    return InvalidConfig(task, absl::StrCat("wgmma and setmaxnreg need Hopper (sm_90, built as "
                                            "sm_90a); the target is ",
                                            limits.arch.ToString()));
  }
  return absl::OkStatus();
}

absl::Status CheckWgmmaTile(absl::string_view task, const WgmmaTile& t,
                            const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckWgmmaShape(task, t));
  TUNEJIT_RETURN_IF_ERROR(CheckStages(task, t));
  TUNEJIT_RETURN_IF_ERROR(CheckRegisters(task, t, limits));
  return CheckSharedMemory(task, t, limits);
}

absl::StatusOr<bool> WgmmaIsInt8(absl::string_view task, const std::string& data,
                                 const std::string& weight, const std::string& out) {
  if (data == "float16" && weight == "float16" && (out == "float32" || out == "float16")) {
    return false;
  }
  if (data == "int8" && weight == "int8" && out == "int32") return true;
  return absl::UnimplementedError(
      absl::StrCat(task,
                   ": only float16 x float16 -> float32 or float16, and int8 x int8 -> int32 "
                   "(got ",
                   data, " x ", weight, " -> ", out, ")"));
}

absl::Status CheckWgmmaEpilogue(absl::string_view task, const Epilogue& epilogue, bool int8,
                                const std::string& out_dtype, bool reads_residual) {
  if (epilogue.residual && !reads_residual) {
    return absl::UnimplementedError(absl::StrCat(task, ": takes no residual in its epilogue"));
  }
  if (!int8 && epilogue.output == Epilogue::Output::kFloat32 && out_dtype == "float16") {
    return absl::UnimplementedError(
        absl::StrCat(task, ": a scaled float32 epilogue does not fit a float16 output"));
  }
  // The residual is read in the output's type: float16, or int8 with the scales of an int8
  // requantize output (common.cuh AddResidualI8).
  const bool f16_residual =
      !int8 && out_dtype == "float16" && epilogue.output == Epilogue::Output::kAccumulator;
  const bool int8_residual = int8 && epilogue.output == Epilogue::Output::kInt8Requantize;
  if (epilogue.residual && !f16_residual && !int8_residual) {
    return absl::UnimplementedError(absl::StrCat(
        task, ": a residual is added to float16 outputs and requantized int8 ones only (got ",
        int8 ? "int8 operands without an int8 requantize output"
             : absl::StrCat("a ", out_dtype, " output"),
        ")"));
  }
  if (int8 && epilogue.bias && epilogue.output == Epilogue::Output::kAccumulator) {
    return absl::UnimplementedError(absl::StrCat(
        task, ": an int32 output takes no float bias (use a float32 or int8 requantize output)"));
  }
  // The activation is applied to the value the fp16 templates store; an int8 or int32 output
  // would need it in quantized units.
  if (int8) return CheckActivation(task, epilogue, "int8 operands (an int32 or int8 output)");
  if (epilogue.output == Epilogue::Output::kInt8Requantize) {
    return CheckActivation(task, epilogue, "a requantized int8 output");
  }
  return CheckActivation(task, epilogue, "");
}

TensorMapDesc SwizzledMap(TensorMapDesc::Element element, std::initializer_list<int64_t> dims,
                          std::initializer_list<int64_t> box, int64_t row_bytes) {
  TensorMapDesc d;
  d.element = element;
  d.rank = static_cast<int>(dims.size());
  d.swizzle = row_bytes == 64 ? TensorMapDesc::Swizzle::k64B : TensorMapDesc::Swizzle::k128B;
  uint64_t stride = ElementBytes(element);
  int i = 0;
  for (int64_t dim : dims) {
    d.dims[i] = static_cast<uint64_t>(dim);
    if (i > 0) d.strides_bytes[i - 1] = stride;
    stride *= static_cast<uint64_t>(dim);
    ++i;
  }
  d.box[0] = static_cast<uint32_t>(row_bytes / ElementBytes(element));
  i = 1;
  for (int64_t b : box) d.box[i++] = static_cast<uint32_t>(b);
  return d;
}

absl::StatusOr<uint32_t> PersistentGrid(absl::string_view task, int64_t tiles,
                                        const DeviceLimits& limits, int cluster) {
  if (tiles < 1 || tiles > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(task, ": ", tiles, " output tiles"));
  }
  if (cluster < 1 || tiles % cluster != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(task, ": ", tiles, " output tiles in clusters of ", cluster));
  }
  const int64_t blocks = std::min<int64_t>(tiles, std::max(limits.sm_count, cluster));
  return static_cast<uint32_t>(blocks / cluster * cluster);
}

}  // namespace tunejit

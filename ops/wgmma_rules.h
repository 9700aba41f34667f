// File: ops/wgmma_rules.h
// What every Hopper wgmma template (ops/gemm_wgmma.cc, ops/conv2d_wgmma.cc) checks before
// compiling, on the tile kernel_sources/wgmma_core.cuh runs: wgmma instruction shapes, stage count,
// registers per consumer thread, shared memory, and the architecture. Each rejection is
// InvalidConfig (AutoTVM's "invalid", error_no 1) with the rule and the numbers.
//
//   WgmmaTile t{.m = 128, .n = 128, .k = 64, .stages = 4, .consumer_wg = 2};
//   TUNEJIT_RETURN_IF_ERROR(CheckWgmmaTile("dense_wgmma.cuda", t, limits));
#ifndef TUNEJIT_OPS_WGMMA_RULES_H_
#define TUNEJIT_OPS_WGMMA_RULES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jit/tensor_map.h"
#include "ops/op_template.h"

namespace tunejit {

inline constexpr int64_t kWgmmaRowBytes = 128;  // one 128-byte swizzled row (wgmma_core.cuh)

// Elements in the 16 bytes TMA needs as a pixel's or a row's stride: 8 float16, 16 int8; 0 for a
// type the wgmma templates do not take.
inline int64_t WgmmaAlignment(NumericMode mode) {
  if (mode == NumericMode::kFp16TensorCores) return 8;
  return mode == NumericMode::kInt8TensorCores ? 16 : 0;
}

struct WgmmaTile {
  int64_t m = 0;  // rows of the output tile (the GEMM's M)
  int64_t n = 0;  // columns (N: output channels)
  int64_t k = 0;  // K elements per pipeline stage
  int64_t stages = 0;
  int64_t consumer_wg = 0;
  int64_t pingpong = 0;       // 1: the two consumers take whole tiles in turn (wgmma_core.cuh)
  int64_t element_bytes = 2;  // 2: fp16 (HGMMA), 1: int8 (IGMMA)
  int64_t extra_smem = 0;     // after the barriers: a pooled conv's exchange (WgmmaPoolBytes)
  const char* extra_smem_use = "pool exchange";  // what extra_smem holds, for the smem rule's text
  int64_t atom_bytes = kWgmmaRowBytes;  // a swizzled row: 128 bytes, or 64 (narrow channels)
  // > 0: the stage's atoms of K share one block of A rows, atom j's m rows starting j x this
  // many rows in (conv2d_wgmma.cu HALO: wgmma_core.cuh WgmmaStage's kShift).
  int64_t shift_rows = 0;
  int64_t threads() const { return 128 * (1 + consumer_wg); }
  int64_t rows_per_consumer() const { return pingpong != 0 ? m : m / consumer_wg; }
  int64_t row_elements() const { return kWgmmaRowBytes / element_bytes; }  // 64 fp16, 128 int8
  // With shift_rows: the rows of the stage's shared A block (m, and shift_rows more per atom).
  int64_t shared_a_rows() const { return m + (k * element_bytes / atom_bytes - 1) * shift_rows; }
  // wgmma_core.cuh WgmmaStageBytes: A (m rows per atom, or the shared block) then B.
  int64_t stage_bytes() const {
    const int64_t k_bytes = k * element_bytes;
    return (shift_rows == 0 ? m * k_bytes : shared_a_rows() * atom_bytes) + n * k_bytes;
  }
  // wgmma_core.cuh WgmmaSmemBytes: the stage ring, two mbarriers per stage and two turn
  // mbarriers, 1 KiB alignment; then extra_smem.
  int64_t smem_bytes() const {
    return stages * stage_bytes() + (stages + 1) * 2 * 8 + 1024 + extra_smem;
  }
};

// wgmma_core.cuh WgmmaPoolBytes: a pooled conv's exchange of tiles of `tw`-pixel rows, per
// consumer one 72-word row per 2x2 window of a group of max(64, 2 tw) tile rows.
inline int64_t WgmmaPoolBytes(int64_t tw, int64_t consumers) {
  return consumers * (2 * tw > 64 ? 2 * tw : 64) / 4 * 72 * 4;
}

// wgmma_core.cuh WgmmaSwapStagingBytes: one consumer's staged output rows of a swap_ab tile,
// `rows` (a quarter of them pooled) of 64 elements of `out_bytes` and 16 bytes of padding.
inline int64_t WgmmaSwapStagingBytes(int64_t rows, bool pooled, int64_t out_bytes) {
  return (pooled ? rows / 4 : rows) * (64 * out_bytes + 16);
}

// wgmma and setmaxnreg exist only on Hopper (sm_90, built as sm_90a; Blackwell has tcgen05).
absl::Status CheckHopper(absl::string_view task, const DeviceLimits& limits);

// The tile rules: m a multiple of 64 per consumer warpgroup (1 or 2; ping-pong takes 2, each
// with all m rows), n one of our wgmma N
// (64/128/192/256), k whole swizzled rows (atom_bytes), 2..8 stages, accumulators + overhead within
// the consumer's registers, the ring within the opt-in shared memory.
absl::Status CheckWgmmaTile(absl::string_view task, const WgmmaTile& t, const DeviceLimits& limits);

// The operand kinds the wgmma templates take: float16 x float16 -> float32 | float16 (false),
// int8 x int8 -> int32 (true; the epilogue may requantize or scale to float32). Unimplemented
// naming the dtypes otherwise.
absl::StatusOr<bool> WgmmaIsInt8(absl::string_view task, const std::string& data,
                                 const std::string& weight, const std::string& out);

// The kernels' kOutF16: 1 when they write float16, the workload's float16 output not replaced
// by an int8 requantize.
inline int WgmmaOutF16(const std::string& out_dtype, const Epilogue& epilogue) {
  return out_dtype == "float16" && epilogue.output != Epilogue::Output::kInt8Requantize ? 1 : 0;
}

// The epilogues each kind can run: fp16 no scaled float32 into a float16 output; int8 no float
// bias on an int32 output. Either may requantize to int8, which replaces the workload's output
// dtype (int32, or float32 / float16: int8 on the tensor cores' float16 stem). A residual only
// where the template reads one (`reads_residual`), into a float16 output from fp16 operands or an
// int8 requantize output from int8 ones (read in the output's type). An activation into the
// float16 or float32 output of fp16 operands (plan_util.h CheckActivation; a template that fuses
// none for other reasons, a pooled one, checks that first).
absl::Status CheckWgmmaEpilogue(absl::string_view task, const Epilogue& epilogue, bool int8,
                                const std::string& out_dtype, bool reads_residual = false);

// A K-major TMA view as the core loads it: `dims` innermost first (dims[0] = the contiguous
// channels / K), box {one row of `row_bytes` (128, or 64 for narrow channels) of elements,
// box...}, swizzled by the row size; strides from the dims (a dense tensor).
TensorMapDesc SwizzledMap(TensorMapDesc::Element element, std::initializer_list<int64_t> dims,
                          std::initializer_list<int64_t> box, int64_t row_bytes = kWgmmaRowBytes);

// The grid of a persistent wgmma kernel (kernel_sources/wgmma_core.cuh WgmmaBlock) over `tiles`
// output tiles: one block per SM, fewer when there are fewer tiles, a multiple of `cluster`
// (`tiles` must be one too: a cluster's blocks take neighbouring tiles). On the H200 all 132 SMs
// run clusters of two at once (66: cudaOccupancyMaxActiveClusters); where fewer fit, the rest
// wait, which is slower but still correct. InvalidArgument (naming `task`) past 2^31 - 1 tiles,
// which the kernels count in int, or for tiles not a multiple of the cluster.
absl::StatusOr<uint32_t> PersistentGrid(absl::string_view task, int64_t tiles,
                                        const DeviceLimits& limits, int cluster = 1);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_WGMMA_RULES_H_

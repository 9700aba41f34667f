// File: ops/attention.h
// Fused scaled dot-product attention on the fp16 tensor cores (task attention_mma.cuda,
// kernel_sources/attention.cu: FlashAttention-2's forward pass on mma.sync m16n8k16):
//   O[b, h, i, :] = softmax_j(scale * Q[b, h, i, :] . K[b, h, j, :] + mask[b, j]) V[b, h, j, :]
// float16 Q, K, V and O, float32 accumulation and softmax, one kernel: the [S_q, S_kv] scores
// never reach memory. Head dims 64 and 128, any sequence lengths (tails masked in the kernel), an
// optional additive mask [B, 1, 1, S_kv] (float32 or float16; BERT's extended attention mask)
// broadcast over heads and query rows, or a causal one (GPT-2's, Llama's: keys j <= i; the key
// tiles past a CTA's query rows are skipped).
//
// Workload: [["TENSOR", [B, H, S_q, D], "float16"], ["TENSOR", [B, H, S_kv, D], "float16"],
// mask] with mask "none", "float32", "float16" or "causal". Tensors (op_template.h's KernelArg
// indices): input 0 Q, 1 K, 2 V, 3 the mask (not read without one), output 0 O. Where they live is
// not the workload's: each is a base and element strides for (batch, head, seq) with D contiguous
// (AttentionLayout), so the executor reads Q, K and V out of a projection's [B, S, H*D] output
// and writes O as [B, S, H*D]; OpTemplate::Specialize plans contiguous [B, H, S, D] tensors and
// the scale 1 / sqrt(D), SpecializeAttention any layout and scale.
//
// Knobs (all `ot`): tile_m (query rows per CTA: 64, 128), tile_n (keys per shared-memory tile:
// 32, 64, 128), warps (4, 8; each owns tile_m / warps query rows, whole m16 tiles), stages (2, 3:
// the cp.async pipeline of K/V tiles). AttentionRules lists the rules with their reasons.
//
//   TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan, SpecializeAttention(workload, config, limits, layout));
#ifndef TUNEJIT_OPS_ATTENTION_H_
#define TUNEJIT_OPS_ATTENTION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/workload.h"
#include "ops/op_template.h"

namespace tunejit {

inline constexpr char kAttentionMma[] = "attention_mma.cuda";

// The additive mask [B, 1, 1, S_kv] as float32 or float16 (input 3), none, or causal: query i
// attends to keys j <= i only (a decoder's mask, top-left aligned; no mask tensor).
enum class AttentionMask { kNone, kF32, kF16, kCausal };
inline bool ReadsMaskTensor(AttentionMask m) {
  return m == AttentionMask::kF32 || m == AttentionMask::kF16;
}

// One attention problem: B x H heads of S_q queries over S_kv keys of dim D.
struct AttentionParams {
  int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  AttentionMask mask = AttentionMask::kNone;
  double Flops() const;  // 4 * B * H * S_q * S_kv * D (the two products)
};

autotvm::Workload MakeAttentionWorkload(const AttentionParams& params);
// InvalidArgument for another task or a malformed argument list; Unimplemented for a head dim
// other than 64 or 128, a dtype other than float16, or extents past the kernel's int indices.
absl::StatusOr<AttentionParams> ParseAttentionWorkload(const autotvm::Workload& workload);

// One config's knobs.
struct AttentionTile {
  int64_t block_m = 64, block_n = 64, warps = 4, stages = 2;
};
absl::StatusOr<AttentionTile> ReadAttentionTile(const autotvm::ConfigEntity& config);

// Every rule a tile must pass on `limits` for `p`, InvalidArgument "attention_mma.cuda: invalid
// config: <reason>" for the first it breaks: rows per warp in whole m16 tiles, shared memory
// (opt-in above 48 KiB), the fragment registers a thread holds (a search rule), a pipeline deeper
// than the key tiles (a search rule), sm_80+.
absl::Status CheckAttentionTile(const AttentionParams& p, const AttentionTile& t,
                                const DeviceLimits& limits);
// Dynamic shared memory of a tile: Q [tile_m, D] and `stages` pairs of K, V [tile_n, D], fp16.
int64_t AttentionSmemBytes(const AttentionTile& t, int64_t head_dim);

// Where a tensor's (batch, head, seq) steps are, in elements, and where its first element is
// (a slice of a larger tensor: the K third of a packed projection); D is contiguous.
struct AttentionStrides {
  int64_t batch = 0, head = 0, seq = 0;
  int64_t offset = 0;
};
struct AttentionLayout {
  AttentionStrides q, k, v, o;
  int64_t mask_batch = 0;  // the mask's batch stride (S_kv for [B, 1, 1, S_kv])
  float scale = 0;         // multiplies Q . K before the mask is added
};
// Q, K, V and O contiguous [B, H, S, D], the mask [B, S_kv], scale 1 / sqrt(D).
AttentionLayout ContiguousAttentionLayout(const AttentionParams& p);
// A tensor [B, S, H, D] (a projection's [B, S, H*D] output viewed by head): strides
// (S*H*D, D, H*D); `row` = H*D, or 3*H*D for a packed [B, S, 3, H, D].
AttentionStrides SequenceMajorStrides(const AttentionParams& p, int64_t seq, int64_t row);

// The one-kernel plan of `workload` at `config` for tensors laid out as `layout`.
// InvalidArgument for a config that breaks a rule, or a stride or offset that is not a multiple
// of 8.
absl::StatusOr<OpPlan> SpecializeAttention(const autotvm::Workload& workload,
                                           const autotvm::ConfigEntity& config,
                                           const DeviceLimits& limits,
                                           const AttentionLayout& layout);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_ATTENTION_H_

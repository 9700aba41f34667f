// attention_mma.cuda (ops/attention.h): the workload, the knob space and its rules, and the
// one-kernel plan of kernel_sources/attention.cu.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
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

constexpr char kTask[] = "attention_mma.cuda";

// Fragment registers one thread may hold (S and O accumulators, Q's A fragments): past this
// ptxas spills (D 128 with two m16 tiles a warp needs 224 and spills; 112 compile to 233
// registers).
constexpr int64_t kMaxFragmentRegisters = 128;

std::string_view MaskName(AttentionMask mask) {
  switch (mask) {
    case AttentionMask::kF32:
      return "float32";
    case AttentionMask::kF16:
      return "float16";
    case AttentionMask::kCausal:
      return "causal";
    case AttentionMask::kNone:
      break;
  }
  return "none";
}

// The kernel's AttnMask enumerator.
std::string_view MaskType(AttentionMask mask) {
  switch (mask) {
    case AttentionMask::kF32:
      return "tunejit::AttnMask::kF32";
    case AttentionMask::kF16:
      return "tunejit::AttnMask::kF16";
    case AttentionMask::kCausal:
      return "tunejit::AttnMask::kCausal";
    case AttentionMask::kNone:
      break;
  }
  return "tunejit::AttnMask::kNone";
}

absl::StatusOr<AttentionMask> ParseMask(const autotvm::Json& arg) {
  if (arg.is_string()) {
    const std::string s = arg.get<std::string>();
    for (AttentionMask m :
         {AttentionMask::kNone, AttentionMask::kF32, AttentionMask::kF16, AttentionMask::kCausal}) {
      if (s == MaskName(m)) return m;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kTask,
                   ": the mask argument is \"none\", \"float32\", \"float16\" or "
                   "\"causal\", not ",
                   arg.dump()));
}

// ["TENSOR", [B, H, S, D], "float16"] -> {B, H, S, D}.
absl::StatusOr<std::vector<int64_t>> ParseHalfTensor(const autotvm::Json& arg) {
  if (!arg.is_array() || arg.size() != 3 || arg[0] != "TENSOR" || !arg[1].is_array() ||
      arg[1].size() != 4 || !arg[2].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": expected [\"TENSOR\", [B, H, S, D], dtype], got ", arg.dump()));
  }
  if (arg[2] != "float16") {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": float16 tensors only, not ", arg[2].dump()));
  }
  std::vector<int64_t> dims;
  for (const autotvm::Json& d : arg[1]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(kTask, ": bad shape ", arg[1].dump()));
    }
    dims.push_back(d.get<int64_t>());
  }
  return dims;
}

// The kernel indexes rows and keys in int, (batch, head) in the grid's y (at most 65535).
absl::Status CheckExtents(const AttentionParams& p) {
  if (p.head_dim != 64 && p.head_dim != 128) {
    return absl::UnimplementedError(
        absl::StrCat(kTask, ": head dim ", p.head_dim, " (the kernel takes 64 or 128)"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "S_q", p.seq_q).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "S_kv", p.seq_kv).status());
  if (p.batch * p.heads > 65535) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": B * H = ", p.batch * p.heads,
                                                 " heads exceed the grid's y limit 65535"));
  }
  return absl::OkStatus();
}

int64_t FragmentRegisters(const AttentionTile& t, int64_t head_dim) {
  const int64_t m_tiles = t.block_m / t.warps / 16;
  // S: tile_n / 8 n8 tiles of 4; O: D / 8 of 4; Q: D / 16 k16 steps of 4 (packed halves).
  return m_tiles * (t.block_n / 2 + head_dim / 2 + head_dim / 4);
}

absl::Status CheckKnobValues(const AttentionTile& t) {
  if ((t.block_m != 64 && t.block_m != 128) ||
      (t.block_n != 32 && t.block_n != 64 && t.block_n != 128) || (t.warps != 4 && t.warps != 8) ||
      (t.stages != 2 && t.stages != 3)) {
    return InvalidConfig(
        kTask, absl::StrCat("knobs outside the space: tile_m ", t.block_m, ", tile_n ", t.block_n,
                            ", warps ", t.warps, ", stages ", t.stages));
  }
  return absl::OkStatus();
}

// Rows per warp in whole m16 tiles (mma.sync's M), at most two (registers).
absl::Status CheckRowsPerWarp(const AttentionTile& t) {
  const int64_t rows = t.block_m / t.warps;
  if (rows % 16 != 0) {
    return InvalidConfig(
        kTask, absl::StrCat("tile_m ", t.block_m, " over ", t.warps, " warps leaves ", rows,
                            " query rows a warp (whole m16 tiles needed)"));
  }
  return absl::OkStatus();
}

absl::Status CheckSearchRules(const AttentionParams& p, const AttentionTile& t,
                              const DeviceLimits& limits) {
  const int64_t regs = FragmentRegisters(t, p.head_dim);
  if (regs > kMaxFragmentRegisters) {
    TUNEJIT_RETURN_IF_ERROR(
        SearchRule(kTask,
                   absl::StrCat(regs, " fragment registers per thread > ", kMaxFragmentRegisters,
                                " (the kernel would spill)"),
                   limits));
  }
  const int64_t key_tiles = CeilDiv64(p.seq_kv, t.block_n);
  if (t.stages > 2 && t.stages - 1 > key_tiles) {
    TUNEJIT_RETURN_IF_ERROR(SearchRule(
        kTask,
        absl::StrCat(t.stages, " stages for ", key_tiles, " key tile(s): nothing to prefetch"),
        limits));
  }
  return absl::OkStatus();
}

LaunchShape LaunchOf(const AttentionParams& p, const AttentionTile& t) {
  LaunchShape shape;
  shape.grid[0] = static_cast<uint32_t>(CeilDiv64(p.seq_q, t.block_m));
  shape.grid[1] = static_cast<uint32_t>(p.batch * p.heads);
  shape.block[0] = static_cast<uint32_t>(t.warps * 32);
  shape.shared_bytes = static_cast<uint32_t>(AttentionSmemBytes(t, p.head_dim));
  shape.overlaps_previous = true;  // the kernel waits in GridDependencyWait before its loads
  return shape;
}

absl::Status CheckStrides(const AttentionLayout& l) {
  for (const AttentionStrides* s : {&l.q, &l.k, &l.v, &l.o}) {
    for (int64_t v : {s->batch, s->head, s->seq, s->offset}) {
      if (v < 0 || v % 8 != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(kTask, ": stride or offset ", v,
                         " is not a non-negative multiple of 8 elements (16-byte cp.async)"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> StrideValues(const AttentionLayout& l) {
  std::vector<int64_t> v;
  for (const AttentionStrides* s : {&l.q, &l.k, &l.v, &l.o}) {
    v.insert(v.end(), {s->batch, s->head, s->seq, s->offset});
  }
  v.push_back(l.mask_batch);
  return v;
}

PlannedKernel AttentionKernel(const AttentionParams& p, const AttentionTile& t,
                              const AttentionLayout& layout, const LaunchShape& shape) {
  constexpr float kLog2e = 1.4426950408889634f;
  PlannedKernel kernel;
  kernel.label = "attention";
  kernel.spec = KernelSpec{
      "attention.cu",
      absl::StrFormat("tunejit::attention_fwd<tunejit::AttnTile<%d, %d, %d, %d, %d>, %s>",
                      p.head_dim, t.block_m, t.block_n, t.warps, t.stages, MaskType(p.mask)),
      {},
      /*arch_specific=*/false};
  kernel.shape = shape;
  kernel.args = {InputArg(0),        InputArg(1),
                 InputArg(2),        ReadsMaskTensor(p.mask) ? InputArg(3) : Int64Arg(0),
                 OutputArg(0),       Int64ArrayArg(StrideValues(layout)),
                 Int32Arg(p.heads),  Int32Arg(p.seq_q),
                 Int32Arg(p.seq_kv), Float32Arg(layout.scale * kLog2e)};
  return kernel;
}

// 24 points, all `ot`; the shape does not change the space (Specialize rejects what cannot run).
absl::StatusOr<autotvm::ConfigSpace> AttentionSpace() {
  autotvm::ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_m", {64, 128}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_n", {32, 64, 128}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("warps", {4, 8}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("stages", {2, 3}));
  return s;
}

class AttentionMma final : public OpTemplate {
 public:
  std::string_view task_name() const override { return kTask; }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseAttentionWorkload(workload).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    if (!(epilogue == Epilogue{})) {
      return absl::UnimplementedError(absl::StrCat(kTask, ": takes no epilogue"));
    }
    TUNEJIT_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionWorkload(workload));
    return SpecializeAttention(workload, config, limits, ContiguousAttentionLayout(p));
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionWorkload(workload));
    // 64 query rows on 4 warps (one m16 tile each), double-buffered K/V tiles within the default
    // 48 KiB: 64 keys at D 64 (40 KiB), 32 at D 128 (48 KiB). ViT-B/16's 197 tokens take 4 CTAs
    // a head.
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_m", 64));
    config.knobs.push_back(OtherKnob("tile_n", p.head_dim == 128 ? 32 : 64));
    config.knobs.push_back(OtherKnob("warps", 4));
    config.knobs.push_back(OtherKnob("stages", 2));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& workload, const autotvm::Target& /*target*/) const override {
    TUNEJIT_RETURN_IF_ERROR(ParseAttentionWorkload(workload).status());
    return AttentionSpace();
  }

  // No graph node is an attention: the executor fuses the chain into one and asks for this
  // template by name (executor/step_program.cc).
  std::optional<OpOffer> Implement(const OpRequest& /*request*/) const override {
    return std::nullopt;
  }
};

}  // namespace

double AttentionParams::Flops() const {
  return 4.0 * static_cast<double>(batch * heads) * static_cast<double>(seq_q) *
         static_cast<double>(seq_kv) * static_cast<double>(head_dim);
}

autotvm::Workload MakeAttentionWorkload(const AttentionParams& p) {
  autotvm::Json args = autotvm::Json::array();
  args.push_back({"TENSOR", {p.batch, p.heads, p.seq_q, p.head_dim}, "float16"});
  args.push_back({"TENSOR", {p.batch, p.heads, p.seq_kv, p.head_dim}, "float16"});
  args.push_back(MaskName(p.mask));
  return autotvm::Workload{kTask, std::move(args)};
}

absl::StatusOr<AttentionParams> ParseAttentionWorkload(const autotvm::Workload& workload) {
  if (workload.task_name != kTask) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": workload is for ", workload.task_name));
  }
  if (!workload.args.is_array() || workload.args.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTask, ": expected [q, k, mask], got ", workload.args.dump()));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> q, ParseHalfTensor(workload.args[0]));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> k, ParseHalfTensor(workload.args[1]));
  if (q[0] != k[0] || q[1] != k[1] || q[3] != k[3]) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": Q ", workload.args[0][1].dump(),
                                                   " and K ", workload.args[1][1].dump(),
                                                   " differ in B, H or D"));
  }
  AttentionParams p;
  p.batch = q[0], p.heads = q[1], p.seq_q = q[2], p.seq_kv = k[2], p.head_dim = q[3];
  TUNEJIT_ASSIGN_OR_RETURN(p.mask, ParseMask(workload.args[2]));
  TUNEJIT_RETURN_IF_ERROR(CheckExtents(p));
  return p;
}

absl::StatusOr<AttentionTile> ReadAttentionTile(const autotvm::ConfigEntity& config) {
  AttentionTile t;
  TUNEJIT_ASSIGN_OR_RETURN(t.block_m, config.Other("tile_m"));
  TUNEJIT_ASSIGN_OR_RETURN(t.block_n, config.Other("tile_n"));
  TUNEJIT_ASSIGN_OR_RETURN(t.warps, config.Other("warps"));
  TUNEJIT_ASSIGN_OR_RETURN(t.stages, config.Other("stages"));
  return t;
}

int64_t AttentionSmemBytes(const AttentionTile& t, int64_t head_dim) {
  return (t.block_m + 2 * t.stages * t.block_n) * head_dim * 2;
}

absl::Status CheckAttentionTile(const AttentionParams& p, const AttentionTile& t,
                                const DeviceLimits& limits) {
  TUNEJIT_RETURN_IF_ERROR(CheckKnobValues(t));
  if (limits.arch.major < 8) {
    return InvalidConfig(kTask, absl::StrCat("mma.sync m16n8k16, ldmatrix and cp.async need "
                                             "sm_80 or newer; the target is ",
                                             limits.arch.ToString()));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckRowsPerWarp(t));
  TUNEJIT_RETURN_IF_ERROR(CheckSearchRules(p, t, limits));
  return CheckLaunch(kTask, LaunchOf(p, t), 0, limits, /*allow_optin_smem=*/true);
}

AttentionLayout ContiguousAttentionLayout(const AttentionParams& p) {
  AttentionLayout l;
  const int64_t d = p.head_dim;
  l.q = {p.heads * p.seq_q * d, p.seq_q * d, d, 0};
  l.o = l.q;
  l.k = {p.heads * p.seq_kv * d, p.seq_kv * d, d, 0};
  l.v = l.k;
  l.mask_batch = p.seq_kv;
  l.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  return l;
}

AttentionStrides SequenceMajorStrides(const AttentionParams& p, int64_t seq, int64_t row) {
  return {seq * row, p.head_dim, row, 0};
}

absl::StatusOr<OpPlan> SpecializeAttention(const autotvm::Workload& workload,
                                           const autotvm::ConfigEntity& config,
                                           const DeviceLimits& limits,
                                           const AttentionLayout& layout) {
  TUNEJIT_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionWorkload(workload));
  TUNEJIT_ASSIGN_OR_RETURN(AttentionTile t, ReadAttentionTile(config));
  TUNEJIT_RETURN_IF_ERROR(CheckAttentionTile(p, t, limits));
  TUNEJIT_RETURN_IF_ERROR(CheckStrides(layout));
  OpPlan plan;
  plan.kernels.push_back(AttentionKernel(p, t, layout, LaunchOf(p, t)));
  return plan;
}

const OpTemplate* AttentionMmaTemplate() {
  static const AttentionMma* const kTemplate = new AttentionMma();
  return kTemplate;
}

}  // namespace tunejit

// CPU: attention_mma.cuda (ops/attention.h): its workload, the knob space and every validity rule
// with its reason, the fallback on ViT-B/16's and BERT-base's shapes at several batches, the
// plan's launch geometry and arguments (strided layouts, the mask), the float64 reference on a
// hand-computed case, and NVRTC sm_90a builds of sampled valid configs. The GPU test is
// attention_gpu_test.cc.
#include "ops/attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/reference_kernels.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/attention_test_util.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

AttentionParams Params(int64_t b, int64_t h, int64_t s, int64_t d,
                       AttentionMask mask = AttentionMask::kNone, int64_t s_kv = 0) {
  return AttentionParams{b, h, s, s_kv > 0 ? s_kv : s, d, mask};
}

const OpTemplate& Op() { return *FindOpTemplate(kAttentionMma); }

autotvm::ConfigEntity Tile(int64_t m, int64_t n, int64_t warps, int64_t stages) {
  autotvm::ConfigEntity c;
  c.knobs = {OtherKnob("tile_m", m), OtherKnob("tile_n", n), OtherKnob("warps", warps),
             OtherKnob("stages", stages)};
  return c;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(AttentionWorkload, RoundTripsAndRefusesWhatTheKernelCannotTake) {
  const AttentionParams vit = Params(32, 12, 197, 64);
  const autotvm::Workload w = MakeAttentionWorkload(vit);
  EXPECT_EQ(w.task_name, "attention_mma.cuda");
  EXPECT_EQ(w.args.dump(),
            R"([["TENSOR",[32,12,197,64],"float16"],["TENSOR",[32,12,197,64],"float16"],"none"])");
  absl::StatusOr<AttentionParams> back = ParseAttentionWorkload(w);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->seq_kv, 197);
  EXPECT_EQ(back->mask, AttentionMask::kNone);
  EXPECT_DOUBLE_EQ(back->Flops(), 4.0 * 32 * 12 * 197 * 197 * 64);

  const AttentionParams bert = Params(1, 12, 128, 64, AttentionMask::kF32);
  EXPECT_EQ(ParseAttentionWorkload(MakeAttentionWorkload(bert))->mask, AttentionMask::kF32);
  const autotvm::Workload gpt2 =
      MakeAttentionWorkload(Params(1, 12, 128, 64, AttentionMask::kCausal));
  EXPECT_EQ(gpt2.args[2], "causal");
  EXPECT_EQ(ParseAttentionWorkload(gpt2)->mask, AttentionMask::kCausal);

  absl::Status d32 = Op().CanImplement(MakeAttentionWorkload(Params(1, 12, 128, 32)));
  EXPECT_EQ(d32.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(d32), HasSubstr("head dim 32"));
  autotvm::Workload f32 = w;
  f32.args[0][2] = "float32";
  EXPECT_EQ(Op().CanImplement(f32).code(), absl::StatusCode::kUnimplemented);
  autotvm::Workload bad_mask = w;
  bad_mask.args[2] = "int8";
  EXPECT_THAT(Message(Op().CanImplement(bad_mask)), HasSubstr("the mask argument"));
  autotvm::Workload other_heads = w;
  other_heads.args[1][1][1] = 8;
  EXPECT_THAT(Message(Op().CanImplement(other_heads)), HasSubstr("differ in B, H or D"));
  EXPECT_THAT(Message(Op().CanImplement(MakeAttentionWorkload(Params(6000, 12, 64, 64)))),
              HasSubstr("grid's y limit"));
}

TEST(AttentionSpace, TwentyFourOtherKnobsWhateverTheShape) {
  const autotvm::Target target = *autotvm::ParseTarget("cuda");
  absl::StatusOr<autotvm::ConfigSpace> space =
      BuildConfigSpace(MakeAttentionWorkload(Params(32, 12, 197, 64)), target);
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->ToString(), "tile_m ot 2 x tile_n ot 3 x warps ot 2 x stages ot 2 = 24");
  EXPECT_TRUE(HasConfigSpace(kAttentionMma));
  // Every point is either planned or refused with a reason.
  for (int64_t i = 0; i < space->size(); ++i) {
    const autotvm::ConfigEntity c = *space->Get(i);
    absl::StatusOr<OpPlan> plan =
        Op().Specialize(MakeAttentionWorkload(Params(32, 12, 197, 64)), c, kHopper, {});
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << c.ToString();
      EXPECT_THAT(Message(plan.status()), HasSubstr("attention_mma.cuda: invalid config: "));
    }
  }
}

TEST(AttentionRules, EachRuleRefusesWithItsReason) {
  const autotvm::Workload vit = MakeAttentionWorkload(Params(32, 12, 197, 64));
  const autotvm::Workload d128 = MakeAttentionWorkload(Params(8, 16, 256, 128));
  auto refusal = [](const autotvm::Workload& w, const autotvm::ConfigEntity& c,
                    const DeviceLimits& limits = kHopper) {
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, c, limits, {});
    return plan.ok() ? std::string("accepted") : Message(plan.status());
  };
  // tile_m 64 over 8 warps: 8 rows a warp, half an m16 tile.
  EXPECT_THAT(refusal(vit, Tile(64, 64, 8, 2)), HasSubstr("leaves 8 query rows a warp"));
  // D 128 with two m16 tiles a warp and 128 keys: 320 fragment registers.
  EXPECT_THAT(refusal(d128, Tile(128, 128, 4, 2)), HasSubstr("fragment registers per thread"));
  DeviceLimits no_rules = kHopper;
  no_rules.search_rules = false;
  EXPECT_EQ(refusal(d128, Tile(128, 64, 4, 2), no_rules), "accepted");
  // Three stages for a single key tile prefetch nothing.
  EXPECT_THAT(refusal(MakeAttentionWorkload(Params(1, 12, 60, 64)), Tile(64, 64, 4, 3)),
              HasSubstr("nothing to prefetch"));
  // Shared memory past the opt-in limit of an older part (Ampere's 163 KiB opt-in is enough for
  // all; a 64 KiB part is not).
  DeviceLimits small = kHopper;
  small.shared_bytes_per_block_optin = 64 * 1024;
  EXPECT_THAT(refusal(vit, Tile(128, 128, 8, 3), small), HasSubstr("shared"));
  EXPECT_THAT(refusal(vit, Tile(64, 64, 4, 2), DeviceLimits::ForArch(GpuArch{7, 5, false})),
              HasSubstr("sm_80 or newer"));
  EXPECT_THAT(refusal(vit, Tile(64, 48, 4, 2)), HasSubstr("knobs outside the space"));
  absl::StatusOr<OpPlan> epi = Op().Specialize(vit, Tile(64, 64, 4, 2), kHopper, {.relu = true});
  EXPECT_EQ(epi.status().code(), absl::StatusCode::kUnimplemented);
}

// ViT-B/16 (197 tokens) and BERT-base (128, with and without its mask) at batches 1 to 128, and
// D 128: the fallback plans within the default 48 KiB of shared memory.
TEST(AttentionFallback, ValidForViTAndBertAtEveryBatch) {
  std::vector<AttentionParams> shapes;
  for (int64_t b : {1, 8, 32, 128}) {
    shapes.push_back(Params(b, 12, 197, 64));
    shapes.push_back(Params(b, 12, 128, 64));
    shapes.push_back(Params(b, 12, 128, 64, AttentionMask::kF32));
    shapes.push_back(Params(b, 12, 128, 64, AttentionMask::kF16));
    shapes.push_back(Params(b, 16, 77, 128));
  }
  for (const AttentionParams& p : shapes) {
    const autotvm::Workload w = MakeAttentionWorkload(p);
    absl::StatusOr<autotvm::ConfigEntity> fallback = Op().FallbackConfig(w);
    ASSERT_TRUE(fallback.ok()) << fallback.status();
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, *fallback, kHopper, {});
    ASSERT_TRUE(plan.ok()) << w.Key() << ": " << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u);
    EXPECT_LE(plan->kernels[0].shape.shared_bytes, 48u * 1024) << w.Key();
  }
}

TEST(AttentionPlan, GeometryStridesAndMaskArgument) {
  const AttentionParams p = Params(32, 12, 197, 64, AttentionMask::kF16);
  AttentionLayout layout = ContiguousAttentionLayout(p);
  EXPECT_FLOAT_EQ(layout.scale, 0.125f);
  // Q, K and V read from a packed [B, S, 3, H, D] projection, O written [B, S, H, D].
  layout.q = layout.k = layout.v = SequenceMajorStrides(p, 197, 3 * 768);
  layout.o = SequenceMajorStrides(p, 197, 768);
  EXPECT_EQ(layout.o.batch, 197 * 768);
  EXPECT_EQ(layout.o.head, 64);
  EXPECT_EQ(layout.o.seq, 768);
  absl::StatusOr<OpPlan> plan =
      SpecializeAttention(MakeAttentionWorkload(p), Tile(128, 64, 8, 3), kHopper, layout);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.source_file, "attention.cu");
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::attention_fwd<tunejit::AttnTile<64, 128, 64, 8, 3>, "
            "tunejit::AttnMask::kF16>");
  EXPECT_EQ(k.shape.grid[0], 2u);  // 197 rows in 128s
  EXPECT_EQ(k.shape.grid[1], 32u * 12);
  EXPECT_EQ(k.shape.block[0], 256u);
  EXPECT_EQ(k.shape.shared_bytes, (128 + 2 * 3 * 64) * 64 * 2u);  // 64 KiB: opt-in
  ASSERT_EQ(k.args.size(), 10u);
  EXPECT_EQ(k.args[3].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k.args[3].index_or_int, 3);
  EXPECT_EQ(k.args[5].int64s,
            (std::vector<int64_t>{197 * 2304, 64, 2304, 0, 197 * 2304, 64, 2304, 0, 197 * 2304, 64,
                                  2304, 0, 197 * 768, 64, 768, 0, 197}));
  EXPECT_FLOAT_EQ(k.args[9].f32, 0.125f * 1.4426950408889634f);

  layout.k.seq = 2300;  // not a multiple of 8: 16-byte loads would be misaligned
  EXPECT_THAT(
      Message(SpecializeAttention(MakeAttentionWorkload(p), Tile(128, 64, 8, 3), kHopper, layout)
                  .status()),
      HasSubstr("stride or offset 2300"));
  // Without a mask the mask pointer is null; causal reads none either.
  absl::StatusOr<OpPlan> none = Op().Specialize(MakeAttentionWorkload(Params(1, 12, 128, 64)),
                                                Tile(64, 64, 4, 2), kHopper, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->kernels[0].args[3].kind, KernelArg::Kind::kInt64);
  absl::StatusOr<OpPlan> causal =
      Op().Specialize(MakeAttentionWorkload(Params(1, 12, 128, 64, AttentionMask::kCausal)),
                      Tile(64, 64, 4, 2), kHopper, {});
  ASSERT_TRUE(causal.ok()) << causal.status();
  EXPECT_EQ(causal->kernels[0].args[3].kind, KernelArg::Kind::kInt64);
  EXPECT_THAT(causal->kernels[0].spec.name_expression, HasSubstr("tunejit::AttnMask::kCausal>"));
}

// Causal: query i over keys j <= i. Two queries, two keys: the first sees only key 0 (V's first
// row), the second both (equal scores: their mean).
TEST(AttentionReference, CausalQueriesSeeTheKeysUpToTheirOwn) {
  const AttentionParams p{1, 1, 2, 2, 2, AttentionMask::kCausal};
  const std::vector<float> q = {1, 1, 1, 1}, k = {1, 0, 0, 1}, v = {2, 4, 6, 8};
  const std::vector<double> o = testing::AttentionReference(p, q, k, v, {}, 1.0);
  EXPECT_THAT(o, ::testing::ElementsAre(2, 4, 4, 6));
}

// Two keys, one query: softmax of (0.5 * [1, 3] + [0, -1]) = softmax([0.5, 0.5]) averages V.
TEST(AttentionReference, SoftmaxOfScaledScoresPlusMask) {
  const AttentionParams p{1, 1, 1, 2, 2, AttentionMask::kF32};
  const std::vector<float> q = {1, 1}, k = {1, 0, 1, 2}, v = {2, 4, 6, 8}, mask = {0, -1};
  const std::vector<double> o = testing::AttentionReference(p, q, k, v, mask, 0.5);
  EXPECT_DOUBLE_EQ(o[0], 4);
  EXPECT_DOUBLE_EQ(o[1], 6);
  EXPECT_DOUBLE_EQ(testing::RelativeL2({4, 6}, o), 0);
}

// Sampled valid configs of every mask kind and both head dims build with NVRTC for sm_90a, and
// their PTX holds the tensor-core and asynchronous-copy instructions.
TEST(AttentionTemplate, SampledValidConfigsCompileForSm90a) {
  KernelCompiler compiler(nullptr);
  const std::vector<AttentionParams> shapes = {
      Params(32, 12, 197, 64), Params(32, 12, 128, 64, AttentionMask::kF32),
      Params(2, 8, 300, 128, AttentionMask::kF16), Params(4, 12, 128, 64, AttentionMask::kCausal)};
  for (const AttentionParams& p : shapes) {
    const autotvm::Workload w = MakeAttentionWorkload(p);
    std::vector<autotvm::ConfigEntity> configs = testing::SampledValidConfigs(Op(), w, kHopper, 3);
    configs.push_back(*Op().FallbackConfig(w));
    for (const autotvm::ConfigEntity& c : configs) {
      absl::StatusOr<OpPlan> plan = Op().Specialize(w, c, kHopper, {});
      ASSERT_TRUE(plan.ok()) << plan.status();
      const KernelSpec& spec = plan->kernels[0].spec;
      absl::StatusOr<CompiledKernel> compiled = compiler.Compile(spec, GpuArch{9, 0, true});
      ASSERT_TRUE(compiled.ok()) << spec.name_expression << ": " << compiled.status();
      for (const char* op : {"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned.m8n8.x4.trans",
                             "cp.async.cg.shared.global"}) {
        EXPECT_TRUE(absl::StrContains(compiled->program.ptx, op)) << spec.name_expression << op;
      }
    }
  }
}

// The tuner's GPU reference (ops/reference_kernels.h) plans one thread per query row and builds.
TEST(AttentionReferencePlan, OneThreadPerRowAndBuilds) {
  KernelCompiler compiler(nullptr);
  for (const AttentionParams& p :
       {Params(32, 12, 197, 64), Params(2, 8, 300, 128, AttentionMask::kF16),
        Params(2, 8, 100, 128, AttentionMask::kCausal)}) {
    absl::StatusOr<OpPlan> plan = ReferenceAttentionPlan(p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const PlannedKernel& k = plan->kernels[0];
    EXPECT_EQ(k.args[3].kind,
              ReadsMaskTensor(p.mask) ? KernelArg::Kind::kInput : KernelArg::Kind::kInt64);
    absl::StatusOr<CompiledKernel> compiled = compiler.Compile(k.spec, GpuArch{9, 0, false});
    EXPECT_TRUE(compiled.ok()) << k.spec.name_expression << ": " << compiled.status();
  }
  EXPECT_EQ(ReferenceAttentionPlan(Params(1, 1, 8, 32)).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tunejit

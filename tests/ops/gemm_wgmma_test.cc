// dense_wgmma.cuda without a GPU: the validity rules (each rejects with its reason, good configs
// pass), the knob space's index <-> entity round trip, and NVRTC builds for sm_90a of the PTX
// wrapper header (every wrapper) and of a fixed-seed sample of valid configs, whose PTX must hold
// wgmma.mma_async (NVRTC returns the PTX it assembled; ptxas accepting it for sm_90a is the
// other half of the check).
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "autotvm/config_space.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "jit/nvrtc_compiler.h"
#include "ops/op_template.h"
#include "ops/split.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

using testing::Config;
using ::testing::HasSubstr;
using testing::Tensor;

constexpr char kTask[] = "dense_wgmma.cuda";
const GpuArch kSm90a{9, 0, true};
const DeviceLimits kHopper = DeviceLimits::ForArch(kSm90a);

autotvm::Workload WgmmaWorkload(int64_t m, int64_t n, int64_t k, const std::string& out = "float32",
                                const std::string& in = "float16") {
  return autotvm::Workload{
      kTask, autotvm::Json::array({Tensor({m, k}, in), Tensor({n, k}, in), nullptr, out})};
}

autotvm::ConfigEntity Tile(int64_t m, int64_t n, int64_t k, int64_t stages, int64_t consumers,
                           int64_t split_k = 1) {
  return Config({OtherKnob("tile_m", m), OtherKnob("tile_n", n), OtherKnob("tile_k", k),
                 OtherKnob("stages", stages), OtherKnob("consumer_wg", consumers),
                 OtherKnob("split_k", split_k)});
}

const OpTemplate& Op() {
  const OpTemplate* op = FindOpTemplate(kTask);
  EXPECT_NE(op, nullptr);
  return *op;
}

absl::Status SpecializeStatus(const autotvm::ConfigEntity& config,
                              const DeviceLimits& limits = kHopper,
                              const autotvm::Workload& workload = WgmmaWorkload(4096, 4096, 4096),
                              const Epilogue& epilogue = Epilogue{}) {
  return Op().Specialize(workload, config, limits, epilogue).status();
}

TEST(DenseWgmma, GoodConfigSpecializes) {
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(WgmmaWorkload(1000, 300, 4096, "float16"), Tile(128, 256, 64, 3, 2), kHopper,
                      Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.source_file, "gemm_wgmma.cu");
  EXPECT_EQ(k.spec.name_expression, "tunejit::gemm_wgmma<128, 256, 64, 3, 2, 0, 3, 1, 1>");
  EXPECT_EQ(k.shape.grid[0], 8u * 2);  // ceil(1000 / 128) x ceil(300 / 256) tiles, < 132 SMs
  EXPECT_EQ(k.shape.grid[1], 1u);
  EXPECT_EQ(k.shape.block[0], 384u);
  EXPECT_EQ(k.shape.shared_bytes, 3u * (128 + 256) * 64 * 2 + 4 * 16 + 1024);
  EXPECT_TRUE(k.spec.arch_specific);  // built for sm_90a
  ASSERT_EQ(k.args.size(), 9u);       // a_map, b_map, bias, scale, out, m, n, k, residual
  EXPECT_EQ(k.args[0].kind, KernelArg::Kind::kTensorMap);
  EXPECT_EQ(k.args[0].index_or_int, 0);
  EXPECT_EQ(k.args[1].kind, KernelArg::Kind::kTensorMap);
  EXPECT_EQ(k.args[1].index_or_int, 1);
  EXPECT_EQ(k.args[2].kind, KernelArg::Kind::kInput);  // bias
  EXPECT_EQ(k.args[5].index_or_int, 1000);
  EXPECT_EQ(k.args[8].kind, KernelArg::Kind::kInt64);  // no residual: null
  EXPECT_EQ(k.args[8].index_or_int, 0);
  // The TMA maps: K-major fp16 operands, boxes of 64 K by the tile's rows, 128-byte swizzle.
  ASSERT_EQ(plan->tensor_maps.size(), 2u);
  EXPECT_EQ(plan->tensor_maps[0].tensor.kind, KernelArg::Kind::kInput);
  EXPECT_EQ(plan->tensor_maps[0].tensor.index_or_int, 0);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "f16 [4096, 1000] box [64, 128] swizzle 128B");
  EXPECT_EQ(plan->tensor_maps[0].desc.strides_bytes[0], 4096u * 2);
  EXPECT_EQ(plan->tensor_maps[1].tensor.index_or_int, 1);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[1].desc), "f16 [4096, 300] box [64, 256] swizzle 128B");
  for (const PlannedTensorMap& m : plan->tensor_maps) {
    EXPECT_TRUE(CheckTensorMap(m.desc, 0x10000).ok()) << TensorMapText(m.desc);
  }
  EXPECT_TRUE(plan->notes.empty());
}

// int8 x int8 -> int32 (IGMMA): K in rows of 128 int8, int8 TMA maps, requantize epilogue.
TEST(DenseWgmma, Int8PlansIgmma) {
  const autotvm::Workload w = WgmmaWorkload(1000, 300, 4096, "int32", "int8");
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(128, 128, 256, 3, 2), kHopper, requantize);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::gemm_wgmma<128, 128, 256, 3, 2, 1, 11, 0, 1>");
  EXPECT_EQ(plan->kernels[0].shape.shared_bytes, 3u * (128 + 128) * 256 + 4 * 16 + 1024);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "i8 [4096, 1000] box [128, 128] swizzle 128B");
  EXPECT_EQ(plan->tensor_maps[0].desc.strides_bytes[0], 4096u);
  EXPECT_THAT(
      std::string(SpecializeStatus(Tile(128, 128, 64, 3, 2), kHopper, w, requantize).message()),
      HasSubstr("tile_k = 64 is not a multiple of 128 (one 128-byte swizzled row of int8)"));
  EXPECT_THAT(
      std::string(SpecializeStatus(Tile(128, 128, 128, 3, 2), kHopper, w, Epilogue{.bias = true})
                      .message()),
      HasSubstr("an int32 output takes no float bias"));
  EXPECT_THAT(std::string(Op().CanImplement(WgmmaWorkload(64, 64, 24, "int32", "int8")).message()),
              HasSubstr("K = 24 is not a multiple of 16"));
  absl::StatusOr<autotvm::ConfigEntity> fallback = Op().FallbackConfig(w);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_TRUE(Op().Specialize(w, *fallback, kHopper, requantize).ok()) << fallback->ToString();
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget("cuda");
  ASSERT_TRUE(target.ok());
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(w, *target);
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_TRUE(space->IndexOf(Tile(128, 128, 256, 3, 2)).ok());  // int8's tile_k: 128 or 256
  EXPECT_FALSE(space->IndexOf(Tile(128, 128, 64, 3, 2)).ok());
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel =
      compiler.Compile(plan->kernels[0].spec, GpuArch{9, 0, false});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(
      absl::StrContains(kernel->program.ptx, "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8"));
}

TEST(DenseWgmma, FallbackIsValid) {
  for (int64_t n : {64, 4096}) {
    const autotvm::Workload w = WgmmaWorkload(128, n, 25088);
    absl::StatusOr<autotvm::ConfigEntity> c = Op().FallbackConfig(w);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(Op().Specialize(w, *c, kHopper, Epilogue{}).ok()) << c->ToString();
  }
}

// split_k 4 on VGG's first classifier layer: the GEMM (no epilogue, raw fp32 partials into the
// workspace's 4 slices) over 4x the tiles, then the summing kernel with the epilogue, launched to
// overlap the GEMM's tail.
TEST(DenseWgmma, SplitKPlansPartialSumsAndTheirSum) {
  const autotvm::Workload w = WgmmaWorkload(128, 4096, 25088, "float16");
  const Epilogue bias_relu{.bias = true, .relu = true};
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile(128, 128, 128, 3, 1, 4), kHopper, bias_relu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 2u);
  const PlannedKernel& gemm = plan->kernels[0];
  EXPECT_EQ(gemm.spec.name_expression, "tunejit::gemm_wgmma<128, 128, 128, 3, 1, 0, 0, 0, 4>");
  EXPECT_EQ(gemm.shape.grid[0], 32u * 4);  // 32 column tiles x 4 slices of K, < 132 SMs
  EXPECT_TRUE(gemm.shape.overlaps_previous);
  EXPECT_EQ(gemm.args[2].kind, KernelArg::Kind::kInt64);  // no bias, no scale
  EXPECT_EQ(gemm.args[4].kind, KernelArg::Kind::kWorkspace);
  const PlannedKernel& sum = plan->kernels[1];
  EXPECT_EQ(sum.spec.name_expression, "tunejit::gemm_split_k_sum<4, 0, 3, 1>");
  EXPECT_TRUE(sum.spec.arch_specific);
  EXPECT_TRUE(sum.shape.overlaps_previous);
  EXPECT_EQ(sum.shape.block[0], 256u);
  EXPECT_EQ(sum.shape.grid[0], 132u * 8);  // 524,288 outputs, grid-strided
  ASSERT_EQ(sum.args.size(), 6u);          // partial, bias, scale, out, m, n
  EXPECT_EQ(sum.args[0].kind, KernelArg::Kind::kWorkspace);
  EXPECT_EQ(sum.args[1].kind, KernelArg::Kind::kInput);  // bias
  EXPECT_EQ(sum.args[3].kind, KernelArg::Kind::kOutput);
  EXPECT_EQ(sum.args[4].index_or_int, 128);
  EXPECT_EQ(sum.args[5].index_or_int, 4096);
  ASSERT_EQ(plan->workspace_bytes.size(), 1u);
  EXPECT_EQ(plan->workspace_bytes[0], 4 * 128 * 4096 * 4);
  EXPECT_FALSE(plan->workspace_persistent[0]);
  // Rules: a value without a kernel, and a split that would leave a slice without K (3 K tiles).
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 128, 64, 4, 2, 3)).message()),
              HasSubstr("split_k = 3 (1, 2, 4 or 8)"));
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 128, 64, 4, 2, 4), kHopper,
                                           WgmmaWorkload(128, 128, 192))
                              .message()),
              HasSubstr("split_k = 4 leaves a slice without K (3 K tiles of 64)"));
  EXPECT_TRUE(
      SpecializeStatus(Tile(128, 128, 64, 4, 2, 2), kHopper, WgmmaWorkload(128, 128, 192)).ok());
  // Both kernels compile for sm_90a, int8 too (int32 partials, requantized in the sum).
  const autotvm::Workload int8 = WgmmaWorkload(128, 4096, 25088, "int32", "int8");
  absl::StatusOr<OpPlan> int8_plan = Op().Specialize(
      int8, Tile(128, 128, 256, 3, 1, 2), kHopper,
      Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(int8_plan.ok()) << int8_plan.status();
  EXPECT_EQ(int8_plan->kernels[1].spec.name_expression, "tunejit::gemm_split_k_sum<2, 1, 11, 0>");
  KernelCompiler compiler(nullptr);
  for (const OpPlan* p : {&*plan, &*int8_plan}) {
    for (const PlannedKernel& k : p->kernels) {
      absl::StatusOr<CompiledKernel> compiled = compiler.Compile(k.spec, GpuArch{9, 0, false});
      EXPECT_TRUE(compiled.ok()) << k.spec.name_expression << ": " << compiled.status();
    }
  }
}

struct RuleCase {
  const char* what;
  autotvm::ConfigEntity config;
  const char* reason;
};

TEST(DenseWgmma, EachRuleRejectsWithItsReason) {
  const std::vector<RuleCase> cases = {
      {"consumers", Tile(128, 128, 64, 4, 3), "consumer_wg = 3"},
      {"m64 per consumer", Tile(64, 128, 64, 4, 2), "not a multiple of 64 x 2 consumer"},
      {"wgmma N", Tile(128, 96, 64, 4, 2), "tile_n = 96 is not a wgmma N"},
      {"wgmma N max", Tile(128, 320, 64, 4, 2), "tile_n = 320"},
      {"swizzle row", Tile(128, 128, 32, 4, 2), "tile_k = 32 is not a multiple of 64"},
      {"TMA box", Tile(512, 64, 64, 2, 2), "TMA box {64, 512} exceeds 256"},
      {"stages low", Tile(128, 128, 64, 1, 2), "stages = 1 outside [2, 8]"},
      {"stages high", Tile(64, 64, 64, 9, 1), "stages = 9 outside [2, 8]"},
      {"accumulators", Tile(128, 192, 64, 2, 1), "192 accumulator registers per consumer"},
      {"accumulators 2wg", Tile(256, 256, 64, 2, 2), "256 accumulator registers"},
      {"shared memory", Tile(256, 128, 128, 4, 2), "> shared_bytes_per_block_optin 232448"},
  };
  for (const RuleCase& c : cases) {
    absl::Status s = SpecializeStatus(c.config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.what << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("invalid config")) << c.what;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.reason)) << c.what;
  }
}

TEST(DenseWgmma, SharedMemoryRuleIsTheOptInLimit) {
  // 128 x 128 x 128, 3 stages = 196608 + 48 + 1024 bytes: over 48 KiB, under 227 KiB.
  EXPECT_TRUE(SpecializeStatus(Tile(128, 128, 128, 3, 2)).ok());
  DeviceLimits small = kHopper;
  small.shared_bytes_per_block_optin = 160 * 1024;
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 128, 128, 3, 2), small).message()),
              HasSubstr("shared memory 3 stages x (128 + 128) x 128 x 2 bytes"));
}

TEST(DenseWgmma, RegisterFileRules) {
  DeviceLimits half = kHopper;
  half.regs_per_block = 32768;
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 128, 64, 4, 2), half).message()),
              HasSubstr("setmaxnreg split 128 x (40 + 2 x 232) = 64512 registers"));
  // One consumer: 256 threads share 32768 registers, 128 each: 64 accumulators at most.
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 128, 64, 4, 1), half).message()),
              HasSubstr("128 accumulator registers per consumer thread + 64 > 128"));
  EXPECT_TRUE(SpecializeStatus(Tile(64, 128, 64, 4, 1), half).ok());
}

TEST(DenseWgmma, NeedsHopper) {
  for (const GpuArch& arch : {GpuArch{8, 0, false}, GpuArch{10, 0, false}}) {
    absl::Status s = SpecializeStatus(Tile(128, 128, 64, 4, 2), DeviceLimits::ForArch(arch));
    EXPECT_THAT(std::string(s.message()), HasSubstr("need Hopper")) << arch.ToString();
  }
}

TEST(DenseWgmma, WorkloadAndEpilogueRules) {
  const autotvm::ConfigEntity good = Tile(128, 128, 64, 4, 2);
  EXPECT_EQ(Op().CanImplement(WgmmaWorkload(128, 128, 100)).code(),
            absl::StatusCode::kUnimplemented);  // K % 8: TMA's 16-byte row stride
  EXPECT_THAT(std::string(Op().CanImplement(WgmmaWorkload(128, 128, 100)).message()),
              HasSubstr("16-byte row strides"));
  EXPECT_FALSE(Op().CanImplement(WgmmaWorkload(128, 128, 64, "float32", "float32")).ok());
  EXPECT_FALSE(Op().CanImplement(WgmmaWorkload(128, 128, 64, "int8")).ok());
  EXPECT_TRUE(Op().CanImplement(WgmmaWorkload(1, 1, 8, "float16")).ok());
  const autotvm::Workload w = WgmmaWorkload(256, 256, 256, "float16");
  // A requantize epilogue replaces the float16 output with int8 (kOutF16 0, kEpi 8).
  absl::StatusOr<OpPlan> to_int8 =
      Op().Specialize(w, good, kHopper, Epilogue{.output = Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(to_int8.ok()) << to_int8.status();
  EXPECT_EQ(to_int8->kernels[0].spec.name_expression,
            "tunejit::gemm_wgmma<128, 128, 64, 4, 2, 0, 8, 0, 1>");
  EXPECT_FALSE(
      SpecializeStatus(good, kHopper, w, Epilogue{.output = Epilogue::Output::kFloat32}).ok());
  EXPECT_TRUE(SpecializeStatus(good, kHopper, WgmmaWorkload(256, 256, 256),
                               Epilogue{.output = Epilogue::Output::kFloat32})
                  .ok());
}

// A float16 residual (a transformer's residual stream) in the epilogue: input 4, kEpi's residual
// bit; not into float32 or int8 outputs, not through split-K's sum kernel.
TEST(DenseWgmma, ResidualEpilogueReadsInput4) {
  const autotvm::Workload w = WgmmaWorkload(6304, 768, 3072, "float16");
  const Epilogue residual{.bias = true, .residual = true};
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(128, 192, 64, 4, 2), kHopper, residual);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.name_expression, "tunejit::gemm_wgmma<128, 192, 64, 4, 2, 0, 17, 1, 1>");
  ASSERT_EQ(k.args.size(), 9u);
  EXPECT_EQ(k.args[8].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k.args[8].index_or_int, 4);
  EXPECT_THAT(std::string(SpecializeStatus(Tile(128, 192, 64, 4, 2), kHopper,
                                           WgmmaWorkload(6304, 768, 3072), residual)
                              .message()),
              HasSubstr("float16 outputs and requantized int8 ones only"));
  EXPECT_THAT(
      std::string(SpecializeStatus(Tile(128, 128, 64, 4, 1, 2), kHopper, w, residual).message()),
      HasSubstr("split-K adds no residual"));
  // Compiles for sm_90a (NVRTC, no GPU).
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel = compiler.Compile(k.spec, GpuArch{9, 0, false});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_FALSE(kernel->program.cubin.empty());
}

absl::StatusOr<autotvm::ConfigSpace> Space() {
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget("cuda");
  if (!target.ok()) return target.status();
  return BuildConfigSpace(WgmmaWorkload(4096, 4096, 4096), *target);
}

TEST(DenseWgmmaSpace, IndexEntityRoundTrip) {
  absl::StatusOr<autotvm::ConfigSpace> space = Space();
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->size(), 3 * 4 * 2 * 5 * 2 * 4);
  EXPECT_TRUE(HasConfigSpace(kTask));
  int valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    absl::StatusOr<autotvm::ConfigEntity> c = space->Get(i);
    ASSERT_TRUE(c.ok()) << c.status();
    for (const autotvm::Knob& knob : c->knobs) EXPECT_EQ(knob.type, "ot") << knob.name;
    absl::StatusOr<int64_t> back = space->IndexOf(*c);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, i);
    // Through the record's JSON form too, as a log line stores it.
    autotvm::ConfigEntity reparsed;
    for (const autotvm::Json& e : c->ToJson())
      reparsed.knobs.push_back({e[0].get<std::string>(), e[1].get<std::string>(), e[2]});
    EXPECT_EQ(*space->IndexOf(reparsed), i);
    valid += SpecializeStatus(*c).ok() ? 1 : 0;
  }
  // Pinned, so that a change to any rule shows here: 332 of 960 run on an H200 (83 tiles, each
  // with all four splits of K = 4096). Most rejections are tile_m = 64 with two consumers,
  // accumulators past the registers, and deep rings of big tiles past 227 KiB.
  EXPECT_EQ(valid, 332);
  EXPECT_FALSE(space->IndexOf(Tile(128, 128, 64, 7, 2)).ok());  // 7 stages is not a candidate
}

// Every wrapper of hopper_ptx.cuh, through NVRTC for sm_90a, in all four wgmma N shapes.
TEST(HopperPtx, CompilesWithNvrtcForSm90a) {
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(
      KernelSpec{"hopper_ptx_check.cu", "tunejit::hopper_ptx_smoke<64>"}, kSm90a);
  ASSERT_TRUE(request.ok()) << request.status();
  for (int n : {128, 192, 256}) {
    request->name_expressions.push_back(absl::StrCat("tunejit::hopper_ptx_smoke<", n, ">"));
  }
  absl::StatusOr<CompiledProgram> program = NvrtcCompile(*request);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_FALSE(program->cubin.empty());
  EXPECT_EQ(program->lowered_names.size(), 4u);
  for (const char* instruction :
       {"mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
        "mbarrier.arrive.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async.shared::cta",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "prefetch.tensormap", "setmaxnreg.inc.sync.aligned.u32 232",
        "setmaxnreg.dec.sync.aligned.u32 40", "wgmma.fence.sync.aligned",
        "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"}) {
    EXPECT_TRUE(absl::StrContains(program->ptx, instruction)) << instruction;
  }
}

// The "a" matters: plain sm_90 cannot assemble wgmma (design note 1.5), so a wrong arch fails
// loudly at compile time rather than at launch.
TEST(HopperPtx, PlainSm90IsRejectedByPtxas) {
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(
      KernelSpec{"hopper_ptx_check.cu", "tunejit::hopper_ptx_smoke<64>"}, GpuArch{9, 0, false});
  ASSERT_TRUE(request.ok()) << request.status();
  absl::StatusOr<CompiledProgram> program = NvrtcCompile(*request);
  ASSERT_FALSE(program.ok());
  // ptxas: "Instruction 'wgmma.fence' not supported on .target 'sm_90'" (and setmaxnreg, ...).
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("not supported on .target 'sm_90'"));
}

// A fixed-seed sample of the space's valid configs compiles for sm_90a and really uses wgmma.
TEST(DenseWgmmaSpace, SampledValidConfigsCompileWithWgmma) {
  absl::StatusOr<autotvm::ConfigSpace> space = Space();
  ASSERT_TRUE(space.ok()) << space.status();
  const autotvm::Workload w = WgmmaWorkload(4096, 4096, 4096, "float16");
  const Epilogue epilogue{.bias = true, .relu = true};
  std::mt19937_64 rng(20261201);
  KernelCompiler compiler(nullptr);
  int compiled = 0;
  for (int tries = 0; compiled < 8 && tries < 1000; ++tries) {
    const int64_t index = space->RandomIndex(rng);
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, *space->Get(index), kHopper, epilogue);
    if (!plan.ok()) continue;
    const KernelSpec& spec = plan->kernels[0].spec;
    // Asked for plain sm_90 (what a device reports): the arch_specific spec builds for sm_90a.
    absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << index << " " << spec.name_expression << ": " << kernel.status();
    EXPECT_FALSE(kernel->program.cubin.empty()) << spec.name_expression;
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "wgmma.mma_async.sync.aligned.m64n"))
        << spec.name_expression;
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "cp.async.bulk.tensor.2d"))
        << spec.name_expression;
    std::printf("compiled index %lld: %s (%.2f s)\n", static_cast<long long>(index),
                spec.name_expression.c_str(), kernel->compile_seconds);
    ++compiled;
  }
  EXPECT_EQ(compiled, 8);
}

}  // namespace
}  // namespace tunejit

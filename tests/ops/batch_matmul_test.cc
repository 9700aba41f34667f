// batch_matmul.cuda on the CPU: TVM 0.7's space (knob order, candidates, index <-> entity by hand
// and on TopHub cuda_v0.10's 18 records, copied to tests/data), its fallback, the validity rules
// and launch geometry, and NVRTC builds for sm_90a of the TopHub records and of sampled valid
// configs in both layouts of y.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/config_space.h"
#include "autotvm/log_file.h"
#include "autotvm/record_check.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/batch_matmul.h"
#include "ops/plan_runner.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

using autotvm::Json;
using ::testing::HasSubstr;
using Splits = std::vector<std::vector<int64_t>>;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, false});
const GpuArch kSm90a{9, 0, true};

const OpTemplate& Op() { return *BatchMatmulTemplate(); }

autotvm::Workload Bmm(int64_t xb, int64_t yb, int64_t m, int64_t n, int64_t k) {
  return autotvm::MakeBatchMatmulWorkload({.x_batch = xb, .y_batch = yb, .m = m, .n = n, .k = k});
}

autotvm::ConfigEntity Tile(std::vector<int64_t> y, std::vector<int64_t> x, int64_t kf,
                           int64_t unroll = 16) {
  return testing::Config({SplitKnob("tile_y", y), SplitKnob("tile_x", x),
                          SplitKnob("tile_k", {-1, kf}), OtherKnob("auto_unroll_max_step", unroll),
                          OtherKnob("unroll_explicit", 0)});
}

autotvm::ConfigSpace Space(const autotvm::Workload& w, const char* target = "cuda") {
  absl::StatusOr<autotvm::ConfigSpace> s = Op().ConfigSpace(w, *autotvm::ParseTarget(target));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : autotvm::ConfigSpace{};
}

std::vector<autotvm::LoadedRecord> TopHubRecords() {
  autotvm::LogContents log;
  const absl::Status s = autotvm::LoadLogFile(
      testing::RepoTestData("autotvm/tophub_v0.10_batch_matmul.log"), {.strict = true}, &log);
  EXPECT_TRUE(s.ok()) << s;
  return log.records;
}

// The knobs of TVM's schedule_batch_matmul in definition order, each a `factors` split with no
// filter; index digits by hand (section 1.7 of docs/tvm-templates.md).
TEST(BatchMatmulSpace, KnobsAndIndicesByHand) {
  const autotvm::Workload w = Bmm(2, 2, 4, 2, 3);
  autotvm::ConfigSpace s = Space(w);
  EXPECT_EQ(s.ToString(),
            "tile_y sp 6 x tile_x sp 3 x tile_k sp 2 x auto_unroll_max_step ot 4 x "
            "unroll_explicit ot 2 = 288");
  EXPECT_EQ(s.FindKnob("tile_y")->candidates,
            (Splits{{-1, 1, 1}, {-1, 2, 1}, {-1, 4, 1}, {-1, 1, 2}, {-1, 2, 2}, {-1, 1, 4}}));
  EXPECT_EQ(s.FindKnob("tile_y")->axis_length, 4);  // M
  EXPECT_EQ(s.FindKnob("tile_x")->candidates, (Splits{{-1, 1, 1}, {-1, 2, 1}, {-1, 1, 2}}));
  EXPECT_EQ(s.FindKnob("tile_x")->axis_length, 2);  // N
  EXPECT_EQ(s.FindKnob("tile_k")->candidates, (Splits{{-1, 1}, {-1, 3}}));
  EXPECT_EQ(s.FindKnob("auto_unroll_max_step")->candidates, (Splits{{8}, {16}, {32}, {64}}));
  EXPECT_EQ(s.FindKnob("unroll_explicit")->candidates, (Splits{{0}, {1}}));

  // 100 = 4 + 6 * (1 + 3 * (1 + 2 * (2 + 4 * 0))): digits 4, 1, 1, 2, 0.
  const autotvm::ConfigEntity e100 = Tile({-1, 2, 2}, {-1, 2, 1}, 3, 32);
  EXPECT_EQ(s.Get(100)->ToJson(), e100.ToJson());
  EXPECT_EQ(*s.IndexOf(e100), 100);
  autotvm::ConfigEntity last = Tile({-1, 1, 4}, {-1, 1, 2}, 3, 64);
  last.knobs.back().value = 1;
  EXPECT_EQ(s.Get(287)->ToJson(), last.ToJson());
  EXPECT_EQ(s.Get(0)->ToJson(), Tile({-1, 1, 1}, {-1, 1, 1}, 1, 8).ToJson());
  EXPECT_FALSE(s.Get(288).ok());

  // nvptx has one unroll_explicit candidate, [1]: the same entity, another index.
  autotvm::ConfigSpace nvptx = Space(w, "nvptx");
  EXPECT_EQ(nvptx.size(), 144);
  EXPECT_EQ(*nvptx.IndexOf(last), 143);  // 5 + 6 * (2 + 3 * (1 + 2 * 3))
}

// Every TopHub batch_matmul record's index decodes to its entity and back; three by hand.
TEST(BatchMatmulSpace, TopHubRecordsRoundTrip) {
  const std::vector<autotvm::LoadedRecord> records = TopHubRecords();
  ASSERT_EQ(records.size(), 18u);
  // index -> (position, list length) per knob, definition order.
  const std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> kByHand = {
      {50881, {{13, 36}, {9, 36}, {3, 6}, {2, 4}, {1, 2}}},   // [1,128,20] x [1,128,20]
      {108970, {{70, 396}, {5, 9}, {2, 4}, {3, 4}, {1, 2}}},  // [1,9216,133] x [1,133,133]
      {671, {{5, 6}, {3, 6}, {0, 6}, {3, 4}, {0, 2}}},        // [1,4,20] x [1,4,20]
  };
  int by_hand = 0;
  for (const autotvm::LoadedRecord& loaded : records) {
    const autotvm::Record& r = loaded.record;
    ASSERT_EQ(r.workload.task_name, "batch_matmul.cuda");
    absl::StatusOr<autotvm::ConfigSpace> s = BuildConfigSpace(r.workload, r.target);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<autotvm::ConfigEntity> e = s->Get(r.index);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->ToJson(), r.config.ToJson()) << "line " << loaded.line;
    EXPECT_EQ(*s->IndexOf(r.config), r.index) << "line " << loaded.line;
    EXPECT_EQ(CheckRecord(r).verdict, autotvm::RecordCheck::kConsistent) << "line " << loaded.line;
    if (auto it = kByHand.find(r.index); it != kByHand.end()) {
      ++by_hand;
      const std::vector<int64_t> digits = s->DigitsOf(r.index);
      for (size_t j = 0; j < digits.size(); ++j) {
        EXPECT_EQ(digits[j], it->second[j].first) << r.index << " knob " << j;
        EXPECT_EQ(static_cast<int64_t>(s->knobs()[j].candidates.size()), it->second[j].second)
            << r.index << " knob " << j;
      }
    }
  }
  EXPECT_EQ(by_hand, 3);
}

// TVM ran every TopHub record (error_no 0): each specializes for sm_90 and builds with NVRTC.
TEST(BatchMatmulSpace, TopHubRecordsSpecializeAndCompile) {
  OpPlan all;
  for (const autotvm::LoadedRecord& loaded : TopHubRecords()) {
    absl::StatusOr<OpPlan> plan =
        Op().Specialize(loaded.record.workload, loaded.record.config, kHopper, Epilogue{});
    ASSERT_TRUE(plan.ok()) << "line " << loaded.line << ": " << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u);
    if (loaded.record.index == 108970) {  // tile_y [-1, 16, 3], tile_x [-1, 19, 7], tile_k 19
      const PlannedKernel& k = plan->kernels[0];
      EXPECT_EQ(k.spec.source_file, "batch_matmul.cu");
      EXPECT_EQ(k.spec.name_expression,
                "tunejit::batch_matmul<tunejit::BatchMatmulTile<16, 3, 19, 7, 19, 64>, "
                "tunejit::BatchMatmulIo<0, 0>>");
      EXPECT_EQ(k.shape.grid[0], 1u);    // N 133 / 133
      EXPECT_EQ(k.shape.grid[1], 192u);  // M 9216 / 48
      EXPECT_EQ(k.shape.grid[2], 1u);
      EXPECT_EQ(k.shape.block[0], 19u);
      EXPECT_EQ(k.shape.block[1], 16u);
    }
    all.kernels.push_back(plan->kernels[0]);
  }
  ASSERT_EQ(all.kernels.size(), 18u);
  KernelCompiler compiler(nullptr);
  absl::StatusOr<std::vector<CompiledKernel>> compiled =
      CompilePlan(compiler, all, kSm90a, /*threads=*/1);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  for (const CompiledKernel& k : *compiled) {
    EXPECT_FALSE(k.program.cubin.empty());
    // Accumulators and operands stay in registers (no local arrays).
    EXPECT_FALSE(absl::StrContains(k.program.ptx, ".local")) << k.lowered_name;
  }
}

// TVM's cfg.is_fallback branch: the largest power of two dividing M (N) up to 64 per block, at
// most 8 threads along it, tile_k 8, auto_unroll_max_step 16.
TEST(BatchMatmulFallback, TvmsRule) {
  struct Case {
    autotvm::Workload workload;
    std::vector<int64_t> y, x;
  };
  const std::vector<Case> cases = {
      {Bmm(1, 1, 9216, 128, 128), {-1, 8, 8}, {-1, 8, 8}},
      {Bmm(1, 1, 33, 33, 20), {-1, 1, 1}, {-1, 1, 1}},
      {Bmm(12, 12, 20, 66, 64), {-1, 4, 1}, {-1, 2, 1}},
      {Bmm(4, 1, 384, 24, 7), {-1, 8, 8}, {-1, 8, 1}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<autotvm::ConfigEntity> f = Op().FallbackConfig(c.workload);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->ToJson(), Tile(c.y, c.x, 8, 16).ToJson()) << c.workload.args.dump();
    EXPECT_TRUE(Op().Specialize(c.workload, *f, kHopper, Epilogue{}).ok());
  }
  EXPECT_FALSE(Op().FallbackConfig(autotvm::Workload{"batch_matmul.cuda", Json::array()}).ok());
}

absl::Status Rejection(const autotvm::Workload& w, const autotvm::ConfigEntity& c) {
  return Op().Specialize(w, c, kHopper, Epilogue{}).status();
}

// VerifyGPUCode's limits (threads, shared memory), the grid's, and the accumulator limit.
TEST(BatchMatmulRules, InstantiationErrors) {
  const autotvm::Workload w = Bmm(1, 1, 256, 256, 256);
  EXPECT_THAT(Rejection(w, Tile({-1, 32, 1}, {-1, 64, 1}, 8)).message(),
              HasSubstr("invalid config: 2048 threads per block > max_threads_per_block 1024"));
  // (128 + 128) rows x 64 k x 4 bytes; 32 k fit.
  EXPECT_THAT(Rejection(w, Tile({-1, 8, 16}, {-1, 8, 16}, 64)).message(),
              HasSubstr("shared memory 65536 bytes > shared_bytes_per_block 49152"));
  EXPECT_TRUE(Rejection(w, Tile({-1, 8, 16}, {-1, 8, 16}, 32)).ok());
  EXPECT_THAT(Rejection(w, Tile({-1, 1, 16}, {-1, 1, 32}, 4)).message(),
              HasSubstr("512 accumulators per thread > 256"));
  EXPECT_THAT(Rejection(Bmm(70000, 1, 16, 16, 16), Tile({-1, 4, 4}, {-1, 4, 4}, 8)).message(),
              HasSubstr("grid dim z = 70000 outside [1, max_grid_dim 65535]"));
  EXPECT_EQ(
      Rejection(w, testing::Config({SplitKnob("tile_y", {-1, 8, 8}),
                                    SplitKnob("tile_x", {-1, 8, 8}), SplitKnob("tile_k", {-1, 8})}))
          .code(),
      absl::StatusCode::kNotFound);  // auto_unroll_max_step
  EXPECT_THAT(Rejection(w, Tile({-1, 8}, {-1, 8, 8}, 8)).message(), HasSubstr("has 2 sizes"));
  EXPECT_EQ(Rejection(autotvm::MakeBatchMatmulWorkload({.m = 4, .n = 4, .k = 4, .dtype = "int8"}),
                      Tile({-1, 4, 1}, {-1, 4, 1}, 4))
                .code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(
      Op().Specialize(w, Tile({-1, 8, 8}, {-1, 8, 8}, 8), kHopper, Epilogue{.residual = true})
          .ok());
}

// Launch shape and arguments: grid (N / BX, M / BY, B), block (TX, TY); x's batch stride M * K,
// y's 0 where its batch dim of 1 broadcasts; the epilogue's tensors as dense binds them.
TEST(BatchMatmulRules, LaunchAndArguments) {
  const autotvm::Workload w = Bmm(3, 1, 256, 96, 200);
  const Epilogue epilogue{.bias = true, .relu = true};
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile({-1, 8, 4}, {-1, 16, 2}, 20), kHopper, epilogue);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.shape.grid[0], 3u);  // 96 / 32
  EXPECT_EQ(k.shape.grid[1], 8u);  // 256 / 32
  EXPECT_EQ(k.shape.grid[2], 3u);
  EXPECT_EQ(k.shape.block[0], 16u);
  EXPECT_EQ(k.shape.block[1], 8u);
  EXPECT_EQ(k.shape.block[2], 1u);
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::batch_matmul<tunejit::BatchMatmulTile<8, 4, 16, 2, 20, 16>, "
            "tunejit::BatchMatmulIo<0, 3>>");
  ASSERT_EQ(k.args.size(), 10u);
  EXPECT_EQ(k.args[0].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k.args[1].index_or_int, 1);
  EXPECT_EQ(k.args[2].kind, KernelArg::Kind::kInput);  // bias
  EXPECT_EQ(k.args[2].index_or_int, 2);
  EXPECT_EQ(k.args[4].kind, KernelArg::Kind::kOutput);
  const std::vector<int64_t> want = {256, 96, 200, 256 * 200, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(k.args[5 + i].index_or_int, want[i]) << i;
  // The graph-layout variant differs only in the kernel's Io policy.
  absl::StatusOr<OpPlan> kn = SpecializeBatchMatmul(w, Tile({-1, 8, 4}, {-1, 16, 2}, 20), kHopper,
                                                    epilogue, MatmulYLayout::kKN);
  ASSERT_TRUE(kn.ok()) << kn.status();
  EXPECT_THAT(kn->kernels[0].spec.name_expression, HasSubstr("tunejit::BatchMatmulIo<1, 3>"));
  EXPECT_EQ(kn->kernels[0].shape.grid[1], 8u);
}

// A fixed-seed sample of valid configs builds with NVRTC for sm_90a in both y layouts and with
// every output kind; the tiles are read from shared memory and nothing spills to local arrays.
TEST(BatchMatmulCompile, SampledValidConfigs) {
  struct Case {
    autotvm::Workload workload;
    Epilogue epilogue;
  };
  const std::vector<Case> cases = {
      {Bmm(12, 12, 128, 128, 64), {}},
      {Bmm(1, 3, 100, 52, 37), {.bias = true, .relu = true}},
      {Bmm(2, 2, 96, 64, 768), {.bias = true, .output = Epilogue::Output::kInt8Requantize}},
  };
  KernelCompiler compiler(nullptr);
  for (const Case& c : cases) {
    const std::vector<autotvm::ConfigEntity> configs =
        testing::SampledValidConfigs(Op(), c.workload, kHopper, 2);
    ASSERT_EQ(configs.size(), 2u);
    for (const autotvm::ConfigEntity& config : configs) {
      for (MatmulYLayout layout : {MatmulYLayout::kNK, MatmulYLayout::kKN}) {
        absl::StatusOr<OpPlan> plan =
            SpecializeBatchMatmul(c.workload, config, kHopper, c.epilogue, layout);
        ASSERT_TRUE(plan.ok()) << config.ToString() << ": " << plan.status();
        const KernelSpec& spec = plan->kernels[0].spec;
        absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, kSm90a);
        ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
        EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "ld.shared.")) << spec.name_expression;
        EXPECT_FALSE(absl::StrContains(kernel->program.ptx, ".local")) << spec.name_expression;
      }
    }
  }
}

}  // namespace
}  // namespace tunejit

// `tunejit warm`: compiles a log's kernels into the cache with no GPU; a second run is all hits.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/tensor_corpus.h"
#include "tests/testing/test_data.h"

namespace tunejit::cli {
namespace {

using ::testing::HasSubstr;

class WarmCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tunejit-warm-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `tunejit warm ARGS --cache-dir <tmp>/cache`, returning the exit code and stdout.
  int Warm(std::vector<std::string> args, std::string* out) {
    args.push_back("--cache-dir=" + (dir_ / "cache").string());
    ::testing::internal::CaptureStdout();
    int code = RunWarmCommand(args);
    *out = ::testing::internal::GetCapturedStdout();
    return code;
  }

  std::filesystem::path dir_;
};

int CountEntries(const std::filesystem::path& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().extension() == ".tjk";
  return n;
}

TEST_F(WarmCommandTest, SeedLogColdThenWarm) {
  const std::string log = testing::RepoData("seed-vgg16-v100.log");
  std::string out;
  ASSERT_EQ(Warm({"--log", log, "--arch", "sm_90"}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("22 records"));
  EXPECT_THAT(out, HasSubstr("cache hits 0, failed 0, rejected records 0"));
  const int entries = CountEntries(dir_ / "cache");
  EXPECT_GT(entries, 20);  // every seed record has at least one kernel; winograd has several
  EXPECT_THAT(out, HasSubstr("compiled " + std::to_string(entries) + " "));

  ASSERT_EQ(Warm({"--log", log}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("compiled 0 (NVRTC 0.00 s), cache hits " + std::to_string(entries)));
  EXPECT_EQ(CountEntries(dir_ / "cache"), entries);
}

// TopHub cuda_v0.10's batch_matmul.cuda records (TVM 0.7's template): none rejected, one kernel
// each.
TEST_F(WarmCommandTest, TopHubBatchMatmulRecords) {
  const std::string log = testing::RepoTestData("autotvm/tophub_v0.10_batch_matmul.log");
  std::string out;
  ASSERT_EQ(Warm({"--log", log, "--arch", "sm_90", "--jobs", "1"}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("18 records"));
  EXPECT_THAT(out, HasSubstr("cache hits 0, failed 0, rejected records 0"));
  EXPECT_EQ(CountEntries(dir_ / "cache"), 18);
  EXPECT_THAT(out, HasSubstr("compiled 18 "));
}

TEST_F(WarmCommandTest, RejectedRecordsAreReportedWithReasons) {
  // dense_large_batch with tile_x[2] (4) != tile_y[2] (8): TVM's VerifyGPUCode rejects it.
  const std::string path = (dir_ / "bad.log").string();
  std::ofstream(path)
      << R"({"input": ["cuda", "dense_large_batch.cuda", [["TENSOR", [32, 64], "float32"], )"
         R"(["TENSOR", [64, 64], "float32"], null, "float32"], {}], "config": {"index": 0, )"
         R"("code_hash": null, "entity": [["tile_x", "sp", [-1, 1, 4, 1]], ["tile_y", "sp", )"
         R"([-1, 1, 8, 1]], ["tile_k", "sp", [-1, 8, 1]]]}, "result": [[0.001], 0, 1.0, 1.0], )"
         R"("version": 0.2, "tvm_version": "0.7.dev1"})"
      << "\n";
  std::string out;
  EXPECT_EQ(Warm({"--log", path}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("rejected records 1"));
  EXPECT_THAT(out, HasSubstr("bad.log:1 dense_large_batch.cuda"));
}

TEST_F(WarmCommandTest, BadUsageAndBadInput) {
  std::string out;
  EXPECT_EQ(Warm({}, &out), kExitUsage);  // no --log or --model
  EXPECT_EQ(Warm({"--log", testing::RepoData("seed-vgg16-v100.log"), "--arch", "sm_70"}, &out),
            kExitUsage);  // CUDA 13's NVRTC cannot build for the V100
  EXPECT_EQ(Warm({"--log", (dir_ / "missing.log").string()}, &out), kExitFailure);
  EXPECT_EQ(Warm({"--log", testing::RepoData("seed-vgg16-v100.log"), "--jobs", "x"}, &out),
            kExitUsage);
}

// --model FILE.onnx: the layers of a small conv net, each with the kernel `tunejit run` would use
// (no log: the fallback config), compiled for sm_90 without a GPU; a second run is all hits.
TEST_F(WarmCommandTest, OnnxModelListsAndCompilesItsLayers) {
  const std::string model = (dir_ / "net.onnx").string();
  std::ofstream(model, std::ios::binary) << testing::SmallConvNet().Bytes();
  std::string out;
  ASSERT_EQ(Warm({"--model", model, "--batch", "4", "--precision", "fp32"}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("batch 4, fp32: 2 tuned layers"));
  EXPECT_THAT(out, HasSubstr("conv1"));
  EXPECT_THAT(out, HasSubstr("fc"));
  EXPECT_THAT(out, HasSubstr("fallback"));
  // The kernels of the steps that are not tuned (pools, softmax...) are compiled too.
  EXPECT_THAT(out, ::testing::ContainsRegex("and [1-9][0-9]* untuned steps"));
  EXPECT_THAT(out, HasSubstr("failed 0"));
  const int entries = CountEntries(dir_ / "cache");
  EXPECT_GE(entries, 2);
  ASSERT_EQ(Warm({"--model", model, "--batch", "4", "--precision", "fp32"}, &out), kExitOk) << out;
  EXPECT_THAT(out, HasSubstr("compiled 0 (NVRTC 0.00 s), cache hits " + std::to_string(entries)));
  EXPECT_EQ(Warm({"--model", model}, &out), kExitFailure);  // dynamic batch, no --batch
  // --steps lists every step `tunejit run` would launch, in order, with its output and fusions.
  ASSERT_EQ(Warm({"--model", model, "--batch", "4", "--precision", "fp32", "--steps"}, &out),
            kExitOk)
      << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("warm: [1-9][0-9]* steps"));
  EXPECT_THAT(out, ::testing::ContainsRegex("0 conv2d +conv1 +-> F32 +\\[4x"));
  EXPECT_THAT(out, HasSubstr("fused bias"));
  EXPECT_EQ(Warm({"--log", testing::RepoData("seed-vgg16-v100.log"), "--steps"}, &out),
            kExitUsage);  // no model to lower
}

// A BERT layer (int64 token ids, embedding gather, attention, GELU MLP) at fp32 and fp16: every
// kernel compiles for sm_90 without a GPU.
TEST_F(WarmCommandTest, BertLayerCompilesForSm90) {
  const std::string model = (dir_ / "bert.onnx").string();
  std::ofstream(model, std::ios::binary) << testing::BertLayerModel().Bytes();
  for (const char* precision : {"fp32", "fp16"}) {
    std::string out;
    ASSERT_EQ(
        Warm({"--model", model, "--batch", "2", "--precision", precision, "--arch", "sm_90"}, &out),
        kExitOk)
        << out;
    EXPECT_THAT(out, HasSubstr("failed 0")) << precision;
    EXPECT_THAT(out, ::testing::ContainsRegex("and [1-9][0-9]* untuned steps")) << precision;
  }
}

// --plan makes a saved build plan through `tunejit run`'s build, which needs the GPU: without one
// it says so and exits 1, writing no plan; its usage errors come first.
TEST_F(WarmCommandTest, PlanIsMadeByRunsBuildOnTheGpu) {
  const std::string model = (dir_ / "net.onnx").string();
  std::ofstream(model, std::ios::binary) << testing::SmallConvNet().Bytes();
  const std::string plan = (dir_ / "net.plan").string();
  std::string out;
  EXPECT_EQ(Warm({"--plan", plan, "--model", model, "--no-cache"}, &out), kExitUsage);
  EXPECT_EQ(Warm({"--model", model, "--weights", (dir_ / "w.safetensors").string()}, &out),
            kExitUsage);
  if (GpuAvailable().ok()) GTEST_SKIP() << "a GPU is here: the plan would be made";
  EXPECT_EQ(Warm({"--plan", plan, "--model", model, "--batch", "4", "--precision", "fp16"}, &out),
            kExitFailure);
  EXPECT_THAT(out, HasSubstr("making the build plan " + plan + " with `tunejit run --plan"));
  EXPECT_THAT(out, HasSubstr("--batch 4"));
  EXPECT_FALSE(std::filesystem::exists(plan));
}

// The Hopper paths of VGG-16 with no GPU: every conv on the tensor-core templates (the RGB stem on
// the stem template) and the classifier on float16 wgmma, at fp16 and at int8 with --tensor-cores.
TEST_F(WarmCommandTest, Vgg16TensorCorePathsCompileForSm90) {
  std::string out;
  ASSERT_EQ(Warm({"--model", "vgg16", "--batch", "2", "--precision", "int8", "--tensor-cores",
                  "--jobs", "2"},
                 &out),
            kExitOk)
      << out;
  EXPECT_THAT(out, HasSubstr("batch 2, int8-tensor-cores: 16 tuned layers"));
  EXPECT_THAT(out, HasSubstr("features.0               conv2d_nchw_stem_mma.cuda"));
  EXPECT_THAT(out, HasSubstr("features.26              conv2d_nhwc_wgmma.cuda "));
  // The last conv of a block with its pool (conv2d_nhwc_wgmma_pool.cuda).
  EXPECT_THAT(out, HasSubstr("features.28              conv2d_nhwc_wgmma_pool.cuda"));
  EXPECT_THAT(out, HasSubstr("classifier.6             dense_wgmma.cuda"));
  EXPECT_THAT(out, HasSubstr("failed 0"));
  ASSERT_EQ(Warm({"--model", "vgg16", "--batch", "2", "--precision", "fp16", "--jobs", "2"}, &out),
            kExitOk)
      << out;
  EXPECT_THAT(out, HasSubstr("features.0               conv2d_nchw_stem_mma.cuda"));
  EXPECT_THAT(out, HasSubstr("classifier.0             dense_wgmma.cuda"));
  EXPECT_THAT(out, HasSubstr("failed 0"));
  // Only int8 has a dp4a path to leave.
  EXPECT_EQ(Warm({"--model", "vgg16", "--precision", "fp16", "--tensor-cores"}, &out), kExitUsage);
  EXPECT_EQ(Warm({"--tensor-cores", "--log", "x.log"}, &out), kExitUsage);
}

}  // namespace
}  // namespace tunejit::cli

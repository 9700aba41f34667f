// Target strings (keys as TVM computes them) and typed workload views.
#include <string>
#include <vector>

#include "autotvm/target.h"
#include "autotvm/workload.h"
#include "gtest/gtest.h"

namespace tunejit::autotvm {
namespace {

using Strings = std::vector<std::string>;

TEST(TargetTest, CudaAndNvptxKeys) {
  absl::StatusOr<Target> t = ParseTarget("cuda -model=v100");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "cuda");
  EXPECT_EQ(t->model, "v100");
  EXPECT_EQ(t->keys, (Strings{"cuda", "gpu"}));
  EXPECT_EQ(t->option_map.at("-model"), "v100");
  t = ParseTarget("nvptx");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->model, "unknown");
  EXPECT_EQ(t->keys, (Strings{"cuda", "gpu"}));
  t = ParseTarget("  cuda   -model=unknown  ");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "cuda");
  EXPECT_EQ(t->text, "  cuda   -model=unknown  ");  // kept verbatim for writing back
}

TEST(TargetTest, ExtraOptionsKeysDeviceLibs) {
  // TVM (target.cc @C0) pushes the -device value in option order and once more before the
  // target's own keys; -keys items go in option order.
  absl::StatusOr<Target> t = ParseTarget(
      "cuda -keys=tensorcore,fast -device=h200 -libs=cudnn,cublas -model=x -mcpu=sm_90");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->keys, (Strings{"tensorcore", "fast", "h200", "h200", "cuda", "gpu"}));
  EXPECT_EQ(t->libs, (Strings{"cudnn", "cublas"}));
  EXPECT_EQ(t->device, "h200");
  EXPECT_EQ(t->option_map.at("-mcpu"), "sm_90");
  EXPECT_EQ(t->options.size(), 5u);
  t = ParseTarget("llvm -device=arm_cpu");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->keys, (Strings{"arm_cpu", "arm_cpu", "cpu"}));
}

TEST(TargetTest, BadTargets) {
  EXPECT_FALSE(ParseTarget("").ok());
  EXPECT_FALSE(ParseTarget("   ").ok());
  EXPECT_FALSE(ParseTarget("-model=v100").ok());
  EXPECT_FALSE(ParseTarget("cuda model=v100").ok());
  EXPECT_FALSE(ParseTarget("cuda -model=").ok());
  EXPECT_FALSE(ParseTarget("cu{da").ok());
  EXPECT_FALSE(ParseTarget(std::string(10000, 'a')).ok());
}

Workload Conv(const std::string& task, Json args) { return Workload{task, std::move(args)}; }

TEST(WorkloadTest, Conv2dNchwSeed) {
  Json args = Json::parse(
      R"([["TENSOR", [128, 3, 224, 224], "float32"], ["TENSOR", [64, 3, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(Conv("conv2d_nchw.cuda", args));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->n, 128);
  EXPECT_EQ(p->co, 64);
  EXPECT_EQ(p->OutH(), 224);
  EXPECT_DOUBLE_EQ(p->Flops(), 2.0 * 128 * 64 * 224 * 224 * 3 * 3 * 3);
  Workload back = MakeConv2dWorkload("conv2d_nchw.cuda", *p);
  EXPECT_EQ(back.args, args);
  EXPECT_EQ(back, Conv("conv2d_nchw.cuda", args));
}

TEST(WorkloadTest, StridedDilatedOutputSize) {
  Json args = Json::parse(
      R"([["TENSOR", [1, 8, 15, 20], "float32"], ["TENSOR", [4, 8, 3, 5], "float32"], [2, 3], [1, 2], [2, 1], "float32"])");
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(Conv("conv2d_nchw.cuda", args));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->OutH(), (15 + 2 - 5) / 2 + 1);  // dilated KH = (3-1)*2+1 = 5
  EXPECT_EQ(p->OutW(), (20 + 4 - 5) / 3 + 1);
}

TEST(WorkloadTest, Nchw4cPackedInt8IsUnpacked) {
  Json args = Json::parse(
      R"([["TENSOR", [128, 128, 14, 14, 4], "int8"], ["TENSOR", [128, 128, 3, 3, 4, 4], "int8"], [1, 1], [1, 1, 1, 1], [1, 1], "NCHW4c", "int32"])");
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(Conv("conv2d_NCHWc_int8.cuda", args));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ci, 512);
  EXPECT_EQ(p->co, 512);
  EXPECT_EQ(p->kh, 3);
  EXPECT_EQ(p->layout, "NCHW4c");
  EXPECT_EQ(p->out_dtype, "int32");
  EXPECT_EQ(MakeConv2dWorkload("conv2d_NCHWc_int8.cuda", *p).args, args);
  // The plain NCHW form of the same conv gives the same numbers.
  Json plain = Json::parse(
      R"([["TENSOR", [128, 512, 14, 14], "int8"], ["TENSOR", [512, 512, 3, 3], "int8"], [1, 1], [1, 1, 1, 1], [1, 1], "NCHW", "int32"])");
  absl::StatusOr<Conv2dParams> q = ParseConv2dWorkload(Conv("conv2d_NCHWc_int8.cuda", plain));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->Flops(), p->Flops());
  // Layout and rank must agree; channels must be multiples of 4.
  Json bad = plain;
  bad[5] = "NCHW4c";
  EXPECT_FALSE(ParseConv2dWorkload(Conv("conv2d_NCHWc_int8.cuda", bad)).ok());
}

TEST(WorkloadTest, DepthwiseAndPretransformedWinograd) {
  Json dw = Json::parse(
      R"([["TENSOR", [1, 32, 112, 112], "float32"], ["TENSOR", [32, 2, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(Conv("depthwise_conv2d_nchw.cuda", dw));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->co, 64);
  EXPECT_EQ(p->groups, 32);
  EXPECT_DOUBLE_EQ(p->Flops(), 2.0 * 64 * 112 * 112 * 9);
  EXPECT_EQ(MakeConv2dWorkload("depthwise_conv2d_nchw.cuda", *p).args, dw);
  Json pre = Json::parse(
      R"([["TENSOR", [1, 64, 56, 56], "float32"], ["TENSOR", [6, 6, 64, 128], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  p = ParseConv2dWorkload(Conv("conv2d_nchw_winograd_without_weight_transform.cuda", pre));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kh, 3);  // H % 8 == 0 -> m = 4, alpha = 6
  EXPECT_EQ(p->co, 128);
}

TEST(WorkloadTest, Dense) {
  Json args = Json::parse(
      R"([["TENSOR", [128, 4096], "float32"], ["TENSOR", [1000, 4096], "float32"], null, "float32"])");
  absl::StatusOr<DenseParams> p = ParseDenseWorkload(Workload{"dense_small_batch.cuda", args});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->m, 128);
  EXPECT_EQ(p->n, 1000);
  EXPECT_EQ(p->k, 4096);
  EXPECT_DOUBLE_EQ(p->Flops(), 2.0 * 128 * 1000 * 4096);
  EXPECT_EQ(MakeDenseWorkload("dense_small_batch.cuda", *p).args, args);
  Json mismatched = args;
  mismatched[1][1] = Json::array({1000, 4095});
  EXPECT_FALSE(ParseDenseWorkload(Workload{"dense_small_batch.cuda", mismatched}).ok());
  EXPECT_FALSE(ParseDenseWorkload(Workload{"conv2d_nchw.cuda", args}).ok());
}

// TopHub cuda_v0.10's batch_matmul.cuda arguments: x [B, M, K], y [B, N, K] and nothing else
// (TVM 0.7's compute has no out_shape / out_dtype).
TEST(WorkloadTest, BatchMatmul) {
  Json args = Json::parse(
      R"([["TENSOR", [1, 9216, 133], "float32"], ["TENSOR", [1, 133, 133], "float32"]])");
  absl::StatusOr<BatchMatmulParams> p = ParseBatchMatmulWorkload(Workload{kBatchMatmul, args});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->batch(), 1);
  EXPECT_EQ(p->m, 9216);
  EXPECT_EQ(p->n, 133);
  EXPECT_EQ(p->k, 133);
  EXPECT_EQ(p->dtype, "float32");
  EXPECT_DOUBLE_EQ(p->Flops(), 2.0 * 9216 * 133 * 133);
  EXPECT_EQ(MakeBatchMatmulWorkload(*p).args, args);
  EXPECT_EQ(MakeBatchMatmulWorkload(*p).task_name, "batch_matmul.cuda");

  // A batch dim of 1 broadcasts against the other.
  args[0][1] = Json::array({1, 64, 20});
  args[1][1] = Json::array({12, 32, 20});
  p = ParseBatchMatmulWorkload(Workload{kBatchMatmul, args});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->x_batch, 1);
  EXPECT_EQ(p->y_batch, 12);
  EXPECT_EQ(p->batch(), 12);
  EXPECT_DOUBLE_EQ(p->Flops(), 2.0 * 12 * 64 * 32 * 20);

  auto ok = [](const char* json) {
    return ParseBatchMatmulWorkload(Workload{kBatchMatmul, Json::parse(json)}).ok();
  };
  EXPECT_FALSE(ok(R"([["TENSOR", [2, 4, 5], "float32"], ["TENSOR", [3, 6, 5], "float32"]])"));
  EXPECT_FALSE(ok(R"([["TENSOR", [2, 4, 5], "float32"], ["TENSOR", [2, 6, 4], "float32"]])"));
  EXPECT_FALSE(ok(R"([["TENSOR", [2, 4, 5], "float32"], ["TENSOR", [2, 6, 5], "float16"]])"));
  EXPECT_FALSE(ok(R"([["TENSOR", [4, 5], "float32"], ["TENSOR", [6, 5], "float32"]])"));
  EXPECT_FALSE(ok(
      R"([["TENSOR", [2, 4, 5], "float32"], ["TENSOR", [2, 6, 5], "float32"], [2, 4, 6], "float32"])"));
  EXPECT_TRUE(ok(R"([["TENSOR", [2, 4, 5], "float32"], ["TENSOR", [1, 6, 5], "float32"]])"));
  EXPECT_FALSE(ParseBatchMatmulWorkload(Workload{"dense_small_batch.cuda", args}).ok());
}

TEST(WorkloadTest, BadConvArguments) {
  auto bad = [](const char* json) {
    return ParseConv2dWorkload(Workload{"conv2d_nchw.cuda", Json::parse(json)}).ok();
  };
  const char* kData = R"(["TENSOR", [1, 3, 8, 8], "float32"], ["TENSOR", [4, 3, 3, 3], "float32"])";
  EXPECT_TRUE(bad((std::string("[") + kData + R"(, [1, 1], [1, 1], [1, 1], "float32"])").c_str()));
  EXPECT_FALSE(bad((std::string("[") + kData + R"(, [0, 1], [1, 1], [1, 1], "float32"])").c_str()));
  EXPECT_FALSE(
      bad((std::string("[") + kData + R"(, [1, 1], [-1, 1], [1, 1], "float32"])").c_str()));
  EXPECT_FALSE(
      bad((std::string("[") + kData + R"(, [1, 1], [1, 1, 1], [1, 1], "float32"])").c_str()));
  EXPECT_FALSE(bad((std::string("[") + kData + R"(, [1, 1], [1, 1], [1, 1]])").c_str()));
  EXPECT_FALSE(bad((std::string("[") + kData + R"(, [1, 1], [0, 0], [9, 9], "float32"])").c_str()));
  EXPECT_FALSE(bad(
      R"([["TENSOR", [1, 3, 8, 8], "float32"], ["TENSOR", [4, 5, 3, 3], "float32"], 1, 1, 1, "float32"])"));
  EXPECT_FALSE(bad(R"([["TENSOR", [1, 3, 8], "float32"]])"));
  EXPECT_FALSE(bad("[]"));
}

}  // namespace
}  // namespace tunejit::autotvm

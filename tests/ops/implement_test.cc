// What the op templates implement (OpTemplate::Implement, OffersFor): Relay's CUDA strategy for
// TVM's task names (which implementations a conv or dense has at float32 and int8, and their
// priorities), the tensor-core templates' limits, and the choice among the offers with the seed
// log's records.
#include <string>
#include <vector>

#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "autotvm/target.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"
#include "tests/testing/offers.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

using autotvm::Conv2dParams;
using autotvm::DenseParams;
using autotvm::Implementation;
using autotvm::Json;
using ::tunejit::testing::Implementations;

autotvm::LogContents Seed() {
  autotvm::LogContents log;
  EXPECT_TRUE(
      autotvm::LoadLogFile(::tunejit::testing::RepoData("seed-vgg16-v100.log"), {}, &log).ok());
  return log;
}

OpRequest Conv(const Conv2dParams& p, NumericMode mode, bool pooled = false) {
  OpRequest r;
  r.op = pooled ? OpRequest::Op::kConv2dMaxPool : OpRequest::Op::kConv2d;
  r.mode = mode;
  r.conv = p;
  return r;
}

OpRequest Dense(const DenseParams& p, NumericMode mode, bool half_output = false) {
  OpRequest r;
  r.op = OpRequest::Op::kDense;
  r.mode = mode;
  r.dense = p;
  r.half_output = half_output;
  return r;
}

std::vector<std::string> TaskNames(const OpRequest& request) {
  std::vector<std::string> names;
  for (const OpOffer& offer : OffersFor(request)) {
    names.push_back(offer.implementation.workload.task_name);
  }
  return names;
}

Conv2dParams Conv3x3(int64_t n, int64_t ci, int64_t hw, int64_t co) {
  Conv2dParams p;
  p.n = n, p.ci = ci, p.h = p.w = hw, p.co = co, p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  return p;
}

// Relay's CUDA batch_matmul strategy: batch_matmul.cuda alone (cuBLAS aside), plevel 10, on the
// float32 operands; a batch beyond the grid's z limit has no implementation.
TEST(ImplementTest, BatchMatmulOffer) {
  OpRequest r;
  r.op = OpRequest::Op::kBatchMatMul;
  r.batch_matmul.x_batch = 12;
  r.batch_matmul.y_batch = 1;
  r.batch_matmul.m = 128;
  r.batch_matmul.n = 64;
  r.batch_matmul.k = 768;
  const std::vector<Implementation> impls = Implementations(r);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].priority, 10);
  EXPECT_EQ(impls[0].workload.task_name, "batch_matmul.cuda");
  EXPECT_EQ(impls[0].workload.args,
            Json::parse(
                R"([["TENSOR", [12, 128, 768], "float32"], ["TENSOR", [1, 64, 768], "float32"]])"));
  r.mode = NumericMode::kFp16TensorCores;
  EXPECT_TRUE(OffersFor(r).empty());
  r.mode = NumericMode::kFp32;
  r.batch_matmul.x_batch = 70000;
  EXPECT_TRUE(OffersFor(r).empty());
  // A dense request is not a batch matmul's, and the other way round.
  r.op = OpRequest::Op::kDense;
  r.dense = {.m = 128, .n = 64, .k = 768};
  EXPECT_EQ(TaskNames(r),
            (std::vector<std::string>{"dense_small_batch.cuda", "dense_large_batch.cuda"}));
}

TEST(ImplementTest, RelaysFloatAndInt8Strategies) {
  Conv2dParams conv = Conv3x3(1, 8, 8, 8);
  EXPECT_EQ(TaskNames(Conv(conv, NumericMode::kFp32)),
            (std::vector<std::string>{"conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda"}));
  EXPECT_EQ(TaskNames(Conv(conv, NumericMode::kInt8Dp4a)),
            (std::vector<std::string>{"conv2d_NCHWc_int8.cuda", "conv2d_nchw_winograd.cuda"}));
  const std::vector<Implementation> int8 = Implementations(Conv(conv, NumericMode::kInt8Dp4a));
  EXPECT_EQ(int8[0].priority, 10);
  EXPECT_EQ(int8[1].priority, 5);
  EXPECT_EQ(int8[0].workload.args[0][2], "int8");
  EXPECT_EQ(int8[1].workload.args.back(), "int32");
  // 1x1 or strided convs get no winograd implementation.
  Conv2dParams q = conv;
  q.kh = q.kw = 1;
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp32)).size(), 1u);
  q = conv;
  q.stride_h = 2;
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp32)).size(), 1u);
  // A depthwise conv has the depthwise template alone.
  q = conv;
  q.groups = q.ci;
  q.co = q.ci;
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp32)),
            (std::vector<std::string>{"depthwise_conv2d_nchw.cuda"}));
  // Dense: small batch (10), and large batch (15) from 32 rows.
  DenseParams dense{64, 10, 32};
  const std::vector<Implementation> d = Implementations(Dense(dense, NumericMode::kFp32));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].workload.task_name, "dense_small_batch.cuda");
  EXPECT_EQ(d[1].priority, 15);
  dense.m = 8;
  EXPECT_EQ(TaskNames(Dense(dense, NumericMode::kFp32)),
            (std::vector<std::string>{"dense_small_batch.cuda"}));
  // No template offers a float dense at int8 (relay.quantize keeps dense float).
  EXPECT_TRUE(OffersFor(Dense(dense, NumericMode::kInt8Dp4a)).empty());
}

TEST(ImplementTest, SeedRecordsChooseAmongTheOffers) {
  autotvm::HistoryBest best;
  best.AddAll(Seed());
  const autotvm::Target target = *autotvm::ParseTarget("cuda -model=v100");
  // int8 conv [128,512,14,14]: NCHWc_int8 2.70 ms beats winograd 4.75 ms.
  Conv2dParams conv = Conv3x3(128, 512, 14, 512);
  autotvm::OpChoice c = autotvm::ChooseImplementation(
      best, target, Implementations(Conv(conv, NumericMode::kInt8Dp4a)));
  ASSERT_EQ(c.per_implementation.size(), 2u);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.per_implementation[0].best->record.workload.task_name, "conv2d_NCHWc_int8.cuda");
  EXPECT_EQ(c.per_implementation[1].best->record.index, 3764134);
  // [128,128,56,56] x [256,128]: only a winograd record exists, so winograd wins over the
  // higher-priority NCHWc_int8 implementation.
  conv = Conv3x3(128, 128, 56, 256);
  c = autotvm::ChooseImplementation(best, target,
                                    Implementations(Conv(conv, NumericMode::kInt8Dp4a)));
  EXPECT_EQ(c.chosen, 1);
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.reasons[0], "conv2d_NCHWc_int8.cuda: skipped: no record");
  // fp32 [128,3,224,224]: direct 2.44 ms beats winograd 13.8 ms.
  conv = Conv3x3(128, 3, 224, 64);
  c = autotvm::ChooseImplementation(best, target, Implementations(Conv(conv, NumericMode::kFp32)));
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.per_implementation[0].best->record.index, 199135959);
}

// The tensor-core conv only where the template can run (C a whole 16 bytes, groups 1, stride 1),
// with NHWC / OHWI workloads; the stem template (rank 1) where it cannot and the patch is short.
TEST(ImplementTest, TensorCoreConvNeedsAlignedChannelsTmaStridesAndNoGroups) {
  Conv2dParams p;
  p.n = 2, p.ci = 64, p.h = 14, p.w = 14, p.co = 72, p.kh = 3, p.kw = 3;
  std::vector<OpOffer> offers = OffersFor(Conv(p, NumericMode::kFp16TensorCores));
  ASSERT_EQ(offers.size(), 1u);
  const autotvm::Workload& w = offers[0].implementation.workload;
  EXPECT_EQ(w.task_name, autotvm::kConv2dNhwcWgmma);
  EXPECT_EQ(w.args[0][1], Json::array({2, 14, 14, 64}));  // NHWC
  EXPECT_EQ(w.args[1][1], Json::array({72, 3, 3, 64}));   // OHWI
  EXPECT_EQ(w.args[0][2], "float16");
  EXPECT_EQ(w.args.back(), "float32");  // half_output false: the logits' float32
  EXPECT_TRUE(offers[0].forms.nhwc);
  EXPECT_FALSE(offers[0].forms.float_nchw_data);
  absl::StatusOr<Conv2dParams> back = autotvm::ParseConv2dWorkload(w);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout, "NHWC");
  EXPECT_EQ(back->ci, 64);

  OpRequest half = Conv(p, NumericMode::kFp16TensorCores);
  half.half_output = true;
  EXPECT_EQ(Implementations(half)[0].workload.args.back(), "float16");
  Conv2dParams q = p;
  q.ci = 12;  // 24 bytes: not a whole 16, and a patch of 108 is too long for the stem
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  q = p;
  q.stride_h = q.stride_w = 2;  // TMA steps the loads over the input's pixels
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp16TensorCores)),
            std::vector<std::string>{autotvm::kConv2dNhwcWgmma});
  q.stride_h = q.stride_w = 9;  // past TMA's largest element stride
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  q = p;
  q.groups = 2;
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  EXPECT_TRUE(OffersFor(Conv(p, NumericMode::kFp32)).size() == 2u);  // TVM's, not wgmma
  q = p;
  q.ci = 72;  // a whole 16 bytes of halves, not of int8
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp16TensorCores)).size(), 1u);
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kInt8TensorCores)).empty());
  const std::vector<Implementation> int8 = Implementations(Conv(p, NumericMode::kInt8TensorCores));
  ASSERT_EQ(int8.size(), 1u);
  EXPECT_EQ(int8[0].workload.args[0][2], "int8");
  EXPECT_EQ(int8[0].workload.args.back(), "int32");
  // With a pool after it: the pooled task, which needs an output window.
  EXPECT_EQ(TaskNames(Conv(p, NumericMode::kFp16TensorCores, /*pooled=*/true)),
            (std::vector<std::string>{autotvm::kConv2dNhwcWgmmaPool}));
  q = p;
  q.h = q.w = 1;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 1;
  q.kh = q.kw = 3;  // a 1x1 output
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores, /*pooled=*/true)).empty());
}

// VGG-16's RGB stem: too few channels for wgmma, so the stem template (rank 1) takes it at fp16,
// reading the float32 NCHW data; not at int8 or fp32, and not past its patch or channel limits.
TEST(ImplementTest, StemTakesNarrowConvsTheTensorCoreConvCannot) {
  Conv2dParams p = Conv3x3(128, 3, 224, 64);
  std::vector<OpOffer> offers = OffersFor(Conv(p, NumericMode::kFp16TensorCores));
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].implementation.workload.task_name, autotvm::kConv2dNchwStemMma);
  EXPECT_EQ(offers[0].rank, 1);
  EXPECT_TRUE(offers[0].forms.nhwc && offers[0].forms.float_nchw_data);
  EXPECT_EQ(offers[0].implementation.workload.args[0][2], "float32");
  EXPECT_TRUE(OffersFor(Conv(p, NumericMode::kInt8TensorCores)).empty());
  Conv2dParams q = p;
  q.co = 72;  // not a multiple of 16
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  q = p;
  q.co = 144;  // over 128 channels
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  q = p;
  q.ci = 8;  // 8 halves are a whole 16 bytes: the wgmma conv (rank 0) takes it
  EXPECT_EQ(TaskNames(Conv(q, NumericMode::kFp16TensorCores)),
            (std::vector<std::string>{autotvm::kConv2dNhwcWgmma}));
}

// ViT's patch embedding (16x16 patches at stride 16 into 768 channels): past the stem's limits,
// the patchify template (rank 1) takes it at fp16, reading the float32 NCHW data; only where the
// kernel is the stride and nothing is padded; not at int8 or fp32.
TEST(ImplementTest, PatchifyTakesPatchEmbeddingsPastTheStem) {
  Conv2dParams p = Conv3x3(32, 3, 224, 768);
  p.kh = p.kw = p.stride_h = p.stride_w = 16;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 0;
  std::vector<OpOffer> offers = OffersFor(Conv(p, NumericMode::kFp16TensorCores));
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].implementation.workload.task_name, autotvm::kConv2dNchwPatchifyWgmma);
  EXPECT_EQ(offers[0].rank, 1);
  EXPECT_TRUE(offers[0].forms.nhwc && offers[0].forms.float_nchw_data);
  EXPECT_EQ(offers[0].implementation.workload.args[0][2], "float32");
  EXPECT_TRUE(OffersFor(Conv(p, NumericMode::kInt8TensorCores)).empty());
  EXPECT_EQ(TaskNames(Conv(p, NumericMode::kFp32)),
            std::vector<std::string>{"conv2d_nchw.cuda"});  // TVM's, as before
  Conv2dParams q = p;
  q.stride_h = q.stride_w = 8;  // overlapping patches: not a GEMM of the input's pixels
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
  q = p;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 1;
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
}

// A depthwise conv of multiplier 1 at fp16 takes the NHWC depthwise template alone, on the
// network's float16 NHWC activations (the int8 network's come down its ladder to fp16); at fp32
// TVM's NCHW template, as before.
TEST(ImplementTest, DepthwiseTakesTheNhwcTemplateAtFp16) {
  Conv2dParams p = Conv3x3(32, 144, 56, 144);
  p.groups = 144;
  std::vector<OpOffer> offers = OffersFor(Conv(p, NumericMode::kFp16TensorCores));
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].implementation.workload.task_name, autotvm::kDepthwiseConv2dNhwc);
  EXPECT_EQ(offers[0].rank, 0);
  EXPECT_TRUE(offers[0].forms.nhwc);
  EXPECT_FALSE(offers[0].forms.float_nchw_data);
  EXPECT_EQ(offers[0].implementation.workload.args[0][1], Json::array({32, 56, 56, 144}));
  EXPECT_EQ(offers[0].implementation.workload.args[1][1], Json::array({144, 3, 3, 1}));
  EXPECT_TRUE(OffersFor(Conv(p, NumericMode::kInt8TensorCores)).empty());
  EXPECT_EQ(TaskNames(Conv(p, NumericMode::kFp32)),
            (std::vector<std::string>{"depthwise_conv2d_nchw.cuda"}));
  Conv2dParams q = p;
  q.co = 288;  // a channel multiplier of 2: TVM's NCHW template at fp32 only
  EXPECT_TRUE(OffersFor(Conv(q, NumericMode::kFp16TensorCores)).empty());
}

TEST(ImplementTest, TensorCoreDenseNeedsKAWhole16BytesAndIsFloat16) {
  DenseParams d{128, 1000, 4096};
  std::vector<Implementation> impls = Implementations(Dense(d, NumericMode::kFp16TensorCores));
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].workload.task_name, "dense_wgmma.cuda");
  EXPECT_EQ(impls[0].workload.args[0][2], "float16");
  EXPECT_EQ(Implementations(Dense(d, NumericMode::kFp16TensorCores, true))[0].workload.args.back(),
            "float16");
  d.k = 4100;
  EXPECT_TRUE(OffersFor(Dense(d, NumericMode::kFp16TensorCores)).empty());
  d.k = 4096;
  // int8 networks on the tensor cores run their dense layers at kFp16TensorCores.
  EXPECT_TRUE(OffersFor(Dense(d, NumericMode::kInt8TensorCores)).empty());
}

}  // namespace
}  // namespace tunejit

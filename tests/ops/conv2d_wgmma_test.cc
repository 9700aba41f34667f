// CPU: conv2d_nhwc_wgmma.cuda's workload (NHWC data, OHWI kernel), its own rules (strides TMA
// steps, C % 8, dtypes) and the shared wgmma ones as this template reaches them, the plan (grid,
// TMA maps, runtime geometry), the knob space, and NVRTC sm_90a builds of sampled valid configs
// with wgmma and 4-D TMA loads in the PTX. The GPU test is conv2d_wgmma_gpu_test.cc.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/config_space.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

using testing::Config;
using ::testing::HasSubstr;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

// data [n, h, w, c], kernel [co, k, k, c], stride, symmetric pad, dilation.
autotvm::Workload ConvWorkload(int64_t n, int64_t h, int64_t w, int64_t c, int64_t co, int64_t k,
                               int pad = 1, int stride = 1, int dilation = 1,
                               const std::string& out = "float32",
                               const std::string& in = "float16") {
  return autotvm::Workload{autotvm::kConv2dNhwcWgmma,
                           autotvm::Json::array({testing::Tensor({n, h, w, c}, in),
                                                 testing::Tensor({co, k, k, c}, in),
                                                 {stride, stride},
                                                 {pad, pad, pad, pad},
                                                 {dilation, dilation},
                                                 out})};
}

autotvm::ConfigEntity Tile(int64_t th, int64_t tw, int64_t bn, int64_t stages, int64_t cwg,
                           int64_t pingpong = 0, int64_t im2col = 0, int64_t cluster = 1,
                           int64_t halo = 0, int64_t swap_ab = 0, int64_t tile_b = 1) {
  return Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("tile_n", bn),
                 OtherKnob("stages", stages), OtherKnob("consumer_wg", cwg),
                 OtherKnob("pingpong", pingpong), OtherKnob("im2col", im2col),
                 OtherKnob("cluster", cluster), OtherKnob("halo", halo),
                 OtherKnob("swap_ab", swap_ab), OtherKnob("tile_b", tile_b)});
}

const OpTemplate& Op() { return *FindOpTemplate(autotvm::kConv2dNhwcWgmma); }

constexpr Epilogue kBiasRelu{.bias = true, .relu = true};

TEST(Conv2dWgmmaWorkload, ParsesNhwcAndRoundTrips) {
  const autotvm::Workload w = ConvWorkload(128, 56, 56, 256, 512, 3);
  absl::StatusOr<autotvm::Conv2dParams> p = autotvm::ParseConv2dWorkload(w);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout, "NHWC");
  EXPECT_EQ(p->n, 128);
  EXPECT_EQ(p->h, 56);
  EXPECT_EQ(p->w, 56);
  EXPECT_EQ(p->ci, 256);
  EXPECT_EQ(p->co, 512);
  EXPECT_EQ(p->kh, 3);
  EXPECT_EQ(p->OutH(), 56);
  EXPECT_EQ(autotvm::MakeConv2dWorkload(w.task_name, *p).Key(), w.Key());
  autotvm::Workload bad = w;
  bad.args[1] = testing::Tensor({512, 3, 3, 128}, "float16");  // CI mismatch
  EXPECT_FALSE(autotvm::ParseConv2dWorkload(bad).ok());
}

TEST(Conv2dWgmma, GoodConfigPlansTheKernelMapsAndGeometry) {
  // 20 x 20 output (tails of an 8 x 16 tile), C = 72 (a 64-channel tile and a tail), CO = 136.
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(ConvWorkload(2, 20, 20, 72, 136, 3), Tile(8, 16, 128, 4, 2), kHopper,
                      Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.source_file, "conv2d_wgmma.cu");
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  EXPECT_TRUE(k.spec.arch_specific);
  // Persistent: one block per output tile up to one per SM; here 2 images x ceil(20 / 8) x
  // ceil(20 / 16) pixel tiles x ceil(136 / 128) channel tiles = 24 < 132 SMs.
  EXPECT_EQ(k.shape.grid[0], 2u * 3 * 2 * 2);
  EXPECT_EQ(k.shape.grid[1], 1u);
  EXPECT_EQ(k.shape.block[0], 384u);
  EXPECT_EQ(k.shape.shared_bytes, 4u * (128 + 128) * 64 * 2 + 5 * 16 + 1024);
  ASSERT_EQ(k.args.size(), 6u + 16u);  // x_map, w_map, bias, scale, out, residual, geometry
  EXPECT_EQ(k.args[0].kind, KernelArg::Kind::kTensorMap);
  EXPECT_EQ(k.args[1].kind, KernelArg::Kind::kTensorMap);
  std::vector<int64_t> geometry;
  for (size_t i = 6; i < k.args.size(); ++i) geometry.push_back(k.args[i].index_or_int);
  // C, CO, OH, OW, KW, taps, pad top/left, stride h/w, dilation h/w, tiles along h/w, pixel
  // tiles in all, output pixels in all.
  EXPECT_EQ(geometry,
            (std::vector<int64_t>{72, 136, 20, 20, 3, 9, 1, 1, 1, 1, 1, 1, 3, 2, 12, 800}));
  EXPECT_EQ(k.args[5].kind, KernelArg::Kind::kInt64);  // no residual: a null pointer
  ASSERT_EQ(plan->tensor_maps.size(), 2u);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "f16 [72, 20, 20, 2] box [64, 16, 8, 1] swizzle 128B");
  EXPECT_EQ(plan->tensor_maps[0].desc.strides_bytes[0], 72u * 2);       // a pixel
  EXPECT_EQ(plan->tensor_maps[0].desc.strides_bytes[1], 72u * 20 * 2);  // an image row
  EXPECT_EQ(TensorMapText(plan->tensor_maps[1].desc),
            "f16 [72, 9, 136] box [64, 1, 128] swizzle 128B");
  for (const PlannedTensorMap& m : plan->tensor_maps) {
    EXPECT_TRUE(CheckTensorMap(m.desc, 0x10000).ok()) << TensorMapText(m.desc);
  }
}

TEST(Conv2dWgmma, FallbackIsValidForEveryVggConvButTheFirst) {
  const std::vector<std::vector<int64_t>> layers = {// h, c, co
                                                    {224, 64, 64},  {112, 64, 128}, {112, 128, 128},
                                                    {56, 128, 256}, {56, 256, 256}, {28, 256, 512},
                                                    {28, 512, 512}, {14, 512, 512}};
  for (const auto& l : layers) {
    const autotvm::Workload w = ConvWorkload(128, l[0], l[0], l[1], l[2], 3);
    absl::StatusOr<autotvm::ConfigEntity> c = Op().FallbackConfig(w);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(Op().Specialize(w, *c, kHopper, Epilogue{.bias = true, .relu = true}).ok())
        << w.Key();
  }
  // The first conv (C = 3) is not this template's: TMA needs 16-byte pixel strides.
  absl::Status first = Op().CanImplement(ConvWorkload(128, 224, 224, 3, 64, 3));
  EXPECT_EQ(first.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(first.message()), HasSubstr("C = 3 is not a multiple of 8"));
}

TEST(Conv2dWgmma, WorkloadRules) {
  EXPECT_TRUE(Op().CanImplement(ConvWorkload(1, 16, 16, 64, 64, 3, 1, /*stride=*/2)).ok());
  EXPECT_TRUE(Op().CanImplement(ConvWorkload(1, 16, 16, 64, 64, 1, 0, /*stride=*/8)).ok());
  absl::Status s = Op().CanImplement(ConvWorkload(1, 32, 32, 64, 64, 3, 1, /*stride=*/9));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("stride 9x9 (TMA steps 1 to 8 pixels)"));
  EXPECT_THAT(std::string(Op().CanImplement(
                                  ConvWorkload(1, 16, 16, 64, 64, 3, 1, 1, 1, "float32", "float32"))
                              .message()),
              HasSubstr("only float16 x float16 -> float32 or float16, and int8 x int8 -> int32 "
                        "(got float32 x float32 -> float32)"));
  EXPECT_TRUE(Op().CanImplement(ConvWorkload(1, 16, 16, 8, 8, 1, 0)).ok());          // 1x1, no pad
  EXPECT_TRUE(Op().CanImplement(ConvWorkload(1, 16, 16, 64, 64, 3, 2, 1, 2)).ok());  // dilated
  const autotvm::Workload w = ConvWorkload(1, 16, 16, 64, 64, 3, 1, 1, 1, "float16");
  EXPECT_FALSE(Op().Specialize(w, Tile(8, 16, 64, 2, 2), kHopper,
                               Epilogue{.output = Epilogue::Output::kFloat32})
                   .ok());  // a scaled float32 epilogue into fp16
  // int8 on the tensor cores' float16 stem: float32 accumulators requantized to int8 (kEpi 8),
  // which replaces the workload's float16 or float32 output (kOutF16 0).
  for (const std::string out : {"float16", "float32"}) {
    const absl::StatusOr<OpPlan> fp16_to_int8 =
        Op().Specialize(ConvWorkload(1, 16, 16, 64, 64, 3, 1, 1, 1, out), Tile(8, 16, 64, 2, 2),
                        kHopper, Epilogue{.output = Epilogue::Output::kInt8Requantize});
    ASSERT_TRUE(fp16_to_int8.ok()) << out << ": " << fp16_to_int8.status();
    EXPECT_EQ(fp16_to_int8->kernels[0].spec.name_expression,
              "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 64, 0>, "
              "tunejit::ConvPipelinePolicy<2, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
              "tunejit::ConvOutputPolicy<0, "
              "tunejit::Epi<false, false, tunejit::EpiOut::kInt8>, 0, 0>>");
  }
}

// Channels within 64 bytes (int8 C = 64, the fp16 stem's 32 patch values): 64-byte rows with
// 64-byte swizzle, so a stage holds two taps instead of one tap and 64 zero bytes.
TEST(Conv2dWgmma, NarrowChannelsUse64ByteRows) {
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  absl::StatusOr<OpPlan> int8 =
      Op().Specialize(ConvWorkload(2, 56, 56, 64, 128, 3, 1, 1, 1, "int32", "int8"),
                      Tile(8, 16, 128, 4, 2), kHopper, requantize);
  ASSERT_TRUE(int8.ok()) << int8.status();
  EXPECT_EQ(int8->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<64, 0, 0>, "
            "tunejit::ConvOutputPolicy<1, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kInt8>, 0, 0>>");
  EXPECT_EQ(TensorMapText(int8->tensor_maps[0].desc),
            "i8 [64, 56, 56, 2] box [64, 16, 8, 1] swizzle 64B");
  EXPECT_EQ(TensorMapText(int8->tensor_maps[1].desc),
            "i8 [64, 9, 128] box [64, 1, 128] swizzle 64B");
  // The shared memory is the same: a stage is still 128 bytes of K (two 64-byte taps).
  EXPECT_EQ(int8->kernels[0].shape.shared_bytes, 4u * (128 + 128) * 128 + 5 * 16 + 1024);
  absl::StatusOr<OpPlan> stem = Op().Specialize(ConvWorkload(2, 32, 32, 32, 64, 1, 0, 1, 1),
                                                Tile(16, 16, 64, 4, 1), kHopper, {});
  ASSERT_TRUE(stem.ok()) << stem.status();
  EXPECT_EQ(stem->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<16, 16, 1, 64, 0>, "
            "tunejit::ConvPipelinePolicy<4, 1, 0, 1>, tunejit::ConvLoadPolicy<64, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<false, false, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  EXPECT_EQ(TensorMapText(stem->tensor_maps[0].desc),
            "f16 [32, 32, 32, 2] box [32, 16, 16, 1] swizzle 64B");
  for (const OpPlan* plan : {&*int8, &*stem}) {
    for (const PlannedTensorMap& m : plan->tensor_maps) {
      EXPECT_TRUE(CheckTensorMap(m.desc, 0x10000).ok()) << TensorMapText(m.desc);
    }
  }
  // 72 fp16 channels (144 bytes) keep 128-byte rows.
  absl::StatusOr<OpPlan> wide =
      Op().Specialize(ConvWorkload(2, 20, 20, 72, 64, 3), Tile(8, 16, 64, 4, 2), kHopper, {});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_TRUE(absl::StrContains(wide->kernels[0].spec.name_expression,
                                "tunejit::ConvLoadPolicy<128, 0, 0>"));
}

// int8 x int8 -> int32: IGMMA, 128 channels per 128-byte row, C % 16, int8 TMA maps, and the
// epilogues an int32 accumulator allows.
TEST(Conv2dWgmma, Int8PlansIgmmaWithInt8Maps) {
  const autotvm::Workload w = ConvWorkload(2, 20, 20, 144, 136, 3, 1, 1, 1, "int32", /*in=*/"int8");
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, requantize);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<1, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kInt8>, 0, 0>>");
  // A stage holds 128 int8 channels: the same 128-byte rows as fp16's 64.
  EXPECT_EQ(plan->kernels[0].shape.shared_bytes, 4u * (128 + 128) * 128 + 5 * 16 + 1024);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "i8 [144, 20, 20, 2] box [128, 16, 8, 1] swizzle 128B");
  EXPECT_EQ(plan->tensor_maps[0].desc.strides_bytes[0], 144u);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[1].desc),
            "i8 [144, 9, 136] box [128, 1, 128] swizzle 128B");
  for (const PlannedTensorMap& m : plan->tensor_maps) {
    EXPECT_TRUE(CheckTensorMap(m.desc, 0x10000).ok()) << TensorMapText(m.desc);
  }
  EXPECT_TRUE(Op().FallbackConfig(w).ok());
  // An int32 output cannot take the float bias; float32 and int32 outputs are fine.
  absl::Status s =
      Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, Epilogue{.bias = true}).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("an int32 output takes no float bias"));
  EXPECT_TRUE(Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, Epilogue{.relu = true}).ok());
  EXPECT_TRUE(Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper,
                              Epilogue{.bias = true, .output = Epilogue::Output::kFloat32})
                  .ok());
  // 16-byte pixel strides: C % 16 for int8 (8 was enough for fp16).
  absl::Status c8 = Op().CanImplement(ConvWorkload(1, 8, 8, 8, 64, 3, 1, 1, 1, "int32", "int8"));
  EXPECT_THAT(std::string(c8.message()), HasSubstr("C = 8 is not a multiple of 16"));
}

TEST(Conv2dWgmma, SharedRulesApplyToThePixelTile) {
  const autotvm::Workload w = ConvWorkload(1, 32, 32, 64, 256, 3);
  auto why = [&](const autotvm::ConfigEntity& c, const DeviceLimits& limits = kHopper) {
    return std::string(Op().Specialize(w, c, limits, {}).status().message());
  };
  EXPECT_THAT(why(Tile(2, 16, 128, 4, 1)), HasSubstr("tile_m = 32 is not a multiple of 64"));
  EXPECT_THAT(why(Tile(4, 16, 128, 4, 2)), HasSubstr("not a multiple of 64 x 2 consumer"));
  EXPECT_THAT(why(Tile(16, 16, 256, 2, 2)), HasSubstr("256 accumulator registers"));
  EXPECT_THAT(why(Tile(16, 16, 128, 5, 2)),
              HasSubstr("= 246880 bytes > shared_bytes_per_block_optin"));
  EXPECT_THAT(why(Tile(8, 16, 128, 4, 2), DeviceLimits::ForArch(GpuArch{8, 0, false})),
              HasSubstr("need Hopper"));
  EXPECT_EQ(why(Tile(16, 16, 128, 4, 2)), "");  // 256 x 128 with two consumers: fits
  // Ping-pong: two consumers, each with the whole tile's rows in its registers.
  EXPECT_THAT(why(Tile(8, 16, 128, 4, 1, 1)), HasSubstr("pingpong = 1 with consumer_wg = 1"));
  EXPECT_THAT(why(Tile(8, 16, 256, 4, 2, 1)), HasSubstr("256 accumulator registers"));
  EXPECT_EQ(why(Tile(4, 16, 256, 4, 2, 1)), "");  // 64 x 256 per consumer
  EXPECT_EQ(why(Tile(8, 16, 128, 4, 2, 1)), "");  // 128 x 128 per consumer
  EXPECT_THAT(why(Tile(8, 16, 128, 4, 2, 2)), HasSubstr("pingpong = 2 (0 or 1)"));
  const absl::StatusOr<OpPlan> pingpong =
      Op().Specialize(w, Tile(4, 16, 256, 4, 2, 1), kHopper, {});
  ASSERT_TRUE(pingpong.ok()) << pingpong.status();
  EXPECT_EQ(pingpong->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<4, 16, 1, 256, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 1, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<false, false, tunejit::EpiOut::kAccumulator>, 0, 0>>");
}

// im2col = 1: the M tile is tile_h x 64 consecutive output pixels, loaded by TMA's im2col mode.
TEST(Conv2dWgmma, Im2colPlansLinearPixelTilesAndTheIm2colMap) {
  // 3 images of 13 x 11 outputs (dilation 2, padding 2): 429 pixels, 4 tiles of 128.
  const autotvm::Workload w = ConvWorkload(3, 13, 11, 72, 136, 3, /*pad=*/2, 1, /*dilation=*/2);
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile(2, 64, 128, 4, 2, 0, 1), kHopper, Epilogue{.bias = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<2, 64, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 1, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  EXPECT_EQ(k.shape.grid[0], 4u * 2);  // 4 pixel tiles x 2 channel tiles
  std::vector<int64_t> geometry;
  for (size_t i = 6; i < k.args.size(); ++i) geometry.push_back(k.args[i].index_or_int);
  EXPECT_EQ(geometry,
            (std::vector<int64_t>{72, 136, 13, 11, 3, 9, 2, 2, 1, 1, 2, 2, 7, 1, 4, 429}));
  const TensorMapDesc& x = plan->tensor_maps[0].desc;
  EXPECT_EQ(TensorMapText(x),
            "f16 [72, 11, 13, 3] box [64, 1, 1, 1] swizzle 128B im2col 128 pixels");
  ASSERT_TRUE(x.im2col.has_value());
  // The base pixels are the outputs shifted by the padding: x - 2 for x in [0, OW = 11), so W runs
  // from -2 to 8 = (W - 1) + upper, upper = OW - W - pad_left = -2.
  EXPECT_EQ(x.im2col->lower[0], -2);
  EXPECT_EQ(x.im2col->lower[1], -2);
  EXPECT_EQ(x.im2col->upper[0], 11 - 11 - 2);  // OW - W - pad_left
  EXPECT_EQ(x.im2col->upper[1], 13 - 13 - 2);
  EXPECT_TRUE(CheckTensorMap(x, 0x10000).ok());
  // int8 with 64 channels: 64-byte rows, the im2col load takes 64 channels per pixel.
  absl::StatusOr<OpPlan> narrow =
      Op().Specialize(ConvWorkload(2, 28, 28, 64, 128, 3, 1, 1, 1, "int32", "int8"),
                      Tile(2, 64, 128, 4, 2, 1, 1), kHopper, {});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(TensorMapText(narrow->tensor_maps[0].desc),
            "i8 [64, 28, 28, 2] box [64, 1, 1, 1] swizzle 64B im2col 128 pixels");
}

TEST(Conv2dWgmma, Im2colRules) {
  const autotvm::Workload w = ConvWorkload(1, 32, 32, 64, 256, 3);
  auto why = [&](const autotvm::ConfigEntity& c) {
    return std::string(Op().Specialize(w, c, kHopper, {}).status().message());
  };
  EXPECT_THAT(why(Tile(8, 16, 128, 4, 2, 0, 1)), HasSubstr("im2col = 1 takes tile_w = 64"));
  EXPECT_THAT(why(Tile(8, 64, 64, 2, 2, 0, 1)), HasSubstr("at most 256 pixels at once, not 512"));
  EXPECT_THAT(why(Tile(2, 64, 128, 4, 2, 0, 2)), HasSubstr("im2col = 2 (0 or 1)"));
  EXPECT_EQ(why(Tile(4, 64, 128, 4, 2, 0, 1)), "");  // 256 pixels
  // The im2col corners of a 4-D map lie in [-128, 128): padding 130 puts the lower one past it.
  const absl::Status padded = Op().Specialize(ConvWorkload(1, 4, 4, 64, 64, 1, /*pad=*/130),
                                              Tile(2, 64, 64, 4, 2, 0, 1), kHopper, {})
                                  .status();
  EXPECT_EQ(padded.code(), absl::StatusCode::kInvalidArgument) << padded;
  EXPECT_THAT(padded.message(), HasSubstr("invalid config"));
  EXPECT_THAT(padded.message(), HasSubstr("im2col corner -130"));
  // A record from before the knob is im2col 0.
  const absl::StatusOr<OpPlan> old = Op().Specialize(
      w,
      Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 16), OtherKnob("tile_n", 128),
              OtherKnob("stages", 4), OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 0)}),
      kHopper, {});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->tensor_maps[0].desc.im2col.has_value());
}

// cluster = 2: two blocks share each pixel tile (each loads half its pixels for both, TMA
// multicast) and take its channel tiles side by side.
// Strided convs: the input maps step the stride over the input's pixels (TMA element strides), a
// tiled box spanning stride x the pixels it brings, the im2col bounding box ending at the last
// output's first tap; the kernel takes the strides as runtime geometry.
TEST(Conv2dWgmma, StridedPlansStepTheInputMaps) {
  // ResNet-50's stage-3 entry: 3x3 stride 2 over 56 x 56 x 128 -> 28 x 28.
  const autotvm::Workload w = ConvWorkload(2, 56, 56, 128, 128, 3, 1, /*stride=*/2);
  absl::StatusOr<OpPlan> tiled = Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(tiled.ok()) << tiled.status();
  const PlannedKernel& k = tiled->kernels[0];
  std::vector<int64_t> geometry;
  for (size_t i = 6; i < k.args.size(); ++i) geometry.push_back(k.args[i].index_or_int);
  // C, CO, OH, OW, KW, taps, pads, strides, dilations, tiles along h and w, pixel tiles, pixels.
  EXPECT_EQ(geometry,
            (std::vector<int64_t>{128, 128, 28, 28, 3, 9, 1, 1, 2, 2, 1, 1, 4, 2, 16, 2 * 784}));
  EXPECT_EQ(TensorMapText(tiled->tensor_maps[0].desc),
            "f16 [128, 56, 56, 2] box [64, 32, 16, 1] element strides [1, 2, 2, 1] swizzle 128B");
  EXPECT_TRUE(CheckTensorMap(tiled->tensor_maps[0].desc, 0x10000).ok());
  // The weight map is the stride-1 one.
  EXPECT_EQ(TensorMapText(tiled->tensor_maps[1].desc),
            "f16 [128, 9, 128] box [64, 1, 128] swizzle 128B");

  // im2col: output x in [0, 28) reads from x * 2 - 1, the last from 53 = (W - 1) + upper.
  absl::StatusOr<OpPlan> im2col =
      Op().Specialize(w, Tile(2, 64, 128, 4, 2, 0, 1), kHopper, kBiasRelu);
  ASSERT_TRUE(im2col.ok()) << im2col.status();
  const TensorMapDesc& x = im2col->tensor_maps[0].desc;
  ASSERT_TRUE(x.im2col.has_value());
  EXPECT_EQ(x.im2col->lower[0], -1);
  EXPECT_EQ(x.im2col->upper[0], 27 * 2 - 1 - 55);
  EXPECT_EQ(x.im2col->upper[1], 27 * 2 - 1 - 55);
  EXPECT_EQ(x.element_strides[1], 2u);
  EXPECT_EQ(x.element_strides[2], 2u);
  EXPECT_TRUE(CheckTensorMap(x, 0x10000).ok());

  // A clustered tiled box is half the rows, stepped likewise.
  absl::StatusOr<OpPlan> cluster =
      Op().Specialize(w, Tile(8, 16, 64, 4, 2, 0, 0, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->tensor_maps[0].desc.box[2], 4u * 2);

  // ResNet's 1x1 stride-2 downsample and its 7x7 stride-2 stem over 8 (padded RGB) channels.
  EXPECT_TRUE(Op().Specialize(ConvWorkload(2, 56, 56, 256, 512, 1, 0, 2), Tile(8, 16, 128, 4, 2),
                              kHopper, kBiasRelu)
                  .ok());
  absl::StatusOr<OpPlan> stem = Op().Specialize(ConvWorkload(2, 224, 224, 8, 64, 7, 3, 2),
                                                Tile(8, 16, 64, 4, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(stem.ok()) << stem.status();
  EXPECT_EQ(TensorMapText(stem->tensor_maps[0].desc),
            "f16 [8, 224, 224, 2] box [32, 32, 16, 1] element strides [1, 2, 2, 1] swizzle 64B");
}

// The residual epilogue (ResNet's skip connection): op input 4, added to the float16 output
// before the ReLU; float16 outputs only, never before the pooled task's pool.
TEST(Conv2dWgmma, ResidualEpilogueReadsInputFour) {
  const Epilogue residual{.bias = true, .relu = true, .residual = true};
  const autotvm::Workload w = ConvWorkload(2, 28, 28, 128, 512, 1, 0, 1, 1, "float16");
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, residual);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_THAT(k.spec.name_expression,
              HasSubstr("tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator, true>, 1, 0>>"));
  EXPECT_EQ(k.args[5].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k.args[5].index_or_int, 4);
  // Swapped tiles add it when they copy their staged rows out.
  EXPECT_TRUE(Op().Specialize(ConvWorkload(2, 28, 28, 64, 64, 3, 1, 1, 1, "float16"),
                              Tile(8, 16, 64, 4, 2, 0, 0, 1, 0, 1), kHopper, residual)
                  .ok());
  auto why = [&](const autotvm::Workload& workload, const OpTemplate& op) {
    return std::string(
        op.Specialize(workload, Tile(8, 16, 128, 4, 2), kHopper, residual).status().message());
  };
  EXPECT_THAT(why(ConvWorkload(2, 28, 28, 128, 512, 1, 0, 1, 1, "float32"), Op()),
              HasSubstr("a residual is added to float16 outputs and requantized int8 ones only "
                        "(got a float32 output)"));
  EXPECT_THAT(why(ConvWorkload(2, 28, 28, 128, 512, 1, 0, 1, 1, "int32", "int8"), Op()),
              HasSubstr("(got int8 operands without an int8 requantize output)"));
  autotvm::Workload pooled = w;
  pooled.task_name = autotvm::kConv2dNhwcWgmmaPool;
  EXPECT_THAT(why(pooled, *FindOpTemplate(autotvm::kConv2dNhwcWgmmaPool)),
              HasSubstr("takes no residual"));
}

// The int8 residual: int8 operands into an int8 requantize output, the residual input 4 read as
// int8 (its scales after the channels' in input 3).
TEST(Conv2dWgmma, Int8ResidualEpilogueRequantizes) {
  const Epilogue e{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize, .residual = true};
  const autotvm::Workload w = ConvWorkload(2, 28, 28, 128, 512, 1, 0, 1, 1, "int32", "int8");
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(8, 16, 128, 4, 2), kHopper, e);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_THAT(k.spec.name_expression,
              HasSubstr("tunejit::Epi<true, true, tunejit::EpiOut::kInt8, true>, 0, 0>>"));
  EXPECT_EQ(k.args[5].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k.args[5].index_or_int, 4);
  // The GPU test's cases (conv2d_wgmma_gpu_test.cc Int8ResidualMatchesTheUnfusedAdd) are valid
  // and compile for sm_90a: 16-byte stores with clusters and im2col tiles, the words path
  // (CO 72), swapped tiles (the staged rows' copy adds it), a stride-2 downsample.
  struct Case {
    autotvm::Workload w;
    autotvm::ConfigEntity config;
  };
  auto int8 = [](int64_t hw, int64_t c, int64_t co, int64_t k, int pad, int stride) {
    return ConvWorkload(2, hw, hw, c, co, k, pad, stride, 1, "int32", "int8");
  };
  const std::vector<Case> cases = {
      {int8(14, 64, 256, 1, 0, 1), Tile(8, 16, 128, 4, 2, 1, 0, 2)},
      {int8(14, 64, 256, 1, 0, 1), Tile(4, 64, 64, 4, 2, 1, 1)},
      {int8(15, 80, 72, 3, 1, 1), Tile(2, 64, 128, 4, 2, 0, 1)},
      {int8(14, 64, 64, 3, 1, 1), Tile(8, 16, 64, 4, 2, 0, 0, 1, 0, 1)},
      {int8(28, 64, 128, 1, 0, 2), Tile(2, 64, 128, 4, 2, 1, 1)}};
  KernelCompiler compiler(nullptr);
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> p = Op().Specialize(c.w, c.config, kHopper, e);
    ASSERT_TRUE(p.ok()) << c.config.ToString() << ": " << p.status();
    if (&c != &cases[0] && &c != &cases[3]) continue;  // two compiles: the wide and staged paths
    absl::StatusOr<CompiledKernel> kernel =
        compiler.Compile(p->kernels[0].spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << p->kernels[0].spec.name_expression << ": " << kernel.status();
  }
}

TEST(Conv2dWgmma, StridedRules) {
  // A box spans tile_w x stride pixels: 64 x 8 = 512 > 256.
  absl::StatusOr<OpPlan> wide = Op().Specialize(ConvWorkload(1, 512, 512, 64, 64, 1, 0, 8),
                                                Tile(1, 64, 64, 4, 1), kHopper, kBiasRelu);
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(std::string(wide.status().message()),
              HasSubstr("box dimension 1 = 512 outside [1, 256]"));
  // Halo boxes share consecutive rows between the filter's rows: stride_h 1 only.
  absl::StatusOr<OpPlan> halo = Op().Specialize(ConvWorkload(1, 56, 56, 64, 64, 3, 1, 2),
                                                Tile(8, 16, 64, 4, 2, 0, 0, 1, 1), kHopper, {});
  ASSERT_FALSE(halo.ok());
  EXPECT_THAT(std::string(halo.status().message()),
              HasSubstr("halo = 1 does not take stride_h 2 (rows not consecutive)"));
}

TEST(Conv2dWgmma, ClusterPlansHalfLoadsAndAnEvenGrid) {
  // 2 x 20 x 20 outputs in 8 x 16 tiles: 2 x 3 x 2 = 12 pixel tiles; CO 256 in 2 channel tiles.
  const autotvm::Workload w = ConvWorkload(2, 20, 20, 64, 256, 3);
  absl::StatusOr<OpPlan> tiled = Op().Specialize(w, Tile(8, 16, 128, 4, 2, 0, 0, 2), kHopper, {});
  ASSERT_TRUE(tiled.ok()) << tiled.status();
  EXPECT_EQ(tiled->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 2>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<false, false, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  EXPECT_EQ(tiled->kernels[0].shape.grid[0], 24u);
  // Each block loads 4 of the tile's 8 rows.
  EXPECT_EQ(TensorMapText(tiled->tensor_maps[0].desc),
            "f16 [64, 20, 20, 2] box [64, 16, 4, 1] swizzle 128B");
  // im2col: 800 pixels in 4 tiles of 256 (the last past the end), 128 pixels per load.
  absl::StatusOr<OpPlan> im2col = Op().Specialize(w, Tile(4, 64, 128, 4, 2, 0, 1, 2), kHopper, {});
  ASSERT_TRUE(im2col.ok()) << im2col.status();
  EXPECT_EQ(im2col->kernels[0].shape.grid[0], 8u);
  EXPECT_EQ(TensorMapText(im2col->tensor_maps[0].desc),
            "f16 [64, 20, 20, 2] box [64, 1, 1, 1] swizzle 128B im2col 128 pixels");
  // More tiles than SMs: the grid is the even number of blocks at most one per SM.
  DeviceLimits odd = kHopper;
  odd.sm_count = 7;
  absl::StatusOr<OpPlan> few = Op().Specialize(w, Tile(8, 16, 128, 4, 2, 0, 0, 2), odd, {});
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_EQ(few->kernels[0].shape.grid[0], 6u);
  // The kernel really multicasts, hands stages back across the cluster and syncs it.
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel =
      compiler.Compile(im2col->kernels[0].spec, GpuArch{9, 0, false});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx,
                                ".im2col.mbarrier::complete_tx::bytes.multicast::cluster"));
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "mapa.shared::cluster"));
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "barrier.cluster.wait"));
}

TEST(Conv2dWgmma, ClusterRules) {
  auto why = [&](const autotvm::Workload& w, const autotvm::ConfigEntity& c) {
    return std::string(Op().Specialize(w, c, kHopper, {}).status().message());
  };
  const autotvm::Workload w256 = ConvWorkload(1, 32, 32, 64, 256, 3);
  EXPECT_THAT(why(w256, Tile(8, 16, 256, 4, 2, 0, 0, 2)),
              HasSubstr("cluster = 2 takes an even number of channel tiles, not 1 (CO 256 / "
                        "tile_n 256)"));
  EXPECT_THAT(why(ConvWorkload(1, 32, 32, 64, 136, 3), Tile(8, 16, 64, 4, 2, 0, 0, 2)),
              HasSubstr("not 3"));
  EXPECT_THAT(why(w256, Tile(1, 64, 128, 4, 1, 0, 0, 2)), HasSubstr("tile_h 1 is odd"));
  EXPECT_THAT(why(w256, Tile(8, 16, 128, 4, 2, 0, 0, 3)), HasSubstr("cluster = 3 (1 or 2)"));
  EXPECT_EQ(why(w256, Tile(1, 64, 128, 4, 1, 0, 1, 2)), "");  // im2col halves the pixels instead
  EXPECT_EQ(why(w256, Tile(8, 16, 128, 4, 2, 1, 0, 2)), "");  // ping-pong
}

// halo = 1: a stage per filter column and row of channels, its KH filter rows sharing one box of
// tile_h + KH - 1 image rows; the stage's bytes are that box and KH weight boxes.
TEST(Conv2dWgmma, HaloPlansColumnStagesOverTallerBoxes) {
  const autotvm::Workload w = ConvWorkload(2, 20, 20, 72, 136, 3);
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, Tile(8, 16, 128, 2, 2, 0, 0, 1, 1), kHopper,
                                                Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<2, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 3>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  // A: (8 + 2) x 16 rows of 128 bytes; B: 3 filter rows x 128 channels x 128 bytes.
  EXPECT_EQ(k.shape.shared_bytes, 2u * ((10 * 16 + 3 * 128) * 128) + 3 * 16 + 1024);
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "f16 [72, 20, 20, 2] box [64, 16, 10, 1] swizzle 128B");
  EXPECT_EQ(TensorMapText(plan->tensor_maps[1].desc),
            "f16 [72, 9, 136] box [64, 1, 128] swizzle 128B");
  // A 5 x 5 filter: HALO 5, a box of 12 rows. Narrow int8 channels: 64-byte rows, 5 a stage.
  absl::StatusOr<OpPlan> five = Op().Specialize(ConvWorkload(2, 20, 20, 64, 64, 5, 2),
                                                Tile(8, 8, 64, 3, 2, 1, 0, 1, 1), kHopper, {});
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_TRUE(absl::StrContains(five->kernels[0].spec.name_expression,
                                ", 0, 5>, tunejit::ConvOutputPolicy<"));
  EXPECT_EQ(TensorMapText(five->tensor_maps[0].desc),
            "f16 [64, 20, 20, 2] box [64, 8, 12, 1] swizzle 128B");
  absl::StatusOr<OpPlan> narrow =
      Op().Specialize(ConvWorkload(2, 20, 20, 64, 64, 3, 1, 1, 1, "int32", "int8"),
                      Tile(8, 32, 64, 4, 2, 1, 0, 1, 1), kHopper, {.relu = true});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(narrow->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 32, 1, 64, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 1, 1>, tunejit::ConvLoadPolicy<64, 0, 3>, "
            "tunejit::ConvOutputPolicy<1, "
            "tunejit::Epi<false, true, tunejit::EpiOut::kAccumulator>, 0, 0>>");
  EXPECT_EQ(narrow->kernels[0].shape.shared_bytes, 4u * ((10 * 32 + 3 * 64) * 64) + 5 * 16 + 1024);
  EXPECT_EQ(TensorMapText(narrow->tensor_maps[0].desc),
            "i8 [64, 20, 20, 2] box [64, 32, 10, 1] swizzle 64B");
}

TEST(Conv2dWgmma, HaloRules) {
  auto why = [&](const autotvm::Workload& w, const autotvm::ConfigEntity& c) {
    return std::string(Op().Specialize(w, c, kHopper, {}).status().message());
  };
  const autotvm::Workload w = ConvWorkload(2, 32, 32, 64, 256, 3);
  EXPECT_EQ(why(w, Tile(8, 16, 128, 2, 2, 0, 0, 1, 1)), "");
  EXPECT_THAT(why(w, Tile(2, 64, 128, 2, 2, 0, 1, 1, 1)),
              HasSubstr("halo = 1 does not take im2col"));
  EXPECT_THAT(why(w, Tile(8, 16, 128, 2, 2, 0, 0, 2, 1)), HasSubstr("does not take clusters"));
  EXPECT_THAT(why(ConvWorkload(2, 32, 32, 64, 256, 1, 0), Tile(8, 16, 128, 2, 2, 0, 0, 1, 1)),
              HasSubstr("a 1-row filter (nothing to share)"));
  EXPECT_THAT(why(ConvWorkload(2, 32, 32, 64, 256, 3, 2, 1, 2), Tile(8, 16, 128, 2, 2, 0, 0, 1, 1)),
              HasSubstr("dilation_h 2"));
  EXPECT_THAT(why(w, Tile(8, 16, 128, 2, 2, 0, 0, 1, 2)), HasSubstr("halo = 2 (0 or 1)"));
  // Three filter rows a stage: four 16 x 16 x 256 stages no longer fit.
  EXPECT_THAT(why(w, Tile(16, 16, 128, 4, 2, 0, 0, 1, 1)),
              HasSubstr("4 stages x (A 288 rows x 128 + B 128 x 384) bytes"));
}

TEST(Conv2dWgmma, SwapPlansTheTransposedTileAndItsStaging) {
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  // int8 64 channels (64-byte rows, two taps a stage), 8 x 16 pixels, cooperative: 64 rows per
  // consumer, staged as rows of 64 bytes + 16 of padding.
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(ConvWorkload(2, 20, 20, 64, 64, 3, 1, 1, 1, "int32", "int8"),
                      Tile(8, 16, 64, 4, 2, 0, 0, 1, 0, 1), kHopper, requantize);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 64, 1>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<64, 0, 0>, "
            "tunejit::ConvOutputPolicy<1, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kInt8>, 0, 0>>");
  EXPECT_EQ(plan->kernels[0].shape.shared_bytes,
            4u * ((128 + 64) * 128) + 5 * 16 + 1024 + 2 * 64 * (64 + 16));
  // The same tile into float32: rows of 256 bytes + 16.
  absl::StatusOr<OpPlan> f32 =
      Op().Specialize(ConvWorkload(2, 20, 20, 64, 64, 3, 1, 1, 1, "int32", "int8"),
                      Tile(8, 16, 64, 4, 2, 0, 0, 1, 0, 1), kHopper,
                      {.bias = true, .output = Epilogue::Output::kFloat32});
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->kernels[0].shape.shared_bytes,
            4u * ((128 + 64) * 128) + 5 * 16 + 1024 + 2 * 64 * (256 + 16));
}

TEST(Conv2dWgmma, SwapRules) {
  auto why = [&](const autotvm::Workload& w, const autotvm::ConfigEntity& c) {
    return std::string(Op().Specialize(w, c, kHopper, {}).status().message());
  };
  const autotvm::Workload w = ConvWorkload(2, 32, 32, 64, 256, 3);
  EXPECT_EQ(why(w, Tile(8, 16, 64, 2, 2, 0, 0, 1, 0, 1)), "");
  EXPECT_THAT(why(w, Tile(8, 16, 128, 2, 2, 0, 0, 1, 0, 1)),
              HasSubstr("swap_ab = 1 takes tile_n 64 (one m64 wgmma of channels), not 128"));
  EXPECT_THAT(why(w, Tile(16, 32, 64, 2, 2, 1, 0, 1, 0, 1)),
              HasSubstr("at most 256 pixels per consumer (wgmma's N), not 512"));
  EXPECT_THAT(why(w, Tile(8, 16, 64, 2, 2, 0, 0, 1, 0, 2)), HasSubstr("swap_ab = 2 (0 or 1)"));
  // 256 pixels per consumer staged in float32 rows: 2 x 256 x 272 bytes more than fit.
  EXPECT_THAT(why(w, Tile(8, 32, 64, 2, 2, 1, 0, 1, 1, 1)), HasSubstr("+ 139264 (output staging)"));
}

// swap_ab = 1 on conv1_2 pooled (fp16, 8 x 32 ping-pong, halo): the 256 pixels of a consumer are
// one m64n256k16's N; the output rows staged pooled, a quarter of them.
TEST(Conv2dWgmmaPool, SwapPoolsInTheKernelWithAQuarterOfTheStaging) {
  const autotvm::Workload w = [] {
    autotvm::Workload c = ConvWorkload(2, 64, 64, 64, 64, 3, 1, 1, 1, "float16");
    c.task_name = autotvm::kConv2dNhwcWgmmaPool;
    return c;
  }();
  absl::StatusOr<OpPlan> plan = FindOpTemplate(autotvm::kConv2dNhwcWgmmaPool)
                                    ->Specialize(w, Tile(8, 32, 64, 3, 2, 1, 0, 1, 1, 1), kHopper,
                                                 Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 32, 1, 64, 1>, "
            "tunejit::ConvPipelinePolicy<3, 2, 1, 1>, tunejit::ConvLoadPolicy<128, 0, 3>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 1, 1>>");
  EXPECT_EQ(plan->kernels[0].shape.shared_bytes,
            3u * ((10 * 32 + 3 * 64) * 128) + 4 * 16 + 1024 + 2 * (256 / 4) * (128 + 16));
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel =
      compiler.Compile(plan->kernels[0].spec, GpuArch{9, 0, false});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "wgmma.mma_async.sync.aligned.m64n256k16"));
}

// tile_b = 2: 8 x 8 pixels of each of two images, one box {row, 8, 8, 2} per tap; the pixel tiles
// count image pairs (3 images: 2 pairs, the last half past the batch).
TEST(Conv2dWgmma, ImagesPerTilePlanOneBoxOverTheImages) {
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(ConvWorkload(3, 56, 56, 256, 256, 3, 1, 1, 1, "float16"),
                      Tile(8, 8, 256, 4, 2, 0, 0, 1, 0, 0, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 8, 2, 256, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 1, 0>>");
  EXPECT_EQ(TensorMapText(plan->tensor_maps[0].desc),
            "f16 [256, 56, 56, 3] box [64, 8, 8, 2] swizzle 128B");
  // A 128-row M tile: 4 stages of 128 x 64 + 256 x 64 fp16.
  EXPECT_EQ(k.shape.shared_bytes, 4u * (128 + 256) * 64 * 2 + 5 * 16 + 1024);
  std::vector<int64_t> geometry;
  for (size_t i = 6; i < k.args.size(); ++i) geometry.push_back(k.args[i].index_or_int);
  EXPECT_EQ(geometry, (std::vector<int64_t>{256, 256, 56, 56, 3, 9, 1, 1, 1, 1, 1, 1, 7, 7, 2 * 49,
                                            3 * 56 * 56}));
  EXPECT_EQ(k.shape.grid[0], 98u);  // 98 pixel tiles x 1 channel tile < 132 SMs
}

TEST(Conv2dWgmma, ImagesPerTileRules) {
  auto why = [&](const autotvm::ConfigEntity& c) {
    return std::string(
        Op().Specialize(ConvWorkload(2, 56, 56, 128, 256, 3), c, kHopper, {}).status().message());
  };
  EXPECT_EQ(why(Tile(8, 8, 128, 4, 2, 0, 0, 1, 0, 0, 2)), "");
  EXPECT_EQ(why(Tile(2, 16, 128, 4, 2, 0, 0, 1, 0, 0, 4)), "");  // 4 images of 2 x 16
  EXPECT_EQ(why(Tile(8, 8, 128, 4, 2, 1, 0, 1, 0, 0, 2)), "");   // ping-pong, 128 rows each
  EXPECT_THAT(why(Tile(8, 8, 128, 4, 2, 0, 0, 1, 0, 0, 3)), HasSubstr("tile_b = 3 (1, 2 or 4)"));
  EXPECT_THAT(why(Tile(8, 16, 128, 4, 2, 0, 0, 1, 0, 0, 2)),
              HasSubstr("tile_b = 2 does not take 8 x 16 pixels (more than 64 fill M alone)"));
  EXPECT_THAT(why(Tile(1, 64, 128, 4, 2, 0, 1, 1, 0, 0, 2)),
              HasSubstr("tile_b = 2 does not take im2col tiles"));
  EXPECT_THAT(why(Tile(8, 8, 128, 4, 2, 0, 0, 2, 0, 0, 2)),
              HasSubstr("tile_b = 2 does not take clusters"));
  EXPECT_THAT(why(Tile(8, 8, 128, 2, 2, 0, 0, 1, 1, 0, 2)),
              HasSubstr("tile_b = 2 does not take halo boxes"));
}

// The point of tile_b: conv3_3 (56 x 56) pooled in the kernel by tiles that divide its output,
// each consumer one image's 8 x 8 (rows of 8 pixels: a window's rows in one thread); and
// swapped, a consumer's 64 pixels one wgmma's N.
TEST(Conv2dWgmmaPool, ImagesPerTilePoolTheVggConv33InTheKernel) {
  autotvm::Workload w = ConvWorkload(128, 56, 56, 256, 256, 3, 1, 1, 1, "float16");
  w.task_name = autotvm::kConv2dNhwcWgmmaPool;
  const OpTemplate& pool = *FindOpTemplate(autotvm::kConv2dNhwcWgmmaPool);
  absl::StatusOr<OpPlan> plan =
      pool.Specialize(w, Tile(8, 8, 256, 4, 2, 0, 0, 1, 0, 0, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_TRUE(plan->workspace_bytes.empty());
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 8, 2, 256, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 1, 1>>");
  absl::StatusOr<OpPlan> swapped =
      pool.Specialize(w, Tile(8, 8, 64, 4, 2, 0, 0, 1, 0, 1, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(swapped.ok()) << swapped.status();
  EXPECT_EQ(swapped->kernels.size(), 1u);
  KernelCompiler compiler(nullptr);
  for (const OpPlan* p : {&*plan, &*swapped}) {
    absl::StatusOr<CompiledKernel> kernel =
        compiler.Compile(p->kernels[0].spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "cp.async.bulk.tensor.4d"));
  }
}

absl::StatusOr<autotvm::ConfigSpace> Space() {
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget("cuda");
  if (!target.ok()) return target.status();
  return BuildConfigSpace(ConvWorkload(128, 56, 56, 256, 256, 3), *target);
}

TEST(Conv2dWgmmaSpace, IndexEntityRoundTripAndValidCount) {
  absl::StatusOr<autotvm::ConfigSpace> space = Space();
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->size(), 5 * 4 * 4 * 5 * 2 * 2 * 2 * 2 * 2 * 2 * 3);
  EXPECT_TRUE(HasConfigSpace(autotvm::kConv2dNhwcWgmma));
  const autotvm::Workload w = ConvWorkload(128, 56, 56, 256, 256, 3);
  int valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    absl::StatusOr<autotvm::ConfigEntity> c = space->Get(i);
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<int64_t> back = space->IndexOf(*c);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, i);
    if (Op().Specialize(w, *c, kHopper, {}).ok()) ++valid;
  }
  // Pinned when the rules were written (pixel tiles of 64, 128 or 256 rows, less the register
  // and shared-memory failures): a rule that changes shows here. 221 cooperative or single
  // consumer configs and 128 ping-pong ones (whole 64- or 128-row tiles per consumer); 90
  // im2col configs (tile_w 64 with tile_h 1, 2, 4: M tiles of 64, 128, 256 pixels). With
  // cluster = 2, the 354 of those 439 whose tile_n makes an even number of channel tiles (not
  // 256: one tile of 256 channels) and, unless im2col, whose tile_h is even. With halo = 1, the
  // 154 tiled ones without clusters whose stages of three filter rows still fit. With swap_ab =
  // 1, the 342 of all those with tile_n 64 and at most 256 pixels per consumer whose staged
  // float32 output rows (272 bytes a pixel) still fit. With tile_b = 2 or 4, each tile_h x
  // tile_w of at most 64 pixels takes what a one-image tiled tile of the same M takes without
  // clusters or halo boxes (48 configs per shape at M 64, 52 at 128, 20 at 256): 684.
  EXPECT_EQ(valid, 221 + 128 + 90 + 354 + 154 + 342 + 684);
  std::printf("conv2d_nhwc_wgmma space: %lld points, %d valid\n",
              static_cast<long long>(space->size()), valid);
}

// A fixed-seed sample of valid configs compiles for sm_90a (asked for plain sm_90) and really
// uses wgmma and 4-D TMA loads, in fp16 and (the same tile) int8.
TEST(Conv2dWgmmaSpace, SampledValidConfigsCompileWithWgmma) {
  absl::StatusOr<autotvm::ConfigSpace> space = Space();
  ASSERT_TRUE(space.ok()) << space.status();
  const autotvm::Workload w = ConvWorkload(128, 56, 56, 256, 256, 3, 1, 1, 1, "float16");
  std::mt19937_64 rng(20261201);
  KernelCompiler compiler(nullptr);
  int compiled = 0;
  for (int tries = 0; compiled < 6 && tries < 1000; ++tries) {
    const int64_t index = space->RandomIndex(rng);
    absl::StatusOr<OpPlan> plan =
        Op().Specialize(w, *space->Get(index), kHopper, Epilogue{.bias = true, .relu = true});
    if (!plan.ok()) continue;
    const KernelSpec& spec = plan->kernels[0].spec;
    absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "wgmma.mma_async.sync.aligned.m64n"));
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "cp.async.bulk.tensor.4d"));
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "cp.async.bulk.tensor.3d"));
    // The int8 form of the same config: IGMMA (wgmma .s8, k32).
    absl::StatusOr<OpPlan> int8_plan = Op().Specialize(
        ConvWorkload(128, 56, 56, 256, 256, 3, 1, 1, 1, "int32", "int8"), *space->Get(index),
        kHopper, Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
    ASSERT_TRUE(int8_plan.ok()) << int8_plan.status();
    absl::StatusOr<CompiledKernel> int8_kernel =
        compiler.Compile(int8_plan->kernels[0].spec, GpuArch{9, 0, false});
    ASSERT_TRUE(int8_kernel.ok()) << int8_kernel.status();
    EXPECT_TRUE(absl::StrContains(int8_kernel->program.ptx, ".s32.s8.s8"))
        << int8_plan->kernels[0].spec.name_expression;
    std::printf("compiled %s (%.2f s)\n", spec.name_expression.c_str(), kernel->compile_seconds);
    ++compiled;
  }
  EXPECT_EQ(compiled, 6);
}

// conv2d_nhwc_wgmma_pool.cuda: the conv's workload (2 images, 3x3, pad 1) under the pooled name.
autotvm::Workload PoolWorkload(int64_t hw, int64_t c, int64_t co,
                               const std::string& out = "float16",
                               const std::string& in = "float16") {
  autotvm::Workload w = ConvWorkload(2, hw, hw, c, co, 3, 1, 1, 1, out, in);
  w.task_name = autotvm::kConv2dNhwcWgmmaPool;
  return w;
}

const OpTemplate& PoolOp() { return *FindOpTemplate(autotvm::kConv2dNhwcWgmmaPool); }

TEST(Conv2dWgmmaPool, WholeWindowTilesPoolInTheKernel) {
  // 8 x 16 pixel tiles, two cooperative consumers of 64 rows (4 image rows each).
  absl::StatusOr<OpPlan> plan =
      PoolOp().Specialize(PoolWorkload(56, 64, 128), Tile(8, 16, 128, 4, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 128, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<128, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 1, 1>>");
  EXPECT_TRUE(plan->workspace_bytes.empty());
  EXPECT_TRUE(plan->notes.empty());
  // The unpooled conv's ring and barriers, plus per consumer one 72-word row for each of the 16
  // windows of a 64-row group.
  absl::StatusOr<OpPlan> conv =
      Op().Specialize(ConvWorkload(2, 56, 56, 64, 128, 3, 1, 1, 1, "float16"),
                      Tile(8, 16, 128, 4, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_EQ(plan->kernels[0].shape.shared_bytes,
            conv->kernels[0].shape.shared_bytes + 2 * 16 * 72 * 4);
  EXPECT_EQ(plan->kernels[0].shape.grid[0], conv->kernels[0].shape.grid[0]);
  // Rows of 64 pixels pair up across a consumer's two 64-row subtiles: twice the windows.
  absl::StatusOr<OpPlan> wide =
      PoolOp().Specialize(PoolWorkload(64, 64, 128), Tile(4, 64, 128, 4, 2), kHopper, kBiasRelu);
  ASSERT_TRUE(wide.ok()) << wide.status();
  ASSERT_EQ(wide->kernels.size(), 1u);
  EXPECT_TRUE(absl::EndsWith(wide->kernels[0].spec.name_expression, ", 1>>"));
}

TEST(Conv2dWgmmaPool, OtherTilesPoolAfterTheKernel) {
  struct Case {
    autotvm::ConfigEntity tile;
    int64_t hw;
    const char* why;
  };
  const Case cases[] = {
      {Tile(4, 64, 128, 4, 2, 0, 1), 56, "im2col"},
      {Tile(1, 64, 128, 4, 1), 56, "tile_h 1 is odd"},
      {Tile(2, 64, 128, 4, 2), 56, "64 rows per consumer are not whole pairs of 64-pixel rows"},
      {Tile(8, 16, 128, 4, 2), 27, "27x27 output has an odd side"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        PoolOp().Specialize(PoolWorkload(c.hw, 64, 128), c.tile, kHopper, kBiasRelu);
    ASSERT_TRUE(plan.ok()) << c.why << ": " << plan.status();
    ASSERT_EQ(plan->kernels.size(), 2u) << c.why;
    EXPECT_TRUE(absl::EndsWith(plan->kernels[0].spec.name_expression, ", 0>>")) << c.why;
    // The conv writes workspace 0 (float16 [2, hw, hw, 128]); the NHWC pool reads it.
    ASSERT_EQ(plan->workspace_bytes.size(), 1u);
    EXPECT_EQ(plan->workspace_bytes[0], 2 * c.hw * c.hw * 128 * 2) << c.why;
    EXPECT_EQ(plan->kernels[0].args[4].kind, KernelArg::Kind::kWorkspace);
    EXPECT_EQ(plan->kernels[1].spec.name_expression, "tunejit::max_pool2d_nhwc<tunejit::f16>");
    EXPECT_EQ(plan->kernels[1].args[0].kind, KernelArg::Kind::kWorkspace);
    EXPECT_EQ(plan->kernels[1].args[1].kind, KernelArg::Kind::kOutput);
    ASSERT_EQ(plan->notes.size(), 1u);
    EXPECT_THAT(plan->notes[0], HasSubstr(c.why));
  }
  // The ping-pong form of the 2 x 64 tile gives each consumer both image rows: pooled in the
  // kernel.
  absl::StatusOr<OpPlan> pingpong =
      PoolOp().Specialize(PoolWorkload(56, 64, 128), Tile(2, 64, 128, 4, 2, 1), kHopper, kBiasRelu);
  ASSERT_TRUE(pingpong.ok()) << pingpong.status();
  EXPECT_EQ(pingpong->kernels.size(), 1u);
}

TEST(Conv2dWgmmaPool, OutputKinds) {
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  // int8 requantized, pooled after an im2col kernel: int8 workspace and pool.
  absl::StatusOr<OpPlan> int8 =
      PoolOp().Specialize(PoolWorkload(56, 128, 128, "int32", "int8"), Tile(2, 64, 128, 4, 2, 0, 1),
                          kHopper, requantize);
  ASSERT_TRUE(int8.ok()) << int8.status();
  ASSERT_EQ(int8->kernels.size(), 2u);
  EXPECT_EQ(int8->workspace_bytes[0], 2 * 56 * 56 * 128);
  EXPECT_EQ(int8->kernels[1].spec.name_expression, "tunejit::max_pool2d_nhwc<signed char>");
  // A float32 output (the network's last conv when no int8 conv reads it) pools in float32.
  absl::StatusOr<OpPlan> f32 = PoolOp().Specialize(
      PoolWorkload(56, 128, 128, "int32", "int8"), Tile(2, 64, 128, 4, 2, 0, 1), kHopper,
      Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kFloat32});
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->workspace_bytes[0], 2 * 56 * 56 * 128 * 4);
  EXPECT_EQ(f32->kernels[1].spec.name_expression, "tunejit::max_pool2d_nhwc<float>");
  // An int8 pool after the kernel takes whole 16-byte vectors of channels: with CO 136 only the
  // tiles that pool in the kernel are valid.
  const autotvm::Workload co136 = PoolWorkload(56, 128, 136, "int32", "int8");
  absl::StatusOr<OpPlan> after =
      PoolOp().Specialize(co136, Tile(2, 64, 128, 4, 2, 0, 1), kHopper, requantize);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(after.status().message(), HasSubstr("im2col tiles run across image rows, and"));
  EXPECT_TRUE(PoolOp().Specialize(co136, Tile(8, 16, 128, 4, 2), kHopper, requantize).ok());
  // int32 has no NHWC pool.
  absl::StatusOr<OpPlan> int32 = PoolOp().Specialize(PoolWorkload(56, 128, 128, "int32", "int8"),
                                                     Tile(8, 16, 128, 4, 2), kHopper, Epilogue{});
  EXPECT_EQ(int32.status().code(), absl::StatusCode::kUnimplemented);
  // The pooled task takes only its own workloads, and a window must fit.
  EXPECT_FALSE(PoolOp().CanImplement(ConvWorkload(2, 56, 56, 64, 128, 3)).ok());
  EXPECT_FALSE(Op().CanImplement(PoolWorkload(56, 64, 128)).ok());
  autotvm::Workload tiny = ConvWorkload(2, 1, 1, 64, 128, 1, 0);
  tiny.task_name = autotvm::kConv2dNhwcWgmmaPool;
  EXPECT_EQ(PoolOp().CanImplement(tiny).code(), absl::StatusCode::kInvalidArgument);
}

// Every config the conv takes, the pooled task takes too (in the kernel or after it), unless the
// exchange's shared memory no longer fits, which the rejection says.
TEST(Conv2dWgmmaPoolSpace, TheConvsConfigsWithTheirPoolInOrAfterTheKernel) {
  absl::StatusOr<autotvm::ConfigSpace> space = Space();
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_TRUE(HasConfigSpace(autotvm::kConv2dNhwcWgmmaPool));
  const autotvm::Workload conv = ConvWorkload(2, 56, 56, 256, 256, 3, 1, 1, 1, "float16");
  const autotvm::Workload pooled = PoolWorkload(56, 256, 256);
  int valid = 0, fused = 0, over = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    const autotvm::ConfigEntity c = *space->Get(i);
    if (!Op().Specialize(conv, c, kHopper, kBiasRelu).ok()) continue;
    ++valid;
    absl::StatusOr<OpPlan> plan = PoolOp().Specialize(pooled, c, kHopper, kBiasRelu);
    if (!plan.ok()) {
      EXPECT_THAT(plan.status().message(), HasSubstr("(pool exchange)")) << c.ToString();
      ++over;
      continue;
    }
    if (plan->kernels.size() == 1) ++fused;
  }
  std::printf(
      "conv2d_nhwc_wgmma_pool: %d of the conv's %d valid configs pool in the kernel, %d "
      "no longer fit\n",
      fused, valid, over);
  EXPECT_GT(fused, 100);
  EXPECT_LT(over, valid / 10);
}

// The pooled kernel compiles for sm_90a in each of its exchange forms (rows of 8, 16, 32 and 64
// pixels; fp16 and requantized int8): warpgroup barriers, the x neighbour's shuffle.
TEST(Conv2dWgmmaPoolSpace, PooledKernelsCompile) {
  KernelCompiler compiler(nullptr);
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  struct Case {
    autotvm::ConfigEntity tile;
    bool int8;
  };
  const Case cases[] = {{Tile(16, 8, 64, 4, 2), false},
                        {Tile(8, 16, 128, 4, 2, 1), true},
                        {Tile(4, 32, 128, 4, 2), false},
                        {Tile(4, 64, 64, 4, 2), false}};
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan = PoolOp().Specialize(
        c.int8 ? PoolWorkload(56, 128, 128, "int32", "int8") : PoolWorkload(64, 64, 128), c.tile,
        kHopper, c.int8 ? requantize : kBiasRelu);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u) << c.tile.ToString();
    const KernelSpec& spec = plan->kernels[0].spec;
    absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "bar.sync")) << spec.name_expression;
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "shfl.sync.bfly.b32"))
        << spec.name_expression;
    std::printf("compiled %s (%.2f s)\n", spec.name_expression.c_str(), kernel->compile_seconds);
  }
}

}  // namespace
}  // namespace tunejit

// CheckTensorMap's rules (each rejected with its reason before the driver sees it), and
// EncodeTensorMap: without a driver it says so; with a GPU (jit_gpu_test's machines) it encodes.
#include "jit/tensor_map.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

constexpr DevicePtr kAligned = 0x7f0000000000;

// The A operand of a 4096 x 1024 fp16 GEMM as gemm_wgmma.cu loads it.
TensorMapDesc Operand() {
  TensorMapDesc d;
  d.element = TensorMapDesc::Element::kF16;
  d.rank = 2;
  d.dims = {1024, 4096};
  d.strides_bytes = {1024 * 2};
  d.box = {64, 128};
  d.swizzle = TensorMapDesc::Swizzle::k128B;
  return d;
}

std::string Why(const TensorMapDesc& d, DevicePtr address = kAligned) {
  absl::Status s = CheckTensorMap(d, address);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(TensorMap, GoodDescriptionPasses) {
  EXPECT_TRUE(CheckTensorMap(Operand(), kAligned).ok());
  TensorMapDesc d = Operand();
  d.box = {64, 256};  // the largest box
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  d.dims = {8, 3};  // a box may overhang the tensor: TMA fills zeros
  d.strides_bytes = {16};
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
}

TEST(TensorMap, TextNamesTypeDimsBoxAndSwizzle) {
  EXPECT_EQ(TensorMapText(Operand()), "f16 [1024, 4096] box [64, 128] swizzle 128B");
  TensorMapDesc d = Operand();
  d.element = TensorMapDesc::Element::kI8;
  d.swizzle = TensorMapDesc::Swizzle::kNone;
  EXPECT_EQ(TensorMapText(d), "i8 [1024, 4096] box [64, 128]");
}

TEST(TensorMap, EachRuleRejectsWithItsReason) {
  TensorMapDesc d = Operand();
  d.rank = 0;
  EXPECT_THAT(Why(d), HasSubstr("rank 0 outside [1, 5]"));
  d = Operand();
  d.rank = 6;
  EXPECT_THAT(Why(d), HasSubstr("rank 6"));
  EXPECT_THAT(Why(Operand(), kAligned + 8), HasSubstr("not 16-byte aligned"));
  d = Operand();
  d.dims[1] = 0;
  EXPECT_THAT(Why(d), HasSubstr("dimension 1 = 0 outside [1, 2^32]"));
  d = Operand();
  d.dims[0] = (uint64_t{1} << 32) + 1;
  EXPECT_THAT(Why(d), HasSubstr("dimension 0"));
  d = Operand();
  d.box[1] = 257;
  EXPECT_THAT(Why(d), HasSubstr("box dimension 1 = 257 outside [1, 256]"));
  d = Operand();
  d.box[0] = 0;
  EXPECT_THAT(Why(d), HasSubstr("box dimension 0 = 0"));
  d = Operand();
  d.strides_bytes[0] = 1004 * 2;  // K = 1004: rows of 2008 bytes
  EXPECT_THAT(Why(d), HasSubstr("stride of dimension 1 = 2008 bytes is not a multiple of 16"));
  d = Operand();
  d.strides_bytes[0] = uint64_t{1} << 40;
  EXPECT_THAT(Why(d), HasSubstr("below 2^40"));
  d = Operand();
  d.box[0] = 4;  // 8 bytes
  EXPECT_THAT(Why(d), HasSubstr("inner box row is 8 bytes, not a multiple of 16"));
  d = Operand();
  d.box[0] = 128;  // 256 bytes under a 128-byte swizzle
  EXPECT_THAT(Why(d), HasSubstr("256 bytes, more than the 128-byte swizzle span"));
  d.swizzle = TensorMapDesc::Swizzle::kNone;  // fine unswizzled
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  d = Operand();
  d.element = TensorMapDesc::Element::kF32;  // 64 floats = 256 bytes
  d.swizzle = TensorMapDesc::Swizzle::k64B;
  d.box[0] = 16;  // 64 bytes: at the span
  d.strides_bytes[0] = 1024 * 4;
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  d.box[0] = 32;
  EXPECT_THAT(Why(d), HasSubstr("more than the 64-byte swizzle span"));
}

TEST(TensorMap, ElementStridesStepOneToEightOutsideDimensionZero) {
  TensorMapDesc d = Operand();
  d.element_strides[1] = 2;
  d.box[1] = 256;  // 128 rows, every other one
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  EXPECT_EQ(TensorMapText(d), "f16 [1024, 4096] box [64, 256] element strides [1, 2] swizzle 128B");
  d.element_strides[1] = 8;
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  d.element_strides[1] = 9;
  EXPECT_THAT(Why(d), HasSubstr("element stride of dimension 1 = 9 outside [1, 8]"));
  d.element_strides[1] = 0;
  EXPECT_THAT(Why(d), HasSubstr("element stride of dimension 1 = 0"));
  d = Operand();
  d.element_strides[0] = 2;
  EXPECT_THAT(Why(d), HasSubstr("dimension 0 takes no stride"));
}

TensorMapDesc Im2colInput() {  // NHWC f16 [8, 28, 28, 256], 128 pixels of 64 channels
  TensorMapDesc d;
  d.element = TensorMapDesc::Element::kF16;
  d.rank = 4;
  d.dims = {256, 28, 28, 8};
  d.strides_bytes = {256 * 2, 256 * 2 * 28, 256 * 2 * 28 * 28};
  d.box = {64, 1, 1, 1};
  d.swizzle = TensorMapDesc::Swizzle::k128B;
  d.im2col = TensorMapDesc::Im2col{.lower = {-1, -1}, .upper = {-1, -1}, .pixels = 128};
  return d;
}

TEST(TensorMap, Im2colRulesRejectWithTheirReason) {
  EXPECT_TRUE(CheckTensorMap(Im2colInput(), kAligned).ok());
  EXPECT_EQ(TensorMapText(Im2colInput()),
            "f16 [256, 28, 28, 8] box [64, 1, 1, 1] swizzle 128B im2col 128 pixels");
  TensorMapDesc d = Im2colInput();
  d.box[1] = 0;  // unused in im2col mode
  EXPECT_TRUE(CheckTensorMap(d, kAligned).ok());
  d = Im2colInput();
  d.rank = 2;
  EXPECT_THAT(Why(d), HasSubstr("im2col needs rank 3..5, not 2"));
  d = Im2colInput();
  d.im2col->pixels = 0;
  EXPECT_THAT(Why(d), HasSubstr("im2col pixels per load 0 outside [1, 256]"));
  d.im2col->pixels = 257;
  EXPECT_THAT(Why(d), HasSubstr("257"));
  d = Im2colInput();
  d.im2col->lower[1] = -129;  // rank 4: corners within [-128, 128)
  EXPECT_THAT(Why(d), HasSubstr("im2col corner -129 of spatial dimension 1 outside [-128, 128)"));
  d = Im2colInput();
  d.im2col->upper[0] = 128;
  EXPECT_THAT(Why(d), HasSubstr("corner 128"));
  d = Im2colInput();
  d.swizzle = TensorMapDesc::Swizzle::kNone;
  d.box[0] = 264;  // 528 bytes: a multiple of 16, but more channels than one load takes
  EXPECT_THAT(Why(d), HasSubstr("box dimension 0 = 264 outside [1, 256]"));
}

TEST(TensorMap, ElementBytes) {
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kF16), 2u);
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kBF16), 2u);
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kF32), 4u);
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kI32), 4u);
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kI8), 1u);
  EXPECT_EQ(ElementBytes(TensorMapDesc::Element::kU8), 1u);
}

// A bad description fails on the rules first, driver or not; a good one needs the driver.
TEST(TensorMap, EncodeChecksFirstThenNeedsTheDriver) {
  TensorMapDesc bad = Operand();
  bad.box[1] = 300;
  EXPECT_EQ(EncodeTensorMap(bad, kAligned).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<TensorMap> map = EncodeTensorMap(Operand(), kAligned);
  if (!GpuAvailable().ok()) {
    ASSERT_FALSE(map.ok());
    EXPECT_EQ(map.status().code(), absl::StatusCode::kFailedPrecondition) << map.status();
    return;
  }
  // Encoding does not dereference the address; the descriptor is not all zeros.
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(std::any_of(map->bytes.begin(), map->bytes.end(),
                          [](std::byte b) { return b != std::byte{0}; }));
}

}  // namespace
}  // namespace tunejit

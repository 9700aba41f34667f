#include "jit/tensor_map.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "jit/driver_api.h"

namespace tunejit {
namespace {

constexpr uint64_t kMaxDim = uint64_t{1} << 32;
constexpr uint64_t kMaxStride = uint64_t{1} << 40;
constexpr uint32_t kMaxBox = 256;
constexpr uint32_t kMaxElementStride = 8;
constexpr uint64_t kAlignment = 16;

const char* ElementName(TensorMapDesc::Element e) {
  switch (e) {
    case TensorMapDesc::Element::kF16:
      return "f16";
    case TensorMapDesc::Element::kBF16:
      return "bf16";
    case TensorMapDesc::Element::kF32:
      return "f32";
    case TensorMapDesc::Element::kI8:
      return "i8";
    case TensorMapDesc::Element::kU8:
      return "u8";
    case TensorMapDesc::Element::kI32:
      return "i32";
  }
  return "?";
}

// Bytes of the swizzle pattern's row (0: no swizzle).
uint32_t SwizzleSpan(TensorMapDesc::Swizzle s) {
  switch (s) {
    case TensorMapDesc::Swizzle::kNone:
      return 0;
    case TensorMapDesc::Swizzle::k32B:
      return 32;
    case TensorMapDesc::Swizzle::k64B:
      return 64;
    case TensorMapDesc::Swizzle::k128B:
      return 128;
  }
  return 0;
}

CUtensorMapDataType DriverType(TensorMapDesc::Element e) {
  switch (e) {
    case TensorMapDesc::Element::kF16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case TensorMapDesc::Element::kBF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case TensorMapDesc::Element::kF32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case TensorMapDesc::Element::kI8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // TMA copies bytes
    case TensorMapDesc::Element::kU8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case TensorMapDesc::Element::kI32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle DriverSwizzle(TensorMapDesc::Swizzle s) {
  switch (s) {
    case TensorMapDesc::Swizzle::kNone:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
    case TensorMapDesc::Swizzle::k32B:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case TensorMapDesc::Swizzle::k64B:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case TensorMapDesc::Swizzle::k128B:
      return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

absl::Status Bad(const TensorMapDesc& desc, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("TMA map ", TensorMapText(desc), ": ", why));
}

// The im2col rules of cuTensorMapEncodeIm2col beyond the tiled ones (box[0], the channels per
// pixel, is at most 256 like any box dimension).
absl::Status CheckIm2col(const TensorMapDesc& desc) {
  const TensorMapDesc::Im2col& m = *desc.im2col;
  if (desc.rank < 3) return Bad(desc, absl::StrCat("im2col needs rank 3..5, not ", desc.rank));
  if (m.pixels < 1 || m.pixels > TensorMapDesc::kMaxIm2colPixels) {
    return Bad(desc, absl::StrCat("im2col pixels per load ", m.pixels, " outside [1, ",
                                  TensorMapDesc::kMaxIm2colPixels, "]"));
  }
  const int limit = desc.rank == 3 ? 1 << 15 : desc.rank == 4 ? 1 << 7 : 1 << 4;
  for (int i = 0; i < desc.rank - 2; ++i) {
    for (int32_t corner : {m.lower[i], m.upper[i]}) {
      if (corner < -limit || corner >= limit) {
        return Bad(desc, absl::StrCat("im2col corner ", corner, " of spatial dimension ", i,
                                      " outside [", -limit, ", ", limit, ") for rank ", desc.rank));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

size_t ElementBytes(TensorMapDesc::Element element) {
  switch (element) {
    case TensorMapDesc::Element::kF16:
    case TensorMapDesc::Element::kBF16:
      return 2;
    case TensorMapDesc::Element::kF32:
    case TensorMapDesc::Element::kI32:
      return 4;
    case TensorMapDesc::Element::kI8:
    case TensorMapDesc::Element::kU8:
      return 1;
  }
  return 1;
}

std::string TensorMapText(const TensorMapDesc& desc) {
  const int rank = std::clamp(desc.rank, 0, TensorMapDesc::kMaxRank);
  const uint32_t span = SwizzleSpan(desc.swizzle);
  const bool strided =
      std::any_of(desc.element_strides.begin(), desc.element_strides.begin() + rank,
                  [](uint32_t s) { return s != 1; });
  return absl::StrCat(ElementName(desc.element), " [",
                      absl::StrJoin(desc.dims.begin(), desc.dims.begin() + rank, ", "), "] box [",
                      absl::StrJoin(desc.box.begin(), desc.box.begin() + rank, ", "), "]",
                      strided
                          ? absl::StrCat(" element strides [",
                                         absl::StrJoin(desc.element_strides.begin(),
                                                       desc.element_strides.begin() + rank, ", "),
                                         "]")
                          : "",
                      span ? absl::StrCat(" swizzle ", span, "B") : "",
                      desc.im2col ? absl::StrCat(" im2col ", desc.im2col->pixels, " pixels") : "");
}

absl::Status CheckTensorMap(const TensorMapDesc& desc, DevicePtr address) {
  if (desc.rank < 1 || desc.rank > TensorMapDesc::kMaxRank) {
    return Bad(desc,
               absl::StrCat("rank ", desc.rank, " outside [1, ", TensorMapDesc::kMaxRank, "]"));
  }
  if (address % kAlignment != 0) {
    return Bad(desc, absl::StrCat("address 0x", absl::Hex(address), " is not 16-byte aligned"));
  }
  for (int i = 0; i < desc.rank; ++i) {
    if (desc.dims[i] < 1 || desc.dims[i] > kMaxDim) {
      return Bad(desc, absl::StrCat("dimension ", i, " = ", desc.dims[i], " outside [1, 2^32]"));
    }
    const uint32_t step = desc.element_strides[i];
    if (step < 1 || step > kMaxElementStride || (i == 0 && step != 1)) {
      return Bad(desc,
                 absl::StrCat("element stride of dimension ", i, " = ", step,
                              i == 0 ? " (dimension 0 takes no stride: 1)"
                                     : absl::StrCat(" outside [1, ", kMaxElementStride, "]")));
    }
    if (desc.im2col && i > 0) continue;  // an im2col load's box is box[0] x pixels
    if (desc.box[i] < 1 || desc.box[i] > kMaxBox) {
      return Bad(desc, absl::StrCat("box dimension ", i, " = ", desc.box[i], " outside [1, ",
                                    kMaxBox, "]"));
    }
  }
  for (int i = 0; i + 1 < desc.rank; ++i) {
    const uint64_t stride = desc.strides_bytes[i];
    if (stride % kAlignment != 0 || stride == 0 || stride >= kMaxStride) {
      return Bad(desc, absl::StrCat("stride of dimension ", i + 1, " = ", stride,
                                    " bytes is not a multiple of 16 below 2^40"));
    }
  }
  const uint64_t row_bytes = uint64_t{desc.box[0]} * ElementBytes(desc.element);
  if (row_bytes % kAlignment != 0) {
    return Bad(desc,
               absl::StrCat("the inner box row is ", row_bytes, " bytes, not a multiple of 16"));
  }
  const uint32_t span = SwizzleSpan(desc.swizzle);
  if (span != 0 && row_bytes > span) {
    return Bad(desc, absl::StrCat("the inner box row is ", row_bytes, " bytes, more than the ",
                                  span, "-byte swizzle span"));
  }
  return desc.im2col ? CheckIm2col(desc) : absl::OkStatus();
}

absl::StatusOr<TensorMap> EncodeTensorMap(const TensorMapDesc& desc, DevicePtr address) {
  TUNEJIT_RETURN_IF_ERROR(CheckTensorMap(desc, address));
  TUNEJIT_ASSIGN_OR_RETURN(const jit_internal::DriverApi* cu, jit_internal::LoadDriver());
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMap) &&
                alignof(CUtensorMap) <= alignof(TensorMap));
  cuuint32_t element_strides[TensorMapDesc::kMaxRank];
  cuuint64_t dims[TensorMapDesc::kMaxRank];
  cuuint64_t strides[TensorMapDesc::kMaxRank - 1];
  cuuint32_t box[TensorMapDesc::kMaxRank];
  for (int i = 0; i < TensorMapDesc::kMaxRank; ++i) {
    dims[i] = desc.dims[i];
    box[i] = desc.box[i];
    element_strides[i] = desc.element_strides[i];
    if (i + 1 < TensorMapDesc::kMaxRank) strides[i] = desc.strides_bytes[i];
  }
  void* const global = reinterpret_cast<void*>(address);
  CUtensorMap map;
  const CUresult result =
      desc.im2col
          ? cu->cuTensorMapEncodeIm2col(
                &map, DriverType(desc.element), desc.rank, global, dims, strides,
                desc.im2col->lower.data(), desc.im2col->upper.data(), box[0], desc.im2col->pixels,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, DriverSwizzle(desc.swizzle),
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
          : cu->cuTensorMapEncodeTiled(
                &map, DriverType(desc.element), desc.rank, global, dims, strides, box,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, DriverSwizzle(desc.swizzle),
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TUNEJIT_RETURN_IF_ERROR(jit_internal::ToStatus(
      result, absl::StrCat(desc.im2col ? "cuTensorMapEncodeIm2col(" : "cuTensorMapEncodeTiled(",
                           TensorMapText(desc), ")")));
  TensorMap out;
  std::memcpy(out.bytes.data(), &map, sizeof(map));
  return out;
}

}  // namespace tunejit

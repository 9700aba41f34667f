// File: jit/tensor_map.h
// TMA descriptors (CUtensorMap) for Hopper kernels: a plain-data description of a tiled view of a
// global tensor, the rules cuTensorMapEncodeTiled enforces (checked here first, so a bad plan gets
// a message naming the field instead of CUDA_ERROR_INVALID_VALUE), and the encoding itself through
// the dlopen'ed driver. Kernels take the 128-byte result by value as a `const __grid_constant__`
// parameter (kernel_sources/hopper_ptx.cuh, TmaDescriptor).
//
//   TensorMapDesc a{.element = TensorMapDesc::Element::kF16, .rank = 2, .dims = {k, m},
//                   .strides_bytes = {k * 2}, .box = {64, 128},
//                   .swizzle = TensorMapDesc::Swizzle::k128B};
//   TUNEJIT_ASSIGN_OR_RETURN(TensorMap map, EncodeTensorMap(a, buffer.ptr()));
//   args.Add(map);
#ifndef TUNEJIT_JIT_TENSOR_MAP_H_
#define TUNEJIT_JIT_TENSOR_MAP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/device.h"

namespace tunejit {

// A tiled TMA view: dimension 0 is the innermost (contiguous) one, as the driver counts them.
struct TensorMapDesc {
  enum class Element { kF16, kBF16, kF32, kI8, kU8, kI32 };
  enum class Swizzle { kNone, k32B, k64B, k128B };
  static constexpr int kMaxRank = 5;

  Element element = Element::kF16;
  int rank = 2;
  std::array<uint64_t, kMaxRank> dims{};               // elements per dimension
  std::array<uint64_t, kMaxRank - 1> strides_bytes{};  // of dimensions 1..rank-1
  std::array<uint32_t, kMaxRank> box{};                // elements per dimension of one copy
  Swizzle swizzle = Swizzle::kNone;
  // Traversal step of each dimension (1..8; dimension 0's must be 1): a box of box[i] elements
  // along dimension i brings ceil(box[i] / element_strides[i]) of them, every element_strides[i]-th
  // from the load's coordinate, which is a strided convolution's input pixels. In im2col mode
  // the pixels step so through the bounding box.
  std::array<uint32_t, kMaxRank> element_strides{1, 1, 1, 1, 1};
  // Outside the tensor TMA reads zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE): tails need no masks.

  // Im2col mode (cuTensorMapEncodeIm2col) of a tensor {C, spatial..., N}, rank 3..5: one load
  // brings `pixels` consecutive pixels (the spatial dimensions innermost first, then N) of box[0]
  // channels each. The pixels walk the bounding box [lower, size - 1 + upper] of each spatial
  // dimension (innermost first), which a load's per-dimension offsets shift: a convolution's
  // output pixels are the box with lower = -pad and upper = pad - dilation * (kernel - 1), and
  // tap (r, s) is the offset {s * dilation, r * dilation}. box[1..] are unused.
  static constexpr uint32_t kMaxIm2colPixels = 256;  // pixels of one im2col load
  struct Im2col {
    std::array<int32_t, kMaxRank - 2> lower{};
    std::array<int32_t, kMaxRank - 2> upper{};
    uint32_t pixels = 0;
    friend bool operator==(const Im2col&, const Im2col&) = default;
  };
  std::optional<Im2col> im2col;

  friend bool operator==(const TensorMapDesc&, const TensorMapDesc&) = default;
};

size_t ElementBytes(TensorMapDesc::Element element);
// "f16 [4096, 1024] box [64, 128] swizzle 128B", for messages.
std::string TensorMapText(const TensorMapDesc& desc);

// The driver's rules (cuTensorMapEncodeTiled, CUDA 12/13 documentation) for a non-interleaved
// tiled map at `address`: rank 1..5; dims in [1, 2^32]; strides multiples of 16 bytes below
// 2^40; box dims in [1, 256] (a box may overhang the tensor: TMA fills zeros); the inner box row
// (box[0] * element bytes) a multiple of 16 bytes and, when swizzled, at most the swizzle span
// (32/64/128 bytes); element strides in [1, 8], dimension 0's 1; the address 16-byte aligned. An
// im2col map: rank 3..5, box[0] the channels (a box dimension like the others), 1..256 pixels, each
// corner within [-L, L) where CUDA's L is 2^15, 2^7, 2^4 for rank 3, 4, 5. InvalidArgument names
// the rule.
absl::Status CheckTensorMap(const TensorMapDesc& desc, DevicePtr address);

// The driver's opaque descriptor (CUtensorMap: 128 bytes, 128-byte aligned in CUDA 13).
struct alignas(128) TensorMap {
  std::array<std::byte, 128> bytes{};
};

// CheckTensorMap, then cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col (L2 promotion 256
// bytes, no interleave, zero fill). Needs the driver (FailedPrecondition without one), not a
// current context.
absl::StatusOr<TensorMap> EncodeTensorMap(const TensorMapDesc& desc, DevicePtr address);

}  // namespace tunejit

#endif  // TUNEJIT_JIT_TENSOR_MAP_H_

// File: executor/host_weights.h
// Conv / dense weights prepared on the host in their kernels' layout and precision, one output
// channel (row) at a time, with the rows of every tensor spread over all cores. Rows are read
// straight from the weight file's float32 bytes (any alignment: a safetensors mapping), reordered
// within the row, converted (float32 as given, float16 rounded to nearest even (common/half.h),
// or int8 per output channel (graph/quantize.h)) and written into one buffer per tensor. A
// consumer (the device upload) receives the prepared bytes unit by unit, in order, on the calling
// thread, while the other threads prepare the units after them, so the copy overlaps the work.
//
// Every reorder the kernels need is a transpose within one row, [a][b] -> [b][a]:
//   conv OIHW -> OHWI (tensor-core templates):          a = CI, b = KH * KW
//   dense columns CHW -> HWC (a flattened NHWC input):  a = C,  b = H * W
//   none:                                               a = row length, b = 1
//
//   const WeightRows conv{.source = weights.Get(w), .rows = 64, .a = 3, .b = 9,
//                         .element = WeightElement::kFloat16};
//   TUNEJIT_ASSIGN_OR_RETURN(
//       PreparedWeightSet set,
//       PrepareWeights({conv}, {}, [&](int tensor, size_t offset, absl::Span<const uint8_t> b) {
//         return buffer.CopyFromHost(b.data(), b.size(), offset);
//       }));
#ifndef TUNEJIT_EXECUTOR_HOST_WEIGHTS_H_
#define TUNEJIT_EXECUTOR_HOST_WEIGHTS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tunejit {

enum class WeightElement { kFloat32, kFloat16, kInt8 };

size_t ElementBytes(WeightElement element);

// One weight tensor to prepare: `rows` rows of a * b float32 values, each [a][b] -> [b][a].
struct WeightRows {
  absl::Span<const uint8_t> source = {};  // rows * a * b float32 values, as the file holds them
  int64_t rows = 0;
  int64_t a = 0;
  int64_t b = 1;
  WeightElement element = WeightElement::kFloat32;

  int64_t RowElements() const { return a * b; }
  size_t RowBytes() const { return static_cast<size_t>(RowElements()) * ElementBytes(element); }
  size_t Bytes() const { return static_cast<size_t>(rows) * RowBytes(); }  // prepared
  // float32 in the file's order: the prepared bytes are the source's, nothing is allocated.
  bool AsGiven() const { return element == WeightElement::kFloat32 && (a == 1 || b == 1); }
};

struct PreparedWeights {
  absl::Span<const uint8_t> bytes;  // the kernels' layout: in `storage`, or the source (AsGiven)
  std::vector<float> scales;        // int8: s_w of each row, for the epilogue (graph/quantize.h)
  std::unique_ptr<uint8_t[]> storage;
};

struct PreparedWeightSet {
  std::vector<PreparedWeights> tensors;  // one per WeightRows, in order
  double prepare_seconds = 0;            // from the start until the last row was prepared
};

struct PrepareOptions {
  int threads = 0;  // 0: one per core; never more than there are unit_bytes of work
  // Prepared bytes per unit of work (whole rows, at least one): one device copy each, so large
  // enough that a copy's fixed cost is small, small enough that the rows of one large tensor
  // spread over every core and the first copy starts early.
  size_t unit_bytes = size_t{4} << 20;
};

// Receives the prepared bytes [offset, offset + bytes.size()) of tensors[tensor], on the thread
// that called PrepareWeights: tensor after tensor, offsets increasing, every byte once. Its first
// error stops the preparation and is returned.
using PreparedUnitFn =
    absl::FunctionRef<absl::Status(int tensor, size_t offset, absl::Span<const uint8_t> bytes)>;

// InvalidArgument when a tensor's source is not rows * a * b float32 values.
absl::StatusOr<PreparedWeightSet> PrepareWeights(absl::Span<const WeightRows> tensors,
                                                 const PrepareOptions& options,
                                                 PreparedUnitFn on_unit);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_HOST_WEIGHTS_H_

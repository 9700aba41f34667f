// File: examples/fashion_mnist/idx_file.h
// The IDX format of the MNIST and Fashion-MNIST datasets: a 4-byte magic (0, 0, element type,
// rank), `rank` big-endian uint32 dimensions, then the elements in row-major order. Only element
// type 0x08 (unsigned byte) is read: it is what the image and label files use. A gzip-compressed
// file is refused with a hint, since Debian's dataset-fashion-mnist ships them gzipped.
//
//   TUNEJIT_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile("t10k-images-idx3-ubyte"));
//   images.dims;  // {10000, 28, 28}
#ifndef TUNEJIT_EXAMPLES_FASHION_MNIST_IDX_FILE_H_
#define TUNEJIT_EXAMPLES_FASHION_MNIST_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tunejit {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;  // row-major, the product of dims
};

inline constexpr int kMaxIdxRank = 4;

// InvalidArgument (naming `name`) for a truncated header or body, bytes after the data, a rank of
// 0 or over kMaxIdxRank, a zero dimension, a bad magic or gzip data; Unimplemented for an element
// type other than unsigned byte.
absl::StatusOr<IdxArray> ParseIdx(absl::Span<const uint8_t> bytes, absl::string_view name);
// NotFound when the file cannot be opened; otherwise as ParseIdx.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

}  // namespace tunejit

#endif  // TUNEJIT_EXAMPLES_FASHION_MNIST_IDX_FILE_H_

// File: graph/safetensors.h
// Reading and writing safetensors files (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [64, 3, 3, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the byte buffer; offsets are relative to the buffer start. The reader memory-maps the file
// and validates it as strictly as the reference implementation: every tensor's byte range must
// match its dtype and shape, ranges must tile the buffer exactly (no overlap, no gap, no trailing
// bytes), names are unique. Errors are InvalidArgument naming the file, the tensor and the reason.
//
//   TUNEJIT_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::Open("vgg16.safetensors"));
//   TUNEJIT_ASSIGN_OR_RETURN(TensorView w, f.Get("features.0.weight"));
//   // w.dtype == DType::kF32, w.shape == {64, 3, 3, 3}, w.bytes.size() == 6912
//   TUNEJIT_RETURN_IF_ERROR(WriteSafetensors("out.safetensors", {w}));
//
// Tensor bytes are NOT necessarily aligned to their element size (the header length decides where
// the buffer starts): copy them (memcpy) rather than casting the pointer.
#ifndef TUNEJIT_GRAPH_SAFETENSORS_H_
#define TUNEJIT_GRAPH_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/file_io.h"
#include "graph/dtype.h"

namespace tunejit {

// One tensor: a view of bytes owned elsewhere (the mapped file, or the caller when writing).
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  absl::Span<const uint8_t> bytes;
  int64_t NumElements() const;
};

// A parsed header: tensors in buffer order, with offsets relative to the buffer start.
struct SafetensorsHeader {
  struct Entry {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
  };
  std::vector<Entry> tensors;  // sorted by begin
  std::map<std::string, std::string> metadata;
  uint64_t buffer_offset = 0;  // 8 + N: where the buffer starts in the file
};

// Validates a whole file image (header + buffer) held in memory. `source` names it in errors.
absl::StatusOr<SafetensorsHeader> ParseSafetensors(absl::Span<const uint8_t> file,
                                                   std::string_view source);

// The largest header accepted (the reference implementation's limit is 100 MB too): a corrupt
// length field must not make us parse gigabytes.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// A memory-mapped, validated safetensors file. Move-only; unmaps in the destructor. Views returned
// by Get() stay valid while the object (or the one it was moved into) lives.
class SafetensorsFile {
 public:
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  // NotFound naming the file and tensor when absent.
  absl::StatusOr<TensorView> Get(std::string_view name) const;
  bool Contains(std::string_view name) const;
  std::vector<std::string> Names() const;  // buffer order
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile(std::string path, MappedFile file)
      : path_(std::move(path)), file_(std::move(file)) {}

  std::string path_;
  MappedFile file_;  // the views point into it
  SafetensorsHeader header_;
};

// The file image of `tensors` (in the given order) and `metadata`: header padded with spaces to a
// multiple of 8 bytes as the reference writer does. InvalidArgument when a view's byte count does
// not match its dtype and shape, or names repeat.
absl::StatusOr<std::string> SerializeSafetensors(
    absl::Span<const TensorView> tensors, const std::map<std::string, std::string>& metadata = {});
// SerializeSafetensors, written to `path` (through a temporary file renamed into place).
absl::Status WriteSafetensors(const std::string& path, absl::Span<const TensorView> tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_SAFETENSORS_H_

// File: cli/raw_floats.h
// Raw little-endian float32 files (numpy's `a.astype('<f4').tofile(path)`, read back with
// `np.fromfile(path, '<f4')`): how `tunejit run --input/--output` exchanges tensors with other
// frameworks, e.g. scripts/export_onnx.py's PyTorch reference; raw little-endian int64 files
// (`ids.astype('<i8').tofile(path)`) for a model's int64 input (BERT's token ids).
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> x, ReadFloats("input.bin"));
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadInt64s("input_ids.bin"));
//   TUNEJIT_RETURN_IF_ERROR(WriteFloats("logits.bin", logits));
#ifndef TUNEJIT_CLI_RAW_FLOATS_H_
#define TUNEJIT_CLI_RAW_FLOATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tunejit::cli {

// NotFound when the file cannot be opened; InvalidArgument when its size is not a multiple of 4.
absl::StatusOr<std::vector<float>> ReadFloats(const std::string& path);
// The same for int64 values (a size not a multiple of 8: InvalidArgument).
absl::StatusOr<std::vector<int64_t>> ReadInt64s(const std::string& path);
absl::Status WriteFloats(const std::string& path, absl::Span<const float> values);

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_RAW_FLOATS_H_

// File: cli/raw_floats.h
// Raw little-endian float32 files (numpy's `a.astype('<f4').tofile(path)`, read back with
// `np.fromfile(path, '<f4')`): how `tunejit run --input/--output` exchanges tensors with other
// frameworks, e.g. scripts/export_onnx.py's PyTorch reference.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> x, ReadFloats("input.bin"));
//   TUNEJIT_RETURN_IF_ERROR(WriteFloats("logits.bin", logits));
#ifndef TUNEJIT_CLI_RAW_FLOATS_H_
#define TUNEJIT_CLI_RAW_FLOATS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tunejit::cli {

// NotFound when the file cannot be opened; InvalidArgument when its size is not a multiple of 4.
absl::StatusOr<std::vector<float>> ReadFloats(const std::string& path);
absl::Status WriteFloats(const std::string& path, absl::Span<const float> values);

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_RAW_FLOATS_H_

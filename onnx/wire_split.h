// File: onnx/wire_split.h
// Internal to the ONNX importer (onnx/import.h). protobuf's parser copies every bytes field into
// a string of its own, so parsing a model copies all of its weights (TensorProto.raw_data) once
// before the importer reads them. SplitInitializerData walks the protobuf wire format of a
// ModelProto and returns a skeleton, the same model without the raw_data of its large
// initializers (graph.initializer), and where in `bytes` each removed raw_data lies: the importer
// parses the skeleton (kilobytes) and reads the weights in place.
//
//   std::optional<SplitModel> split = SplitInitializerData(file.bytes());
//   model.ParseFromString(split->skeleton);
//   split->raw_data[i];  // initializer i's raw_data; empty when left in the skeleton
//
// nullopt when there is nothing to remove, or when the bytes hold anything the walk does not
// take apart exactly as protobuf would (a field repeated where protobuf merges or keeps the last,
// a group, a truncated field): the caller then parses `bytes` as they are, and protobuf's own
// errors and merge rules apply. Parsing the skeleton and setting each removed raw_data back gives
// the message `bytes` parses to.
#ifndef TUNEJIT_ONNX_WIRE_SPLIT_H_
#define TUNEJIT_ONNX_WIRE_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace tunejit::onnx_import {

// raw_data smaller than this stays in the skeleton: not worth a view.
inline constexpr size_t kMinSplitRawData = 4096;

struct SplitModel {
  std::string skeleton;
  // By graph.initializer index (every initializer has an entry): the raw_data removed from it,
  // a view into the bytes given; empty when it was left in the skeleton.
  std::vector<absl::Span<const uint8_t>> raw_data;
};

std::optional<SplitModel> SplitInitializerData(absl::Span<const uint8_t> bytes);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_WIRE_SPLIT_H_

// File: onnx/tensor.h
// Internal to the ONNX importer (onnx/import.h): TensorProto values (initializers, Constant
// nodes) decoded to packed little-endian bytes, from raw_data, the typed repeated fields, or an
// external-data file. Sizes are checked against dims before anything is allocated, so a hostile
// file cannot make us allocate more than it actually holds (external data: more than the data
// file holds).
//
//   TUNEJIT_ASSIGN_OR_RETURN(ConstTensor w, DecodeTensor(proto, {.dir = "/models", .source = s}));
//   std::vector<float> f = w.Floats();
#ifndef TUNEJIT_ONNX_TENSOR_H_
#define TUNEJIT_ONNX_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/shared_bytes.h"
#include "graph/dtype.h"
#include "onnx/onnx_pb.h"

namespace tunejit::onnx_import {

// Largest tensor or activation the importer accepts, in elements: bounds every size computation
// (no int64 overflow in shapes) far above any CNN layer.
inline constexpr int64_t kMaxElements = int64_t{1} << 36;

// A constant: packed bytes of `dtype`, row-major over `dims`; an initializer's bytes may be a
// view into the model file (shared with the weights that use it as they are).
struct ConstTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  SharedBytes bytes;

  int64_t NumElements() const;
  // Values as float / double / int64, converted from any numeric dtype.
  std::vector<float> Floats() const;
  std::vector<double> Doubles() const;
  std::vector<int64_t> Ints() const;
};

// The packed bytes of `values` (empty in, empty out: memcpy must not see an empty vector's null
// data pointer, which fuzzing found through an empty constant).
template <typename T>
std::vector<uint8_t> PackBytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// `bytes` read back as floats (a trailing partial float is ignored).
inline std::vector<float> UnpackFloats(absl::Span<const uint8_t> bytes) {
  std::vector<float> f(bytes.size() / sizeof(float));
  if (!f.empty()) std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
  return f;
}

struct TensorSource {
  std::string dir;     // external-data directory; empty refuses external data
  std::string source;  // the model, for error messages
};

// Our dtype for an ONNX TensorProto::DataType; nullopt for the ones we do not decode (float16,
// strings, complex...).
std::optional<DType> DTypeFromOnnx(int32_t elem_type);
// ONNX's name of a data type ("FLOAT", "INT64", ...), for messages.
std::string OnnxTypeName(int32_t elem_type);

// Product of `dims` when each is >= 0 and the product is at most kMaxElements; nullopt otherwise.
std::optional<int64_t> CheckedElements(const std::vector<int64_t>& dims);

// InvalidArgument naming the tensor for a size mismatch, an unsupported dtype or bad dims;
// NotFound naming the file for missing external data.
// `raw`, when given, is the raw_data SplitInitializerData removed from `proto` (onnx/wire_split.h),
// shared by the tensor, not copied.
absl::StatusOr<ConstTensor> DecodeTensor(const onnx::TensorProto& proto, const TensorSource& src,
                                         const SharedBytes* raw = nullptr);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_TENSOR_H_

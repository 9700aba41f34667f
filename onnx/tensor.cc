#include "onnx/tensor.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunejit::onnx_import {
namespace {

using Proto = onnx::TensorProto;

absl::Status TensorError(const TensorSource& src, const Proto& t, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(src.source, ": tensor '", t.name(), "' (",
                                                 OnnxTypeName(t.data_type()), " [",
                                                 absl::StrJoin(t.dims(), ", "), "]): ", why));
}

// Packs a repeated field's values as `Out` (e.g. int32_data holding int8 values).
template <typename Out, typename Field>
std::vector<uint8_t> Pack(const Field& field) {
  std::vector<uint8_t> bytes(static_cast<size_t>(field.size()) * sizeof(Out));
  for (int i = 0; i < field.size(); ++i) {
    const Out v = static_cast<Out>(field.Get(i));
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(Out), &v, sizeof(Out));
  }
  return bytes;
}

// The typed field that holds `dtype` when raw_data is absent (onnx.proto's table), packed.
// nullopt when the dtype has no typed field we read.
std::optional<std::vector<uint8_t>> TypedData(const Proto& t, DType dtype, int* count) {
  switch (dtype) {
    case DType::kF32:
      *count = t.float_data_size();
      return Pack<float>(t.float_data());
    case DType::kF64:
      *count = t.double_data_size();
      return Pack<double>(t.double_data());
    case DType::kI64:
      *count = t.int64_data_size();
      return Pack<int64_t>(t.int64_data());
    case DType::kI32:
      *count = t.int32_data_size();
      return Pack<int32_t>(t.int32_data());
    case DType::kI8:
      *count = t.int32_data_size();
      return Pack<int8_t>(t.int32_data());
    case DType::kU8:
    case DType::kBool:
      *count = t.int32_data_size();
      return Pack<uint8_t>(t.int32_data());
    default:
      return std::nullopt;
  }
}

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

absl::StatusOr<ExternalRef> ParseExternalRef(const Proto& t, const TensorSource& src) {
  ExternalRef ref;
  for (const onnx::StringStringEntryProto& e : t.external_data()) {
    uint64_t v = 0;
    if (e.key() == "location") {
      ref.location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      if (!absl::SimpleAtoi(e.value(), &v)) {
        return TensorError(
            src, t, absl::StrCat("external data ", e.key(), " '", e.value(), "' is not a number"));
      }
      if (e.key() == "offset") ref.offset = v;
      if (e.key() == "length") ref.length = v;
    }
  }
  if (ref.location.empty()) return TensorError(src, t, "external data without a location");
  return ref;
}

// The data file of an external tensor, which must lie under the model's directory (as ONNX's
// checker requires): a model must not make us read arbitrary files.
absl::StatusOr<std::filesystem::path> ExternalPath(const Proto& t, const ExternalRef& ref,
                                                   const TensorSource& src) {
  if (src.dir.empty()) {
    return TensorError(src, t,
                       absl::StrCat("external data ('", ref.location,
                                    "') can only be read from a model file (no directory here)"));
  }
  const std::filesystem::path location(ref.location);
  bool escapes = location.is_absolute() || location.has_root_name();
  for (const auto& part : location) escapes = escapes || part == "..";
  if (escapes) {
    return TensorError(src, t,
                       absl::StrCat("external data location '", ref.location,
                                    "' must be a relative path inside the model's directory"));
  }
  return std::filesystem::path(src.dir) / location;
}

absl::StatusOr<std::vector<uint8_t>> ReadExternal(const Proto& t, int64_t expected_bytes,
                                                  const TensorSource& src) {
  TUNEJIT_ASSIGN_OR_RETURN(ExternalRef ref, ParseExternalRef(t, src));
  TUNEJIT_ASSIGN_OR_RETURN(std::filesystem::path path, ExternalPath(t, ref, src));
  const uint64_t length = ref.length.value_or(static_cast<uint64_t>(expected_bytes));
  if (length != static_cast<uint64_t>(expected_bytes)) {
    return TensorError(src, t,
                       absl::StrCat("external data length ", length, " != ", expected_bytes,
                                    " bytes that the dims and type need"));
  }
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(absl::StrCat(src.source, ": external data file ", path.string(),
                                            " of tensor '", t.name(), "': ", ec.message()));
  }
  if (ref.offset > size || size - ref.offset < length) {
    return TensorError(src, t,
                       absl::StrCat("external data file ", path.string(), " has ", size,
                                    " bytes; the tensor needs bytes [", ref.offset, ", ",
                                    ref.offset + length, ") (truncated?)"));
  }
  std::vector<uint8_t> bytes(length);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(ref.offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  if (!in) {
    return absl::DataLossError(
        absl::StrCat(src.source, ": cannot read external data file ", path.string()));
  }
  return bytes;
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element i of `t` converted to `Out` (any numeric dtype DecodeTensor produces).
template <typename Out>
Out Element(const ConstTensor& t, size_t i) {
  const uint8_t* p = t.bytes.data() + i * DTypeSize(t.dtype);
  switch (t.dtype) {
    case DType::kF32:
      return static_cast<Out>(Load<float>(p));
    case DType::kF64:
      return static_cast<Out>(Load<double>(p));
    case DType::kI64:
      return static_cast<Out>(Load<int64_t>(p));
    case DType::kI32:
      return static_cast<Out>(Load<int32_t>(p));
    case DType::kI8:
      return static_cast<Out>(Load<int8_t>(p));
    case DType::kU8:
    case DType::kBool:
      return static_cast<Out>(Load<uint8_t>(p));
    default:
      return Out{};
  }
}

// Float to int64 without UB for NaN or out-of-range values (they become 0 / saturate).
int64_t SafeInt(double v) {
  if (!(v == v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace

std::optional<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case Proto::FLOAT:
      return DType::kF32;
    case Proto::DOUBLE:
      return DType::kF64;
    case Proto::INT64:
      return DType::kI64;
    case Proto::INT32:
      return DType::kI32;
    case Proto::INT8:
      return DType::kI8;
    case Proto::UINT8:
      return DType::kU8;
    case Proto::BOOL:
      return DType::kBool;
    default:
      return std::nullopt;
  }
}

std::string OnnxTypeName(int32_t elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<Proto::DataType>(elem_type));
  }
  return absl::StrCat("type ", elem_type);
}

std::optional<int64_t> CheckedElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) return std::nullopt;
    n *= d;
  }
  return n;
}

int64_t ConstTensor::NumElements() const {
  return static_cast<int64_t>(bytes.size()) / DTypeSize(dtype);
}

std::vector<float> ConstTensor::Floats() const {
  std::vector<float> out(static_cast<size_t>(NumElements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = Element<float>(*this, i);
  return out;
}

std::vector<double> ConstTensor::Doubles() const {
  std::vector<double> out(static_cast<size_t>(NumElements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = Element<double>(*this, i);
  return out;
}

std::vector<int64_t> ConstTensor::Ints() const {
  std::vector<int64_t> out(static_cast<size_t>(NumElements()));
  const bool floating = dtype == DType::kF32 || dtype == DType::kF64;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = floating ? SafeInt(Element<double>(*this, i)) : Element<int64_t>(*this, i);
  }
  return out;
}

absl::StatusOr<ConstTensor> DecodeTensor(const Proto& t, const TensorSource& src,
                                         const SharedBytes* raw) {
  std::optional<DType> dtype = DTypeFromOnnx(t.data_type());
  if (!dtype) return TensorError(src, t, "element type not supported");
  ConstTensor out{t.name(), *dtype, {t.dims().begin(), t.dims().end()}, {}};
  std::optional<int64_t> count = CheckedElements(out.dims);
  if (!count) return TensorError(src, t, "dims must be >= 0 and their product not too large");
  const int64_t bytes = *count * DTypeSize(*dtype);
  if (t.has_segment()) {
    return TensorError(src, t, "segmented tensors are not supported");
  }
  if (t.data_location() == Proto::EXTERNAL) {
    TUNEJIT_ASSIGN_OR_RETURN(out.bytes, ReadExternal(t, bytes, src));
    return out;
  }
  if (raw != nullptr || t.has_raw_data()) {
    const size_t size = raw != nullptr ? raw->size() : t.raw_data().size();
    if (static_cast<int64_t>(size) != bytes) {
      return TensorError(
          src, t,
          absl::StrCat("raw_data has ", size, " bytes, expected ", bytes, " (truncated file?)"));
    }
    if (raw != nullptr) {
      out.bytes = *raw;
    } else {
      const auto* data = reinterpret_cast<const uint8_t*>(t.raw_data().data());
      out.bytes = std::vector<uint8_t>(data, data + size);
    }
    return out;
  }
  int values = 0;
  std::optional<std::vector<uint8_t>> typed = TypedData(t, *dtype, &values);
  if (!typed || values != *count) {
    return TensorError(src, t,
                       absl::StrCat("holds ", values, " values, expected ", *count,
                                    " (missing data? an initializer without raw_data or "
                                    "typed values)"));
  }
  out.bytes = *std::move(typed);
  return out;
}

}  // namespace tunejit::onnx_import

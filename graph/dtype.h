// File: graph/dtype.h
// Element types of graph tensors and safetensors files, with safetensors' names ("F32", "I8", ...)
// and byte sizes. One enum for both so weights bind to graph tensors without a translation table.
//
//   std::optional<DType> t = ParseDTypeName("F32");  // DType::kF32
//   DTypeSize(*t);                                   // 4
#ifndef TUNEJIT_GRAPH_DTYPE_H_
#define TUNEJIT_GRAPH_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace tunejit {

enum class DType {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64
};

// Bytes per element.
inline int DTypeSize(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kU8:
    case DType::kI8:
    case DType::kF8E5M2:
    case DType::kF8E4M3:
      return 1;
    case DType::kI16:
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI32:
    case DType::kU32:
    case DType::kF32:
      return 4;
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      return 8;
  }
  return 0;
}

// The safetensors spelling ("F32", "BF16", "BOOL", ...).
inline std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kBool:
      return "BOOL";
    case DType::kU8:
      return "U8";
    case DType::kI8:
      return "I8";
    case DType::kF8E5M2:
      return "F8_E5M2";
    case DType::kF8E4M3:
      return "F8_E4M3";
    case DType::kI16:
      return "I16";
    case DType::kU16:
      return "U16";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
    case DType::kU32:
      return "U32";
    case DType::kF32:
      return "F32";
    case DType::kF64:
      return "F64";
    case DType::kI64:
      return "I64";
    case DType::kU64:
      return "U64";
  }
  return "?";
}

// nullopt for a name safetensors does not define (names are case-sensitive, as in the format).
inline std::optional<DType> ParseDTypeName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DType::kU64); ++i) {
    if (DTypeName(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_DTYPE_H_

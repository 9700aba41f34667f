#include "onnx/const_ops.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunejit::onnx_import {
namespace {

std::string Text(const Dims& dims) { return absl::StrCat("[", absl::StrJoin(dims, ", "), "]"); }

// Row-major element strides of `dims`.
Dims Strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// out[o] = in[sum over k of tables[k][o_k]] for every multi-index o of `out_dims` (tables[k] has
// out_dims[k] element offsets into `in`): the one loop behind broadcast, transpose, slice, gather.
ConstTensor Remap(const ConstTensor& in, const Dims& out_dims, const std::vector<Dims>& tables) {
  const size_t es = static_cast<size_t>(DTypeSize(in.dtype));
  const int64_t count = DimsProduct(out_dims);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * es);
  if (count == 0) return ConstTensor{"", in.dtype, out_dims, std::move(bytes)};
  const size_t rank = out_dims.size();
  if (rank == 0) {
    std::memcpy(bytes.data(), in.bytes.data(), es);
    return ConstTensor{"", in.dtype, out_dims, std::move(bytes)};
  }
  Dims idx(rank, 0);
  uint8_t* dst = bytes.data();
  const Dims& inner = tables.back();
  while (true) {
    int64_t base = 0;
    for (size_t k = 0; k + 1 < rank; ++k) base += tables[k][idx[k]];
    for (int64_t j = 0; j < out_dims.back(); ++j, dst += es) {
      std::memcpy(dst, in.bytes.data() + static_cast<size_t>(base + inner[j]) * es, es);
    }
    int k = static_cast<int>(rank) - 2;
    for (; k >= 0; --k) {
      if (++idx[k] < out_dims[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
  return ConstTensor{"", in.dtype, out_dims, std::move(bytes)};
}

// The identity table of an axis of `dim` elements with element stride `stride`.
Dims Steps(int64_t dim, int64_t stride, int64_t first = 0, int64_t step = 1) {
  Dims t(static_cast<size_t>(dim));
  for (int64_t i = 0; i < dim; ++i) t[i] = (first + i * step) * stride;
  return t;
}

template <typename T>
void Store(std::vector<uint8_t>& bytes, size_t i, T v) {
  std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
}

// A double as integer type T: truncated toward zero, NaN 0, saturated at T's range.
template <typename T>
T SaturateCast(double v) {
  if (!(v == v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

bool IsFloatType(DType t) { return t == DType::kF32 || t == DType::kF64; }

ConstTensor FromDoubles(DType dtype, Dims dims, const std::vector<double>& values) {
  std::vector<uint8_t> t(values.size() * DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (dtype) {
      case DType::kF32:
        Store(t, i, static_cast<float>(v));
        break;
      case DType::kF64:
        Store(t, i, v);
        break;
      case DType::kI64:
        Store(t, i, SaturateCast<int64_t>(v));
        break;
      case DType::kI32:
        Store(t, i, SaturateCast<int32_t>(v));
        break;
      case DType::kI8:
        Store(t, i, SaturateCast<int8_t>(v));
        break;
      case DType::kU8:
        Store(t, i, SaturateCast<uint8_t>(v));
        break;
      default:  // BOOL
        Store(t, i, static_cast<uint8_t>(v != 0));
        break;
    }
  }
  return ConstTensor{"", dtype, std::move(dims), std::move(t)};
}

ConstTensor FromInts(DType dtype, Dims dims, const std::vector<int64_t>& values) {
  if (IsFloatType(dtype)) {
    return FromDoubles(dtype, std::move(dims), std::vector<double>(values.begin(), values.end()));
  }
  std::vector<uint8_t> t(values.size() * DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    switch (dtype) {
      case DType::kI64:
        Store(t, i, v);
        break;
      case DType::kI32:  // ONNX Cast wraps narrowing integer conversions, as C++ does
        Store(t, i, static_cast<int32_t>(v));
        break;
      case DType::kI8:
        Store(t, i, static_cast<int8_t>(v));
        break;
      case DType::kU8:
        Store(t, i, static_cast<uint8_t>(v));
        break;
      default:  // BOOL
        Store(t, i, static_cast<uint8_t>(v != 0));
        break;
    }
  }
  return ConstTensor{"", dtype, std::move(dims), std::move(t)};
}

ConstTensor WithDims(const ConstTensor& in, Dims dims) {
  ConstTensor out = in;
  out.dims = std::move(dims);
  return out;
}

absl::StatusOr<ConstTensor> BroadcastTo(const ConstTensor& in, const Dims& dims) {
  if (in.dims == dims) return in;
  const size_t rank = dims.size();
  if (in.dims.size() > rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(Text(in.dims), " does not broadcast to ", Text(dims), " (higher rank)"));
  }
  const size_t lead = rank - in.dims.size();
  const Dims in_strides = Strides(in.dims);
  std::vector<Dims> tables(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t d = k < lead ? 1 : in.dims[k - lead];
    if (d != dims[k] && d != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(Text(in.dims), " does not broadcast to ", Text(dims), " (dim ", k, ")"));
    }
    tables[k] = d == 1 ? Dims(static_cast<size_t>(dims[k]), 0) : Steps(d, in_strides[k - lead]);
  }
  return Remap(in, dims, tables);
}

ConstTensor TransposeConst(const ConstTensor& in, const Dims& perm) {
  const Dims strides = Strides(in.dims);
  Dims out_dims;
  std::vector<Dims> tables;
  for (int64_t p : perm) {
    out_dims.push_back(in.dims[p]);
    tables.push_back(Steps(in.dims[p], strides[p]));
  }
  return Remap(in, out_dims, tables);
}

ConstTensor SliceConst(const ConstTensor& in, const std::vector<AxisSlice>& slices) {
  const Dims strides = Strides(in.dims);
  Dims out_dims = in.dims;
  std::vector<Dims> tables;
  for (size_t k = 0; k < in.dims.size(); ++k) tables.push_back(Steps(in.dims[k], strides[k]));
  for (const AxisSlice& s : slices) {
    out_dims[s.axis] = s.range.count;
    tables[s.axis] = Steps(s.range.count, strides[s.axis], s.range.start, s.range.step);
  }
  return Remap(in, out_dims, tables);
}

ConstTensor GatherConst(const ConstTensor& data, int64_t axis, const Dims& index_dims,
                        const std::vector<int64_t>& indices) {
  const Dims strides = Strides(data.dims);
  Dims flat_dims = data.dims;
  flat_dims[axis] = static_cast<int64_t>(indices.size());
  std::vector<Dims> tables;
  for (size_t k = 0; k < data.dims.size(); ++k) {
    if (static_cast<int64_t>(k) == axis) {
      Dims t;
      for (int64_t i : indices) t.push_back(i * strides[k]);
      tables.push_back(std::move(t));
    } else {
      tables.push_back(Steps(data.dims[k], strides[k]));
    }
  }
  ConstTensor out = Remap(data, flat_dims, tables);
  out.dims.assign(data.dims.begin(), data.dims.begin() + axis);
  out.dims.insert(out.dims.end(), index_dims.begin(), index_dims.end());
  out.dims.insert(out.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  return out;
}

ConstTensor GatherElementsConst(const ConstTensor& data, int64_t axis, const Dims& index_dims,
                                const std::vector<int64_t>& indices) {
  const size_t es = static_cast<size_t>(DTypeSize(data.dtype));
  const Dims strides = Strides(data.dims);
  std::vector<uint8_t> bytes(indices.size() * es);
  Dims idx(index_dims.size(), 0);
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t offset = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      offset += (static_cast<int64_t>(k) == axis ? indices[i] : idx[k]) * strides[k];
    }
    std::memcpy(bytes.data() + i * es, data.bytes.data() + static_cast<size_t>(offset) * es, es);
    for (size_t k = idx.size(); k-- > 0;) {  // the next multi-index, row-major
      if (++idx[k] < index_dims[k]) break;
      idx[k] = 0;
    }
  }
  return ConstTensor{"", data.dtype, index_dims, std::move(bytes)};
}

absl::StatusOr<ConstTensor> ConcatConst(const std::vector<const ConstTensor*>& in, int64_t axis) {
  const ConstTensor& first = *in[0];
  Dims out_dims = first.dims;
  out_dims[axis] = 0;
  for (const ConstTensor* t : in) {
    bool fits = t->dtype == first.dtype && t->dims.size() == first.dims.size();
    for (size_t k = 0; fits && k < t->dims.size(); ++k) {
      fits = static_cast<int64_t>(k) == axis || t->dims[k] == first.dims[k];
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot join ", std::string(DTypeName(t->dtype)), " ", Text(t->dims), " to ",
          std::string(DTypeName(first.dtype)), " ", Text(first.dims), " on axis ", axis));
    }
    out_dims[axis] += t->dims[axis];
  }
  const size_t es = static_cast<size_t>(DTypeSize(first.dtype));
  const int64_t outer = DimsProduct(Dims(first.dims.begin(), first.dims.begin() + axis));
  std::vector<uint8_t> bytes;
  if (outer == 0) return ConstTensor{"", first.dtype, out_dims, std::move(bytes)};
  bytes.reserve(static_cast<size_t>(DimsProduct(out_dims)) * es);
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* t : in) {
      const size_t block = t->bytes.size() / static_cast<size_t>(outer);
      const uint8_t* src = t->bytes.data() + static_cast<size_t>(o) * block;
      bytes.insert(bytes.end(), src, src + block);
    }
  }
  return ConstTensor{"", first.dtype, out_dims, std::move(bytes)};
}

}  // namespace tunejit::onnx_import

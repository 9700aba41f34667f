#include "ops/tensor_ops.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/plan_util.h"

namespace tunejit {
namespace {

constexpr int kMaxRank = 6;  // kernel_sources/tensor_ops.cu Dims
constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1 << 16;
constexpr int kMatMulTile = 16;
constexpr int64_t kMaxGridZ = 65535;

std::string DimsText(const TensorDims& d) { return absl::StrCat("[", absl::StrJoin(d, ", "), "]"); }

int64_t Count(const TensorDims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

absl::Status CheckShape(absl::string_view op, const TensorDims& shape) {
  if (shape.empty() && op != "binary") {
    return absl::InvalidArgumentError(absl::StrCat(op, ": a rank-0 tensor"));
  }
  for (int64_t d : shape) {
    if (d < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": shape ", DimsText(shape), " has a dim < 1"));
    }
  }
  return absl::OkStatus();
}

// numpy broadcasting of `a` and `b`, errors prefixed by `op`.
absl::StatusOr<TensorDims> Broadcast(absl::string_view op, const TensorDims& a,
                                     const TensorDims& b) {
  absl::StatusOr<TensorDims> out = BroadcastShape(a, b);
  if (!out.ok())
    return absl::Status(out.status().code(), absl::StrCat(op, ": ", out.status().message()));
  return out;
}

// One access pattern: dims with a stride list per operand. Collapse drops dims of 1 and merges a
// dim into the one before it where every operand steps through both as through one.
struct Access {
  TensorDims dims;
  std::vector<TensorDims> strides;

  void Collapse() {
    TensorDims d;
    std::vector<TensorDims> s(strides.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) continue;
      bool merge = !d.empty();
      for (size_t k = 0; merge && k < s.size(); ++k) {
        merge = s[k].back() == strides[k][i] * dims[i];
      }
      if (merge) {
        d.back() *= dims[i];
        for (size_t k = 0; k < s.size(); ++k) s[k].back() = strides[k][i];
        continue;
      }
      d.push_back(dims[i]);
      for (size_t k = 0; k < s.size(); ++k) s[k].push_back(strides[k][i]);
    }
    if (d.empty()) {  // a single element
      d.push_back(1);
      for (TensorDims& v : s) v.push_back(0);
    }
    dims = std::move(d);
    strides = std::move(s);
  }
};

// The kernel's type name: float or f16 (arithmetic), or also int8 (copies).
absl::StatusOr<std::string> TypeName(absl::string_view op, ElementType type, bool copy) {
  switch (type) {
    case ElementType::kFloat32:
      return std::string("float");
    case ElementType::kFloat16:
      return std::string("tunejit::f16");
    case ElementType::kInt8:
      if (copy) return std::string("signed char");
      break;
    case ElementType::kInt32:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": element type not supported (",
                   copy ? "float32, float16 or int8" : "float32 or float16", ")"));
}

absl::Status CheckRank(absl::string_view op, const Access& a) {
  if (static_cast<int>(a.dims.size()) <= kMaxRank) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(op, ": the access needs ", a.dims.size(),
                                               " dims after collapsing (", DimsText(a.dims),
                                               "); the kernels take at most ", kMaxRank));
}

// A Dims argument: the first values, padded to kMaxRank.
KernelArg DimsArg(TensorDims v) {
  v.resize(kMaxRank, 1);
  return Int64ArrayArg(std::move(v));
}

PlannedKernel GridStride(std::string label, std::string expression, int64_t total,
                         std::vector<KernelArg> args) {
  return GridStrideLaunch("tensor_ops.cu", std::move(label), std::move(expression), total,
                          std::move(args));
}

// y (input `input` read through `x_strides` from `x_offset`) into output 0 at `y_strides` from
// `y_offset`, over `dims`.
absl::StatusOr<PlannedKernel> StridedCopy(absl::string_view op, int input, Access access,
                                          int64_t x_offset, int64_t y_offset, ElementType type) {
  access.Collapse();
  TUNEJIT_RETURN_IF_ERROR(CheckRank(op, access));
  TUNEJIT_ASSIGN_OR_RETURN(std::string t, TypeName(op, type, /*copy=*/true));
  const int64_t total = Count(access.dims);
  const int rank = static_cast<int>(access.dims.size());
  return GridStride(std::string(op), absl::StrCat("tunejit::strided_copy<", rank, ", ", t, ">"),
                    total,
                    {InputArg(input), OutputArg(0), Int64Arg(total), DimsArg(access.dims),
                     DimsArg(access.strides[0]), DimsArg(access.strides[1]), Int64Arg(x_offset),
                     Int64Arg(y_offset)});
}

// [outer, count, inner] around the consecutive dims [first, last].
struct Around {
  int64_t outer = 1, count = 1, inner = 1;
};
Around AroundDims(const TensorDims& shape, size_t first, size_t last) {
  Around a;
  for (size_t d = 0; d < shape.size(); ++d) {
    (d < first ? a.outer : d <= last ? a.count : a.inner) *= shape[d];
  }
  return a;
}

}  // namespace

absl::StatusOr<PlannedKernel> UnaryKernel(UnaryFn fn, int64_t total, float alpha, float beta,
                                          ElementType type) {
  if (total < 1) return absl::InvalidArgumentError("unary: no elements");
  TUNEJIT_ASSIGN_OR_RETURN(std::string t, TypeName("unary", type, /*copy=*/false));
  return GridStride(
      std::string(UnaryFnName(fn)),
      absl::StrCat("tunejit::unary<", static_cast<int>(fn), ", ", t, ">"), total,
      {InputArg(0), OutputArg(0), Int64Arg(total), Float32Arg(alpha), Float32Arg(beta)});
}

absl::StatusOr<PlannedKernel> BinaryKernel(BinaryFn fn, const TensorDims& a, const TensorDims& b,
                                           BinaryTypes types) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("binary", a));
  TUNEJIT_RETURN_IF_ERROR(CheckShape("binary", b));
  TUNEJIT_ASSIGN_OR_RETURN(std::string ta, TypeName("binary", types.a, /*copy=*/false));
  TUNEJIT_ASSIGN_OR_RETURN(std::string tb, TypeName("binary", types.b, /*copy=*/false));
  TUNEJIT_ASSIGN_OR_RETURN(std::string tout, TypeName("binary", types.out, /*copy=*/false));
  TUNEJIT_ASSIGN_OR_RETURN(const TensorDims out, Broadcast("binary", a, b));
  Access access{out, {BroadcastStrides(a, out), BroadcastStrides(b, out)}};
  access.Collapse();
  TUNEJIT_RETURN_IF_ERROR(CheckRank("binary", access));
  const int64_t total = Count(out);
  return GridStride(std::string(BinaryFnName(fn)),
                    absl::StrCat("tunejit::binary<", static_cast<int>(fn), ", ", access.dims.size(),
                                 ", ", ta, ", ", tb, ", ", tout, ">"),
                    total,
                    {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(total), DimsArg(access.dims),
                     DimsArg(access.strides[0]), DimsArg(access.strides[1])});
}

absl::StatusOr<PlannedKernel> TransposeKernel(const TensorDims& shape, const TensorDims& perm,
                                              ElementType type) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("transpose", shape));
  TensorDims sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted.size() != shape.size() || sorted[i] != static_cast<int64_t>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("transpose: ", DimsText(perm),
                                                     " is not a permutation of ", DimsText(shape)));
    }
  }
  const TensorDims in_strides = RowMajorStrides(shape);
  Access access;
  for (int64_t p : perm) access.dims.push_back(shape[p]);
  access.strides = {{}, RowMajorStrides(access.dims)};
  for (int64_t p : perm) access.strides[0].push_back(in_strides[p]);
  return StridedCopy("transpose", 0, std::move(access), 0, 0, type);
}

absl::StatusOr<PlannedKernel> SliceKernel(const TensorDims& shape, int axis, int64_t start,
                                          int64_t end, int64_t step, ElementType type) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("slice", shape));
  if (axis < 0 || axis >= static_cast<int>(shape.size()) || step < 1 || start < 0 || start >= end ||
      end > shape[axis]) {
    return absl::InvalidArgumentError(absl::StrCat("slice: [", start, ", ", end, ") step ", step,
                                                   " of axis ", axis, " of ", DimsText(shape)));
  }
  Access access{shape, {RowMajorStrides(shape), {}}};
  access.dims[axis] = (end - start + step - 1) / step;
  access.strides[1] = RowMajorStrides(access.dims);
  const int64_t x_offset = start * access.strides[0][axis];
  access.strides[0][axis] *= step;
  return StridedCopy("slice", 0, std::move(access), x_offset, 0, type);
}

absl::StatusOr<std::vector<PlannedKernel>> ConcatKernels(int axis,
                                                         const std::vector<TensorDims>& shapes,
                                                         ElementType type) {
  if (shapes.empty()) return absl::InvalidArgumentError("concat: no inputs");
  TensorDims out = shapes[0];
  if (axis < 0 || axis >= static_cast<int>(out.size())) {
    return absl::InvalidArgumentError(absl::StrCat("concat: axis ", axis, " of ", DimsText(out)));
  }
  out[axis] = 0;
  for (const TensorDims& s : shapes) {
    TUNEJIT_RETURN_IF_ERROR(CheckShape("concat", s));
    out[axis] += s.size() == out.size() ? s[axis] : 0;
  }
  const TensorDims out_strides = RowMajorStrides(out);
  std::vector<PlannedKernel> kernels;
  int64_t at = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    TensorDims expect = out;
    expect[axis] = shapes[k].size() == out.size() ? shapes[k][axis] : -1;
    if (shapes[k] != expect) {
      return absl::InvalidArgumentError(absl::StrCat("concat: input ", k, " ", DimsText(shapes[k]),
                                                     " does not fit ", DimsText(out), " on axis ",
                                                     axis));
    }
    TUNEJIT_ASSIGN_OR_RETURN(
        PlannedKernel kernel,
        StridedCopy("concat", static_cast<int>(k),
                    Access{shapes[k], {RowMajorStrides(shapes[k]), out_strides}}, 0,
                    at * out_strides[axis], type));
    kernels.push_back(std::move(kernel));
    at += shapes[k][axis];
  }
  return kernels;
}

absl::StatusOr<PlannedKernel> ReduceMeanKernel(const TensorDims& shape, const TensorDims& axes,
                                               ElementType type) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("reduce_mean", shape));
  TUNEJIT_ASSIGN_OR_RETURN(std::string t, TypeName("reduce_mean", type, /*copy=*/false));
  // The reduced dims of more than one element must be consecutive among those of more than one.
  std::vector<size_t> reduced;
  for (int64_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(shape.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("reduce_mean: axis ", a, " of ", DimsText(shape)));
    }
    if (shape[a] > 1) reduced.push_back(static_cast<size_t>(a));
  }
  if (reduced.empty()) {  // a mean of one element per output: a copy
    return StridedCopy("reduce_mean", 0,
                       Access{shape, {RowMajorStrides(shape), RowMajorStrides(shape)}}, 0, 0, type);
  }
  for (size_t d = reduced.front(); d <= reduced.back(); ++d) {
    if (shape[d] > 1 && std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
      return absl::UnimplementedError(absl::StrCat("reduce_mean over axes ", DimsText(axes), " of ",
                                                   DimsText(shape),
                                                   ": only consecutive axes are supported"));
    }
  }
  const Around a = AroundDims(shape, reduced.front(), reduced.back());
  if (a.inner == 1) {
    if (type != ElementType::kFloat32) {
      return absl::UnimplementedError("reduce_mean of trailing dims: float32 only");
    }
    PlannedKernel kernel;
    kernel.label = "reduce_mean";
    kernel.spec =
        KernelSpec{"tensor_ops.cu", absl::StrCat("tunejit::reduce_mean_rows<", kBlock, ">"), {}};
    kernel.shape.grid[0] = static_cast<uint32_t>(std::min(a.outer, kMaxBlocks));
    kernel.shape.block[0] = kBlock;
    kernel.args = {InputArg(0), OutputArg(0), Int64Arg(a.outer), Int64Arg(a.count)};
    return kernel;
  }
  return GridStride(
      "reduce_mean", absl::StrCat("tunejit::reduce_mean_strided<", t, ">"), a.outer * a.inner,
      {InputArg(0), OutputArg(0), Int64Arg(a.outer), Int64Arg(a.count), Int64Arg(a.inner)});
}

namespace {

// A normalization of `rows` rows of `cols` by `op` (tensor_ops.cu's `op` and `op`_warp kernels): a
// warp per row, or a block per long row; `tensors` the kernel's inputs and output, then rows,
// cols and epsilon.
absl::StatusOr<PlannedKernel> RowNormKernel(absl::string_view op, int64_t rows, int64_t cols,
                                            float epsilon, ElementType type,
                                            std::vector<KernelArg> tensors) {
  if (rows < 1 || cols < 1 || !(epsilon > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", rows, " rows of ", cols, ", epsilon ", epsilon));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::string t, TypeName(op, type, /*copy=*/false));
  PlannedKernel kernel;
  kernel.label = std::string(op);
  const RowGroups groups = RowGroupsFor(rows, cols, kBlock, kMaxBlocks);
  kernel.spec = KernelSpec{
      "tensor_ops.cu",
      groups.warp_per_row ? absl::StrCat("tunejit::", op, "_warp<", t, ", ", kWarpRowsPerBlock, ">")
                          : absl::StrCat("tunejit::", op, "<", t, ", ", kBlock, ">"),
      {}};
  kernel.shape = groups.shape;
  kernel.args = std::move(tensors);
  kernel.args.insert(kernel.args.end(), {Int64Arg(rows), Int64Arg(cols), Float32Arg(epsilon)});
  return kernel;
}

}  // namespace

absl::StatusOr<PlannedKernel> LayerNormKernel(int64_t rows, int64_t cols, float epsilon,
                                              ElementType type) {
  return RowNormKernel("layer_norm", rows, cols, epsilon, type,
                       {InputArg(0), InputArg(1), InputArg(2), OutputArg(0)});
}

absl::StatusOr<PlannedKernel> RmsNormKernel(int64_t rows, int64_t cols, float epsilon,
                                            ElementType type) {
  return RowNormKernel("rms_norm", rows, cols, epsilon, type,
                       {InputArg(0), InputArg(1), OutputArg(0)});
}

absl::StatusOr<PlannedKernel> RopeKernel(const TensorDims& shape, ElementType type) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("rope", shape));
  const size_t rank = shape.size();
  if (rank < 2 || shape[rank - 1] % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope: ", DimsText(shape), ": needs [..., S, D] with D even"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::string t, TypeName("rope", type, /*copy=*/false));
  const int64_t total = Count(shape);
  return GridStride("rope", absl::StrCat("tunejit::rope<", t, ">"), total,
                    {InputArg(0), InputArg(1), InputArg(2), OutputArg(0), Int64Arg(total),
                     Int32Arg(shape[rank - 2]), Int32Arg(shape[rank - 1])});
}

absl::StatusOr<PlannedKernel> SoftmaxAxisKernel(const TensorDims& shape, int axis) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("softmax", shape));
  if (axis < 0 || axis >= static_cast<int>(shape.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("softmax: axis ", axis, " of ", DimsText(shape)));
  }
  const Around a = AroundDims(shape, axis, axis);
  if (a.inner == 1) return SoftmaxKernel(a.outer, a.count);
  return GridStride(
      "softmax", "tunejit::softmax_strided", a.outer * a.inner,
      {InputArg(0), OutputArg(0), Int64Arg(a.outer), Int64Arg(a.count), Int64Arg(a.inner)});
}

absl::StatusOr<PlannedKernel> MatMulKernel(const TensorDims& a, const TensorDims& b) {
  TUNEJIT_RETURN_IF_ERROR(CheckShape("matmul", a));
  TUNEJIT_RETURN_IF_ERROR(CheckShape("matmul", b));
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: ", DimsText(a), " x ", DimsText(b),
                                                   ": expected [..., M, K] x [..., K, N]"));
  }
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    return absl::UnimplementedError("matmul: a matrix dim above 2^31");
  }
  const TensorDims a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  TUNEJIT_ASSIGN_OR_RETURN(const TensorDims batch, Broadcast("matmul", a_batch, b_batch));
  Access access{batch, {BroadcastStrides(a_batch, batch), BroadcastStrides(b_batch, batch)}};
  for (int64_t& s : access.strides[0]) s *= m * k;  // in elements
  for (int64_t& s : access.strides[1]) s *= k * n;
  access.Collapse();
  TUNEJIT_RETURN_IF_ERROR(CheckRank("matmul", access));
  const int64_t batches = Count(batch);
  PlannedKernel kernel;
  kernel.label = "matmul";
  kernel.spec = KernelSpec{
      "tensor_ops.cu", absl::StrCat("tunejit::batched_matmul<", access.dims.size(), ">"), {}};
  kernel.shape.grid[0] = static_cast<uint32_t>(CeilDiv64(n, kMatMulTile));
  kernel.shape.grid[1] = static_cast<uint32_t>(CeilDiv64(m, kMatMulTile));
  kernel.shape.grid[2] = static_cast<uint32_t>(std::min(batches, kMaxGridZ));
  kernel.shape.block[0] = kMatMulTile * kMatMulTile;
  kernel.args = {InputArg(0),
                 InputArg(1),
                 OutputArg(0),
                 Int32Arg(m),
                 Int32Arg(n),
                 Int32Arg(k),
                 Int64Arg(batches),
                 DimsArg(access.dims),
                 DimsArg(access.strides[0]),
                 DimsArg(access.strides[1])};
  return kernel;
}

absl::StatusOr<PlannedKernel> GatherKernel(int64_t rows, int64_t row, int64_t count) {
  if (rows < 1 || row < 1 || count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("gather: ", count, " ids into ", rows, " rows of ", row));
  }
  return GridStride(
      "gather", "tunejit::gather_rows", count * row,
      {InputArg(0), InputArg(1), OutputArg(0), Int64Arg(count), Int64Arg(rows), Int64Arg(row)});
}

}  // namespace tunejit

#include "executor/attention_views.h"

#include <array>
#include <optional>
#include <utility>
#include <vector>

namespace tunejit {
namespace {

// The operand in a tensor: per operand dim (B, H, S, D) the tensor dim it walks (-1 for an
// extent of 1, which walks none) and its step in that dim's coordinate; and the coordinates of
// the operand's first element.
struct DimView {
  std::array<int, 4> dim = {-1, -1, -1, -1};
  std::array<int64_t, 4> step = {0, 0, 0, 0};
  std::vector<int64_t> origin;
};

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// Every element of the operand lands inside `shape` without a carry between dims: then each
// element's row-major offset is the sum of its dims' steps, as strides say.
bool Fits(const DimView& v, const std::vector<int64_t>& shape,
          const std::array<int64_t, 4>& extents) {
  std::vector<int64_t> last = v.origin;
  for (int j = 0; j < 4; ++j) {
    if (v.dim[j] >= 0) last[v.dim[j]] += v.step[j] * (extents[j] - 1);
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (last[i] >= shape[i]) return false;
  }
  return true;
}

// The operand as it is: row-major [B, H, S, D] (rank 3: [B, S, D], H of 1), or [B, H, D, S].
DimView Identity(int rank, const std::array<int64_t, 4>& extents, bool transposed) {
  DimView v;
  v.origin.assign(rank, 0);
  std::array<int, 4> dims =
      rank == 4 ? std::array<int, 4>{0, 1, 2, 3} : std::array<int, 4>{0, -1, 1, 2};
  if (transposed) std::swap(dims[2], dims[3]);
  for (int j = 0; j < 4; ++j) {
    v.dim[j] = extents[j] == 1 ? -1 : dims[j];
    v.step[j] = 1;
  }
  return v;
}

// out = transpose(x): out's dim i is x's dim perm[i].
DimView ThroughTranspose(const DimView& v, const std::vector<int64_t>& perm) {
  DimView x = v;
  for (int j = 0; j < 4; ++j) {
    if (v.dim[j] >= 0) x.dim[j] = static_cast<int>(perm[v.dim[j]]);
  }
  for (size_t i = 0; i < perm.size(); ++i) x.origin[perm[i]] = v.origin[i];
  return x;
}

// out = x[..., start:end:step, ...] on `axis`.
DimView ThroughSlice(const DimView& v, const NodeAttrs& a) {
  DimView x = v;
  for (int j = 0; j < 4; ++j) {
    if (v.dim[j] == a.axis) x.step[j] *= a.step;
  }
  x.origin[a.axis] = a.start + a.step * v.origin[a.axis];
  return x;
}

// out = reshape(x): the same row-major offsets. Each operand dim's offset step must be a whole
// step of one of x's dims; nullopt where it is not.
std::optional<DimView> ThroughReshape(const DimView& v, const std::vector<int64_t>& out_shape,
                                      const std::vector<int64_t>& x_shape) {
  const std::vector<int64_t> out_strides = RowMajorStrides(out_shape);
  const std::vector<int64_t> x_strides = RowMajorStrides(x_shape);
  DimView x;
  int64_t offset = 0;
  for (size_t i = 0; i < out_shape.size(); ++i) offset += v.origin[i] * out_strides[i];
  x.origin.assign(x_shape.size(), 0);
  for (size_t m = 0; m < x_shape.size(); ++m) {
    x.origin[m] = offset / x_strides[m];
    offset %= x_strides[m];
  }
  for (int j = 0; j < 4; ++j) {
    if (v.dim[j] < 0) continue;
    const int64_t linear = v.step[j] * out_strides[v.dim[j]];
    // The dim whose coordinate a step of `linear` moves: x_strides[m] <= linear < its extent's.
    int m = 0;
    while (m < static_cast<int>(x_shape.size()) &&
           !(x_strides[m] <= linear && linear < x_strides[m] * x_shape[m])) {
      ++m;
    }
    if (m == static_cast<int>(x_shape.size()) || linear % x_strides[m] != 0) return std::nullopt;
    x.dim[j] = m;
    x.step[j] = linear / x_strides[m];
  }
  return x;
}

// The operand's strides and offset in a row-major tensor of `shape`, when D is its last dim with
// step 1 and every stride and the offset are whole 16 bytes.
std::optional<AttentionStrides> StridesIn(const DimView& v, const std::vector<int64_t>& shape) {
  const std::vector<int64_t> rs = RowMajorStrides(shape);
  if (v.dim[3] != static_cast<int>(shape.size()) - 1 || v.step[3] != 1) return std::nullopt;
  int64_t s[3] = {0, 0, 0};
  for (int j = 0; j < 3; ++j) s[j] = v.dim[j] < 0 ? 0 : v.step[j] * rs[v.dim[j]];
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) offset += v.origin[i] * rs[i];
  for (int64_t x : {s[0], s[1], s[2], offset}) {
    if (x % 8 != 0) return std::nullopt;
  }
  return AttentionStrides{s[0], s[1], s[2], offset};
}

// The view one node further back, or nullopt where the walk stops.
std::optional<DimView> Back(const Graph& g, const Node& node, const DimView& v) {
  const std::vector<int64_t>& out = g.tensor(node.output).shape;
  const std::vector<int64_t>& in = g.tensor(node.inputs[0]).shape;
  switch (node.op) {
    case OpKind::kTranspose:
      return ThroughTranspose(v, node.attrs.perm);
    case OpKind::kSlice:
      return ThroughSlice(v, node.attrs);
    case OpKind::kReshape:
    case OpKind::kFlatten:
      return ThroughReshape(v, out, in);
    default:
      return std::nullopt;
  }
}

}  // namespace

std::vector<ViewStep> WalkBackViews(const Graph& graph, const std::vector<int>& producer, int t,
                                    const std::array<int64_t, 4>& extents, bool transposed) {
  std::vector<ViewStep> path;
  DimView v = Identity(static_cast<int>(graph.tensor(t).shape.size()), extents, transposed);
  for (int p = producer[t]; p >= 0; p = producer[t]) {
    const Node& node = graph.nodes()[p];
    std::optional<DimView> x = Back(graph, node, v);
    const int in = node.inputs[0];
    if (!x || graph.tensor(in).kind == TensorKind::kWeight ||
        !Fits(*x, graph.tensor(in).shape, extents)) {
      break;
    }
    v = *std::move(x);
    t = in;
    path.push_back({p, t, StridesIn(v, graph.tensor(t).shape)});
  }
  return path;
}

}  // namespace tunejit

#include "executor/row_transposes.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "executor/attention_fusion.h"
#include "executor/graph_readers.h"

namespace tunejit {
namespace {

// A dense layer on rows with a transpose before it: `before` makes X [L..., F...] (|L| =
// `leading`), `rows` reshapes X to [R, F], `dense`, an optional `bias` add, `back` reshapes to
// [L..., N]. On the out side, `after` transposes the leading axes of that; on the in side it is
// -1 and `before` permutes only the leading axes.
struct RowDense {
  int before = -1;
  int rows = -1;
  int dense = -1;
  int bias = -1;
  int back = -1;
  int after = -1;
  int leading = 0;
};

bool PermutesLeadingOnly(const std::vector<int64_t>& perm, int leading) {
  for (int i = leading; i < static_cast<int>(perm.size()); ++i) {
    if (perm[i] != i) return false;
  }
  return true;
}

class RowDenseFinder {
 public:
  explicit RowDenseFinder(const Graph& g) : g_(g), links_(g) {}

  std::optional<RowDense> At(int d) const {
    const Node& dense = g_.nodes()[d];
    if (dense.op != OpKind::kDense) return std::nullopt;
    RowDense m;
    m.dense = d;
    m.rows = Producer(dense.inputs[0], OpKind::kReshape, d);
    if (m.rows < 0) return std::nullopt;
    const int x = g_.nodes()[m.rows].inputs[0];
    m.before = Producer(x, OpKind::kTranspose, m.rows);
    if (m.before < 0) return std::nullopt;
    m.leading = LeadingAxes(g_.tensor(x).shape, g_.tensor(dense.inputs[0]).shape);
    if (m.leading == 0) return std::nullopt;
    int t = dense.output;
    if (const int b = links_.OnlyReader(t);
        b >= 0 && g_.nodes()[b].op == OpKind::kBiasAdd && g_.nodes()[b].inputs[0] == t) {
      m.bias = b;
      t = g_.nodes()[b].output;
    }
    m.back = links_.OnlyReader(t);
    if (m.back < 0 || g_.nodes()[m.back].op != OpKind::kReshape) return std::nullopt;
    std::vector<int64_t> back_shape(g_.tensor(x).shape.begin(),
                                    g_.tensor(x).shape.begin() + m.leading);
    back_shape.push_back(g_.tensor(t).shape[1]);
    if (g_.tensor(g_.nodes()[m.back].output).shape != back_shape) return std::nullopt;
    const int after = links_.OnlyReader(g_.nodes()[m.back].output);
    if (after >= 0 && g_.nodes()[after].op == OpKind::kTranspose &&
        PermutesLeadingOnly(g_.nodes()[after].attrs.perm, m.leading)) {
      m.after = after;
      return m;
    }
    if (!PermutesLeadingOnly(g_.nodes()[m.before].attrs.perm, m.leading)) return std::nullopt;
    return m;
  }

 private:
  // The producer of `t`, of kind `op`, when `reader` alone reads `t`; else -1.
  int Producer(int t, OpKind op, int reader) const {
    const int p = links_.producer(t);
    return p >= 0 && g_.nodes()[p].op == op && links_.OnlyReader(t) == reader ? p : -1;
  }

  // How many leading dims of `x` make the rows of `rows` [R, F] (the rest its columns); 0 when
  // none does.
  static int LeadingAxes(const std::vector<int64_t>& x, const std::vector<int64_t>& rows) {
    if (rows.size() != 2) return 0;
    int64_t product = 1;
    for (int k = 0; k + 1 < static_cast<int>(x.size()); ++k) {
      product *= x[k];
      if (product == rows[0]) return k + 1;
    }
    return 0;
  }

  const Graph& g_;
  const GraphReaders links_;
};

// `g` with `moves` applied (in-side moves only where `in_side_kept`); per in-side move, the
// index of its new transpose node in the result (-1 for out-side moves).
Graph Apply(const Graph& g, const std::vector<RowDense>& moves, const std::vector<bool>& kept,
            std::vector<int>* new_transpose) {
  Graph out;
  for (const TensorDesc& t : g.tensors()) out.AddTensor(t);
  std::vector<Node> nodes = g.nodes();
  std::vector<bool> removed(nodes.size(), false);
  std::vector<std::optional<Node>> insert_after(nodes.size());
  for (size_t i = 0; i < moves.size(); ++i) {
    if (!kept[i]) continue;
    const RowDense& m = moves[i];
    Node& before = nodes[m.before];
    Node& back = nodes[m.back];
    const std::vector<int64_t>& x0 = g.tensor(before.inputs[0]).shape;
    if (m.after >= 0) {
      // One transpose straight to the order `after` wanted; `after` a view.
      Node& after = nodes[m.after];
      std::vector<int64_t> perm = before.attrs.perm;
      for (int k = 0; k < m.leading; ++k) perm[k] = before.attrs.perm[after.attrs.perm[k]];
      std::vector<int64_t>& shape = out.mutable_tensor(before.output).shape;
      for (size_t k = 0; k < perm.size(); ++k) shape[k] = x0[perm[k]];
      before.attrs.perm = perm;
      back.attrs.shape = g.tensor(after.output).shape;
      out.mutable_tensor(back.output).shape = back.attrs.shape;
      after.op = OpKind::kReshape;
      after.attrs.perm.clear();
      after.attrs.shape = g.tensor(after.output).shape;
    } else {
      // The rows of x as they are; their transpose after the layer. The transpose's output
      // tensor, unused now, holds the layer's output in x's row order.
      nodes[m.rows].inputs[0] = before.inputs[0];
      removed[m.before] = true;
      std::vector<int64_t> shape(x0.begin(), x0.begin() + m.leading);
      shape.push_back(g.tensor(back.output).shape.back());
      TensorDesc& unpermuted = out.mutable_tensor(before.output);
      unpermuted.name = g.tensor(back.output).name + ".rows_in_order";
      unpermuted.shape = shape;
      Node transpose{
          before.name + ".after_dense", OpKind::kTranspose, {before.output}, back.output, {}};
      transpose.attrs.perm.assign(before.attrs.perm.begin(), before.attrs.perm.begin() + m.leading);
      transpose.attrs.perm.push_back(m.leading);
      back.output = transpose.inputs[0];
      back.attrs.shape = shape;
      insert_after[m.back] = std::move(transpose);
    }
  }
  std::vector<int> emitted_at(nodes.size(), -1);
  int count = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (removed[i]) continue;
    out.AddNodeUnchecked(nodes[i]);
    ++count;
    if (insert_after[i]) {
      emitted_at[i] = count;
      out.AddNodeUnchecked(*insert_after[i]);
      ++count;
    }
  }
  new_transpose->assign(moves.size(), -1);
  for (size_t i = 0; i < moves.size(); ++i) {
    if (kept[i] && moves[i].after < 0) (*new_transpose)[i] = emitted_at[moves[i].back];
  }
  return out;
}

}  // namespace

Graph SinkRowTransposes(const Graph& graph, const WeightSet& weights) {
  const RowDenseFinder finder(graph);
  std::vector<RowDense> moves;
  std::vector<bool> taken(graph.nodes().size(), false);  // a node moves with one layer at most
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    std::optional<RowDense> m = finder.At(i);
    if (!m) continue;
    const int nodes[] = {m->before, m->rows, m->dense, m->bias, m->back, m->after};
    if (std::any_of(std::begin(nodes), std::end(nodes),
                    [&](int n) { return n >= 0 && taken[n]; })) {
      continue;
    }
    for (int n : nodes) {
      if (n >= 0) taken[n] = true;
    }
    moves.push_back(*m);
  }
  if (moves.empty()) return graph;
  std::vector<bool> kept(moves.size(), true);
  std::vector<int> new_transpose;
  Graph moved = Apply(graph, moves, kept, &new_transpose);
  if (!moved.Validate().ok()) return graph;
  // An in-side move pays only where its transpose is one an attention step reads through.
  std::vector<bool> read_through(moved.nodes().size(), false);
  for (const AttentionChain& c : FindAttentionChains(moved, &weights)) {
    for (int n : c.nodes) read_through[n] = true;
  }
  bool dropped = false;
  for (size_t i = 0; i < moves.size(); ++i) {
    if (new_transpose[i] >= 0 && !read_through[new_transpose[i]]) kept[i] = false, dropped = true;
  }
  if (!dropped) return moved;
  moved = Apply(graph, moves, kept, &new_transpose);
  return moved.Validate().ok() ? moved : graph;
}

}  // namespace tunejit

#include "executor/attention_fusion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "executor/attention_views.h"
#include "executor/graph_readers.h"
#include "executor/weight_values.h"
#include "ops/op_template.h"

namespace tunejit {
namespace {

// The graph, its readers per tensor and its producer per tensor.
class ChainFinder {
 public:
  ChainFinder(const Graph& g, const WeightSet& weights) : g_(g), links_(g), weights_(weights) {}

  const Graph& graph() const { return g_; }
  const std::vector<int>& producer() const { return links_.producers(); }
  const std::vector<int>& readers(int t) const { return links_.readers(t); }

  // The chain whose softmax is node `i`, or nullopt.
  std::optional<AttentionChain> FromSoftmax(int i) const {
    const Node& softmax = g_.nodes()[i];
    const std::vector<int64_t>& scores = g_.tensor(softmax.inputs[0]).shape;
    const int rank = static_cast<int>(scores.size());
    if ((rank != 3 && rank != 4) || (softmax.attrs.axis != -1 && softmax.attrs.axis != rank - 1)) {
      return std::nullopt;
    }
    AttentionChain c;
    c.nodes.push_back(i);
    const int probabilities = SkipNanGuard(softmax.output, c);
    const int pv = Inner(probabilities);
    if (pv < 0 || g_.nodes()[pv].op != OpKind::kMatMul ||
        g_.nodes()[pv].inputs[0] != probabilities) {
      return std::nullopt;
    }
    c.nodes.push_back(pv);
    c.pv = pv;
    c.v.tensor = g_.nodes()[pv].inputs[1];
    c.output = g_.nodes()[pv].output;
    const int qk = ScoresChain(softmax.inputs[0], c);
    if (qk < 0 || !OperandsOf(qk, c) || !Shapes(c, rank)) return std::nullopt;
    JoinOutputTranspose(c);
    std::sort(c.nodes.begin(), c.nodes.end());
    if (!FindOpTemplate(kAttentionMma)->CanImplement(MakeAttentionWorkload(c.params)).ok()) {
      return std::nullopt;
    }
    return c;
  }

 private:
  // The node reading activation `t` alone, when `t` is not a graph output; -1 otherwise.
  int Inner(int t) const { return links_.OnlyReader(t); }

  // The producer of `t` when `t` is an inner tensor of the chain (read once, not an output).
  int InnerProducer(int t) const { return Inner(t) >= 0 ? links_.producer(t) : -1; }

  // The softmax output `t`, or past replace_nan(t, 0) when that alone reads it: a row masked
  // everywhere is NaN there and 0 after the guard, as the fused kernel gives it.
  int SkipNanGuard(int t, AttentionChain& c) const {
    const int n = Inner(t);
    if (n < 0) return t;
    const Node& guard = g_.nodes()[n];
    if (guard.op != OpKind::kUnary || guard.attrs.unary != UnaryFn::kReplaceNan ||
        guard.attrs.alpha != 0.0f) {
      return t;
    }
    c.nodes.push_back(n);
    return guard.output;
  }

  // Weight `t`'s single value, when every element of it is the same float32.
  std::optional<double> Scalar(int t) const { return UniformWeightValue(g_, weights_, t); }

  // Node `n` multiplies (or divides) activation `t` by a scalar weight: the factor, else nullopt.
  std::optional<double> ScaleBy(int n, int t) const {
    const Node& node = g_.nodes()[n];
    if (node.op != OpKind::kBinary) return std::nullopt;
    if (node.attrs.binary == BinaryFn::kMul) {
      if (node.inputs[0] == t) return Scalar(node.inputs[1]);
      if (node.inputs[1] == t) return Scalar(node.inputs[0]);
    }
    if (node.attrs.binary == BinaryFn::kDiv && node.inputs[0] == t) {
      std::optional<double> d = Scalar(node.inputs[1]);
      if (d && *d != 0) return 1.0 / *d;
    }
    return std::nullopt;
  }

  // Walks back from `t` over scalar multiplications and divisions, each value read by the next
  // alone, multiplying them into the chain's scale: the tensor before them.
  int SkipScales(int t, AttentionChain& c) const {
    for (int p = InnerProducer(t); p >= 0; p = InnerProducer(t)) {
      std::optional<double> factor;
      for (int in : g_.nodes()[p].inputs) {
        if (g_.tensor(in).kind == TensorKind::kWeight) continue;
        if ((factor = ScaleBy(p, in))) {
          t = in;
          break;
        }
      }
      if (!factor) break;
      c.scale *= *factor;
      c.nodes.push_back(p);
    }
    return t;
  }

  // Whether weight `t`, read as [batches, rows, cols], repeats its first row within each batch
  // (a padding mask expanded over the query rows, as transformers builds it).
  bool RowsRepeat(int t, int64_t rows, int64_t cols) const {
    std::vector<float> v;
    if (!EveryWeightValue(g_, weights_, t, [&v](float x) {
          v.push_back(x);
          return true;
        })) {
      return false;
    }
    for (size_t b = 0; b < v.size(); b += rows * cols) {
      for (int64_t r = 1; r < rows; ++r) {
        if (std::memcmp(&v[b], &v[b + r * cols], cols * sizeof(float)) != 0) return false;
      }
    }
    return true;
  }

  // Whether weight `t`, read as [rows, cols] matrices, is a causal mask: 0 where j <= i, and at
  // most -1e30 (or -inf) where j > i, which the softmax turns into exact zeros as the kernel's
  // causal mode does (every row keeps key 0, so no row is masked everywhere).
  bool IsCausalMask(int t, int64_t rows, int64_t cols) const {
    int64_t at = 0;
    return EveryWeightValue(g_, weights_, t, [&](float v) {
      const int64_t j = at % cols, i = at / cols % rows;
      ++at;
      return j <= i ? v == 0.0f : v <= -1e30f;
    });
  }

  // The mask operand of add node `n` whose other operand is `scores`-shaped: its tensor and
  // batch stride, else nullopt (a broadcast other than over heads and query rows, or a mask
  // whose query rows differ).
  std::optional<int> MaskOperand(int n, int* scores_in, int64_t* batch_stride, bool* causal) const {
    const Node& add = g_.nodes()[n];
    const bool binary_add = add.op == OpKind::kBinary && add.attrs.binary == BinaryFn::kAdd;
    if ((!binary_add && add.op != OpKind::kAdd) || add.inputs.size() != 2) return std::nullopt;
    const std::vector<int64_t>& out = g_.tensor(add.output).shape;
    for (int side = 0; side < 2; ++side) {
      const int s = add.inputs[side], m = add.inputs[1 - side];
      if (g_.tensor(s).shape != out || g_.tensor(s).kind == TensorKind::kWeight) continue;
      std::vector<int64_t> shape = g_.tensor(m).shape;
      if (shape.size() > out.size()) continue;
      shape.insert(shape.begin(), out.size() - shape.size(), 1);
      const int rank = static_cast<int>(out.size());
      const int64_t rows = shape[rank - 2], cols = out[rank - 1];
      bool broadcast = shape[rank - 1] == cols;
      for (int d = 1; d < rank - 2; ++d) broadcast = broadcast && shape[d] == 1;
      // A constant [S_q, S_kv] mask shared by every batch and head that is causal: the
      // kernel's own causal mode, no mask tensor read.
      if (broadcast && shape[0] == 1 && rows == out[rank - 2] &&
          g_.tensor(m).kind == TensorKind::kWeight && IsCausalMask(m, rows, cols)) {
        *scores_in = s;
        *causal = true;
        return m;
      }
      broadcast = broadcast && (rows == 1 || (rows == out[rank - 2] && RowsRepeat(m, rows, cols)));
      // [B*H, S, S] scores of rank 3 have no batch of their own: one mask row for all only.
      const bool per_batch = rank == 4 && shape[0] == out[0] && out[0] > 1;
      if (!broadcast || (shape[0] != 1 && !per_batch)) continue;
      *scores_in = s;
      *batch_stride = per_batch ? rows * cols : 0;
      return m;
    }
    return std::nullopt;
  }

  // From the softmax's input back to the Q K^T matmul: an optional mask add (the last op before
  // the softmax, after every scale), scalar scales. The matmul node, or -1.
  int ScoresChain(int t, AttentionChain& c) const {
    if (int p = InnerProducer(t); p >= 0) {
      int scores = -1;
      bool causal = false;
      if (std::optional<int> m = MaskOperand(p, &scores, &c.mask_batch, &causal)) {
        c.mask = causal ? -1 : *m;
        c.causal = causal;
        c.nodes.push_back(p);
        t = scores;
      }
    }
    t = SkipScales(t, c);
    const int qk = InnerProducer(t);
    if (qk < 0 || g_.nodes()[qk].op != OpKind::kMatMul) return -1;
    c.nodes.push_back(qk);
    return qk;
  }

  // Q and K^T from the Q K^T matmul's operands, past scales on either (K is found by the view
  // walk: FoldOperandViews).
  bool OperandsOf(int qk, AttentionChain& c) const {
    const Node& mm = g_.nodes()[qk];
    c.q.tensor = SkipScales(mm.inputs[0], c);
    c.k.tensor = SkipScales(mm.inputs[1], c);
    for (int t : {c.q.tensor, c.k.tensor, c.v.tensor}) {
      if (g_.tensor(t).kind == TensorKind::kWeight) return false;
    }
    return true;
  }

  // Q [B, H, S_q, D], K^T [B, H, D, S_kv], V [B, H, S_kv, D] (rank 3: H = 1), the output Q's
  // shape.
  bool Shapes(AttentionChain& c, int rank) const {
    std::vector<int64_t> q = g_.tensor(c.q.tensor).shape, k = g_.tensor(c.k.tensor).shape,
                         v = g_.tensor(c.v.tensor).shape, o = g_.tensor(c.output).shape;
    if (static_cast<int>(q.size()) != rank || k.size() != q.size() || v.size() != q.size() ||
        o != q) {
      return false;
    }
    std::swap(k[rank - 1], k[rank - 2]);
    if (v != k) return false;
    if (rank == 3) {
      for (std::vector<int64_t>* s : {&q, &k}) s->insert(s->begin() + 1, 1);
    }
    if (q[0] != k[0] || q[1] != k[1] || q[3] != k[3]) return false;
    c.params = AttentionParams{
        q[0],
        q[1],
        q[2],
        k[2],
        q[3],
        c.causal ? AttentionMask::kCausal : c.mask >= 0 ? AttentionMask::kF32 : AttentionMask::kNone};
    // As they are (K has no such form: FoldOperandViews finds it before its transpose).
    const AttentionLayout contiguous = ContiguousAttentionLayout(c.params);
    c.q.strides = contiguous.q;
    c.v.strides = contiguous.v;
    return true;
  }

  // A transpose of a rank-4 output that keeps D last joins the chain (the step writes its
  // output through strides), past reshapes that keep the shape (BERT's SDPA export has one).
  void JoinOutputTranspose(AttentionChain& c) const {
    const std::vector<int64_t>& shape = g_.tensor(c.output).shape;
    if (shape.size() != 4) return;
    int t = c.output;
    std::vector<int> same_shape;
    int tr = Inner(t);
    while (tr >= 0 && g_.nodes()[tr].op == OpKind::kReshape &&
           g_.tensor(g_.nodes()[tr].output).shape == shape) {
      same_shape.push_back(tr);
      t = g_.nodes()[tr].output;
      tr = Inner(t);
    }
    if (tr < 0) return;
    const Node& node = g_.nodes()[tr];
    if (node.op != OpKind::kTranspose || node.attrs.perm.size() != 4 || node.attrs.perm[3] != 3 ||
        g_.tensor(node.output).kind == TensorKind::kOutput) {
      return;
    }
    c.out_perm = node.attrs.perm;
    c.output = node.output;
    c.nodes.insert(c.nodes.end(), same_shape.begin(), same_shape.end());
    c.nodes.push_back(tr);
  }

  const Graph& g_;
  const GraphReaders links_;
  const WeightSet& weights_;
};

// One operand's walk back (attention_views.h) and how deep the step reads: path[0..depth]'s
// nodes skipped, path[depth].tensor read (-1: the operand as it is).
struct OperandWalk {
  AttentionChain* chain;
  AttentionOperand* operand;
  std::vector<ViewStep> path;
  int depth = -1;
};

// The deepest step at or before `from` whose strides the kernel takes.
int Usable(const std::vector<ViewStep>& path, int from) {
  while (from >= 0 && !path[from].strides) --from;
  return from;
}

// Nodes every walk that passes them skips (none keeps them).
std::vector<bool> Skipped(const std::vector<OperandWalk>& walks, size_t nodes) {
  std::vector<bool> within(nodes, false), beyond(nodes, false);
  for (const OperandWalk& w : walks) {
    for (int i = 0; i < static_cast<int>(w.path.size()); ++i) {
      (i <= w.depth ? within : beyond)[w.path[i].node] = true;
    }
  }
  for (size_t n = 0; n < nodes; ++n) within[n] = within[n] && !beyond[n];
  return within;
}

// Shortens walks until every node they skip has its output read only by skipped or chain
// nodes (and not a graph output); false when none changed.
bool ShortenWalks(const ChainFinder& f, std::vector<OperandWalk>& walks,
                  const std::vector<bool>& in_chain) {
  const std::vector<bool> skipped = Skipped(walks, f.graph().nodes().size());
  bool changed = false;
  for (OperandWalk& w : walks) {
    for (int i = 0; i <= w.depth; ++i) {
      const int n = w.path[i].node;
      const int out = f.graph().nodes()[n].output;
      bool ok = skipped[n] && f.graph().tensor(out).kind != TensorKind::kOutput;
      for (int r : f.readers(out)) ok = ok && (skipped[r] || in_chain[r]);
      if (ok) continue;
      w.depth = Usable(w.path, i - 1);
      changed = true;
      break;
    }
  }
  return changed;
}

// Each chain's operands read from the deepest tensor they were copied from whose copies can be
// skipped, those copies joining the chain's nodes. K must come from before its transpose to K^T:
// a chain where it cannot is dropped (and the others folded again without it).
void FoldOperandViews(const ChainFinder& f, std::vector<AttentionChain>& chains) {
  std::vector<bool> in_chain(f.graph().nodes().size(), false);
  std::vector<OperandWalk> walks;
  for (AttentionChain& c : chains) {
    for (int n : c.nodes) in_chain[n] = true;
    const AttentionParams& p = c.params;
    for (AttentionOperand* o : {&c.q, &c.k, &c.v}) {
      const int64_t seq = o == &c.q ? p.seq_q : p.seq_kv;
      OperandWalk w{&c, o,
                    WalkBackViews(f.graph(), f.producer(), o->tensor,
                                  {p.batch, p.heads, seq, p.head_dim}, o == &c.k)};
      w.depth = Usable(w.path, static_cast<int>(w.path.size()) - 1);
      walks.push_back(std::move(w));
    }
  }
  while (ShortenWalks(f, walks, in_chain)) {
  }
  std::vector<bool> drop(chains.size(), false);
  bool dropped = false;
  for (const OperandWalk& w : walks) {
    if (w.operand == &w.chain->k && w.depth < 0) {
      drop[w.chain - chains.data()] = dropped = true;
    }
  }
  if (dropped) {
    std::vector<AttentionChain> kept;
    for (size_t c = 0; c < chains.size(); ++c) {
      if (!drop[c]) kept.push_back(std::move(chains[c]));
    }
    chains = std::move(kept);
    return FoldOperandViews(f, chains);
  }
  for (OperandWalk& w : walks) {
    if (w.depth < 0) continue;
    w.operand->tensor = w.path[w.depth].tensor;
    w.operand->strides = *w.path[w.depth].strides;
    for (int i = 0; i <= w.depth; ++i) w.chain->nodes.push_back(w.path[i].node);
  }
  for (AttentionChain& c : chains) {
    std::sort(c.nodes.begin(), c.nodes.end());
    c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end()), c.nodes.end());
  }
}

}  // namespace

std::vector<AttentionChain> FindAttentionChains(const Graph& graph, const WeightSet* weights) {
  if (weights == nullptr) return {};
  const ChainFinder finder(graph, *weights);
  std::vector<AttentionChain> chains;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    if (graph.nodes()[i].op != OpKind::kSoftmax) continue;
    if (std::optional<AttentionChain> c = finder.FromSoftmax(i)) chains.push_back(*std::move(c));
  }
  FoldOperandViews(finder, chains);
  return chains;
}

AttentionStrides OutputStrides(const AttentionChain& chain) {
  const AttentionParams& p = chain.params;
  if (chain.out_perm.empty()) return ContiguousAttentionLayout(p).o;
  // The logical output [B, H, S_q, D]; its dim perm[i] is the written tensor's dim i.
  const std::vector<int64_t> dims = {p.batch, p.heads, p.seq_q, p.head_dim};
  std::vector<int64_t> written_strides(4, 1);
  for (int i = 2; i >= 0; --i) {
    written_strides[i] = written_strides[i + 1] * dims[chain.out_perm[i + 1]];
  }
  int64_t of[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) of[chain.out_perm[i]] = written_strides[i];
  return {of[0], of[1], of[2], 0};
}

}  // namespace tunejit

// File: executor/graph_readers.h
// Per tensor of a graph, the nodes that read it and the node that produces it, indexed once for
// the pattern matchers of the fp16 rewrites (attention_fusion.h, row_transposes.h), which ask
// many times where graph.h's OnlyReader would scan every node per question.
//
//   const GraphReaders links(graph);
//   if (const int r = links.OnlyReader(t); r >= 0) ... graph.nodes()[r]
#ifndef TUNEJIT_EXECUTOR_GRAPH_READERS_H_
#define TUNEJIT_EXECUTOR_GRAPH_READERS_H_

#include <vector>

#include "graph/graph.h"

namespace tunejit {

class GraphReaders {
 public:
  explicit GraphReaders(const Graph& g)
      : g_(g), readers_(g.tensors().size()), producer_(g.tensors().size(), -1) {
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
      for (int in : g.nodes()[i].inputs) readers_[in].push_back(i);
      producer_[g.nodes()[i].output] = i;
    }
  }

  const Graph& graph() const { return g_; }
  const std::vector<int>& readers(int t) const { return readers_[t]; }
  // Per tensor its node, -1 for none (inputs, weights).
  const std::vector<int>& producers() const { return producer_; }
  int producer(int t) const { return producer_[t]; }
  // As graph.h's OnlyReader: the node reading activation `t` alone (not a graph output), or -1.
  int OnlyReader(int t) const {
    if (g_.tensor(t).kind != TensorKind::kActivation || readers_[t].size() != 1) return -1;
    return readers_[t][0];
  }

 private:
  const Graph& g_;
  std::vector<std::vector<int>> readers_;
  std::vector<int> producer_;
};

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_GRAPH_READERS_H_

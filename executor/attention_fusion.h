// File: executor/attention_fusion.h
// Finds the attention chains the executor runs as one fused attention step at fp16
// (ops/attention.h, attention_mma.cuda), as torchvision's ViT and Hugging Face's BERT export
// them:
//   MatMul(Q [* c], Transpose(K, swap last two) [* c]) [* or / c] [+ mask] -> Softmax(last axis)
//   [-> replace_nan(., 0)] -> MatMul(., V)
// with Q, K, V of shape [B, H, S, D] (or [B*H, S, D]), scalar weights c folded into the softmax
// scale (torchvision scales Q and K^T by sqrt of it each, BERT divides the scores by sqrt(D)),
// and an optional additive mask [B or 1, 1, 1, S_kv] added to the scaled scores (or a weight
// [B or 1, 1, S_q, S_kv] whose query rows repeat). The NaN guard torch.onnx exports after a
// boolean mask's softmax is what the kernel does anyway (a row masked everywhere gives 0). Each
// tensor inside the chain must be read by the next node alone and not be a graph output; the
// scale's constants must be known (the weights), the head dim one the template takes (64 or 128).
// A transpose of the attention's output that keeps D last (ViT's [B, H, S, D] -> [S, B, H, D],
// BERT's -> [B, S, H, D]), after any reshapes that keep the shape, joins the chain too: the step
// writes its output through strides. So do
// the reshapes, transposes and slices that made Q, K and V out of a projection's output
// (executor/attention_views.h), where nothing else reads what they made: the step reads the
// projection's output through strides and offsets.
//
//   for (const AttentionChain& c : FindAttentionChains(graph, weights)) ... c.nodes, c.q, c.scale
#ifndef TUNEJIT_EXECUTOR_ATTENTION_FUSION_H_
#define TUNEJIT_EXECUTOR_ATTENTION_FUSION_H_

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"
#include "ops/attention.h"

namespace tunejit {

// A tensor the step reads, and the [B, H, S, D] operand in it.
struct AttentionOperand {
  int tensor = -1;
  AttentionStrides strides;
};

struct AttentionChain {
  // Q, K and V: the graph's [B, H, S, D] tensors, or tensors they were copied from (K always
  // from before the graph's transpose to K^T).
  AttentionOperand q, k, v;
  int mask = -1;           // the mask's graph tensor, or -1 (none, or causal)
  bool causal = false;     // the mask was a constant causal one: the kernel's causal mode
  int64_t mask_batch = 0;  // the mask's batch stride (S_kv, or S_q * S_kv where each query row
                           // repeats the first), or 0 when one row serves all
  double scale = 1.0;      // multiplies Q . K before the mask is added
  AttentionParams params;  // the fp16 problem (mask kF32: the step reads it as float32)
  // The graph tensor the step writes: the P V matmul's output, or the transpose's after it
  // (`out_perm` its perm, empty without one).
  int output = -1;
  std::vector<int64_t> out_perm;
  std::vector<int> nodes;  // every node of the chain, in graph order; the step's node is last
  int pv = -1;             // the P V matmul node (the step's name)
};

// The chains of `graph`, in graph order; none without weights (the scale must be known).
std::vector<AttentionChain> FindAttentionChains(const Graph& graph, const WeightSet* weights);

// Element strides (batch, head, seq) of the chain's output in the tensor the step writes: a
// row-major [B, H, S_q, D] without a transpose, else the transpose's output read back through
// its perm.
AttentionStrides OutputStrides(const AttentionChain& chain);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_ATTENTION_FUSION_H_

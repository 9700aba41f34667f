// File: executor/row_transposes.h
// Moves transposes across a dense layer at fp16, where the fused attention (attention_fusion.h)
// then reads through strides what the transposes would have copied. A dense layer on rows
// (reshape to [R, F], dense, optional bias_add, reshape back to [L..., N]) treats each row alike,
// so a transpose of the leading axes L commutes with it. PyTorch's nn.MultiheadAttention, as
// torchvision's ViT exports it, transposes its [B, S, E] tokens to [S, B, E] around both of its
// projections:
//   out side: Transpose(P V) -> rows -> dense -> back to [S, B, E] -> Transpose(1, 0, 2)
//     becomes one transpose of P V straight to [B, S, H, D] (the attention step writes it) and
//     the last transpose a view: always fewer copies;
//   in side: Transpose(x, 1, 0, 2) -> rows -> dense -> back to [S, B, 3E]
//     becomes rows of x -> dense -> [B, S, 3E] -> Transpose(1, 0, 2), kept only where the new
//     transpose is one the attention step reads through (otherwise it would copy 3E columns
//     instead of E).
// The result computes the same values (each row's dot products are unchanged), so the build,
// its reports and the CPU reference all run on it.
//
//   const Graph fp16_graph = SinkRowTransposes(graph, weights);
#ifndef TUNEJIT_EXECUTOR_ROW_TRANSPOSES_H_
#define TUNEJIT_EXECUTOR_ROW_TRANSPOSES_H_

#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

// `graph` with its dense layers' row transposes moved (above); `graph` itself where there is
// none to move.
Graph SinkRowTransposes(const Graph& graph, const WeightSet& weights);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_ROW_TRANSPOSES_H_

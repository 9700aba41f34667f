// File: executor/attention_views.h
// Where an attention operand's elements lie in the tensors it was copied from: walking back from
// a [B, H, S, D] operand through reshapes, transposes and slices (a projection's head split, ViT's
// unbind of its packed Q/K/V projection), the operand as element strides and an offset in each
// tensor passed. The fused attention step (executor/attention_fusion.h) reads the deepest one the
// copies in between can be skipped for, so that no transpose runs before it.
//
//   std::vector<ViewStep> path = WalkBackViews(graph, producer, q, {B, H, S, D});
//   if (!path.empty() && path.back().strides) ... read path.back().tensor with those strides
#ifndef TUNEJIT_EXECUTOR_ATTENTION_VIEWS_H_
#define TUNEJIT_EXECUTOR_ATTENTION_VIEWS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "ops/attention.h"

namespace tunejit {

struct ViewStep {
  int node = -1;    // the reshape, transpose or slice passed
  int tensor = -1;  // its input: the tensor the operand is seen in from here on
  // The operand in `tensor` (row-major): nullopt where D is not its last, contiguous dim or a
  // stride or the offset is not a multiple of 8 elements (the kernel's 16-byte loads).
  std::optional<AttentionStrides> strides;
};

// The steps back from activation `t`, its elements the operand of `extents` {B, H, S, D} in
// row-major order (`t` of rank 4, or 3 as [B*H, S, D] with H 1), or `transposed`, [B, H, D, S]
// (K^T as the scores' matmul reads it); nearest first. `producer`: per graph tensor its node
// (-1: none). The walk stops at any other producer, and where a reshape would scatter an operand
// dimension over two of its input's dims.
std::vector<ViewStep> WalkBackViews(const Graph& graph, const std::vector<int>& producer, int t,
                                    const std::array<int64_t, 4>& extents, bool transposed);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_ATTENTION_VIEWS_H_

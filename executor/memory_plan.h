// File: executor/memory_plan.h
// Storage planning for activations (TVM's graph storage planner idea): every activation tensor gets
// an offset in one device arena; two tensors may share bytes when their lifetimes (producing node
// .. last consuming node, inclusive) do not overlap. Placement is greedy by size: largest first,
// each at the lowest `alignment`-aligned offset free of every already placed tensor whose lifetime
// overlaps (TFLite's "greedy by size" offset planner). Ops never run in place: a node's inputs and
// its output are both live at that node, so they never share.
//
// flatten is a view (no kernel, ops/elementwise.h): when both its input and output are activations
// the output aliases the input (same offset) and the input's lifetime extends to the output's last
// use. Graph inputs, weights and outputs are not in the arena (the caller owns them); a flatten
// from or to one of those is planned as a separate buffer, and the executor copies.
//
//   TUNEJIT_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(graph));
//   device_ptr(t) = arena_base + plan.offsets[t];   // for plan.offsets[t] >= 0
//   plan.Summary();  // "arena 3.29 GB for 26.5 GB of activations (12.4%), 61 tensors"
#ifndef TUNEJIT_EXECUTOR_MEMORY_PLAN_H_
#define TUNEJIT_EXECUTOR_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace tunejit {

struct MemoryPlan {
  int64_t alignment = 256;
  int64_t arena_bytes = 0;  // a multiple of alignment
  int64_t sum_bytes = 0;    // of the planned tensors (aliases counted once), unaligned
  // Per graph tensor id: arena offset, or -1 for tensors outside the arena.
  std::vector<int64_t> offsets;
  // Per graph tensor id: [first, last] node index where the bytes are live (-1 when not planned).
  // For an alias source it covers its aliases' uses.
  std::vector<int> first_use, last_use;
  // Per graph tensor id: the tensor whose bytes it views (flatten), or -1.
  std::vector<int> alias_of;
  int planned_tensors = 0;  // excluding aliases

  std::string Summary() const;
};

// InvalidArgument if the graph does not validate (the planner relies on topological order) or if
// alignment is not a positive power of two.
absl::StatusOr<MemoryPlan> PlanMemory(const Graph& graph, int64_t alignment = 256);

// The same greedy-by-size placement for any list of buffers with lifetimes [first, last]
// (inclusive step indices), e.g. the executor's lowered steps (executor/step_program.h) where fused
// ops no longer have tensors of their own. A buffer with bytes == 0 gets offset 0 and takes no
// space. InvalidArgument for a bad alignment, negative bytes or first > last.
struct BufferLifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;
};
struct BufferPlan {
  std::vector<int64_t> offsets;  // per buffer, aligned
  int64_t arena_bytes = 0;       // a multiple of alignment
  int64_t sum_bytes = 0;         // without reuse, unaligned
};
absl::StatusOr<BufferPlan> PlanBuffers(const std::vector<BufferLifetime>& buffers,
                                       int64_t alignment = 256);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_MEMORY_PLAN_H_

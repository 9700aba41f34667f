#include "executor/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

bool IsActivation(const Graph& g, int id) { return g.tensor(id).kind == TensorKind::kActivation; }

// Fills alias_of, first_use, last_use (lifetimes of alias roots include their aliases' uses).
void Lifetimes(const Graph& g, MemoryPlan* plan) {
  const size_t n = g.tensors().size();
  plan->alias_of.assign(n, -1);
  plan->first_use.assign(n, -1);
  plan->last_use.assign(n, -1);
  auto root = [&](int id) { return plan->alias_of[id] >= 0 ? plan->alias_of[id] : id; };
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& node = g.nodes()[i];
    for (int in : node.inputs) {
      if (IsActivation(g, in)) plan->last_use[root(in)] = i;
    }
    const int out = node.output;
    if (!IsActivation(g, out)) continue;
    if (node.op == OpKind::kFlatten && IsActivation(g, node.inputs[0])) {
      plan->alias_of[out] = root(node.inputs[0]);
      continue;
    }
    plan->first_use[out] = i;
    plan->last_use[out] = i;  // an unused output still needs its bytes while the node runs
  }
}

bool Overlaps(const MemoryPlan& p, int a, int b) {
  return p.first_use[a] <= p.last_use[b] && p.first_use[b] <= p.last_use[a];
}

// Lowest aligned offset where `size` bytes fit between the already placed, live-overlapping ones.
int64_t FirstFit(const MemoryPlan& plan, const std::vector<int>& placed, int id, int64_t size,
                 const std::vector<int64_t>& sizes) {
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) in the arena
  for (int other : placed) {
    if (Overlaps(plan, id, other)) {
      busy.emplace_back(plan.offsets[other], plan.offsets[other] + sizes[other]);
    }
  }
  std::sort(busy.begin(), busy.end());
  int64_t offset = 0;
  for (const auto& [begin, end] : busy) {
    if (offset + size <= begin) break;
    offset = std::max(offset, AlignUp(end, plan.alignment));
  }
  return offset;
}

}  // namespace

absl::StatusOr<MemoryPlan> PlanMemory(const Graph& graph, int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory plan: alignment ", alignment, " is not a power of two"));
  }
  TUNEJIT_RETURN_IF_ERROR(graph.Validate());
  MemoryPlan plan;
  plan.alignment = alignment;
  Lifetimes(graph, &plan);
  const int n = static_cast<int>(graph.tensors().size());
  plan.offsets.assign(n, -1);
  std::vector<int64_t> sizes(n, 0);
  std::vector<int> order;
  for (int id = 0; id < n; ++id) {
    if (plan.first_use[id] < 0) continue;  // not an activation, or an alias
    sizes[id] = graph.tensor(id).Bytes();
    plan.sum_bytes += sizes[id];
    order.push_back(id);
  }
  // Largest first; ties by earlier definition so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : plan.first_use[a] < plan.first_use[b];
  });
  std::vector<int> placed;
  for (int id : order) {
    plan.offsets[id] = FirstFit(plan, placed, id, sizes[id], sizes);
    plan.arena_bytes = std::max(plan.arena_bytes, AlignUp(plan.offsets[id] + sizes[id], alignment));
    placed.push_back(id);
  }
  for (int id = 0; id < n; ++id) {
    if (plan.alias_of[id] >= 0) plan.offsets[id] = plan.offsets[plan.alias_of[id]];
  }
  plan.planned_tensors = static_cast<int>(order.size());
  return plan;
}

absl::StatusOr<BufferPlan> PlanBuffers(const std::vector<BufferLifetime>& buffers,
                                       int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer plan: alignment ", alignment, " is not a power of two"));
  }
  const int n = static_cast<int>(buffers.size());
  BufferPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    const BufferLifetime& b = buffers[i];
    if (b.bytes < 0 || b.first > b.last) {
      return absl::InvalidArgumentError(absl::StrCat("buffer plan: buffer ", i, " has bytes ",
                                                     b.bytes, ", lifetime [", b.first, ", ", b.last,
                                                     "]"));
    }
    plan.sum_bytes += b.bytes;
    if (b.bytes > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return buffers[a].bytes != buffers[b].bytes ? buffers[a].bytes > buffers[b].bytes
                                                : buffers[a].first < buffers[b].first;
  });
  std::vector<int> placed;
  for (int id : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed) {
      if (buffers[id].first <= buffers[other].last && buffers[other].first <= buffers[id].last) {
        busy.emplace_back(plan.offsets[other], plan.offsets[other] + buffers[other].bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + buffers[id].bytes <= begin) break;
      offset = std::max(offset, AlignUp(end, alignment));
    }
    plan.offsets[id] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, AlignUp(offset + buffers[id].bytes, alignment));
    placed.push_back(id);
  }
  return plan;
}

std::string MemoryPlan::Summary() const {
  const double ratio = sum_bytes > 0 ? 100.0 * arena_bytes / sum_bytes : 0;
  return absl::StrFormat("arena %.3f GB for %.3f GB of activations (%.1f%%), %d tensors",
                         arena_bytes / 1e9, sum_bytes / 1e9, ratio, planned_tensors);
}

}  // namespace tunejit

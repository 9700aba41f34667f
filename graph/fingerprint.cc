#include "graph/fingerprint.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <thread>
#include <vector>

#include "common/digest.h"

namespace tunejit {
namespace {

// Every attribute changes the fingerprint: a field added to NodeAttrs must be added here (the
// size check below catches a forgotten one on the platforms tunejit builds for).
static_assert(sizeof(NodeAttrs) == 184, "NodeAttrs changed: encode the new field in AppendAttrs");

void AppendI64(std::string* out, int64_t v) { AppendU64(out, static_cast<uint64_t>(v)); }
void AppendF32(std::string* out, float v) { AppendU32(out, std::bit_cast<uint32_t>(v)); }
void AppendI64s(std::string* out, const std::vector<int64_t>& values) {
  AppendU64(out, values.size());
  for (int64_t v : values) AppendI64(out, v);
}

void AppendAttrs(std::string* out, const NodeAttrs& a) {
  for (int v : {a.stride_h, a.stride_w, a.pad_top, a.pad_left, a.pad_bottom, a.pad_right,
                a.dilation_h, a.dilation_w, a.groups, a.pool_h, a.pool_w, a.axis,
                static_cast<int>(a.unary), static_cast<int>(a.binary),
                static_cast<int>(a.count_include_pad), static_cast<int>(a.keepdims)}) {
    AppendI64(out, v);
  }
  for (float v : {a.clip_min, a.clip_max, a.scale, a.alpha, a.beta, a.epsilon}) AppendF32(out, v);
  for (int64_t v : {a.start, a.end, a.step}) AppendI64(out, v);
  AppendI64s(out, a.perm);
  AppendI64s(out, a.shape);
  AppendI64s(out, a.axes);
}

}  // namespace

std::string GraphFingerprint(const Graph& graph) {
  std::string bytes;
  AppendBytes(&bytes, "tunejit-graph");
  AppendU64(&bytes, graph.tensors().size());
  for (const TensorDesc& t : graph.tensors()) {
    AppendBytes(&bytes, t.name);
    AppendI64s(&bytes, t.shape);
    AppendI64(&bytes, static_cast<int>(t.dtype));
    AppendI64(&bytes, static_cast<int>(t.kind));
  }
  AppendU64(&bytes, graph.nodes().size());
  for (const Node& n : graph.nodes()) {
    AppendBytes(&bytes, n.name);
    AppendI64(&bytes, static_cast<int>(n.op));
    AppendU64(&bytes, n.inputs.size());
    for (int i : n.inputs) AppendI64(&bytes, i);
    AppendI64(&bytes, n.output);
    AppendAttrs(&bytes, n.attrs);
  }
  return Sha256Hex(bytes);
}

std::string WeightsFingerprint(const Graph& graph, const WeightSet& weights, int threads) {
  std::vector<int> ids;
  for (size_t t = 0; t < graph.tensors().size(); ++t) {
    if (graph.tensor(static_cast<int>(t)).kind == TensorKind::kWeight) {
      ids.push_back(static_cast<int>(t));
    }
  }
  std::vector<std::string> digests(ids.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < ids.size(); i = next++) {
      absl::Span<const uint8_t> b = weights.Get(ids[i]);
      digests[i] = Sha256({reinterpret_cast<const char*>(b.data()), b.size()});
    }
  };
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int i = 1; i < std::min<int>(threads, static_cast<int>(ids.size())); ++i) {
    pool.emplace_back(work);
  }
  work();
  for (std::thread& t : pool) t.join();
  std::string bytes;
  AppendBytes(&bytes, "tunejit-weights");
  AppendU64(&bytes, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    AppendBytes(&bytes, graph.tensor(ids[i]).name);
    AppendBytes(&bytes, digests[i]);
  }
  return Sha256Hex(bytes);
}

}  // namespace tunejit

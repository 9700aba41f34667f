#include "graph/fingerprint.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/digest.h"
#include "common/parallel_for.h"

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
  std::vector<absl::string_view> chunks;
  std::vector<size_t> first_chunk;  // per weight tensor, then one past the last chunk
  for (int id : ids) {
    first_chunk.push_back(chunks.size());
    const absl::Span<const uint8_t> b = weights.Get(id);
    for (size_t at = 0; at < b.size(); at += kWeightsFingerprintChunkBytes) {
      chunks.emplace_back(reinterpret_cast<const char*>(b.data()) + at,
                          std::min(kWeightsFingerprintChunkBytes, b.size() - at));
    }
  }
  first_chunk.push_back(chunks.size());
  std::vector<std::string> digests(chunks.size());
  ParallelFor(static_cast<int64_t>(chunks.size()), 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) digests[c] = Sha256(chunks[c]);
  });
  std::string bytes;
  AppendBytes(&bytes, "tunejit-weights");
  AppendU64(&bytes, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string tensor;
    AppendBytes(&tensor, "tunejit-weight-chunks");
    AppendU64(&tensor, kWeightsFingerprintChunkBytes);
    AppendU64(&tensor, weights.Get(ids[i]).size());
    for (size_t c = first_chunk[i]; c < first_chunk[i + 1]; ++c) tensor += digests[c];
    AppendBytes(&bytes, graph.tensor(ids[i]).name);
    AppendBytes(&bytes, Sha256(tensor));
  }
  return Sha256Hex(bytes);
}

}  // namespace tunejit

#include "onnx/wire_split.h"

#include <utility>

namespace tunejit::onnx_import {
namespace {

// Field numbers of onnx.proto (they never change: the format is a public standard).
constexpr uint64_t kModelGraph = 7;        // ModelProto.graph
constexpr uint64_t kGraphInitializer = 5;  // GraphProto.initializer
constexpr uint64_t kTensorRawData = 9;     // TensorProto.raw_data
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// One field of a message: its tag and, for a length-delimited one, the payload.
struct Field {
  uint64_t number = 0;
  int wire_type = 0;
  absl::Span<const uint8_t> tag;      // the tag's own bytes
  absl::Span<const uint8_t> payload;  // length-delimited only
  absl::Span<const uint8_t> whole;    // tag through the end of the value
};

bool ReadVarint(absl::Span<const uint8_t> in, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= in.size()) return false;
    const uint8_t b = in[(*pos)++];
    *value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;  // over 10 bytes
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void Append(absl::Span<const uint8_t> bytes, std::string* out) {
  out->append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// The field at `*pos`, advancing past it; false on anything not plain protobuf (groups, a field
// number 0, a value running past the end).
bool NextField(absl::Span<const uint8_t> in, size_t* pos, Field* f) {
  const size_t start = *pos;
  uint64_t key = 0;
  if (!ReadVarint(in, pos, &key)) return false;
  f->number = key >> 3;
  f->wire_type = static_cast<int>(key & 7);
  if (f->number == 0) return false;
  f->tag = in.subspan(start, *pos - start);
  uint64_t skip = 0;
  switch (f->wire_type) {
    case kVarint:
      if (!ReadVarint(in, pos, &skip)) return false;
      skip = 0;
      break;
    case kFixed64:
      skip = 8;
      break;
    case kFixed32:
      skip = 4;
      break;
    case kLengthDelimited:
      if (!ReadVarint(in, pos, &skip)) return false;
      break;
    default:
      return false;
  }
  if (skip > in.size() - *pos) return false;
  if (f->wire_type == kLengthDelimited) f->payload = in.subspan(*pos, skip);
  *pos += skip;
  f->whole = in.subspan(start, *pos - start);
  return true;
}

// A length-delimited field with a rewritten payload.
void AppendRewritten(const Field& f, const std::string& payload, std::string* out) {
  Append(f.tag, out);
  AppendVarint(payload.size(), out);
  out->append(payload);
}

// The TensorProto without a large raw_data (set in *raw_data then).
bool SplitTensor(absl::Span<const uint8_t> tensor, std::string* out,
                 absl::Span<const uint8_t>* raw_data) {
  size_t pos = 0;
  int raw_fields = 0;
  Field f;
  while (pos < tensor.size()) {
    if (!NextField(tensor, &pos, &f)) return false;
    if (f.number == kTensorRawData && f.wire_type == kLengthDelimited) {
      // protobuf keeps the last of repeated raw_data: leave such a tensor to protobuf.
      if (++raw_fields > 1) return false;
      if (f.payload.size() >= kMinSplitRawData) {
        *raw_data = f.payload;
        continue;
      }
    }
    Append(f.whole, out);
  }
  return true;
}

bool SplitGraph(absl::Span<const uint8_t> graph, std::string* out,
                std::vector<absl::Span<const uint8_t>>* raw_data) {
  size_t pos = 0;
  Field f;
  std::string tensor;
  while (pos < graph.size()) {
    if (!NextField(graph, &pos, &f)) return false;
    if (f.number != kGraphInitializer || f.wire_type != kLengthDelimited) {
      Append(f.whole, out);
      continue;
    }
    tensor.clear();
    absl::Span<const uint8_t> raw;
    if (!SplitTensor(f.payload, &tensor, &raw)) return false;
    raw_data->push_back(raw);
    AppendRewritten(f, tensor, out);
  }
  return true;
}

}  // namespace

std::optional<SplitModel> SplitInitializerData(absl::Span<const uint8_t> bytes) {
  SplitModel split;
  size_t pos = 0;
  bool seen_graph = false;
  Field f;
  while (pos < bytes.size()) {
    if (!NextField(bytes, &pos, &f)) return std::nullopt;
    if (f.number != kModelGraph || f.wire_type != kLengthDelimited) {
      Append(f.whole, &split.skeleton);
      continue;
    }
    if (seen_graph) return std::nullopt;  // protobuf merges repeated graphs
    seen_graph = true;
    std::string graph;
    if (!SplitGraph(f.payload, &graph, &split.raw_data)) return std::nullopt;
    AppendRewritten(f, graph, &split.skeleton);
  }
  for (absl::Span<const uint8_t> raw : split.raw_data) {
    if (!raw.empty()) return split;
  }
  return std::nullopt;
}

}  // namespace tunejit::onnx_import

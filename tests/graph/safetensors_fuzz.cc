// libFuzzer target: the safetensors header parser on arbitrary bytes. Besides "never crash, never
// hang", it checks that an accepted file's tensors lie inside the file and that writing them back
// gives a file we accept again with the same tensors (the writer agrees with the reader).
//
//   graph_safetensors_fuzz tests/data/graph/safetensors_corpus -max_total_time=300
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "graph/safetensors.h"

using namespace tunejit;  // NOLINT: a fuzz driver, not library code

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<SafetensorsHeader> header = ParseSafetensors({data, size}, "fuzz");
  if (!header.ok()) return 0;
  std::vector<TensorView> views;
  for (const SafetensorsHeader::Entry& e : header->tensors) {
    if (e.begin > e.end || header->buffer_offset + e.end > size) std::abort();
    views.push_back(
        {e.name, e.dtype, e.shape, {data + header->buffer_offset + e.begin, e.end - e.begin}});
  }
  absl::StatusOr<std::string> image = SerializeSafetensors(views, header->metadata);
  if (!image.ok()) std::abort();
  absl::StatusOr<SafetensorsHeader> again = ParseSafetensors(
      {reinterpret_cast<const uint8_t*>(image->data()), image->size()}, "fuzz-rewrite");
  if (!again.ok() || again->tensors.size() != header->tensors.size() ||
      again->metadata != header->metadata) {
    std::abort();
  }
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& a = again->tensors[i];
    if (a.name != views[i].name || a.dtype != views[i].dtype || a.shape != views[i].shape ||
        a.end - a.begin != views[i].bytes.size()) {
      std::abort();
    }
  }
  return 0;
}

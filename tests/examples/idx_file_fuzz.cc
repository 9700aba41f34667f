// libFuzzer target: the IDX reader on arbitrary bytes. Besides "never crash, never hang", an
// accepted file's values must be exactly its body, sized by its dimensions.
//
//   examples_idx_file_fuzz tests/data/examples/idx_corpus -max_total_time=300
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "examples/fashion_mnist/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<tunejit::IdxArray> r = tunejit::ParseIdx({data, size}, "fuzz");
  if (!r.ok()) return 0;
  size_t count = 1;
  for (int64_t d : r->dims) count *= static_cast<size_t>(d);
  const size_t header = 4 + 4 * r->dims.size();
  if (count != r->values.size() || header + count != size) std::abort();
  for (size_t i = 0; i < count; ++i) {
    if (r->values[i] != data[header + i]) std::abort();
  }
  return 0;
}

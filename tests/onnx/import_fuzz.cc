// libFuzzer target: the ONNX importer on arbitrary bytes (protobuf parse, opset and shape checks,
// tensor decoding, every op mapper, BN folding, QDQ). Besides "never crash, never hang", an
// accepted model must be a valid graph whose every weight tensor has exactly its bytes. External
// data is refused here (no model directory), so inputs never name files to read.
//
//   onnx_import_fuzz tests/data/onnx/import_corpus -max_total_time=300
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "onnx/import.h"

using namespace tunejit;  // NOLINT: a fuzz driver, not library code

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A dynamic batch resolves to 2 (the corpus models have one); a static one is replaced too.
  absl::StatusOr<OnnxModel> m = ImportOnnxFromBytes({data, size}, {.batch = 2}, "fuzz");
  if (!m.ok()) return 0;
  if (!m->graph.Validate().ok()) std::abort();
  for (int id : m->graph.TensorsOfKind(TensorKind::kWeight)) {
    if (static_cast<int64_t>(m->weights.Get(id).size()) != m->graph.tensor(id).Bytes()) {
      std::abort();
    }
  }
  return 0;
}

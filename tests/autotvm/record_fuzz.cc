// libFuzzer target: the record line parser, the target string parser and the log text loader.
// Built only with -DTUNEJIT_FUZZ=ON and clang. Besides "never crash, never hang", it checks that
// anything we accept is written back in a form we accept again, identically (idempotent writer).
//
//   autotvm_record_fuzz tests/data/autotvm/fuzz_corpus -max_total_time=300
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "autotvm/config_space.h"
#include "autotvm/log_file.h"
#include "autotvm/record.h"
#include "autotvm/record_check.h"
#include "autotvm/target.h"
#include "ops/op_template.h"

using namespace tunejit::autotvm;  // NOLINT: a fuzz driver, not library code

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Record> record = ParseRecordLine(text);
  if (record.ok()) {
    std::string line = SerializeRecord(*record);
    absl::StatusOr<Record> again = ParseRecordLine(line);
    if (!again.ok()) std::abort();                      // we must read what we write
    if (SerializeRecord(*again) != line) std::abort();  // and write it the same way again
    (void)ParseConv2dWorkload(record->workload);
    (void)ParseDenseWorkload(record->workload);
    RecordCheck check = ::tunejit::CheckRecord(*record);
    if (check.verdict == RecordCheck::kConsistent && check.entity_index != record->index) {
      std::abort();
    }
  }
  (void)ParseTarget(text);
  LogContents log;
  (void)LoadLogText(text, "fuzz", {}, &log);
  return 0;
}

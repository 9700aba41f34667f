// File: autotvm/record.h
// One AutoTVM tuning record (one log line), in either of the two formats TVM has written:
//   0.2: {"input": [target, task, args, kwargs], "config": {"index", "code_hash", "entity"},
//         "result": [costs, error_no, all_cost, timestamp], "version": 0.2, "tvm_version": "..."}
//   0.1: {"i": [target, task, args, kwargs, old_workload, {"i", "c", "e", "t"}], "r": [...],
//         "v": 0.1}   (TopHub cuda_v0.01..v0.07; the key order varies from line to line)
// SerializeRecord writes a record back exactly as TVM's json.dumps did: 0.2 records are rebuilt
// from the typed fields in TVM's key order, 0.1 records from the parsed object (so their key order
// survives) with the typed fields written into it.
//
//   TUNEJIT_ASSIGN_OR_RETURN(Record r, ParseRecordLine(line));
//   r.workload.task_name;  r.config.Split("tile_x");  r.result.MeanCost();
//   std::string again = SerializeRecord(r);  // == line for every line TVM wrote
#ifndef TUNEJIT_AUTOTVM_RECORD_H_
#define TUNEJIT_AUTOTVM_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"

namespace tunejit::autotvm {

enum class RecordFormat { kV01, kV02 };

// TVM's MeasureErrorNo (section 7.3 of docs/tvm-templates.md).
enum MeasureErrorNo : int {
  kNoError = 0,
  kInstantiationError = 1,
  kCompileHost = 2,
  kCompileDevice = 3,
  kRuntimeDevice = 4,
  kWrongAnswer = 5,
  kBuildTimeout = 6,
  kRunTimeout = 7,
  kUnknownError = 8,
};
const char* MeasureErrorName(int error_no);

struct MeasureResult {
  std::vector<double> costs;  // seconds; [1e9] for failed measurements
  int error_no = kNoError;
  double all_cost = 0;      // wall seconds for build + run
  double timestamp = 0;     // unix seconds at the end of the measurement
  double MeanCost() const;  // mean(costs), as ApplyHistoryBest ranks records
};

struct Record {
  RecordFormat format = RecordFormat::kV02;
  Target target;  // target.text is written back verbatim
  Workload workload;
  Json kwargs = Json::object();
  int64_t index = 0;  // -1 when a 0.1 record has no "i"
  Json code_hash;     // null in every real log
  ConfigEntity config;
  MeasureResult result;
  std::string tvm_version = "0.7.dev1";  // 0.2 only
  std::string template_key;              // 0.1 "t" ("direct", "winograd", ...)
  Json raw;  // the parsed line (0.1 records are written back through it); null for new records
  // tunejit's own optional top-level key, {"tunejit": {"gpu": 0, "device": "NVIDIA H200"}}: which
  // GPU measured the record (multi-GPU tuning). TVM ignores unknown keys; written only when
  // gpu >= 0, so lines without it round-trip byte for byte.
  int gpu = -1;
  std::string device;
  // The task name as the line has it when a later TVM's name for the template (workload.task_name
  // holds TVM 0.7's: CanonicalTaskName); SerializeRecord writes it back. "" otherwise.
  std::string written_task_name;
  const std::string& TaskNameAsWritten() const {
    return written_task_name.empty() ? workload.task_name : written_task_name;
  }

  bool ok() const { return result.error_no == kNoError; }
};

// Parses one non-comment line. InvalidArgument names the field and the reason, e.g.
// "config.entity[2]: split value must be a list of integers". Never throws.
absl::StatusOr<Record> ParseRecordLine(std::string_view line);

// The line TVM would write for `record`, without the trailing newline.
std::string SerializeRecord(const Record& record);

// A new format-0.2 record, as the tuner writes after a measurement.
Record MakeRecord(const Target& target, const Workload& workload, int64_t index,
                  const ConfigEntity& config, const MeasureResult& result,
                  const std::string& tvm_version = "0.7.dev1");

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_RECORD_H_

// File: autotvm/log_file.h
// Reading and appending AutoTVM log files. Reading is forgiving by default: a line that is not a
// valid record is reported (file, line number, reason) and skipped, and the rest still loads, as
// TVM's load_from_file does; `strict` makes the first bad line an error. Appending writes one
// whole line with a single write() on an O_APPEND descriptor, so concurrent appenders never
// interleave and a crash can at worst lose a line, never leave half of one that breaks reading.
//
//   LogContents log;
//   TUNEJIT_RETURN_IF_ERROR(LoadLogFile("tune.log", {}, &log));
//   for (const LoadedRecord& r : log.records) ...;   std::cerr << log.Summary();
//   TUNEJIT_RETURN_IF_ERROR(AppendRecordToLog("tune.log", record));
#ifndef TUNEJIT_AUTOTVM_LOG_FILE_H_
#define TUNEJIT_AUTOTVM_LOG_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "autotvm/record.h"

namespace tunejit::autotvm {

struct LoadedRecord {
  Record record;
  std::string file;
  int line = 0;      // 1-based
  std::string text;  // the line as read (without the newline)
};

struct LogLineError {
  std::string file;
  int line = 0;
  std::string reason;
  std::string ToString() const;  // "tune.log:17: config.entity: empty entity list"
};

struct LogContents {
  std::vector<LoadedRecord> records;
  std::vector<LogLineError> errors;
  int files = 0;
  int comment_lines = 0;  // '#' lines
  int blank_lines = 0;
  // "22 records from 1 file; skipped 2 bad lines (1 invalid JSON, 1 empty entity list)"
  std::string Summary() const;
};

struct LoadOptions {
  bool strict = false;  // the first bad line fails the load (its LogLineError text)
};

// Appends the file's records and errors to *out. NotFound / PermissionDenied if it cannot be read.
absl::Status LoadLogFile(const std::string& path, const LoadOptions& options, LogContents* out);
// The same for text already in memory; `name` stands in for the file name in messages.
absl::Status LoadLogText(std::string_view text, const std::string& name, const LoadOptions& options,
                         LogContents* out);

// Appends `line` + '\n' with one write() (O_APPEND | O_CREAT). If the file's last byte is not a
// newline (a writer died mid-line), a newline is written first so this line stays readable.
absl::Status AppendLineToLog(const std::string& path, std::string_view line);
absl::Status AppendRecordToLog(const std::string& path, const Record& record);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_LOG_FILE_H_

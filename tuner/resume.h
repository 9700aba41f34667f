// File: tuner/resume.h
// `tunejit tune --resume`: what an earlier (possibly killed) run already measured, read from its
// log, so nothing is measured twice and the earlier trials count against each task's budget.
// Records are keyed by workload (autotvm::Workload::Key: task name + shapes), whatever target or
// GPU tag they carry.
//
// A log cut by `kill -9` mid-write can end in a partial line (no '\n'). LoadResumeLog reports it;
// with `repair` it truncates the file back to the last whole line (or completes the line when the
// tail is a whole record that only lacks its newline), so later appends start on a clean line.
//
//   TUNEJIT_ASSIGN_OR_RETURN(ResumeLog done, LoadResumeLog("tune.log", /*repair=*/true));
//   done.Measured(task.workload.Key());   // indices to skip
//   done.Trials(key);  done.Seconds(key);  done.Records(key);
#ifndef TUNEJIT_TUNER_RESUME_H_
#define TUNEJIT_TUNER_RESUME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "autotvm/record.h"

namespace tunejit {

class ResumeLog {
 public:
  // Distinct measured config indices of the workload.
  const absl::flat_hash_set<int64_t>& Measured(const std::string& key) const;
  int64_t Trials(const std::string& key) const { return Measured(key).size(); }
  // Wall time already spent on the workload: per record, the time since the log's previous
  // record of any workload (compiling, checking and switching tasks, not only the all_cost it
  // records) when that is under a minute (longer means another run), and at least the record's
  // all_cost. Summed over a run's workloads, that is the run's wall time.
  double Seconds(const std::string& key) const;
  // The workload's records (first record of each index), in log order.
  const std::vector<autotvm::Record>& Records(const std::string& key) const;
  // Every record of every workload, for transfer learning across workloads of a task name.
  std::vector<autotvm::Record> AllRecords() const;

  int records = 0;                    // whole valid record lines
  int duplicates = 0;                 // records of an index already seen
  int bad_lines = 0;                  // lines that are not valid records (skipped)
  bool torn_tail = false;             // the file ended in a partial line
  int64_t repaired_bytes = 0;         // bytes cut off (or 1: a newline added) by the repair
  std::vector<std::string> messages;  // what was found, for the user

 private:
  friend absl::StatusOr<ResumeLog> ParseResumeLog(std::string_view, const std::string&);
  struct PerWorkload {
    absl::flat_hash_set<int64_t> measured;
    std::vector<autotvm::Record> records;
    double seconds = 0;
  };
  absl::flat_hash_map<std::string, PerWorkload> by_key_;
  std::vector<std::string> key_order_;
};

// Parses log text (no file access); `name` stands in for the file in messages.
absl::StatusOr<ResumeLog> ParseResumeLog(std::string_view text, const std::string& name);
// Reads `path` (a missing file is an empty log) and repairs a torn tail when `repair`.
absl::StatusOr<ResumeLog> LoadResumeLog(const std::string& path, bool repair);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_RESUME_H_

#include "tuner/resume.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tunejit {
namespace {

constexpr int kMaxReportedBadLines = 5;

// Cuts a torn tail off `path` (or adds the missing newline after a whole record). The file is
// re-checked first: it must still have the size we parsed, else another writer is active.
absl::Status RepairTail(const std::string& path, int64_t parsed_size, int64_t keep_bytes,
                        bool add_newline) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  absl::Cleanup closer = [fd] { ::close(fd); };
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size != parsed_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " changed while resuming: is another tuner writing to it?"));
  }
  if (add_newline) {
    if (::pwrite(fd, "\n", 1, parsed_size) != 1) {
      return absl::InternalError(absl::StrCat("cannot repair ", path, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  if (::ftruncate(fd, keep_bytes) != 0) {
    return absl::InternalError(absl::StrCat("cannot truncate ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

const absl::flat_hash_set<int64_t>& ResumeLog::Measured(const std::string& key) const {
  static const absl::flat_hash_set<int64_t>* const kEmpty = new absl::flat_hash_set<int64_t>();
  auto it = by_key_.find(key);
  return it == by_key_.end() ? *kEmpty : it->second.measured;
}

double ResumeLog::Seconds(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? 0.0 : it->second.seconds;
}

const std::vector<autotvm::Record>& ResumeLog::Records(const std::string& key) const {
  static const std::vector<autotvm::Record>* const kEmpty = new std::vector<autotvm::Record>();
  auto it = by_key_.find(key);
  return it == by_key_.end() ? *kEmpty : it->second.records;
}

std::vector<autotvm::Record> ResumeLog::AllRecords() const {
  std::vector<autotvm::Record> all;
  for (const std::string& key : key_order_) {
    const std::vector<autotvm::Record>& r = by_key_.at(key).records;
    all.insert(all.end(), r.begin(), r.end());
  }
  return all;
}

absl::StatusOr<ResumeLog> ParseResumeLog(std::string_view text, const std::string& name) {
  ResumeLog log;
  double last_timestamp = 0;  // the latest record so far (any workload)
  const size_t last_newline = text.rfind('\n');
  const std::string_view whole = last_newline == std::string_view::npos
                                     ? std::string_view()
                                     : text.substr(0, last_newline + 1);
  const std::string_view tail = text.substr(whole.size());
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(whole.data(), whole.size()), '\n');
  if (!tail.empty()) lines.push_back(absl::string_view(tail.data(), tail.size()));
  int line_no = 0;
  for (absl::string_view line : lines) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    absl::StatusOr<autotvm::Record> record =
        autotvm::ParseRecordLine(std::string_view(line.data(), line.size()));
    const bool is_tail = !tail.empty() && line.data() == tail.data();
    if (!record.ok() || record->index < 0) {
      if (is_tail) {
        log.torn_tail = true;
        log.messages.push_back(absl::StrCat(name, ":", line_no, ": partial last line (",
                                            tail.size(), " bytes, a writer was killed mid-line)"));
        continue;
      }
      if (++log.bad_lines <= kMaxReportedBadLines) {
        log.messages.push_back(absl::StrCat(
            name, ":", line_no, ": skipped: ",
            record.ok() ? "0.1 record without a config index" : record.status().message()));
      }
      continue;
    }
    ++log.records;
    const std::string key = record->workload.Key();
    auto [it, inserted] = log.by_key_.try_emplace(key);
    if (inserted) log.key_order_.push_back(key);
    ResumeLog::PerWorkload& w = it->second;
    // The time since the log's previous record, whatever its workload: a run's records follow
    // one another, and the time between the last record of one task and the first of the next
    // (setting the task up, compiling its first batch) is spent too. Counting gaps per workload
    // missed it: a 5-minute run's log summed to 79 s. A gap over a minute is a pause between runs.
    constexpr double kMaxGapSeconds = 60;
    const double gap = record->result.timestamp - last_timestamp;
    const bool same_run = last_timestamp > 0 && gap >= 0 && gap <= kMaxGapSeconds;
    w.seconds += std::max(record->result.all_cost, same_run ? gap : 0.0);
    last_timestamp = std::max(last_timestamp, record->result.timestamp);
    if (!w.measured.insert(record->index).second) {
      ++log.duplicates;
      continue;
    }
    w.records.push_back(*std::move(record));
  }
  if (log.bad_lines > kMaxReportedBadLines) {
    log.messages.push_back(
        absl::StrCat(name, ": ", log.bad_lines - kMaxReportedBadLines, " more bad lines skipped"));
  }
  return log;
}

absl::StatusOr<ResumeLog> LoadResumeLog(const std::string& path, bool repair) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return ResumeLog();
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  absl::StatusOr<ResumeLog> log = ParseResumeLog(text, path);
  if (!log.ok() || !repair || text.empty() || text.back() == '\n') return log;
  // The last line has no newline: either a whole record (add the newline) or a torn one (cut it).
  const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  const bool add_newline = !log->torn_tail;
  if (absl::Status s = RepairTail(path, static_cast<int64_t>(text.size()),
                                  static_cast<int64_t>(keep), add_newline);
      !s.ok()) {
    return s;
  }
  log->repaired_bytes = add_newline ? 1 : static_cast<int64_t>(text.size() - keep);
  log->messages.push_back(add_newline ? absl::StrCat(path, ": added the missing final newline")
                                      : absl::StrCat(path, ": cut the partial last line (",
                                                     log->repaired_bytes, " bytes)"));
  return log;
}

}  // namespace tunejit

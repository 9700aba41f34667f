#include "autotvm/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/parallel_for.h"

namespace tunejit::autotvm {
namespace {

// The reason without its field path: "config.entity: empty entity list" -> "empty entity list".
std::string ReasonKind(const std::string& reason) {
  if (reason.rfind("invalid JSON", 0) == 0) return "invalid JSON";
  size_t pos = reason.find(": ");
  return pos == std::string::npos ? reason : reason.substr(pos + 2);
}

// Lines parsed per chunk of work: enough that a thread's start is paid back.
constexpr int64_t kLinesPerChunk = 256;

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

}  // namespace

std::string LogLineError::ToString() const { return absl::StrCat(file, ":", line, ": ", reason); }

std::string LogContents::Summary() const {
  std::string out =
      absl::StrCat(records.size(), " records from ", files, files == 1 ? " file" : " files");
  if (errors.empty()) return out;
  std::map<std::string, int> kinds;
  for (const LogLineError& e : errors) ++kinds[ReasonKind(e.reason)];
  std::vector<std::string> parts;
  for (const auto& [kind, count] : kinds) parts.push_back(absl::StrCat(count, " ", kind));
  absl::StrAppend(&out, "; skipped ", errors.size(),
                  errors.size() == 1 ? " bad line (" : " bad lines (", absl::StrJoin(parts, ", "),
                  ")");
  return out;
}

absl::Status LoadLogText(std::string_view text, const std::string& name, const LoadOptions& options,
                         LogContents* out) {
  ++out->files;
  // The record lines first, then their parses on all cores (a tuned log of a few thousand
  // records took a tenth of a second on one, at every start), kept in line order.
  struct RecordLine {
    int line_no;
    std::string_view text;
  };
  std::vector<RecordLine> lines;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (IsBlank(line)) {
      ++out->blank_lines;
      continue;
    }
    if (line[line.find_first_not_of(" \t")] == '#') {
      ++out->comment_lines;
      continue;
    }
    lines.push_back({line_no, line});
  }
  std::vector<absl::StatusOr<Record>> parsed(lines.size(), absl::UnknownError("not parsed"));
  ParallelFor(static_cast<int64_t>(lines.size()), kLinesPerChunk, /*threads=*/0,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) parsed[i] = ParseRecordLine(lines[i].text);
              });
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!parsed[i].ok()) {
      LogLineError error{name, lines[i].line_no, std::string(parsed[i].status().message())};
      if (options.strict) return absl::InvalidArgumentError(error.ToString());
      out->errors.push_back(std::move(error));
      continue;
    }
    out->records.push_back(
        {*std::move(parsed[i]), name, lines[i].line_no, std::string(lines[i].text)});
  }
  return absl::OkStatus();
}

absl::Status LoadLogFile(const std::string& path, const LoadOptions& options, LogContents* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
  return LoadLogText(buffer.str(), path, options, out);
}

absl::Status AppendLineToLog(const std::string& path, std::string_view line) {
  if (line.find('\n') != std::string_view::npos) {
    return absl::InvalidArgumentError("a log line cannot contain a newline");
  }
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path, " for appending"));
  absl::Cleanup closer = [fd] { ::close(fd); };
  std::string data;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    if (::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') data.push_back('\n');
  }
  data.append(line.data(), line.size());
  data.push_back('\n');
  size_t done = 0;
  while (done < data.size()) {  // regular files take the whole buffer in one write()
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("cannot append to ", path));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AppendRecordToLog(const std::string& path, const Record& record) {
  return AppendLineToLog(path, SerializeRecord(record));
}

}  // namespace tunejit::autotvm

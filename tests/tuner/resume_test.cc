// Resuming from a log (tuner/resume.h): torn last lines, skip sets, counts and seconds; and the
// log-append guarantee resuming relies on: many threads and processes appending to one log leave
// only whole, parseable lines.
#include "tuner/resume.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "autotvm/log_file.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

std::string Line(int64_t index, int n = 64, double all_cost = 1.5, int error_no = 0,
                 double timestamp = 1700000000.25) {
  return absl::StrCat(
      R"({"input": ["cuda -model=unknown", "dense_small_batch.cuda", [["TENSOR", [1, )", n,
      R"(], "float32"], ["TENSOR", [32, )", n,
      R"(], "float32"], null, "float32"], {}], "config": {"index": )", index,
      R"(, "code_hash": null, "entity": [["tile_k", "sp", [-1, 16]]]}, "result": [[0.000123], )",
      error_no, ", ", all_cost, ", ", absl::StrFormat("%.2f", timestamp),
      R"(], "version": 0.2, "tvm_version": "0.7.dev1"})");
}

std::string KeyOf(const std::string& line) {
  return autotvm::ParseRecordLine(line)->workload.Key();
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ResumeLog, CountsSkipSetAndSeconds) {
  const std::string text = Line(1) + "\n" + Line(5, 64, 2.0, 4) + "\n" + Line(1) + "\n" +
                           "# comment\n\n" + "garbage\n" + Line(7, 128) + "\n";
  absl::StatusOr<ResumeLog> log = ParseResumeLog(text, "t.log");
  ASSERT_TRUE(log.ok()) << log.status();
  const std::string a = KeyOf(Line(1)), b = KeyOf(Line(7, 128));
  EXPECT_EQ(log->records, 4);
  EXPECT_EQ(log->duplicates, 1);
  EXPECT_EQ(log->bad_lines, 1);
  EXPECT_FALSE(log->torn_tail);
  EXPECT_EQ(log->Measured(a), (absl::flat_hash_set<int64_t>{1, 5}));  // errors count as measured
  EXPECT_EQ(log->Trials(a), 2);
  EXPECT_DOUBLE_EQ(log->Seconds(a), 1.5 + 2.0 + 1.5);  // time spent, duplicates included
  EXPECT_EQ(log->Trials(b), 1);
  EXPECT_EQ(log->Trials("no such workload"), 0);
  EXPECT_EQ(log->Records(a).size(), 2u);
  EXPECT_EQ(log->AllRecords().size(), 3u);
  ASSERT_FALSE(log->messages.empty());
  EXPECT_NE(log->messages[0].find("t.log:6"), std::string::npos) << log->messages[0];
}

// The budget a resumed run has left depends on this: records 4 s apart cost 4 s each even when
// their all_cost says 1.5 (compiling and checking are not in it); a gap of an hour is another run.
TEST(ResumeLog, SecondsFollowTheRecordsTimestamps) {
  const double t0 = 1700000000.25;
  const std::string text = Line(1, 64, 1.5, 0, t0) + "\n" + Line(2, 64, 1.5, 0, t0 + 4) + "\n" +
                           Line(3, 64, 1.5, 0, t0 + 8) + "\n" + Line(4, 64, 1.5, 0, t0 + 3608) +
                           "\n";
  absl::StatusOr<ResumeLog> log = ParseResumeLog(text, "t.log");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_DOUBLE_EQ(log->Seconds(KeyOf(Line(1))), 1.5 + 4 + 4 + 1.5);
}

// A run moves from task to task: the time from one task's last record to the next task's first
// (setting it up, compiling its first batch) is spent by the run and counts, on the task that
// follows; the sum over the tasks is the run's wall time.
TEST(ResumeLog, SecondsIncludeTheSwitchBetweenWorkloads) {
  const double t0 = 1700000000.25;
  const std::string text = Line(1, 64, 1.5, 0, t0) + "\n" + Line(2, 64, 1.5, 0, t0 + 2) + "\n" +
                           Line(1, 128, 1.5, 0, t0 + 12) + "\n" + Line(2, 128, 1.5, 0, t0 + 14) +
                           "\n" + Line(3, 64, 1.5, 0, t0 + 20) + "\n";
  absl::StatusOr<ResumeLog> log = ParseResumeLog(text, "t.log");
  ASSERT_TRUE(log.ok()) << log.status();
  const double a = log->Seconds(KeyOf(Line(1))), b = log->Seconds(KeyOf(Line(1, 128)));
  EXPECT_DOUBLE_EQ(a, 1.5 + 2 + 6);
  EXPECT_DOUBLE_EQ(b, 10 + 2);
  EXPECT_DOUBLE_EQ(a + b, 1.5 + 20);  // the first record's all_cost, then the run's span
}

TEST(ResumeLog, TornLastLineIsReportedAndCut) {
  const std::string whole = Line(1) + "\n" + Line(2) + "\n";
  const std::string torn = Line(3).substr(0, 57);
  const std::string path = WriteFile("torn.log", whole + torn);
  absl::StatusOr<ResumeLog> log = LoadResumeLog(path, /*repair=*/true);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->torn_tail);
  EXPECT_EQ(log->records, 2);
  EXPECT_EQ(log->bad_lines, 0);
  EXPECT_EQ(log->Measured(KeyOf(Line(1))), (absl::flat_hash_set<int64_t>{1, 2}));
  EXPECT_EQ(log->repaired_bytes, 57);
  EXPECT_EQ(ReadFile(path), whole);  // appends now start on a clean line
  // Appending afterwards gives a valid log.
  ASSERT_TRUE(autotvm::AppendLineToLog(path, Line(3)).ok());
  autotvm::LogContents contents;
  ASSERT_TRUE(autotvm::LoadLogFile(path, {.strict = true}, &contents).ok());
  EXPECT_EQ(contents.records.size(), 3u);
}

TEST(ResumeLog, TornLineWithoutRepairLeavesTheFile) {
  const std::string text = Line(1) + "\n" + Line(3).substr(0, 20);
  const std::string path = WriteFile("torn_norepair.log", text);
  absl::StatusOr<ResumeLog> log = LoadResumeLog(path, /*repair=*/false);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->torn_tail);
  EXPECT_EQ(log->records, 1);
  EXPECT_EQ(ReadFile(path), text);
}

TEST(ResumeLog, WholeRecordMissingOnlyItsNewlineIsKept) {
  const std::string text = Line(1) + "\n" + Line(2);
  const std::string path = WriteFile("nonewline.log", text);
  absl::StatusOr<ResumeLog> log = LoadResumeLog(path, /*repair=*/true);
  ASSERT_TRUE(log.ok());
  EXPECT_FALSE(log->torn_tail);
  EXPECT_EQ(log->records, 2);
  EXPECT_EQ(ReadFile(path), text + "\n");
}

TEST(ResumeLog, MissingFileIsEmpty) {
  absl::StatusOr<ResumeLog> log = LoadResumeLog(::testing::TempDir() + "/does_not_exist.log", true);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->records, 0);
}

TEST(ResumeLog, OnlyATornLine) {
  absl::StatusOr<ResumeLog> log = ParseResumeLog("{\"input\": [", "x");
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->torn_tail);
  EXPECT_EQ(log->records, 0);
}

// Appends `count` records tagged (writer, i) to `path`.
void AppendMany(const std::string& path, int writer, int count) {
  for (int i = 0; i < count; ++i) {
    // Long lines (several KiB) make interleaving likely if appends were not single writes.
    const int64_t index = int64_t{writer} * 100000 + i;
    ASSERT_TRUE(autotvm::AppendLineToLog(path, Line(index, 64 + (i % 7) * 1000)).ok());
  }
}

TEST(LogAppend, ConcurrentThreadsAndProcessesWriteWholeLines) {
  const std::string path = WriteFile("concurrent.log", "");
  std::remove(path.c_str());
  constexpr int kPerWriter = 150, kProcesses = 3, kThreads = 4;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      AppendMany(path, 100 + p, kPerWriter);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    children.push_back(pid);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(AppendMany, path, t, kPerWriter);
  for (std::thread& t : threads) t.join();
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  absl::StatusOr<ResumeLog> log = ParseResumeLog(text, path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->bad_lines, 0);
  EXPECT_FALSE(log->torn_tail);
  EXPECT_EQ(log->records, (kProcesses + kThreads) * kPerWriter);
  EXPECT_EQ(log->duplicates, 0);
}

}  // namespace
}  // namespace tunejit

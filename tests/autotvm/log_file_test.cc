// Loading real logs (seed + TopHub), byte-exact round trip, bad-line reporting, appending.
#include "autotvm/log_file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/test_data.h"

namespace tunejit::autotvm {
namespace {

using ::tunejit::testing::RepoData;
using ::tunejit::testing::RepoTestData;
using ::tunejit::testing::SharedData;

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string TempPath(const std::string& name) {
  std::string dir = ::testing::TempDir();
  return absl::StrCat(dir, "/", name, ".", ::getpid());
}

TEST(LogFileTest, SeedLogLoadsAllRecords) {
  LogContents log;
  ASSERT_TRUE(LoadLogFile(RepoData("seed-vgg16-v100.log"), {}, &log).ok());
  EXPECT_EQ(log.records.size(), 22u);
  EXPECT_TRUE(log.errors.empty());
  EXPECT_EQ(log.records[0].line, 1);
  EXPECT_EQ(log.records[0].record.workload.task_name, "dense_large_batch.cuda");
  EXPECT_EQ(log.Summary(), "22 records from 1 file");
}

// Every line of the seed log and of all ten TopHub files comes back byte for byte, in its own
// format (0.1 for v0.01-v0.07, 0.2 after).
TEST(LogFileTest, RoundTripIsByteExactForSeedAndTopHub) {
  std::vector<std::string> files = {RepoData("seed-vgg16-v100.log")};
  for (int v = 1; v <= 10; ++v) {
    std::string p = SharedData(absl::StrCat("tophub/cuda_v0.", v < 10 ? "0" : "", v, ".log"));
    if (p.empty()) GTEST_SKIP() << "shared TopHub data absent";
    files.push_back(p);
  }
  size_t total = 0, tophub = 0, v01 = 0;
  for (const std::string& file : files) {
    LogContents log;
    absl::Status status = LoadLogFile(file, {.strict = true}, &log);
    ASSERT_TRUE(status.ok()) << status;
    std::vector<std::string> lines = ReadLines(file);
    ASSERT_EQ(log.records.size() + log.comment_lines + log.blank_lines, lines.size()) << file;
    for (const LoadedRecord& r : log.records) {
      ASSERT_EQ(SerializeRecord(r.record), lines[r.line - 1]) << file << ":" << r.line;
      if (r.record.format == RecordFormat::kV01) ++v01;
    }
    total += log.records.size();
    if (file.find("tophub") != std::string::npos) tophub += log.records.size();
  }
  EXPECT_EQ(tophub, 5939u);
  EXPECT_EQ(total, 5961u);
  EXPECT_EQ(v01, 3738u);  // cuda_v0.01 .. v0.07
}

TEST(LogFileTest, BadLinesAreReportedWithFileLineAndReasonAndTheRestLoads) {
  std::vector<std::string> seed = ReadLines(RepoData("seed-vgg16-v100.log"));
  std::string text = absl::StrCat("# comment\n", seed[0], "\n\n", seed[1].substr(0, 80), "\n",
                                  "{\"input\": 1}\n", seed[2], "\n");
  LogContents log;
  ASSERT_TRUE(LoadLogText(text, "mixed.log", {}, &log).ok());
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.records[0].line, 2);
  EXPECT_EQ(log.records[1].line, 6);
  ASSERT_EQ(log.errors.size(), 2u);
  EXPECT_EQ(log.errors[0].line, 4);
  EXPECT_NE(log.errors[0].ToString().find("mixed.log:4: invalid JSON"), std::string::npos)
      << log.errors[0].ToString();
  EXPECT_EQ(log.errors[1].line, 5);
  EXPECT_EQ(log.comment_lines, 1);
  EXPECT_EQ(log.blank_lines, 1);
  EXPECT_NE(log.Summary().find("2 records from 1 file; skipped 2 bad lines (1 invalid JSON"),
            std::string::npos)
      << log.Summary();

  LogContents strict;
  absl::Status s = LoadLogText(text, "mixed.log", {.strict = true}, &strict);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mixed.log:4:"), std::string::npos) << s;
}

TEST(LogFileTest, BadLinesFileFromTestData) {
  LogContents log;
  ASSERT_TRUE(LoadLogFile(RepoTestData("autotvm/bad_lines.log"), {}, &log).ok());
  EXPECT_EQ(log.records.size(), 2u);  // the first and the last line are valid
  EXPECT_GE(log.errors.size(), 10u);
  for (const LogLineError& e : log.errors) EXPECT_FALSE(e.reason.empty()) << e.line;
}

TEST(LogFileTest, MissingFileIsNotFound) {
  LogContents log;
  EXPECT_EQ(LoadLogFile("/nonexistent/x.log", {}, &log).code(), absl::StatusCode::kNotFound);
}

TEST(LogFileTest, AppendWritesWholeLinesAndRecoversFromAHalfLine) {
  std::vector<std::string> seed = ReadLines(RepoData("seed-vgg16-v100.log"));
  std::string path = TempPath("append.log");
  std::filesystem::remove(path);
  {
    std::ofstream half(path);
    half << seed[0] << "\n" << seed[1].substr(0, 50);  // a writer died mid-line
  }
  absl::StatusOr<Record> r = ParseRecordLine(seed[2]);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(AppendRecordToLog(path, *r).ok());
  std::vector<std::string> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], seed[2]);
  LogContents log;
  ASSERT_TRUE(LoadLogFile(path, {}, &log).ok());
  EXPECT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.errors.size(), 1u);
  EXPECT_FALSE(AppendLineToLog(path, "a\nb").ok());
  std::filesystem::remove(path);
}

TEST(LogFileTest, ConcurrentAppendersNeverInterleave) {
  std::vector<std::string> seed = ReadLines(RepoData("seed-vgg16-v100.log"));
  std::string path = TempPath("concurrent.log");
  std::filesystem::remove(path);
  constexpr int kProcs = 4, kLines = 200;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < kLines; ++i) {
        if (!AppendLineToLog(path, seed[(p * 5 + i) % seed.size()]).ok()) _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  LogContents log;
  ASSERT_TRUE(LoadLogFile(path, {}, &log).ok());
  EXPECT_EQ(log.records.size(), static_cast<size_t>(kProcs * kLines));
  EXPECT_TRUE(log.errors.empty());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tunejit::autotvm

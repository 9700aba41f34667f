// `tunejit tune` end to end without a GPU: the real binary with tests/tuner/fake_worker.cc as its
// worker ($TUNEJIT_TUNE_WORKER). The fake crashes / hangs on some indices, so the run also shows
// that faults end as records; then a torn line is appended (as a kill mid-write would leave) and
// --resume continues the log without repeating an index.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "autotvm/log_file.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunTune(const std::string& args) {
  const std::string cmd =
      absl::StrCat("TUNEJIT_TUNE_WORKER=", TUNEJIT_FAKE_WORKER, " ", TUNEJIT_BINARY_DIR,
                   "/tunejit tune --model vgg16 --tasks classifier.0 --search random",
                   " --timeout 1 --trial-batch 4 ", args);
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// (workload key, index) -> count, and how many records have each error number.
struct Summary {
  std::map<std::pair<std::string, int64_t>, int> seen;
  std::map<int, int> errors;
  int records = 0;
};

Summary Summarize(const std::string& log) {
  autotvm::LogContents contents;
  EXPECT_TRUE(autotvm::LoadLogFile(log, {.strict = true}, &contents).ok());
  Summary s;
  for (const autotvm::LoadedRecord& r : contents.records) {
    ++s.seen[{r.record.workload.Key(), r.record.index}];
    ++s.errors[r.record.result.error_no];
    ++s.records;
    EXPECT_EQ(r.record.gpu, 0);
  }
  return s;
}

// The fault-injection flags exist for the test suite: they parse, but --help does not list them.
TEST(TuneCommand, HelpHidesTheTestOnlyFlags) {
  const std::string out = absl::StrCat(::testing::TempDir(), "/", getpid(), "_tune_help.txt");
  const std::string cmd = absl::StrCat(TUNEJIT_BINARY_DIR, "/tunejit tune --help > ", out);
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string help = Slurp(out);
  EXPECT_NE(help.find("--budget"), std::string::npos) << help;
  EXPECT_EQ(help.find("test-fault-trial"), std::string::npos) << help;
  EXPECT_EQ(help.find("test-hang-trial"), std::string::npos) << help;
}

TEST(TuneCommand, TunesResumesAndDrawsTheCurve) {
  const std::string log = absl::StrCat(::testing::TempDir(), "/", getpid(), "_tune_command.log");
  std::remove(log.c_str());
  ASSERT_EQ(RunTune("--trials 20 --log " + log), 0);
  Summary first = Summarize(log);
  EXPECT_EQ(first.records, 20);
  EXPECT_EQ(first.seen.size(), 20u);
  EXPECT_GT(first.errors[0], 0);
  const std::string svg = Slurp(log + ".svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("dense_small_batch.cuda"), std::string::npos);

  // Without --resume an existing log is refused (it would be measured again).
  EXPECT_EQ(RunTune("--trials 20 --log " + log), 2);

  { std::ofstream(log, std::ios::app) << R"({"input": ["cuda", "dense_sm)"; }
  // The space holds 30 configs, 23 of which the template accepts under the fake GPU's limits;
  // the search proposes only those, so asking for 28 stops when the valid ones run out.
  ASSERT_EQ(RunTune("--trials 28 --resume --log " + log), 0);
  Summary second = Summarize(log);  // strict: the torn line is gone
  EXPECT_EQ(second.records, 23);
  for (const auto& [key, n] : second.seen) EXPECT_EQ(n, 1) << key.first << " " << key.second;
}

TEST(TuneCommand, BadUsage) {
  EXPECT_EQ(RunTune("--log /dev/null"), 2);                   // no budget
  EXPECT_EQ(RunTune("--trials 5"), 2);                        // no log
  EXPECT_EQ(RunTune("--trials 5 --shard 2/2 --log x"), 2);    // bad shard
  EXPECT_EQ(RunTune("--budget 5q --log x"), 2);               // bad duration
  EXPECT_EQ(RunTune("--trials 5 --search sa --log x"), 2);    // unknown search
  EXPECT_EQ(RunTune("--trials 5 --sustained 0 --log x"), 2);  // sustained timing of nothing
  EXPECT_EQ(RunTune("--trials 5 --sustained 1q --log x"), 2);
  // The worker takes the sustained time it is given, and refuses a bad one.
  const std::string worker = absl::StrCat(TUNEJIT_BINARY_DIR, "/tunejit tune-worker");
  EXPECT_EQ(WEXITSTATUS(std::system((worker + " --sustained 1q < /dev/null").c_str())), 2);
}

TEST(TuneCommand, TunesWithSustainedTiming) {
  const std::string log = absl::StrCat(::testing::TempDir(), "/", getpid(), "_sustained.log");
  std::remove(log.c_str());
  ASSERT_EQ(RunTune("--trials 4 --sustained 0.05s --log " + log), 0);
  EXPECT_EQ(Summarize(log).records, 4);
}

}  // namespace
}  // namespace tunejit

// `tunejit cache stats|verify|clear`: output, exit codes and usage errors.
#include <filesystem>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "cache_test_util.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_cache::ListNames;
using testing_cache::ReadFileBytes;
using testing_cache::TempDir;
using testing_cache::TestEntry;
using testing_cache::TestInputs;
using testing_cache::WriteFileBytes;

struct Result {
  int code = -1;
  std::string out, err;
};

Result RunCli(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Result result;
  result.code = cli::RunCacheCommand(args);
  result.out = ::testing::internal::GetCapturedStdout();
  result.err = ::testing::internal::GetCapturedStderr();
  return result;
}

class CacheCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CacheOptions options;
    options.dir = dir_.path();
    KernelCache cache = *KernelCache::Open(options);
    for (int i = 0; i < 2; ++i) {
      CacheKey key = ComputeCacheKey(TestInputs(i));
      ASSERT_TRUE(cache.Store(key, TestEntry(i, 1 << 20)).ok());  // 1 MiB of cubin each
      paths_.push_back(dir_.path() + "/" + key.FileName());
      bytes_ += static_cast<int64_t>(std::filesystem::file_size(paths_.back()));
    }
  }
  TempDir dir_;
  std::vector<std::string> paths_;
  int64_t bytes_ = 0;
};

TEST_F(CacheCliTest, StatsPrintsDirectoryEntriesSizeAndCap) {
  Result r = RunCli({"stats", "--cache-dir", dir_.path()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("directory: " + dir_.path() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("entries:   2\n"));
  EXPECT_THAT(r.out, HasSubstr("size:      2.00 MiB (" + std::to_string(bytes_) + " bytes)"));
  EXPECT_THAT(r.out, HasSubstr("cap:       2048.00 MiB"));
}

TEST_F(CacheCliTest, StatsOfAMissingDirectoryDoesNotCreateIt) {
  std::string missing = dir_.path() + "/missing";
  Result r = RunCli({"stats", "--cache-dir=" + missing});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("(does not exist)"));
  EXPECT_THAT(r.out, HasSubstr("entries:   0\n"));
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST_F(CacheCliTest, VerifyReportsInvalidEntriesAndRemovesThemOnRequest) {
  Result ok = RunCli({"verify", "--cache-dir", dir_.path()});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("valid:     2\n"));
  EXPECT_THAT(ok.out, HasSubstr("invalid:   0\n"));

  std::string bytes = ReadFileBytes(paths_[1]);
  WriteFileBytes(paths_[1], bytes.substr(0, bytes.size() / 2));
  Result bad = RunCli({"verify", "--cache-dir", dir_.path()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.out, HasSubstr("valid:     1\n"));
  EXPECT_THAT(bad.out, HasSubstr("invalid:   1\n"));
  EXPECT_THAT(bad.out, HasSubstr(paths_[1] + ": truncated"));
  EXPECT_TRUE(std::filesystem::exists(paths_[1]));

  Result removed = RunCli({"verify", "--remove-invalid", "--cache-dir", dir_.path()});
  EXPECT_EQ(removed.code, 1);  // invalid entries were found (and removed)
  EXPECT_THAT(removed.out, HasSubstr("invalid:   1 (removed)"));
  EXPECT_FALSE(std::filesystem::exists(paths_[1]));
  EXPECT_TRUE(std::filesystem::exists(paths_[0]));
  EXPECT_EQ(RunCli({"verify", "--cache-dir", dir_.path()}).code, 0);
}

TEST_F(CacheCliTest, ClearRemovesEveryEntry) {
  WriteFileBytes(dir_.path() + "/notes.txt", "not ours");
  Result r = RunCli({"clear", "--cache-dir", dir_.path()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("removed 2 entries (2.00 MiB) from " + dir_.path()));
  EXPECT_THAT(ListNames(dir_.path()), ::testing::ElementsAre("notes.txt"));
  EXPECT_THAT(RunCli({"stats", "--cache-dir", dir_.path()}).out, HasSubstr("entries:   0\n"));
}

TEST_F(CacheCliTest, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(RunCli({}).code, 2);
  Result unknown = RunCli({"frobnicate"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'frobnicate'"));
  EXPECT_EQ(RunCli({"stats", "--bogus"}).code, 2);
  EXPECT_EQ(RunCli({"stats", "extra", "--cache-dir", dir_.path()}).code, 2);
  EXPECT_EQ(RunCli({"stats", "--remove-invalid", "--cache-dir", dir_.path()}).code, 2);
  EXPECT_EQ(RunCli({"verify", "--cache-dir"}).code, 2);

  Result help = RunCli({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("stats|verify|clear"));
  for (const char* command : {"stats", "verify", "clear"}) {
    Result sub = RunCli({command, "--help"});
    EXPECT_EQ(sub.code, 0) << command;
    EXPECT_THAT(sub.out, HasSubstr(std::string("usage: tunejit cache ") + command)) << command;
    EXPECT_THAT(sub.out, HasSubstr("--cache-dir DIR")) << command;
  }
  EXPECT_THAT(RunCli({"verify", "--help"}).out, HasSubstr("--remove-invalid"));
  EXPECT_THAT(RunCli({"stats", "--help"}).out, Not(HasSubstr("--remove-invalid")));
  // Nothing was touched by any of this.
  EXPECT_EQ(ListNames(dir_.path()).size(), 2u);
}

}  // namespace
}  // namespace tunejit

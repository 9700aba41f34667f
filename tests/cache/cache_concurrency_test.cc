// Many processes on one cache directory, and a writer killed mid-write: no reader ever sees a
// partial or wrong entry, nothing is left half-written, and eviction races are harmless.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/kernel_cache.h"
#include "cache_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using testing_cache::ListNames;
using testing_cache::ReadFileBytes;
using testing_cache::SameEntry;
using testing_cache::TempDir;
using testing_cache::TestEntry;
using testing_cache::TestInputs;

constexpr int kProcesses = 16;
constexpr int kKeys = 12;
constexpr int kRounds = 60;

CacheOptions OptionsFor(const std::string& dir, int64_t max_bytes = int64_t{1} << 30) {
  CacheOptions options;
  options.dir = dir;
  options.max_bytes = max_bytes;
  return options;
}

size_t EntrySize(int key) { return 20000 + static_cast<size_t>(key) * 15013; }

// One child: looks up the keys in a random order; a miss stores the entry and, now and then, a
// hit stores it again, so renames race with reads. Reports through its exit code (0 = every hit
// had the exact bytes) and a stats file "hits misses".
int ChildMain(const std::string& dir, int64_t max_bytes, int child, const std::string& stats_path) {
  absl::StatusOr<KernelCache> cache = KernelCache::Open(OptionsFor(dir, max_bytes));
  if (!cache.ok() || !cache->enabled()) return 3;
  std::vector<CacheKey> keys;
  std::vector<CacheEntry> entries;
  for (int k = 0; k < kKeys; ++k) {
    keys.push_back(ComputeCacheKey(TestInputs(k)));
    entries.push_back(TestEntry(k, EntrySize(k)));
  }
  std::mt19937 rng(1234 + child);
  int hits = 0, misses = 0, wrong = 0, store_errors = 0;
  for (int round = 0; round < kRounds; ++round) {
    int k = static_cast<int>(rng() % kKeys);
    std::optional<CacheEntry> hit = cache->Lookup(keys[k]);
    if (hit.has_value()) {
      ++hits;
      if (!SameEntry(*hit, entries[k])) ++wrong;
    } else {
      ++misses;
    }
    if (!hit.has_value() || rng() % 3 == 0) {
      if (!cache->Store(keys[k], entries[k]).ok()) ++store_errors;
    }
  }
  if (FILE* out = std::fopen(stats_path.c_str(), "w")) {
    std::fprintf(out, "%d %d\n", hits, misses);
    std::fclose(out);
  }
  return wrong > 0 ? 1 : (store_errors > 0 ? 2 : 0);
}

struct RunResult {
  int hits = 0;
  int misses = 0;
  double seconds = 0;
};

// Forks kProcesses children on `dir`, each with stderr redirected to a file under `logs`; expects
// every child to exit 0 with an empty stderr (no reader ever saw a damaged entry).
RunResult RunChildren(const std::string& dir, const std::string& logs, int64_t max_bytes) {
  auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> children;
  for (int child = 0; child < kProcesses; ++child) {
    std::string prefix = logs + "/child" + std::to_string(child);
    pid_t pid = ::fork();
    if (pid == 0) {
      int err = ::open((prefix + ".stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) ::_exit(4);
      ::_exit(ChildMain(dir, max_bytes, child, prefix + ".stats"));
    }
    EXPECT_GT(pid, 0) << "fork failed";
    if (pid > 0) children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << pid << " status " << status
        << " (exit 1: a hit returned wrong bytes, 2: Store failed, 3: Open failed)";
  }
  RunResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int child = 0; child < kProcesses; ++child) {
    std::string prefix = logs + "/child" + std::to_string(child);
    EXPECT_EQ(ReadFileBytes(prefix + ".stderr"), "") << "child " << child;
    int hits = 0, misses = 0;
    EXPECT_EQ(std::sscanf(ReadFileBytes(prefix + ".stats").c_str(), "%d %d", &hits, &misses), 2);
    EXPECT_EQ(hits + misses, kRounds);
    result.hits += hits;
    result.misses += misses;
  }
  return result;
}

void ExpectNoTmpFiles(const std::string& dir) {
  for (const std::string& name : ListNames(dir)) {
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
  }
}

TEST(CacheConcurrencyTest, SixteenProcessesShareOneDirectory) {
  TempDir dir, logs;
  RunResult run = RunChildren(dir.path(), logs.path(), int64_t{1} << 30);
  std::printf("[ timing ] %d processes x %d rounds: %.3f s, %d hits, %d misses\n", kProcesses,
              kRounds, run.seconds, run.hits, run.misses);
  EXPECT_GT(run.hits, 0);  // the processes really shared entries

  KernelCache cache = *KernelCache::Open(OptionsFor(dir.path()));
  absl::StatusOr<VerifyReport> report = cache.Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->invalid.empty());
  // The children's seeds are fixed and 960 picks cover all twelve keys, so all were stored.
  EXPECT_EQ(report->valid, kKeys);
  ExpectNoTmpFiles(dir.path());
  EXPECT_EQ(ListNames(dir.path()).size(), static_cast<size_t>(kKeys));
  for (int k = 0; k < kKeys; ++k) {
    std::optional<CacheEntry> hit = cache.Lookup(ComputeCacheKey(TestInputs(k)));
    ASSERT_TRUE(hit.has_value()) << k;
    EXPECT_TRUE(SameEntry(*hit, TestEntry(k, EntrySize(k)))) << k;
  }
}

TEST(CacheConcurrencyTest, ConcurrentEvictionIsHarmless) {
  TempDir dir, logs;
  // Room for about three of the twelve entries: every Store evicts while others read and write.
  const int64_t cap = static_cast<int64_t>(EntrySize(kKeys - 1)) * 3;
  RunResult run = RunChildren(dir.path(), logs.path(), cap);
  std::printf("[ timing ] %d processes x %d rounds with eviction: %.3f s, %d hits, %d misses\n",
              kProcesses, kRounds, run.seconds, run.hits, run.misses);

  KernelCache cache = *KernelCache::Open(OptionsFor(dir.path(), cap));
  absl::StatusOr<VerifyReport> report = cache.Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->invalid.empty());
  EXPECT_GE(report->valid, 1);
  ExpectNoTmpFiles(dir.path());
  absl::StatusOr<CacheStats> stats = cache.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_LE(stats->bytes, cap);
}

// Waits up to 20 s for a temporary file of this key holding at least `bytes` bytes.
bool WaitForTmpFile(const std::string& dir, const CacheKey& key, uintmax_t bytes) {
  for (int i = 0; i < 2000; ++i) {
    for (const std::string& name : ListNames(dir)) {
      if (name.rfind(key.FileName() + ".tmp.", 0) == 0 &&
          std::filesystem::file_size(dir + "/" + name) >= bytes) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Forks a child that stores `entry` under `key` but stops after `pause_after` bytes of its
// temporary file; SIGKILLs it there.
void KillWriterMidWrite(const std::string& dir, const CacheKey& key, const CacheEntry& entry,
                        int pause_after) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("TUNEJIT_CACHE_TEST_PAUSE_AFTER_BYTES", std::to_string(pause_after).c_str(), 1);
    absl::StatusOr<KernelCache> cache = KernelCache::Open(OptionsFor(dir));
    if (cache.ok()) cache->Store(key, entry).IgnoreError();
    ::_exit(0);
  }
  bool paused = WaitForTmpFile(dir, key, pause_after);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(paused) << "the writer never reached the pause point";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(CacheConcurrencyTest, WriterKilledMidWriteLeavesNothingServed) {
  TempDir dir;
  CacheKey key = ComputeCacheKey(TestInputs(1));
  ASSERT_NO_FATAL_FAILURE(KillWriterMidWrite(dir.path(), key, TestEntry(1, 100000), 5000));

  KernelCache cache = *KernelCache::Open(OptionsFor(dir.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.Lookup(key).has_value());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // no entry at all, not a damaged one
  absl::StatusOr<VerifyReport> report = cache.Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 0);
  EXPECT_TRUE(report->invalid.empty());  // tmp files are not entries
  EXPECT_EQ(cache.Stats()->entries, 0);

  // The orphaned tmp file survives until it is an hour old, then EvictToCap removes it.
  std::vector<std::string> names = ListNames(dir.path());
  ASSERT_EQ(names.size(), 1u);
  std::string tmp = dir.path() + "/" + names[0];
  EXPECT_EQ(ReadFileBytes(tmp).size(), 5000u);
  struct timespec old[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, tmp.c_str(), old, 0), 0);
  ASSERT_TRUE(cache.EvictToCap().ok());
  EXPECT_TRUE(ListNames(dir.path()).empty());

  // A later Store works normally.
  ASSERT_TRUE(cache.Store(key, TestEntry(1, 100000)).ok());
  EXPECT_TRUE(cache.Lookup(key).has_value());
}

TEST(CacheConcurrencyTest, WriterKilledMidReplaceKeepsTheOldEntry) {
  TempDir dir;
  CacheKey key = ComputeCacheKey(TestInputs(2));
  KernelCache cache = *KernelCache::Open(OptionsFor(dir.path()));
  ASSERT_TRUE(cache.Store(key, TestEntry(2, 1000)).ok());
  ASSERT_NO_FATAL_FAILURE(KillWriterMidWrite(dir.path(), key, TestEntry(3, 100000), 60000));
  std::optional<CacheEntry> hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(SameEntry(*hit, TestEntry(2, 1000)));
  absl::StatusOr<VerifyReport> report = cache.Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 1);
  EXPECT_TRUE(report->invalid.empty());
}

}  // namespace
}  // namespace tunejit

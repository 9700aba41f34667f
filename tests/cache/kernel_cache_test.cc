// KernelCache behaviour on a healthy directory: round trip, disabling, degrading, location, LRU
// eviction, stats/verify/clear.
#include "cache/kernel_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "cache_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using testing_cache::ListNames;
using testing_cache::ReadFileBytes;
using testing_cache::SameEntry;
using testing_cache::TempDir;
using testing_cache::TestEntry;
using testing_cache::TestInputs;
using testing_cache::WriteFileBytes;

KernelCache OpenAt(const std::string& dir, int64_t max_bytes = int64_t{1} << 30) {
  CacheOptions options;
  options.dir = dir;
  options.max_bytes = max_bytes;
  absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return *std::move(cache);
}

void SetMtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

time_t Mtime(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mtime;
}

TEST(KernelCacheTest, StoreThenLookupReturnsTheSameBytes) {
  TempDir tmp;
  KernelCache cache = OpenAt(tmp.path() + "/nested/cache");  // Open creates missing parents
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(cache.dir(), tmp.path() + "/nested/cache");
  CacheKey key = ComputeCacheKey(TestInputs(1));
  EXPECT_FALSE(cache.Lookup(key).has_value());

  CacheEntry entry = TestEntry(1, 5000);
  entry.lowered_names["k<99>"] = "";  // an empty value survives too
  ASSERT_TRUE(cache.Store(key, entry).ok());
  std::optional<CacheEntry> hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(SameEntry(*hit, entry));
  EXPECT_THAT(ListNames(cache.dir()), ::testing::ElementsAre(key.FileName()));

  // Another key is a miss; a second cache object on the same directory sees the entry.
  EXPECT_FALSE(cache.Lookup(ComputeCacheKey(TestInputs(2))).has_value());
  std::optional<CacheEntry> again = OpenAt(cache.dir()).Lookup(key);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(SameEntry(*again, entry));
}

TEST(KernelCacheTest, StoreReplacesAnExistingEntry) {
  TempDir tmp;
  KernelCache cache = OpenAt(tmp.path());
  CacheKey key = ComputeCacheKey(TestInputs(1));
  ASSERT_TRUE(cache.Store(key, TestEntry(1, 100)).ok());
  ASSERT_TRUE(cache.Store(key, TestEntry(2, 300)).ok());
  std::optional<CacheEntry> hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(SameEntry(*hit, TestEntry(2, 300)));
  EXPECT_EQ(ListNames(tmp.path()).size(), 1u);  // no tmp file left behind
}

TEST(KernelCacheTest, EmptyEntryRoundTrips) {
  TempDir tmp;
  KernelCache cache = OpenAt(tmp.path());
  CacheKey key = ComputeCacheKey(TestInputs(0));
  ASSERT_TRUE(cache.Store(key, CacheEntry{}).ok());
  std::optional<CacheEntry> hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(SameEntry(*hit, CacheEntry{}));
}

TEST(KernelCacheTest, DisabledCacheNeverHitsAndNeverWrites) {
  TempDir tmp;
  CacheOptions options;
  options.dir = tmp.path() + "/c";
  options.disabled = true;
  absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE(cache->enabled());
  CacheKey key = ComputeCacheKey(TestInputs(1));
  EXPECT_TRUE(cache->Store(key, TestEntry(1, 10)).ok());
  EXPECT_FALSE(cache->Lookup(key).has_value());
  EXPECT_FALSE(std::filesystem::exists(options.dir));  // not even created

  // An entry put there by an enabled cache is still not served by the disabled one.
  KernelCache enabled = OpenAt(options.dir);
  ASSERT_TRUE(enabled.Store(key, TestEntry(1, 10)).ok());
  EXPECT_FALSE(cache->Lookup(key).has_value());
}

TEST(KernelCacheTest, UnwritableDirectoryDegradesWithOneWarning) {
  TempDir tmp;
  // A path below a regular file can never be created, even as root.
  WriteFileBytes(tmp.path() + "/file", "x");
  CacheOptions options;
  options.dir = tmp.path() + "/file/cache";
  ::testing::internal::CaptureStderr();
  absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
  CacheKey key = ComputeCacheKey(TestInputs(1));
  bool stored = cache.ok() && cache->Store(key, TestEntry(1, 10)).ok();
  bool hit = cache.ok() && cache->Lookup(key).has_value();
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_FALSE(cache->enabled());
  EXPECT_TRUE(stored);  // a no-op, not an error
  EXPECT_FALSE(hit);
  EXPECT_THAT(err, HasSubstr("tunejit: warning: kernel cache directory " + options.dir +
                             " is not writable ("));
  EXPECT_THAT(err, HasSubstr("continuing without a cache"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(KernelCacheTest, DirectoryThatIsAFileDegrades) {
  TempDir tmp;
  WriteFileBytes(tmp.path() + "/file", "x");
  CacheOptions options;
  options.dir = tmp.path() + "/file";
  ::testing::internal::CaptureStderr();
  absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE(cache->enabled());
  EXPECT_THAT(err, HasSubstr("is not writable"));
  EXPECT_EQ(ReadFileBytes(options.dir), "x");  // untouched
}

// Sets or clears environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ResolveCacheDirTest, FollowsTheDocumentedOrder) {
  ScopedEnv dir("TUNEJIT_CACHE_DIR", "/env/cache");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(ResolveCacheDir("/explicit"), "/explicit");
  EXPECT_EQ(ResolveCacheDir(""), "/env/cache");
  {
    ScopedEnv no_dir("TUNEJIT_CACHE_DIR", nullptr);
    EXPECT_EQ(ResolveCacheDir(""), "/xdg/tunejit");
    ScopedEnv empty_xdg("XDG_CACHE_HOME", "");  // empty counts as unset (XDG spec)
    EXPECT_EQ(ResolveCacheDir(""), "/home/u/.cache/tunejit");
  }
}

TEST(ResolveCacheDirTest, OpenUsesTheEnvironment) {
  TempDir tmp;
  ScopedEnv dir("TUNEJIT_CACHE_DIR", (tmp.path() + "/from_env").c_str());
  absl::StatusOr<KernelCache> cache = KernelCache::Open(CacheOptions{});
  ASSERT_TRUE(cache.ok());
  EXPECT_TRUE(cache->enabled());
  EXPECT_EQ(cache->dir(), tmp.path() + "/from_env");
  EXPECT_TRUE(std::filesystem::is_directory(tmp.path() + "/from_env"));
  // The writability probe leaves nothing behind.
  EXPECT_TRUE(ListNames(tmp.path() + "/from_env").empty());
}

TEST(KernelCacheTest, LruEvictionKeepsTheMostRecentlyUsedEntries) {
  TempDir tmp;
  constexpr size_t kPayload = 10000;
  KernelCache unlimited = OpenAt(tmp.path());
  std::vector<CacheKey> keys;
  for (int i = 0; i < 4; ++i) {
    keys.push_back(ComputeCacheKey(TestInputs(i)));
    ASSERT_TRUE(unlimited.Store(keys[i], TestEntry(i, kPayload)).ok());
  }
  const int64_t entry_bytes =
      static_cast<int64_t>(std::filesystem::file_size(tmp.path() + "/" + keys[0].FileName()));
  // Distinct, old mtimes: entry i was last used at base + i.
  const time_t base = ::time(nullptr) - 1000;
  for (int i = 0; i < 4; ++i) SetMtime(tmp.path() + "/" + keys[i].FileName(), base + i);

  // Using entry 0 makes it the most recent one (a hit touches the mtime).
  ASSERT_TRUE(unlimited.Lookup(keys[0]).has_value());
  EXPECT_GE(Mtime(tmp.path() + "/" + keys[0].FileName()), base + 900);

  // Room for three entries: storing a fifth evicts the two least recently used (1 and 2).
  KernelCache capped = OpenAt(tmp.path(), 3 * entry_bytes + entry_bytes / 2);
  CacheKey fifth = ComputeCacheKey(TestInputs(4));
  ASSERT_TRUE(capped.Store(fifth, TestEntry(4, kPayload)).ok());
  EXPECT_TRUE(capped.Lookup(keys[0]).has_value());
  EXPECT_FALSE(capped.Lookup(keys[1]).has_value());
  EXPECT_FALSE(capped.Lookup(keys[2]).has_value());
  EXPECT_TRUE(capped.Lookup(keys[3]).has_value());
  EXPECT_TRUE(capped.Lookup(fifth).has_value());
  absl::StatusOr<CacheStats> stats = capped.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->entries, 3);
  EXPECT_LE(stats->bytes, stats->max_bytes);
}

TEST(KernelCacheTest, StaleTmpFilesAreRemovedAndFreshOnesKept) {
  TempDir tmp;
  KernelCache cache = OpenAt(tmp.path());
  CacheKey key = ComputeCacheKey(TestInputs(1));
  std::string stale = tmp.path() + "/" + key.FileName() + ".tmp.123.abc";
  std::string fresh = tmp.path() + "/" + key.FileName() + ".tmp.456.def";
  std::string other = tmp.path() + "/notes.txt";
  WriteFileBytes(stale, "partial");
  WriteFileBytes(fresh, "partial");
  WriteFileBytes(other, "keep me");
  SetMtime(stale, ::time(nullptr) - 2 * 3600);
  ASSERT_TRUE(cache.EvictToCap().ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(other));

  SetMtime(fresh, ::time(nullptr) - 2 * 3600);
  ASSERT_TRUE(cache.Store(key, TestEntry(1, 10)).ok());  // Store runs EvictToCap
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(other));
}

TEST(KernelCacheTest, StatsVerifyAndClear) {
  TempDir tmp;
  KernelCache cache = OpenAt(tmp.path(), 123456789);
  int64_t expected_bytes = 0;
  for (int i = 0; i < 3; ++i) {
    CacheKey key = ComputeCacheKey(TestInputs(i));
    ASSERT_TRUE(cache.Store(key, TestEntry(i, 1000 * (i + 1))).ok());
    expected_bytes += std::filesystem::file_size(tmp.path() + "/" + key.FileName());
  }
  WriteFileBytes(tmp.path() + "/README", "not an entry");
  WriteFileBytes(tmp.path() + "/x.tjk.tmp.1.2", "in-progress write, not an entry");

  absl::StatusOr<CacheStats> stats = cache.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->dir, tmp.path());
  EXPECT_EQ(stats->entries, 3);
  EXPECT_EQ(stats->bytes, expected_bytes);
  EXPECT_EQ(stats->max_bytes, 123456789);

  absl::StatusOr<VerifyReport> report = cache.Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 3);
  EXPECT_TRUE(report->invalid.empty());

  ASSERT_TRUE(cache.Clear().ok());
  stats = cache.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->entries, 0);
  EXPECT_EQ(stats->bytes, 0);
  // Clear removes entries only: a fresh tmp file may belong to a live writer.
  EXPECT_THAT(ListNames(tmp.path()), ::testing::ElementsAre("README", "x.tjk.tmp.1.2"));
  EXPECT_FALSE(cache.Lookup(ComputeCacheKey(TestInputs(0))).has_value());
}

TEST(KernelCacheTest, StatsOfAMissingDirectoryIsEmpty) {
  TempDir tmp;
  CacheOptions options;
  options.dir = tmp.path() + "/never";
  options.disabled = true;
  KernelCache cache = *KernelCache::Open(options);
  absl::StatusOr<CacheStats> stats = cache.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->entries, 0);
  absl::StatusOr<VerifyReport> report = cache.Verify(true);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 0);
  EXPECT_TRUE(cache.Clear().ok());
}

}  // namespace
}  // namespace tunejit

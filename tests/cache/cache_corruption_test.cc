// Damaged entries: each kind of damage is a miss with exactly one warning naming the file and the
// reason, never a crash or a wrong kernel; Store then replaces the file and the next Lookup hits.
#include <string>
#include <vector>

#include "cache/entry_format.h"
#include "cache/kernel_cache.h"
#include "cache_test_util.h"
#include "common/digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using testing_cache::ReadFileBytes;
using testing_cache::SameEntry;
using testing_cache::TempDir;
using testing_cache::TestEntry;
using testing_cache::TestInputs;
using testing_cache::WriteFileBytes;

class CacheCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CacheOptions options;
    options.dir = dir_.path();
    cache_.emplace(*KernelCache::Open(options));
    ASSERT_TRUE(cache_->enabled());
    key_ = ComputeCacheKey(TestInputs(7));
    entry_ = TestEntry(7, 3000);
    path_ = dir_.path() + "/" + key_.FileName();
    ASSERT_TRUE(cache_->Store(key_, entry_).ok());
    valid_bytes_ = ReadFileBytes(path_);
    ASSERT_GT(valid_bytes_.size(), 3000u);
  }

  // Writes `bytes` as this key's entry and checks: a miss, one warning line naming the file and
  // containing `reason`, Verify flags it, then Store repairs it and the next Lookup hits.
  void ExpectMissThenRepair(const std::string& bytes, const std::string& reason,
                            const std::string& label) {
    SCOPED_TRACE(label);
    WriteFileBytes(path_, bytes);
    ::testing::internal::CaptureStderr();
    std::optional<CacheEntry> hit = cache_->Lookup(key_);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(hit.has_value());
    EXPECT_THAT(err, HasSubstr("tunejit: warning: cache entry " + path_ + " is "));
    EXPECT_THAT(err, HasSubstr(reason));
    EXPECT_THAT(err, HasSubstr("; recompiling"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

    absl::StatusOr<VerifyReport> report = cache_->Verify(false);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->valid, 0);
    ASSERT_EQ(report->invalid.size(), 1u);
    EXPECT_EQ(report->invalid[0].first, path_);

    ASSERT_TRUE(cache_->Store(key_, entry_).ok());
    ::testing::internal::CaptureStderr();
    hit = cache_->Lookup(key_);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    ASSERT_TRUE(hit.has_value());
    EXPECT_TRUE(SameEntry(*hit, entry_));
  }

  std::string Flipped(size_t offset) const {
    std::string bytes = valid_bytes_;
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
    return bytes;
  }

  TempDir dir_;
  std::optional<KernelCache> cache_;
  CacheKey key_;
  CacheEntry entry_;
  std::string path_;
  std::string valid_bytes_;
};

TEST_F(CacheCorruptionTest, TruncatedAtEveryEighth) {
  for (int eighth = 0; eighth < 8; ++eighth) {
    size_t size = valid_bytes_.size() * eighth / 8;
    ExpectMissThenRepair(valid_bytes_.substr(0, size), "truncated",
                         "truncated to " + std::to_string(size));
  }
  ExpectMissThenRepair(valid_bytes_.substr(0, valid_bytes_.size() - 1), "truncated", "minus one");
}

TEST_F(CacheCorruptionTest, ExtraTrailingBytes) {
  ExpectMissThenRepair(valid_bytes_ + "junk", "corrupt", "padded");
}

TEST_F(CacheCorruptionTest, FlippedByteInHeader) {
  ExpectMissThenRepair(Flipped(0), "bad magic", "magic");
  ExpectMissThenRepair(Flipped(5), "format version", "version");
  ExpectMissThenRepair(Flipped(17), "", "cubin length");  // truncated or corrupt: any reason
  ExpectMissThenRepair(Flipped(45), "checksum mismatch", "canonical key");
}

TEST_F(CacheCorruptionTest, FlippedByteInPayload) {
  const size_t payload = cache_internal::kEntryHeaderBytes + key_.canonical.size();
  ExpectMissThenRepair(Flipped(payload), "checksum mismatch", "first cubin byte");
  ExpectMissThenRepair(Flipped(payload + 2999), "checksum mismatch", "last cubin byte");
  ExpectMissThenRepair(Flipped(valid_bytes_.size() - 33), "checksum mismatch", "lowered names");
}

TEST_F(CacheCorruptionTest, FlippedByteInChecksum) {
  ExpectMissThenRepair(Flipped(valid_bytes_.size() - 32), "checksum mismatch", "checksum first");
  ExpectMissThenRepair(Flipped(valid_bytes_.size() - 1), "checksum mismatch", "checksum last");
}

TEST_F(CacheCorruptionTest, ForeignFileWithAValidName) {
  ExpectMissThenRepair("#!/bin/sh\necho this is not a cache entry\n" + std::string(200, 'z'),
                       "bad magic", "shell script");
  ExpectMissThenRepair(std::string(4096, '\0'), "bad magic", "zeros");
  ExpectMissThenRepair("TJKC", "truncated", "magic only");
}

TEST_F(CacheCorruptionTest, WrongFormatVersion) {
  // A well-formed entry (valid checksum) written by a future format version.
  std::string future = cache_internal::AssembleEntry(
      key_.canonical, entry_.cubin, entry_.ptx,
      cache_internal::EncodeLoweredNames(entry_.lowered_names), kCacheFormatVersion + 1);
  ExpectMissThenRepair(future, "format version", "version + 1");
}

TEST_F(CacheCorruptionTest, ValidEntryOfAnotherKeyIsNeverServed) {
  CacheKey other = ComputeCacheKey(TestInputs(8));
  ASSERT_TRUE(cache_->Store(other, TestEntry(8, 3000)).ok());
  std::string other_bytes = ReadFileBytes(dir_.path() + "/" + other.FileName());
  ASSERT_TRUE(cache_->Clear().ok());
  ExpectMissThenRepair(other_bytes, "for another key", "copied entry");
}

TEST_F(CacheCorruptionTest, CorruptLoweredNameTableWithValidChecksum) {
  std::string bad_table = cache_internal::EncodeLoweredNames(entry_.lowered_names);
  bad_table[0] = 5;  // claims five pairs, holds one
  ExpectMissThenRepair(
      cache_internal::AssembleEntry(key_.canonical, entry_.cubin, entry_.ptx, bad_table),
      "lowered-name table", "count");
}

TEST_F(CacheCorruptionTest, LoweredNameTableMustBeCanonical) {
  using tunejit::AppendBytes;
  using tunejit::AppendU64;
  auto entry_with_table = [&](const std::string& table) {
    return cache_internal::AssembleEntry(key_.canonical, entry_.cubin, entry_.ptx, table);
  };
  std::string unsorted, duplicate, trailing = cache_internal::EncodeLoweredNames({{"a", "b"}});
  AppendU64(&unsorted, 2);
  for (const char* name : {"k<2>", "k<1>"}) {
    AppendBytes(&unsorted, name);
    AppendBytes(&unsorted, "x");
  }
  AppendU64(&duplicate, 2);
  for (int i = 0; i < 2; ++i) {
    AppendBytes(&duplicate, "k<1>");
    AppendBytes(&duplicate, "x");
  }
  trailing += "!";
  ExpectMissThenRepair(entry_with_table(unsorted), "lowered-name table", "unsorted");
  ExpectMissThenRepair(entry_with_table(duplicate), "lowered-name table", "duplicate");
  ExpectMissThenRepair(entry_with_table(trailing), "lowered-name table", "trailing byte");
  ExpectMissThenRepair(entry_with_table(""), "lowered-name table", "empty table");
}

TEST_F(CacheCorruptionTest, DirectoryInPlaceOfAnEntry) {
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::mkdir(path_.c_str(), 0755), 0);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache_->Lookup(key_).has_value());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("cache entry " + path_));
  // Store cannot rename a file over a directory: an error to report, not a crash.
  EXPECT_FALSE(cache_->Store(key_, entry_).ok());
  EXPECT_EQ(testing_cache::ListNames(dir_.path()).size(), 1u);  // its tmp file was removed
}

TEST_F(CacheCorruptionTest, VerifyRemovesInvalidAndMisnamedEntries) {
  CacheKey other = ComputeCacheKey(TestInputs(8));
  ASSERT_TRUE(cache_->Store(other, TestEntry(8, 100)).ok());
  // A valid entry under a name whose digest is not its key's: Lookup would reject it by key, and
  // Verify catches it by the name.
  std::string misnamed = dir_.path() + "/x-" + std::string(64, 'a') + ".tjk";
  WriteFileBytes(misnamed, ReadFileBytes(dir_.path() + "/" + other.FileName()));
  std::string no_digest = dir_.path() + "/plain.tjk";
  WriteFileBytes(no_digest, valid_bytes_);
  WriteFileBytes(path_, Flipped(100));

  absl::StatusOr<VerifyReport> report = cache_->Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 1);  // `other`
  ASSERT_EQ(report->invalid.size(), 3u);
  std::vector<std::string> files;
  for (const auto& [file, reason] : report->invalid) files.push_back(file);
  EXPECT_THAT(files, ::testing::UnorderedElementsAre(path_, misnamed, no_digest));
  for (const auto& [file, reason] : report->invalid) {
    EXPECT_THAT(reason, file == path_ ? HasSubstr("checksum") : HasSubstr("misnamed")) << file;
  }

  report = cache_->Verify(true);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->invalid.size(), 3u);
  report = cache_->Verify(false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->valid, 1);
  EXPECT_TRUE(report->invalid.empty());
  EXPECT_TRUE(cache_->Lookup(other).has_value());
}

}  // namespace
}  // namespace tunejit

#include "cache/kernel_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/entry_format.h"
#include "common/digest.h"
#include "common/file_io.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

using cache_internal::ParseEntry;

constexpr absl::string_view kEntrySuffix = ".tjk";
constexpr absl::string_view kTmpMarker = ".tjk.tmp.";
// A temporary file this old belongs to a writer that died (a live Store renames within seconds).
constexpr int64_t kStaleTmpSeconds = 3600;

// One line, one write(2): lines from concurrent processes never interleave mid-line.
void Warn(const std::string& message) {
  std::string line = absl::StrCat("tunejit: warning: ", message, "\n");
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

std::string ErrnoText(int error) { return std::strerror(error); }

bool IsEntryName(absl::string_view name) {
  return name.size() > kEntrySuffix.size() && absl::EndsWith(name, kEntrySuffix);
}

bool IsTmpName(absl::string_view name) { return absl::StrContains(name, kTmpMarker); }

struct DirFile {
  std::string name;
  int64_t bytes = 0;
  struct timespec mtime {};
};

// Regular files in `dir`. NotFound when the directory does not exist. Files that vanish while we
// look (a concurrent eviction or rename) are simply skipped.
absl::StatusOr<std::vector<DirFile>> ListDir(const std::string& dir) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    int error = errno;
    std::string message = absl::StrCat("cannot list ", dir, ": ", ErrnoText(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
  }
  std::vector<DirFile> files;
  while (const struct dirent* item = ::readdir(handle)) {
    struct stat info {};
    if (::fstatat(::dirfd(handle), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(info.st_mode)) continue;
    files.push_back({item->d_name, static_cast<int64_t>(info.st_size), info.st_mtim});
  }
  ::closedir(handle);
  return files;
}

// Test-only hook (see tests/cache): TUNEJIT_CACHE_TEST_PAUSE_AFTER_BYTES=N makes Store stop for up
// to 60 s after writing N bytes of its temporary file, so a test can SIGKILL it mid-write.
int64_t TestPauseAfterBytes() {
  const char* value = std::getenv("TUNEJIT_CACHE_TEST_PAUSE_AFTER_BYTES");
  return value == nullptr ? -1 : std::strtoll(value, nullptr, 10);
}

// Checks that files can be created in `dir` (creating it if needed). Returns the reason if not.
std::optional<std::string> WhyNotWritable(const std::string& dir) {
  if (dir.empty()) return "no directory: set TUNEJIT_CACHE_DIR, XDG_CACHE_HOME or HOME";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return error.message();
  std::string probe = absl::StrCat(dir, "/.tunejit-probe.", ::getpid(), ".", RandomHex());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoText(errno);
  bool wrote = ::write(fd, "x", 1) == 1;
  int write_errno = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) return ErrnoText(write_errno);
  return std::nullopt;
}

// The digest a well-formed entry name carries: "<readable>-<64 hex>.tjk".
std::optional<std::string> DigestFromFileName(absl::string_view name) {
  constexpr size_t kHexLength = 64;
  if (!IsEntryName(name) || name.size() < kHexLength + 1 + kEntrySuffix.size()) return std::nullopt;
  absl::string_view digest =
      name.substr(name.size() - kEntrySuffix.size() - kHexLength, kHexLength);
  size_t dash = name.size() - kEntrySuffix.size() - kHexLength - 1;
  if (name[dash] != '-') return std::nullopt;
  for (char c : digest) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return std::string(digest);
}

bool OlderThan(const struct timespec& mtime, int64_t seconds) {
  return ::time(nullptr) - mtime.tv_sec > seconds;
}

// unlink() that treats "already gone" as success: several processes may evict or clear at once.
absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("remove ", path, ": ", ErrnoText(errno)));
}

}  // namespace

KernelCache::KernelCache(std::string dir, bool enabled, int64_t max_bytes)
    : dir_(std::move(dir)), enabled_(enabled), max_bytes_(max_bytes) {}

absl::StatusOr<KernelCache> KernelCache::Open(const CacheOptions& options) {
  std::string dir = ResolveCacheDir(options.dir);
  if (options.disabled) return KernelCache(dir, false, options.max_bytes);
  if (std::optional<std::string> why = WhyNotWritable(dir)) {
    Warn(absl::StrCat("kernel cache directory ", dir.empty() ? "(none)" : dir, " is not writable (",
                      *why, "); continuing without a cache"));
    return KernelCache(dir, false, options.max_bytes);
  }
  return KernelCache(dir, true, options.max_bytes);
}

bool KernelCache::enabled() const { return enabled_; }

const std::string& KernelCache::dir() const { return dir_; }

std::optional<CacheEntry> KernelCache::Lookup(const CacheKey& key) const {
  if (!enabled_) return std::nullopt;
  const std::string path = absl::StrCat(dir_, "/", key.FileName());
  absl::StatusOr<std::string> bytes = ReadFileBytes(path, cache_internal::kMaxEntryBytes);
  if (absl::IsNotFound(bytes.status())) return std::nullopt;
  auto miss = [&](absl::string_view reason) {
    Warn(absl::StrCat("cache entry ", path, " is ", reason, "; recompiling"));
    return std::nullopt;
  };
  if (!bytes.ok()) return miss(bytes.status().message());
  absl::StatusOr<cache_internal::ParsedEntry> parsed = ParseEntry(*bytes);
  if (!parsed.ok()) return miss(parsed.status().message());
  if (parsed->canonical_key != key.canonical) {
    return miss("for another key (stored key differs from the requested one)");
  }
  // Touch for LRU eviction. Failure (e.g. a read-only shared cache) only weakens the LRU order.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return std::move(parsed->entry);
}

absl::Status KernelCache::Store(const CacheKey& key, const CacheEntry& entry) {
  if (!enabled_) return absl::OkStatus();
  const std::string path = absl::StrCat(dir_, "/", key.FileName());
  TUNEJIT_RETURN_IF_ERROR(WriteFileAtomically(path,
                                              cache_internal::EncodeEntry(key.canonical, entry),
                                              AtomicWriteOptions{TestPauseAfterBytes()}));
  // The entry is in place; a failed eviction only leaves the cache over its cap until next time.
  EvictToCap().IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<CacheStats> KernelCache::Stats() const {
  CacheStats stats;
  stats.dir = dir_;
  stats.max_bytes = max_bytes_;
  if (dir_.empty()) return stats;
  absl::StatusOr<std::vector<DirFile>> files = ListDir(dir_);
  if (absl::IsNotFound(files.status())) return stats;
  TUNEJIT_RETURN_IF_ERROR(files.status());
  for (const DirFile& file : *files) {
    if (!IsEntryName(file.name)) continue;
    ++stats.entries;
    stats.bytes += file.bytes;
  }
  return stats;
}

absl::StatusOr<VerifyReport> KernelCache::Verify(bool remove_invalid) const {
  VerifyReport report;
  if (dir_.empty()) return report;
  absl::StatusOr<std::vector<DirFile>> files = ListDir(dir_);
  if (absl::IsNotFound(files.status())) return report;
  TUNEJIT_RETURN_IF_ERROR(files.status());
  for (const DirFile& file : *files) {
    if (!IsEntryName(file.name)) continue;  // temporary files are not entries
    const std::string path = absl::StrCat(dir_, "/", file.name);
    absl::StatusOr<std::string> bytes = ReadFileBytes(path, cache_internal::kMaxEntryBytes);
    if (absl::IsNotFound(bytes.status())) continue;  // evicted while we looked
    std::string reason;
    if (!bytes.ok()) {
      reason = std::string(bytes.status().message());
    } else if (absl::StatusOr<cache_internal::ParsedEntry> parsed = ParseEntry(*bytes);
               !parsed.ok()) {
      reason = std::string(parsed.status().message());
    } else if (DigestFromFileName(file.name) != Sha256Hex(parsed->canonical_key)) {
      reason = "misnamed (the file name's digest is not the SHA-256 of the stored key)";
    }
    if (reason.empty()) {
      ++report.valid;
      continue;
    }
    if (remove_invalid) TUNEJIT_RETURN_IF_ERROR(RemoveFile(path));
    report.invalid.emplace_back(path, std::move(reason));
  }
  std::sort(report.invalid.begin(), report.invalid.end());
  return report;
}

absl::Status KernelCache::Clear() {
  if (dir_.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<DirFile>> files = ListDir(dir_);
  if (absl::IsNotFound(files.status())) return absl::OkStatus();
  TUNEJIT_RETURN_IF_ERROR(files.status());
  absl::Status result = absl::OkStatus();
  for (const DirFile& file : *files) {
    // A fresh temporary file belongs to a Store in progress in another process: leave it.
    bool stale_tmp = IsTmpName(file.name) && OlderThan(file.mtime, kStaleTmpSeconds);
    if (!IsEntryName(file.name) && !stale_tmp) continue;
    result.Update(RemoveFile(absl::StrCat(dir_, "/", file.name)));
  }
  return result;
}

absl::Status KernelCache::EvictToCap() {
  if (!enabled_) return absl::OkStatus();
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<DirFile> files, ListDir(dir_));
  std::vector<DirFile> entries;
  int64_t total = 0;
  absl::Status result = absl::OkStatus();
  for (DirFile& file : files) {
    if (IsTmpName(file.name) && OlderThan(file.mtime, kStaleTmpSeconds)) {
      result.Update(RemoveFile(absl::StrCat(dir_, "/", file.name)));
    } else if (IsEntryName(file.name)) {
      total += file.bytes;
      entries.push_back(std::move(file));
    }
  }
  if (total <= max_bytes_) return result;
  // Least recently used first: a hit touches the mtime.
  std::sort(entries.begin(), entries.end(), [](const DirFile& a, const DirFile& b) {
    return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec, a.name) <
           std::tie(b.mtime.tv_sec, b.mtime.tv_nsec, b.name);
  });
  for (const DirFile& entry : entries) {
    if (total <= max_bytes_) break;
    absl::Status removed = RemoveFile(absl::StrCat(dir_, "/", entry.name));
    if (removed.ok()) total -= entry.bytes;
    result.Update(removed);
  }
  return result;
}

}  // namespace tunejit

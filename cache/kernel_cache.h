// File: cache/kernel_cache.h
// On-disk cache of compiled kernels: one file per compiled program. Knows nothing about CUDA: it
// stores bytes under a key that the caller derives from everything that changes the binary.
//
// Guarantees:
//  - Key: SHA-256 over a canonical, length-prefixed encoding of CacheKeyInputs (full source, every
//    header's name and text, name expressions, every option, architecture, NVRTC version, output
//    kind) plus kCacheFormatVersion. File name: readable fields first, hash last, e.g.
//    "dense_small_batch-sm_90-nvrtc13000-<sha256>.tjk".
//  - Writes are atomic: "<final>.tmp.<pid>.<random>" in the same directory, fsync, rename. Readers
//    never lock. Safe for many threads and processes at once.
//  - Each entry carries a header (magic, format version, full key, sizes) and a SHA-256 of its
//    payload. A truncated, corrupt, foreign or version-mismatched file is a miss: the caller gets
//    nullopt plus a warning, recompiles, and Store replaces the file. Never a crash, never a wrong
//    kernel: the stored key must equal the requested key byte for byte.
//  - Location: explicit dir, else $TUNEJIT_CACHE_DIR, else $XDG_CACHE_HOME/tunejit, else
//    ~/.cache/tunejit. An unusable directory degrades to no caching with one warning.
//  - Size cap with least-recently-used eviction (a hit touches the file's mtime).
//
//   TUNEJIT_ASSIGN_OR_RETURN(KernelCache cache, KernelCache::Open(CacheOptions{}));
//   CacheKey key = ComputeCacheKey(inputs);
//   if (std::optional<CacheEntry> hit = cache.Lookup(key)) { ... } else { cache.Store(key, entry); }
#ifndef TUNEJIT_CACHE_KERNEL_CACHE_H_
#define TUNEJIT_CACHE_KERNEL_CACHE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunejit {

// Bump when the key encoding or the entry layout changes: old entries then become misses.
inline constexpr int kCacheFormatVersion = 1;

struct CacheKeyInputs {
  std::string source_name;
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
  std::string arch;        // "sm_90a"
  int nvrtc_version = 0;   // NvrtcVersion()
  std::string output_kind = "cubin";
};

struct CacheKey {
  std::string readable;  // e.g. "dense_small_batch-sm_90-nvrtc13000"
  std::string digest;    // 64 hex chars
  std::string canonical; // the full encoded key material, stored in the entry and compared on read
  std::string FileName() const;  // readable + "-" + digest + ".tjk"
};

CacheKey ComputeCacheKey(const CacheKeyInputs& inputs);

struct CacheEntry {
  std::string cubin;
  std::string ptx;
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled name
};

struct CacheOptions {
  std::string dir;            // empty: resolve from the environment as described above
  bool disabled = false;      // --no-cache
  int64_t max_bytes = int64_t{2} << 30;  // LRU cap
};

struct CacheStats {
  std::string dir;
  int64_t entries = 0;
  int64_t bytes = 0;
  int64_t max_bytes = 0;
};

struct VerifyReport {
  int64_t valid = 0;
  std::vector<std::pair<std::string, std::string>> invalid;  // (file, reason)
};

class KernelCache {
 public:
  static absl::StatusOr<KernelCache> Open(const CacheOptions& options);

  bool enabled() const;
  const std::string& dir() const;

  // nullopt on a miss, including for a damaged entry (then a warning is logged).
  std::optional<CacheEntry> Lookup(const CacheKey& key) const;
  // Atomic replace. Errors degrade (the caller keeps its compiled result); returned for reporting.
  absl::Status Store(const CacheKey& key, const CacheEntry& entry);

  absl::StatusOr<CacheStats> Stats() const;
  absl::StatusOr<VerifyReport> Verify(bool remove_invalid) const;
  absl::Status Clear();
  absl::Status EvictToCap();  // also called by Store

 private:
  KernelCache(std::string dir, bool enabled, int64_t max_bytes);
  std::string dir_;
  bool enabled_ = false;
  int64_t max_bytes_ = 0;
};

// Resolution order for the cache directory, exposed for tests and `tunejit cache stats`.
std::string ResolveCacheDir(const std::string& explicit_dir);

}  // namespace tunejit

#endif  // TUNEJIT_CACHE_KERNEL_CACHE_H_

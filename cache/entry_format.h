// File: cache/entry_format.h
// Byte-level pieces of the kernel cache, shared by kernel_cache.cc, the tests and the fuzz target:
// the canonical key encoding and the entry file layout (SHA-256 and the length-prefixed encoders
// are common/digest.h). Pure functions on bytes: no I/O.
//
//   std::string bytes = EncodeEntry(key.canonical, entry);
//   absl::StatusOr<ParsedEntry> parsed = ParseEntry(bytes);  // checks magic, version, checksum
//   if (parsed.ok() && parsed->canonical_key == key.canonical) { ... a hit ... }
#ifndef TUNEJIT_CACHE_ENTRY_FORMAT_H_
#define TUNEJIT_CACHE_ENTRY_FORMAT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cache/kernel_cache.h"

namespace tunejit::cache_internal {

// Entry file layout (all integers little-endian). Bump kCacheFormatVersion when this changes.
//
//   offset       size  field
//   0            4     magic "TJKC"
//   4            4     u32 format version (kCacheFormatVersion)
//   8            8     u64 K = canonical key length
//   16           8     u64 C = cubin length
//   24           8     u64 P = ptx length
//   32           8     u64 L = lowered-name table length
//   40           K     canonical key (CacheKey::canonical), compared byte for byte on lookup
//   40+K         C     cubin
//   40+K+C       P     ptx
//   40+K+C+P     L     lowered-name table: u64 count, then per pair u64 len + name expression,
//                      u64 len + lowered (mangled) name, sorted by name expression
//   40+K+C+P+L   32    SHA-256 of every byte before it
//
// The file size must be exactly 40 + K + C + P + L + 32: anything else is truncated or padded.
inline constexpr absl::string_view kEntryMagic = "TJKC";
inline constexpr size_t kEntryHeaderBytes = 40;
// Files larger than this are rejected without reading them (a stray file, not one of ours).
inline constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 31;

// The canonical key material for `inputs` (what ComputeCacheKey hashes).
std::string EncodeCanonicalKey(const CacheKeyInputs& inputs);

// Header + sections + checksum, with the lowered-name table given as already-encoded bytes (the
// fuzz target uses this to reach the table parser with a valid checksum). `version` is a parameter
// so tests can build a well-formed entry of another format version.
std::string AssembleEntry(absl::string_view canonical_key, absl::string_view cubin,
                          absl::string_view ptx, absl::string_view lowered_table,
                          uint32_t version = kCacheFormatVersion);
std::string EncodeLoweredNames(const std::map<std::string, std::string>& lowered_names);
std::string EncodeEntry(absl::string_view canonical_key, const CacheEntry& entry);

struct ParsedEntry {
  std::string canonical_key;
  CacheEntry entry;
};

// Validates everything that can be validated without the requested key. Errors are DataLoss with a
// short reason suitable for "cache entry <file> is <reason>", e.g. "corrupt (checksum mismatch)".
absl::StatusOr<ParsedEntry> ParseEntry(absl::string_view bytes);

}  // namespace tunejit::cache_internal

#endif  // TUNEJIT_CACHE_ENTRY_FORMAT_H_

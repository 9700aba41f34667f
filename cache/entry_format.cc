#include "cache/entry_format.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/digest.h"
#include "common/status_macros.h"

namespace tunejit::cache_internal {
namespace {

absl::Status Damaged(absl::string_view reason) { return absl::DataLossError(reason); }

// Bounds-checked little-endian reader over untrusted bytes: every read reports failure instead of
// running past the end, so no length field in a damaged file can cause an out-of-range access.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  bool ReadU64(uint64_t* value) {
    if (bytes_.size() - pos_ < 8) return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes_[pos_ + i]);
    pos_ += 8;
    *value = v;
    return true;
  }
  bool ReadBytes(std::string* out) {
    uint64_t length = 0;
    if (!ReadU64(&length) || length > bytes_.size() - pos_) return false;
    out->assign(bytes_.data() + pos_, length);
    pos_ += length;
    return true;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
};

uint64_t LoadU64(absl::string_view bytes, size_t offset) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return v;
}

uint32_t LoadU32(absl::string_view bytes, size_t offset) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return v;
}

absl::StatusOr<std::map<std::string, std::string>> ParseLoweredNames(absl::string_view table) {
  Reader reader(table);
  uint64_t count = 0;
  // Each pair takes at least 16 bytes, which bounds `count` before anything is allocated.
  if (!reader.ReadU64(&count) || count > table.size() / 16) {
    return Damaged("corrupt (bad lowered-name table)");
  }
  std::map<std::string, std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    std::string expression, lowered;
    // Strictly increasing names, as EncodeLoweredNames writes them: every accepted table has one
    // encoding, so a valid entry re-encodes to exactly the bytes it was read from.
    if (!reader.ReadBytes(&expression) || !reader.ReadBytes(&lowered) ||
        (!names.empty() && expression <= names.rbegin()->first)) {
      return Damaged("corrupt (bad lowered-name table)");
    }
    names.emplace_hint(names.end(), std::move(expression), std::move(lowered));
  }
  if (!reader.AtEnd()) return Damaged("corrupt (bad lowered-name table)");
  return names;
}

}  // namespace

// Canonical key: a domain tag, the format version, then every CacheKeyInputs field in declaration
// order. Strings are length-prefixed and lists count-prefixed, so field boundaries are unambiguous
// (options {"ab","c"} and {"a","bc"} encode differently). Bump kCacheFormatVersion when this
// changes.
std::string EncodeCanonicalKey(const CacheKeyInputs& inputs) {
  std::string out;
  AppendBytes(&out, "tunejit-kernel-cache-key");
  AppendU32(&out, static_cast<uint32_t>(kCacheFormatVersion));
  AppendBytes(&out, inputs.source_name);
  AppendBytes(&out, inputs.source);
  AppendU64(&out, inputs.headers.size());
  for (const auto& [name, text] : inputs.headers) {
    AppendBytes(&out, name);
    AppendBytes(&out, text);
  }
  AppendU64(&out, inputs.name_expressions.size());
  for (const std::string& expression : inputs.name_expressions) AppendBytes(&out, expression);
  AppendU64(&out, inputs.options.size());
  for (const std::string& option : inputs.options) AppendBytes(&out, option);
  AppendBytes(&out, inputs.arch);
  AppendU64(&out, static_cast<uint64_t>(static_cast<int64_t>(inputs.nvrtc_version)));
  AppendBytes(&out, inputs.output_kind);
  return out;
}

std::string EncodeLoweredNames(const std::map<std::string, std::string>& lowered_names) {
  std::string table;
  AppendU64(&table, lowered_names.size());
  for (const auto& [expression, lowered] : lowered_names) {
    AppendBytes(&table, expression);
    AppendBytes(&table, lowered);
  }
  return table;
}

std::string AssembleEntry(absl::string_view canonical_key, absl::string_view cubin,
                          absl::string_view ptx, absl::string_view lowered_table,
                          uint32_t version) {
  std::string out;
  out.reserve(kEntryHeaderBytes + canonical_key.size() + cubin.size() + ptx.size() +
              lowered_table.size() + kSha256Bytes);
  out.append(kEntryMagic.data(), kEntryMagic.size());
  AppendU32(&out, version);
  AppendU64(&out, canonical_key.size());
  AppendU64(&out, cubin.size());
  AppendU64(&out, ptx.size());
  AppendU64(&out, lowered_table.size());
  absl::StrAppend(&out, canonical_key, cubin, ptx, lowered_table);
  out.append(Sha256(out));
  return out;
}

std::string EncodeEntry(absl::string_view canonical_key, const CacheEntry& entry) {
  return AssembleEntry(canonical_key, entry.cubin, entry.ptx,
                       EncodeLoweredNames(entry.lowered_names));
}

absl::StatusOr<ParsedEntry> ParseEntry(absl::string_view bytes) {
  if (bytes.size() >= kEntryMagic.size() && bytes.substr(0, kEntryMagic.size()) != kEntryMagic) {
    return Damaged("not a tunejit cache entry (bad magic)");
  }
  if (bytes.size() < kEntryHeaderBytes + kSha256Bytes) {
    return Damaged(absl::StrCat("truncated (", bytes.size(), " bytes)"));
  }
  if (uint32_t version = LoadU32(bytes, 4); version != kCacheFormatVersion) {
    return Damaged(absl::StrCat("from another cache format version (", version, ", expected ",
                                kCacheFormatVersion, ")"));
  }
  // Sum the section lengths with an overflow guard: each is checked against the file size first.
  uint64_t expected = kEntryHeaderBytes + kSha256Bytes;
  for (size_t offset = 8; offset < kEntryHeaderBytes; offset += 8) {
    uint64_t length = LoadU64(bytes, offset);
    if (length > bytes.size()) return Damaged("truncated (a section is longer than the file)");
    expected += length;
  }
  if (expected != bytes.size()) {
    return Damaged(absl::StrCat(expected > bytes.size() ? "truncated" : "corrupt", " (",
                                bytes.size(), " bytes, header says ", expected, ")"));
  }
  const size_t body = bytes.size() - kSha256Bytes;
  if (Sha256(bytes.substr(0, body)) != bytes.substr(body)) {
    return Damaged("corrupt (checksum mismatch)");
  }
  ParsedEntry parsed;
  size_t offset = kEntryHeaderBytes;
  auto take = [&](size_t header_offset) {
    absl::string_view section = bytes.substr(offset, LoadU64(bytes, header_offset));
    offset += section.size();
    return section;
  };
  parsed.canonical_key = std::string(take(8));
  parsed.entry.cubin = std::string(take(16));
  parsed.entry.ptx = std::string(take(24));
  TUNEJIT_ASSIGN_OR_RETURN(parsed.entry.lowered_names, ParseLoweredNames(take(32)));
  return parsed;
}

}  // namespace tunejit::cache_internal

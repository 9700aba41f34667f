// File: common/digest.h
// SHA-256 (OpenSSL EVP) and the little-endian, length-prefixed encoding fed to it: the kernel
// cache's keys and entries, the build plan's checksum and the model fingerprints use these, so
// no two different field lists encode to the same bytes.
//
//   std::string key;
//   AppendBytes(&key, source_name);  AppendU64(&key, headers.size());  ...
//   std::string digest = Sha256Hex(key);  // 64 lowercase hex characters
#ifndef TUNEJIT_COMMON_DIGEST_H_
#define TUNEJIT_COMMON_DIGEST_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tunejit {

inline constexpr size_t kSha256Bytes = 32;

// Raw 32-byte SHA-256 and its lowercase hex form. An OpenSSL failure (allocation inside it) gives
// all zero bytes, which never matches a stored digest: callers see a mismatch, never a crash.
std::string Sha256(absl::string_view bytes);
std::string Sha256Hex(absl::string_view bytes);
std::string ToHex(absl::string_view bytes);

void AppendU32(std::string* out, uint32_t value);
void AppendU64(std::string* out, uint64_t value);
void AppendBytes(std::string* out, absl::string_view bytes);  // u64 length + bytes

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_DIGEST_H_

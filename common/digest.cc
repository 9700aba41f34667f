#include "common/digest.h"

#include <openssl/evp.h>

#include <array>

namespace tunejit {

std::string Sha256(absl::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    length = kSha256Bytes;
    digest.fill(0);
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

std::string ToHex(absl::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 15]);
  }
  return hex;
}

std::string Sha256Hex(absl::string_view bytes) { return ToHex(Sha256(bytes)); }

void AppendU32(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendU64(std::string* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendBytes(std::string* out, absl::string_view bytes) {
  AppendU64(out, bytes.size());
  out->append(bytes.data(), bytes.size());
}

}  // namespace tunejit

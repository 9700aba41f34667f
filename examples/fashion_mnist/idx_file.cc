#include "examples/fashion_mnist/idx_file.h"

#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tunejit {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;

absl::Status Bad(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", why));
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

absl::StatusOr<IdxArray> ParseIdx(absl::Span<const uint8_t> bytes, absl::string_view name) {
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    return Bad(name, "gzip-compressed (gunzip it first)");
  }
  if (bytes.size() < 4) return Bad(name, "too short for the IDX magic");
  if (bytes[0] != 0 || bytes[1] != 0) return Bad(name, "not an IDX file (bad magic)");
  if (bytes[2] != kUnsignedByte) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: element type 0x%02x (only unsigned bytes, 0x08, are read)", name, bytes[2]));
  }
  const int rank = bytes[3];
  if (rank < 1 || rank > kMaxIdxRank) {
    return Bad(name, absl::StrCat("rank ", rank, " (1 to ", kMaxIdxRank, " are read)"));
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) return Bad(name, "truncated dimensions");
  IdxArray out;
  uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const uint32_t dim = BigEndian32(bytes.data() + 4 + 4 * d);
    if (dim == 0) return Bad(name, absl::StrCat("dimension ", d, " is 0"));
    if (dim > bytes.size() / count) {  // before multiplying: four 32-bit dims overflow 64 bits
      return Bad(name,
                 absl::StrCat("dimensions need more than the file's ", bytes.size(), " bytes"));
    }
    count *= dim;
    out.dims.push_back(dim);
  }
  const size_t body = bytes.size() - header;
  if (body != count) {
    return Bad(name,
               absl::StrCat("the dimensions give ", count, " bytes of data, the file has ", body));
  }
  out.values.assign(bytes.begin() + header, bytes.end());
  return out;
}

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  return ParseIdx(bytes, path);
}

}  // namespace tunejit

#include "cli/raw_floats.h"

#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tunejit::cli {

namespace {

// x86-64 and every CUDA host are little-endian, so the bytes are the values.
template <typename T>
absl::StatusOr<std::vector<T>> ReadRaw(const std::string& path, const char* type) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ec ? ": " + ec.message() : ""));
  }
  if (size % sizeof(T) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes is not a whole number of ", type, " values"));
  }
  std::vector<T> values(size / sizeof(T));
  if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(size))) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return values;
}

}  // namespace

absl::StatusOr<std::vector<float>> ReadFloats(const std::string& path) {
  return ReadRaw<float>(path, "float32");
}

absl::StatusOr<std::vector<int64_t>> ReadInt64s(const std::string& path) {
  return ReadRaw<int64_t>(path, "int64");
}

absl::Status WriteFloats(const std::string& path, absl::Span<const float> values) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace tunejit::cli

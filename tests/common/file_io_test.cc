// common/file_io.h's MappedFile: a file's bytes as they are on disk, and each failure as a status
// naming the path.
#include "common/file_io.h"

#include <filesystem>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (name + "." + RandomHex())).string();
}

TEST(MappedFile, MapsTheWholeFileAndOutlivesAMove) {
  const std::string path = TempPath("mapped");
  const std::string text("ONNX\0bytes", 10);
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  MappedFile moved = *std::move(file);
  ASSERT_EQ(moved.bytes().size(), text.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(moved.bytes().data()), text.size()), text);
  std::filesystem::remove(path);
}

TEST(MappedFile, EmptyFileHasNoBytes) {
  const std::string path = TempPath("empty");
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->bytes().empty());
  std::filesystem::remove(path);
}

TEST(MappedFile, FailuresNameThePath) {
  const std::string missing = TempPath("missing");
  absl::StatusOr<MappedFile> file = MappedFile::Open(missing);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find(missing), std::string::npos) << file.status();
  file = MappedFile::Open(::testing::TempDir());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(file.status().message().find("not a regular file"), std::string::npos) << file.status();
}

}  // namespace
}  // namespace tunejit

// The IDX reader (examples/fashion_mnist/idx_file.h) on hand-made files, every way a file can be
// wrong, and the seed corpus of its fuzz target; the real Fashion-MNIST test set when Debian's
// dataset-fashion-mnist is installed and unpacked (skipped otherwise).
#include "examples/fashion_mnist/idx_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An unsigned-byte IDX file with these dims and values 0, 1, 2, ...
std::vector<uint8_t> Idx(const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  size_t count = 1;
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
    count *= d;
  }
  for (size_t i = 0; i < count; ++i) b.push_back(static_cast<uint8_t>(i));
  return b;
}

TEST(IdxFile, ParsesImagesAndLabels) {
  absl::StatusOr<IdxArray> images = ParseIdx(Idx({2, 3, 4}), "images");
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_THAT(images->dims, ElementsAre(2, 3, 4));
  ASSERT_EQ(images->values.size(), 24u);
  EXPECT_EQ(images->values[23], 23);
  absl::StatusOr<IdxArray> labels = ParseIdx(Idx({300}), "labels");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->values[299], 299 % 256);
}

TEST(IdxFile, EveryBrokenFileIsAnErrorNamingIt) {
  auto error = [](std::vector<uint8_t> bytes) {
    absl::StatusOr<IdxArray> r = ParseIdx(bytes, "f.idx");
    EXPECT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("f.idx"));
    return r.status();
  };
  EXPECT_THAT(error({0x1f, 0x8b, 8, 0}).message(), HasSubstr("gunzip"));
  EXPECT_THAT(error({0, 0, 8}).message(), HasSubstr("too short"));
  EXPECT_THAT(error({1, 0, 8, 1, 0, 0, 0, 1, 5}).message(), HasSubstr("magic"));
  EXPECT_EQ(error({0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0}).code(),
            absl::StatusCode::kUnimplemented);  // float elements
  EXPECT_THAT(error({0, 0, 8, 0}).message(), HasSubstr("rank 0"));
  EXPECT_THAT(error({0, 0, 8, 5}).message(), HasSubstr("rank 5"));
  EXPECT_THAT(error({0, 0, 8, 2, 0, 0, 0, 1}).message(), HasSubstr("truncated"));
  EXPECT_THAT(error({0, 0, 8, 1, 0, 0, 0, 0}).message(), HasSubstr("is 0"));
  std::vector<uint8_t> short_body = Idx({2, 3});
  short_body.pop_back();
  EXPECT_THAT(error(short_body).message(), HasSubstr("6 bytes of data, the file has 5"));
  std::vector<uint8_t> trailing = Idx({2, 3});
  trailing.push_back(0);
  EXPECT_THAT(error(trailing).message(), HasSubstr("the file has 7"));
  // Four dimensions of 2^32 - 1: the product overflows 64 bits unless checked first.
  EXPECT_THAT(error({0,   0,   8,   4,   255, 255, 255, 255, 255, 255,
                     255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
                  .message(),
              HasSubstr("need more than"));
}

TEST(IdxFile, MissingFileIsNotFound) {
  EXPECT_EQ(ReadIdxFile("/nonexistent/t10k-images-idx3-ubyte").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(IdxFile, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/idx_file_test.idx";
  const std::vector<uint8_t> bytes = Idx({4, 2});
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  absl::StatusOr<IdxArray> r = ReadIdxFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->dims, ElementsAre(4, 2));
  std::remove(path.c_str());
}

// The fuzz target's seed corpus: two valid files and a truncated one.
TEST(IdxFile, SeedCorpusIsWhatItSays) {
  const std::string dir = std::string(TUNEJIT_SOURCE_DIR) + "/tests/data/examples/idx_corpus";
  auto read = [&](const std::string& name) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("images_2x3x4"), Idx({2, 3, 4}));
  EXPECT_EQ(read("labels_10"), Idx({10}));
  EXPECT_FALSE(ParseIdx(read("truncated"), "truncated").ok());
}

// Debian's dataset-fashion-mnist, unpacked where TUNEJIT_FASHION_MNIST points (gunzipped files).
TEST(IdxFile, FashionMnistTestSetWhenPresent) {
  const char* dir = std::getenv("TUNEJIT_FASHION_MNIST");
  if (dir == nullptr || !std::filesystem::exists(std::string(dir) + "/t10k-images-idx3-ubyte")) {
    GTEST_SKIP() << "set TUNEJIT_FASHION_MNIST to a folder of the unpacked dataset files";
  }
  absl::StatusOr<IdxArray> images = ReadIdxFile(std::string(dir) + "/t10k-images-idx3-ubyte");
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_THAT(images->dims, ElementsAre(10000, 28, 28));
  absl::StatusOr<IdxArray> labels = ReadIdxFile(std::string(dir) + "/t10k-labels-idx1-ubyte");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_THAT(labels->dims, ElementsAre(10000));
  for (uint8_t l : labels->values) ASSERT_LT(l, 10);
}

}  // namespace
}  // namespace tunejit

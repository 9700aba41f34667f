#include "graph/safetensors.h"

#include <cstdlib>
#include <cstring>
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

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

// A file image from a literal header and a buffer, without the writer (so bad headers can be made).
std::string Image(const std::string& header, const std::string& buffer) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + buffer;
}

absl::Status ParseImage(const std::string& image) {
  return ParseSafetensors({reinterpret_cast<const uint8_t*>(image.data()), image.size()}, "t.st")
      .status();
}

absl::Span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

TEST(SafetensorsTest, RoundTrip) {
  std::vector<float> w = {1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f};
  std::vector<int8_t> q = {-128, 0, 127};
  std::vector<float> empty;
  std::vector<TensorView> in = {
      {"conv.weight", DType::kF32, {2, 3}, Bytes(w)},
      {"q", DType::kI8, {3}, {reinterpret_cast<const uint8_t*>(q.data()), 3}},
      {"empty", DType::kF32, {0, 4}, Bytes(empty)}};
  const std::string path = TempPath("round_trip.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, in, {{"format", "pt"}}).ok());

  // The reference writer pads the header so the buffer starts 8-byte aligned.
  std::ifstream file(path, std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(file)), {});
  uint64_t n = 0;
  std::memcpy(&n, image.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(image.size(), 8 + n + 24 + 3);

  absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->Names(), ElementsAre("conv.weight", "q", "empty"));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  SafetensorsFile moved = std::move(*f);  // views must survive the move
  absl::StatusOr<TensorView> t = moved.Get("conv.weight");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dtype, DType::kF32);
  EXPECT_THAT(t->shape, ElementsAre(2, 3));
  std::vector<float> back(6);
  std::memcpy(back.data(), t->bytes.data(), 24);
  EXPECT_EQ(back, w);
  absl::StatusOr<TensorView> tq = moved.Get("q");
  ASSERT_TRUE(tq.ok());
  EXPECT_EQ(static_cast<int8_t>(tq->bytes[0]), -128);
  EXPECT_EQ(static_cast<int8_t>(tq->bytes[2]), 127);
  EXPECT_EQ(moved.Get("empty")->NumElements(), 0);
  absl::StatusOr<TensorView> missing = moved.Get("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
}

TEST(SafetensorsTest, OpenMissingFileIsNotFound) {
  EXPECT_EQ(SafetensorsFile::Open(TempPath("absent.safetensors")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, WriterRejectsMismatchedBytesAndRepeatedNames) {
  std::vector<float> w(4);
  EXPECT_FALSE(SerializeSafetensors({{"a", DType::kF32, {5}, Bytes(w)}}).ok());
  EXPECT_FALSE(SerializeSafetensors({{"a", DType::kF16, {4}, Bytes(w)}}).ok());
  EXPECT_FALSE(
      SerializeSafetensors({{"a", DType::kF32, {4}, Bytes(w)}, {"a", DType::kF32, {4}, Bytes(w)}})
          .ok());
  EXPECT_FALSE(SerializeSafetensors({{"", DType::kF32, {4}, Bytes(w)}}).ok());
}

struct BadCase {
  const char* label;
  std::string image;
  const char* expect;  // substring of the message
};

std::vector<BadCase> BadCases() {
  const std::string b8(8, 'x');
  const std::string ok = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::string huge(8, '\0');
  huge[5] = 0x40;  // 2^46
  std::string over = Image("{}", "");
  over[0] = 100;  // header length 100 > 2 bytes present
  return {
      {"short file", "abc", "shorter than the 8-byte"},
      {"absurd header length", huge + "{}", "exceeds the limit"},
      {"header past end", over, "exceeds the 2 bytes"},
      {"not json", Image("{nope", b8), "not valid JSON"},
      {"not object", Image("[1,2]", ""), "start with '{'"},
      {"json after brace not object", Image("{\"a\":1} 5", ""), "not valid JSON"},
      {"entry not object", Image(R"({"a":[1]})", ""), "tensor 'a': entry is not"},
      {"unknown dtype", Image(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", b8),
       "tensor 'a': unknown dtype \"F31\""},
      {"missing dtype", Image(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", b8), "'dtype'"},
      {"size mismatch", Image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", b8),
       "tensor 'a': shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8"},
      {"negative dim", Image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", b8),
       "tensor 'a': shape has an invalid dim -2"},
      {"float dim", Image(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", b8),
       "non-integer"},
      {"overflowing shape",
       Image(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", b8),
       "overflows"},
      {"offsets out of range",
       Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", b8), "past the buffer"},
      {"end before begin", Image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", b8),
       "end before begin"},
      {"negative offset", Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", b8),
       "non-negative"},
      {"overlap", Image("{" + ok + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", b8),
       "tensor 'b': bytes [4, 8) overlap tensor 'a'"},
      {"gap", Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", b8),
       "tensor 'a': gap"},
      {"trailing bytes", Image("{" + ok + "}", b8 + "yy"), "buffer has 10 bytes"},
      {"duplicate name", Image("{" + ok + "," + ok + "}", b8 + b8),
       "tensor 'a': name appears more than once"},
      {"metadata not strings", Image(R"({"__metadata__":{"k":1}})", ""), "__metadata__['k']"},
      {"empty name", Image(R"({"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", ""),
       "empty name"},
  };
}

TEST(SafetensorsTest, RejectsEveryBadInputWithAReason) {
  for (const BadCase& c : BadCases()) {
    absl::Status s = ParseImage(c.image);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.label;
    EXPECT_THAT(s.message(), HasSubstr(c.expect)) << c.label << ": " << s.message();
    EXPECT_THAT(s.message(), HasSubstr("t.st")) << c.label;
  }
}

TEST(SafetensorsTest, OpenReportsTheFileName) {
  const std::string path = TempPath("bad.safetensors");
  WriteBytes(path, Image(R"({"a":{"dtype":"X","shape":[],"data_offsets":[0,0]}})", ""));
  absl::Status s = SafetensorsFile::Open(path).status();
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'a'"));
}

TEST(SafetensorsTest, EveryTruncationIsRejected) {
  std::vector<float> w = {1, 2, 3, 4};
  absl::StatusOr<std::string> image =
      SerializeSafetensors({{"w", DType::kF32, {4}, Bytes(w)}}, {{"k", "v"}});
  ASSERT_TRUE(image.ok());
  ASSERT_TRUE(ParseImage(*image).ok());
  for (size_t len = 0; len < image->size(); ++len) {
    const std::string cut = image->substr(0, len);
    EXPECT_EQ(ParseImage(cut).code(), absl::StatusCode::kInvalidArgument) << "length " << len;
    const std::string path = TempPath("cut.safetensors");
    WriteBytes(path, cut);
    EXPECT_FALSE(SafetensorsFile::Open(path).ok()) << "length " << len;
  }
}

// The fuzz seed corpus: tiny valid files from the writer. TUNEJIT_WRITE_CORPUS=1 rewrites them;
// otherwise the checked-in files must parse (and match what the writer produces today).
TEST(SafetensorsTest, SeedCorpus) {
  std::vector<float> f = {0.5f, -1.f, 2.f, 8.f};
  std::vector<int8_t> q = {1, -2, 3};
  std::vector<int32_t> i = {7, -7};
  auto b = [](const auto& v) {
    return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                     v.size() * sizeof(v[0]));
  };
  std::vector<std::pair<std::string, std::string>> files = {
      {"empty.safetensors", *SerializeSafetensors({})},
      {"one_f32.safetensors", *SerializeSafetensors({{"w", DType::kF32, {2, 2}, b(f)}})},
      {"mixed.safetensors", *SerializeSafetensors({{"conv.weight", DType::kF32, {1, 1, 2, 2}, b(f)},
                                                   {"q", DType::kI8, {3}, b(q)},
                                                   {"b", DType::kI32, {2}, b(i)}},
                                                  {{"format", "pt"}})},
      {"scalar_and_zero.safetensors",
       *SerializeSafetensors(
           {{"s", DType::kF32, {}, b(std::vector<float>{3.f})}, {"z", DType::kF16, {0, 3}, {}}})},
  };
  const std::filesystem::path dir =
      std::filesystem::path(TUNEJIT_SOURCE_DIR) / "tests/data/graph/safetensors_corpus";
  const bool write = std::getenv("TUNEJIT_WRITE_CORPUS") != nullptr;
  for (const auto& [name, image] : files) {
    ASSERT_TRUE(ParseImage(image).ok()) << name;
    if (write) WriteBytes((dir / name).string(), image);
    absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open((dir / name).string());
    ASSERT_TRUE(f.ok()) << f.status();
    std::ifstream in(dir / name, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), image) << name;
  }
}

}  // namespace
}  // namespace tunejit

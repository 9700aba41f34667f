// Cache key tests: every input that changes the binary changes the digest, and only those.
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cache/entry_format.h"
#include "cache/kernel_cache.h"
#include "cache_test_util.h"
#include "common/digest.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using testing_cache::TestInputs;

CacheKeyInputs BaseInputs() {
  CacheKeyInputs inputs;
  inputs.source_name = "kernel_sources/conv2d_direct.cu";
  inputs.source = "#include \"common.cuh\"\ntemplate <int K> __global__ void conv() {}\n";
  inputs.headers = {{"common.cuh", "typedef int i32;"}, {"tile.cuh", "// tile"}};
  inputs.name_expressions = {"conv<3>", "conv<5>"};
  inputs.options = {"-std=c++17", "-DTILE=16", "--use_fast_math"};
  inputs.arch = "sm_90";
  inputs.nvrtc_version = 13000;
  inputs.output_kind = "cubin";
  return inputs;
}

TEST(CacheKeyTest, SameInputsGiveSameKey) {
  CacheKey a = ComputeCacheKey(BaseInputs());
  CacheKey b = ComputeCacheKey(BaseInputs());
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_EQ(a.FileName(), b.FileName());
}

TEST(CacheKeyTest, DigestIsSha256OfCanonicalKey) {
  // Known-answer test of the hash itself (FIPS 180-2 "abc"), so the digest is not merely stable.
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CacheKey key = ComputeCacheKey(BaseInputs());
  EXPECT_EQ(key.digest, Sha256Hex(key.canonical));
  EXPECT_EQ(key.digest.size(), 64u);
}

TEST(CacheKeyTest, EveryFieldChangesTheDigest) {
  using Mutation = std::pair<std::string, std::function<void(CacheKeyInputs&)>>;
  std::vector<Mutation> mutations = {
      {"source byte", [](CacheKeyInputs& in) { in.source[5] ^= 1; }},
      {"source appended", [](CacheKeyInputs& in) { in.source += " "; }},
      {"source name", [](CacheKeyInputs& in) { in.source_name = "conv2d_winograd.cu"; }},
      {"header name", [](CacheKeyInputs& in) { in.headers[0].first = "common2.cuh"; }},
      {"header text", [](CacheKeyInputs& in) { in.headers[1].second = "// tile!"; }},
      {"header removed", [](CacheKeyInputs& in) { in.headers.pop_back(); }},
      {"header order", [](CacheKeyInputs& in) { std::swap(in.headers[0], in.headers[1]); }},
      {"name expression", [](CacheKeyInputs& in) { in.name_expressions[1] = "conv<7>"; }},
      {"name expression added", [](CacheKeyInputs& in) { in.name_expressions.push_back("x"); }},
      {"option 0", [](CacheKeyInputs& in) { in.options[0] = "-std=c++20"; }},
      {"option 1", [](CacheKeyInputs& in) { in.options[1] = "-DTILE=32"; }},
      {"option 2", [](CacheKeyInputs& in) { in.options[2] = "-lineinfo"; }},
      {"option added", [](CacheKeyInputs& in) { in.options.push_back("-DNDEBUG"); }},
      {"option removed", [](CacheKeyInputs& in) { in.options.pop_back(); }},
      {"option order", [](CacheKeyInputs& in) { std::swap(in.options[0], in.options[2]); }},
      {"arch", [](CacheKeyInputs& in) { in.arch = "sm_90a"; }},
      {"nvrtc version", [](CacheKeyInputs& in) { in.nvrtc_version = 13001; }},
      {"output kind", [](CacheKeyInputs& in) { in.output_kind = "ptx"; }},
  };
  const std::string base = ComputeCacheKey(BaseInputs()).digest;
  std::set<std::string> digests = {base};
  for (const auto& [name, mutate] : mutations) {
    CacheKeyInputs inputs = BaseInputs();
    mutate(inputs);
    std::string digest = ComputeCacheKey(inputs).digest;
    EXPECT_NE(digest, base) << name;
    EXPECT_TRUE(digests.insert(digest).second) << name << " collides with another mutation";
  }
}

TEST(CacheKeyTest, LengthPrefixingPreventsConcatenationAmbiguity) {
  CacheKeyInputs a = BaseInputs(), b = BaseInputs();
  a.options = {"ab", "c"};
  b.options = {"a", "bc"};
  EXPECT_NE(ComputeCacheKey(a).digest, ComputeCacheKey(b).digest);

  // Moving text between a header's name and its text, or between source and a header.
  a = BaseInputs(), b = BaseInputs();
  a.headers = {{"x.cuh", "int y;"}};
  b.headers = {{"x.cuhint", " y;"}};
  EXPECT_NE(ComputeCacheKey(a).digest, ComputeCacheKey(b).digest);

  // One empty option vs none: the count is part of the key.
  a = BaseInputs(), b = BaseInputs();
  a.options = {};
  b.options = {""};
  EXPECT_NE(ComputeCacheKey(a).digest, ComputeCacheKey(b).digest);

  // A name expression that looks like an option.
  a = BaseInputs(), b = BaseInputs();
  a.name_expressions.push_back("-DX");
  b.options.insert(b.options.begin(), "-DX");
  EXPECT_NE(ComputeCacheKey(a).digest, ComputeCacheKey(b).digest);
}

TEST(CacheKeyTest, CanonicalEncodingMatchesDocumentedLayout) {
  // Built by hand from the layout in entry_format.cc's EncodeCanonicalKey comment: a change in
  // the encoding must come with a kCacheFormatVersion bump, and this test makes it visible.
  CacheKeyInputs in;
  in.source_name = "a.cu";
  in.source = "S";
  in.headers = {{"h", "T"}};
  in.name_expressions = {"k<1>"};
  in.options = {"-O3"};
  in.arch = "sm_90";
  in.nvrtc_version = 0x0102;
  in.output_kind = "ptx";
  auto u64 = [](uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
  };
  auto str = [&](const std::string& s) { return u64(s.size()) + s; };
  std::string version(4, '\0');
  version[0] = static_cast<char>(kCacheFormatVersion);
  std::string expected = str("tunejit-kernel-cache-key") + version + str("a.cu") + str("S") +
                         u64(1) + str("h") + str("T") + u64(1) + str("k<1>") + u64(1) + str("-O3") +
                         str("sm_90") + u64(0x0102) + str("ptx");
  EXPECT_EQ(ComputeCacheKey(in).canonical, expected);
}

TEST(CacheKeyTest, FileNameIsReadableFieldsThenDigest) {
  CacheKey key = ComputeCacheKey(BaseInputs());
  EXPECT_EQ(key.readable, "conv2d_direct-sm_90-nvrtc13000");
  EXPECT_EQ(key.FileName(), "conv2d_direct-sm_90-nvrtc13000-" + key.digest + ".tjk");
  for (char c : key.digest) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << c;

  CacheKeyInputs ptx = BaseInputs();
  ptx.output_kind = "ptx";
  EXPECT_EQ(ComputeCacheKey(ptx).readable, "conv2d_direct-sm_90-nvrtc13000-ptx");
}

TEST(CacheKeyTest, ReadablePartsAreSanitized) {
  CacheKeyInputs in = BaseInputs();
  in.source_name = "../evil dir/.hidden name$(rm -rf).cu";
  in.arch = "sm 90/../x";
  CacheKey key = ComputeCacheKey(in);
  for (char c : key.FileName()) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    EXPECT_TRUE(ok) << "character '" << c << "' in " << key.FileName();
  }
  EXPECT_EQ(key.FileName().find('/'), std::string::npos);
  EXPECT_NE(key.FileName()[0], '.');
  EXPECT_EQ(key.readable, "_hidden_name__rm_-rf_-sm_90_.._x-nvrtc13000");

  CacheKeyInputs long_name = BaseInputs();
  long_name.source_name = std::string(1000, 'x') + ".cu";
  EXPECT_LT(ComputeCacheKey(long_name).FileName().size(), 200u);
  CacheKeyInputs empty = BaseInputs();
  empty.source_name = "";
  EXPECT_EQ(ComputeCacheKey(empty).readable, "kernel-sm_90-nvrtc13000");
}

TEST(CacheKeyTest, DistinctTestInputsGiveDistinctFileNames) {
  std::set<std::string> names;
  for (int i = 0; i < 50; ++i) names.insert(ComputeCacheKey(TestInputs(i)).FileName());
  EXPECT_EQ(names.size(), 50u);
}

}  // namespace
}  // namespace tunejit

// File: tests/cache/cache_test_util.h
// Shared helpers for the kernel cache tests: a self-deleting temporary directory and deterministic
// key inputs / entries whose bytes differ per index.
//
//   TempDir dir;
//   CacheKey key = ComputeCacheKey(TestInputs(3));
//   CacheEntry entry = TestEntry(3, 4096);
#ifndef TUNEJIT_TESTS_CACHE_CACHE_TEST_UTIL_H_
#define TUNEJIT_TESTS_CACHE_CACHE_TEST_UTIL_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "gtest/gtest.h"

namespace tunejit::testing_cache {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base ? base : "/tmp") + "/tjcache.XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline CacheKeyInputs TestInputs(int index) {
  CacheKeyInputs inputs;
  inputs.source_name = "dense_small_batch.cu";
  inputs.source = "template <int T> __global__ void k() {} // variant " + std::to_string(index);
  inputs.headers = {{"common.cuh", "typedef int i32;"}};
  inputs.name_expressions = {"k<" + std::to_string(index) + ">"};
  inputs.options = {"-std=c++17", "--gpu-architecture=sm_90"};
  inputs.arch = "sm_90";
  inputs.nvrtc_version = 13000;
  return inputs;
}

// An entry of `bytes` cubin bytes, with content that depends on `index` at every position.
inline CacheEntry TestEntry(int index, size_t bytes) {
  CacheEntry entry;
  entry.cubin.resize(bytes);
  for (size_t i = 0; i < bytes; ++i)
    entry.cubin[i] = static_cast<char>((i * 31 + index * 7) & 0xff);
  entry.ptx = ".version 8.0 // " + std::to_string(index);
  entry.lowered_names = {
      {"k<" + std::to_string(index) + ">", "_Z1kILi" + std::to_string(index) + "EEvv"}};
  return entry;
}

inline bool SameEntry(const CacheEntry& a, const CacheEntry& b) {
  return a.cubin == b.cubin && a.ptx == b.ptx && a.lowered_names == b.lowered_names;
}

inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Names of the files in `dir` (not recursive), sorted.
inline std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& item : std::filesystem::directory_iterator(dir)) {
    names.push_back(item.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tunejit::testing_cache

#endif  // TUNEJIT_TESTS_CACHE_CACHE_TEST_UTIL_H_

// File: tests/testing/test_data.h
// Paths to test data: the repo's own (always present) and ../shared/data (optional: tests that use
// it GTEST_SKIP where it is absent).
#ifndef TUNEJIT_TESTS_TESTING_TEST_DATA_H_
#define TUNEJIT_TESTS_TESTING_TEST_DATA_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tunejit::testing {

// The repo root: $TUNEJIT_SOURCE_DIR when set (test binaries copied to the GPU machine run against
// a checkout elsewhere), else the source dir this binary was built from.
inline std::string SourceDir() {
  const char* env = std::getenv("TUNEJIT_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(TUNEJIT_SOURCE_DIR);
}

// <repo>/data/<name>: data the product ships (e.g. "seed-vgg16-v100.log").
inline std::string RepoData(const std::string& name) { return SourceDir() + "/data/" + name; }

// <repo>/tests/data/<name>: test-only inputs (bad files, fuzz seeds).
inline std::string RepoTestData(const std::string& name) {
  return SourceDir() + "/tests/data/" + name;
}

// <repo>/../shared/data/<name>, or "" if it does not exist.
inline std::string SharedData(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(SourceDir()) / ".." / "shared" / "data" / name;
  return std::filesystem::exists(p) ? p.lexically_normal().string() : std::string();
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_TESTING_TEST_DATA_H_

// File: tests/testing/test_data.h
// Paths to test data: the repo's own (always present) and ../shared/data (optional: tests that use
// it GTEST_SKIP where it is absent).
#ifndef TUNEJIT_TESTS_TESTING_TEST_DATA_H_
#define TUNEJIT_TESTS_TESTING_TEST_DATA_H_

#include <filesystem>
#include <string>

namespace tunejit::testing {

// <repo>/data/<name>: data the product ships (e.g. "seed-vgg16-v100.log").
inline std::string RepoData(const std::string& name) {
  return std::string(TUNEJIT_SOURCE_DIR) + "/data/" + name;
}

// <repo>/tests/data/<name>: test-only inputs (bad files, fuzz seeds).
inline std::string RepoTestData(const std::string& name) {
  return std::string(TUNEJIT_SOURCE_DIR) + "/tests/data/" + name;
}

// <repo>/../shared/data/<name>, or "" if it does not exist.
inline std::string SharedData(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(TUNEJIT_SOURCE_DIR) / ".." / "shared" / "data" / name;
  return std::filesystem::exists(p) ? p.lexically_normal().string() : std::string();
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_TESTING_TEST_DATA_H_

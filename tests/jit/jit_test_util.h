// File: tests/jit/jit_test_util.h
// Helpers for jit/ tests: a self-deleting temporary directory, and running one test of the current
// binary in a fresh child process (for state that is per process: the loaded driver, a second
// cache user).
//
//   TempDir dir;                                  // removed with its contents at scope exit
//   int code = RunSelfTest("Child.CacheHit", {{"TUNEJIT_TEST_DIR", dir.path()}});
#ifndef TUNEJIT_TESTS_JIT_JIT_TEST_UTIL_H_
#define TUNEJIT_TESTS_JIT_JIT_TEST_UTIL_H_

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace tunejit::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tunejit-jit-test-XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs this test binary with --gtest_filter=`filter` and extra environment variables; returns the
// exit code (or 128 + signal). The child inherits stdout/stderr, so its failures show in the log.
inline int RunSelfTest(const std::string& filter,
                       const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter_flag = "--gtest_filter=" + filter;
  char* argv[] = {exe.data(), filter_flag.data(), nullptr};
  pid_t pid = 0;
  if (::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// The value of an environment variable, or "" (child tests skip when theirs is absent).
inline std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_JIT_JIT_TEST_UTIL_H_
